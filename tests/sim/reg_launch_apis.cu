// The same kernels launched through <<<>>>, cudaLaunchKernel,
// cudaLaunchCooperativeKernel and cudaLaunchKernelExC, on the legacy stream
// and on created streams, with dynamic shared memory.
#include "sim_check.cuh"

__global__ void k_axpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

__global__ void k_shared(int *out)
{
    extern __shared__ int buf[];
    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = buf[0];
}

int main(void)
{
    const int n = 1024;
    float *x, *y;
    CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    k_axpy<<<n / 256, 256>>>(2.0f, x, y, n);
    CHECK_LAUNCH();
    k_axpy<<<n / 256, 256, 0, s>>>(2.0f, x, y, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(s));

    float a = 3.0f;
    int nn = n;
    void *args[] = { &a, &x, &y, &nn };
    CHECK_CUDA(cudaLaunchKernel((const void *)k_axpy, dim3(n / 128), dim3(128), args, 0, 0));
    CHECK_LAUNCH();
    CHECK_CUDA(cudaLaunchKernel((const void *)k_axpy, dim3(n / 128), dim3(128), args, 0, s));
    CHECK_CUDA(cudaStreamSynchronize(s));

    int coop = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
    REQUIRE(coop == 1, "device does not report cooperative launch");
    CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)k_axpy, dim3(4), dim3(256), args, 0, 0));
    CHECK_LAUNCH();
    CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)k_axpy, dim3(4), dim3(256), args, 0, s));
    CHECK_CUDA(cudaStreamSynchronize(s));

    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(4);
    cfg.blockDim = dim3(256);
    cfg.stream = s;
    CHECK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)k_axpy, args));
    CHECK_CUDA(cudaStreamSynchronize(s));

    /* a cluster reaches the device, which has none to give: refused there,
     * and none is resident */
    cudaLaunchAttribute cl[1];
    cl[0].id = cudaLaunchAttributeClusterDimension;
    cl[0].val.clusterDim.x = 2;
    cl[0].val.clusterDim.y = 1;
    cl[0].val.clusterDim.z = 1;
    cfg.attrs = cl;
    cfg.numAttrs = 1;
    int resident = -1;
    CHECK_CUDA(cudaOccupancyMaxActiveClusters(&resident, (const void *)k_axpy, &cfg));
    REQUIRE(resident == 0, "sim device: %d clusters resident", resident);
    cudaError_t ce = cudaLaunchKernelExC(&cfg, (const void *)k_axpy, args);
    if (ce == cudaSuccess)
        ce = cudaStreamSynchronize(s);
    REQUIRE(ce == cudaErrorNotSupported, "cluster launch on the sim device: %s", cudaGetErrorName(ce));
    cudaGetLastError();
    cfg.attrs = nullptr;
    cfg.numAttrs = 0;
    CHECK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)k_axpy, args));
    CHECK_CUDA(cudaStreamSynchronize(s));

    int *o;
    CHECK_CUDA(cudaMalloc(&o, 256 * sizeof(int)));
    k_shared<<<1, 256, 256 * sizeof(int)>>>(o);
    CHECK_LAUNCH();
    void *args2[] = { &o };
    CHECK_CUDA(cudaLaunchKernel((const void *)k_shared, dim3(1), dim3(256), args2, 1024, s));
    CHECK_CUDA(cudaStreamSynchronize(s));

    CHECK_CUDA(cudaStreamDestroy(s));
    FREE_DEVICE(x, y, o);
    return pass();
}
