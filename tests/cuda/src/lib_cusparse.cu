// cuSPARSE generic API on a random-pattern CSR matrix (5000 x 5000, 10
// distinct columns per row): SpMV y = alpha A x + beta y and with A^T, and SpMM
// with a column-major dense matrix of 8 columns; buffers sized by the
// *_bufferSize calls, all on a stream.
#include <algorithm>
#include <cusparse.h>
#include "lib_ref.h"

#define CHECK_CUSPARSE(call) CHECK_STATUS(call, CUSPARSE_STATUS_SUCCESS, cusparseGetErrorName)

struct Csr {
    int rows, cols;
    std::vector<int> ptr, col;
    std::vector<float> val;
};

static Csr random_csr(int rows, int cols, int per_row)
{
    Csr a{rows, cols, {0}, {}, {}};
    unsigned int seed = 4242u;
    auto vals = random_floats((size_t)rows * per_row, 777u);
    for (int i = 0; i < rows; i++) {
        std::vector<int> c;
        while ((int)c.size() < per_row) {
            int j = (int)(lcg_next(&seed) % (unsigned int)cols);
            if (std::find(c.begin(), c.end(), j) == c.end())
                c.push_back(j);
        }
        std::sort(c.begin(), c.end());
        a.col.insert(a.col.end(), c.begin(), c.end());
        a.ptr.push_back((int)a.col.size());
    }
    a.val.assign(vals.begin(), vals.end());
    return a;
}

// y = alpha op(A) x + beta y0 for column k of x (ld_x) and y (ld_y); returns the
// largest |got - ref| / (|alpha| sum |a x| + |beta y0|). Each output sums 10 (or
// about 10) products, so fp32 rounding stays below ~12 * 2^-24 of that scale.
static double spmv_err(const Csr &a, bool trans, float alpha, const float *x, float beta,
                       const float *y0, const float *got)
{
    int n = trans ? a.cols : a.rows;
    std::vector<double> ref(n, 0.0), mag(n, 0.0);
    for (int i = 0; i < a.rows; i++)
        for (int p = a.ptr[i]; p < a.ptr[i + 1]; p++) {
            int out = trans ? a.col[p] : i, in = trans ? i : a.col[p];
            ref[out] += (double)a.val[p] * x[in];
            mag[out] += std::fabs((double)a.val[p] * x[in]);
        }
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double r = alpha * ref[i] + (double)beta * y0[i];
        double scale = std::fabs(alpha) * mag[i] + std::fabs((double)beta * y0[i]) + 1e-30;
        worst = std::fmax(worst, std::fabs(got[i] - r) / scale);
    }
    return worst;
}

static const double tol = 1e-5;

int main(void)
{
    cudaStream_t s = nonblocking_stream();
    cusparseHandle_t h;
    CHECK_CUSPARSE(cusparseCreate(&h));
    CHECK_CUSPARSE(cusparseSetStream(h, s));
    const int n = 5000, per_row = 10, ncols = 8;
    Csr a = random_csr(n, n, per_row);
    int *dptr = to_device(a.ptr, s), *dcol = to_device(a.col, s);
    float *dval = to_device(a.val, s);
    cusparseSpMatDescr_t ma;
    CHECK_CUSPARSE(cusparseCreateCsr(&ma, n, n, (int64_t)a.val.size(), dptr, dcol, dval,
                                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                     CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    auto x = random_floats(n, 1u), y0 = random_floats(n, 2u);
    float *dx = to_device(x, s), *dy = to_device(y0, s);
    cusparseDnVecDescr_t vx, vy;
    CHECK_CUSPARSE(cusparseCreateDnVec(&vx, n, dx, CUDA_R_32F));
    CHECK_CUSPARSE(cusparseCreateDnVec(&vy, n, dy, CUDA_R_32F));
    float alpha = 1.25f, beta = -0.75f;
    for (int t = 0; t < 2; t++) {
        cusparseOperation_t op =
            t ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
        CHECK_CUDA(cudaMemcpyAsync(dy, y0.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
        size_t size = 0;
        void *buf;
        CHECK_CUSPARSE(cusparseSpMV_bufferSize(h, op, &alpha, ma, vx, &beta, vy, CUDA_R_32F,
                                               CUSPARSE_SPMV_ALG_DEFAULT, &size));
        CHECK_CUDA(cudaMalloc(&buf, size ? size : 1));
        CHECK_CUSPARSE(cusparseSpMV(h, op, &alpha, ma, vx, &beta, vy, CUDA_R_32F,
                                    CUSPARSE_SPMV_ALG_DEFAULT, buf));
        auto y = to_host(dy, n, s);
        char what[96];
        std::snprintf(what, sizeof what, "spmv %s csr %dx%d nnz=%zu alpha=%g beta=%g",
                      t ? "A^T" : "A", n, n, a.val.size(), alpha, beta);
        check_within(what, "max scaled err",
                     spmv_err(a, t, alpha, x.data(), beta, y0.data(), y.data()), tol);
        CHECK_CUDA(cudaFree(buf));
    }

    // SpMM: C = alpha A B + beta C0, B n x 8 and C n x 8, column-major.
    auto b = random_floats((size_t)n * ncols, 3u), c0 = random_floats((size_t)n * ncols, 4u);
    float *db = to_device(b, s), *dc = to_device(c0, s);
    cusparseDnMatDescr_t mb, mc;
    CHECK_CUSPARSE(cusparseCreateDnMat(&mb, n, ncols, n, db, CUDA_R_32F, CUSPARSE_ORDER_COL));
    CHECK_CUSPARSE(cusparseCreateDnMat(&mc, n, ncols, n, dc, CUDA_R_32F, CUSPARSE_ORDER_COL));
    cusparseOperation_t nt = CUSPARSE_OPERATION_NON_TRANSPOSE;
    size_t size = 0;
    void *buf;
    CHECK_CUSPARSE(cusparseSpMM_bufferSize(h, nt, nt, &alpha, ma, mb, &beta, mc, CUDA_R_32F,
                                           CUSPARSE_SPMM_ALG_DEFAULT, &size));
    CHECK_CUDA(cudaMalloc(&buf, size ? size : 1));
    CHECK_CUSPARSE(cusparseSpMM(h, nt, nt, &alpha, ma, mb, &beta, mc, CUDA_R_32F,
                                CUSPARSE_SPMM_ALG_DEFAULT, buf));
    auto c = to_host(dc, c0.size(), s);
    double worst = 0.0;
    for (int k = 0; k < ncols; k++)
        worst = std::fmax(worst, spmv_err(a, false, alpha, &b[(size_t)k * n], beta,
                                          &c0[(size_t)k * n], &c[(size_t)k * n]));
    char what[96];
    std::snprintf(what, sizeof what, "spmm csr %dx%d x dense %dx%d alpha=%g beta=%g", n, n, n,
                  ncols, alpha, beta);
    check_within(what, "max scaled err", worst, tol);

    CHECK_CUDA(cudaFree(buf));
    CHECK_CUSPARSE(cusparseDestroyDnMat(mb));
    CHECK_CUSPARSE(cusparseDestroyDnMat(mc));
    CHECK_CUSPARSE(cusparseDestroyDnVec(vx));
    CHECK_CUSPARSE(cusparseDestroyDnVec(vy));
    CHECK_CUSPARSE(cusparseDestroySpMat(ma));
    CHECK_CUSPARSE(cusparseDestroy(h));
    FREE_DEVICE(dptr, dcol, dval, dx, dy, db, dc);
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
