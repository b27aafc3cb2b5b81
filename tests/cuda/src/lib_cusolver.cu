// cuSOLVER dense: LU solve (cusolverDnSgetrf + getrs, 200 x 200, 3 right-hand
// sides) checked by its backward error, and QR least squares (cusolverDnSgeqrf,
// ormqr applying Q^T, cublasStrsm with R; 300 x 200, 2 right-hand sides)
// checked against a double-precision solution. All on one stream.
#include <cublas_v2.h>
#include <cusolverDn.h>
#include "lib_ref.h"

static const char *cusolver_name(cusolverStatus_t st)
{
    switch (st) {
        STATUS_CASE(CUSOLVER_STATUS_SUCCESS);
        STATUS_CASE(CUSOLVER_STATUS_NOT_INITIALIZED);
        STATUS_CASE(CUSOLVER_STATUS_ALLOC_FAILED);
        STATUS_CASE(CUSOLVER_STATUS_INVALID_VALUE);
        STATUS_CASE(CUSOLVER_STATUS_ARCH_MISMATCH);
        STATUS_CASE(CUSOLVER_STATUS_MAPPING_ERROR);
        STATUS_CASE(CUSOLVER_STATUS_EXECUTION_FAILED);
        STATUS_CASE(CUSOLVER_STATUS_INTERNAL_ERROR);
        STATUS_CASE(CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED);
        STATUS_CASE(CUSOLVER_STATUS_NOT_SUPPORTED);
        STATUS_CASE(CUSOLVER_STATUS_ZERO_PIVOT);
        STATUS_CASE(CUSOLVER_STATUS_INVALID_LICENSE);
        STATUS_CASE(CUSOLVER_STATUS_INVALID_WORKSPACE);
    default:
        break;
    }
    return "unknown cusolverStatus_t";
}

#define CHECK_CUSOLVER(call) CHECK_STATUS(call, CUSOLVER_STATUS_SUCCESS, cusolver_name)
#define CHECK_CUBLAS(call) CHECK_STATUS(call, CUBLAS_STATUS_SUCCESS, cublasGetStatusName)

static void check_info(const int *dinfo, cudaStream_t s, const char *call)
{
    int info = to_host(dinfo, 1, s)[0];
    REQUIRE(info == 0, "%s: info = %d", call, info);
}

// LU with partial pivoting in fp32: normwise backward error
// max_j ||A x_j - b_j||_inf / (||A||_inf ||x_j||_inf + ||b_j||_inf) is at most
// about n * 2^-24 (1.2e-5 for n = 200), typically far less.
static void lu_solve(cusolverDnHandle_t h, cudaStream_t s, int n, int nrhs)
{
    auto a = random_floats((size_t)n * n, 5u), b = random_floats((size_t)n * nrhs, 6u);
    float *da = to_device(a, s), *db = to_device(b, s), *work;
    int *dipiv, *dinfo, lwork = 0;
    CHECK_CUDA(cudaMalloc(&dipiv, n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&dinfo, sizeof(int)));
    CHECK_CUSOLVER(cusolverDnSgetrf_bufferSize(h, n, n, da, n, &lwork));
    CHECK_CUDA(cudaMalloc(&work, (lwork > 0 ? lwork : 1) * sizeof(float)));
    CHECK_CUSOLVER(cusolverDnSgetrf(h, n, n, da, n, work, dipiv, dinfo));
    check_info(dinfo, s, "cusolverDnSgetrf");
    CHECK_CUSOLVER(cusolverDnSgetrs(h, CUBLAS_OP_N, n, nrhs, da, n, dipiv, db, n, dinfo));
    check_info(dinfo, s, "cusolverDnSgetrs");
    auto x = to_host(db, b.size(), s);
    double norm_a = 0.0, worst = 0.0;
    for (int i = 0; i < n; i++) {
        double row = 0.0;
        for (int j = 0; j < n; j++)
            row += std::fabs(a[i + (size_t)j * n]);
        norm_a = std::fmax(norm_a, row);
    }
    for (int r = 0; r < nrhs; r++) {
        const float *xr = &x[(size_t)r * n], *br = &b[(size_t)r * n];
        double res = 0.0, nx = 0.0, nb = 0.0;
        for (int i = 0; i < n; i++) {
            double ax = 0.0;
            for (int j = 0; j < n; j++)
                ax += (double)a[i + (size_t)j * n] * xr[j];
            res = std::fmax(res, std::fabs(ax - br[i]));
            nx = std::fmax(nx, std::fabs(xr[i]));
            nb = std::fmax(nb, std::fabs(br[i]));
        }
        worst = std::fmax(worst, res / (norm_a * nx + nb));
    }
    char what[80];
    std::snprintf(what, sizeof what, "getrf+getrs %dx%d nrhs=%d", n, n, nrhs);
    check_within(what, "backward err", worst, 5e-5);
    FREE_DEVICE(da, db, work, dipiv, dinfo);
}

