// Arrays, texture and surface objects through the driver API alone (built
// only as a driver program: MEARAS_DRIVER_ONLY): a 2D float array filled
// with cuMemcpy2D and sampled with linear filtering by a kernel of a cubin
// module; a one-row array through cuMemcpyHtoA/AtoH/DtoA/AtoD; a surface
// written by a kernel and read back as a box with cuMemcpy3D; each object's
// description read back. Output: hashes of the results (the same on a GPU
// and on a vGPU backed by one).
#include <vector>
#include "check.cuh"
#include "cu_check.cuh"
#include "module_images.cuh"

static CUDA_RESOURCE_DESC array_resource(CUarray a)
{
    CUDA_RESOURCE_DESC rd = {};
    rd.resType = CU_RESOURCE_TYPE_ARRAY;
    rd.res.array.hArray = a;
    return rd;
}

static void launch_2d(CUfunction f, void **args, int w, int h)
{
    CHECK_CU(cuLaunchKernel(f, (w + 15) / 16, (h + 15) / 16, 1, 16, 16, 1, 0, nullptr, args, nullptr));
    CHECK_CU(cuCtxSynchronize());
}

static void sampled(CUmodule m)
{
    const int w = 80, h = 36;
    std::vector<float> src(w * h), out(w * h);
    for (int i = 0; i < w * h; i++)
        src[i] = (float)((i * 53) % 89) * 0.125f;
    CUDA_ARRAY3D_DESCRIPTOR d = {};
    d.Width = w;
    d.Height = h;
    d.Format = CU_AD_FORMAT_FLOAT;
    d.NumChannels = 1;
    CUarray a;
    CHECK_CU(cuArray3DCreate(&a, &d));
    CUDA_MEMCPY2D c = {};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src.data();
    c.srcPitch = w * sizeof(float);
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = a;
    c.WidthInBytes = w * sizeof(float);
    c.Height = h;
    CHECK_CU(cuMemcpy2D(&c));
    CUDA_RESOURCE_DESC rd = array_resource(a);
    CUDA_TEXTURE_DESC td = {};
    td.addressMode[0] = CU_TR_ADDRESS_MODE_CLAMP;
    td.addressMode[1] = CU_TR_ADDRESS_MODE_WRAP;
    td.filterMode = CU_TR_FILTER_MODE_LINEAR;
    td.flags = CU_TRSF_NORMALIZED_COORDINATES;
    CUtexObject t;
    CHECK_CU(cuTexObjectCreate(&t, &rd, &td, nullptr));
    CUDA_TEXTURE_DESC back;
    CHECK_CU(cuTexObjectGetTextureDesc(&back, t));
    REQUIRE(back.filterMode == CU_TR_FILTER_MODE_LINEAR && back.flags == CU_TRSF_NORMALIZED_COORDINATES &&
                back.addressMode[1] == CU_TR_ADDRESS_MODE_WRAP,
            "texture description read back");
    CUfunction f;
    CHECK_CU(cuModuleGetFunction(&f, m, "mod_tex2d"));
    CUdeviceptr o;
    CHECK_CU(cuMemAlloc(&o, w * h * sizeof(float)));
    int wi = w, hi = h;
    void *args[] = {&t, &o, &wi, &hi};
    launch_2d(f, args, w, h);
    CHECK_CU(cuMemcpyDtoH(out.data(), o, w * h * sizeof(float)));
    printf("2D float array sampled (linear, normalized): hash %08x, out[7]=%.6f\n",
           hash_bytes(out.data(), out.size() * 4), out[7]);
    CHECK_CU(cuTexObjectDestroy(t));
    CHECK_CU(cuMemFree(o));
    CHECK_CU(cuArrayDestroy(a));
}

