// SPDX-License-Identifier: MIT
/*
 * Execution of records: each record (already copied out of the ring) is
 * decoded and validated from its op's spec (build/gen/exec_ops.gen.c) and
 * run by its handler (exec_memory.c, exec_module.c, exec_stream.c,
 * exec_graph.c); a bad record gets an error completion (or a deferred error
 * for records without one), never a crash. This file dispatches, keeps the
 * completions that wait on the device, posts completions, and tears a vGPU
 * down.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/vgpustats.h"
#include "deferred.h"
#include "exec_internal.h"
#include "mearas/clock.h"
#include "mearas/hoptrace.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "output.h"
#include "watchdog.h"

#define KNOWN_SQE_FLAGS (MEARAS_SQE_WANT_CQE | MEARAS_SQE_PAYLOAD_ARENA | MEARAS_SQE_PER_THREAD)

/* ---- completions ---- */

/* Host-side cost of one synchronizing call, for the VM worker's report, and
 * its op for the client's (the calls a program waits for, by op). */
static void account_sync(struct vgpu *v, uint64_t fetched_ns, unsigned op)
{
	uint64_t ns = mearas_mono_ns() - fetched_ns;

	if (op < MEARAS_OP_COUNT)
		v->sync_by_op[op]++;
	v->sync_calls++;
	v->sync_ns += ns;
	vstat_sync_done(v->stats, ns);
}

/* Posts c to thread slot cq; with seq, c's user_data becomes the vGPU's next
 * host-function run number (*seq), taken under the same lock so that runs
 * reach the client in the order of their numbers. */
