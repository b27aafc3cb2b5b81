// SPDX-License-Identifier: MIT
/*
 * The GPU time limit (mearasd --kernel-timeout-ms). A spinning kernel cannot
 * be preempted through the driver API, and destroying its context may block
 * while it runs; the exit of the process that owns the context always frees
 * the GPU. So when one kernel of a process client has run past the limit,
 * the worker marks the client timed out in its region header (the library
 * then fails every call with cudaErrorLaunchTimeout), fails every pending
 * wait with it, logs who and what, and exits: the driver tears the context
 * down and the other tenants of the GPU keep running.
 *
 * Running time: each stream keeps a short queue of marks (driver events)
 * recorded after its kernels, graph launches, event waits and host
 * functions. A mark's work counts from the moment it became the stream's
 * oldest unfinished work (the previous mark passed, or it was recorded on an
 * idle stream), not from submission, so a long queue of short kernels is
 * not taken for one long kernel. Waits for events and host functions are not
 * counted (the stream waits for something else, which has its own marks).
 * A full queue moves its newest mark behind the new work, so work is never
 * left unwatched; its segment then covers several kernels. Work that cannot
 * be watched at all (more streams busy at once than the table holds, no
 * event to record) ends the context too: the limit has no way around it.
 * Streams being captured get no marks (a mark would become a graph node);
 * the graph's launch gets one. A poller stuck in one driver call (one that
 * waits behind the kernel) cannot look at its marks: the worker's main
 * thread ends the context when a poller has not gone round its loop for
 * STUCK_FACTOR times the limit plus STUCK_EXTRA_MS (room for long driver
 * calls that are legitimate, such as compiling PTX).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "mearas/clock.h"
#include "mearas/log.h"
#include "watchdog.h"
#include "worker.h"

#define WATCH_MARKS   32        /* marks in flight per stream */
#define WATCH_STREAMS 4096      /* streams with work in flight per vGPU */
#define WATCH_POOL    256       /* idle events kept for reuse */
#define WATCH_POLL_NS 1000000ull
#define TEARDOWN_WAIT_MS 1000   /* pollers get this long to fail their waits */
#define STUCK_FACTOR  2
#define STUCK_EXTRA_MS 10000ull

struct watch_mark {
	void *event;
	void *func;             /* the last kernel before the mark, when known */
	bool kernel;            /* counted against the limit */
	bool graph;
};

struct watch_stream {
	void *stream;           /* key only (a destroyed stream's pointer may come back) */
	struct watch_mark m[WATCH_MARKS];
	unsigned head, n;
	uint64_t head_since;    /* when the head mark's work became the oldest */
};

struct watchdog {
	uint64_t limit_ns;
	uint64_t last_poll_ns;
	struct watch_stream *s;
	size_t ns, cap;
	void *pool[WATCH_POOL];
	unsigned npool;
};

int watchdog_arm(struct worker *w)
{
	if (!w->cfg->kernel_timeout_ms)
		return 0;
	for (unsigned i = 0; i < w->nvgpus; i++) {
		struct vgpu *v = &w->vgpus[i];

		if (!v->engine->local)
			continue; /* runs on another node: not covered (yet) */
		v->watch = calloc(1, sizeof(*v->watch));
		if (!v->watch)
			return -1;
		v->watch->limit_ns = (uint64_t)w->cfg->kernel_timeout_ms * 1000000ull;
	}
	return 0;
}

static struct watch_stream *stream_of(struct watchdog *wd, void *stream)
{
	for (size_t i = 0; i < wd->ns; i++)
		if (wd->s[i].stream == stream)
			return &wd->s[i];
	if (wd->ns == wd->cap) {
		size_t ncap = wd->cap ? wd->cap * 2 : 8;
		struct watch_stream *n;

		if (ncap > WATCH_STREAMS)
			return NULL;
		n = realloc(wd->s, ncap * sizeof(*n));
		if (!n)
			return NULL;
		wd->s = n;
		wd->cap = ncap;
	}
	memset(&wd->s[wd->ns], 0, sizeof(wd->s[0]));
	wd->s[wd->ns].stream = stream;
	return &wd->s[wd->ns++];
}

