// Subject (f): a cuBLAS SGEMM and a cuBLASLt matmul, both checked against
// a CPU product.
#include <cmath>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>

#include "check.h"
#include "operands.h"

static void cpu_gemm(int n, const std::vector<float> &a, const std::vector<float> &b,
                     std::vector<float> &c) {
    // column-major C = A * B
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += static_cast<double>(a[k * n + i]) * b[j * n + k];
            c[j * n + i] = static_cast<float>(s);
        }
}

static void compare(const char *what, const std::vector<float> &got,
                    const std::vector<float> &want) {
    for (size_t i = 0; i < got.size(); i++)
        EXPECT(std::fabs(got[i] - want[i]) <= 1e-3f * (1.0f + std::fabs(want[i])),
               "%s[%zu] = %g, want %g", what, i, got[i], want[i]);
}

int main() {
    const int n = 64;
    const size_t bytes = n * n * sizeof(float);
    std::vector<float> a(n * n), b(n * n), want(n * n), got(n * n);
    for (int i = 0; i < n * n; i++) {
        a[i] = static_cast<float>((i * 7) % 13) / 13.0f;
        b[i] = static_cast<float>((i * 5) % 11) / 11.0f;
    }
    cpu_gemm(n, a, b, want);

    float *da, *db, *dc;
    upload_operands(a, b, &da, &db, &dc);

    cublasHandle_t h;
    CK(cublasCreate(&h));
    const float one = 1.0f, zero = 0.0f;
    CK(cudaMemset(dc, 0, bytes));
    CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da, n, db, n, &zero, dc, n));
    CK(cudaMemcpy(got.data(), dc, bytes, cudaMemcpyDeviceToHost));
    compare("sgemm", got, want);
    CK(cublasDestroy(h));

    cublasLtHandle_t lt;
    CK(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t op;
    CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t la, lb, lc;
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, n, n, n));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, n, n, n));
    CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, n, n));
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws_size = 4 << 20;
    void *ws;
    CK(cudaMalloc(&ws, ws_size));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &ws_size, sizeof ws_size));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found));
    EXPECT(found > 0, "no cublasLt algorithm");
    CK(cudaMemset(dc, 0, bytes));
    CK(cublasLtMatmul(lt, op, &one, da, la, db, lb, &zero, dc, lc, dc, lc, &heur.algo, ws,
                      ws_size, nullptr));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(got.data(), dc, bytes, cudaMemcpyDeviceToHost));
    compare("lt", got, want);
    CK(cublasLtMatmulPreferenceDestroy(pref));
    CK(cublasLtMatrixLayoutDestroy(la));
    CK(cublasLtMatrixLayoutDestroy(lb));
    CK(cublasLtMatrixLayoutDestroy(lc));
    CK(cublasLtMatmulDescDestroy(op));
    CK(cublasLtDestroy(lt));
    CK(cudaFree(ws));
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    std::printf("PASS cublas\n");
    return 0;
}