bool exec_post_cqe_seq(struct vgpu *v, uint16_t cq, struct mearas_cqe *c, uint64_t *seq)
{
	struct mearas_ring_ctl *ctl;
	bool ok;

	if (cq >= v->w->nthreads)
		return false;
	ctl = v->cq[cq].ctl;
	pthread_mutex_lock(&v->cq_lock);
	if (seq)
		c->user_data = ++v->hf_seq;
	ok = mearas_cqp_push(&v->cq[cq], c);
	if (!ok && seq)
		v->hf_seq--; /* not posted: the number is not used */
	else if (seq)
		*seq = c->user_data;
	pthread_mutex_unlock(&v->cq_lock);
	if (!ok)
		return false;
	mearas_hop(MEARAS_HOP_wrk_posted);
	if (mearas_ring_needs_wakeup(ctl) && v->w->wake) {
		v->w->wake(v->w, cq);
	} else if (mearas_ring_needs_wakeup(ctl)) {
		uint64_t one = 1;

		if (write(v->w->wake_fds[cq], &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("wake slot %u: %s", cq, strerror(errno));
	}
	return true;
}

bool post_cqe(struct vgpu *v, uint16_t cq, const struct mearas_cqe *c)
{
	struct mearas_cqe copy = *c;

	return exec_post_cqe_seq(v, cq, &copy, NULL);
}

static void complete(struct vgpu *v, struct pending *p)
{
	/* the flush costs a driver call per synchronization (a third of a
	 * launch and synchronize): made only once loaded code may print */
	bool flush = p->flush && v->may_print;

	if (flush && v->ops->flush_output)
		/* the work is done: this returns at once, having flushed printf output */
		v->ops->flush_output(v->dev, p->flush_event ? NULL : p->flush_stream, p->flush_event);
	if (flush && v->w->take_output) {
		/* before the completion is posted: the client sees both together */
		if (v->w->take_output(v->w))
			p->cqe.flags |= MEARAS_CQE_OUTPUT;
	} else if (flush && v->ops->flush_output && worker_output_pending(v->w)) {
		p->cqe.flags |= MEARAS_CQE_OUTPUT;
	}
	if (p->action == PENDING_FREE) {
		if (exec_mem_free(v, p->arg) && p->cqe.status == 0)
			p->cqe.status = cudaErrorInvalidValue;
	} else if (p->action == PENDING_RESET) {
		vgpu_teardown(v);
	} else if (p->action == PENDING_RELEASE) {
		exec_share_put(v, (struct hf_share *)(uintptr_t)p->arg);
	}
	if (!p->want_cqe) {
		deferred_keep(&v->deferred_error, p->cqe.status);
		return;
	}
	if (!post_cqe(v, p->cq, &p->cqe)) {
		log_err("vGPU %u: completion slot %u overflows: the client is misbehaving", v->index, p->cq);
		v->w->broken = true;
		return;
	}
	account_sync(v, p->fetched_ns, p->op);
}

/* A fence of our own: a passed one kept for reuse, or a new event. */
static int fence_get(struct vgpu *v, void **ev)
{
	if (v->nfence_pool) {
		*ev = v->fence_pool[--v->nfence_pool];
		return 0;
	}
	return v->ops->event_create(v->dev, cudaEventDisableTiming, ev);
}

static void fence_put(struct vgpu *v, void *ev)
{
	if (v->nfence_pool < MEARAS_FENCE_POOL)
		v->fence_pool[v->nfence_pool++] = ev;
	else
		v->ops->event_destroy(v->dev, ev);
}

/* A pending completion's fence is no longer polled: ours goes back to the
 * pool, a client event's hold is dropped (destroying it if the client did).
 * A flag is free again only once its write was read (passed): a write still
 * queued could land on the word's next use. */
static void release_fence(struct vgpu *v, const struct pending *p, bool passed)
{
	if (p->flag) {
		if (passed)
			v->flag_free[v->nflag_free++] = (uint16_t)(p->flag - 1u);
	} else if (p->own_fence) {
		fence_put(v, p->fence);
	} else if (p->held) {
		exec_hold_put(v, p->fence);
	}
}

/* The vGPU's completion flags, made on first use; false: fences are events. */
static bool flags_ready(struct vgpu *v)
{
	int r;

	if (v->flags_state)
		return v->flags_state > 0;
	r = v->ops->flags_create ? v->ops->flags_create(v->dev, MEARAS_FLAG_SLOTS, &v->flags) : cudaErrorNotSupported;
	v->flags_state = r ? -1 : 1;
	if (r && v->ops->flags_create)
		log_info("vGPU %u: no completion flags (error %d): fences are events", v->index, r);
	for (unsigned i = 0; !r && i < MEARAS_FLAG_SLOTS; i++)
		v->flag_free[v->nflag_free++] = (uint16_t)(MEARAS_FLAG_SLOTS - 1u - i);
	return !r;
}

/* Our fence behind stream for p: a completion flag where one is free and
 * the stream is not in a capture (where a write would be a graph node), an
 * event otherwise. */
static int fence_make(struct vgpu *v, struct pending *p, void *stream)
{
	int r;

	if (!v->captures_open && flags_ready(v) && v->nflag_free) {
		unsigned slot = v->flag_free[--v->nflag_free];
		uint32_t value = v->flag_value + 1 ? v->flag_value + 1 : 1;

		r = v->ops->flag_write(v->dev, v->flags, slot, value, stream);
		if (!r) {
			v->flag_value = value;
			p->flag = (uint16_t)(slot + 1);
			p->flag_value = value;
			p->own_fence = 1;
			return 0;
		}
		/* nothing was queued: the word is free; an event does it */
		v->flag_free[v->nflag_free++] = (uint16_t)slot;
		if (r == cudaErrorNotSupported) {
			v->flags_state = -1;
			log_info("vGPU %u: the device refuses completion flags: fences are events", v->index);
		}
	}
	r = fence_get(v, &p->fence);
	if (r)
		return r;
	p->own_fence = 1;
	r = v->ops->event_record(v->dev, p->fence, stream);
	if (r)
		fence_put(v, p->fence);
	return r;
}

/* A fence's state: 0 passed, cudaErrorNotReady, or an error. A flag is read
 * without a driver call; as a context that failed never writes it, the
 * context's state (a sticky error, kept in ctx_error from then on) is asked
 * every FLAG_STATUS_EVERY reads of a flag not passed, and at once when an
 * event's query fails: flags older than that event then fail in the same
 * pass (fences are queried newest first), never after it. */
#define FLAG_STATUS_EVERY 64u

static void ask_status(struct vgpu *v)
{
	if (!v->ctx_error && v->ops->status)
		v->ctx_error = v->ops->status(v->dev);
}

static int fence_query(struct vgpu *v, struct pending *p)
{
	int r;

	if (!p->flag) {
		r = v->ops->event_query(v->dev, p->fence);
		if (r && r != cudaErrorNotReady && v->flags_state > 0)
			ask_status(v);
		return r;
	}
	if (v->ops->flag_read(v->dev, v->flags, p->flag - 1u) == p->flag_value)
		return 0;
	if (!v->ctx_error && ++p->polls % FLAG_STATUS_EVERY == 0)
		ask_status(v);
	return v->ctx_error ? v->ctx_error : cudaErrorNotReady;
}

/*
 * Completions leave in submission order wherever the work is ordered on the
 * device: a remote vGPU ships a device-to-host copy's bytes when its
 * completion is posted, so a stream synchronization must not be posted
 * before the copy it follows. Fences are queried newest first: if a later
 * fence has passed, every fence it is ordered after (same stream, or an
 * event it waited for) has passed too and is seen passed when queried
 * after it; then the passed ones are completed oldest first. Unrelated work
 * on other streams is never held back.
 */
int exec_poll_pending(struct vgpu *v)
{
	size_t keep = 0, n = v->npend;
	int done = 0;

	for (size_t i = n; i-- > 0;)
		v->pend[i].poll_status = fence_query(v, &v->pend[i]);
	for (size_t i = 0; i < n; i++) {
		struct pending p = v->pend[i];

		if (p.poll_status == cudaErrorNotReady) {
			v->pend[keep++] = p;
			continue;
		}
		if (p.poll_status && !p.cqe.status) {
			p.cqe.status = p.poll_status;
			if (v->stats)
				vstat_add(&v->stats->errors, 1);
		}
		/* the fence outlives complete(): it may flush output through it, and
		 * a reset there (teardown) must see the client event still held */
		complete(v, &p);
		release_fence(v, &p, p.poll_status == 0);
		done++;
	}
	/* entries complete() may have added meanwhile move down behind the kept ones */
	memmove(v->pend + keep, v->pend + n, (v->npend - n) * sizeof(*v->pend));
	v->npend = keep + (v->npend - n);
	return done;
}

void exec_drop_pending(struct vgpu *v)
{
	/* a graph launch not done may still run its host functions on a driver
	 * thread: its share of them is left to the process (bounded by
	 * MEARAS_MAX_CAPTURED_HOST_FUNCS), never freed under it */
	for (size_t i = 0; i < v->npend; i++)
		release_fence(v, &v->pend[i], false);
	v->npend = 0;
}

void exec_flags_release(struct vgpu *v)
{
	if (v->flags && v->ops->flags_destroy)
		v->ops->flags_destroy(v->dev, v->flags);
	v->flags = NULL;
	v->flags_state = 0;
	v->nflag_free = 0;
	v->ctx_error = 0;
}

static void add_pending(struct vgpu *v, struct pending *p)
{
	if (v->npend == v->cap_pend) {
		size_t ncap = v->cap_pend ? v->cap_pend * 2 : 64;
		struct pending *n = realloc(v->pend, ncap * sizeof(*n));

		if (!n) {
			p->cqe.status = cudaErrorMemoryAllocation;
			complete(v, p);
			release_fence(v, p, false);
			return;
		}
		v->pend = n;
		v->cap_pend = ncap;
	}
	v->pend[v->npend++] = *p;
}

/* The GPU time limit watches kernel work on each stream, and the waits
 * that hold a stream for something other than its own kernels. */
static void watch_record(struct vgpu *v, const struct mearas_sqe *e, const struct fence_req *f)
{
	const struct mearas_op_props *p = mearas_op_props(e->op);
	void *s;

	if (p->kernel)
		watchdog_mark(v, f->stream, true, f->kernel);
	else if (p->wait && !exec_resolve_stream(v, e, &s))
		watchdog_mark(v, s, false, NULL);
}

/* The GPU time limit fired: this client's waits end now with status. No
 * device call that could wait for the running kernel (output flush, reset,
 * freeing memory): the process exits next and the driver frees it all. */
void exec_fail_pending(struct vgpu *v, int status)
{
	for (size_t i = 0; i < v->npend; i++) {
		struct pending p = v->pend[i];

		p.cqe.status = status;
		p.flush = 0;
		p.action = PENDING_POST;
		/* returns at once; the driver frees an unfinished event later (a
		 * flag not passed stays taken) */
		if (p.own_fence && !p.flag)
			v->ops->event_destroy(v->dev, p.fence);
		complete(v, &p);
	}
	v->npend = 0;
}

/* Records that leave a completion waiting on the device when they succeed:
 * those acting once the device is done, and those with work on the device
 * whose caller wants a completion. */
static bool may_pend(const struct mearas_sqe *e)
{
	const struct mearas_op_props *p = mearas_op_props(e->op);

	return p->pends || (p->pends_sync && (e->flags & MEARAS_SQE_WANT_CQE));
}

/* Record e would add a node to a capture: its stream captures (nothing is
 * resolved or asked while no capture may be open). */
static bool adds_graph_node(struct vgpu *v, const struct mearas_sqe *e)
{
	void *s;

	return v->captures_open && mearas_op_props(e->op)->capture && mearas_op_props(e->op)->stream &&
	       exec_resolve_stream(v, e, &s) == 0 && exec_record_captures(v, e, s);
}

void exec_record(struct vgpu *v, const struct mearas_sqe *e)
{
	struct mearas_cqe c = { .user_data = e->user_data };
	struct fence_req f = { 0 };
	bool want = (e->flags & MEARAS_SQE_WANT_CQE) != 0, node = false;
	uint64_t fetched_ns = want ? mearas_mono_ns() : 0;
	int r;

	if (want)
		mearas_hop(MEARAS_HOP_wrk_exec);
	/* single writer; the worker's main thread reads it for the call rate */
	__atomic_store_n(&v->records, v->records + 1, __ATOMIC_RELAXED);
	if (e->op >= MEARAS_OP_COUNT || (e->flags & ~KNOWN_SQE_FLAGS) || e->cq >= v->w->nthreads) {
		r = cudaErrorInvalidValue;
		log_warn("vGPU %u: malformed record (op %u, flags %#x, slot %u) refused",
			 v->index, e->op, e->flags, e->cq);
		f = (struct fence_req){ 0 };
	} else if (v->npend >= MEARAS_MAX_PENDING && may_pend(e)) {
		/* behind a stream that never finishes, completions would pile up */
		r = cudaErrorMemoryAllocation;
		exec_refuse_log(v, "%s refused: %u completions already wait on the device (limit)",
			   mearas_op_name(e->op), MEARAS_MAX_PENDING);
	} else if ((node = adds_graph_node(v, e)) && v->capture_nodes + v->graph_nodes >= MEARAS_MAX_GRAPH_NODES) {
		/* a capture never ended would grow without end */
		r = cudaErrorMemoryAllocation;
		exec_refuse_log(v, "%s refused: the vGPU's captures and graphs hold %u nodes already (limit)",
				mearas_op_name(e->op), MEARAS_MAX_GRAPH_NODES);
	} else {
		r = exec_handlers[e->op](v, e, &c, &f);
		if (r == 0 && node)
			v->capture_nodes++;
		log_debug("vGPU %u: %s -> %d", v->index, mearas_op_name(e->op), r);
		vstat_record(v->stats, e, v->w->data_size, r == 0);
	}
	if (r && v->stats)
		vstat_add(&v->stats->errors, 1);
	if (r == 0 && v->watch)
		watch_record(v, e, &f);
	if (want)
		r = deferred_report(&v->deferred_error, e->op, r);
	c.status = r;
	/* a fence only for records that wait for the device or act after it */
	if (r == 0 && (f.stream || f.event) && (want || f.action != PENDING_POST)) {
		struct pending p = { .want_cqe = want, .action = f.action, .arg = f.arg, .cqe = c, .cq = e->cq,
				     .fetched_ns = fetched_ns, .op = e->op, .flush = f.flush, .flush_event = f.event,
				     .flush_stream = f.stream == v->ops->stream_default(v->dev) && e->op == MEARAS_OP_CTX_SYNC
						     ? NULL : f.stream };

		if (f.event) {
			/* the client's event: kept alive until this completes */
			p.fence = f.event;
			r = exec_hold_get(v, f.event);
			p.held = r == 0;
		} else {
			r = fence_make(v, &p, f.stream);
		}
		if (!r) {
			add_pending(v, &p);
			exec_poll_pending(v);
			return;
		}
		c.status = r;
	}
	if (!want) {
		deferred_keep(&v->deferred_error, r);
		return;
	}
	if (!post_cqe(v, e->cq, &c)) {
		log_err("vGPU %u: completion slot %u overflows: the client is misbehaving", v->index, e->cq);
		v->w->broken = true;
		return;
	}
	account_sync(v, fetched_ns, e->op);
}

void vgpu_log_sync_ops(const struct vgpu *v, const char *label)
{
	char line[512];
	size_t n = 0;
	bool taken[MEARAS_OP_COUNT] = { false };

	if (!v->sync_calls)
		return;
	/* the six most frequent, by selection: the table is small */
	for (int k = 0; k < 6; k++) {
		unsigned best = MEARAS_OP_COUNT;

		for (unsigned op = 0; op < MEARAS_OP_COUNT; op++)
			if (!taken[op] && v->sync_by_op[op] && (best == MEARAS_OP_COUNT ||
								 v->sync_by_op[op] > v->sync_by_op[best]))
				best = op;
		if (best == MEARAS_OP_COUNT)
			break;
		taken[best] = true;
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s %u", k ? ", " : "", mearas_op_props(best)->name,
				      v->sync_by_op[best]);
		if (n >= sizeof(line))
			break;
	}
	log_info("client %s vGPU %u: %llu synchronizing records, %.1f us of host time each; by op: %s", label, v->index,
		 (unsigned long long)v->sync_calls, (double)v->sync_ns / 1e3 / (double)v->sync_calls, line);
}

/* Frees every object and all memory of the vGPU (cudaDeviceReset, or the
 * client going away). */
void vgpu_teardown(struct vgpu *v)
{
	/* graphs before what they use; modules after their kernels; arrays
	 * after the textures and surfaces on them */
	static const enum mearas_handle_kind order[] = { MEARAS_KIND_EXEC, MEARAS_KIND_GRAPH, MEARAS_KIND_EVENT,
							 MEARAS_KIND_STREAM, MEARAS_KIND_FUNC, MEARAS_KIND_MODULE,
							 MEARAS_KIND_POOL, MEARAS_KIND_PHYS, MEARAS_KIND_TEXOBJ,
							 MEARAS_KIND_SURFOBJ, MEARAS_KIND_ARRAY };

	_Static_assert(sizeof(order) / sizeof(order[0]) == MEARAS_KIND_COUNT, "teardown names every kind");
	for (size_t k = 0; k < MEARAS_KIND_COUNT; k++) {
		struct handle_table *t = exec_table(v, order[k]);

		for (uint32_t i = 0; i < t->cap; i++) {
			void *o = t->slots[i].obj;

			if (!o)
				continue;
			exec_destroy_obj(v, order[k], o, t->slots[i].aux);
			t->slots[i].obj = NULL;
			t->slots[i].aux = 0;
		}
	}
	for (unsigned i = 0; i < MEARAS_MAX_THREADS; i++) {
		if (v->ptds[i]) {
			exec_forget_stream(v, v->ptds[i]);
			v->ops->stream_destroy(v->dev, v->ptds[i]);
		}
		v->ptds[i] = NULL;
	}
	/* captured host functions no graph took: nothing captures any more */
	exec_hf_free_list(v, v->hf_loose);
	v->hf_loose = NULL;
	v->captures_open = false;
	v->capture_nodes = v->graph_nodes = 0;
	/* mappings give their physical memory back (its handles went above) */
	exec_vmm_teardown(v);
	/* allocations made through pools give the pools back */
	for (size_t i = 0; i < v->heap.nallocs; i++)
		if (!v->heap.allocs[i].vmm)
			exec_pool_put(v, v->heap.allocs[i].tag, false);
	{
		uint64_t base = v->heap.base, size = v->heap.size, gran = v->heap.granularity, quota = v->heap.quota;
		const struct vaheap_ops *hops = v->heap.ops;
		void *ctx = v->heap.ctx;

		pthread_mutex_lock(&v->heap_lock);
		vaheap_destroy(&v->heap);
		vaheap_init(&v->heap, base, size, gran, quota, hops, ctx);
		v->nglobals = 0;
		pthread_mutex_unlock(&v->heap_lock);
	}
	v->deferred_error = 0;
	while (v->nfence_pool)
		v->ops->event_destroy(v->dev, v->fence_pool[--v->nfence_pool]);
}
