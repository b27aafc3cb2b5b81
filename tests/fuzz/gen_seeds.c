// SPDX-License-Identifier: MIT
/* Writes the seed corpus of fuzz_exec into DIR: a few record sequences that
 * reach the deep paths (copies, memsets, 2D copies, launches, module loads,
 * object lifetimes), in the format of fuzz_input.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "mearas/region.h"


#define TAG(t, off) (((uint64_t)(t) << FUZZ_TAG_SHIFT) | (off))

/* what the spec's seed records name (mearas/ops_seeds.gen.h): the fixture's
 * objects (its ids are 1 for every kind), fresh ids, its 64 KiB allocation,
 * the start of the data area */
#define SEED_HANDLE(kind) 1u
#define SEED_NEW(kind) 40u
#define SEED_DPTR TAG(FUZZ_TAG_A, 0)
#define SEED_DATA 0u
#define SEED_VALUE 64u
#include "mearas/ops_seeds.gen.h"

static struct mearas_sqe recs[64];
static unsigned nrecs;

static struct mearas_sqe *rec(unsigned op, uint16_t flags)
{
	struct mearas_sqe *e = &recs[nrecs++];

	memset(e, 0, sizeof(*e));
	e->op = (uint16_t)op;
	e->flags = flags;
	e->user_data = nrecs;
	return e;
}

static void emit(const char *dir, const char *name, const void *arena, uint32_t arena_len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(&arena_len, 4, 1, f) != 1 || fwrite(arena, 1, arena_len, f) != arena_len ||
	    fwrite(recs, sizeof(recs[0]), nrecs, f) != nrecs || fclose(f)) {
		perror(path);
		exit(1);
	}
	nrecs = 0;
}

