// thrust::sort of 1M ints on the device, compared with std::sort on the host.
#include <algorithm>
#include <exception>
#include <vector>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>
#include "check.cuh"

static int run(void)
{
    const int n = 1 << 20;
    std::vector<int> host(n);
    unsigned int seed = 2024u;
    unsigned long long checksum = 0;
    for (int i = 0; i < n; i++) {
        host[i] = (int)(lcg_next(&seed) >> 1) - (1 << 30);
        checksum += (unsigned long long)(long long)host[i];
    }
    thrust::device_vector<int> dev(host.begin(), host.end());
    thrust::sort(dev.begin(), dev.end());
    CHECK_CUDA(cudaDeviceSynchronize());
    long long dev_sum = thrust::reduce(dev.begin(), dev.end(), 0LL, thrust::plus<long long>());
    std::vector<int> sorted(n);
    thrust::copy(dev.begin(), dev.end(), sorted.begin());

    for (int i = 1; i < n; i++)
        REQUIRE(sorted[i - 1] <= sorted[i], "not sorted at %d", i);
    unsigned long long sorted_checksum = 0;
    for (int v : sorted)
        sorted_checksum += (unsigned long long)(long long)v;
    REQUIRE(sorted_checksum == checksum, "checksum changed by sort");
    REQUIRE((unsigned long long)dev_sum == checksum, "device reduce checksum differs");
    std::sort(host.begin(), host.end());
    REQUIRE(host == sorted, "differs from std::sort");
    std::printf("sorted %d ints min=%d max=%d checksum=%llu\n", n, sorted[0], sorted[n - 1],
                checksum);
    return pass();
}

int main(void)
{
    // Thrust reports CUDA errors as exceptions; turn them into a FAIL line.
    try {
        return run();
    } catch (const std::exception &e) {
        std::printf("FAIL: exception: %s\n", e.what());
        return 1;
    }
}