static void put_event(struct vgpu *v, void *ev)
{
	struct watchdog *wd = v->watch;

	if (wd->npool < WATCH_POOL)
		wd->pool[wd->npool++] = ev;
	else
		v->ops->event_destroy(v->dev, ev);
}

/* Move the stream's newest mark behind the work just issued. */
static bool move_tail(struct vgpu *v, struct watch_stream *ws, void *stream, bool kernel, void *func)
{
	struct watch_mark *m;

	if (!ws->n)
		return false;
	m = &ws->m[(ws->head + ws->n - 1) % WATCH_MARKS];
	if (v->ops->event_record(v->dev, m->event, stream))
		return false;
	m->kernel |= kernel;
	if (kernel) {
		m->func = func;
		m->graph = !func;
	}
	return true;
}

static void fire(struct vgpu *v, const char *why);

void watchdog_mark(struct vgpu *v, void *stream, bool kernel, void *func)
{
	struct watchdog *wd = v->watch;
	struct watch_stream *ws;
	void *ev = NULL;
	int capturing = 0;

	if (v->ops->capture_status && v->ops->capture_status(v->dev, stream, &capturing) == 0 && capturing)
		return;
	ws = stream_of(wd, stream);
	if (!ws) {
		fire(v, "more streams have work in flight at once than the GPU time limit watches (4096)");
		return;
	}
	if (ws->n == WATCH_MARKS) {
		if (!move_tail(v, ws, stream, kernel, func))
			fire(v, "the GPU time limit cannot record its mark on a stream");
		return;
	}
	if (wd->npool)
		ev = wd->pool[--wd->npool];
	else if (v->ops->event_create(v->dev, cudaEventDisableTiming, &ev))
		ev = NULL;
	if (!ev || v->ops->event_record(v->dev, ev, stream)) {
		if (ev)
			put_event(v, ev);
		/* out of events: the newest mark covers this work too */
		if (!move_tail(v, ws, stream, kernel, func)) {
			if (!ws->n)
				wd->s[ws - wd->s] = wd->s[--wd->ns];
			fire(v, "the GPU time limit cannot record its mark on a stream (out of device events?)");
		}
		return;
	}
	if (!ws->n)
		ws->head_since = mearas_mono_ns();
	ws->m[(ws->head + ws->n) % WATCH_MARKS] = (struct watch_mark){ .event = ev, .func = func, .kernel = kernel,
								     .graph = kernel && !func };
	ws->n++;
}

/* Past the limit (or beyond watching): the client is timed out. */
static void fire(struct vgpu *v, const char *why)
{
	struct worker *w = v->w;

	if (atomic_exchange(&w->timed_out, true))
		return; /* another vGPU's poller fired first */
	/* the client reads this before every call and while it waits */
	__atomic_store_n(&((struct mearas_region_hdr *)w->region)->state, MEARAS_BACKEND_TIMED_OUT,
			 __ATOMIC_RELEASE);
	log_err("GPU time limit: %s, vGPU %u: %s (--kernel-timeout-ms=%u): tearing down this client's GPU "
		"context; its calls fail with cudaErrorLaunchTimeout", w->tenant, v->index, why,
		w->cfg->kernel_timeout_ms);
}

/* The name of a mark's kernel, if its function is still one the client
 * holds: a MODULE_UNLOAD (or a reset) frees functions while marks behind
 * their launches are still in flight, so the pointer is only followed when
 * the function table still has it (once per client: the limit fires once).
 * A freed function's address reused by a newer one names that one. */
static const char *mark_func_name(struct vgpu *v, const struct watch_mark *m)
{
	const struct handle_table *t = &v->htab[MEARAS_KIND_FUNC];

	if (!m->func || !v->ops->func_name)
		return NULL;
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->slots[i].obj == m->func)
			return v->ops->func_name(v->dev, m->func);
	return NULL;
}

