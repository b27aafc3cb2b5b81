// Fault isolation check for the GPU lane: `isolation good SECONDS` keeps
// verifying kernel results for SECONDS; `isolation bad` makes its kernel
// write to an invalid address. Through mearas, the bad client must get
// cudaErrorIllegalAddress while the good one, on the same GPU, keeps
// passing: each client has its own worker and context.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void scale(int *p, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = i * k;
}

__global__ void poke(int *p)
{
    *p = 1;
}

static int good(double seconds)
{
    const int n = 1 << 20;
    int *d, *h = static_cast<int *>(std::malloc(n * sizeof(int)));
    if (cudaMalloc(&d, n * sizeof(int)) != cudaSuccess)
        return std::printf("FAIL: cudaMalloc\n"), 1;
    auto t0 = std::chrono::steady_clock::now();
    int rounds = 0;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
        int k = rounds % 7 + 1;
        scale<<<(n + 255) / 256, 256>>>(d, n, k);
        cudaError_t e = cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost);
        if (e != cudaSuccess)
            return std::printf("FAIL: round %d: %s\n", rounds, cudaGetErrorName(e)), 1;
        for (int i = 0; i < n; i += 4099)
            if (h[i] != i * k)
                return std::printf("FAIL: round %d: wrong value at %d\n", rounds, i), 1;
        rounds++;
    }
    std::printf("good client: %s rounds verified\nPASS\n", rounds > 0 ? "all" : "no");
    return rounds > 0 ? 0 : 1;
}

static int bad()
{
    poke<<<1, 1>>>(reinterpret_cast<int *>(0x10));
    cudaError_t e = cudaDeviceSynchronize();
    std::printf("bad client: %s\n", cudaGetErrorName(e));
    return e == cudaErrorIllegalAddress ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !std::strcmp(argv[1], "bad"))
        return bad();
    if (argc >= 3 && !std::strcmp(argv[1], "good"))
        return good(std::atof(argv[2]));
    std::fprintf(stderr, "usage: isolation good SECONDS | isolation bad\n");
    return 2;
}
