// Tensor maps through the driver API (C, -lcuda): cuTensorMapEncodeTiled,
// cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2colWide and
// cuTensorMapReplaceAddress against mearasd --device=sim. The sim has no TMA
// unit: it encodes the arguments in a format of its own (struct
// mearas_sim_tmap, include/mearas/tensormap.h), so the bytes that come back
// show what reached the device. One behaviour per mode:
//   encode         tiled (ranks 1, 2, 5) and im2col maps: every argument
//                  reaches the device, the map comes back into the caller's
//                  CUtensorMap (a 64-byte aligned one too), nothing around it
//                  written
//   no_context     with no current context the vGPU whose memory holds the
//                  tensor encodes it (MEARAS_VGPUS=2: vGPU 1's memory)
//   replace        cuTensorMapReplaceAddress re-encodes with the new address,
//                  keeps every other argument; a map this process did not
//                  encode is refused; a refused address leaves the map as it was
//   refuse_pointers  NULL and misaligned maps, NULL arrays, ranks out of range
//                  (CUDA_ERROR_INVALID_VALUE before anything is sent)
//   refuse_enums   data type, interleave, swizzle, L2 promotion, fill and
//                  wide mode past their enums (mearasd's checks)
//   refuse_memory  a tensor not inside this process's device memory: a freed
//                  buffer, a host pointer, an address in no allocation, a
//                  tensor running past its allocation's end, strides whose
//                  span passes 2^64 (mearasd's checks)
//   refuse_rules   cuda.h's rules as the sim checks them: alignments, stride
//                  multiples, box sizes, element strides, interleave and
//                  swizzle combinations, the fill of integer types, im2col
//                  corners, channels and pixels
//   wide           cuTensorMapEncodeIm2colWide reaches the device, which (a
//                  compute capability 9.0 model) says CUDA_ERROR_NOT_SUPPORTED
//   remote         encode and replace, for a run against a remote vGPU (tests/remote)
// Prints PASS last when every check held.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/tensormap.h"

#include "drv_check.h"

#define INVALID CUDA_ERROR_INVALID_VALUE
#define F32 CU_TENSOR_MAP_DATA_TYPE_FLOAT32
#define NONE_ARGS CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, \
	CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE

#define BUF (1u << 20)

static CUcontext ctx;
static CUdeviceptr buf, buf2;

/* a 2D float tensor: 64 x 32 elements, rows 256 bytes apart, 32 x 8 boxes */
static const cuuint64_t dims2[2] = { 64, 32 }, strides2[1] = { 256 };
static const cuuint32_t box2[2] = { 32, 8 }, es2[2] = { 1, 1 };
static const cuuint32_t ones[5] = { 1, 1, 1, 1, 1 };

static void setup(void)
{
	CUdevice d;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&d, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAlloc(&buf, BUF));
	CHECK(cuMemAlloc(&buf2, BUF));
}

static struct mearas_sim_tmap sim_of(const CUtensorMap *m)
{
	struct mearas_sim_tmap s;

	memcpy(&s, m, sizeof(s));
	REQUIRE(s.magic == MEARAS_SIM_TMAP_MAGIC, "not the sim's encoding (magic %#x)", s.magic);
	return s;
}

