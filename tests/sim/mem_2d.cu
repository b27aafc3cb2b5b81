// 2D copies on pitched allocations (cudaMallocPitch + cudaMemcpy2D both
// ways, whole and sub-rectangles, pageable/pinned, sync/async, D2D), checked
// against a host model of the device buffer.
#include <vector>
#include "sim_check.cuh"

static void shape(size_t width, size_t height, cudaStream_t s)
{
    unsigned char *d, *d2;
    size_t pitch = 0, pitch2 = 0;
    CHECK_CUDA(cudaMallocPitch((void **)&d, &pitch, width, height));
    REQUIRE(pitch >= width, "pitch %zu < width %zu", pitch, width);
    CHECK_CUDA(cudaMallocPitch((void **)&d2, &pitch2, width, height));

    // model of the device buffer (whole pitch x height)
    std::vector<unsigned char> model(pitch * height), src(width * height), back(pitch * height);
    fill_pattern(src.data(), src.size(), (uint32_t)(width * 31 + height));
    fill_pattern(model.data(), model.size(), 99);
    CHECK_CUDA(cudaMemcpy(d, model.data(), model.size(), cudaMemcpyHostToDevice));

    // whole rectangle, tightly packed host rows
    CHECK_CUDA(cudaMemcpy2D(d, pitch, src.data(), width, width, height, cudaMemcpyHostToDevice));
    for (size_t y = 0; y < height; y++)
        memcpy(&model[y * pitch], &src[y * width], width);
    CHECK_CUDA(cudaMemcpy(back.data(), d, back.size(), cudaMemcpyDeviceToHost));
    REQUIRE(memcmp(back.data(), model.data(), model.size()) == 0,
            "2D H2D %zux%zu (pitch %zu): padding or rows wrong", width, height, pitch);

    // sub-rectangle from a wider host buffer into the middle of the device buffer
    if (width > 4 && height > 2) {
        size_t sx = 3, sy = 1, sw = width - 4, sh = height - 2, hpitch = width + 13;
        std::vector<unsigned char> wide(hpitch * height);
        fill_pattern(wide.data(), wide.size(), 7);
        CHECK_CUDA(cudaMemcpy2D(d + sy * pitch + sx, pitch, wide.data() + 2, hpitch, sw, sh,
                                cudaMemcpyHostToDevice));
        for (size_t y = 0; y < sh; y++)
            memcpy(&model[(sy + y) * pitch + sx], &wide[y * hpitch + 2], sw);
        CHECK_CUDA(cudaMemcpy(back.data(), d, back.size(), cudaMemcpyDeviceToHost));
        REQUIRE(memcmp(back.data(), model.data(), model.size()) == 0, "2D sub-rectangle H2D %zux%zu", width,
                height);

        // sub-rectangle back to a host buffer with its own pitch
        std::vector<unsigned char> out(hpitch * height, 0xEE), want(hpitch * height, 0xEE);
        CHECK_CUDA(cudaMemcpy2D(out.data() + 1, hpitch, d + sy * pitch + sx, pitch, sw, sh,
                                cudaMemcpyDeviceToHost));
        for (size_t y = 0; y < sh; y++)
            memcpy(&want[y * hpitch + 1], &model[(sy + y) * pitch + sx], sw);
        REQUIRE(out == want, "2D sub-rectangle D2H %zux%zu", width, height);
    }

    // D2D between two pitched buffers, then pinned async D2H of the whole
    CHECK_CUDA(cudaMemcpy2D(d2, pitch2, d, pitch, width, height, cudaMemcpyDeviceToDevice));
    unsigned char *pinned;
    CHECK_CUDA(cudaMallocHost(&pinned, width * height));
    memset(pinned, 0, width * height);
    CHECK_CUDA(cudaMemcpy2DAsync(pinned, width, d2, pitch2, width, height, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (size_t y = 0; y < height; y++)
        REQUIRE(memcmp(pinned + y * width, &model[y * pitch], width) == 0, "2D D2D/async row %zu", y);

    // pinned async H2D of fresh data, read back with cudaMemcpyDefault
    fill_pattern(pinned, width * height, 1234);
    CHECK_CUDA(cudaMemcpy2DAsync(d, pitch, pinned, width, width, height, cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    std::vector<unsigned char> packed(width * height);
    CHECK_CUDA(cudaMemcpy2D(packed.data(), width, d, pitch, width, height, cudaMemcpyDefault));
    REQUIRE(memcmp(packed.data(), pinned, width * height) == 0, "2D pinned async H2D / Default D2H");

    CHECK_CUDA(cudaFreeHost(pinned));
    FREE_DEVICE(d, d2);
}

int main(void)
{
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    const size_t shapes[][2] = {{1, 1}, {3, 5}, {17, 9}, {512, 64}, {513, 33}, {4097, 17}, {1000, 1000}};
    for (auto &sh : shapes)
        shape(sh[0], sh[1], s);
    // invalid: width larger than a pitch
    unsigned char *d;
    size_t pitch;
    CHECK_CUDA(cudaMallocPitch((void **)&d, &pitch, 64, 4));
    std::vector<unsigned char> h(pitch * 8);
    EXPECT_ERR(cudaErrorInvalidPitchValue,
               cudaMemcpy2D(d, pitch, h.data(), 16, 32, 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
