// SPDX-License-Identifier: MIT
/*
 * Occupancy through the driver API, one behaviour per mode (drv_occupancy MODE):
 *   potential   cuOccupancyMaxPotentialBlockSize(WithFlags): the block size
 *               keeps the most threads resident of every size tried (warp
 *               multiples up to the limit, and the limit), the largest of
 *               equals; the grid fills every multiprocessor with it; with a
 *               fixed dynamic shared memory, one per block size (the
 *               program's function), and a block size limit
 *   smem        cuOccupancyAvailableDynamicSMemPerBlock: the back end's
 *               answer (the sim's model multiprocessor), blocks that cannot
 *               be resident together refused
 *   banks       cuCtxGetSharedMemConfig reads four bytes; cuCtxSetSharedMemConfig
 *               and cuFuncSetSharedMemConfig take every setting and change nothing
 *   refused     missing outputs, a negative limit, bad counts and settings
 */
#define CUDA_ENABLE_DEPRECATED /* the bank-size calls: deprecated, still called */
#include <string.h>

#include "drv_check.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			  ".visible .entry mearas_sim_add_u32(.param .u64 p, .param .u32 n, .param .u32 v)\n"
			  "{\n\tret;\n}\n";

static CUfunction load(void)
{
	CUmodule mod;
	CUfunction fn;

	CHECK(cuModuleLoadData(&mod, ptx));
	CHECK(cuModuleGetFunction(&fn, mod, "mearas_sim_add_u32"));
	return fn;
}

static size_t smem_200_per_thread(int block_size)
{
	return (size_t)block_size * 200;
}

static int threads_at(CUfunction fn, int size, CUoccupancyB2DSize smem_of, size_t smem, int *blocks)
{
	CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, fn, size, smem_of ? smem_of(size) : smem));
	return size * *blocks;
}

/* the answer of cuOccupancyMaxPotentialBlockSize(WithFlags) checked against
 * the occupancy of every size it may pick */
static void check_potential(CUfunction fn, CUoccupancyB2DSize smem_of, size_t smem, int limit_arg)
{
	int grid, size, grid2, size2, blocks, sms, warp, limit = limit_arg;

	CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &size, fn, smem_of, smem, limit_arg));
	CHECK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid2, &size2, fn, smem_of, smem, limit_arg,
							 CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
	REQUIRE(grid == grid2 && size == size2, "with flags: %d x %d, without: %d x %d", grid2, size2, grid, size);
	CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
	if (!limit)
		CHECK(cuDeviceGetAttribute(&limit, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0));
	REQUIRE(size > 0 && size <= limit, "block size %d, limit %d", size, limit);
	int best = threads_at(fn, size, smem_of, smem, &blocks);
	REQUIRE(grid == blocks * sms, "grid %d, want %d blocks x %d multiprocessors", grid, blocks, sms);
	for (int s = limit; s > 0; s = (s - 1) / warp * warp) {
		int b, t = threads_at(fn, s, smem_of, smem, &b);
		REQUIRE(t < best || (t == best && s <= size), "block size %d keeps %d threads resident, the answer %d keeps %d",
			s, t, size, best);
	}
}

static void potential(void)
{
	CUfunction fn = load();

	check_potential(fn, NULL, 0, 0);
	check_potential(fn, NULL, 40000, 0);
	check_potential(fn, smem_200_per_thread, 0, 0);
	check_potential(fn, smem_200_per_thread, 0, 100);
	/* the sim's model: 1152 threads at most stay resident (576 x 2 blocks of
	 * 115200 bytes, 384 x 3, 288 x 4 ...): the largest of those */
	int grid, size;
	CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &size, fn, smem_200_per_thread, 0, 0));
	REQUIRE(size == 576, "block size %d, the model's is 576", size);
}

static void smem(void)
{
	CUfunction fn = load();
	size_t v;

	CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&v, fn, 1, 128));
	REQUIRE(v == 49152, "1 block: %zu", v);
	CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&v, fn, 8, 128));
	REQUIRE(v == 233472 / 8, "8 blocks: %zu", v);
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyAvailableDynamicSMemPerBlock(&v, fn, 32, 128));
}

static void banks(void)
{
	CUfunction fn = load();
	CUsharedconfig c;

	for (int s = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE; s <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE; s++) {
		CHECK(cuCtxSetSharedMemConfig((CUsharedconfig)s));
		CHECK(cuFuncSetSharedMemConfig(fn, (CUsharedconfig)s));
		CHECK(cuCtxGetSharedMemConfig(&c));
		REQUIRE(c == CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE, "bank size %d after setting %d", (int)c, s);
	}
}

static void refused(void)
{
	CUfunction fn = load();
	int grid, size;
	size_t v;

	EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxPotentialBlockSize(NULL, &size, fn, NULL, 0, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxPotentialBlockSize(&grid, NULL, fn, NULL, 0, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxPotentialBlockSize(&grid, &size, fn, NULL, 0, -1));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyAvailableDynamicSMemPerBlock(NULL, fn, 1, 32));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyAvailableDynamicSMemPerBlock(&v, fn, 0, 32));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyAvailableDynamicSMemPerBlock(&v, fn, 1, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxSetSharedMemConfig((CUsharedconfig)3));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncSetSharedMemConfig(fn, (CUsharedconfig)3));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxGetSharedMemConfig(NULL));
}

int main(int argc, char **argv)
{
	static const struct drv_mode modes[] = {
		{ "potential", potential }, { "smem", smem }, { "banks", banks }, { "refused", refused },
	};

	return drv_run_mode_in_primary(argc, argv, modes, DRV_NMODES(modes));
}
