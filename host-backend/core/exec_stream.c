// SPDX-License-Identifier: MIT
/*
 * Stream and event records, synchronization, device reset and host
 * functions. Waits never block the poller: a synchronizing record becomes a
 * fence that exec.c polls.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec_internal.h"
#include "mearas/clock.h"
#include "mearas/log.h"

int exec_op_STREAM_CREATE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_STREAM_CREATE *in,
			  struct mearas_cqe *c, struct fence_req *f)
{
	void *s;
	int r;

	(void)e, (void)c, (void)f;
	if (in->a->flags & ~1ull)
		return cudaErrorInvalidValue;
	r = v->ops->stream_create(v->dev, (unsigned)in->a->flags, (int)in->a->priority, &s);
	if (r)
		return r;
	return exec_keep_or_destroy(v, MEARAS_KIND_STREAM, in->a->stream, s, 0);
}

int exec_op_STREAM_SYNC(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_STREAM_SYNC *in,
			struct mearas_cqe *c, struct fence_req *f)
{
	(void)v, (void)e, (void)c;
	f->flush = 1;
	f->stream = in->stream;
	return 0;
}

int exec_op_STREAM_QUERY(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_STREAM_QUERY *in,
			 struct mearas_cqe *c, struct fence_req *f)
{
	void *ev;
	int r;

	(void)e, (void)c, (void)f;
	r = v->ops->event_create(v->dev, cudaEventDisableTiming, &ev);
	if (r)
		return r;
	r = v->ops->event_record(v->dev, ev, in->stream);
	if (!r)
		r = v->ops->event_query(v->dev, ev);
	v->ops->event_destroy(v->dev, ev);
	return r;
}

int exec_op_STREAM_WAIT_EVENT(struct vgpu *v, const struct mearas_sqe *e,
			      const struct exec_in_STREAM_WAIT_EVENT *in, struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c, (void)f;
	if (in->a->flags & ~(uint64_t)MEARAS_EVENT_WAIT_EXTERNAL)
		return cudaErrorInvalidValue;
	return v->ops->stream_wait_event(v->dev, in->stream, in->event->obj, (unsigned)in->a->flags);
}

int exec_op_EVENT_CREATE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_EVENT_CREATE *in,
			 struct mearas_cqe *c, struct fence_req *f)
{
	void *ev;
	int r;

	(void)e, (void)c, (void)f;
	if (in->a->flags & ~(uint64_t)(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess))
		return cudaErrorInvalidValue;
	r = v->ops->event_create(v->dev, (unsigned)in->a->flags, &ev);
	if (r)
		return r;
	return exec_keep_or_destroy(v, MEARAS_KIND_EVENT, in->a->event, ev, in->a->flags);
}

int exec_op_EVENT_RECORD(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_EVENT_RECORD *in,
			 struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c, (void)f;
	if (in->a->flags & ~(uint64_t)MEARAS_EVENT_RECORD_EXTERNAL)
		return cudaErrorInvalidValue;
	if (in->a->flags)
		return v->ops->event_record_external ? v->ops->event_record_external(v->dev, in->event->obj, in->stream)
						     : cudaErrorNotSupported;
	return v->ops->event_record(v->dev, in->event->obj, in->stream);
}

int exec_op_EVENT_SYNC(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_EVENT_SYNC *in,
		       struct mearas_cqe *c, struct fence_req *f)
{
	(void)v, (void)e, (void)c;
	f->event = in->event->obj;
	f->flush = 1;
	return 0;
}

int exec_op_EVENT_QUERY(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_EVENT_QUERY *in,
			struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c, (void)f;
	return v->ops->event_query(v->dev, in->event->obj);
}

int exec_op_EVENT_ELAPSED(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_EVENT_ELAPSED *in,
			  struct mearas_cqe *c, struct fence_req *f)
{
	float ms = 0;
	int r;

	(void)e, (void)f;
	r = v->ops->event_elapsed(v->dev, in->start->obj, in->end->obj, &ms);
	memcpy(&c->val[0], &ms, sizeof(ms));
	return r;
}

/* Make the legacy stream wait for every stream of this vGPU, so a fence on
 * it passes when all work submitted so far is done, without blocking. */
