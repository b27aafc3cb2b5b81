// Tensor memory access (Hopper's TMA unit): a 2D tiled tensor map of a
// device buffer made by cuTensorMapEncodeTiled (driver API, -lcuda), passed
// to a kernel as a __grid_constant__ parameter; each block has the TMA unit
// copy its 32 x 16 tile into shared memory (libcu++'s
// cp_async_bulk_tensor_2d_global_to_shared, completion on a cuda::barrier)
// and sums it. The tensor is 250 x 100 uint32 in rows of 256 (the 6 padding
// words hold a marker): tiles over the right edge must come back with zeros
// there, not the marker. Then cuTensorMapReplaceAddress points the map at a
// second buffer and the kernel runs again. Checksums are exact and compared
// with the host's. Devices before compute capability 9.0 print the same
// skip line natively and through mearas.
#include <cuda.h>
#include <cuda/barrier>
#include <utility>
#include <vector>
#include "check.cuh"
#include "cu_check.cuh"

#define COLS 250        // globalDim[0]
#define ROWS 100        // globalDim[1]
#define PITCH 256       // elements per row in memory
#define BOX_X 32
#define BOX_Y 16
#define GRID_X ((COLS + BOX_X - 1) / BOX_X)
#define GRID_Y ((ROWS + BOX_Y - 1) / BOX_Y)
#define THREADS 128
#define MARKER 0xdeadbeefu

using block_barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

// sums[block]: the sum of its tile's elements, each weighted by its place
// in the tile (1 + row * BOX_X + column), in 64 bits
__global__ void tile_sums(const __grid_constant__ CUtensorMap map, unsigned long long *sums)
{
    __shared__ alignas(128) unsigned tile[BOX_Y][BOX_X];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ block_barrier bar;
    __shared__ unsigned long long total;

    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
        total = 0;
        cde::fence_proxy_async_shared_cta();
    }
    __syncthreads();
    block_barrier::arrival_token token;
    if (threadIdx.x == 0) {
        cde::cp_async_bulk_tensor_2d_global_to_shared(&tile, &map, blockIdx.x * BOX_X, blockIdx.y * BOX_Y, bar);
        token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
    } else {
        token = bar.arrive();
    }
    bar.wait(std::move(token));
    unsigned long long mine = 0;
    for (unsigned i = threadIdx.x; i < BOX_X * BOX_Y; i += blockDim.x)
        mine += (unsigned long long)tile[i / BOX_X][i % BOX_X] * (i + 1);
    atomicAdd(&total, mine);
    __syncthreads();
    if (threadIdx.x == 0)
        sums[blockIdx.y * gridDim.x + blockIdx.x] = total;
}

static void fill(std::vector<unsigned> &h, unsigned seed)
{
    unsigned state = seed;
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < PITCH; c++)
            h[r * PITCH + c] = c < COLS ? lcg_next(&state) % 1000003u : MARKER;
}

// the host's tile sums (elements past the tensor's edge read as zero)
static std::vector<unsigned long long> expected(const std::vector<unsigned> &h)
{
    std::vector<unsigned long long> s(GRID_X * GRID_Y, 0);
    for (int by = 0; by < GRID_Y; by++)
        for (int bx = 0; bx < GRID_X; bx++)
            for (int i = 0; i < BOX_X * BOX_Y; i++) {
                int r = by * BOX_Y + i / BOX_X, c = bx * BOX_X + i % BOX_X;
                if (r < ROWS && c < COLS)
                    s[by * GRID_X + bx] += (unsigned long long)h[r * PITCH + c] * (unsigned)(i + 1);
            }
    return s;
}

static unsigned long long run(const CUtensorMap &map, unsigned long long *dsums, const std::vector<unsigned> &h,
                              const char *what)
{
    std::vector<unsigned long long> got(GRID_X * GRID_Y), want = expected(h);
    tile_sums<<<dim3(GRID_X, GRID_Y), THREADS>>>(map, dsums);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(got.data(), dsums, got.size() * sizeof(got[0]), cudaMemcpyDeviceToHost));
    unsigned long long check = 0;
    for (size_t i = 0; i < got.size(); i++) {
        REQUIRE(got[i] == want[i], "%s: tile %zu sum %llu, expected %llu", what, i, got[i], want[i]);
        check = check * 1000003ull + got[i];
    }
    return check;
}

int main()
{
    int dev = 0, major = 0;
    CHECK_CUDA(cudaSetDevice(dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    std::printf("tensor memory access (compute capability 9.0+): %s\n", major >= 9 ? "yes" : "no");
    if (major < 9)
        return pass();

    size_t bytes = (size_t)ROWS * PITCH * sizeof(unsigned);
    std::vector<unsigned> ha(ROWS * PITCH), hb(ROWS * PITCH);
    fill(ha, 11);
    fill(hb, 29);
    unsigned *da, *db;
    unsigned long long *dsums;
    CHECK_CUDA(cudaMalloc(&da, bytes));
    CHECK_CUDA(cudaMalloc(&db, bytes));
    CHECK_CUDA(cudaMalloc(&dsums, GRID_X * GRID_Y * sizeof(unsigned long long)));
    CHECK_CUDA(cudaMemcpy(da, ha.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(db, hb.data(), bytes, cudaMemcpyHostToDevice));

    alignas(64) CUtensorMap map;
    const cuuint64_t dims[2] = {COLS, ROWS}, strides[1] = {PITCH * sizeof(unsigned)};
    const cuuint32_t box[2] = {BOX_X, BOX_Y}, estrides[2] = {1, 1};
    CHECK_CU(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, da, dims, strides, box, estrides,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    std::printf("encoded a %dx%d uint32 map, %dx%d boxes\n", COLS, ROWS, BOX_X, BOX_Y);
    std::printf("tiles %dx%d, checksum A %llu\n", GRID_X, GRID_Y, run(map, dsums, ha, "buffer A"));

    CHECK_CU(cuTensorMapReplaceAddress(&map, db));
    std::printf("address replaced, checksum B %llu\n", run(map, dsums, hb, "buffer B"));

    FREE_DEVICE(da, db, dsums);
    return pass();
}
