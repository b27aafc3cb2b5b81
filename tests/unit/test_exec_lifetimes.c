// SPDX-License-Identifier: MIT
/* exec_record(): records a hostile client controls that used to outlive,
 * overrun or pile up what they refer to (run under ASan: a use after free
 * or a leak fails the test):
 *   2d_wrapping          2D copies/memsets whose span wraps 2^64: refused
 *   refusals_rate_limited a flood of refused records: a few log lines a second
 *   host_func_graph      a host function captured in a graph: one request per
 *                        launch, freed with the graph and its instantiations
 *   event_sync_destroy   EVENT_SYNC outlives EVENT_DESTROY of its event
 *   event_sync_reset     EVENT_SYNC outlives a reset that destroys its event
 *   func_get             FUNC_GET records freed with their module, bounded
 *   pending_bounded      completions behind a stream that never finishes
 *   capture_fork_join    a stream joins a capture by waiting for an event
 *                        recorded in it (sim): its work goes into the graph,
 *                        only the first stream ends it, and the event and
 *                        stream that hold the graph go first
 *   capture_origin_destroyed the stream that began a capture is destroyed
 *                        mid-capture: the capture is over, so a later
 *                        stream (even one at the freed stream's address)
 *                        can neither join nor end it and run host
 *                        functions freed meanwhile
 *   host_funcs_queued_bounded host functions behind a stream that never
 *                        finishes: refused past a limit, not piled up
 *   graph_nodes_bounded  records captured without end, and instantiations:
 *                        refused past the vGPU's graph node limit, counted
 *                        again once graphs go
 *   inline_copy_capture  a copy with its bytes in the record (pageable host
 *                        memory) into a capture: refused, as CUDA does, not
 *                        captured with an address its graph would read later
 * (`test_exec_lifetimes NAME` runs one) */
#include <fcntl.h>
#include <unistd.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "../security/ptx_fatbin.h"
#include "check.h"
#include "sqe_build.h"
#include "core/ranges.h"
#include "mearas/clock.h"
#include "fixture_cases.h"
#include "mearas/log.h"

static uint64_t dev;            /* 1 MiB on vGPU 0 */
#define SPIN_FN 600             /* mearas_sim_spin(ms), module 60 */

/* The record wants a completion on slot 1 (slot 0 gets host functions' requests) */
static int call(struct mearas_sqe *e, uint64_t val[2])
{
	return fixture_call(&fx, 0, 1, e, val);
}

static int op(unsigned opc, uint32_t stream, uint64_t a0, uint64_t a1, uint64_t a2)
{
	return FIXTURE_OP_ON(1, opc, stream, a0, a1, a2);
}

/* Loads a PTX fat binary with kernel `name` (nparams u32s) as module mod. */
static void load_ptx(uint64_t mod, const char *name, unsigned nparams)
{
	size_t n = ptx_fatbin(fx.w->data + (1 << 20), 4u << 20, name, nparams);

	REQUIRE(n > 0);
	CHECK_EQ(op(MEARAS_OP_MODULE_LOAD, 0, mod, 1 << 20, n), 0);
}

static int func_get(uint64_t mod, uint64_t id, const char *name)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_FUNC_GET);

	e.args.a[0] = mod;
	e.args.a[1] = id;
	e.payload_len = (uint32_t)strlen(name) + 1;
	memcpy(e.inline_payload, name, e.payload_len);
	return call(&e, NULL);
}

/* mearas_sim_spin(ms) on stream, posted (no completion) */
static void spin(uint64_t func, uint32_t stream, uint32_t ms)
{
	struct mearas_sqe e = sqe_launch_u32(func, stream, ms);

	exec_record(&fx.w->vgpus[0], &e);
	CHECK_EQ(fx.w->vgpus[0].deferred_error, 0);
}

/* Submits a record wanting a completion on slot without waiting for it. */
static void post_want(struct mearas_sqe *e, unsigned slot, uint64_t ud)
{
	e->flags |= MEARAS_SQE_WANT_CQE;
	e->cq = (uint16_t)slot;
	e->user_data = ud;
	exec_record(&fx.w->vgpus[0], e);
}

