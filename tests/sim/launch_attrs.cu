// Launch attributes reach the device: cudaLaunchKernelExC (in the static
// build NVIDIA's runtime turns it into cuLaunchKernelEx) with programmatic stream serialization (cuBLASLt's and XLA's launches),
// priority, the remote memory-sync domain, a cluster scheduling policy and a
// shared-memory carveout. The sim's kernel mearas_sim_launch_attrs writes
// what its launch came with; the values the driver refuses are refused, and
// an attribute mearas does not carry fails with cudaErrorNotSupported.
#include "sim_check.cuh"
#include "../cuda/src/launch_attrs.cuh"

// on the sim device: out[0..7] = cooperative, programmatic, remote domain,
// cluster policy, priority given, priority, carveout given, carveout
extern "C" __global__ void mearas_sim_launch_attrs(unsigned *out)
{
    (void)out;
}

static void expect_words(const unsigned *dev, const unsigned want[8], const char *what)
{
    unsigned got[8];
    CHECK_CUDA(cudaMemcpy(got, dev, sizeof(got), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 8; i++)
        REQUIRE(got[i] == want[i], "%s: word %d is %u, want %u", what, i, got[i], want[i]);
}

int main(void)
{
    unsigned *out;
    cudaStream_t s;
    CHECK_CUDA(cudaMalloc(&out, 8 * sizeof(unsigned)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *args[] = { &out };

    // the runtime: programmatic stream serialization alone
    cudaLaunchAttribute ra[1];
    ra[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    ra[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t rc = {};
    rc.gridDim = dim3(1);
    rc.blockDim = dim3(32);
    rc.stream = s;
    rc.attrs = ra;
    rc.numAttrs = 1;
    CHECK_CUDA(cudaLaunchKernelExC(&rc, (const void *)mearas_sim_launch_attrs, args));
    CHECK_CUDA(cudaStreamSynchronize(s));
    const unsigned pdl[8] = { 0, 1, 0, 0, 0, 0, 0, 0 };
    expect_words(out, pdl, "cudaLaunchKernelExC with programmatic serialization");

    // every carried attribute at once
    cudaLaunchAttribute da[6] = {};
    da[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    da[0].val.programmaticStreamSerializationAllowed = 1;
    value_attrs(da + 1, -3);
    da[5].id = cudaLaunchAttributeIgnore;
    rc.attrs = da;
    rc.numAttrs = 6;
    CHECK_CUDA(cudaLaunchKernelExC(&rc, (const void *)mearas_sim_launch_attrs, args));
    CHECK_CUDA(cudaStreamSynchronize(s));
    const unsigned all[8] = { 0, 1, 1, 1, 1, (unsigned)-3, 1, 50 };
    expect_words(out, all, "every carried attribute");

    // no attributes: none reaches the device
    rc.numAttrs = 0;
    rc.attrs = nullptr;
    CHECK_CUDA(cudaLaunchKernelExC(&rc, (const void *)mearas_sim_launch_attrs, args));
    CHECK_CUDA(cudaStreamSynchronize(s));
    const unsigned none[8] = {};
    expect_words(out, none, "no attributes");

    // values the driver refuses, and an attribute mearas does not carry
    rc.attrs = da;
    rc.numAttrs = 1;
    da[0].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    da[0].val.sharedMemCarveout = 150;
    EXPECT_ERR(cudaErrorInvalidValue, cudaLaunchKernelExC(&rc, (const void *)mearas_sim_launch_attrs, args));
    da[0].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    da[0].val.clusterSchedulingPolicyPreference = (cudaClusterSchedulingPolicy)7;
    EXPECT_ERR(cudaErrorInvalidValue, cudaLaunchKernelExC(&rc, (const void *)mearas_sim_launch_attrs, args));
    da[0].id = cudaLaunchAttributeProgrammaticEvent;
    EXPECT_ERR(cudaErrorNotSupported, cudaLaunchKernelExC(&rc, (const void *)mearas_sim_launch_attrs, args));
    cudaGetLastError();

    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFree(out));
    return pass();
}
