// cudaMemset / cudaMemsetAsync / cudaMemset2D / cudaMemset2DAsync: values,
// sizes and offsets, with the bytes around each range left untouched.
#include <vector>
#include "sim_check.cuh"

int main(void)
{
    const size_t total = (4u << 20) + 4096;
    unsigned char *d;
    CHECK_CUDA(cudaMalloc(&d, total));
    std::vector<unsigned char> model(total), back(total);
    fill_pattern(model.data(), total, 5);
    CHECK_CUDA(cudaMemcpy(d, model.data(), total, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));

    const size_t cases[][3] = {// offset, count, value
                               {0, 1, 0xAB}, {1, 2, 0}, {7, 3, 0xFF}, {100, 4095, 0x11}, {4096, 4096, 0x22},
                               {8191, 4097, 0x33}, {3, 65537, 0x44}, {65536, (1u << 20) + 1, 0x55},
                               {5, (4u << 20) - 1, 0x66}};
    int i = 0;
    for (auto &c : cases) {
        if (i++ % 2)
            CHECK_CUDA(cudaMemsetAsync(d + c[0], (int)c[2], c[1], s));
        else
            CHECK_CUDA(cudaMemset(d + c[0], (int)c[2], c[1]));
        memset(&model[c[0]], (int)c[2], c[1]);
        CHECK_CUDA(cudaStreamSynchronize(s));
        CHECK_CUDA(cudaMemcpy(back.data(), d, total, cudaMemcpyDeviceToHost));
        REQUIRE(back == model, "memset offset %zu count %zu value %#zx", c[0], c[1], c[2]);
    }
    // only the low byte of the value counts
    CHECK_CUDA(cudaMemset(d + 10, 0x1234, 6));
    memset(&model[10], 0x34, 6);
    CHECK_CUDA(cudaMemcpy(back.data(), d, total, cudaMemcpyDeviceToHost));
    REQUIRE(back == model, "memset value truncation");
    // zero count is a no-op
    CHECK_CUDA(cudaMemset(d, 0x77, 0));
    CHECK_CUDA(cudaMemcpy(back.data(), d, total, cudaMemcpyDeviceToHost));
    REQUIRE(back == model, "zero-byte memset changed memory");

    // 2D: sub-rectangles of a pitched buffer
    size_t pitch;
    const size_t w = 300, h = 40;
    unsigned char *p;
    CHECK_CUDA(cudaMallocPitch((void **)&p, &pitch, w, h));
    std::vector<unsigned char> m2(pitch * h), b2(pitch * h);
    fill_pattern(m2.data(), m2.size(), 8);
    CHECK_CUDA(cudaMemcpy(p, m2.data(), m2.size(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset2D(p, pitch, 0x5A, w, h));
    for (size_t y = 0; y < h; y++)
        memset(&m2[y * pitch], 0x5A, w);
    CHECK_CUDA(cudaMemset2DAsync(p + 2 * pitch + 9, pitch, 0xC3, 101, 17, s));
    for (size_t y = 0; y < 17; y++)
        memset(&m2[(2 + y) * pitch + 9], 0xC3, 101);
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(b2.data(), p, b2.size(), cudaMemcpyDeviceToHost));
    REQUIRE(b2 == m2, "memset2D (pitch %zu)", pitch);

    FREE_DEVICE(p, d);
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