/* Posts an EVENT_SYNC of event ev, its completion wanted on slot (see post_want). */
static void post_event_sync(uint32_t ev, unsigned slot, uint64_t ud)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_EVENT_SYNC);

	e.args.a[0] = ev;
	post_want(&e, slot, ud);
}

/* Polls pending completions until slot has one (at most 5 s). */
static struct mearas_cqe wait_slot(unsigned slot)
{
	struct mearas_cqe c;

	for (int i = 0; i < 5000 && !fixture_cq_ready(&fx, 0, slot); i++) {
		exec_poll_pending(&fx.w->vgpus[0]);
		usleep(1000);
	}
	CHECK(fixture_cq_pop(&fx, 0, slot, &c));
	return c;
}

static void test_2d_wrapping(void)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_MEMCPY_2D);
	uint64_t span, big = fixture_alloc(&fx, 0, 1ull << 30);

	/* the helper itself */
	CHECK(range_2d_span(32, 64, 3, &span) && span == 160);
	CHECK(!range_2d_span(32, 1ull << 40, (1ull << 24) + 1, &span));
	CHECK(!range_2d_span(32, 0x8000000000000000ull, 3, &span));
	CHECK(!range_2d_span(32, UINT64_MAX, 2, &span));
	CHECK(!range_2d_span(65, 64, 1, &span));
	CHECK(!range_2d_span(0, 64, 1, &span));
	/* device rows 2^40 apart read to the data area: 2^40 * 2^24 wraps to 0 */
	e.args.a[0] = 0;
	e.args.a[1] = 32;
	e.args.a[2] = dev;
	e.args.a[3] = 1ull << 40;
	e.args.a[4] = 32;
	e.args.a[5] = (1ull << 24) + 1;
	e.args.a[6] = MEARAS_COPY_DTOH;
	CHECK_EQ(call(&e, NULL), cudaErrorInvalidValue);
	/* host rows 2^40 apart written from a device range that is all the
	 * client's: only the host span wraps (a crash of the worker before) */
	e.args.a[0] = 0;
	e.args.a[1] = 1ull << 40;
	e.args.a[2] = big;
	e.args.a[3] = 32;
	CHECK_EQ(call(&e, NULL), cudaErrorInvalidValue);
	/* host rows 2^40 apart, outside the data area */
	e.args.a[0] = dev;
	e.args.a[3] = 1ull << 40;
	e.args.a[1] = 1ull << 40;
	e.args.a[2] = 0;
	e.args.a[6] = MEARAS_COPY_HTOD;
	CHECK_EQ(call(&e, NULL), cudaErrorInvalidValue);
	e = sqe_of(MEARAS_OP_MEMSET_2D);
	e.args.a[0] = dev;
	e.args.a[1] = 1ull << 40;
	e.args.a[2] = 0x41;
	e.args.a[3] = 32;
	e.args.a[4] = (1ull << 24) + 1;
	CHECK_EQ(call(&e, NULL), cudaErrorInvalidValue);
	/* a 2D copy that fits still works */
	e = sqe_of(MEARAS_OP_MEMCPY_2D);
	e.args.a[0] = 0;
	e.args.a[1] = 64;
	e.args.a[2] = dev;
	e.args.a[3] = 64;
	e.args.a[4] = 32;
	e.args.a[5] = 4;
	e.args.a[6] = MEARAS_COPY_DTOH;
	CHECK_EQ(call(&e, NULL), 0);
	CHECK(big != 0);
	e = sqe_of(MEARAS_OP_MEM_FREE);
	e.args.a[0] = big;
	CHECK_EQ(call(&e, NULL), 0);
}

