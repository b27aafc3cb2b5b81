// SPDX-License-Identifier: MIT
/* exec_record(): CUDA arrays, texture and surface objects (exec_array.c) on
 * the sim. A hostile client writes every field; what is not its own or not
 * in range is refused before the device sees it:
 *   array_charged          an array's bytes count against the quota, and come back
 *   array_charged_as_laid_out        what the device says its layout takes
 *   array_charged_at_least_elements  a device that cannot say: its elements
 *   shape_refused          width 0, a side past 2^17, a format or channel count
 *                          not carried, unknown flags
 *   copy_round_trip        data area -> array box -> device memory -> data area
 *   copy_refused           boxes past the array, spans outside the data area or
 *                          the client's memory, unknown directions
 *   texture_made_destroyed an array texture: a value back; destroyed once
 *   texture_refused        a short payload, an unknown array, memory not the
 *                          client's, fields of another resource kind, enums
 *   surface_needs_flag     surfaces only on arrays made for them
 * (`test_exec_array NAME` runs one) */
#include <string.h>

#include "check.h"
#include "fixture_cases.h"
#include "mearas/array_cu.h"

#define QUOTA (64ull << 20)
#define ARR 700                 /* the array id the cases use */

static int array_create(uint64_t id, uint64_t w, uint64_t h, uint64_t d, uint32_t format, uint32_t channels,
			uint32_t flags)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_ARRAY_CREATE);

	mearas_prep_ARRAY_CREATE(&e, id, w, h, d, format, channels, flags);
	return fixture_run(&fx, 0, &e, NULL);
}

static int array_copy(uint64_t mem, uint64_t pitch, uint32_t x, uint32_t y, uint32_t z, uint32_t w, uint32_t h,
		      uint32_t dir)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_MEMCPY_ARRAY);

	mearas_prep_MEMCPY_ARRAY(&e, ARR, mem, pitch, x, y, z, w, h, dir);
	return fixture_run(&fx, 0, &e, NULL);
}

static int tex_create(uint64_t id, const struct mearas_tex_args *t, uint32_t len, uint64_t val[2])
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_TEX_CREATE);

	mearas_prep_TEX_CREATE(&e, id);
	e.payload_len = len;
	memcpy(e.inline_payload, t, len);
	return fixture_run(&fx, 0, &e, val);
}

static uint64_t mem_free_bytes(void)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_MEM_GET_INFO);
	uint64_t val[2] = { 0, 0 };

	CHECK_EQ(fixture_run(&fx, 0, &e, val), 0);
	return val[0];
}

static void test_array_charged(void)
{
	uint64_t before = mem_free_bytes();
	struct mearas_sqe e = sqe_of(MEARAS_OP_ARRAY_DESTROY);

	/* 1024 x 1024 float4: 16 MiB */
	CHECK_EQ(array_create(ARR, 1024, 1024, 0, CU_AD_FORMAT_FLOAT, 4, 0), 0);
	CHECK_EQ(before - mem_free_bytes(), 16ull << 20);
	/* 4096 x 2048 float4 (128 MiB) is past the 64 MiB quota */
	CHECK_EQ(array_create(ARR + 1, 4096, 2048, 0, CU_AD_FORMAT_FLOAT, 4, 0), cudaErrorMemoryAllocation);
	mearas_prep_ARRAY_DESTROY(&e, ARR);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	CHECK_EQ(mem_free_bytes(), before);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidResourceHandle);
}

/* vGPU 0's device says an array takes `footprint_bytes`, or fails to say */
static struct mdev_ops footprint_ops;
static uint64_t footprint_bytes;

static int fake_footprint(struct mdev *d, const struct mdev_array *a, uint64_t *bytes)
{
	(void)d, (void)a;
	if (!footprint_bytes)
		return cudaErrorNotSupported;
	*bytes = footprint_bytes;
	return 0;
}

static void device_footprint(uint64_t bytes)
{
	footprint_ops = *fx.w->vgpus[0].ops;
	footprint_ops.array_footprint = fake_footprint;
	fx.w->vgpus[0].ops = &footprint_ops;
	footprint_bytes = bytes;
}

/* a driver's tiled layout pads a small array far past its elements: the
 * charge is what the device says it takes */
static void test_array_charged_as_laid_out(void)
{
	uint64_t before = mem_free_bytes();
	struct mearas_sqe e = sqe_of(MEARAS_OP_ARRAY_DESTROY);

	device_footprint(2ull << 20);
	CHECK_EQ(array_create(ARR, 1, 1, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0), 0);
	CHECK_EQ(before - mem_free_bytes(), 2ull << 20);
	mearas_prep_ARRAY_DESTROY(&e, ARR);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	CHECK_EQ(mem_free_bytes(), before);
}

/* a device that cannot say (or says less) leaves the elements' bytes */
static void test_array_charged_at_least_elements(void)
{
	uint64_t before = mem_free_bytes();

	device_footprint(0);
	CHECK_EQ(array_create(ARR, 1024, 1024, 0, CU_AD_FORMAT_FLOAT, 4, 0), 0);
	CHECK_EQ(before - mem_free_bytes(), 16ull << 20);
	device_footprint(4096);
	CHECK_EQ(array_create(ARR + 1, 1024, 1024, 0, CU_AD_FORMAT_FLOAT, 4, 0), 0);
	CHECK_EQ(before - mem_free_bytes(), 32ull << 20);
}

