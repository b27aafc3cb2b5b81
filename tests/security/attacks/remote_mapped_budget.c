/* SPDX-License-Identifier: MIT */
/*
 * HOST_MAPPED records for a remote vGPU, each at a new offset of the data
 * area and each covering nearly all of it: the remote node keeps a shadow
 * copy of every mapped range, so each record used to cost it a full copy of
 * the data area, without limit (../shared security repro exp_mapped).
 *   remote_mapped_budget SOCKET N HOLD_S
 * vGPU 0 must be remote; data area 64 MiB. Expects: the synchronizing call
 * after the N records fails with cudaErrorMemoryAllocation (the budget); the
 * process holds the link HOLD_S seconds (the caller reads the remote node's
 * memory meanwhile); after unmapping them all, a range fits again and the
 * link serves copies with every byte right. Exit 0 when all of that holds.
 */
#include "hostile.h"

#define DATA_SIZE (64ull << 20)

static int map(struct hostile *h, uint64_t off, uint64_t size, int on)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_HOST_MAPPED);

	e.args.a[0] = off;
	e.args.a[1] = size;
	e.args.a[2] = (uint64_t)on;
	hostile_submit(h, 0, &e); /* posted, as the runtime does: no completion */
	return 0;
}

static int ctx_sync(struct hostile *h)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_CTX_SYNC);

	return hostile_call(h, 0, &e, NULL);
}

int main(int argc, char **argv)
{
	struct hostile h;
	unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 16, hold = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
	uint64_t dev;
	int r, st, ok = 1;

	if (argc < 2 || (r = hostile_connect(&h, argv[1], 1, DATA_SIZE, NULL))) {
		fprintf(stderr, "remote_mapped_budget: cannot connect to %s\n", argc > 1 ? argv[1] : "?");
		return 2;
	}
	if (!hostile_devinfo(&h, 0)->is_remote) {
		fprintf(stderr, "remote_mapped_budget: vGPU 0 is not remote\n");
		return 2;
	}
	memset(h.data, 0x5a, DATA_SIZE); /* pages the shadows copy */
	for (unsigned i = 0; i < n; i++)
		map(&h, i * 4096ull, DATA_SIZE - i * 4096ull, 1);
	r = ctx_sync(&h);
	printf("mapped budget: %u ranges of ~64 MiB mapped, then cudaDeviceSynchronize: %d\n", n, r);
	if (r != 2 /* cudaErrorMemoryAllocation */) {
		printf("mapped budget: FAIL: expected cudaErrorMemoryAllocation (2)\n");
		ok = 0;
	}
	printf("HOLDING\n");
	fflush(stdout);
	sleep(hold);
	/* unmapped, the shadows are freed and their budget is back */
	for (unsigned i = 0; i < n; i++)
		map(&h, i * 4096ull, DATA_SIZE - i * 4096ull, 0);
	map(&h, 0, DATA_SIZE / 2, 1);
	r = ctx_sync(&h);
	printf("mapped budget: after unmapping them, one range of 32 MiB mapped: %d\n", r);
	if (r != 0)
		ok = 0;
	/* the link still serves: a round trip through device memory */
	dev = hostile_alloc(&h, 0, 1 << 20, &st);
	for (unsigned i = 0; i < (1u << 20); i++)
		h.data[DATA_SIZE / 2 + i] = (uint8_t)(i * 13 + 7);
	memset(h.data + DATA_SIZE / 2 + (2u << 20), 0, 1 << 20);
	if (!dev || hostile_memcpy(&h, 0, dev, DATA_SIZE / 2, 1 << 20, MEARAS_COPY_HTOD) ||
	    hostile_memcpy(&h, 0, DATA_SIZE / 2 + (2u << 20), dev, 1 << 20, MEARAS_COPY_DTOH) ||
	    memcmp(h.data + DATA_SIZE / 2, h.data + DATA_SIZE / 2 + (2u << 20), 1 << 20)) {
		printf("mapped budget: FAIL: the round trip after the refusal failed (alloc status %d)\n", st);
		ok = 0;
	} else {
		printf("mapped budget: 1 MiB round trip after the refusal: every byte right\n");
	}
	return ok ? 0 : 1;
}