static void test_refusals_rate_limited(void)
{
	char path[] = "/tmp/mearas-unit-log.XXXXXX", buf[65536];
	int fd = mkstemp(path), lines = 0;
	ssize_t n;

	REQUIRE(fd >= 0);
	unlink(path);
	mearas_log_set_fd(fd);
	for (int i = 0; i < 2000; i++) {
		struct mearas_sqe e = sqe_of(MEARAS_OP_MEMSET_2D);

		e.args.a[0] = dev;
		e.args.a[1] = 1ull << 40;
		e.args.a[3] = 32;
		e.args.a[4] = (1ull << 24) + 1;
		CHECK_EQ(call(&e, NULL), cudaErrorInvalidValue);
	}
	mearas_log_set_fd(STDERR_FILENO);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	CHECK(n > 0);
	buf[n] = 0;
	for (char *p = buf; (p = strstr(p, "2D memset refused")); p++)
		lines++;
	close(fd);
	printf("  2000 refused records, %d log lines\n", lines);
	CHECK(lines >= 1 && lines <= 40);
}

/* A host function (its first argument TAG) recorded on STREAM, which is
 * capturing: accepted, and not run (nothing asked of the client); the record
 * is handed back for more. */
static struct mearas_sqe host_func_captured(struct vgpu *v, uint32_t stream, uint64_t tag)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_HOST_FUNC);

	e.stream = stream;
	e.args.a[0] = tag;
	exec_record(v, &e);
	CHECK_EQ(v->deferred_error, 0);
	CHECK_EQ(fixture_cq_ready(&fx, 0, 0), 0);
	return e;
}

static void test_host_func_graph(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_sqe e;
	uint64_t last = 0, runs[6];
	struct mearas_cqe c;

	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 20, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 20, 0, 0, 0), 0);
	e = host_func_captured(v, 20, 77);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 20, 30, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_INSTANTIATE, 0, 30, 31, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_INSTANTIATE, 0, 30, 32, 0), 0);
	/* the graph goes first: its instantiations keep the host function */
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 30, 0, 0), 0);
	for (int i = 0; i < 6; i++) {
		CHECK_EQ(op(MEARAS_OP_GRAPH_LAUNCH, 20, i < 3 ? 31 : 32, 0, 0), 0);
		/* each launch asks the client once, with a fresh run number */
		CHECK_EQ(fixture_cq_ready(&fx, 0, 0), 1);
		CHECK(fixture_cq_pop(&fx, 0, 0, &c));
		CHECK(c.flags & MEARAS_CQE_HOST_FUNC);
		CHECK_EQ(c.val[0], 77);
		runs[i] = c.user_data;
	}
	for (int i = 0; i < 6; i++) {
		CHECK(runs[i] > last);
		last = runs[i];
	}
	CHECK_EQ(v->hf_ncaptured, 1);
	CHECK_EQ(op(MEARAS_OP_GRAPH_EXEC_DESTROY, 0, 31, 0, 0), 0);
	CHECK_EQ(v->hf_ncaptured, 1);
	CHECK_EQ(op(MEARAS_OP_GRAPH_LAUNCH, 20, 32, 0, 0), 0);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c) && c.val[0] == 77);
	CHECK_EQ(op(MEARAS_OP_GRAPH_EXEC_DESTROY, 0, 32, 0, 0), 0);
	CHECK_EQ(v->hf_ncaptured, 0);                   /* freed with the last holder */
	/* a graph never instantiated frees them when destroyed */
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 20, 0, 0, 0), 0);
	exec_record(v, &e);
	CHECK_EQ(v->hf_ncaptured, 1);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 20, 0, 0, 0), cudaErrorInvalidValue); /* bad graph id */
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 20, 33, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 33, 0, 0), 0);
	CHECK_EQ(v->hf_ncaptured, 0);
	/* a capture that fails frees what it captured, once nothing captures */
	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 24, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 24, 0, 0, 0), 0);
	e.stream = 24;
	exec_record(v, &e);
	e.stream = 20;
	CHECK_EQ(v->hf_ncaptured, 1);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 24, 0, 0), 0);     /* its capture is gone */
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 20, 0, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 20, 34, 0, 0), 0);
	CHECK_EQ(v->hf_ncaptured, 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 34, 0, 0), 0);
	/* not captured: runs once at once */
	exec_record(v, &e);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c) && c.val[0] == 77);
	CHECK_EQ(v->hf_ncaptured, 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 20, 0, 0), 0);
}

/* A clone of a captured graph runs its host functions too, and holds them
 * after the original is gone; they go with the last holder. */
