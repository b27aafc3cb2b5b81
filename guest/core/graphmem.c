// SPDX-License-Identifier: MIT
/*
 * Memory that graphs allocate: a stream-ordered allocation on a capturing
 * stream (cudaMallocAsync, cuMemAllocAsync) and alloc nodes (graphnodes.c).
 * CUDA allocates such memory each time the graph runs and frees it at the
 * graph's free node. mearas allocates it once, when it is captured or the
 * node added (its address is fixed from then on, as CUDA's is), and keeps it
 * while a capture, a graph or an executable graph holding it exists, so each
 * launch finds it. A free in a graph (a free node, cudaFreeAsync during a
 * capture) or by the program outside one marks it freed; it is freed once
 * nothing holds it. Never freed, it stays the program's after its last
 * holder is gone, as a CUDA graph allocation outlives its graph until freed.
 * The graph memory attributes count what is held here.
 */
#include <stdlib.h>
#include <string.h>

#include "mearas/log.h"
#include "core.h"

struct rt_gmem {
	uint64_t ptr, size;
	int vgpu;
	unsigned holders;
	bool freed;             /* by a graph or the program: freed when nothing holds it */
	bool gone;              /* its vGPU was reset: nothing to free */
	struct rt_gmem *next;
};

static struct rt_gmem *all;
static pthread_mutex_t gm_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t used[MEARAS_MAX_VGPUS], high[MEARAS_MAX_VGPUS];

/* gm_lock held */
static struct rt_gmem *find(uint64_t ptr)
{
	for (struct rt_gmem *g = all; g; g = g->next)
		if (g->ptr == ptr && !g->gone)
			return g;
	return NULL;
}

/* gm_lock held: g leaves the list (its memory stays allocated) */
static void unlist(struct rt_gmem *g)
{
	for (struct rt_gmem **pp = &all; *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	}
	if (!g->gone)
		used[g->vgpu] -= g->size;
}

cudaError_t rt_gmem_alloc(struct rt_pool *p, size_t size, struct rt_gmem **out)
{
	struct rt_gmem *g = calloc(1, sizeof(*g));
	void *ptr;
	cudaError_t e = g ? rt_pool_alloc(p, &ptr, size) : cudaErrorMemoryAllocation;

	if (e) {
		free(g);
		return e;
	}
	g->ptr = (uint64_t)(uintptr_t)ptr;
	g->size = size;
	g->vgpu = p->vgpu;
	pthread_mutex_lock(&gm_lock);
	g->next = all;
	all = g;
	used[g->vgpu] += size;
	if (used[g->vgpu] > high[g->vgpu])
		high[g->vgpu] = used[g->vgpu];
	pthread_mutex_unlock(&gm_lock);
	*out = g;
	return cudaSuccess;
}

uint64_t rt_gmem_ptr(const struct rt_gmem *g)
{
	return g->ptr;
}

cudaError_t rt_gmem_hold(struct rt_gmem_set *s, struct rt_gmem *g)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 4;
		struct rt_gmem **na = realloc(s->a, ncap * sizeof(*na));

		if (!na)
			return cudaErrorMemoryAllocation;
		s->a = na;
		s->cap = ncap;
	}
	pthread_mutex_lock(&gm_lock);
	g->holders++;
	pthread_mutex_unlock(&gm_lock);
	s->a[s->n++] = g;
	return cudaSuccess;
}

cudaError_t rt_gmem_set_copy(struct rt_gmem_set *dst, const struct rt_gmem_set *src)
{
	for (size_t i = 0; i < src->n; i++) {
		cudaError_t e = rt_gmem_hold(dst, src->a[i]);

		if (e)
			return e;
	}
	dst->nodes += src->nodes;
	return cudaSuccess;
}

void rt_gmem_set_release(struct rt_gmem_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct rt_gmem *g = s->a[i];
		bool last, free_it;

		pthread_mutex_lock(&gm_lock);
		last = --g->holders == 0;
		free_it = last && g->freed && !g->gone;
		if (last)
			unlist(g);
		pthread_mutex_unlock(&gm_lock);
		if (!last)
			continue;
		if (free_it && rt_free((void *)(uintptr_t)g->ptr, NULL, false))
			log_warn("graph memory at %#llx: its free failed", (unsigned long long)g->ptr);
		free(g);
	}
	free(s->a);
	*s = (struct rt_gmem_set){ 0 };
}

cudaError_t rt_gmem_free_in_graph(uint64_t ptr, const char *call)
{
	struct rt_gmem *g;
	cudaError_t e = cudaSuccess;

	pthread_mutex_lock(&gm_lock);
	g = find(ptr);
	if (!g || g->freed)
		e = cudaErrorInvalidValue;
	else
		g->freed = true;
	pthread_mutex_unlock(&gm_lock);
	if (e)
		log_warn("%s: %#llx is not memory a graph allocated, or a graph freed it already: a graph frees "
			 "only its own allocations", call, (unsigned long long)ptr);
	return e;
}

void rt_gmem_unfree(uint64_t ptr)
{
	struct rt_gmem *g;

	pthread_mutex_lock(&gm_lock);
	g = find(ptr);
	if (g)
		g->freed = false;
	pthread_mutex_unlock(&gm_lock);
}