static int join_all_streams(struct vgpu *v, void **legacy)
{
	struct handle_table *streams = exec_table(v, MEARAS_KIND_STREAM);

	*legacy = v->ops->stream_default(v->dev);
	for (uint32_t i = 0; i < streams->cap + MEARAS_MAX_THREADS; i++) {
		void *s = i < streams->cap ? streams->slots[i].obj : v->ptds[i - streams->cap];
		void *ev;
		int r;

		if (!s)
			continue;
		r = v->ops->event_create(v->dev, cudaEventDisableTiming, &ev);
		if (r)
			return r;
		r = v->ops->event_record(v->dev, ev, s);
		if (!r)
			r = v->ops->stream_wait_event(v->dev, *legacy, ev, 0);
		v->ops->event_destroy(v->dev, ev);
		if (r)
			return r;
	}
	return 0;
}

int exec_op_CTX_SYNC(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_CTX_SYNC *in,
		     struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)in, (void)c;
	f->flush = 1;
	return join_all_streams(v, &f->stream);
}

int exec_op_DEVICE_RESET(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_DEVICE_RESET *in,
			 struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)in, (void)c;
	f->action = PENDING_RESET;
	return join_all_streams(v, &f->stream);
}

int exec_op_SYNC_ERROR(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_SYNC_ERROR *in,
		       struct mearas_cqe *c, struct fence_req *f)
{
	(void)v, (void)e, (void)in, (void)c, (void)f;
	return 0;
}

/* ---- host functions ---- */

/*
 * A remote session's host function reads what the work before it wrote, and
 * those bytes go to the client with that work's completions, which the
 * poller posts when it next polls: the request waits for a round of the
 * poller that began after the function's turn came (the poller kicked, in
 * case it sleeps), so the session sends the bytes first. At most
 * HOST_FUNC_CATCH_UP_MS: the poller may be inside a driver call that waits
 * for this function (then it goes as before, said once).
 */
#define HOST_FUNC_CATCH_UP_MS 500