int main(int argc, char **argv)
{
	const uint16_t W = MEARAS_SQE_WANT_CQE;
	uint8_t arena[512];
	struct mearas_sqe *e;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (unsigned i = 0; i < sizeof(arena); i++)
		arena[i] = (uint8_t)(i * 7);

	/* copies in every direction, inline and arena payloads */
	e = rec(MEARAS_OP_MEMCPY, W);
	e->args.a[0] = TAG(FUZZ_TAG_A, 0); e->args.a[1] = 0; e->args.a[2] = 512; e->args.a[3] = MEARAS_COPY_HTOD;
	e = rec(MEARAS_OP_MEMCPY, 0);
	e->args.a[0] = TAG(FUZZ_TAG_B, 64); e->args.a[1] = TAG(FUZZ_TAG_A, 0); e->args.a[2] = 512;
	e->args.a[3] = MEARAS_COPY_DTOD;
	e = rec(MEARAS_OP_MEMCPY, W);
	e->args.a[0] = 1024; e->args.a[1] = TAG(FUZZ_TAG_C, 0); e->args.a[2] = 256; e->args.a[3] = MEARAS_COPY_DTOH;
	e = rec(MEARAS_OP_MEMCPY_INLINE, W);
	e->args.a[0] = TAG(FUZZ_TAG_GLOBAL, 0); e->payload_len = 16;
	e = rec(MEARAS_OP_MEMCPY_INLINE, MEARAS_SQE_PAYLOAD_ARENA);
	e->args.a[0] = TAG(FUZZ_TAG_A, 100); e->payload_off = 10; e->payload_len = 300;
	e = rec(MEARAS_OP_SYNC_ERROR, W);
	emit(argv[1], "copies", arena, sizeof(arena));

	/* memsets and 2D */
	e = rec(MEARAS_OP_MEMSET, W);
	e->args.a[0] = TAG(FUZZ_TAG_B, 0); e->args.a[1] = 0x1234; e->args.a[2] = 1000; e->args.a[3] = 2;
	e = rec(MEARAS_OP_MEMSET_2D, W);
	e->args.a[0] = TAG(FUZZ_TAG_B, 0); e->args.a[1] = 256; e->args.a[2] = 7; e->args.a[3] = 200;
	e->args.a[4] = 10;
	e = rec(MEARAS_OP_MEMCPY_2D, W);
	e->args.a[0] = TAG(FUZZ_TAG_A, 0); e->args.a[1] = 128; e->args.a[2] = 0; e->args.a[3] = 100;
	e->args.a[4] = 100; e->args.a[5] = 4; e->args.a[6] = MEARAS_COPY_HTOD;
	e = rec(MEARAS_OP_MEMCPY_2D, W);
	e->args.a[0] = 2048; e->args.a[1] = 64; e->args.a[2] = TAG(FUZZ_TAG_A, 0); e->args.a[3] = 128;
	e->args.a[4] = 64; e->args.a[5] = 4; e->args.a[6] = MEARAS_COPY_DTOH;
	emit(argv[1], "memsets", arena, 64);

	/* launches, streams, events */
	e = rec(MEARAS_OP_LAUNCH, W);
	e->args.a[0] = FUZZ_FUNC_THREE; e->args.a[1] = 1 | (1ull << 32); e->args.a[2] = 1 | (32ull << 32);
	e->args.a[3] = 1 | (1ull << 32); e->payload_len = 24; e->stream = FUZZ_STREAM;
	e = rec(MEARAS_OP_LAUNCH, MEARAS_SQE_PER_THREAD);
	e->args.a[0] = FUZZ_FUNC_NONE; e->args.a[1] = 1 | (1ull << 32); e->args.a[2] = 1 | (1ull << 32);
	e->args.a[3] = 1 | (1ull << 32); e->cq = 3;
	e = rec(MEARAS_OP_EVENT_RECORD, 0);
	e->args.a[0] = FUZZ_EVENT; e->stream = FUZZ_STREAM;
	e = rec(MEARAS_OP_STREAM_WAIT_EVENT, 0);
	e->args.a[0] = FUZZ_EVENT;
	e = rec(MEARAS_OP_EVENT_RECORD, 0);
	e->args.a[0] = FUZZ_EVENT2;
	e = rec(MEARAS_OP_EVENT_ELAPSED, W);
	e->args.a[0] = FUZZ_EVENT; e->args.a[1] = FUZZ_EVENT2;
	e = rec(MEARAS_OP_STREAM_SYNC, W);
	e->stream = FUZZ_STREAM;
	e = rec(MEARAS_OP_STREAM_DESTROY, W);
	e->args.a[0] = FUZZ_STREAM;
	e = rec(MEARAS_OP_CTX_SYNC, W);
	emit(argv[1], "launches", arena, 0);

	/* object lifetimes: a second module from the fixture's image, unloads, reset */
	e = rec(MEARAS_OP_MODULE_LOAD, W);
	e->args.a[0] = 5; e->args.a[1] = FUZZ_FATBIN_OFF; e->args.a[2] = TAG(FUZZ_TAG_FATBIN_SIZE, 0);
	e = rec(MEARAS_OP_FUNC_GET, W);
	e->args.a[0] = 5; e->args.a[1] = 9; e->payload_len = 8; memcpy(e->inline_payload, "k_three", 8);
	e = rec(MEARAS_OP_MODULE_UNLOAD, W);
	e->args.a[0] = FUZZ_MODULE;
	e = rec(MEARAS_OP_LAUNCH, W);
	e->args.a[0] = FUZZ_FUNC_THREE;
	e = rec(MEARAS_OP_MEM_ALLOC, W);
	e->args.a[0] = 3 << 20;
	e = rec(MEARAS_OP_MEM_FREE, W);
	e->args.a[0] = TAG(FUZZ_TAG_A, 0);
	e = rec(MEARAS_OP_MEM_FREE_ASYNC, 0);
	e->args.a[0] = TAG(FUZZ_TAG_B, 0);
	e = rec(MEARAS_OP_HOST_FUNC, 0);
	e->args.a[0] = 77;
	e = rec(MEARAS_OP_DEVICE_RESET, W);
	e = rec(MEARAS_OP_MEM_GET_INFO, W);
	emit(argv[1], "lifetimes", arena, 0);

	/* one valid record of every op in the spec, each wanting a completion */
	for (unsigned op = 0; op < MEARAS_OP_COUNT; op++) {
		e = rec(op, W);
		mearas_seed_record(op, e);
		if (nrecs == sizeof(recs) / sizeof(recs[0]))
			emit(argv[1], "every-op-1", arena, sizeof(arena));
	}
	emit(argv[1], "every-op", arena, sizeof(arena));

	/* the module image given from the fuzzed bytes (data area offset 0) */
	e = rec(MEARAS_OP_MODULE_LOAD, W);
	e->args.a[0] = 6; e->args.a[1] = 0; e->args.a[2] = sizeof(arena);
	emit(argv[1], "module-from-input", arena, sizeof(arena));
	return 0;
}
