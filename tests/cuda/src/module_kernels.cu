// The kernels tests/cuda/src/modules.cu loads as a cubin, a fat binary and
// PTX, and drv_textures.cu as a cubin (tests/cuda/Makefile builds the three
// images; module_images.cuh embeds them).
extern "C" __device__ unsigned mod_counter;
__device__ unsigned mod_counter;

extern "C" __global__ void mod_scale(int *p, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        p[i] = p[i] * k + i;
        atomicAdd(&mod_counter, 1u);
    }
}

// samples t at the centre of each of w x h cells, in normalized coordinates
extern "C" __global__ void mod_tex2d(cudaTextureObject_t t, float *out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h)
        out[y * w + x] = tex2D<float>(t, (x + 0.25f) / w, (y + 0.75f) / h);
}

// writes each element of a w x h surface of uint2
extern "C" __global__ void mod_surf_write(cudaSurfaceObject_t s, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h)
        surf2Dwrite(make_uint2(x * 7u + y * 1000u, ~(unsigned)x), s, x * (int)sizeof(uint2), y);
}