// Solves the normal equations A^T A x = A^T b in double by Cholesky.
static std::vector<double> ls_reference(const std::vector<float> &a, const std::vector<float> &b,
                                        int m, int n, int nrhs)
{
    std::vector<double> g((size_t)n * n), rhs((size_t)n * nrhs);
    for (int i = 0; i < n; i++) // G = A^T A, rhs = A^T b
        for (int j = 0; j < n; j++)
            for (int k = 0; k < m; k++)
                g[i + (size_t)j * n] += (double)a[k + (size_t)i * m] * a[k + (size_t)j * m];
    for (int r = 0; r < nrhs; r++)
        for (int i = 0; i < n; i++)
            for (int k = 0; k < m; k++)
                rhs[i + (size_t)r * n] += (double)a[k + (size_t)i * m] * b[k + (size_t)r * m];
    for (int j = 0; j < n; j++) { // G = L L^T, L in the lower triangle
        for (int k = 0; k < j; k++)
            g[j + (size_t)j * n] -= g[j + (size_t)k * n] * g[j + (size_t)k * n];
        g[j + (size_t)j * n] = std::sqrt(g[j + (size_t)j * n]);
        for (int i = j + 1; i < n; i++) {
            for (int k = 0; k < j; k++)
                g[i + (size_t)j * n] -= g[i + (size_t)k * n] * g[j + (size_t)k * n];
            g[i + (size_t)j * n] /= g[j + (size_t)j * n];
        }
    }
    for (int r = 0; r < nrhs; r++) { // L y = rhs, L^T x = y
        double *v = &rhs[(size_t)r * n];
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < i; k++)
                v[i] -= g[i + (size_t)k * n] * v[k];
            v[i] /= g[i + (size_t)i * n];
        }
        for (int i = n - 1; i >= 0; i--) {
            for (int k = i + 1; k < n; k++)
                v[i] -= g[k + (size_t)i * n] * v[k];
            v[i] /= g[i + (size_t)i * n];
        }
    }
    return rhs;
}

// Least squares min ||A x - b||, A m x n (m > n) with b = A x0 + noise: the
// reference solves the normal equations in double by Cholesky (a random
// uniform 300 x 200 A has a condition number near 10, so this is accurate);
// fp32 QR gives a relative error near cond * sqrt(n) * 2^-24 (1e-5), so 1e-4.
static void qr_least_squares(cusolverDnHandle_t h, cublasHandle_t bh, cudaStream_t s, int m, int n,
                             int nrhs)
{
    auto a = random_floats((size_t)m * n, 7u), x0 = random_floats((size_t)n * nrhs, 8u);
    auto b = random_floats((size_t)m * nrhs, 9u);
    for (int r = 0; r < nrhs; r++)
        for (int i = 0; i < m; i++) {
            double ax = 0.0;
            for (int j = 0; j < n; j++)
                ax += (double)a[i + (size_t)j * m] * x0[j + (size_t)r * n];
            b[i + (size_t)r * m] = (float)(ax + 0.01 * b[i + (size_t)r * m]);
        }
    auto rhs = ls_reference(a, b, m, n, nrhs);

    float *da = to_device(a, s), *db = to_device(b, s), *tau, *work;
    int *dinfo, lw_geqrf = 0, lw_ormqr = 0;
    CHECK_CUDA(cudaMalloc(&tau, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dinfo, sizeof(int)));
    CHECK_CUSOLVER(cusolverDnSgeqrf_bufferSize(h, m, n, da, m, &lw_geqrf));
    CHECK_CUSOLVER(cusolverDnSormqr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, m, nrhs, n, da, m,
                                               tau, db, m, &lw_ormqr));
    int lwork = std::max(1, std::max(lw_geqrf, lw_ormqr));
    CHECK_CUDA(cudaMalloc(&work, lwork * sizeof(float)));
    CHECK_CUSOLVER(cusolverDnSgeqrf(h, m, n, da, m, tau, work, lwork, dinfo));
    check_info(dinfo, s, "cusolverDnSgeqrf");
    CHECK_CUSOLVER(cusolverDnSormqr(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, m, nrhs, n, da, m, tau, db, m,
                                    work, lwork, dinfo));
    check_info(dinfo, s, "cusolverDnSormqr");
    const float one = 1.0f; // x = R^-1 (Q^T b)(1:n)
    CHECK_CUBLAS(cublasStrsm(bh, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                             CUBLAS_DIAG_NON_UNIT, n, nrhs, &one, da, m, db, m));
    auto x = to_host(db, b.size(), s);
    double worst = 0.0;
    for (int r = 0; r < nrhs; r++) {
        double diff = 0.0, norm = 0.0;
        for (int i = 0; i < n; i++) {
            diff = std::fmax(diff, std::fabs(x[i + (size_t)r * m] - rhs[i + (size_t)r * n]));
            norm = std::fmax(norm, std::fabs(rhs[i + (size_t)r * n]));
        }
        worst = std::fmax(worst, diff / norm);
    }
    char what[80];
    std::snprintf(what, sizeof what, "geqrf+ormqr+trsm least squares %dx%d nrhs=%d", m, n, nrhs);
    check_within(what, "rel err vs double", worst, 1e-4);
    FREE_DEVICE(da, db, tau, work, dinfo);
}

int main(void)
{
    cudaStream_t s = nonblocking_stream();
    cusolverDnHandle_t h;
    CHECK_CUSOLVER(cusolverDnCreate(&h));
    CHECK_CUSOLVER(cusolverDnSetStream(h, s));
    cublasHandle_t bh;
    CHECK_CUBLAS(cublasCreate(&bh));
    CHECK_CUBLAS(cublasSetStream(bh, s));
    lu_solve(h, s, 200, 3);
    qr_least_squares(h, bh, s, 300, 200, 2);
    CHECK_CUBLAS(cublasDestroy(bh));
    CHECK_CUSOLVER(cusolverDnDestroy(h));
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
