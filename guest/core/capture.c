// SPDX-License-Identifier: MIT
/*
 * Stream capture: the back end records what is posted to a capturing stream
 * into a graph of its own (everything that can be posted can be captured).
 * Every capture begins and ends here, so the list of captures in progress
 * answers "not capturing" without a round trip, and keeps what only the
 * process knows: each capture's unique id, its mode and the thread that
 * began it.
 *
 * Modes: the back end captures as in relaxed mode (mearasd's own calls
 * would count against a global one), and no call here is refused as
 * "potentially unsafe" during a capture. The mode is checked, kept for
 * cuThreadExchangeStreamCaptureMode, and still decides whether the capture
 * must end on the thread that began it.
 */
#include <pthread.h>
#include <stdlib.h>

#include "mearas/log.h"
#include "core.h"

struct capture {
	int vgpu;
	uint32_t stream;        /* stream id; MEARAS_STREAM_LEGACY: a per-thread default stream */
	int slot;               /* that per-thread stream's thread slot, else -1 */
	unsigned long long id;
	enum cudaStreamCaptureMode mode;
	pthread_t thread;       /* that began it */
	struct rt_gmem_set mem; /* what it allocated (graphmem.c), its graph's once it ends */
	struct capture *next;
};

static struct capture *captures;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long next_capture_id = 1;

/* the thread's mode for cuThreadExchangeStreamCaptureMode (0: global, CUDA's default) */
static __thread enum cudaStreamCaptureMode thread_mode;

/* the per-thread default stream is the thread slot's own (submit.c) */
static int slot_of(const struct rt_stream_ref *st)
{
	return (st->sqe_flags & MEARAS_SQE_PER_THREAD) ? rt_slot() : -1;
}

/* the capture of st, or NULL (capture_lock held) */
static struct capture **find(const struct rt_stream_ref *st)
{
	int slot = slot_of(st);

	for (struct capture **pp = &captures; *pp; pp = &(*pp)->next)
		if ((*pp)->vgpu == st->vgpu && (*pp)->stream == st->id && (*pp)->slot == slot)
			return pp;
	return NULL;
}

cudaError_t rt_capture_begin(const struct rt_stream_ref *st, int mode)
{
	struct capture *c, **pp;
	cudaError_t e;

	if (mode < cudaStreamCaptureModeGlobal || mode > cudaStreamCaptureModeRelaxed)
		return cudaErrorInvalidValue;
	if (st->id == MEARAS_STREAM_LEGACY && !(st->sqe_flags & MEARAS_SQE_PER_THREAD))
		return cudaErrorStreamCaptureUnsupported;
	c = calloc(1, sizeof(*c));
	if (!c)
		return cudaErrorMemoryAllocation;
	c->vgpu = st->vgpu;
	c->stream = st->id;
	c->slot = slot_of(st);
	c->mode = (enum cudaStreamCaptureMode)mode;
	c->thread = pthread_self();
	/* listed before it is posted (the lock is not held over a post) */
	pthread_mutex_lock(&capture_lock);
	if (find(st)) {
		pthread_mutex_unlock(&capture_lock);
		free(c);
		return cudaErrorIllegalState; /* CUDA's answer for a stream already capturing */
	}
	c->id = next_capture_id++;
	c->next = captures;
	captures = c;
	pthread_mutex_unlock(&capture_lock);
	e = rt_do_CAPTURE_BEGIN(st->vgpu, st, (uint64_t)mode);
	if (e) {
		pthread_mutex_lock(&capture_lock);
		for (pp = &captures; *pp && *pp != c; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = c->next;
		pthread_mutex_unlock(&capture_lock);
		free(c);
	}
	return e;
}

cudaError_t rt_capture_end(const struct rt_stream_ref *st, struct rt_graph **out)
{
	struct capture **pp, *c = NULL;
	struct rt_graph *g = NULL;
	cudaError_t e;

	pthread_mutex_lock(&capture_lock);
	pp = find(st);
	if (!pp)
		e = cudaErrorIllegalState; /* not capturing */
	else if ((*pp)->mode != cudaStreamCaptureModeRelaxed && !pthread_equal((*pp)->thread, pthread_self()))
		e = cudaErrorStreamCaptureWrongThread; /* the capture goes on */
	else
		e = rt_graph_new(st->vgpu, &g);
	if (!e) {
		c = *pp;
		*pp = c->next;
	}
	pthread_mutex_unlock(&capture_lock);
	if (e)
		return e;
	g->mem = c->mem; /* the graph holds what the capture allocated */
	free(c);
	/* the back end ends the capture whatever it answers (an invalidated
	 * capture ends with its error) */
	e = rt_do_CAPTURE_END(st->vgpu, st, g->id);
	if (e) {
		rt_graph_free(g);
		return e;
	}
	*out = g;
	return cudaSuccess;
}

cudaError_t rt_capture_info(const struct rt_stream_ref *st, const char *call, enum cudaStreamCaptureStatus *status,
			    unsigned long long *id, cudaGraph_t *graph, const cudaGraphNode_t **deps,
			    const cudaGraphEdgeData **edges, size_t *ndeps)
{
	struct capture **pp;
	unsigned long long cid = 0;
	int32_t s = cudaStreamCaptureStatusNone;
	cudaError_t e = cudaSuccess;

	if (!status || (deps && !ndeps) || (edges && !deps))
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&capture_lock);
	pp = find(st);
	if (pp)
		cid = (*pp)->id;
	pthread_mutex_unlock(&capture_lock);
	/* active or invalidated is the back end's to say */
	if (cid)
		e = rt_do_CAPTURE_STATUS(st->vgpu, st, &s);
	if (e)
		return e;
	/* the graph being captured into exists on the back end only until the
	 * capture ends, and its nodes have no handles here */
	if (s == cudaStreamCaptureStatusActive && (graph || deps)) {
		log_warn("%s: the graph being captured into and its nodes are not supported by mearas "
			 "(ask for the status and id only)", call);
		return cudaErrorNotSupported;
	}
	*status = (enum cudaStreamCaptureStatus)s;
	if (id)
		*id = s == cudaStreamCaptureStatusNone ? 0 : cid;
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (ndeps)
		*ndeps = 0;
	return cudaSuccess;
}