static void one_row(void)
{
    const int n = 512;
    std::vector<unsigned> src(n), back(n);
    for (int i = 0; i < n; i++)
        src[i] = i * 2654435761u;
    CUDA_ARRAY_DESCRIPTOR d = {};
    d.Width = n;
    d.Format = CU_AD_FORMAT_UNSIGNED_INT32;
    d.NumChannels = 1;
    CUarray a;
    CHECK_CU(cuArrayCreate(&a, &d));
    CHECK_CU(cuMemcpyHtoA(a, 0, src.data(), n * 4));
    CUdeviceptr dev;
    CHECK_CU(cuMemAlloc(&dev, n * 4));
    CHECK_CU(cuMemcpyAtoD(dev, a, 64, (n - 16) * 4));
    CHECK_CU(cuMemcpyDtoA(a, 0, dev, (n - 16) * 4));
    CHECK_CU(cuMemcpyAtoH(back.data(), a, 0, n * 4));
    for (int i = 0; i < n; i++)
        REQUIRE(back[i] == (i < n - 16 ? src[i + 16] : src[i]), "one-row array word %d", i);
    printf("one-row array through HtoA, AtoD, DtoA, AtoH: hash %08x\n", hash_bytes(back.data(), n * 4));
    CHECK_CU(cuMemFree(dev));
    CHECK_CU(cuArrayDestroy(a));
}

static void surface(CUmodule m)
{
    const int w = 45, h = 21;
    CUDA_ARRAY3D_DESCRIPTOR d = {};
    d.Width = w;
    d.Height = h;
    d.Format = CU_AD_FORMAT_UNSIGNED_INT32;
    d.NumChannels = 2;
    d.Flags = CUDA_ARRAY3D_SURFACE_LDST;
    CUarray a;
    CHECK_CU(cuArray3DCreate(&a, &d));
    CUDA_RESOURCE_DESC rd = array_resource(a);
    CUsurfObject s;
    CHECK_CU(cuSurfObjectCreate(&s, &rd));
    CUDA_RESOURCE_DESC back;
    CHECK_CU(cuSurfObjectGetResourceDesc(&back, s));
    REQUIRE(back.resType == CU_RESOURCE_TYPE_ARRAY && back.res.array.hArray == a, "surface resource read back");
    CUfunction f;
    CHECK_CU(cuModuleGetFunction(&f, m, "mod_surf_write"));
    int wi = w, hi = h;
    void *args[] = {&s, &wi, &hi};
    launch_2d(f, args, w, h);
    // the box x 4..23, y 3..12 into a host buffer with its own pitch
    const int bw = 20, bh = 10, hp = bw * 8 + 24;
    std::vector<unsigned char> box(hp * bh, 0xCD);
    CUDA_MEMCPY3D c = {};
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = a;
    c.srcXInBytes = 4 * 8;
    c.srcY = 3;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = box.data();
    c.dstPitch = hp;
    c.dstHeight = bh;
    c.WidthInBytes = bw * 8;
    c.Height = bh;
    c.Depth = 1;
    CHECK_CU(cuMemcpy3D(&c));
    for (int y = 0; y < bh; y++)
        for (int x = 0; x < bw; x++) {
            const unsigned *e = (const unsigned *)&box[y * hp + x * 8];
            REQUIRE(e[0] == (x + 4) * 7u + (y + 3) * 1000u && e[1] == ~(unsigned)(x + 4), "surface (%d, %d)",
                    x + 4, y + 3);
        }
    printf("surface written by a kernel, a box read back: hash %08x\n", hash_bytes(box.data(), box.size()));
    CHECK_CU(cuSurfObjectDestroy(s));
    CHECK_CU(cuArrayDestroy(a));
}

int main(void)
{
    CUdevice dev = cu_primary_current();
    CUmodule m;
    CHECK_CU(cuModuleLoadData(&m, mod_cubin));
    sampled(m);
    one_row();
    surface(m);
    CHECK_CU(cuModuleUnload(m));
    CHECK_CU(cuDevicePrimaryCtxRelease(dev));
    printf("PASS\n");
    return 0;
}
