/* SPDX-License-Identifier: MIT */
/*
 * One user allocates device memory through several connections. The vGPU's
 * quota (--quota-mb) holds for all of the user's connections together: the
 * allocation that would pass it fails with cudaErrorMemoryAllocation, memory
 * freed (or held by a connection that ended) counts no more, each vGPU
 * has a quota of its own, and cudaMemGetInfo of one connection counts what
 * the others hold as in use.
 *   quota_per_user SOCKET QUOTA_MB
 * Exit 0 when every allocation got the status the shared quota gives it.
 */
#include "hostile.h"

#define CUDA_ERROR_MEMORY_ALLOCATION 2
#define MiB (1ull << 20)

static int expect(const char *what, int st, int want)
{
	printf("%s: status %d\n", what, st);
	if (st == want)
		return 0;
	printf("FAIL: %s: want %d\n", what, want);
	return 1;
}

/* cudaMemGetInfo on vGPU v: free bytes (-1 on error) */
static int64_t mem_free_bytes(struct hostile *h, unsigned v)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_MEM_GET_INFO);
	uint64_t val[2] = { 0, 0 };

	return hostile_call(h, v, &e, val) ? -1 : (int64_t)val[0];
}

static int mem_free(struct hostile *h, unsigned v, uint64_t va)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_MEM_FREE);

	e.args.a[0] = va;
	return hostile_call(h, v, &e, NULL);
}

int main(int argc, char **argv)
{
	struct hostile c[3];
	uint64_t quota, part, p0, p2;
	int st, bad = 0;

	if (argc < 3) {
		printf("usage: %s SOCKET QUOTA_MB\n", argv[0]);
		return 2;
	}
	quota = strtoull(argv[2], NULL, 10) * MiB;
	part = quota * 2 / 5; /* two fit in the quota, three do not */
	for (int i = 0; i < 3; i++) {
		if ((st = hostile_connect(&c[i], argv[1], 2, 8 * MiB, NULL))) {
			printf("FAIL: connection %d: %d %s\n", i, st, c[i].refusal);
			return 1;
		}
	}
	p0 = hostile_alloc(&c[0], 0, part, &st);
	bad |= expect("connection 0, 2/5 of the quota", st, 0);
	hostile_alloc(&c[1], 0, part, &st);
	bad |= expect("connection 1, 2/5 of the quota", st, 0);
	/* what the others hold is in use for connection 2 too (cudaMemGetInfo) */
	{
		int64_t fr = mem_free_bytes(&c[2], 0);

		printf("connection 2 sees %lld MiB free\n", (long long)(fr >> 20));
		if (fr != (int64_t)(quota - 2 * part)) {
			printf("FAIL: connection 2 sees %lld bytes free, want %llu\n", (long long)fr,
			       (unsigned long long)(quota - 2 * part));
			bad = 1;
		}
	}
	p2 = hostile_alloc(&c[2], 0, part, &st);
	bad |= expect("connection 2, 2/5 more: past the user's quota", st, CUDA_ERROR_MEMORY_ALLOCATION);
	/* another vGPU: a quota of its own */
	hostile_alloc(&c[2], 1, part * 2, &st);
	bad |= expect("connection 2 on vGPU 1, 4/5 of its quota", st, 0);
	/* freed memory counts no more */
	bad |= expect("connection 0 frees", mem_free(&c[0], 0, p0), 0);
	p2 = hostile_alloc(&c[2], 0, part, &st);
	bad |= expect("connection 2, 2/5 after connection 0 freed", st, 0);
	hostile_alloc(&c[0], 0, part, &st);
	bad |= expect("connection 0, 2/5 more: past the quota again", st, CUDA_ERROR_MEMORY_ALLOCATION);
	/* an ended connection's memory counts no more */
	close(c[1].sock);
	st = -1;
	for (int i = 0; i < 50 && st; i++) {
		uint64_t p = hostile_alloc(&c[0], 0, part, &st);

		if (st)
			usleep(100000);
		(void)p;
	}
	bad |= expect("connection 0, 2/5 after connection 1 ended", st, 0);
	(void)p2;
	return bad;
}