static void await_poller_round(struct vgpu *v)
{
	uint64_t start = atomic_load_explicit(&v->poll_rounds, memory_order_acquire);
	uint64_t deadline = mearas_mono_ns() + HOST_FUNC_CATCH_UP_MS * 1000000ull, one = 1;
	static int said;

	if (write(v->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("vGPU %u: kick: %s", v->index, strerror(errno));
	/* two rounds: the first may have begun before this function's turn */
	while (atomic_load_explicit(&v->poll_rounds, memory_order_acquire) < start + 2) {
		if (v->w->stop || v->w->broken)
			return;
		if (mearas_mono_ns() > deadline) {
			if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
				log_info("vGPU %u: a host function is asked for before the poller caught up "
					 "(busy for %u ms)", v->index, HOST_FUNC_CATCH_UP_MS);
			return;
		}
		usleep(20);
	}
}

/* Runs in stream order (a driver thread on a GPU), once per run: at every
 * launch of a graph it was captured into. Asks the client to run its
 * function and holds the stream until the client says this run is done. */
void exec_host_func_trampoline(void *arg)
{
	struct host_func_req *req = arg;
	struct vgpu *v = req->v;
	struct mearas_cqe c = { .user_data = 0, .status = 0, .flags = MEARAS_CQE_HOST_FUNC,
				.val = { req->token, v->index } };
	uint64_t seq;

	/* the model runs this on the poller itself: no round to wait for */
	if (v->w->cfg->serves_remote && v->ops != &mdev_sim_ops)
		await_poller_round(v);
	while (!exec_post_cqe_seq(v, 0, &c, &seq)) {
		if (v->w->stop || v->w->broken)
			goto out;
		usleep(100);
	}
	if (v->ops == &mdev_sim_ops)
		goto out; /* the model runs this on the poller itself: it cannot wait */
	pthread_mutex_lock(&v->hf_lock);
	/* done: the HOST_FUNC_DONE record (the poller signals hf_cond), or the
	 * client's word in CQ 0 (region.h), looked at every millisecond: the
	 * poller may be inside a driver call that waits for this function */
	while (v->hf_done_token < seq && __atomic_load_n(&v->cq[0].ctl->consumer_done, __ATOMIC_ACQUIRE) < seq &&
	       !v->w->stop && !v->w->broken) {
		struct timespec ts = mearas_realtime_after_ms(1);

		pthread_cond_timedwait(&v->hf_cond, &v->hf_lock, &ts);
	}
	pthread_mutex_unlock(&v->hf_lock);
out:
	/* a captured request runs again at the next launch: its graph frees it */
	if (!req->captured) {
		free(req);
		atomic_fetch_sub_explicit(&v->hf_queued, 1, memory_order_relaxed);
	}
}

bool exec_stream_capturing(struct vgpu *v, void *s)
{
	int st = 0;

	return v->ops->capture_status && v->ops->capture_status(v->dev, s, &st) == 0 &&
	       st != cudaStreamCaptureStatusNone;
}

bool exec_record_captures(struct vgpu *v, const struct mearas_sqe *e, void *s)
{
	return v->captures_open && !(e->stream == MEARAS_STREAM_LEGACY && !(e->flags & MEARAS_SQE_PER_THREAD)) &&
	       exec_stream_capturing(v, s);
}

int exec_op_HOST_FUNC(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_HOST_FUNC *in,
		      struct mearas_cqe *c, struct fence_req *f)
{
	struct host_func_req *req;
	bool captured = exec_stream_capturing(v, in->stream);
	int r;

	(void)e, (void)c, (void)f;
	if (captured && v->hf_ncaptured >= MEARAS_MAX_CAPTURED_HOST_FUNCS) {
		exec_refuse_log(v, "host function refused: %u host functions are captured in graphs already (limit)",
				v->hf_ncaptured);
		return cudaErrorMemoryAllocation;
	}
	if (!captured && atomic_load_explicit(&v->hf_queued, memory_order_relaxed) >= MEARAS_MAX_QUEUED_HOST_FUNCS) {
		exec_refuse_log(v, "host function refused: %u host functions wait for their turn on streams already "
				"(limit)", MEARAS_MAX_QUEUED_HOST_FUNCS);
		return cudaErrorMemoryAllocation;
	}
	req = calloc(1, sizeof(*req));
	if (!req)
		return cudaErrorMemoryAllocation;
	req->v = v;
	req->token = in->a->token;
	req->captured = captured;
	/* counted before the device has it: the model runs it (and its trampoline uncounts it) at once */
	if (!captured)
		atomic_fetch_add_explicit(&v->hf_queued, 1, memory_order_relaxed);
	r = v->ops->host_func(v->dev, in->stream, exec_host_func_trampoline, req);
	if (r) {
		if (!captured)
			atomic_fetch_sub_explicit(&v->hf_queued, 1, memory_order_relaxed);
		free(req);
		return r;
	}
	if (captured) {
		/* the graph that CAPTURE_END makes takes it over */
		req->next = v->hf_loose;
		v->hf_loose = req;
		v->hf_ncaptured++;
	}
	return 0;
}

int exec_op_HOST_FUNC_DONE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_HOST_FUNC_DONE *in,
			   struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c, (void)f;
	pthread_mutex_lock(&v->hf_lock);
	/* the run's sequence number, from its request's user_data */
	if (in->a->run > v->hf_done_token)
		v->hf_done_token = in->a->run;
	pthread_cond_broadcast(&v->hf_cond);
	pthread_mutex_unlock(&v->hf_lock);
	return 0;
}