static void test_host_func_graph_clone(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_cqe c;

	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 20, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 20, 0, 0, 0), 0);
	host_func_captured(v, 20, 78);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 20, 30, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_CLONE, 0, 30, 30, 0), cudaErrorInvalidValue); /* an id in use */
	CHECK_EQ(op(MEARAS_OP_GRAPH_CLONE, 0, 39, 35, 0), cudaErrorInvalidResourceHandle);
	CHECK_EQ(op(MEARAS_OP_GRAPH_CLONE, 0, 30, 35, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 30, 0, 0), 0);
	CHECK_EQ(v->hf_ncaptured, 1);
	CHECK_EQ(op(MEARAS_OP_GRAPH_INSTANTIATE, 0, 35, 36, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 35, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_LAUNCH, 20, 36, 0, 0), 0);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c) && (c.flags & MEARAS_CQE_HOST_FUNC) && c.val[0] == 78);
	CHECK_EQ(v->hf_ncaptured, 1);
	CHECK_EQ(op(MEARAS_OP_GRAPH_EXEC_DESTROY, 0, 36, 0, 0), 0);
	CHECK_EQ(v->hf_ncaptured, 0);
	CHECK_EQ(v->graph_nodes, 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 20, 0, 0), 0);
}

static void test_event_sync_destroy(void)
{
	struct mearas_cqe c;

	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 21, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_CREATE, 0, 40, 0, 0), 0);
	spin(SPIN_FN, 21, 200);
	CHECK_EQ(op(MEARAS_OP_EVENT_RECORD, 21, 40, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_QUERY, 0, 40, 0, 0), cudaErrorNotReady);
	post_event_sync(40, 2, 4242);
	CHECK_EQ(fixture_cq_ready(&fx, 0, 2), 0);       /* waits on the device */
	/* another thread of the client destroys the event meanwhile */
	CHECK_EQ(op(MEARAS_OP_EVENT_DESTROY, 0, 40, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_QUERY, 0, 40, 0, 0), cudaErrorInvalidResourceHandle);
	c = wait_slot(2);
	CHECK_EQ(c.user_data, 4242);
	CHECK_EQ(c.status, 0);
	CHECK(fx.w->vgpus[0].holds == NULL);            /* the event is gone now */
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 21, 0, 0), 0);
}

static void test_event_sync_reset(void)
{
	struct mearas_sqe e;
	struct mearas_cqe c;

	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 22, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_CREATE, 0, 41, 0, 0), 0);
	spin(SPIN_FN, 22, 50);
	e = sqe_of(MEARAS_OP_DEVICE_RESET);
	post_want(&e, 3, 1);
	/* after the reset record, before it is done: work it will not wait for */
	spin(SPIN_FN, 22, 300);
	CHECK_EQ(op(MEARAS_OP_EVENT_RECORD, 22, 41, 0, 0), 0);
	post_event_sync(41, 2, 4343);
	c = wait_slot(3);                               /* the reset destroys event 41 */
	CHECK_EQ(c.status, 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_QUERY, 0, 41, 0, 0), cudaErrorInvalidResourceHandle);
	c = wait_slot(2);                               /* and the wait on it still ends well */
	CHECK_EQ(c.user_data, 4343);
	CHECK_EQ(c.status, 0);
	CHECK(fx.w->vgpus[0].holds == NULL);
}

