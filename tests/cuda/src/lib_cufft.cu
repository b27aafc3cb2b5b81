// cuFFT: C2C 1D forward + inverse (cufftPlan1d, batch 4), 2D C2C in place
// (cufftPlan2d), R2C + C2R 1D with explicit batch layouts (cufftPlanMany); every
// plan on a non-blocking stream (cufftSetStream). Checked against a double DFT.
#include <complex>
#include "cufft_check.cuh"
#include "lib_ref.h"

typedef std::complex<double> cd;

// fp32 FFTs err by about log2(n) * 2^-24 relative to the L2 norm (~1e-6 here).
static const double tol = 1e-5;

// out[k*stride] = sum_j in[j*stride] exp(sign 2 pi i jk/n), in double.
static void dft(const cd *in, cd *out, int n, int stride, int sign)
{
    std::vector<cd> w(n);
    for (int m = 0; m < n; m++)
        w[m] = std::polar(1.0, sign * 2.0 * M_PI * m / n);
    for (int k = 0; k < n; k++) {
        cd sum = 0.0;
        for (int j = 0; j < n; j++)
            sum += in[(size_t)j * stride] * w[(size_t)j * k % n];
        out[(size_t)k * stride] = sum;
    }
}

// ||got / scale - ref||_2 / ||ref||_2
static double rel_l2(const std::vector<cufftComplex> &got, const std::vector<cd> &ref, double scale)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < ref.size(); i++) {
        num += std::norm(cd(got[i].x, got[i].y) / scale - ref[i]);
        den += std::norm(ref[i]);
    }
    return std::sqrt(num / den);
}

static std::vector<cufftComplex> random_complex(size_t n, std::vector<cd> *as_double,
                                                unsigned int seed)
{
    auto f = random_floats(2 * n, seed);
    std::vector<cufftComplex> v(n);
    as_double->resize(n);
    for (size_t i = 0; i < n; i++) {
        v[i].x = f[2 * i];
        v[i].y = f[2 * i + 1];
        (*as_double)[i] = cd(f[2 * i], f[2 * i + 1]);
    }
    return v;
}

static void report(const char *what, double err)
{
    check_within(what, "rel L2 err", err, tol);
}

// A C2C plan p (destroyed here) run on stream s: forward from in to out,
// checked against ref, then back in place, checked against x scaled by
// scale; the report lines are "NAME forward" and "NAME inverse/SCALE_IS".
static void c2c_there_and_back(cufftHandle p, cudaStream_t s, cufftComplex *in, cufftComplex *out, size_t len,
                               const std::vector<cd> &ref, const std::vector<cd> &x, double scale,
                               const char *name, const char *scale_is)
{
    char what[80];

    CHECK_CUFFT(cufftSetStream(p, s));
    CHECK_CUFFT(cufftExecC2C(p, in, out, CUFFT_FORWARD));
    std::snprintf(what, sizeof what, "%s forward", name);
    report(what, rel_l2(to_host(out, len, s), ref, 1.0));
    CHECK_CUFFT(cufftExecC2C(p, out, out, CUFFT_INVERSE)); // in place
    std::snprintf(what, sizeof what, "%s inverse/%s", name, scale_is);
    report(what, rel_l2(to_host(out, len, s), x, scale));
    CHECK_CUFFT(cufftDestroy(p));
}

static void c2c_1d(cudaStream_t s, int n, int batch)
{
    std::vector<cd> x, ref((size_t)n * batch);
    auto h = random_complex((size_t)n * batch, &x, 1u);
    for (int b = 0; b < batch; b++)
        dft(&x[(size_t)b * n], &ref[(size_t)b * n], n, 1, -1);
    cufftComplex *din = to_device(h, s), *dout;
    CHECK_CUDA(cudaMalloc(&dout, h.size() * sizeof(cufftComplex)));
    cufftHandle p;
    CHECK_CUFFT(cufftPlan1d(&p, n, CUFFT_C2C, batch));
    char name[48];
    std::snprintf(name, sizeof name, "c2c 1d n=%d batch=%d", n, batch);
    c2c_there_and_back(p, s, din, dout, h.size(), ref, x, n, name, "n");
    FREE_DEVICE(din, dout);
}

