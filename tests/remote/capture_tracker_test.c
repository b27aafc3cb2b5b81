// SPDX-License-Identifier: MIT
/* The serving node's stream-capture tracker (host-backend/remote/capture.c):
 * copies on capturing streams (and streams joined by an event) are kept with
 * the capture, reach the graph's executable graphs, and come back at launch.
 * Also the link's memory budget as the capture tracker and the mapped-range
 * shadows (host-backend/remote/mapped.c) take from it: refused past it, given back. */
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "remote/budget.h"
#include "remote/capture.h"
#include "remote/mapped.h"
#include "remote/messages.h"

static int failed;

#define EXPECT(cond)                                                          \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failed++;                                             \
		}                                                             \
	} while (0)

static struct mearas_sqe rec(unsigned op, uint32_t stream, uint64_t a0, uint64_t a1)
{
	struct mearas_sqe e = { .op = (uint16_t)op, .stream = stream };

	e.args.a[0] = a0;
	e.args.a[1] = a1;
	return e;
}

/* true when a copy on this stream is taken by a capture */
static bool captured(struct remote_captures *c, uint32_t stream, uint64_t off)
{
	struct mearas_sqe e = rec(MEARAS_OP_MEMCPY, stream, off, 0);
	struct mearas_span r = { .off = off, .width = 16, .pitch = 16, .rows = 1 };
	bool ok = false, taken = remote_captures_take_copy(c, &e, &r, &ok);

	EXPECT(ok);
	return taken;
}

static uint32_t launch(struct remote_captures *c, uint64_t exec, uint64_t *first_off)
{
	struct mearas_sqe e = rec(MEARAS_OP_GRAPH_LAUNCH, 7, exec, 0);
	struct mearas_span *r = NULL;
	uint32_t n = 99;

	EXPECT(remote_captures_launch_ranges(c, &e, &r, &n));
	if (n && first_off)
		*first_off = r[0].off;
	free(r);
	return n;
}

static void note(struct remote_captures *c, unsigned op, uint32_t stream, uint64_t a0, uint64_t a1)
{
	struct mearas_sqe e = rec(op, stream, a0, a1);

	EXPECT(remote_captures_note(c, &e));
}

