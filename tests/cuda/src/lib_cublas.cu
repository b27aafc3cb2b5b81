// cuBLAS: SGEMM at odd sizes with alpha/beta and transposes, cublasGemmEx with
// bf16 inputs and fp32 output on tensor cores, cublasSgemmStridedBatched with
// alpha/beta in device memory (CUBLAS_POINTER_MODE_DEVICE); all on a stream.
#include <cublas_v2.h>
#include "lib_ref.h"

#define CHECK_CUBLAS(call) CHECK_STATUS(call, CUBLAS_STATUS_SUCCESS, cublasGetStatusName)

// The handle's stream: a non-blocking one, so every copy is ordered on it too.
static cudaStream_t stream;

// fp32 SGEMM: the error bound is about k * 2^-24 of the scale (k=65: 4e-6).
static void sgemm_case(cublasHandle_t h, bool ta, bool tb, int m, int n, int k, float alpha,
                       float beta)
{
    int lda = ta ? k : m, ldb = tb ? n : k, ldc = m;
    auto a = random_floats((size_t)lda * (ta ? m : k), 11u + m);
    auto b = random_floats((size_t)ldb * (tb ? k : n), 22u + n);
    auto c0 = random_floats((size_t)ldc * n, 33u + k);
    float *da = to_device(a, stream), *db = to_device(b, stream), *dc = to_device(c0, stream);
    CHECK_CUBLAS(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m,
                             n, k, &alpha, da, lda, db, ldb, &beta, dc, ldc));
    auto c = to_host(dc, c0.size(), stream);
    char what[96];
    std::snprintf(what, sizeof what, "sgemm %c%c %dx%dx%d alpha=%g beta=%g", ta ? 'T' : 'N',
                  tb ? 'T' : 'N', m, n, k, alpha, beta);
    check_within(what, "max scaled err",
                 gemm_err(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c0.data(),
                          c.data(), ldc),
                 1e-5);
    FREE_DEVICE(da, db, dc);
}

// bf16 x bf16 -> fp32 on tensor cores, C = A^T B. The reference uses the same
// bf16-rounded inputs, whose products are exact in fp32; only the fp32
// accumulation rounds (tensor cores may truncate rather than round), about
// k * 2^-23 of the scale (k=256: 3e-5), so 1e-4.
static void gemmex_bf16_case(cublasHandle_t h, int m, int n, int k)
{
    auto af = random_floats((size_t)k * m, 44u), bf = random_floats((size_t)k * n, 55u);
    std::vector<uint16_t> a(af.size()), b(bf.size());
    for (size_t i = 0; i < af.size(); i++)
        a[i] = to_bf16(af[i], &af[i]);
    for (size_t i = 0; i < bf.size(); i++)
        b[i] = to_bf16(bf[i], &bf[i]);
    std::vector<float> c0((size_t)m * n, 0.0f);
    uint16_t *da = to_device(a, stream), *db = to_device(b, stream);
    float *dc = to_device(c0, stream);
    float alpha = 1.0f, beta = 0.0f;
    CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, da, CUDA_R_16BF, k, db,
                              CUDA_R_16BF, k, &beta, dc, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT_TENSOR_OP));
    auto c = to_host(dc, c0.size(), stream);
    char what[96];
    std::snprintf(what, sizeof what, "gemmex bf16->fp32 TN %dx%dx%d", m, n, k);
    check_within(what, "max scaled err",
                 gemm_err(true, false, m, n, k, 1.0, af.data(), k, bf.data(), k, 0.0, c0.data(),
                          c.data(), m),
                 1e-4);
    FREE_DEVICE(da, db, dc);
}

// 8 independent NT products; alpha and beta read from device memory.
static void batched_case(cublasHandle_t h, int m, int n, int k, int batch)
{
    long long sa = (long long)m * k, sb = (long long)n * k, sc = (long long)m * n;
    auto a = random_floats(sa * batch, 66u), b = random_floats(sb * batch, 77u);
    auto c0 = random_floats(sc * batch, 88u);
    float *da = to_device(a, stream), *db = to_device(b, stream), *dc = to_device(c0, stream);
    std::vector<float> ab = {2.0f, -1.0f}; // alpha, beta
    float *dab = to_device(ab, stream);
    CHECK_CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_CUBLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, dab, da, m, sa, db,
                                           n, sb, dab + 1, dc, m, sc, batch));
    CHECK_CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    auto c = to_host(dc, c0.size(), stream);
    double worst = 0.0;
    for (int i = 0; i < batch; i++)
        worst = std::fmax(worst, gemm_err(false, true, m, n, k, 2.0, &a[sa * i], m, &b[sb * i], n,
                                          -1.0, &c0[sc * i], &c[sc * i], m));
    char what[96];
    std::snprintf(what, sizeof what, "sgemm strided batched x%d NT %dx%dx%d (device alpha/beta)",
                  batch, m, n, k);
    check_within(what, "max scaled err", worst, 1e-5);
    FREE_DEVICE(da, db, dc, dab);
}

int main(void)
{
    stream = nonblocking_stream();
    cublasHandle_t h;
    CHECK_CUBLAS(cublasCreate(&h));
    CHECK_CUBLAS(cublasSetStream(h, stream));
    sgemm_case(h, false, false, 257, 129, 65, 1.5f, -0.5f);
    sgemm_case(h, true, true, 257, 129, 65, 0.75f, 0.25f);
    sgemm_case(h, true, false, 1, 300, 17, 1.0f, 0.0f);
    gemmex_bf16_case(h, 200, 136, 256);
    batched_case(h, 33, 47, 29, 8);
    CHECK_CUBLAS(cublasDestroy(h));
    CHECK_CUDA(cudaStreamDestroy(stream));
    return pass();
}
