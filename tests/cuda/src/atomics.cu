// atomicAdd histogram, atomicCAS slot claiming and a CAS-built 64-bit add.
#include <vector>
#include "check.cuh"

#define BINS 256
#define SLOTS 64

__global__ void histogram(const unsigned char *data, int n, unsigned int *bins)
{
    __shared__ unsigned int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        atomicAdd(&bins[b], local[b]);
}

// Every thread tries to claim slot (tid % SLOTS); exactly one wins per slot.
__global__ void claim_slots(int *slots, unsigned int *wins, int nthreads)
{
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= nthreads)
        return;
    if (atomicCAS(&slots[tid % SLOTS], -1, tid) == -1)
        atomicAdd(wins, 1u);
}

__device__ unsigned long long cas_add(unsigned long long *addr, unsigned long long val)
{
    unsigned long long old = *addr, assumed;
    do {
        assumed = old;
        old = atomicCAS(addr, assumed, assumed + val);
    } while (old != assumed);
    return old;
}

__global__ void cas_sum(const unsigned int *values, int n, unsigned long long *total)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        cas_add(total, (unsigned long long)values[i] * 4096ull);
}

int main(void)
{
    const int n = 1 << 22;
    std::vector<unsigned char> data(n);
    unsigned int seed = 99u;
    for (int i = 0; i < n; i++) {
        unsigned int r = lcg_next(&seed);
        data[i] = (unsigned char)((r >> 24) ^ (r >> 8)); // non-uniform mix
    }
    std::vector<unsigned int> ref(BINS, 0);
    for (unsigned char v : data)
        ref[v]++;

    unsigned char *ddata;
    unsigned int *dbins;
    CHECK_CUDA(cudaMalloc(&ddata, n));
    CHECK_CUDA(cudaMalloc(&dbins, BINS * sizeof(unsigned int)));
    CHECK_CUDA(cudaMemcpy(ddata, data.data(), n, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(dbins, 0, BINS * sizeof(unsigned int)));
    histogram<<<120, 256>>>(ddata, n, dbins);
    CHECK_LAUNCH();
    std::vector<unsigned int> bins(BINS);
    CHECK_CUDA(cudaMemcpy(bins.data(), dbins, BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    unsigned long long weighted = 0;
    for (int b = 0; b < BINS; b++) {
        REQUIRE(bins[b] == ref[b], "bin %d: %u expected %u", b, bins[b], ref[b]);
        weighted += (unsigned long long)bins[b] * (unsigned long long)(b + 1);
    }
    std::printf("histogram bins=%d total=%d weighted=%llu\n", BINS, n, weighted);

    const int claimers = 100000;
    int *dslots;
    unsigned int *dwins;
    CHECK_CUDA(cudaMalloc(&dslots, SLOTS * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&dwins, sizeof(unsigned int)));
    CHECK_CUDA(cudaMemset(dslots, 0xff, SLOTS * sizeof(int))); // -1 everywhere
    CHECK_CUDA(cudaMemset(dwins, 0, sizeof(unsigned int)));
    claim_slots<<<(claimers + 255) / 256, 256>>>(dslots, dwins, claimers);
    CHECK_LAUNCH();
    unsigned int wins = 0;
    std::vector<int> slots(SLOTS);
    CHECK_CUDA(cudaMemcpy(&wins, dwins, sizeof(wins), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(slots.data(), dslots, SLOTS * sizeof(int), cudaMemcpyDeviceToHost));
    REQUIRE(wins == SLOTS, "atomicCAS winners=%u expected %d", wins, SLOTS);
    for (int s = 0; s < SLOTS; s++)
        REQUIRE(slots[s] >= 0 && slots[s] < claimers && slots[s] % SLOTS == s,
                "slot %d claimed by wrong thread", s);
    std::printf("atomicCAS winners=%u\n", wins);

    const int m = 200000;
    std::vector<unsigned int> values(m);
    unsigned long long expect = 0;
    for (int i = 0; i < m; i++) {
        values[i] = lcg_next(&seed) >> 8;
        expect += (unsigned long long)values[i] * 4096ull;
    }
    unsigned int *dvalues;
    unsigned long long *dtotal;
    CHECK_CUDA(cudaMalloc(&dvalues, m * sizeof(unsigned int)));
    CHECK_CUDA(cudaMalloc(&dtotal, sizeof(unsigned long long)));
    CHECK_CUDA(cudaMemcpy(dvalues, values.data(), m * sizeof(unsigned int), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(dtotal, 0, sizeof(unsigned long long)));
    cas_sum<<<(m + 255) / 256, 256>>>(dvalues, m, dtotal);
    CHECK_LAUNCH();
    unsigned long long total = 0;
    CHECK_CUDA(cudaMemcpy(&total, dtotal, sizeof(total), cudaMemcpyDeviceToHost));
    REQUIRE(total == expect, "CAS sum %llu expected %llu", total, expect);
    std::printf("atomicCAS 64-bit sum=%llu\n", total);

    FREE_DEVICE(ddata, dbins, dslots, dwins, dvalues, dtotal);
    return pass();
}