bool rt_capture_any(void)
{
	bool any;

	pthread_mutex_lock(&capture_lock);
	any = captures != NULL;
	pthread_mutex_unlock(&capture_lock);
	return any;
}

bool rt_capture_active(const struct rt_stream_ref *st)
{
	int32_t s = cudaStreamCaptureStatusNone;
	bool any;

	/* the legacy stream never captures (and is not asked about) */
	if (st->id == MEARAS_STREAM_LEGACY && !(st->sqe_flags & MEARAS_SQE_PER_THREAD))
		return false;
	any = rt_capture_any();
	/* the back end knows streams that joined a capture by an event wait too */
	return any && rt_do_CAPTURE_STATUS(st->vgpu, st, &s) == cudaSuccess && s != cudaStreamCaptureStatusNone;
}

cudaError_t rt_capture_mode_exchange(enum cudaStreamCaptureMode *mode)
{
	enum cudaStreamCaptureMode old = thread_mode;

	if (!mode || *mode < cudaStreamCaptureModeGlobal || *mode > cudaStreamCaptureModeRelaxed)
		return cudaErrorInvalidValue;
	thread_mode = *mode;
	*mode = old;
	return cudaSuccess;
}

static void forget(int vgpu, bool all, uint32_t stream)
{
	struct capture *gone = NULL;

	pthread_mutex_lock(&capture_lock);
	for (struct capture **pp = &captures; *pp;) {
		struct capture *c = *pp;

		if (c->vgpu == vgpu && (all || (c->slot < 0 && c->stream == stream))) {
			*pp = c->next;
			c->next = gone;
			gone = c;
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&capture_lock);
	/* what they allocated goes too (a release may post a free: not under the lock) */
	while (gone) {
		struct capture *c = gone;

		gone = c->next;
		rt_gmem_set_release(&c->mem);
		free(c);
	}
}

/* Graph memory of st's capture: the capture st began, else (a stream that
 * joined one by an event wait) every capture of its vGPU in progress, which
 * all hold it then. Counts a node in each. capture_lock held. */
static cudaError_t capture_hold(const struct rt_stream_ref *st, struct rt_gmem *g)
{
	struct capture **pp = find(st);
	cudaError_t e = cudaSuccess;

	if (pp) {
		(*pp)->mem.nodes++;
		return g ? rt_gmem_hold(&(*pp)->mem, g) : cudaSuccess;
	}
	for (struct capture *c = captures; c && !e; c = c->next) {
		if (c->vgpu != st->vgpu)
			continue;
		c->mem.nodes++;
		if (g)
			e = rt_gmem_hold(&c->mem, g);
	}
	return e;
}

cudaError_t rt_malloc_async(struct rt_pool *p, const struct rt_stream_ref *st, void **ptr, size_t size)
{
	struct rt_gmem *g;
	struct rt_gmem_set tmp = { 0 };
	cudaError_t e;

	if (!rt_capture_active(st))
		return rt_pool_alloc(p, ptr, size);
	/* an alloc node of the capture's graph */
	e = rt_gmem_alloc(p, size, &g);
	if (e)
		return e;
	/* held here until a capture holds it, so that a failure frees it */
	e = rt_gmem_hold(&tmp, g);
	if (e) {
		rt_free((void *)(uintptr_t)rt_gmem_ptr(g), NULL, false);
		return e;
	}
	pthread_mutex_lock(&capture_lock);
	e = capture_hold(st, g);
	pthread_mutex_unlock(&capture_lock);
	if (!e)
		*ptr = (void *)(uintptr_t)rt_gmem_ptr(g);
	else
		rt_gmem_free_in_graph(rt_gmem_ptr(g), "cudaMallocAsync");
	rt_gmem_set_release(&tmp);
	return e;
}

cudaError_t rt_capture_free(const struct rt_stream_ref *st, uint64_t ptr, bool *taken)
{
	cudaError_t e;

	*taken = rt_capture_active(st);
	if (!*taken)
		return cudaSuccess;
	/* a free node: the memory goes when no graph holds it any more */
	e = rt_gmem_free_in_graph(ptr, "cudaFreeAsync during a stream capture");
	if (e)
		return e;
	pthread_mutex_lock(&capture_lock);
	e = capture_hold(st, NULL);
	pthread_mutex_unlock(&capture_lock);
	return e;
}

/* a destroyed stream's capture is over, and so are a reset vGPU's */
void rt_capture_forget_stream(int vgpu, uint32_t stream)
{
	forget(vgpu, false, stream);
}

void rt_capture_forget_vgpu(int vgpu)
{
	forget(vgpu, true, 0);
}