static void test_func_get(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	uint64_t id, base = v->func_bytes;     /* the spin kernel's record */
	int r = 0;

	/* lookups and unloads, again and again: every record is freed (ASan
	 * counts leaks), the module's functions die with it */
	for (int round = 0; round < 3; round++) {
		load_ptx(50, "k_small", 3);
		for (id = 1; id <= 200; id++)
			CHECK_EQ(func_get(50, id, "k_small"), 0);
		CHECK_EQ(op(MEARAS_OP_MODULE_UNLOAD, 0, 50, 0, 0), 0);
		CHECK_EQ(v->func_bytes, base);
		CHECK_EQ(op(MEARAS_OP_FUNC_ATTRS, 0, 1, 0, 0), cudaErrorInvalidDeviceFunction);
	}
	/* kernels with many parameters cost more: the records are bounded */
	load_ptx(51, "k_wide", 4000);
	for (id = 1000; id < MEARAS_MAX_HANDLES && !r; id++)
		r = func_get(51, id, "k_wide");
	CHECK_EQ(r, cudaErrorMemoryAllocation);
	CHECK(v->func_bytes <= MEARAS_MAX_FUNC_BYTES);
	CHECK(id > 2000);
	CHECK_EQ(op(MEARAS_OP_FUNC_ATTRS, 0, id - 1, 0, 0), cudaErrorInvalidDeviceFunction); /* refused: no entry */
	CHECK_EQ(op(MEARAS_OP_FUNC_ATTRS, 0, id - 2, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_MODULE_UNLOAD, 0, 51, 0, 0), 0);
	CHECK_EQ(v->func_bytes, base);
	load_ptx(52, "k_wide", 4000);
	CHECK_EQ(func_get(52, 1, "k_wide"), 0);         /* room again */
	/* the last ones die with the vGPU (teardown), counted by ASan */
}

static void test_pending_bounded(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_sqe e;

	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 23, 0, 0), 0);
	spin(SPIN_FN, 23, 600000);                      /* a stream that does not finish */
	for (unsigned i = 0; i < MEARAS_MAX_PENDING + 100; i++) {
		e = sqe_of(MEARAS_OP_MEM_FREE_ASYNC);
		e.stream = 23;
		e.args.a[0] = dev;
		exec_record(v, &e);
	}
	CHECK_EQ(v->npend, MEARAS_MAX_PENDING);
	CHECK_EQ(v->deferred_error, cudaErrorMemoryAllocation);
	v->deferred_error = 0;
	/* a synchronizing call on it fails at once instead of queueing */
	CHECK_EQ(op(MEARAS_OP_STREAM_SYNC, 23, 0, 0, 0), cudaErrorMemoryAllocation);
	CHECK_EQ(v->npend, MEARAS_MAX_PENDING);
	/* records that add none still run */
	CHECK_EQ(op(MEARAS_OP_EVENT_CREATE, 0, 42, 0, 0), 0);
	/* the client goes away: everything pending is dropped, fences freed */
	exec_drop_pending(v);
	CHECK_EQ(v->npend, 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_SYNC, 0, 0, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 23, 0, 0), 0);
}

/* A synchronization's fence is a completion flag, which the device writes
 * only once the stream's work before it is done. */
static void test_flag_fence_waits_for_work(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_sqe e = sqe_of(MEARAS_OP_STREAM_SYNC);
	uint64_t t0 = mearas_mono_ns();
	struct mearas_cqe c;

	spin(SPIN_FN, 0, 60);
	post_want(&e, 1, 7);
	CHECK_EQ(v->npend, 1);
	CHECK(v->pend[0].flag != 0);
	for (int i = 0; i < 20; i++) {
		exec_poll_pending(v);
		usleep(1000);
	}
	CHECK(!fixture_cq_ready(&fx, 0, 1) || mearas_mono_ns() - t0 >= 60000000ull);
	c = wait_slot(1);
	CHECK_EQ(c.user_data, 7);
	CHECK_EQ(c.status, 0);
	CHECK(mearas_mono_ns() - t0 >= 60000000ull);
	CHECK_EQ(v->nflag_free, MEARAS_FLAG_SLOTS);
}

static int capture_status(uint32_t stream, uint64_t *status)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_CAPTURE_STATUS);
	uint64_t val[2] = { 99, 99 };
	int r;

	e.stream = stream;
	r = call(&e, val);
	*status = val[0];
	return r;
}