int main(void)
{
	struct remote_captures *c = remote_captures_new();
	struct mearas_sqe per_thread = rec(MEARAS_OP_CAPTURE_BEGIN, 0, 0, 0);
	uint64_t off = 0;

	EXPECT(c != NULL);
	EXPECT(!captured(c, 5, 100));
	note(c, MEARAS_OP_CAPTURE_BEGIN, 5, 0, 0);
	EXPECT(captured(c, 5, 100));
	EXPECT(!captured(c, 6, 200));
	/* stream 6 joins through an event recorded in the capture */
	note(c, MEARAS_OP_EVENT_RECORD, 5, 11, 0);
	note(c, MEARAS_OP_STREAM_WAIT_EVENT, 6, 11, 0);
	EXPECT(captured(c, 6, 300));
	note(c, MEARAS_OP_CAPTURE_END, 5, 9, 0);
	EXPECT(!captured(c, 5, 400));
	EXPECT(!captured(c, 6, 500));
	note(c, MEARAS_OP_GRAPH_INSTANTIATE, 0, 9, 3);
	EXPECT(launch(c, 3, &off) == 2 && off == 100);
	EXPECT(launch(c, 4, NULL) == 0);
	/* a clone takes the graph's copies and keeps them when the graph goes */
	note(c, MEARAS_OP_GRAPH_CLONE, 0, 9, 12);
	note(c, MEARAS_OP_GRAPH_CLONE, 0, 12, 12); /* an id in use: the device refuses it, nothing changes */
	note(c, MEARAS_OP_GRAPH_DESTROY, 0, 9, 0);
	note(c, MEARAS_OP_GRAPH_INSTANTIATE, 0, 12, 13);
	EXPECT(launch(c, 13, &off) == 2 && off == 100);
	note(c, MEARAS_OP_GRAPH_CLONE, 0, 9, 14); /* graph 9 is gone: its clone sends nothing */
	note(c, MEARAS_OP_GRAPH_INSTANTIATE, 0, 14, 15);
	EXPECT(launch(c, 15, NULL) == 0);
	EXPECT(launch(c, 3, NULL) == 2); /* the executable graph keeps its copies */
	note(c, MEARAS_OP_GRAPH_INSTANTIATE, 0, 9, 5); /* graph 9 is gone: nothing to send */
	EXPECT(launch(c, 5, NULL) == 0);
	note(c, MEARAS_OP_GRAPH_EXEC_DESTROY, 0, 3, 0);
	EXPECT(launch(c, 3, NULL) == 0);
	/* a capture without copies: its graph sends nothing */
	note(c, MEARAS_OP_CAPTURE_BEGIN, 5, 0, 0);
	note(c, MEARAS_OP_CAPTURE_END, 5, 10, 0);
	note(c, MEARAS_OP_GRAPH_INSTANTIATE, 0, 10, 6);
	EXPECT(launch(c, 6, NULL) == 0);
	/* a begin the device refused: the stream is not capturing */
	note(c, MEARAS_OP_CAPTURE_BEGIN, 8, 0, 0);
	EXPECT(captured(c, 8, 600));
	remote_captures_begin_failed(c, remote_stream_key(&(struct mearas_sqe){ .stream = 8 }));
	EXPECT(!captured(c, 8, 700));
	/* per-thread default streams of two slots are different streams */
	per_thread.flags = MEARAS_SQE_PER_THREAD;
	per_thread.cq = 1;
	EXPECT(remote_captures_note(c, &per_thread));
	{
		struct mearas_sqe cp = rec(MEARAS_OP_MEMCPY, 0, 0, 0);
		struct mearas_span r = { .width = 1, .pitch = 1, .rows = 1 };
		bool ok;

		cp.flags = MEARAS_SQE_PER_THREAD;
		cp.cq = 1;
		EXPECT(remote_captures_take_copy(c, &cp, &r, &ok));
		cp.cq = 2;
		EXPECT(!remote_captures_take_copy(c, &cp, &r, &ok));
	}
	remote_captures_free(c);
	/* no tracker (a device without graphs): nothing is ever captured */
	{
		struct mearas_sqe b = rec(MEARAS_OP_CAPTURE_BEGIN, 5, 0, 0);
		struct mearas_span r = { .width = 1, .pitch = 1, .rows = 1 }, *out = NULL;
		uint32_t n = 1;
		bool ok;

		EXPECT(remote_captures_note(NULL, &b));
		EXPECT(!remote_captures_take_copy(NULL, &b, &r, &ok));
		b.op = MEARAS_OP_GRAPH_LAUNCH;
		EXPECT(remote_captures_launch_ranges(NULL, &b, &out, &n) && n == 0 && !out);
	}
	/* a budget of 4 KiB: a capture's copies stop fitting, nothing is lost track of */
	{
		struct remote_budget b = { .limit = 4096, .who = "test" };
		struct remote_captures *t = remote_captures_new();
		unsigned kept = 0, refused = 0;

		remote_captures_set_budget(t, &b);
		note(t, MEARAS_OP_CAPTURE_BEGIN, 5, 0, 0);
		for (unsigned i = 0; i < 1000; i++) {
			struct mearas_sqe e = rec(MEARAS_OP_MEMCPY, 5, i * 16, 0);
			struct mearas_span r = { .off = i * 16, .width = 16, .pitch = 16, .rows = 1 };
			bool ok = true;

			EXPECT(remote_captures_take_copy(t, &e, &r, &ok));
			kept += ok;
			refused += !ok;
		}
		EXPECT(kept > 0 && refused > 0 && b.used <= b.limit);
		remote_captures_free(t);
		EXPECT(b.used == 0);
	}
	/* mapped-range shadows: 1 MiB (and a table) fits, a third range of 512 KiB does not */
	{
		struct remote_budget b = { .limit = (1u << 20) + 4096, .who = "test" };
		struct remote_mapped *m = remote_mapped_new();
		uint8_t *base = calloc(1, 2u << 20);

		remote_mapped_set_budget(m, &b);
		EXPECT(base && remote_mapped_set(m, base, 0, 512u << 10, true));
		EXPECT(remote_mapped_set(m, base, 4096, 512u << 10, true));
		EXPECT(!remote_mapped_set(m, base, 8192, 512u << 10, true));
		EXPECT(b.used <= b.limit);
		/* unmapped, its shadow is freed and given back */
		EXPECT(remote_mapped_set(m, base, 0, 512u << 10, false));
		EXPECT(remote_mapped_set(m, base, 8192, 512u << 10, true));
		remote_mapped_free(m);
		EXPECT(b.used == 0);
		free(base);
	}
	printf("capture tracker: %s\n", failed ? "FAILED" : "all checks passed");
	return failed ? 1 : 0;
}
