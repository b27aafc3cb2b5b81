// Calls a __device__ function defined in rdc_lib.cu and reads/writes a
// __device__ variable defined there; needs -rdc=true and device linking.
#include <vector>
#include "check.cuh"
#include "rdc_shared.cuh"

__global__ void apply_transform(const int *in, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = rdc_transform(in[i]);
}

__global__ void bump_offset(int delta)
{
    g_rdc_offset += delta;
}

int main(void)
{
    const int n = 5000;
    std::vector<int> in(n), out(n);
    for (int i = 0; i < n; i++)
        in[i] = i - 2500;
    int *din, *dout;
    CHECK_CUDA(cudaMalloc(&din, n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&dout, n * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));

    int offset = 17;
    CHECK_CUDA(cudaMemcpyToSymbol(g_rdc_offset, &offset, sizeof(offset)));
    bump_offset<<<1, 1>>>(4);
    CHECK_LAUNCH();
    int readback = 0;
    CHECK_CUDA(cudaMemcpyFromSymbol(&readback, g_rdc_offset, sizeof(readback)));
    REQUIRE(readback == 21, "g_rdc_offset=%d expected 21", readback);
    std::printf("cross-file __device__ variable=%d\n", readback);

    apply_transform<<<(n + 255) / 256, 256>>>(din, dout, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        REQUIRE(out[i] == in[i] * 5 + 21, "element %d: %d", i, out[i]);
        sum += out[i];
    }
    std::printf("cross-file __device__ function sum=%lld\n", sum);
    FREE_DEVICE(din, dout);
    return pass();
}
