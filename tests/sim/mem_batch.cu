// cudaMemcpyBatchAsync (built twice: mearas's shared runtime, whose call was
// a NotSupported stub, and NVIDIA's static runtime over mearas's
// libcuda.so.1's cuMemcpyBatchAsync): one batch of copies in every direction
// (pageable and pinned host memory, device to device) under two sets of
// attributes lands every byte by the next stream synchronization; the
// attribute checks CUDA documents (the first index 0, indices rising and
// below the count, no more sets than copies, a known source access order)
// and the legacy default stream are cudaErrorInvalidValue.
#include <vector>

#include "sim_check.cuh"

#define BYTES 65536

int main(void)
{
    std::vector<unsigned char> up(BYTES), down(BYTES);
    unsigned char *pinned_up, *pinned_down, *d1, *d2, *d3, *d4;
    cudaStream_t s;
    cudaMemcpyAttributes attrs[2] = {};
    size_t idxs[2] = {0, 3};

    CHECK_CUDA(cudaMallocHost(&pinned_up, BYTES));
    CHECK_CUDA(cudaMallocHost(&pinned_down, BYTES));
    for (unsigned char **d : {&d1, &d2, &d3, &d4})
        CHECK_CUDA(cudaMalloc(d, BYTES));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    fill_pattern(up.data(), BYTES, 1);
    fill_pattern(pinned_up, BYTES, 2);
    fill_pattern(pinned_down, BYTES, 0);
    CHECK_CUDA(cudaMemcpy(d3, pinned_up, BYTES, cudaMemcpyHostToDevice)); /* d3: pattern 2 */
    CHECK_CUDA(cudaMemset(d4, 0, BYTES));

    // d1 := pageable (1), d2 := pinned (2), d4 := d3 (2); pinned_down := d3, down := d3
    void *dsts[] = {d1, d2, d4, pinned_down, down.data()};
    const void *srcs[] = {up.data(), pinned_up, d3, d3, d3};
    size_t sizes[] = {BYTES, BYTES, BYTES, BYTES, BYTES};
    attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    attrs[1].flags = cudaMemcpyFlagPreferOverlapWithCompute;
    CHECK_CUDA(cudaMemcpyBatchAsync(dsts, srcs, sizes, 5, attrs, idxs, 2, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    REQUIRE(check_pattern(pinned_down, BYTES, 2) < 0, "device to pinned host copy of the batch");
    REQUIRE(check_pattern(down.data(), BYTES, 2) < 0, "device to pageable host copy of the batch");
    CHECK_CUDA(cudaMemcpy(down.data(), d1, BYTES, cudaMemcpyDeviceToHost));
    REQUIRE(check_pattern(down.data(), BYTES, 1) < 0, "pageable host to device copy of the batch");
    CHECK_CUDA(cudaMemcpy(down.data(), d2, BYTES, cudaMemcpyDeviceToHost));
    REQUIRE(check_pattern(down.data(), BYTES, 2) < 0, "pinned host to device copy of the batch");
    CHECK_CUDA(cudaMemcpy(down.data(), d4, BYTES, cudaMemcpyDeviceToHost));
    REQUIRE(check_pattern(down.data(), BYTES, 2) < 0, "device to device copy of the batch");

    // refusals
    size_t bad_first[2] = {1, 3}, falling[2] = {3, 3}, beyond[2] = {0, 5};
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(dsts, srcs, sizes, 5, attrs, bad_first, 2, s));
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(dsts, srcs, sizes, 5, attrs, falling, 2, s));
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(dsts, srcs, sizes, 5, attrs, beyond, 2, s));
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, attrs, idxs, 2, s));
    attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderInvalid;
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(dsts, srcs, sizes, 5, attrs, idxs, 2, s));
    attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderAny;
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(dsts, srcs, sizes, 5, attrs, idxs, 2, cudaStreamLegacy));
    cudaGetLastError();

    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFreeHost(pinned_up));
    CHECK_CUDA(cudaFreeHost(pinned_down));
    FREE_DEVICE(d4, d3, d2, d1);
    return pass();
}
