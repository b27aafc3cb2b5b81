// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a sequence of hostile records run through exec_record()
 * on a fresh sim-backed worker with two vGPUs, some allocations, a stream,
 * events, a loaded module and functions (so deep paths are reached). The
 * sanitizers catch memory errors; the target also checks that a completion
 * is posted exactly for records that ask for one and that the heap stays
 * within its quota.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_die.h"
#include "fuzz_input.h"
#include "mearas/log.h"
#include "vgpu_fixture.h"

#define QUOTA (256ull << 20)

static uint8_t *fatbin;
static size_t fatbin_size;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("FUZZ_FATBIN");
	FILE *f;

	(void)argc, (void)argv;
	if (!path)
		path = "../unit/build/kernels.fatbin";
	f = fopen(path, "rb");
	if (!f)
		die("cannot open the fat binary (set FUZZ_FATBIN)");
	fatbin = malloc(1 << 20);
	fatbin_size = fread(fatbin, 1, 1 << 20, f);
	fclose(f);
	if (fatbin_size < 16)
		die("fat binary too small");
	if (!getenv("FUZZ_VERBOSE"))
		mearas_log_set_fd(open("/dev/null", O_WRONLY | O_CLOEXEC));
	return 0;
}

static uint64_t tags[256];

static void setup(struct fixture *fx)
{
	struct mearas_sqe e;
	uint64_t val[2];

	must(fixture_init(fx, 2, QUOTA) == 0, "fixture_init");
	tags[FUZZ_TAG_A] = fixture_alloc(fx, 0, 64 << 10);
	tags[FUZZ_TAG_B] = fixture_alloc(fx, 0, 1 << 20);
	tags[FUZZ_TAG_C] = fixture_alloc(fx, 1, 64 << 10);
	must(tags[FUZZ_TAG_A] && tags[FUZZ_TAG_B] && tags[FUZZ_TAG_C], "alloc");
	e = sqe_of(MEARAS_OP_STREAM_CREATE);
	e.args.a[0] = FUZZ_STREAM;
	must(fixture_run(fx, 0, &e, NULL) == 0, "stream");
	e = sqe_of(MEARAS_OP_EVENT_CREATE);
	e.args.a[0] = FUZZ_EVENT;
	must(fixture_run(fx, 0, &e, NULL) == 0, "event");
	e.args.a[0] = FUZZ_EVENT2;
	must(fixture_run(fx, 0, &e, NULL) == 0, "event");
	e = sqe_of(MEARAS_OP_VMM_CREATE);
	e.args.VMM_CREATE.handle = FUZZ_PHYS;
	e.args.VMM_CREATE.size = 2u << 20;
	must(fixture_run(fx, 0, &e, NULL) == 0, "physical memory");
	memcpy(fx->w->data + FUZZ_FATBIN_OFF, fatbin, fatbin_size);
	e = sqe_of(MEARAS_OP_MODULE_LOAD);
	e.args.a[0] = FUZZ_MODULE;
	e.args.a[1] = FUZZ_FATBIN_OFF;
	e.args.a[2] = fatbin_size;
	must(fixture_run(fx, 0, &e, NULL) == 0, "module");
	e = sqe_of(MEARAS_OP_FUNC_GET);
	e.args.a[0] = FUZZ_MODULE;
	e.args.a[1] = FUZZ_FUNC_THREE;
	e.payload_len = sizeof("k_three");
	memcpy(e.inline_payload, "k_three", sizeof("k_three"));
	must(fixture_run(fx, 0, &e, NULL) == 0, "func");
	e.args.a[1] = FUZZ_FUNC_NONE;
	e.payload_len = sizeof("k_none");
	memcpy(e.inline_payload, "k_none", sizeof("k_none"));
	must(fixture_run(fx, 0, &e, NULL) == 0, "func");
	e = sqe_of(MEARAS_OP_GLOBAL_GET);
	e.args.a[0] = FUZZ_MODULE;
	e.args.a[1] = 64;
	e.payload_len = sizeof("g_counter");
	memcpy(e.inline_payload, "g_counter", sizeof("g_counter"));
	must(fixture_run(fx, 0, &e, val) == 0, "global");
	tags[FUZZ_TAG_GLOBAL] = val[0];
	tags[FUZZ_TAG_FATBIN_SIZE] = fatbin_size;
}

/* Completions posted in every slot of vGPU vg, drained. */
static unsigned drain_cqs(struct fixture *fx, unsigned vg)
{
	struct mearas_cqe c;
	unsigned n = 0;

	/* host-function requests are not completions: a graph launch posts one
	 * per host function it holds */
	for (unsigned t = 0; t < MEARAS_MAX_THREADS; t++)
		while (fixture_cq_pop(fx, vg, t, &c))
			n += !(c.flags & MEARAS_CQE_HOST_FUNC);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fixture fx;
	uint32_t arena_len;

	if (size < 4)
		return 0;
	memcpy(&arena_len, data, 4);
	data += 4;
	size -= 4;
	if (arena_len > size)
		arena_len = (uint32_t)size;
	if (arena_len > MEARAS_ARENA_SIZE)
		arena_len = MEARAS_ARENA_SIZE;
	setup(&fx);
	memcpy(fx.w->vgpus[0].rings.arena, data, arena_len);
	memcpy(fx.w->vgpus[1].rings.arena, data, arena_len);
	memcpy(fx.w->data, data, arena_len);
	data += arena_len;
	size -= arena_len;
	for (; size >= sizeof(struct mearas_sqe); data += sizeof(struct mearas_sqe), size -= sizeof(struct mearas_sqe)) {
		struct mearas_sqe e;
		unsigned vg, posted;
		bool want;

		memcpy(&e, data, sizeof(e));
		/* the low bit of reserved picks the vGPU */
		vg = e.reserved & 1;
		for (int i = 0; i < 7; i++) {
			uint64_t tag = e.args.a[i] >> FUZZ_TAG_SHIFT;

			if (tags[tag])
				e.args.a[i] = tags[tag] + (e.args.a[i] & 0xffffffffull);
		}
		want = (e.flags & MEARAS_SQE_WANT_CQE) != 0;
		exec_record(&fx.w->vgpus[vg], &e);
		if (fx.w->broken)
			break;  /* the poller stops serving such a client */
		posted = drain_cqs(&fx, vg);
		if (posted > (want ? 1u : 0u))
			die("more completions than records asking for one");
		if (want && posted == 0)
			die("a record asking for a completion got none");
		if (fx.w->vgpus[vg].heap.used > QUOTA)
			die("heap beyond its quota");
	}
	fixture_destroy(&fx);
	return 0;
}