// Row-major nx x ny (ny contiguous), transformed in place.
static void c2c_2d(cudaStream_t s, int nx, int ny)
{
    std::vector<cd> x, tmp((size_t)nx * ny), ref((size_t)nx * ny);
    auto h = random_complex((size_t)nx * ny, &x, 2u);
    for (int i = 0; i < nx; i++) // rows, then columns
        dft(&x[(size_t)i * ny], &tmp[(size_t)i * ny], ny, 1, -1);
    for (int j = 0; j < ny; j++)
        dft(&tmp[j], &ref[j], nx, ny, -1);
    cufftComplex *d = to_device(h, s);
    cufftHandle p;
    CHECK_CUFFT(cufftPlan2d(&p, nx, ny, CUFFT_C2C));
    char name[48];
    std::snprintf(name, sizeof name, "c2c 2d %dx%d", nx, ny);
    c2c_there_and_back(p, s, d, d, h.size(), ref, x, (double)nx * ny, name, "(nx*ny)");
    CHECK_CUDA(cudaFree(d));
}

// Batches of n reals -> n/2+1 complex and back, layouts given to cufftPlanMany.
static void r2c_c2r(cudaStream_t s, int n, int batch)
{
    int nc = n / 2 + 1;
    auto x = random_floats((size_t)n * batch, 3u);
    std::vector<cd> xd(x.begin(), x.end()), full(n), ref((size_t)nc * batch);
    for (int b = 0; b < batch; b++) {
        dft(&xd[(size_t)b * n], full.data(), n, 1, -1);
        std::copy(full.begin(), full.begin() + nc, ref.begin() + (size_t)b * nc);
    }
    float *dr = to_device(x, s);
    cufftComplex *dc;
    CHECK_CUDA(cudaMalloc(&dc, (size_t)nc * batch * sizeof(cufftComplex)));
    cufftHandle fwd, inv;
    CHECK_CUFFT(cufftPlanMany(&fwd, 1, &n, &n, 1, n, &nc, 1, nc, CUFFT_R2C, batch));
    CHECK_CUFFT(cufftPlanMany(&inv, 1, &n, &nc, 1, nc, &n, 1, n, CUFFT_C2R, batch));
    CHECK_CUFFT(cufftSetStream(fwd, s));
    CHECK_CUFFT(cufftSetStream(inv, s));
    CHECK_CUFFT(cufftExecR2C(fwd, dr, dc));
    char what[80];
    std::snprintf(what, sizeof what, "r2c 1d n=%d batch=%d", n, batch);
    report(what, rel_l2(to_host(dc, ref.size(), s), ref, 1.0));
    CHECK_CUDA(cudaMemsetAsync(dr, 0, x.size() * sizeof(float), s));
    CHECK_CUFFT(cufftExecC2R(inv, dc, dr)); // overwrites dc, as C2R may
    auto back = to_host(dr, x.size(), s);
    std::vector<cufftComplex> got(x.size());
    for (size_t i = 0; i < x.size(); i++)
        got[i] = {back[i], 0.0f};
    std::snprintf(what, sizeof what, "c2r 1d n=%d batch=%d (of r2c)/n", n, batch);
    report(what, rel_l2(got, xd, n));
    CHECK_CUFFT(cufftDestroy(fwd));
    CHECK_CUFFT(cufftDestroy(inv));
    FREE_DEVICE(dr, dc);
}

int main(void)
{
    cudaStream_t s = nonblocking_stream();
    c2c_1d(s, 1000, 4);
    c2c_2d(s, 64, 48);
    r2c_c2r(s, 4096, 2);
    CHECK_CUDA(cudaStreamDestroy(s));
    return pass();
}