static void test_capture_fork_join(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct mearas_cqe c;
	uint64_t st;

	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 25, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 26, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_CREATE, 0, 43, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_CREATE, 0, 44, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 25, 0, 0, 0), 0);
	CHECK_EQ(capture_status(26, &st), 0);
	CHECK_EQ(st, cudaStreamCaptureStatusNone);
	/* the fork: 26 waits for an event recorded in 25's capture */
	CHECK_EQ(op(MEARAS_OP_EVENT_RECORD, 25, 43, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_WAIT_EVENT, 26, 43, 0, 0), 0);
	CHECK_EQ(capture_status(26, &st), 0);
	CHECK_EQ(st, cudaStreamCaptureStatusActive);
	host_func_captured(v, 26, 78);
	CHECK_EQ(v->hf_ncaptured, 1);
	/* the join, then the end: on the stream that began it only */
	CHECK_EQ(op(MEARAS_OP_EVENT_RECORD, 26, 44, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_WAIT_EVENT, 25, 44, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 26, 35, 0, 0), cudaErrorStreamCaptureUnmatched);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 25, 35, 0, 0), 0);
	CHECK_EQ(capture_status(26, &st), 0);
	CHECK_EQ(st, cudaStreamCaptureStatusNone);      /* over for the joined stream too */
	/* what holds the graph goes first: the event, the joined stream, the graph */
	CHECK_EQ(op(MEARAS_OP_EVENT_DESTROY, 0, 43, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 26, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_INSTANTIATE, 0, 35, 36, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 35, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_LAUNCH, 25, 36, 0, 0), 0);
	CHECK(fixture_cq_pop(&fx, 0, 0, &c) && c.val[0] == 78);
	CHECK_EQ(op(MEARAS_OP_GRAPH_EXEC_DESTROY, 0, 36, 0, 0), 0);
	CHECK_EQ(v->hf_ncaptured, 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_DESTROY, 0, 44, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 25, 0, 0), 0);
}

static void test_capture_origin_destroyed(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	struct handle_table *streams = &v->htab[MEARAS_KIND_STREAM];
	char path[] = "/tmp/mearas-unit-log.XXXXXX", buf[65536];
	int fd = mkstemp(path);
	void *origin;
	uint64_t st;
	ssize_t n;

	REQUIRE(fd >= 0);
	unlink(path);
	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 27, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 28, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_CREATE, 0, 45, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 27, 0, 0, 0), 0);
	/* the event keeps the capture's graph; a host function goes into it */
	CHECK_EQ(op(MEARAS_OP_EVENT_RECORD, 27, 45, 0, 0), 0);
	host_func_captured(v, 27, 79);
	CHECK_EQ(v->hf_ncaptured, 1);
	origin = streams->slots[27].obj;
	/* as a hostile client would: streams destroyed first so that the
	 * allocator hands the origin's address to the next new stream (glibc:
	 * its thread cache full, the origin's block is the next one calloc takes) */
	for (uint64_t id = 50; id < 58; id++)
		CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, id, 0, 0), 0);
	for (uint64_t id = 50; id < 58; id++)
		CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, id, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 27, 0, 0), 0);
	/* a new stream, which the allocator may place where the destroyed one was */
	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 29, 0, 0), 0);
	printf("  new stream %s the destroyed origin's address\n", streams->slots[29].obj == origin ? "at" : "not at");
	/* nothing captures: the next capture's end frees the host function */
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 28, 0, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 28, 37, 0, 0), 0);
	CHECK_EQ(v->hf_ncaptured, 0);
	/* the new stream waits for the event recorded in the abandoned capture */
	CHECK_EQ(op(MEARAS_OP_STREAM_WAIT_EVENT, 29, 45, 0, 0), 0);
	CHECK_EQ(capture_status(29, &st), 0);
	CHECK_EQ(st, cudaStreamCaptureStatusNone);
	mearas_log_set_fd(fd);
	CHECK(op(MEARAS_OP_CAPTURE_END, 29, 38, 0, 0) != 0);
	mearas_log_set_fd(STDERR_FILENO);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	CHECK(strstr(buf, "capture end") != NULL);
	/* had it ended, its graph would run the freed host function */
	REQUIRE(op(MEARAS_OP_GRAPH_INSTANTIATE, 0, 38, 39, 0) == cudaErrorInvalidResourceHandle);
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 37, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_EVENT_DESTROY, 0, 45, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 29, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 28, 0, 0), 0);
}

