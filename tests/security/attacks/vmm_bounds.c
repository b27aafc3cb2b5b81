/* SPDX-License-Identifier: MIT */
/*
 * Virtual memory management records from a hostile client (raw rings): the
 * physical memory of VMM_CREATE counts against the user's quota together
 * with every connection's allocations; maps past a reservation, wrapping
 * sizes and offsets, over another mapping, into the window of another vGPU
 * or at an ordinary allocation, handles of another vGPU or released ones,
 * unmaps and frees of what is not a whole mapping or reservation, MEM_FREE
 * of a mapping: every one refused with its status, nothing mapped by them,
 * and an ended connection's VMM memory counts no more.
 *   vmm_bounds SOCKET QUOTA_MB
 * Exit 0 when every record got the status it must.
 */
#include "hostile.h"

#define INVALID 1 /* cudaErrorInvalidValue */
#define NOMEM 2   /* cudaErrorMemoryAllocation */
#define BADHANDLE 400 /* cudaErrorInvalidResourceHandle */
#define MiB (1ull << 20)
#define G (2 * MiB)

static int bad;

static void expect(const char *what, int st, int want)
{
	printf("%s: status %d\n", what, st);
	if (st != want) {
		printf("FAIL: %s: want %d\n", what, want);
		bad = 1;
	}
}

static int op(struct hostile *h, unsigned v, unsigned code, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
	      uint64_t val[2])
{
	struct mearas_sqe e = hostile_sqe(code);

	e.args.a[0] = a0;
	e.args.a[1] = a1;
	e.args.a[2] = a2;
	e.args.a[3] = a3;
	return hostile_call(h, v, &e, val);
}

static uint64_t reserve(struct hostile *h, unsigned v, uint64_t size, int *st)
{
	uint64_t val[2] = { 0 };

	*st = op(h, v, MEARAS_OP_VMM_RESERVE, size, 0, 0, 0, val);
	return val[0];
}

