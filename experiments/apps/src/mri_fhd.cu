// MRI-FHD (Parboil-style): F^H d for non-Cartesian MRI reconstruction.
// One iteration copies the inputs in, computes rho*phi per k-space sample,
// then streams the samples through constant memory in chunks (one symbol
// copy + one kernel launch per chunk) and copies the result out: many small
// dependent calls, so it is latency-sensitive when remoted.
#include <algorithm>
#include <cmath>
#include <vector>
#include "app_common.cuh"

#define NUM_K 3072
#define CHUNK 1024
#define BLOCK 256

struct k_sample {
    float kx, ky, kz, rho_re, rho_im;
};

__constant__ k_sample c_samples[CHUNK];

__global__ void compute_rho_phi(const float *kx, const float *ky, const float *kz,
                                const float *phi_re, const float *phi_im, const float *d_re,
                                const float *d_im, k_sample *out, int num_k)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < num_k) {
        k_sample s;
        s.kx = kx[k];
        s.ky = ky[k];
        s.kz = kz[k];
        s.rho_re = phi_re[k] * d_re[k] + phi_im[k] * d_im[k];
        s.rho_im = phi_re[k] * d_im[k] - phi_im[k] * d_re[k];
        out[k] = s;
    }
}

__global__ void accumulate_fhd(const float *x, const float *y, const float *z, float *fhd_re,
                               float *fhd_im, int num_x, int count)
{
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= num_x)
        return;
    float px = x[v], py = y[v], pz = z[v];
    float re = fhd_re[v], im = fhd_im[v];
    for (int k = 0; k < count; k++) {
        const k_sample s = c_samples[k];
        float s_val, c_val;
        // exp(i * 2*pi * (k . r)); sincospif keeps the large arguments accurate.
        sincospif(2.0f * (s.kx * px + s.ky * py + s.kz * pz), &s_val, &c_val);
        re += s.rho_re * c_val - s.rho_im * s_val;
        im += s.rho_im * c_val + s.rho_re * s_val;
    }
    fhd_re[v] = re;
    fhd_im[v] = im;
}

int main(int argc, char **argv)
{
    const app_option_spec spec = {"mri_fhd", "number of voxels", 262144, 10, false, 1 << 26};
    app_options o = app_parse(argc, argv, spec);
    const int num_x = (int)o.size;
    app_lcg rng{17u};
    auto uniform = [&rng](float lo, float hi) { return rng.uniform(lo, hi); };
    // k-space inputs: kx, ky, kz, phi_re, phi_im, d_re, d_im (NUM_K each).
    std::vector<float> kin(7 * NUM_K);
    for (int i = 0; i < 3 * NUM_K; i++)
        kin[i] = uniform(-32.0f, 32.0f);
    for (int i = 3 * NUM_K; i < 7 * NUM_K; i++)
        kin[i] = uniform(-1.0f, 1.0f);
    std::vector<float> xin(3 * (size_t)num_x);
    for (auto &v : xin)
        v = uniform(-0.5f, 0.5f);
    std::vector<float> out(2 * (size_t)num_x);

    float *d_kin, *d_xin, *d_out;
    k_sample *d_samples;
    APP_CHECK(cudaMalloc(&d_kin, kin.size() * sizeof(float)));
    APP_CHECK(cudaMalloc(&d_xin, xin.size() * sizeof(float)));
    APP_CHECK(cudaMalloc(&d_out, out.size() * sizeof(float)));
    APP_CHECK(cudaMalloc(&d_samples, NUM_K * sizeof(k_sample)));

    auto iteration = [&]() {
        APP_CHECK(cudaMemcpy(d_kin, kin.data(), kin.size() * sizeof(float), cudaMemcpyHostToDevice));
        APP_CHECK(cudaMemcpy(d_xin, xin.data(), xin.size() * sizeof(float), cudaMemcpyHostToDevice));
        APP_CHECK(cudaMemset(d_out, 0, out.size() * sizeof(float)));
        compute_rho_phi<<<(NUM_K + BLOCK - 1) / BLOCK, BLOCK>>>(
            d_kin, d_kin + NUM_K, d_kin + 2 * NUM_K, d_kin + 3 * NUM_K, d_kin + 4 * NUM_K,
            d_kin + 5 * NUM_K, d_kin + 6 * NUM_K, d_samples, NUM_K);
        APP_CHECK(cudaGetLastError());
        for (int first = 0; first < NUM_K; first += CHUNK) {
            int count = std::min(CHUNK, NUM_K - first);
            APP_CHECK(cudaMemcpyToSymbol(c_samples, d_samples + first, count * sizeof(k_sample), 0,
                                         cudaMemcpyDeviceToDevice));
            accumulate_fhd<<<(num_x + BLOCK - 1) / BLOCK, BLOCK>>>(
                d_xin, d_xin + num_x, d_xin + 2 * (size_t)num_x, d_out, d_out + num_x, num_x, count);
            APP_CHECK(cudaGetLastError());
        }
        APP_CHECK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    };
    double seconds = 0.0;
    long long iterations = app_timed_sync_loop(o, &seconds, iteration);

    int check = -1;
    if (!o.skip_check) {
        check = 1;
        const float *kx = &kin[0], *ky = &kin[NUM_K], *kz = &kin[2 * NUM_K];
        const float *pr = &kin[3 * NUM_K], *pi = &kin[4 * NUM_K];
        const float *dr = &kin[5 * NUM_K], *di = &kin[6 * NUM_K];
        int samples = std::min(num_x, 256);
        for (int s = 0; s < samples && check; s++) {
            int v = (int)((long long)num_x * s / samples);
            double px = xin[v], py = xin[num_x + v], pz = xin[2 * (size_t)num_x + v];
            double re = 0.0, im = 0.0, magnitude = 0.0;
            for (int k = 0; k < NUM_K; k++) {
                double rr = (double)pr[k] * dr[k] + (double)pi[k] * di[k];
                double ri = (double)pr[k] * di[k] - (double)pi[k] * dr[k];
                double arg = 2.0 * M_PI * (kx[k] * px + ky[k] * py + kz[k] * pz);
                re += rr * std::cos(arg) - ri * std::sin(arg);
                im += ri * std::cos(arg) + rr * std::sin(arg);
                magnitude += std::fabs(rr) + std::fabs(ri);
            }
            double tol = 2e-5 * magnitude + 1e-4;
            if (!(std::fabs(out[v] - re) <= tol && std::fabs(out[num_x + v] - im) <= tol)) {
                std::fprintf(stderr, "mri_fhd: voxel %d: gpu (%.6g, %.6g) cpu (%.6g, %.6g)\n", v,
                             (double)out[v], (double)out[num_x + v], re, im);
                check = 0;
            }
        }
    }
    char extra[96];
    std::snprintf(extra, sizeof(extra), "voxels=%d samples=%d chunks=%d", num_x, NUM_K,
                  (NUM_K + CHUNK - 1) / CHUNK);
    app_report("mri_fhd", o, (double)num_x * (double)iterations, iterations, seconds, "voxels/s",
               check, extra);
    APP_FREE(d_kin, d_xin, d_out, d_samples);
    return check == 0 ? 1 : 0;
}