static void test_host_funcs_queued_bounded(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	char path[] = "/tmp/mearas-unit-log.XXXXXX", buf[65536];
	struct mearas_sqe e = sqe_of(MEARAS_OP_HOST_FUNC);
	int fd = mkstemp(path), r;
	unsigned accepted = 0;
	ssize_t n;

	REQUIRE(fd >= 0);
	unlink(path);
	load_ptx(61, "mearas_sim_hang", 1);
	REQUIRE(func_get(61, 601, "mearas_sim_hang") == 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 30, 0, 0), 0);
	spin(601, 30, 0);                       /* stream 30 never finishes */
	e.stream = 30;
	e.args.a[0] = 80;
#ifdef __SANITIZE_ADDRESS__
	__lsan_disable(); /* requests that never run go with the process (the model's, a GPU's) */
#endif
	mearas_log_set_fd(fd);
	while (accepted <= MEARAS_MAX_QUEUED_HOST_FUNCS && (r = call(&e, NULL)) == 0)
		accepted++;
	mearas_log_set_fd(STDERR_FILENO);
#ifdef __SANITIZE_ADDRESS__
	__lsan_enable();
#endif
	printf("  %u host functions queued behind a hung stream, the next one: %d\n", accepted, r);
	CHECK_EQ(accepted, MEARAS_MAX_QUEUED_HOST_FUNCS);
	CHECK_EQ(r, cudaErrorMemoryAllocation);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	CHECK(strstr(buf, "host function refused") != NULL);
	CHECK_EQ(fixture_cq_ready(&fx, 0, 0), 0);       /* none ran */
	/* the worker goes on */
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 30, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 31, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_SYNC, 31, 0, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 31, 0, 0), 0);
	CHECK(!v->w->broken);
}

/* A memset of 16 bytes at dev, on stream */
static struct mearas_sqe memset_on(uint32_t stream)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_MEMSET);

	e.stream = stream;
	e.args.a[0] = dev;
	e.args.a[2] = 16;
	e.args.a[3] = 1;
	return e;
}

static uint64_t node_count(uint64_t graph)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_GRAPH_NODE_COUNT);
	uint64_t val[2] = { 0 };

	e.args.a[0] = graph;
	CHECK_EQ(call(&e, val), 0);
	return val[0];
}

static void test_graph_nodes_bounded(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	char path[] = "/tmp/mearas-unit-log.XXXXXX", buf[65536];
	struct mearas_sqe e = memset_on(32);
	int fd = mkstemp(path);
	unsigned accepted = 0;
	ssize_t n;

	REQUIRE(fd >= 0);
	unlink(path);
	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 32, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 32, 0, 0, 0), 0);
	/* a capture that never ends: each record a node of its graph */
	mearas_log_set_fd(fd);
	while (accepted <= MEARAS_MAX_GRAPH_NODES) {
		exec_record(v, &e);
		if (v->deferred_error)
			break;
		accepted++;
	}
	printf("  %u records captured, the next one: %d\n", accepted, v->deferred_error);
	CHECK_EQ(accepted, MEARAS_MAX_GRAPH_NODES);
	CHECK_EQ(v->deferred_error, cudaErrorMemoryAllocation);
	v->deferred_error = 0;
	CHECK_EQ(call(&e, NULL), cudaErrorMemoryAllocation);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 32, 40, 0, 0), 0);
	CHECK_EQ(node_count(40), MEARAS_MAX_GRAPH_NODES);
	/* an instantiation would copy them: refused too */
	CHECK_EQ(op(MEARAS_OP_GRAPH_INSTANTIATE, 0, 40, 41, 0), cudaErrorMemoryAllocation);
	/* so would a clone */
	CHECK_EQ(op(MEARAS_OP_GRAPH_CLONE, 0, 40, 42, 0), cudaErrorMemoryAllocation);
	mearas_log_set_fd(STDERR_FILENO);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	CHECK(strstr(buf, "MEMSET refused") != NULL);
	CHECK(strstr(buf, "instantiation of a graph") != NULL);
	CHECK(strstr(buf, "clone of a graph") != NULL);
	/* the graph gone, its nodes count no more */
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 40, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 32, 0, 0, 0), 0);
	e = memset_on(32);                      /* posted: no completion */
	exec_record(v, &e);
	exec_record(v, &e);
	CHECK_EQ(v->deferred_error, 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 32, 40, 0, 0), 0);
	CHECK_EQ(node_count(40), 2);
	CHECK_EQ(op(MEARAS_OP_GRAPH_INSTANTIATE, 0, 40, 41, 0), 0);
	CHECK_EQ(v->graph_nodes, 4);
	CHECK_EQ(v->capture_nodes, 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_CLONE, 0, 40, 42, 0), 0);
	CHECK_EQ(v->graph_nodes, 6);
	CHECK_EQ(op(MEARAS_OP_GRAPH_LAUNCH, 32, 41, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_EXEC_DESTROY, 0, 41, 0, 0), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 40, 0, 0), 0);
	CHECK_EQ(node_count(42), 2);
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 42, 0, 0), 0);
	CHECK_EQ(v->graph_nodes, 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 32, 0, 0), 0);
	CHECK(!v->w->broken);
}

