// cudaMalloc3D, cudaMemset3D and cudaMemset3DAsync: a pitched allocation of
// slices, extents that cover whole slices (one 2D memset) and that do not
// (one per slice), the bytes around each extent untouched; rows wider than the
// pitch or slices taller than the allocation's refused (one row is only its
// bytes), empty extents change nothing.
#include <vector>
#include "sim_check.cuh"

int main(void)
{
    const size_t w = 300, h = 12, d = 5;
    cudaPitchedPtr p;
    CHECK_CUDA(cudaMalloc3D(&p, make_cudaExtent(w, h, d)));
    void *q;
    size_t pitch;
    CHECK_CUDA(cudaMallocPitch(&q, &pitch, w, h * d));
    REQUIRE(p.pitch == pitch && p.xsize == w && p.ysize == h, "pitched pointer: pitch %zu (cudaMallocPitch %zu), %zu x %zu",
            p.pitch, pitch, p.xsize, p.ysize);
    const size_t total = p.pitch * h * d;
    std::vector<unsigned char> model(total), back(total);
    fill_pattern(model.data(), total, 3);
    CHECK_CUDA(cudaMemcpy(p.ptr, model.data(), total, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));

    // whole slices: every row of every slice
    CHECK_CUDA(cudaMemset3D(p, 0x5A, make_cudaExtent(w, h, d)));
    for (size_t r = 0; r < h * d; r++)
        memset(&model[r * p.pitch], 0x5A, w);
    // part of each slice, from an offset: one memset per slice
    cudaPitchedPtr at = p;
    at.ptr = (char *)p.ptr + p.pitch * h + 2 * p.pitch + 7; // slice 1, row 2, byte 7
    CHECK_CUDA(cudaMemset3DAsync(at, 0xC3, make_cudaExtent(101, 4, 3), s));
    for (size_t z = 0; z < 3; z++)
        for (size_t y = 0; y < 4; y++)
            memset(&model[(1 + z) * h * p.pitch + (2 + y) * p.pitch + 7], 0xC3, 101);
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(back.data(), p.ptr, total, cudaMemcpyDeviceToHost));
    REQUIRE(back == model, "memset3D (pitch %zu)", p.pitch);

    // one row wider than the pitch: its bytes (NVIDIA's runtime takes it too)
    CHECK_CUDA(cudaMemset3D(p, 0x77, make_cudaExtent(p.pitch + 5, 1, 1)));
    memset(&model[0], 0x77, p.pitch + 5);
    // refused: rows wider than the pitch, taller than a slice (more than one slice)
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemset3D(p, 1, make_cudaExtent(p.pitch + 1, 2, 1)));
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemset3D(p, 1, make_cudaExtent(w, h + 1, 2)));
    // slices whose rows together overflow a size_t
    cudaPitchedPtr tall = p;
    tall.ysize = SIZE_MAX / 2;
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemset3D(tall, 1, make_cudaExtent(w, SIZE_MAX / 2, 4)));
    // empty extents change nothing
    CHECK_CUDA(cudaMemset3D(p, 0x11, make_cudaExtent(0, h, d)));
    CHECK_CUDA(cudaMemset3D(p, 0x11, make_cudaExtent(w, 0, d)));
    CHECK_CUDA(cudaMemset3DAsync(p, 0x11, make_cudaExtent(w, h, 0), s));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(back.data(), p.ptr, total, cudaMemcpyDeviceToHost));
    REQUIRE(back == model, "one wide row, then empty extents");

    EXPECT_ERR(cudaErrorInvalidValue, cudaMalloc3D(nullptr, make_cudaExtent(w, h, d)));
    cudaPitchedPtr huge;
    EXPECT_ERR(cudaErrorMemoryAllocation, cudaMalloc3D(&huge, make_cudaExtent(1 << 20, SIZE_MAX / 2, 4)));
    (void)cudaGetLastError();
    CHECK_CUDA(cudaStreamDestroy(s));
    FREE_DEVICE(p.ptr, q);
    return pass();
}