static void test_shape_refused(void)
{
	CHECK_EQ(array_create(ARR, 0, 4, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0), cudaErrorInvalidValue);
	CHECK_EQ(array_create(ARR, MEARAS_ARRAY_MAX_DIM + 1, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0), cudaErrorInvalidValue);
	CHECK_EQ(array_create(ARR, 4, 4, MEARAS_ARRAY_MAX_DIM + 1, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0), cudaErrorInvalidValue);
	CHECK_EQ(array_create(ARR, 4, 4, 0, 0xb0 /* NV12 */, 1, 0), cudaErrorInvalidValue);
	CHECK_EQ(array_create(ARR, 4, 4, 0, CU_AD_FORMAT_UNSIGNED_INT8, 3, 0), cudaErrorInvalidValue);
	CHECK_EQ(array_create(ARR, 4, 4, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0x40 /* sparse */), cudaErrorInvalidValue);
	CHECK_EQ(array_create(ARR, 4, 4, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, MEARAS_ARRAY_LAYERED), 0); /* still served */
}

static void test_copy_round_trip(void)
{
	uint64_t dev = fixture_alloc(&fx, 0, 4096);
	uint8_t *data = fx.w->data;

	CHECK(dev != 0);
	/* 8 x 6 x 3 array of u16 x 2 (4-byte elements, 32-byte rows) */
	CHECK_EQ(array_create(ARR, 8, 6, 3, CU_AD_FORMAT_UNSIGNED_INT16, 2, 0), 0);
	for (unsigned i = 0; i < 64; i++)
		data[i] = (uint8_t)(i * 7 + 1);
	/* 4 rows of 12 bytes, 16 apart, into slice 2 at byte 8, row 1 */
	CHECK_EQ(array_copy(0, 16, 8, 1, 2, 12, 4, MEARAS_ARRAY_HTOA), 0);
	CHECK_EQ(array_copy(dev, 12, 8, 1, 2, 12, 4, MEARAS_ARRAY_ATOD), 0);
	CHECK_EQ(array_copy(dev, 12, 8, 1, 0, 12, 4, MEARAS_ARRAY_DTOA), 0);
	memset(data + 4096, 0, 64);
	CHECK_EQ(array_copy(4096, 12, 8, 1, 0, 12, 4, MEARAS_ARRAY_ATOH), 0);
	for (unsigned r = 0; r < 4; r++)
		CHECK_MSG(memcmp(data + 4096 + r * 12, data + r * 16, 12) == 0, "row %u came back changed", r);
}

static void test_copy_refused(void)
{
	uint64_t dev = fixture_alloc(&fx, 0, 4096);

	CHECK_EQ(array_create(ARR, 8, 6, 3, CU_AD_FORMAT_UNSIGNED_INT16, 2, 0), 0);
	CHECK_EQ(array_copy(0, 32, 24, 0, 0, 12, 1, MEARAS_ARRAY_HTOA), cudaErrorInvalidValue);   /* past a row */
	CHECK_EQ(array_copy(0, 32, 0, 4, 0, 32, 3, MEARAS_ARRAY_HTOA), cudaErrorInvalidValue);    /* past the rows */
	CHECK_EQ(array_copy(0, 32, 0, 0, 3, 32, 1, MEARAS_ARRAY_HTOA), cudaErrorInvalidValue);    /* past the slices */
	CHECK_EQ(array_copy(0, 8, 0, 0, 0, 32, 2, MEARAS_ARRAY_HTOA), cudaErrorInvalidPitchValue); /* rows overlap */
	CHECK_EQ(array_copy(FIXTURE_DATA_SIZE - 16, 32, 0, 0, 0, 32, 1, MEARAS_ARRAY_HTOA), cudaErrorInvalidValue);
	CHECK_EQ(array_copy(FIXTURE_DATA_SIZE - 16, 32, 0, 0, 0, 32, 1, MEARAS_ARRAY_ATOH), cudaErrorInvalidValue);
	CHECK_EQ(array_copy(dev + 4096 - 16, 32, 0, 0, 0, 32, 1, MEARAS_ARRAY_DTOA), cudaErrorInvalidValue);
	CHECK_EQ(array_copy(0x1000, 32, 0, 0, 0, 32, 1, MEARAS_ARRAY_ATOD), cudaErrorInvalidValue);
	CHECK_EQ(array_copy(0, 32, 0, 0, 0, 32, 1, 0), cudaErrorInvalidMemcpyDirection);
	CHECK_EQ(array_copy(0, 32, 0, 0, 0, 32, 1, 5), cudaErrorInvalidMemcpyDirection);
	CHECK_EQ(array_copy(0, 32, 0, 0, 0, 32, 1, MEARAS_ARRAY_HTOA), 0);                       /* still served */
}

static struct mearas_tex_args array_tex(void)
{
	struct mearas_tex_args t;

