// cuDNN 9 (legacy convolution API): forward, backward data and backward filter
// of a 3x3, pad 1, stride 1 convolution, NCHW float, N=4 C=8 H=W=32 K=16, with
// fixed deterministic algorithms (IMPLICIT_GEMM, BWD_DATA_ALGO_1,
// BWD_FILTER_ALGO_1) and CUDNN_FMA_MATH (no TF32), workspaces sized by the
// *GetWorkspaceSize calls, on a stream; checked against a CPU reference.
#include <cudnn.h>
#include "lib_ref.h"

#define CHECK_CUDNN(call) CHECK_STATUS(call, CUDNN_STATUS_SUCCESS, cudnnGetErrorString)

enum { N = 4, C = 8, H = 32, W = 32, K = 16, R = 3, PAD = 1 };

static size_t xi(int n, int c, int h, int w)
{
    return (((size_t)n * C + c) * H + h) * W + w;
}
static size_t yi(int n, int k, int h, int w)
{
    return (((size_t)n * K + k) * H + h) * W + w;
}
static size_t wi(int k, int c, int r, int s)
{
    return (((size_t)k * C + c) * R + r) * R + s;
}

// |got - ref| / sum |terms| at worst; the fp32 sums have 72 (forward), 144
// (backward data) and 4096 (backward filter) terms, error about terms * 2^-24
// of that scale at worst, sqrt(terms) * 2^-24 typically.
static double scaled_err(const std::vector<float> &got, const std::vector<double> &ref,
                         const std::vector<double> &mag)
{
    double worst = 0.0;
    for (size_t i = 0; i < ref.size(); i++)
        worst = std::fmax(worst, std::fabs(got[i] - ref[i]) / (mag[i] + 1e-30));
    return worst;
}

int main(void)
{
    auto x = random_floats((size_t)N * C * H * W, 1u), w = random_floats((size_t)K * C * R * R, 2u);
    auto dy = random_floats((size_t)N * K * H * W, 3u);
    std::vector<double> y(dy.size()), ym(dy.size()), dx(x.size()), dxm(x.size()), dw(w.size()),
        dwm(w.size());
    for (int n = 0; n < N; n++) // y(oh, ow) sums x(oh + r - PAD, ow + s - PAD) w(r, s)
        for (int k = 0; k < K; k++)
            for (int c = 0; c < C; c++)
                for (int oh = 0; oh < H; oh++)
                    for (int ow = 0; ow < W; ow++)
                        for (int r = 0; r < R; r++)
                            for (int s = 0; s < R; s++) {
                                int ih = oh + r - PAD, iw = ow + s - PAD;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                    continue;
                                double xv = x[xi(n, c, ih, iw)], wv = w[wi(k, c, r, s)];
                                double gv = dy[yi(n, k, oh, ow)];
                                y[yi(n, k, oh, ow)] += xv * wv;
                                ym[yi(n, k, oh, ow)] += std::fabs(xv * wv);
                                dx[xi(n, c, ih, iw)] += gv * wv;
                                dxm[xi(n, c, ih, iw)] += std::fabs(gv * wv);
                                dw[wi(k, c, r, s)] += gv * xv;
                                dwm[wi(k, c, r, s)] += std::fabs(gv * xv);
                            }

    cudaStream_t st = nonblocking_stream();
    cudnnHandle_t h;
    CHECK_CUDNN(cudnnCreate(&h));
    CHECK_CUDNN(cudnnSetStream(h, st));
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&xd));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&yd));
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&wd));
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&cd));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W));
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, R, R));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(cd, PAD, PAD, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CHECK_CUDNN(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
    int on, ok, oh, ow;
    CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &on, &ok, &oh, &ow));
    REQUIRE(on == N && ok == K && oh == H && ow == W, "output dims %dx%dx%dx%d", on, ok, oh, ow);
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, H, W));

    const auto fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    const auto bwd_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    const auto bwd_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
    size_t ws_fwd = 0, ws_data = 0, ws_filter = 0;
    CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, fwd, &ws_fwd));
    CHECK_CUDNN(
        cudnnGetConvolutionBackwardDataWorkspaceSize(h, wd, yd, cd, xd, bwd_data, &ws_data));
    CHECK_CUDNN(
        cudnnGetConvolutionBackwardFilterWorkspaceSize(h, xd, yd, cd, wd, bwd_filter, &ws_filter));
    size_t ws_size = std::max(ws_fwd, std::max(ws_data, ws_filter));
    void *ws = nullptr;
    if (ws_size)
        CHECK_CUDA(cudaMalloc(&ws, ws_size));

    float *dx_in = to_device(x, st), *dw_in = to_device(w, st), *ddy = to_device(dy, st);
    float *dout_y, *dout_dx, *dout_dw;
    CHECK_CUDA(cudaMalloc(&dout_y, dy.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dout_dx, x.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dout_dw, w.size() * sizeof(float)));
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUDNN(cudnnConvolutionForward(h, &one, xd, dx_in, wd, dw_in, cd, fwd, ws, ws_fwd, &zero,
                                        yd, dout_y));
    CHECK_CUDNN(cudnnConvolutionBackwardData(h, &one, wd, dw_in, yd, ddy, cd, bwd_data, ws, ws_data,
                                             &zero, xd, dout_dx));
    CHECK_CUDNN(cudnnConvolutionBackwardFilter(h, &one, xd, dx_in, yd, ddy, cd, bwd_filter, ws,
                                               ws_filter, &zero, wd, dout_dw));
    check_within("conv forward IMPLICIT_GEMM 4x8x32x32 * 16x8x3x3 pad 1", "max scaled err",
                 scaled_err(to_host(dout_y, dy.size(), st), y, ym), 1e-5);
    check_within("conv backward data ALGO_1", "max scaled err",
                 scaled_err(to_host(dout_dx, x.size(), st), dx, dxm), 3e-5);
    check_within("conv backward filter ALGO_1", "max scaled err",
                 scaled_err(to_host(dout_dw, w.size(), st), dw, dwm), 1e-4);

    FREE_DEVICE(dx_in, dw_in, ddy, dout_y, dout_dx, dout_dw, ws);
    CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(cd));
    CHECK_CUDNN(cudnnDestroyFilterDescriptor(wd));
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(xd));
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(yd));
    CHECK_CUDNN(cudnnDestroy(h));
    CHECK_CUDA(cudaStreamDestroy(st));
    return pass();
}
