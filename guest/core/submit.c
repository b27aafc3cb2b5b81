// SPDX-License-Identifier: MIT
/*
 * The fast path: records go on the vGPU's submission ring under a short
 * lock; payloads too large for the record's inline bytes go to the vGPU's
 * arena, whose space is reclaimed as the back end consumes records. The
 * back end is notified only when it sleeps (need-wakeup flag).
 */
#include <string.h>
#include <time.h>

#include "mearas/clock.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "core.h"

static uint64_t now_us(void)
{
	return mearas_mono_ns() / 1000;
}

void rt_call_init(struct rt_call *c, unsigned op, uint32_t stream)
{
	memset(&c->sqe, 0, offsetof(struct mearas_sqe, inline_payload));
	c->sqe.op = (uint16_t)op;
	c->sqe.stream = stream;
	c->payload = NULL;
	c->payload_len = 0;
	/* the thread's slot also names its per-thread default stream */
	c->sqe.cq = (uint16_t)rt_slot();
	if (rt_tls.ptds)
		c->sqe.flags |= MEARAS_SQE_PER_THREAD;
}

/* Wait (spinning a moment, then sleeping in short naps) until cond holds
 * of v's ring, with the back end told to wake up. False when the back end
 * is gone. */
static bool wait_for_backend(struct rt_vgpu *v, bool (*cond)(struct mearas_sq_producer *, uint32_t), uint32_t arg)
{
	uint64_t start = now_us();

	while (!cond(&v->sq, arg)) {
		if (rt_stopped())
			return false;
		/* make sure the poller is awake: it will drain and free space */
		if (mearas_ring_needs_wakeup(v->rings.sq))
			tp_kick(&rt.tp, v->host);
		/* a full ring holds milliseconds of work: sleep rather than spin, so
		 * this thread does not slow the poller (it may share a core with it) */
		if (now_us() - start < 2) {
			mearas_cpu_relax();
		} else {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
			if (now_us() - start > 1000000) {
				/* a second without progress: is the back end still there? */
				if (!tp_wait(&rt.tp, 0, 0)) {
					rt.dead = 1;
					return false;
				}
				start = now_us() - 50;
			}
		}
	}
	return true;
}

/* mearas_sqp_has_slot as a condition of wait_for_backend */
static bool sq_has_slot(struct mearas_sq_producer *p, uint32_t unused)
{
	(void)unused;
	return mearas_sqp_has_slot(p);
}

static cudaError_t submit(int vgpu, struct rt_call *c)
{
	struct rt_vgpu *v = &rt.v[vgpu];
	uint32_t len = c->payload_len;
	bool wake;

	if (rt_stopped())
		return rt_gone();
	if (len > MEARAS_SQE_INLINE && len > MEARAS_ARENA_SIZE / 2)
		return cudaErrorInvalidValue;
	rt_mvars_before_post(vgpu, c);
	pthread_mutex_lock(&v->sq_lock);
	if (!mearas_sqp_has_slot(&v->sq) && !wait_for_backend(v, sq_has_slot, 0))
		goto dead;
	if (len > MEARAS_SQE_INLINE) {
		uint32_t need = mearas_sqp_arena_need(&v->sq, len);

		if (!mearas_sqp_arena_has(&v->sq, need) && !wait_for_backend(v, mearas_sqp_arena_has, need))
			goto dead;
	}
	wake = mearas_sqp_push(&v->sq, &c->sqe, c->payload, len);
	pthread_mutex_unlock(&v->sq_lock);
	if (wake)
		tp_kick(&rt.tp, v->host);
	return cudaSuccess;
dead:
	pthread_mutex_unlock(&v->sq_lock);
	return rt_gone();
}

cudaError_t rt_post(int vgpu, struct rt_call *c)
{
	return submit(vgpu, c);
}

cudaError_t rt_post_tracked(int vgpu, struct rt_call *c, uint64_t *user_data)
{
	int slot = rt_slot();

	c->sqe.flags |= MEARAS_SQE_WANT_CQE;
	c->sqe.cq = (uint16_t)slot;
	c->sqe.user_data = __atomic_add_fetch(&rt.next_user_data, 1, __ATOMIC_RELAXED);
	*user_data = c->sqe.user_data;
	return submit(vgpu, c);
}

cudaError_t rt_wait(int vgpu, uint64_t user_data, struct mearas_cqe *out)
{
	struct rt_vgpu *v = &rt.v[vgpu];
	int slot = rt_slot();
	struct mearas_cq_consumer *cq = &v->cq[slot];
	uint64_t start = now_us();

	for (;;) {
		if (mearas_cqc_pop(cq, out)) {
			if (out->user_data == user_data) {
				rt_mvars_after_wait(vgpu, user_data);
				return (cudaError_t)out->status;
			}
			log_err("completion %llu arrived while waiting for %llu: dropped",
				(unsigned long long)out->user_data, (unsigned long long)user_data);
			continue;
		}
		if (rt_stopped())
			return rt_gone();
		if (now_us() - start < v->spin_us && (v->flags & cudaDeviceScheduleMask) != cudaDeviceScheduleBlockingSync) {
			mearas_cpu_relax();
			continue;
		}
		if (mearas_ring_prepare_sleep(cq->ctl)) {
			bool alive = tp_wait(&rt.tp, (unsigned)slot, 1000);

			mearas_ring_end_sleep(cq->ctl);
			if (!alive) {
				rt.dead = 1;
				return rt_gone();
			}
		} else {
			mearas_ring_end_sleep(cq->ctl);
		}
	}
}

cudaError_t rt_call(int vgpu, struct rt_call *c, struct mearas_cqe *out)
{
	struct mearas_cqe tmp = { 0 };
	uint64_t ud;
	int slot = rt_slot();
	cudaError_t e;

	pthread_mutex_lock(&rt.slot_lock[slot]);
	e = rt_post_tracked(vgpu, c, &ud);
	if (!e)
		e = rt_wait(vgpu, ud, out ? out : &tmp);
	pthread_mutex_unlock(&rt.slot_lock[slot]);
	if ((out ? out : &tmp)->flags & MEARAS_CQE_OUTPUT)
		tp_drain_output(&rt.tp);
	return e;
}
