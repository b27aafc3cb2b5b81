// SPDX-License-Identifier: MIT
/*
 * The local engine: one poller per vGPU drains the vGPU's submission ring in
 * order, runs each record on this node's device, and watches pending
 * completions. It never blocks on the device, so one stream's
 * synchronization cannot stall other streams or threads. Idle, it spins
 * briefly, then announces NEED_WAKEUP and sleeps on its eventfd.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "exec.h"
#include "mearas/clock.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "poller.h"
#include "watchdog.h"
#include "worker.h"

/* A client waits on pending work: answer fast for this long, then nap. */
#define PENDING_SPIN_NS (5ull * 1000 * 1000)

int sq_available(struct vgpu *v)
{
	int avail = mearas_sqc_available(&v->sq);

	if (avail < 0)
		log_err("vGPU %u: submission ring indices out of range (head %u, tail %u): client disconnected",
			v->index, v->sq.head, mearas_load_acquire(&v->sq.ctl->tail));
	return avail;
}

int sq_each(struct vgpu *v, enum sq_step (*run)(struct vgpu *v, const struct mearas_sqe *e, void *ctx), void *ctx,
	    unsigned publish_every)
{
	int avail = sq_available(v), n = 0;

	if (avail < 0)
		return -1;
	while (avail--) {
		struct mearas_sqe e;
		enum sq_step step;

		mearas_sqc_fetch(&v->sq, &e);
		step = run(v, &e, ctx);
		if (step == SQ_LEAVE)
			break;
		mearas_sqc_advance(&v->sq, 1);
		n++;
		if (n % publish_every == 0)
			mearas_sqc_publish(&v->sq);
		if (step == SQ_BROKEN)
			return -1;
	}
	mearas_sqc_publish(&v->sq);
	return n;
}

static enum sq_step run_record(struct vgpu *v, const struct mearas_sqe *e, void *ctx)
{
	exec_record(v, e);
	return v->w->broken ? SQ_BROKEN : SQ_NEXT;
}

int sq_drain(struct vgpu *v)
{
	/* publish consumption in steps: every store pulls the line away from
	 * the producer's core */
	return sq_each(v, run_record, NULL, 16);
}

void sleep_on_kick(struct vgpu *v, int timeout_ms)
{
	struct pollfd p = { .fd = v->kick_fd, .events = POLLIN };
	uint64_t cnt;

	if (poll(&p, 1, timeout_ms) > 0 && (p.revents & POLLIN)) {
		if (read(v->kick_fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
			log_warn("vGPU %u: kick read: %s", v->index, strerror(errno));
	}
}

void *poller_main(void *arg)
{
	struct vgpu *v = arg;
	const uint64_t spin_ns = (uint64_t)v->w->cfg->spin_us * 1000ull;
	uint64_t idle_since = 0;

	v->ops->bind_thread(v->dev);
	while (!v->w->stop && !v->w->broken && !v->w->timed_out) {
		int n;

		if (v->watch)
			atomic_store_explicit(&v->alive_ns, mearas_mono_ns(), memory_order_relaxed);
		n = sq_drain(v);

		if (n < 0) {
			v->w->broken = true;
			break;
		}
		if (v->npend)
			n += exec_poll_pending(v);
		atomic_fetch_add_explicit(&v->poll_rounds, 1, memory_order_release);
		if (v->watch)
			n += watchdog_poll(v);
		if (n > 0) {
			idle_since = 0;
			continue;
		}
		if (!idle_since)
			idle_since = mearas_mono_ns();
		if (mearas_mono_ns() - idle_since < (v->npend ? PENDING_SPIN_NS : spin_ns)) {
			mearas_cpu_relax();
			continue;
		}
		if (v->npend) {
			/* the device has been busy for a while: check it less often */
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
			continue;
		}
		if (mearas_ring_prepare_sleep(v->sq.ctl))
			sleep_on_kick(v, v->watch ? watchdog_nap_ms(v) : 200);
		mearas_ring_end_sleep(v->sq.ctl);
		idle_since = 0;
	}
	if (v->w->timed_out)
		exec_fail_pending(v, cudaErrorLaunchTimeout);
	v->poller_done = true;
	return NULL;
}

static int local_open(struct vgpu *v, int phys, uint64_t va_base, uint64_t va_size, struct mearas_devinfo *info,
		      uint64_t *granularity, char *err, size_t errlen)
{
	int r = v->ops->open(&v->dev, phys, va_base, va_size, info, granularity);

	if (r)
		snprintf(err, errlen, "vGPU %u: cannot open %s device %d (error %d)", v->index, v->ops->name, phys, r);
	return r;
}

/* Every device object of the vGPU goes (the process's exit would free them
 * too; this way the driver is told while the process goes on). */
static void local_close(struct vgpu *v)
{
	v->ops->bind_thread(v->dev);
	exec_drop_pending(v);
	vgpu_teardown(v);
	exec_flags_release(v);
}

const struct vgpu_engine vgpu_engine_local = {
	.name = "local", .open = local_open, .thread_main = poller_main, .close = local_close, .local = true,
};