int main(int argc, char **argv)
{
	struct hostile c[2];
	uint64_t quota, part, r, r1, a, val[2];
	int st;

	if (argc < 3) {
		printf("usage: %s SOCKET QUOTA_MB\n", argv[0]);
		return 2;
	}
	quota = strtoull(argv[2], NULL, 10) * MiB;
	part = quota * 2 / 5 / G * G;
	for (int i = 0; i < 2; i++) {
		if ((st = hostile_connect(&c[i], argv[1], 2, 8 * MiB, NULL))) {
			printf("FAIL: connection %d: %d %s\n", i, st, c[i].refusal);
			return 1;
		}
	}
	/* the quota: VMM memory and allocations of both connections together */
	expect("connection 0 creates 2/5 of the quota", op(&c[0], 0, MEARAS_OP_VMM_CREATE, 1, part, 0, 0, NULL), 0);
	hostile_alloc(&c[1], 0, part, &st);
	expect("connection 1 allocates 2/5", st, 0);
	expect("connection 1 creates 2/5 more: past the user's quota",
	       op(&c[1], 0, MEARAS_OP_VMM_CREATE, 1, part, 0, 0, NULL), NOMEM);
	expect("a size wrapping the quota", op(&c[0], 0, MEARAS_OP_VMM_CREATE, 2, 0ull - G, 0, 0, NULL), NOMEM);
	expect("a size not a multiple of the granularity", op(&c[0], 0, MEARAS_OP_VMM_CREATE, 2, G + 1, 0, 0, NULL),
	       INVALID);
	expect("id 0", op(&c[0], 0, MEARAS_OP_VMM_CREATE, 0, G, 0, 0, NULL), INVALID);
	expect("an id in use", op(&c[0], 0, MEARAS_OP_VMM_CREATE, 1, G, 0, 0, NULL), INVALID);

	/* maps */
	r = reserve(&c[0], 0, 8 * G, &st);
	expect("reserve 8 granules", st, 0);
	r1 = reserve(&c[0], 1, 8 * G, &st);
	expect("reserve on vGPU 1", st, 0);
	expect("a reservation larger than the window", (reserve(&c[0], 0, 1ull << 62, &st), st), NOMEM);
	expect("a map past the reservation", op(&c[0], 0, MEARAS_OP_VMM_MAP, r + 6 * G, 4 * G, 0, 1, NULL), INVALID);
	expect("a map whose size wraps", op(&c[0], 0, MEARAS_OP_VMM_MAP, r + 6 * G, 0ull - 4 * G, 0, 1, NULL), INVALID);
	expect("an offset that wraps", op(&c[0], 0, MEARAS_OP_VMM_MAP, r, G, 0ull - G, 1, NULL), INVALID);
	expect("an offset past the handle", op(&c[0], 0, MEARAS_OP_VMM_MAP, r, 2 * G, part - G, 1, NULL), INVALID);
	expect("vGPU 0's handle on vGPU 1", op(&c[0], 1, MEARAS_OP_VMM_MAP, r1, G, 0, 1, NULL), INVALID);
	expect("vGPU 1's reservation through vGPU 0", op(&c[0], 0, MEARAS_OP_VMM_MAP, r1, G, 0, 1, NULL), INVALID);
	a = hostile_alloc(&c[0], 0, 4 * G, &st);
	expect("an allocation", st, 0);
	expect("a map over an allocation", op(&c[0], 0, MEARAS_OP_VMM_MAP, a & ~(G - 1), G, 0, 1, NULL), INVALID);
	expect("a map", op(&c[0], 0, MEARAS_OP_VMM_MAP, r, 2 * G, 0, 1, NULL), 0);
	expect("a map over it", op(&c[0], 0, MEARAS_OP_VMM_MAP, r + G, 2 * G, 0, 1, NULL), INVALID);
	expect("MEM_FREE of the mapping", op(&c[0], 0, MEARAS_OP_MEM_FREE, r, 0, 0, 0, NULL), INVALID);
	expect("an unmap of half of it", op(&c[0], 0, MEARAS_OP_VMM_UNMAP, r, G, 0, 0, NULL), INVALID);
	expect("an unmap of an allocation", op(&c[0], 0, MEARAS_OP_VMM_UNMAP, a, 4 * G, 0, 0, NULL), INVALID);
	expect("freeing the mapped reservation", op(&c[0], 0, MEARAS_OP_VMM_ADDRESS_FREE, r, 8 * G, 0, 0, NULL),
	       INVALID);
	expect("freeing an allocation's chunk as a reservation",
	       op(&c[0], 0, MEARAS_OP_VMM_ADDRESS_FREE, a & ~(G - 1), 32 * MiB, 0, 0, NULL), INVALID);
	/* a copy from the mapped part into the unmapped rest of the reservation */
	expect("a copy past the mapping", hostile_memcpy(&c[0], 0, r + 2 * G - 4096, 0, 8192, MEARAS_COPY_HTOD),
	       INVALID);
	expect("a copy inside the mapping", hostile_memcpy(&c[0], 0, r + G, 0, 8192, MEARAS_COPY_HTOD), 0);
	/* a released handle: its id is gone, its memory stays while mapped */
	expect("release", op(&c[0], 0, MEARAS_OP_VMM_RELEASE, 1, 0, 0, 0, NULL), 0);
	expect("release again", op(&c[0], 0, MEARAS_OP_VMM_RELEASE, 1, 0, 0, 0, NULL), BADHANDLE);
	expect("a map of the released id", op(&c[0], 0, MEARAS_OP_VMM_MAP, r + 4 * G, G, 0, 1, NULL), INVALID);
	expect("connection 1 creates past the quota still",
	       op(&c[1], 0, MEARAS_OP_VMM_CREATE, 1, part, 0, 0, NULL), NOMEM);
	/* an ended connection's mapped memory counts no more */
	close(c[0].sock);
	st = -1;
	for (int i = 0; i < 50 && st; i++) {
		st = op(&c[1], 0, MEARAS_OP_VMM_CREATE, 1, part, 0, 0, val);
		if (st)
			usleep(100000);
	}
	expect("connection 1 creates 2/5 after connection 0 ended", st, 0);
	return bad;
}
