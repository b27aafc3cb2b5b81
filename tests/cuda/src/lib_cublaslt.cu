// cuBLASLt: cublasLtMatmul in fp32 and with bf16 inputs (fp32 output), the
// algorithm picked by cublasLtMatmulAlgoGetHeuristic under a 32 MiB workspace
// limit, run on a stream with that workspace; D written apart from C.
#include <cublasLt.h>
#include "lib_ref.h"

#define CHECK_LT(call) CHECK_STATUS(call, CUBLAS_STATUS_SUCCESS, cublasLtGetStatusName)

static const size_t workspace_size = 32u << 20;

// D = alpha op(A) op(B) + beta C, column-major; A and B of type ab_type.
static void matmul(cublasLtHandle_t lt, cudaStream_t s, void *workspace, cudaDataType_t ab_type,
                   bool ta, int m, int n, int k, float alpha, const void *a, const void *b,
                   float beta, const float *c, float *d)
{
    cublasLtMatmulDesc_t op;
    CHECK_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t trans_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    CHECK_LT(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
    cublasLtMatrixLayout_t la, lb, lc, ld;
    CHECK_LT(cublasLtMatrixLayoutCreate(&la, ab_type, ta ? k : m, ta ? m : k, ta ? k : m));
    CHECK_LT(cublasLtMatrixLayoutCreate(&lb, ab_type, k, n, k));
    CHECK_LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
    CHECK_LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, m));
    cublasLtMatmulPreference_t pref;
    CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t limit = workspace_size;
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &limit, sizeof limit));
    cublasLtMatmulHeuristicResult_t heur[4];
    int found = 0;
    CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ld, pref, 4, heur, &found));
    REQUIRE(found > 0, "cublasLtMatmulAlgoGetHeuristic found no algorithm");
    REQUIRE(heur[0].state == CUBLAS_STATUS_SUCCESS && heur[0].workspaceSize <= workspace_size,
            "heuristic result: state %d, workspace %zu", (int)heur[0].state, heur[0].workspaceSize);
    CHECK_LT(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, c, lc, d, ld, &heur[0].algo,
                            workspace, workspace_size, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_LT(cublasLtMatmulPreferenceDestroy(pref));
    CHECK_LT(cublasLtMatrixLayoutDestroy(la));
    CHECK_LT(cublasLtMatrixLayoutDestroy(lb));
    CHECK_LT(cublasLtMatrixLayoutDestroy(lc));
    CHECK_LT(cublasLtMatrixLayoutDestroy(ld));
    CHECK_LT(cublasLtMatmulDescDestroy(op));
}

// The error is measured against sum |a||b| + |beta c| (see gemm_err); tol is
// chosen per case in main.
static void run_case(cublasLtHandle_t lt, cudaStream_t s, void *ws, bool bf16, bool ta, int m,
                     int n, int k, float alpha, float beta, double tol)
{
    auto a = random_floats((size_t)m * k, 101u + m), b = random_floats((size_t)k * n, 202u + n);
    auto c = random_floats((size_t)m * n, 303u + k);
    std::vector<uint16_t> a16(a.size()), b16(b.size());
    if (bf16) { // the reference then uses the rounded values
        for (size_t i = 0; i < a.size(); i++)
            a16[i] = to_bf16(a[i], &a[i]);
        for (size_t i = 0; i < b.size(); i++)
            b16[i] = to_bf16(b[i], &b[i]);
    }
    void *da = bf16 ? (void *)to_device(a16, s) : (void *)to_device(a, s);
    void *db = bf16 ? (void *)to_device(b16, s) : (void *)to_device(b, s);
    float *dc = to_device(c, s), *dd;
    CHECK_CUDA(cudaMalloc(&dd, c.size() * sizeof(float)));
    matmul(lt, s, ws, bf16 ? CUDA_R_16BF : CUDA_R_32F, ta, m, n, k, alpha, da, db, beta, dc, dd);
    auto d = to_host(dd, c.size(), s);
    auto c_after = to_host(dc, c.size(), s);
    REQUIRE(c_after == c, "cublasLtMatmul changed C (D is a separate matrix)");
    char what[96];
    std::snprintf(what, sizeof what, "cublasLtMatmul %s %cN %dx%dx%d alpha=%g beta=%g",
                  bf16 ? "bf16->fp32" : "fp32", ta ? 'T' : 'N', m, n, k, alpha, beta);
    check_within(what, "max scaled err",
                 gemm_err(ta, false, m, n, k, alpha, a.data(), ta ? k : m, b.data(), k, beta,
                          c.data(), d.data(), m),
                 tol);
    FREE_DEVICE(da, db, dc, dd);
}

int main(void)
{
    cudaStream_t s = nonblocking_stream();
    void *ws;
    CHECK_CUDA(cudaMalloc(&ws, workspace_size));
    cublasLtHandle_t lt;
    CHECK_LT(cublasLtCreate(&lt));
    // fp32 (CUBLAS_COMPUTE_32F, no TF32): error about k * 2^-24 (k=65: 4e-6,
    // k=777: 5e-5). bf16: the products of bf16 values are exact in fp32 and only
    // the fp32 accumulation rounds (tensor cores may truncate): about
    // k * 2^-23 (k=256: 3e-5, k=1024: 1.2e-4).
    run_case(lt, s, ws, false, false, 257, 129, 65, 1.5f, -0.5f, 1e-5);
    run_case(lt, s, ws, false, true, 300, 200, 777, 1.0f, 1.0f, 1e-4);
    run_case(lt, s, ws, true, true, 192, 136, 256, 1.0f, 0.0f, 1e-4);
    run_case(lt, s, ws, true, true, 64, 40, 1024, 0.5f, 2.0f, 5e-4);
    CHECK_LT(cublasLtDestroy(lt));
    CHECK_CUDA(cudaFree(ws));
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