static CUresult tiled2(CUtensorMap *m, CUdeviceptr addr)
{
	return cuTensorMapEncodeTiled(m, F32, 2, (void *)(uintptr_t)addr, dims2, strides2, box2, es2,
				      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
				      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
}

static void check_tiled2(const CUtensorMap *m, CUdeviceptr addr)
{
	struct mearas_sim_tmap s = sim_of(m);

	REQUIRE(s.kind == MEARAS_TMAP_TILED && s.dtype == F32 && s.rank == 2, "kind %u dtype %u rank %u", s.kind,
		s.dtype, s.rank);
	REQUIRE(s.addr == addr, "address %#llx, want %#llx", (unsigned long long)s.addr, (unsigned long long)addr);
	REQUIRE(s.dims[0] == 64 && s.dims[1] == 32 && s.dims[2] == 0, "dims");
	REQUIRE(s.strides[0] == 256 && s.strides[1] == 0, "strides");
	REQUIRE(s.box[0] == 31 && s.box[1] == 7 && s.estrides[0] == 1 && s.estrides[1] == 1, "box / element strides");
	REQUIRE(s.interleave == 0 && s.swizzle == CU_TENSOR_MAP_SWIZZLE_128B &&
		s.l2promo == CU_TENSOR_MAP_L2_PROMOTION_L2_128B && s.oobfill == 1, "enums");
}

static void mode_encode(void)
{
	/* a map in a struct at a 64- (not 128-) byte boundary, guarded */
	struct {
		unsigned char before[64];
		unsigned char map[128];
		unsigned char after[64];
	} __attribute__((aligned(128))) g;
	CUtensorMap m;
	struct mearas_sim_tmap s;
	cuuint64_t dims5[5] = { 16, 3, 4, 5, 6 }, strides5[4] = { 64, 192, 768, 3840 };
	cuuint32_t box5[5] = { 16, 1, 2, 3, 4 }, es5[5] = { 1, 1, 2, 3, 4 };
	cuuint64_t dims1[1] = { 1000 };
	cuuint32_t box1[1] = { 4 };
	/* im2col over NHWC: C 64 half, W 10, H 9, N 2 */
	cuuint64_t dimsi[4] = { 64, 10, 9, 2 }, stridesi[3] = { 128, 1280, 11520 };
	int lo[2] = { -1, -2 }, hi[2] = { 3, -4 };

	CHECK(tiled2(&m, buf + 4096));
	check_tiled2(&m, buf + 4096);

	memset(&g, 0xa5, sizeof(g));
	CHECK(tiled2((CUtensorMap *)(void *)g.map, buf));
	check_tiled2((const CUtensorMap *)(const void *)g.map, buf);
	for (int i = 0; i < 64; i++)
		REQUIRE(g.before[i] == 0xa5 && g.after[i] == 0xa5, "bytes beside the map written");

	CHECK(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 5, (void *)(uintptr_t)buf, dims5, strides5, box5,
				     es5, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
				     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	s = sim_of(&m);
	REQUIRE(s.rank == 5 && s.dtype == CU_TENSOR_MAP_DATA_TYPE_UINT8 && s.l2promo == 3, "rank 5 header");
	for (int i = 0; i < 5; i++)
		REQUIRE(s.dims[i] == dims5[i] && s.box[i] == box5[i] - 1 && s.estrides[i] == es5[i], "rank 5, dim %d", i);
	for (int i = 0; i < 4; i++)
		REQUIRE(s.strides[i] == strides5[i], "rank 5, stride %d", i);

	/* rank 1: no strides at all */
	CHECK(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_INT32, 1, (void *)(uintptr_t)buf, dims1, NULL, box1,
				     ones, NONE_ARGS));
	s = sim_of(&m);
	REQUIRE(s.rank == 1 && s.dims[0] == 1000 && s.box[0] == 3 && s.dtype == CU_TENSOR_MAP_DATA_TYPE_INT32, "rank 1");

	CHECK(cuTensorMapEncodeIm2col(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, (void *)(uintptr_t)(buf2 + 256), dimsi,
				      stridesi, lo, hi, 32, 100, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
				      CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
				      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	s = sim_of(&m);
	REQUIRE(s.kind == MEARAS_TMAP_IM2COL && s.rank == 4 && s.addr == buf2 + 256 && s.swizzle == 2, "im2col header");
	REQUIRE(s.channels == 32 && s.pixels == 100, "channels %u pixels %u", s.channels, s.pixels);
	REQUIRE(s.lower[0] == -1 && s.lower[1] == -2 && s.upper[0] == 3 && s.upper[1] == -4 && s.lower[2] == 0,
		"corners");
	for (int i = 0; i < 4; i++)
		REQUIRE(s.dims[i] == dimsi[i] && s.box[i] == 0, "im2col dim %d", i);
}

static void mode_no_context(void)
{
	CUdevice d1;
	CUcontext c1, popped;
	CUdeviceptr b1;
	CUtensorMap m;

	CHECK(cuDeviceGet(&d1, 1));
	CHECK(cuDevicePrimaryCtxRetain(&c1, d1));
	CHECK(cuCtxSetCurrent(c1));
	CHECK(cuMemAlloc(&b1, BUF));
	CHECK(cuCtxPopCurrent(&popped));
	CHECK(cuCtxGetCurrent(&popped));
	REQUIRE(popped == NULL, "a context is still current");
	CHECK(tiled2(&m, b1));
	check_tiled2(&m, b1);
	/* an address of no vGPU and no context: nobody to ask */
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, tiled2(&m, 0x1000));
}

static void mode_replace(void)
{
	CUtensorMap m, copy, never;

	CHECK(tiled2(&m, buf));
	CHECK(cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)(buf2 + 512)));
	check_tiled2(&m, buf2 + 512);
	/* a copy of the new map is the same map */
	memcpy(&copy, &m, sizeof(m));
	CHECK(cuTensorMapReplaceAddress(&copy, (void *)(uintptr_t)(buf + 1024)));
	check_tiled2(&copy, buf + 1024);
	/* an address that is not this process's memory: refused, the map as it was */
	EXPECT(INVALID, cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)(buf2 + BUF)));
	check_tiled2(&m, buf2 + 512);
	/* a misaligned one: the sim's rule */
	EXPECT(INVALID, cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)(buf2 + 8)));
	check_tiled2(&m, buf2 + 512);
	/* bytes this process never got from an encode call */
	memset(&never, 0x11, sizeof(never));
	EXPECT(INVALID, cuTensorMapReplaceAddress(&never, (void *)(uintptr_t)buf));
	EXPECT(INVALID, cuTensorMapReplaceAddress(NULL, (void *)(uintptr_t)buf));
}

