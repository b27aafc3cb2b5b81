// SPDX-License-Identifier: MIT
/*
 * Function attributes and occupancy asked many times, as frameworks do
 * before launches: the answers stay the same, and mearas's library asks the
 * back end once per function (attributes) and once per block size and
 * dynamic shared memory until an attribute or the cache preference is set
 * (occupancy).
 * run-tests.sh's func_queries scenario counts the back end's records (its
 * "synchronizing records ... by op" line).
 */
#include <string.h>

#include "drv_check.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			  ".visible .entry mearas_sim_add_u32(.param .u64 p, .param .u32 n, .param .u32 v)\n"
			  "{\n\tret;\n}\n";

#define ASKS 100

/* occupancy at 256 threads asked ASKS times: the back end sees one ask at most */
static void ask_occupancy(CUfunction fn)
{
	int v;

	for (int i = 0; i < ASKS; i++)
		CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&v, fn, 256, 0));
}

int main(void)
{
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	int regs0, threads0, blocks0, blocks_big0, v;

	CUdevice dev = drv_primary_current(&ctx);
	CHECK(cuModuleLoadData(&mod, ptx));
	CHECK(cuModuleGetFunction(&fn, mod, "mearas_sim_add_u32"));
	CHECK(cuFuncGetAttribute(&regs0, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
	CHECK(cuFuncGetAttribute(&threads0, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn));
	CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks0, fn, 256, 0));
	CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_big0, fn, 1024, 0));
	for (int i = 0; i < ASKS; i++) {
		CHECK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
		REQUIRE(v == regs0, "registers: %d, then %d", regs0, v);
		CHECK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn));
		REQUIRE(v == threads0, "threads per block: %d, then %d", threads0, v);
		CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&v, fn, 256, 0));
		REQUIRE(v == blocks0, "occupancy at 256 threads: %d, then %d", blocks0, v);
		CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&v, fn, 1024, 0));
		REQUIRE(v == blocks_big0, "occupancy at 1024 threads: %d, then %d", blocks_big0, v);
	}
	/* an attribute set: occupancy is asked again (once) */
	CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024));
	ask_occupancy(fn);
	/* so does a cache preference */
	CHECK(cuFuncSetCacheConfig(fn, CU_FUNC_CACHE_PREFER_SHARED));
	ask_occupancy(fn);
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxActiveBlocksPerMultiprocessor(&v, fn, 0, 0));
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	printf("PASS\n");
	return 0;
}