static void fire_kernel(struct vgpu *v, const struct watch_mark *m, uint64_t ran_ns)
{
	const char *name = mark_func_name(v, m);
	char why[256];

	snprintf(why, sizeof(why), "kernel %s has run %llu ms, past the limit of %u ms",
		 name ? name : m->graph ? "(in a graph)" : "(unknown)", (unsigned long long)(ran_ns / 1000000),
		 v->w->cfg->kernel_timeout_ms);
	fire(v, why);
}

int watchdog_poll(struct vgpu *v)
{
	struct watchdog *wd = v->watch;
	uint64_t now = mearas_mono_ns();
	int passed = 0;

	if (now - wd->last_poll_ns < WATCH_POLL_NS)
		return 0;
	wd->last_poll_ns = now;
	for (size_t i = 0; i < wd->ns;) {
		struct watch_stream *ws = &wd->s[i];

		while (ws->n) {
			struct watch_mark *m = &ws->m[ws->head];
			/* an error (a faulted context) ends the work too */
			if (v->ops->event_query(v->dev, m->event) == cudaErrorNotReady) {
				if (m->kernel && now - ws->head_since > wd->limit_ns) {
					fire_kernel(v, m, now - ws->head_since);
					return passed;
				}
				break;
			}
			put_event(v, m->event);
			ws->head = (ws->head + 1) % WATCH_MARKS;
			ws->n--;
			ws->head_since = now;
			passed++;
		}
		if (!ws->n) {
			wd->s[i] = wd->s[--wd->ns];
			continue;
		}
		i++;
	}
	return passed;
}

int watchdog_nap_ms(struct vgpu *v)
{
	uint64_t ms = v->watch->limit_ns / 1000000 / 8;

	if (!v->watch->ns)
		return 200;
	return ms < 1 ? 1 : ms > 20 ? 20 : (int)ms;
}

bool watchdog_pollers_stuck(struct worker *w)
{
	uint64_t bound = (STUCK_FACTOR * (uint64_t)w->cfg->kernel_timeout_ms + STUCK_EXTRA_MS) * 1000000ull;

	for (unsigned i = 0; i < w->nvgpus; i++) {
		struct vgpu *v = &w->vgpus[i];
		uint64_t alive = atomic_load_explicit(&v->alive_ns, memory_order_relaxed);
		/* read after alive: the poller may have gone round since */
		uint64_t now = mearas_mono_ns();
		char why[160];

		if (!v->watch || !alive || v->poller_done || now < alive || now - alive <= bound)
			continue;
		snprintf(why, sizeof(why), "its poller has been inside one driver call for %llu ms "
			 "(waiting behind a kernel past the limit?)", (unsigned long long)((now - alive) / 1000000));
		fire(v, why);
		return true;
	}
	return false;
}

void watchdog_teardown(struct worker *w)
{
	uint64_t one = 1;

	for (int t = 0; t < TEARDOWN_WAIT_MS; t++) {
		bool all = true;

		for (unsigned i = 0; i < w->nvgpus; i++)
			all &= !w->vgpus[i].engine->local || w->vgpus[i].poller_done;
		if (all)
			break;
		usleep(1000);
	}
	/* threads asleep in a wait look at the header when woken */
	for (unsigned t = 0; t < w->nthreads; t++) {
		ssize_t r;

		if (w->wake) {
			w->wake(w, t); /* a VM slot: the guest's interrupt */
			continue;
		}
		/* EAGAIN (a full counter) wakes the thread as well */
		r = write(w->wake_fds[t], &one, sizeof(one));
		(void)r;
	}
	log_info("%s: worker exits to free its GPU context (GPU time limit)", w->tenant);
}

void watchdog_disarm(struct vgpu *v)
{
	struct watchdog *wd = v->watch;

	if (!wd)
		return;
	for (size_t i = 0; i < wd->ns; i++)
		for (unsigned k = 0; k < wd->s[i].n; k++)
			v->ops->event_destroy(v->dev, wd->s[i].m[(wd->s[i].head + k) % WATCH_MARKS].event);
	while (wd->npool)
		v->ops->event_destroy(v->dev, wd->pool[--wd->npool]);
	free(wd->s);
	free(wd);
	v->watch = NULL;
}