static void mode_refuse_pointers(void)
{
	CUtensorMap m;
	unsigned char raw[256] __attribute__((aligned(128)));
	void *a = (void *)(uintptr_t)buf;
	int corner[3] = { 0, 0, 0 };
	cuuint64_t dims6[6] = { 16, 1, 1, 1, 1, 1 }, strides6[5] = { 64, 64, 64, 64, 64 };
	cuuint32_t box6[6] = { 16, 1, 1, 1, 1, 1 }, es6[6] = { 1, 1, 1, 1, 1, 1 };

	EXPECT(INVALID, cuTensorMapEncodeTiled(NULL, F32, 2, a, dims2, strides2, box2, es2, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeTiled((CUtensorMap *)(void *)(raw + 32), F32, 2, a, dims2, strides2, box2, es2,
					       NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeTiled(&m, F32, 2, a, NULL, strides2, box2, es2, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeTiled(&m, F32, 2, a, dims2, NULL, box2, es2, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeTiled(&m, F32, 2, a, dims2, strides2, NULL, es2, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeTiled(&m, F32, 2, a, dims2, strides2, box2, NULL, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeTiled(&m, F32, 0, a, dims2, strides2, box2, es2, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeTiled(&m, F32, 6, a, dims6, strides6, box6, es6, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeIm2col(&m, F32, 2, a, dims2, strides2, corner, corner, 8, 8, es2, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeIm2col(&m, F32, 6, a, dims6, strides6, corner, corner, 8, 8, es6, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeIm2col(&m, F32, 3, a, dims6, strides6, NULL, corner, 8, 8, es6, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeIm2colWide(&m, F32, 2, a, dims2, strides2, 0, 0, 8, 8, es2,
						    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
						    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
						    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

static CUresult tiled2_enums(int dtype, int interleave, int swizzle, int l2, int oob)
{
	CUtensorMap m;

	return cuTensorMapEncodeTiled(&m, (CUtensorMapDataType)dtype, 2, (void *)(uintptr_t)buf, dims2, strides2, box2,
				      es2, (CUtensorMapInterleave)interleave, (CUtensorMapSwizzle)swizzle,
				      (CUtensorMapL2promotion)l2, (CUtensorMapFloatOOBfill)oob);
}

static void mode_refuse_enums(void)
{
	CUtensorMap m;
	cuuint64_t dims3[3] = { 16, 4, 4 }, strides3[2] = { 64, 256 };

	CHECK(tiled2_enums(F32, 0, 0, 0, 0));
	EXPECT(INVALID, tiled2_enums(16, 0, 0, 0, 0));
	EXPECT(INVALID, tiled2_enums(-1, 0, 0, 0, 0));
	EXPECT(INVALID, tiled2_enums(F32, 3, 0, 0, 0));
	EXPECT(INVALID, tiled2_enums(F32, 0, 7, 0, 0));
	EXPECT(INVALID, tiled2_enums(F32, 0, 0, 4, 0));
	EXPECT(INVALID, tiled2_enums(F32, 0, 0, 0, 2));
	EXPECT(INVALID, tiled2_enums(F32, 0, 0, 0, 0x10000));
	EXPECT(INVALID, cuTensorMapEncodeIm2colWide(&m, F32, 3, (void *)(uintptr_t)buf, dims3, strides3, 0, 1, 8, 8,
						    ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
						    (CUtensorMapIm2ColWideMode)2, CU_TENSOR_MAP_SWIZZLE_NONE,
						    CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

static void mode_refuse_memory(void)
{
	CUtensorMap m;
	CUdeviceptr freed;
	static float host[64 * 32] __attribute__((aligned(64)));
	cuuint64_t big[2] = { 64, (BUF / 256) + 1 }, huge[2] = { 64, 1ull << 32 };
	cuuint64_t hstrides[1] = { (1ull << 40) - 16 };

	CHECK(cuMemAlloc(&freed, 65536));
	CHECK(cuMemFree(freed));
	EXPECT(INVALID, tiled2(&m, freed));
	EXPECT(INVALID, tiled2(&m, (CUdeviceptr)(uintptr_t)host));
	EXPECT(INVALID, tiled2(&m, buf2 + BUF + (64u << 20)));
	/* the last rows past the allocation's end */
	EXPECT(INVALID, tiled2(&m, buf2 + BUF - 4096));
	EXPECT(INVALID, cuTensorMapEncodeTiled(&m, F32, 2, (void *)(uintptr_t)buf2, big, strides2, box2, es2, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeTiled(&m, F32, 2, (void *)(uintptr_t)buf2, huge, hstrides, box2, es2,
					       NONE_ARGS));
	/* the same tensor that fits ends exactly at the allocation's end */
	CHECK(tiled2(&m, buf2 + BUF - 32 * 256));
	check_tiled2(&m, buf2 + BUF - 32 * 256);
}

static CUresult tiled(int dtype, cuuint32_t rank, CUdeviceptr addr, const cuuint64_t *dims, const cuuint64_t *strides,
		      const cuuint32_t *box, const cuuint32_t *es, int interleave, int swizzle, int oob)
{
	CUtensorMap m;

	return cuTensorMapEncodeTiled(&m, (CUtensorMapDataType)dtype, rank, (void *)(uintptr_t)addr, dims, strides, box, es,
				      (CUtensorMapInterleave)interleave, (CUtensorMapSwizzle)swizzle,
				      CU_TENSOR_MAP_L2_PROMOTION_NONE, (CUtensorMapFloatOOBfill)oob);
}

static void mode_refuse_rules(void)
{
	CUtensorMap m;
	cuuint64_t s_odd[1] = { 264 }, s32[2] = { 32 * 4, 32 * 4 * 4 }, d3[3] = { 32, 4, 4 }, s3[2] = { 128, 512 };
	cuuint32_t b0[2] = { 0, 8 }, b257[2] = { 32, 257 }, b_odd[2] = { 3, 8 }, b16[2] = { 16, 8 };
	cuuint32_t es0[2] = { 1, 0 }, es9[2] = { 1, 9 }, b3[3] = { 32, 2, 2 };
	cuuint64_t dimsi[4] = { 64, 10, 9, 2 }, stridesi[3] = { 256, 2560, 23040 };
	int lo_ok[2] = { 0, 0 }, lo_bad[2] = { 128, 0 };
	CUdeviceptr a = buf;

	/* a baseline that passes, then one rule broken at a time */
	CHECK(tiled(F32, 2, a, dims2, strides2, box2, es2, 0, 0, 0));
	EXPECT(INVALID, tiled(F32, 2, a + 8, dims2, strides2, box2, es2, 0, 0, 0));        /* address % 16 */
	EXPECT(INVALID, tiled(F32, 3, a + 16, d3, s3, b3, ones, 2, 1, 0));                 /* interleave 32B: % 32 */
	EXPECT(INVALID, tiled(F32, 2, a, dims2, s_odd, box2, es2, 0, 0, 0));               /* stride % 16 */
	EXPECT(INVALID, tiled(F32, 2, a, dims2, strides2, b0, es2, 0, 0, 0));              /* box 0 */
	EXPECT(INVALID, tiled(F32, 2, a, dims2, strides2, b257, es2, 0, 0, 0));            /* box 257 */
	EXPECT(INVALID, tiled(F32, 2, a, dims2, strides2, b_odd, es2, 0, 0, 0));           /* inner box 12 bytes */
	EXPECT(INVALID, tiled(F32, 2, a, dims2, strides2, box2, es0, 0, 0, 0));            /* element stride 0 */
	EXPECT(INVALID, tiled(F32, 2, a, dims2, strides2, box2, es9, 0, 0, 0));            /* element stride 9 */
	EXPECT(INVALID, tiled(F32, 2, a, dims2, strides2, box2, es2, 1, 0, 0));            /* interleave at rank 2 */
	EXPECT(INVALID, tiled(F32, 3, a, d3, s3, b3, ones, 2, 0, 0));                      /* interleave 32B, no swizzle */
	CHECK(tiled(F32, 3, a, d3, s32, b3, ones, 2, 1, 0));                                /* ... with swizzle 32B */
	EXPECT(INVALID, tiled(F32, 2, a, dims2, strides2, box2, es2, 0, 1, 0));            /* 128-byte box, 32B swizzle */
	CHECK(tiled(F32, 2, a, dims2, strides2, b16, es2, 0, 2, 0));                        /* 64-byte box, 64B swizzle */
	EXPECT(INVALID, tiled(CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, a, dims2, strides2, box2, es2, 0, 0, 1)); /* NaN fill */
	/* im2col: corners, channels, pixels */
	CHECK(cuTensorMapEncodeIm2col(&m, F32, 4, (void *)(uintptr_t)a, dimsi, stridesi, lo_ok, lo_ok, 32, 64, ones,
				      NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeIm2col(&m, F32, 4, (void *)(uintptr_t)a, dimsi, stridesi, lo_bad, lo_ok, 32, 64,
						ones, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeIm2col(&m, F32, 4, (void *)(uintptr_t)a, dimsi, stridesi, lo_ok, lo_ok, 0, 64,
						ones, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeIm2col(&m, F32, 4, (void *)(uintptr_t)a, dimsi, stridesi, lo_ok, lo_ok, 257, 64,
						ones, NONE_ARGS));
	EXPECT(INVALID, cuTensorMapEncodeIm2col(&m, F32, 4, (void *)(uintptr_t)a, dimsi, stridesi, lo_ok, lo_ok, 32, 1025,
						ones, NONE_ARGS));
}

static void mode_wide(void)
{
	CUtensorMap m;
	cuuint64_t dims3[3] = { 16, 4, 4 }, strides3[2] = { 64, 256 };

	EXPECT(CUDA_ERROR_NOT_SUPPORTED,
	       cuTensorMapEncodeIm2colWide(&m, F32, 3, (void *)(uintptr_t)buf, dims3, strides3, 0, 1, 8, 8, ones,
					   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128,
					   CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
					   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

static void mode_remote(void)
{
	CUtensorMap m;

	for (int i = 0; i < 200; i++) {
		CHECK(tiled2(&m, buf + 256ull * i));
		check_tiled2(&m, buf + 256ull * i);
		CHECK(cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)(buf2 + 512ull * i)));
		check_tiled2(&m, buf2 + 512ull * i);
	}
	EXPECT(INVALID, tiled2(&m, buf2 + BUF));
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} modes[] = {
		{ "encode", mode_encode }, { "no_context", mode_no_context }, { "replace", mode_replace },
		{ "refuse_pointers", mode_refuse_pointers }, { "refuse_enums", mode_refuse_enums },
		{ "refuse_memory", mode_refuse_memory }, { "refuse_rules", mode_refuse_rules }, { "wide", mode_wide },
		{ "remote", mode_remote },
	};

	if (argc != 2) {
		printf("usage: %s MODE\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (!strcmp(argv[1], modes[i].name)) {
			setup();
			modes[i].fn();
			printf("PASS\n");
			return 0;
		}
	}
	printf("unknown mode %s\n", argv[1]);
	return 2;
}
