// __managed__ variables: the host reads and writes them where the device
// has them (mearas mirrors them at their device addresses, guest/core/
// managedvars.c). The sim runs its modelled kernel on the variables through
// their addresses: a host write reaches the kernel, the kernel's write
// reaches the host after a synchronization, a copy from the variable's
// address sees the host's latest write, and a byte the host changed while
// the device changed others keeps the host's value; a host change pushed
// while another stream captures, by a blocking copy (built with per-thread
// default streams, so the copy is not on the legacy stream). (Initial values from
// the image and kernels naming the variables need a GPU: tests/cuda's
// managed_vars.)
#include <cstdio>
#include <cstring>

#include "sim_check.cuh"

__managed__ unsigned counter;
__managed__ unsigned table[64];

// modelled by the sim: p[i] += v for i < n
extern "C" __global__ void mearas_sim_add_u32(unsigned *p, unsigned n, unsigned v)
{
    for (unsigned i = 0; i < n; i++)
        p[i] += v;
}

int main(void)
{
    unsigned got = 0;
    cudaPointerAttributes a;

    // the host's write reaches the kernel; the kernel's reaches the host
    counter = 7;
    mearas_sim_add_u32<<<1, 1>>>(&counter, 1, 10);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaDeviceSynchronize());
    REQUIRE(counter == 17, "counter %u after the kernel, want 17", counter);

    // an array, through a created stream and its synchronization
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (unsigned i = 0; i < 64; i++)
        table[i] = i * 3;
    mearas_sim_add_u32<<<1, 1, 0, s>>>(table, 64, 1000);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (unsigned i = 0; i < 64; i++)
        REQUIRE(table[i] == i * 3 + 1000, "table[%u] = %u, want %u", i, table[i], i * 3 + 1000);

    // a copy from the variable's address sees the host's last write
    counter = 41;
    CHECK_CUDA(cudaMemcpy(&got, &counter, sizeof(got), cudaMemcpyDeviceToHost));
    REQUIRE(got == 41, "copied %u from the variable, want 41", got);
    CHECK_CUDA(cudaMemcpyFromSymbol(&got, counter, sizeof(got)));
    REQUIRE(got == 41, "cudaMemcpyFromSymbol gave %u, want 41", got);

    // the kernel changes table[0..31] while the host changes table[63]:
    // both changes stay
    mearas_sim_add_u32<<<1, 1, 0, s>>>(table, 32, 5);
    CHECK_LAUNCH();
    table[63] = 123456;
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(table[0] == 1005 && table[31] == 31 * 3 + 1005, "table[0] %u table[31] %u after the second kernel",
            table[0], table[31]);
    REQUIRE(table[63] == 123456, "table[63] = %u: the host's write was lost", table[63]);
    // ... and the host's write reaches the device
    CHECK_CUDA(cudaMemcpy(&got, &table[63], sizeof(got), cudaMemcpyDeviceToHost));
    REQUIRE(got == 123456, "the device has %u in table[63], want 123456", got);

    // a copy into the variable reaches the host once it is done
    unsigned v = 99;
    CHECK_CUDA(cudaMemcpyToSymbol(counter, &v, sizeof(v)));
    CHECK_CUDA(cudaDeviceSynchronize());
    REQUIRE(counter == 99, "counter %u after cudaMemcpyToSymbol, want 99", counter);

    // while a stream captures (relaxed), a blocking copy elsewhere pushes the
    // host's change on mearas's private stream, and the captured kernel's
    // graph adds to it when launched
    cudaStream_t cs;
    cudaGraph_t g;
    cudaGraphExec_t x;
    unsigned *dev = nullptr, *pinned = nullptr;
    CHECK_CUDA(cudaMalloc(&dev, sizeof(unsigned)));
    CHECK_CUDA(cudaMallocHost(&pinned, sizeof(unsigned)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamBeginCapture(cs, cudaStreamCaptureModeRelaxed));
    counter = 5;
    CHECK_CUDA(cudaMemcpy(pinned, dev, sizeof(unsigned), cudaMemcpyDeviceToHost)); /* a pinned copy, waited for */
    mearas_sim_add_u32<<<1, 1, 0, cs>>>(&counter, 1, 1);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaStreamEndCapture(cs, &g));
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphLaunch(x, cs));
    CHECK_CUDA(cudaStreamSynchronize(cs));
    REQUIRE(counter == 6, "counter %u after the captured kernel's graph, want 6", counter);
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaStreamDestroy(cs));
    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaFree(dev));

    CHECK_CUDA(cudaPointerGetAttributes(&a, &counter));
    REQUIRE(a.devicePointer == (void *)&counter, "device pointer %p, the host's %p", a.devicePointer,
            (void *)&counter);
    CHECK_CUDA(cudaStreamDestroy(s));
    pass();
    return 0;
}
