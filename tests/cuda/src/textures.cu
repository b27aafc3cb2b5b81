// Texture and surface objects: a 2D float array sampled with linear
// filtering and normalized coordinates; a 3D uchar4 array read as
// normalized floats; pitched device memory and linear memory as textures;
// a kernel writing a surface, read back with cudaMemcpy2DFromArray and
// cudaMemcpy3D. Output: a hash of every result's bits (the same on a GPU
// and on a vGPU backed by one).
#include <vector>
#include "check.cuh"

__global__ void sample_2d(cudaTextureObject_t t, float *out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h)
        out[y * w + x] = tex2D<float>(t, (x + 0.3f) / w, (y + 0.7f) / h);
}

__global__ void sample_3d(cudaTextureObject_t t, float4 *out, int w, int h, int d)
{
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    if (x < w && y < h && z < d)
        out[(z * h + y) * w + x] = tex3D<float4>(t, x + 0.5f, y + 0.5f, z + 0.5f);
}

__global__ void fetch_pitched(cudaTextureObject_t t, float *out, int w, int h)
{
    int x = threadIdx.x, y = blockIdx.x;
    if (x < w && y < h)
        out[y * w + x] = tex2D<float>(t, x + 0.5f, y + 0.5f) * 2.0f;
}

__global__ void fetch_linear(cudaTextureObject_t t, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tex1Dfetch<int>(t, (i * 7) % n) + i;
}

__global__ void write_surface(cudaSurfaceObject_t s, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h)
        surf2Dwrite(make_uint2(x * 131u + y, x ^ (y << 8)), s, x * (int)sizeof(uint2), y);
}

static cudaTextureDesc tex_desc(cudaTextureFilterMode filter, cudaTextureReadMode read, int normalized)
{
    cudaTextureDesc td = {};
    td.addressMode[0] = cudaAddressModeWrap;
    td.addressMode[1] = cudaAddressModeClamp;
    td.addressMode[2] = cudaAddressModeClamp;
    td.filterMode = filter;
    td.readMode = read;
    td.normalizedCoords = normalized;
    return td;
}

// a texture object on array a
static cudaTextureObject_t array_texture(cudaArray_t a, cudaTextureFilterMode filter, cudaTextureReadMode read,
                                        int normalized)
{
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaTextureDesc td = tex_desc(filter, read, normalized);
    cudaTextureObject_t t;
    CHECK_CUDA(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    return t;
}

static void linear_filtered_2d(void)
{
    const int w = 96, h = 40;
    std::vector<float> src(w * h), out(w * h);
    for (int i = 0; i < w * h; i++)
        src[i] = (float)((i * 37) % 101) / 7.0f;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    CHECK_CUDA(cudaMallocArray(&a, &desc, w, h));
    CHECK_CUDA(cudaMemcpy2DToArray(a, 0, 0, src.data(), w * sizeof(float), w * sizeof(float), h,
                                   cudaMemcpyHostToDevice));
    cudaTextureObject_t t = array_texture(a, cudaFilterModeLinear, cudaReadModeElementType, 1);
    float *d;
    CHECK_CUDA(cudaMalloc(&d, w * h * sizeof(float)));
    sample_2d<<<dim3((w + 15) / 16, (h + 15) / 16), dim3(16, 16)>>>(t, d, w, h);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(out.data(), d, w * h * sizeof(float), cudaMemcpyDeviceToHost));
    printf("2D float array, linear filter: hash %08x, out[5]=%.6f\n", hash_bytes(out.data(), out.size() * 4),
           out[5]);
    CHECK_CUDA(cudaDestroyTextureObject(t));
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaFreeArray(a));
}

static void normalized_3d(void)
{
    const int w = 12, h = 10, dd = 6;
    std::vector<uchar4> src(w * h * dd);
    std::vector<float4> out(w * h * dd);
    for (int i = 0; i < w * h * dd; i++)
        src[i] = make_uchar4(i & 255, (i * 3) & 255, (i * 7) & 255, 255 - (i & 255));
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<uchar4>();
    cudaArray_t a;
    CHECK_CUDA(cudaMalloc3DArray(&a, &desc, make_cudaExtent(w, h, dd)));
    cudaMemcpy3DParms p = {};
    p.srcPtr = make_cudaPitchedPtr(src.data(), w * sizeof(uchar4), w, h);
    p.dstArray = a;
    p.extent = make_cudaExtent(w, h, dd);
    p.kind = cudaMemcpyHostToDevice;
    CHECK_CUDA(cudaMemcpy3D(&p));
    cudaTextureObject_t t = array_texture(a, cudaFilterModePoint, cudaReadModeNormalizedFloat, 0);
    float4 *d;
    CHECK_CUDA(cudaMalloc(&d, out.size() * sizeof(float4)));
    sample_3d<<<dim3(h, dd), w>>>(t, d, w, h, dd);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(out.data(), d, out.size() * sizeof(float4), cudaMemcpyDeviceToHost));
    printf("3D uchar4 array, normalized reads: hash %08x, out[1].y=%.6f\n",
           hash_bytes(out.data(), out.size() * sizeof(float4)), out[1].y);
    CHECK_CUDA(cudaDestroyTextureObject(t));
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaFreeArray(a));
}

