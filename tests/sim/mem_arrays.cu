// CUDA arrays through the runtime: 1D, 2D and 3D arrays, copies into and
// out of them from pageable, pinned and device memory (whole and boxes),
// cudaMemcpy3D both ways, the array queries, texture and surface objects
// made, described and destroyed, and what is refused. Checked against a
// host model of each array. Built twice (mearas's runtime, and NVIDIA's
// static runtime over mearas's libcuda.so.1), so both front ends run it.
#include <vector>
#include "sim_check.cuh"

// cudaMemcpyToArray/FromArray are deprecated, and still called by programs
// (nvcc includes cuda_runtime.h first, so CUDA_ENABLE_DEPRECATED comes too late)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// a 2D float2 array: boxes in and out through each kind of linear memory
static void two_d(cudaStream_t s)
{
    const size_t w = 37, h = 23, elem = sizeof(float2), row = w * elem;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float2>();
    cudaArray_t a;
    CHECK_CUDA(cudaMallocArray(&a, &desc, w, h));

    std::vector<unsigned char> model(row * h), src(row * h), back(row * h);
    fill_pattern(src.data(), src.size(), 5);
    // whole, from pageable memory
    CHECK_CUDA(cudaMemcpy2DToArray(a, 0, 0, src.data(), row, row, h, cudaMemcpyHostToDevice));
    model = src;
    // a box from pinned memory, async
    const size_t bx = 3 * elem, by = 4, bw = 11 * elem, bh = 9, hp = bw + 24;
    unsigned char *pinned;
    CHECK_CUDA(cudaMallocHost(&pinned, hp * bh));
    fill_pattern(pinned, hp * bh, 6);
    CHECK_CUDA(cudaMemcpy2DToArrayAsync(a, bx, by, pinned, hp, bw, bh, cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (size_t y = 0; y < bh; y++)
        memcpy(&model[(by + y) * row + bx], pinned + y * hp, bw);
    // a box from pitched device memory
    unsigned char *dev;
    size_t dp;
    CHECK_CUDA(cudaMallocPitch((void **)&dev, &dp, bw, bh));
    std::vector<unsigned char> devsrc(bw * bh);
    fill_pattern(devsrc.data(), devsrc.size(), 7);
    CHECK_CUDA(cudaMemcpy2D(dev, dp, devsrc.data(), bw, bw, bh, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy2DToArray(a, 20 * elem, 12, dev, dp, bw, bh, cudaMemcpyDeviceToDevice));
    for (size_t y = 0; y < bh; y++)
        memcpy(&model[(12 + y) * row + 20 * elem], &devsrc[y * bw], bw);

    // back: whole to pageable, a box to device memory, the same box to pinned
    CHECK_CUDA(cudaMemcpy2DFromArray(back.data(), row, a, 0, 0, row, h, cudaMemcpyDeviceToHost));
    REQUIRE(back == model, "2D array: whole copy back differs from the model");
    CHECK_CUDA(cudaMemcpy2DFromArray(dev, dp, a, bx, by, bw, bh, cudaMemcpyDeviceToDevice));
    std::vector<unsigned char> got(bw * bh);
    CHECK_CUDA(cudaMemcpy2D(got.data(), bw, dev, dp, bw, bh, cudaMemcpyDeviceToHost));
    memset(pinned, 0, hp * bh);
    CHECK_CUDA(cudaMemcpy2DFromArrayAsync(pinned, hp, a, bx, by, bw, bh, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (size_t y = 0; y < bh; y++) {
        REQUIRE(memcmp(&got[y * bw], &model[(by + y) * row + bx], bw) == 0, "2D array box to device, row %zu", y);
        REQUIRE(memcmp(pinned + y * hp, &model[(by + y) * row + bx], bw) == 0, "2D array box to pinned, row %zu", y);
    }

    // queries
    cudaChannelFormatDesc got_desc;
    cudaExtent ext;
    unsigned flags = 99;
    CHECK_CUDA(cudaArrayGetInfo(&got_desc, &ext, &flags, a));
    REQUIRE(got_desc.x == 32 && got_desc.y == 32 && got_desc.z == 0 && got_desc.f == cudaChannelFormatKindFloat,
            "cudaArrayGetInfo: channel desc %d %d %d %d kind %d", got_desc.x, got_desc.y, got_desc.z, got_desc.w,
            (int)got_desc.f);
    REQUIRE(ext.width == w && ext.height == h && ext.depth == 0 && flags == 0, "cudaArrayGetInfo: extent or flags");

    // refused: a box past the array's edge, a copy between two arrays
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemcpy2DToArray(a, row - elem, 0, src.data(), row, 2 * elem, 1,
                                                          cudaMemcpyHostToDevice));
    EXPECT_ERR(cudaErrorInvalidValue, cudaMemcpy2DFromArray(back.data(), row, a, 0, 1, row, h,
                                                            cudaMemcpyDeviceToHost));
    cudaGetLastError();

    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaFree(dev));
    CHECK_CUDA(cudaFreeArray(a));
}

// a 3D uchar4 array through cudaMemcpy3D: whole in, a box out
static void three_d(void)
{
    const size_t w = 9, h = 7, d = 5, elem = 4, row = w * elem;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<uchar4>();
    cudaArray_t a;
    CHECK_CUDA(cudaMalloc3DArray(&a, &desc, make_cudaExtent(w, h, d), cudaArraySurfaceLoadStore));
    std::vector<unsigned char> src(row * h * d);
    fill_pattern(src.data(), src.size(), 8);

    cudaMemcpy3DParms in = {};
    in.srcPtr = make_cudaPitchedPtr(src.data(), row, w, h);
    in.dstArray = a;
    in.extent = make_cudaExtent(w, h, d);
    in.kind = cudaMemcpyHostToDevice;
    CHECK_CUDA(cudaMemcpy3D(&in));

    // the box x 2..6, y 1..5, z 1..3 into a padded host buffer
    const size_t ox = 2, oy = 1, oz = 1, bw = 5, bh = 5, bd = 3, hp = bw * elem + 8;
    std::vector<unsigned char> out(hp * bh * bd, 0xAB);
    cudaMemcpy3DParms back = {};
    back.srcArray = a;
    back.srcPos = make_cudaPos(ox, oy, oz);
    back.dstPtr = make_cudaPitchedPtr(out.data(), hp, bw, bh);
    back.extent = make_cudaExtent(bw, bh, bd);
    back.kind = cudaMemcpyDeviceToHost;
    CHECK_CUDA(cudaMemcpy3D(&back));
    for (size_t z = 0; z < bd; z++)
        for (size_t y = 0; y < bh; y++)
            REQUIRE(memcmp(&out[(z * bh + y) * hp], &src[((oz + z) * h + oy + y) * row + ox * elem], bw * elem) == 0,
                    "3D array box: slice %zu row %zu", z, y);

    // a surface object on it (made for surface loads and stores), described
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = a;
    cudaSurfaceObject_t surf = 0;
    CHECK_CUDA(cudaCreateSurfaceObject(&surf, &res));
    cudaResourceDesc rd;
    CHECK_CUDA(cudaGetSurfaceObjectResourceDesc(&rd, surf));
    REQUIRE(rd.resType == cudaResourceTypeArray && rd.res.array.array == a, "surface resource description");
    CHECK_CUDA(cudaDestroySurfaceObject(surf));
    CHECK_CUDA(cudaFreeArray(a));
}

// a 1D array through the count-byte calls
static void one_d(void)
{
    const size_t n = 300;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned short>();
    cudaArray_t a;
    CHECK_CUDA(cudaMallocArray(&a, &desc, n));
    std::vector<unsigned short> src(n), back(n, 0);
    fill_pattern(src.data(), n * 2, 9);
    CHECK_CUDA(cudaMemcpyToArray(a, 0, 0, src.data(), n * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpyFromArray(back.data(), a, 20, 0, 100, cudaMemcpyDeviceToHost));
    REQUIRE(memcmp(back.data(), (char *)src.data() + 20, 100) == 0, "1D array: 100 bytes from byte 20");
    CHECK_CUDA(cudaFreeArray(a));
}

// texture objects on an array and on pitched memory, described back; and refusals
static void textures(void)
{
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    CHECK_CUDA(cudaMallocArray(&a, &desc, 64, 32));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = a;
    cudaTextureDesc td = {};
    td.addressMode[0] = cudaAddressModeClamp;
    td.addressMode[1] = cudaAddressModeWrap;
    td.filterMode = cudaFilterModeLinear;
    td.readMode = cudaReadModeElementType;
    td.normalizedCoords = 1;
    td.borderColor[2] = 0.5f;
    cudaTextureObject_t tex = 0;
    CHECK_CUDA(cudaCreateTextureObject(&tex, &res, &td, NULL));
    REQUIRE(tex != 0, "texture object 0");
    cudaTextureDesc back;
    CHECK_CUDA(cudaGetTextureObjectTextureDesc(&back, tex));
    REQUIRE(back.addressMode[0] == cudaAddressModeClamp && back.addressMode[1] == cudaAddressModeWrap &&
                back.filterMode == cudaFilterModeLinear && back.normalizedCoords == 1 && back.borderColor[2] == 0.5f,
            "texture description read back differs");
    cudaResourceDesc rd;
    CHECK_CUDA(cudaGetTextureObjectResourceDesc(&rd, tex));
    REQUIRE(rd.resType == cudaResourceTypeArray && rd.res.array.array == a, "texture resource description");

    // on pitched device memory
    float *p;
    size_t pitch;
    CHECK_CUDA(cudaMallocPitch((void **)&p, &pitch, 40 * sizeof(float), 10));
    cudaResourceDesc pr = {};
    pr.resType = cudaResourceTypePitch2D;
    pr.res.pitch2D.devPtr = p;
    pr.res.pitch2D.desc = desc;
    pr.res.pitch2D.width = 40;
    pr.res.pitch2D.height = 10;
    pr.res.pitch2D.pitchInBytes = pitch;
    cudaTextureObject_t ptex = 0;
    CHECK_CUDA(cudaCreateTextureObject(&ptex, &pr, &td, NULL));
    CHECK_CUDA(cudaGetTextureObjectResourceDesc(&rd, ptex));
    REQUIRE(rd.resType == cudaResourceTypePitch2D && rd.res.pitch2D.devPtr == p && rd.res.pitch2D.width == 40 &&
                rd.res.pitch2D.pitchInBytes == pitch && rd.res.pitch2D.desc.x == 32,
            "pitched texture resource description");

    // refused: rows past the allocation; a surface on an array not made for them
    pr.res.pitch2D.height = 11;
    cudaTextureObject_t bad = 0;
    REQUIRE(cudaCreateTextureObject(&bad, &pr, &td, NULL) != cudaSuccess,
            "a texture over rows past the allocation was made");
    cudaSurfaceObject_t surf = 0;
    REQUIRE(cudaCreateSurfaceObject(&surf, &res) != cudaSuccess,
            "a surface on an array without cudaArraySurfaceLoadStore was made");
    cudaGetLastError();

    CHECK_CUDA(cudaDestroyTextureObject(ptex));
    CHECK_CUDA(cudaDestroyTextureObject(tex));
    CHECK_CUDA(cudaFree(p));
    CHECK_CUDA(cudaFreeArray(a));
}

int main(void)
{
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    two_d(s);
    three_d();
    one_d();
    textures();
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