	memset(&t, 0, sizeof(t));
	t.res = MEARAS_RES_ARRAY;
	t.array = ARR;
	t.address[0] = 1;
	t.filter = 1;
	t.flags = 0x02;
	return t;
}

static void test_texture_made_destroyed(void)
{
	struct mearas_tex_args t = array_tex();
	struct mearas_sqe e = sqe_of(MEARAS_OP_TEX_DESTROY);
	uint64_t val[2] = { 0, 0 };

	CHECK_EQ(array_create(ARR, 16, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0), 0);
	CHECK_EQ(tex_create(900, &t, sizeof(t), val), 0);
	CHECK(val[0] != 0);
	CHECK_EQ(tex_create(900, &t, sizeof(t), val), cudaErrorInvalidValue);   /* the id is taken */
	mearas_prep_TEX_DESTROY(&e, 900);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidResourceHandle);
}

/* t with one change, refused with want */
static void tex_refused(const struct mearas_tex_args *t, int want, const char *what)
{
	uint64_t val[2];

	CHECK_MSG(tex_create(901, t, sizeof(*t), val) == want, "%s: not refused as expected", what);
}

static void test_texture_refused(void)
{
	uint64_t dev = fixture_alloc(&fx, 0, 4096), val[2];
	struct mearas_tex_args t = array_tex(), u;

	CHECK_EQ(array_create(ARR, 16, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0), 0);
	CHECK_EQ(tex_create(901, &t, sizeof(t) - 8, val), cudaErrorInvalidValue);
	u = t, u.array = ARR + 5;
	tex_refused(&u, cudaErrorInvalidResourceHandle, "an unknown array");
	u = t, u.dptr = dev;
	tex_refused(&u, cudaErrorInvalidValue, "a device pointer on an array resource");
	u = t, u.res = 1;
	tex_refused(&u, cudaErrorInvalidValue, "a mipmapped array");
	u = t, u.address[2] = 4;
	tex_refused(&u, cudaErrorInvalidValue, "an address mode");
	u = t, u.flags = 0x04;
	tex_refused(&u, cudaErrorInvalidValue, "an unknown flag");
	u = t, u.view_width = 4;
	tex_refused(&u, cudaErrorInvalidValue, "view fields without a view");
	/* linear: all of it must be this client's */
	memset(&u, 0, sizeof(u));
	u.res = MEARAS_RES_LINEAR, u.format = CU_AD_FORMAT_FLOAT, u.channels = 1, u.dptr = dev, u.size = 4096;
	CHECK_EQ(tex_create(902, &u, sizeof(u), val), 0);
	u.size = 4097;
	tex_refused(&u, cudaErrorInvalidValue, "linear bytes past the allocation");
	u.size = 16, u.dptr = 0x10000;
	tex_refused(&u, cudaErrorInvalidValue, "linear bytes not the client's");
	u.dptr = dev, u.has_view = 1;
	tex_refused(&u, cudaErrorInvalidValue, "a view on linear memory");
	/* pitched: every row */
	memset(&u, 0, sizeof(u));
	u.res = MEARAS_RES_PITCH2D, u.format = CU_AD_FORMAT_UNSIGNED_INT8, u.channels = 4, u.dptr = dev, u.width = 16;
	u.height = 8, u.pitch = 512;
	CHECK_EQ(tex_create(903, &u, sizeof(u), val), 0);
	u.height = 9;
	tex_refused(&u, cudaErrorInvalidValue, "pitched rows past the allocation");
	u.height = 8, u.pitch = 32;
	tex_refused(&u, cudaErrorInvalidValue, "a pitch below the row");
	u.pitch = 512, u.channels = 3;
	tex_refused(&u, cudaErrorInvalidValue, "three channels");
}

static void test_surface_needs_flag(void)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_SURF_CREATE);
	uint64_t val[2] = { 0, 0 };

	CHECK_EQ(array_create(ARR, 16, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0), 0);
	CHECK_EQ(array_create(ARR + 1, 16, 16, 0, CU_AD_FORMAT_FLOAT, 1, MEARAS_ARRAY_SURFACE_LDST), 0);
	mearas_prep_SURF_CREATE(&e, 910, ARR);
	CHECK_EQ(fixture_run(&fx, 0, &e, val), cudaErrorInvalidValue);
	mearas_prep_SURF_CREATE(&e, 910, ARR + 1);
	CHECK_EQ(fixture_run(&fx, 0, &e, val), 0);
	CHECK(val[0] != 0);
}

static const struct check_case cases[] = {
	{ "array_charged", test_array_charged },
	{ "array_charged_as_laid_out", test_array_charged_as_laid_out },
	{ "array_charged_at_least_elements", test_array_charged_at_least_elements },
	{ "shape_refused", test_shape_refused },
	{ "copy_round_trip", test_copy_round_trip },
	{ "copy_refused", test_copy_refused },
	{ "texture_made_destroyed", test_texture_made_destroyed },
	{ "texture_refused", test_texture_refused },
	{ "surface_needs_flag", test_surface_needs_flag },
};
FIXTURE_MAIN(cases, 1, QUOTA, NULL)