static void pitched_and_linear(void)
{
    const int w = 50, h = 20, n = 4096;
    std::vector<float> src(w * h), out(w * h);
    for (int i = 0; i < w * h; i++)
        src[i] = i * 0.25f;
    float *pm;
    size_t pitch;
    CHECK_CUDA(cudaMallocPitch((void **)&pm, &pitch, w * sizeof(float), h));
    CHECK_CUDA(cudaMemcpy2D(pm, pitch, src.data(), w * sizeof(float), w * sizeof(float), h,
                            cudaMemcpyHostToDevice));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypePitch2D;
    rd.res.pitch2D.devPtr = pm;
    rd.res.pitch2D.desc = cudaCreateChannelDesc<float>();
    rd.res.pitch2D.width = w;
    rd.res.pitch2D.height = h;
    rd.res.pitch2D.pitchInBytes = pitch;
    cudaTextureDesc td = tex_desc(cudaFilterModePoint, cudaReadModeElementType, 0);
    cudaTextureObject_t t;
    CHECK_CUDA(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    float *d;
    CHECK_CUDA(cudaMalloc(&d, w * h * sizeof(float)));
    fetch_pitched<<<h, w>>>(t, d, w, h);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(out.data(), d, w * h * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < w * h; i++)
        REQUIRE(out[i] == src[i] * 2.0f, "pitched texture: element %d is %f", i, out[i]);
    printf("pitched float texture: hash %08x\n", hash_bytes(out.data(), out.size() * 4));

    std::vector<int> ints(n), outi(n);
    for (int i = 0; i < n; i++)
        ints[i] = i * i - 5000;
    int *lin, *di;
    CHECK_CUDA(cudaMalloc(&lin, n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&di, n * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(lin, ints.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    cudaResourceDesc lr = {};
    lr.resType = cudaResourceTypeLinear;
    lr.res.linear.devPtr = lin;
    lr.res.linear.desc = cudaCreateChannelDesc<int>();
    lr.res.linear.sizeInBytes = n * sizeof(int);
    cudaTextureObject_t lt;
    CHECK_CUDA(cudaCreateTextureObject(&lt, &lr, &td, nullptr));
    fetch_linear<<<n / 256, 256>>>(lt, di, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(outi.data(), di, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        REQUIRE(outi[i] == ints[(i * 7) % n] + i, "linear texture: element %d is %d", i, outi[i]);
    printf("linear int texture: hash %08x\n", hash_bytes(outi.data(), outi.size() * 4));
    CHECK_CUDA(cudaDestroyTextureObject(lt));
    CHECK_CUDA(cudaDestroyTextureObject(t));
    FREE_DEVICE(d, pm, lin, di);
}

static void surface_written(void)
{
    const int w = 70, h = 33;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<uint2>();
    cudaArray_t a;
    CHECK_CUDA(cudaMallocArray(&a, &desc, w, h, cudaArraySurfaceLoadStore));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaSurfaceObject_t s;
    CHECK_CUDA(cudaCreateSurfaceObject(&s, &rd));
    write_surface<<<dim3((w + 15) / 16, (h + 15) / 16), dim3(16, 16)>>>(s, w, h);
    CHECK_LAUNCH();
    std::vector<uint2> out(w * h), box(10 * 4);
    CHECK_CUDA(cudaMemcpy2DFromArray(out.data(), w * sizeof(uint2), a, 0, 0, w * sizeof(uint2), h,
                                     cudaMemcpyDeviceToHost));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            REQUIRE(out[y * w + x].x == x * 131u + y && out[y * w + x].y == (unsigned)(x ^ (y << 8)),
                    "surface element (%d, %d)", x, y);
    cudaMemcpy3DParms p = {};
    p.srcArray = a;
    p.srcPos = make_cudaPos(5, 7, 0);
    p.dstPtr = make_cudaPitchedPtr(box.data(), 10 * sizeof(uint2), 10, 4);
    p.extent = make_cudaExtent(10, 4, 1);
    p.kind = cudaMemcpyDeviceToHost;
    CHECK_CUDA(cudaMemcpy3D(&p));
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 10; x++)
            REQUIRE(box[y * 10 + x].x == out[(7 + y) * w + 5 + x].x, "3D copy of a box, (%d, %d)", x, y);
    printf("surface written by a kernel: hash %08x\n", hash_bytes(out.data(), out.size() * sizeof(uint2)));
    CHECK_CUDA(cudaDestroySurfaceObject(s));
    CHECK_CUDA(cudaFreeArray(a));
}

int main(void)
{
    linear_filtered_2d();
    normalized_3d();
    pitched_and_linear();
    surface_written();
    printf("PASS\n");
    return 0;
}