static void test_inline_copy_capture(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	char path[] = "/tmp/mearas-unit-log.XXXXXX", buf[4096];
	struct mearas_sqe e = sqe_of(MEARAS_OP_MEMCPY_INLINE);
	int fd = mkstemp(path);
	ssize_t n;

	REQUIRE(fd >= 0);
	unlink(path);
	e.stream = 34;
	e.args.a[0] = dev;
	e.payload_len = 64;
	memset(e.inline_payload, 0x3c, 64);
	CHECK_EQ(op(MEARAS_OP_STREAM_CREATE, 0, 34, 0, 0), 0);
	CHECK_EQ(call(&e, NULL), 0); /* not capturing: copied */
	CHECK_EQ(op(MEARAS_OP_CAPTURE_BEGIN, 34, 0, 0, 0), 0);
	mearas_log_set_fd(fd);
	CHECK_EQ(call(&e, NULL), cudaErrorStreamCaptureUnsupported);
	mearas_log_set_fd(STDERR_FILENO);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	CHECK(strstr(buf, "copy of 64 bytes from pageable host memory into a stream capture refused") != NULL);
	/* the legacy stream, which does not capture, still copies meanwhile */
	e.stream = MEARAS_STREAM_LEGACY;
	CHECK_EQ(call(&e, NULL), 0);
	CHECK_EQ(op(MEARAS_OP_CAPTURE_END, 34, 42, 0, 0), 0);
	CHECK_EQ(node_count(42), 0);
	CHECK_EQ(op(MEARAS_OP_GRAPH_DESTROY, 0, 42, 0, 0), 0);
	/* the capture over: copied again */
	e.stream = 34;
	CHECK_EQ(call(&e, NULL), 0);
	CHECK_EQ(op(MEARAS_OP_STREAM_DESTROY, 0, 34, 0, 0), 0);
	CHECK(!v->w->broken);
}

/* every case's worker: 1 MiB allocated and the spin kernel loaded */
static void alloc_and_load_spin(void)
{
	dev = fixture_alloc(&fx, 0, 1 << 20);
	REQUIRE(dev != 0);
	load_ptx(60, "mearas_sim_spin", 1);
	REQUIRE(func_get(60, SPIN_FN, "mearas_sim_spin") == 0);
}

static const struct check_case cases[] = {
	{ "2d_wrapping", test_2d_wrapping },
	{ "refusals_rate_limited", test_refusals_rate_limited },
	{ "host_func_graph", test_host_func_graph },
	{ "host_func_graph_clone", test_host_func_graph_clone },
	{ "event_sync_destroy", test_event_sync_destroy },
	{ "pending_bounded", test_pending_bounded },
	{ "flag_fence_waits_for_work", test_flag_fence_waits_for_work },
	{ "func_get", test_func_get },
	{ "event_sync_reset", test_event_sync_reset },
	{ "capture_fork_join", test_capture_fork_join },
	{ "capture_origin_destroyed", test_capture_origin_destroyed },
	{ "host_funcs_queued_bounded", test_host_funcs_queued_bounded },
	{ "graph_nodes_bounded", test_graph_nodes_bounded },
	{ "inline_copy_capture", test_inline_copy_capture },
};
FIXTURE_MAIN(cases, 1, 0, alloc_and_load_spin)
