// CP (Parboil-style Coulombic potential): electrostatic potential on a 2D
// lattice slice from a set of point charges. Atoms pass through constant
// memory in chunks; each chunk is one host-to-symbol copy plus one kernel
// launch, so an iteration is a burst of small dependent calls.
#include <algorithm>
#include <cmath>
#include <vector>
#include "app_common.cuh"

#define ATOM_CHUNK 4000 // 4000 float4 = 64000 bytes of constant memory
#define BLOCK_X 16
#define BLOCK_Y 16
#define POINTS_PER_THREAD 4
#define SPACING 0.1f

__constant__ float4 c_atoms[ATOM_CHUNK];

// Each thread covers POINTS_PER_THREAD lattice points spaced one block
// width apart along x, so neighbouring threads stay on neighbouring points.
__global__ void coulomb_chunk(float *lattice, int n, int count)
{
    int y = blockIdx.y * BLOCK_Y + threadIdx.y;
    int x0 = blockIdx.x * BLOCK_X * POINTS_PER_THREAD + threadIdx.x;
    if (y >= n)
        return;
    float py = y * SPACING;
    float energy[POINTS_PER_THREAD];
#pragma unroll
    for (int p = 0; p < POINTS_PER_THREAD; p++)
        energy[p] = 0.0f;
    for (int a = 0; a < count; a++) {
        float4 atom = c_atoms[a]; // x, y, z (distance to the slice), charge
        float dy = py - atom.y;
        float dyz2 = dy * dy + atom.z * atom.z;
#pragma unroll
        for (int p = 0; p < POINTS_PER_THREAD; p++) {
            float dx = (x0 + p * BLOCK_X) * SPACING - atom.x;
            energy[p] += atom.w * rsqrtf(dx * dx + dyz2);
        }
    }
#pragma unroll
    for (int p = 0; p < POINTS_PER_THREAD; p++) {
        int x = x0 + p * BLOCK_X;
        if (x < n)
            lattice[(size_t)y * n + x] += energy[p];
    }
}

int main(int argc, char **argv)
{
    const app_option_spec spec = {"cp", "lattice edge N (N x N points)", 512, 10, false, 16384};
    app_options o = app_parse(argc, argv, spec);
    const int n = (int)o.size;
    const int num_atoms = 40000;
    const float extent = n * SPACING;
    std::vector<float4> atoms(num_atoms);
    app_lcg rng{23u};
    auto uniform = [&rng](float lo, float hi) { return rng.uniform(lo, hi); };
    for (auto &a : atoms)
        a = make_float4(uniform(0.0f, extent), uniform(0.0f, extent), uniform(0.5f, 5.0f),
                        uniform(-1.0f, 1.0f));
    float4 *pinned_atoms;
    APP_CHECK(cudaMallocHost(&pinned_atoms, num_atoms * sizeof(float4)));
    std::copy(atoms.begin(), atoms.end(), pinned_atoms);
    std::vector<float> lattice((size_t)n * n);
    float *d_lattice;
    APP_CHECK(cudaMalloc(&d_lattice, lattice.size() * sizeof(float)));

    dim3 block(BLOCK_X, BLOCK_Y);
    dim3 grid((n + BLOCK_X * POINTS_PER_THREAD - 1) / (BLOCK_X * POINTS_PER_THREAD),
              (n + BLOCK_Y - 1) / BLOCK_Y);
    auto iteration = [&]() {
        APP_CHECK(cudaMemset(d_lattice, 0, lattice.size() * sizeof(float)));
        for (int first = 0; first < num_atoms; first += ATOM_CHUNK) {
            int count = std::min(ATOM_CHUNK, num_atoms - first);
            APP_CHECK(cudaMemcpyToSymbol(c_atoms, pinned_atoms + first, count * sizeof(float4)));
            coulomb_chunk<<<grid, block>>>(d_lattice, n, count);
            APP_CHECK(cudaGetLastError());
        }
        APP_CHECK(cudaMemcpy(lattice.data(), d_lattice, lattice.size() * sizeof(float),
                             cudaMemcpyDeviceToHost));
    };
    double seconds = 0.0;
    long long iterations = app_timed_sync_loop(o, &seconds, iteration);

    int check = -1;
    if (!o.skip_check) {
        check = 1;
        app_lcg pick{5u};
        for (int s = 0; s < 256 && check; s++) {
            int x = (int)((pick.next() >> 8) % (unsigned int)n);
            int y = (int)((pick.next() >> 8) % (unsigned int)n);
            app_ref_sum ref;
            for (const float4 &a : atoms) {
                double dx = x * (double)SPACING - a.x, dy = y * (double)SPACING - a.y;
                ref.add(a.w / std::sqrt(dx * dx + dy * dy + (double)a.z * a.z));
            }
            double got = lattice[(size_t)y * n + x];
            if (!ref.near(got, 1e-5, 1e-5)) {
                std::fprintf(stderr, "cp: point (%d,%d): gpu %.7g cpu %.7g\n", x, y, got, ref.sum);
                check = 0;
            }
        }
    }
    char extra[96];
    std::snprintf(extra, sizeof(extra), "lattice=%dx%d atoms=%d chunks=%d", n, n, num_atoms,
                  (num_atoms + ATOM_CHUNK - 1) / ATOM_CHUNK);
    app_report("cp", o, (double)n * n * num_atoms * (double)iterations, iterations, seconds,
               "interactions/s", check, extra);
    APP_CHECK(cudaFreeHost(pinned_atoms));
    APP_CHECK(cudaFree(d_lattice));
    return check == 0 ? 1 : 0;
}