cudaError_t rt_gmem_node_alloc(struct rt_graph *g, struct rt_node_params *p)
{
	struct rt_pool *pool;
	struct rt_gmem *m;
	cudaError_t e = p->u.m.bytesize ? rt_pool_default(g->vgpu, &pool) : cudaErrorInvalidValue;

	if (!e)
		e = rt_gmem_alloc(pool, p->u.m.bytesize, &m);
	if (e)
		return e;
	e = rt_gmem_hold(&g->mem, m);
	if (e) {
		/* held by nothing: rt_free frees it as an ordinary allocation */
		rt_free((void *)(uintptr_t)rt_gmem_ptr(m), NULL, false);
		return e;
	}
	p->u.m.dptr = (void *)(uintptr_t)rt_gmem_ptr(m);
	return cudaSuccess;
}

int rt_gmem_free_outside(uint64_t ptr)
{
	struct rt_gmem *g;
	int r = 0;

	pthread_mutex_lock(&gm_lock);
	g = find(ptr);
	if (g && g->holders) {
		r = g->freed ? -1 : 1;
		g->freed = true;
	} else if (g) {
		unlist(g); /* nothing holds it: an ordinary free */
		free(g);
	}
	pthread_mutex_unlock(&gm_lock);
	return r;
}

void rt_gmem_forget_vgpu(int vgpu)
{
	pthread_mutex_lock(&gm_lock);
	for (struct rt_gmem *g = all; g; g = g->next)
		if (g->vgpu == vgpu)
			g->gone = true;
	used[vgpu] = high[vgpu] = 0;
	pthread_mutex_unlock(&gm_lock);
}

cudaError_t rt_gmem_attr(int vgpu, int attr, void *value, bool set)
{
	uint64_t *v = value;
	cudaError_t e = cudaSuccess;

	if (vgpu < 0 || (unsigned)vgpu >= rt.nvgpus)
		return cudaErrorInvalidDevice;
	if (!v)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&gm_lock);
	switch (attr) {
	case cudaGraphMemAttrUsedMemCurrent:
	case cudaGraphMemAttrReservedMemCurrent:
		if (set)
			e = cudaErrorInvalidValue;
		else
			*v = used[vgpu];
		break;
	case cudaGraphMemAttrUsedMemHigh:
	case cudaGraphMemAttrReservedMemHigh:
		/* only a reset to 0 is taken, as CUDA's */
		if (set && *v)
			e = cudaErrorInvalidValue;
		else if (set)
			high[vgpu] = used[vgpu];
		else
			*v = high[vgpu];
		break;
	default:
		e = cudaErrorInvalidValue;
	}
	pthread_mutex_unlock(&gm_lock);
	return e;
}

/* the access an alloc node's memory gives: its own device's, read and write */
static cudaError_t access_ok(const char *call, int vgpu, const struct cudaMemAccessDesc *d, size_t n)
{
	if (n && !d)
		return cudaErrorInvalidValue;
	for (size_t i = 0; i < n; i++) {
		if (d[i].location.type != cudaMemLocationTypeDevice || d[i].location.id < 0 ||
		    (unsigned)d[i].location.id >= rt.nvgpus || d[i].flags != cudaMemAccessFlagsProtReadWrite)
			return cudaErrorInvalidValue;
		if (d[i].location.id != vgpu) {
			log_warn("%s: access to graph memory from another device (%d) is not supported by mearas", call,
				 d[i].location.id);
			return cudaErrorNotSupported;
		}
	}
	return cudaSuccess;
}

cudaError_t rt_graph_add_mem_alloc(const char *call, struct rt_graph *g, void *const *deps, size_t ndeps,
				   struct cudaMemAllocNodeParams *q, struct rt_gnode **out)
{
	struct rt_node_params p = { .type = cudaGraphNodeTypeMemAlloc };
	int vgpu;
	cudaError_t e = q ? rt_pool_location(call, &q->poolProps.location, q->poolProps.allocType, &vgpu)
			  : cudaErrorInvalidValue;

	if (e)
		return e;
	if (vgpu != g->vgpu) {
		log_warn("%s: graph memory on another device (%d) than the graph's (%d) is not supported by mearas",
			 call, vgpu, g->vgpu);
		return cudaErrorNotSupported;
	}
	if (q->poolProps.handleTypes != cudaMemHandleTypeNone) {
		log_warn("%s: graph memory shared with other processes (handle types %#x) is not supported by mearas",
			 call, (unsigned)q->poolProps.handleTypes);
		return cudaErrorNotSupported;
	}
	e = access_ok(call, vgpu, q->accessDescs, q->accessDescCount);
	if (e)
		return e;
	p.u.m.bytesize = q->bytesize;
	p.u.m.vgpu = vgpu;
	e = rt_graph_add(call, g, deps, ndeps, &p, out);
	if (!e)
		q->dptr = rt_gnode_params(*out)->u.m.dptr;
	return e;
}

void rt_gmem_node_params(const struct rt_node_params *p, struct cudaMemAllocNodeParams *q)
{
	memset(q, 0, sizeof(*q));
	q->poolProps.allocType = cudaMemAllocationTypePinned;
	q->poolProps.location.type = cudaMemLocationTypeDevice;
	q->poolProps.location.id = p->u.m.vgpu;
	q->bytesize = p->u.m.bytesize;
	q->dptr = p->u.m.dptr;
}
