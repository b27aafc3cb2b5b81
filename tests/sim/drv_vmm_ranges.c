// The address range pointer attributes of virtual memory (cuMemAddressReserve
// + cuMemMap) through the driver API, one behaviour per argument:
//   mapped         RANGE_START_ADDR / RANGE_SIZE of an address in a mapping
//                  are the whole reservation holding it (as an H200 answers,
//                  and cuda.h: "the mappable address range"), not the
//                  mapping; each of two reservations answers its own
//   unmapped       an unmapped address of a reservation: the range
//                  attributes still answer the reservation, MAPPED is 0,
//                  the others CUDA_ERROR_INVALID_VALUE (cuPointerGetAttributes
//                  writes their defaults)
//   address_range  cuMemGetAddressRange answers the mapping (cuda.h: "to
//                  retrieve the size of the mapped region")
//   freed          after cuMemAddressFree the addresses answer nothing
//   unknown_plural cuPointerGetAttributes of an address nobody owns writes
//                  every byte of the 8-byte range attributes (zero)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "drv_check.h"

static CUmemAllocationProp prop;
static size_t g;

/* a reservation of n granules with a handle of 2 granules mapped at each
 * offset (in granules) of at[0..nat) */
struct resv {
	CUdeviceptr va;
	size_t size;
	CUmemGenericAllocationHandle h[4];
	size_t at[4];
	int nat;
};

static void make(struct resv *r, size_t granules, const size_t *at, int nat)
{
	memset(r, 0, sizeof(*r));
	r->size = granules * g;
	r->nat = nat;
	CHECK(cuMemAddressReserve(&r->va, r->size, 0, 0, 0));
	for (int i = 0; i < nat; i++) {
		r->at[i] = at[i];
		CHECK(cuMemCreate(&r->h[i], 2 * g, &prop, 0));
		CHECK(cuMemMap(r->va + at[i] * g, 2 * g, 0, r->h[i], 0));
	}
}

static void destroy(struct resv *r)
{
	for (int i = 0; i < r->nat; i++) {
		CHECK(cuMemUnmap(r->va + r->at[i] * g, 2 * g));
		CHECK(cuMemRelease(r->h[i]));
	}
	CHECK(cuMemAddressFree(r->va, r->size));
}

/* the range attributes at p are [va, va+size) */
static void expect_range(CUdeviceptr p, CUdeviceptr va, size_t size)
{
	CUdeviceptr start = 0;
	size_t rsize = 0;

	CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p));
	CHECK(cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
	REQUIRE(start == va && rsize == size, "range at %#llx: %#llx + %#zx, expected %#llx + %#zx",
		(unsigned long long)p, (unsigned long long)start, rsize, (unsigned long long)va, size);
}

static int mapped(void)
{
	static const size_t at1[] = { 0, 2 }, at2[] = { 2 };
	struct resv a, b;
	unsigned m = 7;

	make(&a, 8, at1, 2);
	make(&b, 4, at2, 1);
	expect_range(a.va + 100, a.va, 8 * g);
	expect_range(a.va + 2 * g + 100, a.va, 8 * g);
	expect_range(a.va + 4 * g - 1, a.va, 8 * g);
	expect_range(b.va + 3 * g, b.va, 4 * g);
	CHECK(cuPointerGetAttribute(&m, CU_POINTER_ATTRIBUTE_MAPPED, a.va + 2 * g + 100));
	REQUIRE(m == 1, "MAPPED of a mapped address: %u", m);
	destroy(&b);
	destroy(&a);
	return 0;
}

static int unmapped(void)
{
	static const size_t at[] = { 2 };
	CUpointer_attribute attrs[4] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
					 CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_MEMORY_TYPE };
	CUdeviceptr start = 0;
	size_t rsize = 0;
	unsigned m = 7, mtype = 7;
	void *data[4] = { &start, &rsize, &m, &mtype };
	struct resv a;

	make(&a, 8, at, 1);
	expect_range(a.va + 100, a.va, 8 * g);
	expect_range(a.va + 7 * g + 100, a.va, 8 * g);
	CHECK(cuPointerGetAttribute(&m, CU_POINTER_ATTRIBUTE_MAPPED, a.va + 5 * g));
	REQUIRE(m == 0, "MAPPED of an unmapped address: %u", m);
	REQUIRE(cuPointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a.va + 5 * g) ==
			CUDA_ERROR_INVALID_VALUE,
		"memory type of an unmapped address answered");
	m = 7;
	CHECK(cuPointerGetAttributes(4, attrs, data, a.va + 5 * g + 1234));
	REQUIRE(start == a.va && rsize == 8 * g && m == 0 && mtype == 0,
		"cuPointerGetAttributes of an unmapped address: %#llx + %#zx, mapped %u, memory type %u",
		(unsigned long long)start, rsize, m, mtype);
	destroy(&a);
	return 0;
}

static int address_range(void)
{
	static const size_t at[] = { 0, 2 };
	CUdeviceptr base = 0;
	size_t size = 0;
	struct resv a;

	make(&a, 8, at, 2);
	CHECK(cuMemGetAddressRange(&base, &size, a.va + 2 * g + 100));
	REQUIRE(base == a.va + 2 * g && size == 2 * g, "cuMemGetAddressRange: %#llx + %#zx, expected the mapping",
		(unsigned long long)base, size);
	REQUIRE(cuMemGetAddressRange(&base, &size, a.va + 5 * g) == CUDA_ERROR_NOT_FOUND,
		"cuMemGetAddressRange of an unmapped address answered");
	destroy(&a);
	return 0;
}

static int freed(void)
{
	static const size_t at[] = { 0 };
	CUdeviceptr start;
	struct resv a;

	make(&a, 4, at, 1);
	destroy(&a);
	REQUIRE(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a.va + 100) ==
			CUDA_ERROR_INVALID_VALUE,
		"a freed reservation's mapped address still answers");
	REQUIRE(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a.va + 3 * g) ==
			CUDA_ERROR_INVALID_VALUE,
		"a freed reservation's unmapped address still answers");
	return 0;
}

static int unknown_plural(void)
{
	CUpointer_attribute attrs[2] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE };
	CUdeviceptr start;
	size_t rsize;
	void *data[2] = { &start, &rsize };
	static const char nowhere[64];

	memset(&start, 0xff, sizeof(start));
	memset(&rsize, 0xff, sizeof(rsize));
	CHECK(cuPointerGetAttributes(2, attrs, data, (CUdeviceptr)(uintptr_t)nowhere));
	REQUIRE(start == 0 && rsize == 0, "range of an unknown address: %#llx + %#zx, expected zeros",
		(unsigned long long)start, rsize);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} cases[] = { { "mapped", mapped },
		      { "unmapped", unmapped },
		      { "address_range", address_range },
		      { "freed", freed },
		      { "unknown_plural", unknown_plural } };
	CUcontext ctx;

	if (argc != 2) {
		fprintf(stderr, "usage: %s mapped|unmapped|address_range|freed|unknown_plural\n", argv[0]);
		return 2;
	}
	CUdevice dev = drv_primary_current(&ctx);
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CHECK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(argv[1], cases[i].name) == 0) {
			int rc = cases[i].fn();

			CHECK(cuDevicePrimaryCtxRelease(dev));
			if (rc == 0)
				printf("PASS\n");
			return rc;
		}
	}
	fprintf(stderr, "unknown case %s\n", argv[1]);
	return 2;
}
