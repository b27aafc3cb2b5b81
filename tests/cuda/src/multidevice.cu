// Uses every device: one host thread per device fills a buffer, then each
// device's buffer moves to the next device (peer copy when supported, else
// staged through host memory) and is checked there. Output does not depend on
// the device count or the copy path taken.
#include <thread>
#include <vector>
#include "check.cuh"

#define N (1 << 20)

__global__ void fill(int *x, int n, int seed)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = i * 3 + seed;
}

__global__ void count_mismatches(const int *x, int n, int seed, unsigned int *bad)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] != i * 3 + seed)
        atomicAdd(bad, 1u);
}

struct device_slot {
    int *src = nullptr;
    int *dst = nullptr;
    unsigned int *bad = nullptr;
    cudaError_t err = cudaSuccess;
};

static void fill_on_device(int dev, device_slot *slot)
{
    cudaError_t err = cudaSetDevice(dev);
    if (err == cudaSuccess)
        err = cudaMalloc(&slot->src, N * sizeof(int));
    if (err == cudaSuccess)
        err = cudaMalloc(&slot->dst, N * sizeof(int));
    if (err == cudaSuccess)
        err = cudaMalloc(&slot->bad, sizeof(unsigned int));
    if (err == cudaSuccess)
        err = cudaMemset(slot->bad, 0, sizeof(unsigned int));
    if (err == cudaSuccess) {
        fill<<<(N + 255) / 256, 256>>>(slot->src, N, 1000 + dev);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    slot->err = err;
}

static cudaError_t move_to_next(int dev, int next, std::vector<device_slot> &slots)
{
    int can_access = 0;
    cudaError_t err = cudaSuccess;
    if (dev != next)
        err = cudaDeviceCanAccessPeer(&can_access, next, dev);
    if (err != cudaSuccess)
        return err;
    if (dev == next || can_access) {
        if (dev != next) {
            err = cudaSetDevice(next);
            if (err == cudaSuccess)
                err = cudaDeviceEnablePeerAccess(dev, 0);
            if (err == cudaErrorPeerAccessAlreadyEnabled) {
                cudaGetLastError();
                err = cudaSuccess;
            }
            if (err != cudaSuccess)
                return err;
        }
        return cudaMemcpyPeer(slots[next].dst, next, slots[dev].src, dev, N * sizeof(int));
    }
    std::vector<int> staging(N);
    err = cudaSetDevice(dev);
    if (err == cudaSuccess)
        err = cudaMemcpy(staging.data(), slots[dev].src, N * sizeof(int), cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = cudaSetDevice(next);
    if (err == cudaSuccess)
        err = cudaMemcpy(slots[next].dst, staging.data(), N * sizeof(int), cudaMemcpyHostToDevice);
    return err;
}

int main(void)
{
    int count = 0;
    CHECK_CUDA(cudaGetDeviceCount(&count));
    REQUIRE(count > 0, "no devices");
    std::vector<device_slot> slots(count);
    std::vector<std::thread> threads;
    for (int d = 0; d < count; d++)
        threads.emplace_back(fill_on_device, d, &slots[d]);
    for (auto &t : threads)
        t.join();
    for (int d = 0; d < count; d++)
        REQUIRE(slots[d].err == cudaSuccess, "device %d fill: %s", d, cudaGetErrorName(slots[d].err));

    for (int d = 0; d < count; d++) {
        int next = (d + 1) % count;
        cudaError_t err = move_to_next(d, next, slots);
        REQUIRE(err == cudaSuccess, "copy device %d -> %d: %s", d, next, cudaGetErrorName(err));
    }
    bool all_ok = true;
    for (int d = 0; d < count; d++) {
        int from = (d + count - 1) % count;
        CHECK_CUDA(cudaSetDevice(d));
        count_mismatches<<<(N + 255) / 256, 256>>>(slots[d].dst, N, 1000 + from, slots[d].bad);
        CHECK_LAUNCH();
        unsigned int bad = 0;
        CHECK_CUDA(cudaMemcpy(&bad, slots[d].bad, sizeof(bad), cudaMemcpyDeviceToHost));
        if (bad != 0) {
            std::printf("device %d: %u mismatches in data from device %d\n", d, bad, from);
            all_ok = false;
        }
    }
    for (int d = 0; d < count; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        FREE_DEVICE(slots[d].src, slots[d].dst, slots[d].bad);
    }
    REQUIRE(all_ok, "data mismatch after device-to-device transfer");
    std::printf("every device filled, forwarded and verified %d ints\n", N);
    return pass();
}
