// Managed memory: cudaMallocManaged memory written by the host, added to by a
// kernel, read by the host after a synchronize; a prefetch and advice on it;
// a second kernel reading it into device memory, copied back; cudaFree.
// Output: what the host saw (the same on a GPU and a vGPU).
#include "check.cuh"

__global__ void add_index(unsigned *m, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        m[i] += i;
}

__global__ void double_into(const unsigned *m, unsigned *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2 * m[i];
}

int main(void)
{
    const unsigned n = 1u << 16;
    unsigned *m = nullptr, *d = nullptr;
    int dev = 0, managed = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, dev));
    REQUIRE(managed == 1, "the device reports no managed memory");
    CHECK_CUDA(cudaMallocManaged(&m, n * sizeof(unsigned), cudaMemAttachGlobal));
    for (unsigned i = 0; i < n; i++)
        m[i] = 1000;
    cudaMemLocation loc = {};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = dev;
    CHECK_CUDA(cudaMemAdvise(m, n * sizeof(unsigned), cudaMemAdviseSetPreferredLocation, loc));
    CHECK_CUDA(cudaMemPrefetchAsync(m, n * sizeof(unsigned), loc, 0, 0));
    add_index<<<(n + 255) / 256, 256>>>(m, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    unsigned long long sum = 0;
    for (unsigned i = 0; i < n; i++) {
        REQUIRE(m[i] == 1000 + i, "word %u is %u after the kernel", i, m[i]);
        sum += m[i];
    }
    printf("managed memory after a kernel: sum %llu\n", sum);
    CHECK_CUDA(cudaMalloc(&d, n * sizeof(unsigned)));
    double_into<<<(n + 255) / 256, 256>>>(m, d, n);
    CHECK_CUDA(cudaGetLastError());
    unsigned last = 0;
    CHECK_CUDA(cudaMemcpy(&last, d + n - 1, sizeof(last), cudaMemcpyDeviceToHost));
    REQUIRE(last == 2 * (1000 + n - 1), "doubled last word %u", last);
    cudaPointerAttributes a;
    CHECK_CUDA(cudaPointerGetAttributes(&a, m));
    printf("pointer type managed: %d, doubled last word %u\n", a.type == cudaMemoryTypeManaged, last);
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaFree(m));
    printf("PASS\n");
    return 0;
}
