// NVIDIA's cuFFT plans and executes through mearas (-lcufft): the plans of
// tests/cuda's lib_cufft (1D C2C with a batch, 2D C2C, R2C and C2R through
// cufftPlanMany) are made, put on a non-blocking stream and executed,
// forward and inverse, each call answering CUFFT_SUCCESS; the stream
// synchronizes and the plans are destroyed. cuFFT loads each kernel's
// module and asks the driver for its function through export table
// 6e163fbe slot 7, and launches through the driver on the thread's current
// context. The sim runs no kernels, so the transforms' values are not
// checked here (tests/cuda lib_cufft does that on a GPU).
#include "sim_check.cuh"
#include "../cuda/src/cufft_check.cuh"

int main()
{
    const int n = 1000, batch = 4, nx = 64, ny = 48, rn = 256, rbatch = 3;
    cudaStream_t s;
    cufftComplex *c1, *c2, *c3;
    cufftReal *r;
    cufftHandle p1, p2, pr, pc;

    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&c1, sizeof(cufftComplex) * n * batch));
    CHECK_CUDA(cudaMalloc(&c2, sizeof(cufftComplex) * n * batch));
    CHECK_CUDA(cudaMalloc(&c3, sizeof(cufftComplex) * nx * ny));
    CHECK_CUDA(cudaMalloc(&r, sizeof(cufftReal) * rn * rbatch));
    CHECK_CUDA(cudaMemset(c1, 0, sizeof(cufftComplex) * n * batch));
    CHECK_CUDA(cudaMemset(c3, 0, sizeof(cufftComplex) * nx * ny));
    CHECK_CUDA(cudaMemset(r, 0, sizeof(cufftReal) * rn * rbatch));

    // 1D C2C, batched, out of place: forward then inverse
    CHECK_CUFFT(cufftPlan1d(&p1, n, CUFFT_C2C, batch));
    CHECK_CUFFT(cufftSetStream(p1, s));
    CHECK_CUFFT(cufftExecC2C(p1, c1, c2, CUFFT_FORWARD));
    CHECK_CUFFT(cufftExecC2C(p1, c2, c1, CUFFT_INVERSE));

    // 2D C2C in place
    CHECK_CUFFT(cufftPlan2d(&p2, nx, ny, CUFFT_C2C));
    CHECK_CUFFT(cufftSetStream(p2, s));
    CHECK_CUFFT(cufftExecC2C(p2, c3, c3, CUFFT_FORWARD));

    // R2C then C2R with explicit batch layouts
    int len[1] = { rn }, rembed[1] = { rn }, cembed[1] = { rn / 2 + 1 };
    CHECK_CUFFT(cufftPlanMany(&pr, 1, len, rembed, 1, rn, cembed, 1, rn / 2 + 1, CUFFT_R2C, rbatch));
    CHECK_CUFFT(cufftPlanMany(&pc, 1, len, cembed, 1, rn / 2 + 1, rembed, 1, rn, CUFFT_C2R, rbatch));
    CHECK_CUFFT(cufftSetStream(pr, s));
    CHECK_CUFFT(cufftSetStream(pc, s));
    CHECK_CUFFT(cufftExecR2C(pr, r, c2));
    CHECK_CUFFT(cufftExecC2R(pc, c2, r));

    CHECK_CUDA(cudaStreamSynchronize(s));
    for (cufftHandle plan : { p1, p2, pr, pc })
        CHECK_CUFFT(cufftDestroy(plan));
    FREE_DEVICE(c1, c2, c3, r);
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
