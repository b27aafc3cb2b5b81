// SPDX-License-Identifier: MIT
/*
 * User objects (cudaUserObjectCreate, cuUserObjectCreate): a pointer and a
 * destructor, counted. Graphs hold references (cudaGraphRetainUserObject;
 * a clone, and an executable graph, hold what its graph and its child
 * graphs hold), and so does each launch of an executable graph until the
 * launch's work is done: a host function posted after the launch lets go.
 * The destructor runs when the count reaches 0, on the thread that let go
 * last (the host function thread for a launch), with no CUDA call allowed
 * in it, as CUDA says of its own; CUDA requires
 * cudaUserObjectNoDestructorSync, which mearas keeps (the library's
 * teardown waits for no destructor).
 */
#include <stdlib.h>

#include "mearas/dynarray.h"
#include "mearas/log.h"
#include "core.h"

#define UOBJ_MAGIC 0x6d556f62u

struct rt_uobj {
	uint32_t magic;
	void *ptr;
	cudaHostFn_t destroy;
	uint64_t refs; /* atomic */
};

struct rt_uobj *rt_uobj_get(void *h)
{
	struct rt_uobj *o = h;

	return o && __atomic_load_n(&o->magic, __ATOMIC_ACQUIRE) == UOBJ_MAGIC ? o : NULL;
}

cudaError_t rt_uobj_create(void *ptr, cudaHostFn_t destroy, unsigned initial, unsigned flags, struct rt_uobj **out)
{
	struct rt_uobj *o;

	if (!out || !destroy || !initial || flags != cudaUserObjectNoDestructorSync)
		return cudaErrorInvalidValue;
	o = calloc(1, sizeof(*o));
	if (!o)
		return cudaErrorMemoryAllocation;
	o->ptr = ptr;
	o->destroy = destroy;
	o->refs = initial;
	__atomic_store_n(&o->magic, UOBJ_MAGIC, __ATOMIC_RELEASE);
	*out = o;
	return cudaSuccess;
}

cudaError_t rt_uobj_retain(struct rt_uobj *o, uint64_t count)
{
	if (!count)
		return cudaErrorInvalidValue;
	__atomic_add_fetch(&o->refs, count, __ATOMIC_RELAXED);
	return cudaSuccess;
}

cudaError_t rt_uobj_release(struct rt_uobj *o, uint64_t count)
{
	uint64_t left;

	if (!count)
		return cudaErrorInvalidValue;
	left = __atomic_load_n(&o->refs, __ATOMIC_RELAXED);
	do {
		if (count > left) {
			log_warn("a user object released %llu times more than it is held (%llu): refused",
				 (unsigned long long)count, (unsigned long long)left);
			return cudaErrorInvalidValue;
		}
	} while (!__atomic_compare_exchange_n(&o->refs, &left, left - count, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	if (left == count) {
		__atomic_store_n(&o->magic, 0, __ATOMIC_RELEASE);
		o->destroy(o->ptr);
		free(o);
	}
	return cudaSuccess;
}

/* ---- the references a graph, an executable graph or a launch holds ---- */

static struct rt_uobj_ref *find(struct rt_uobj_set *s, struct rt_uobj *o)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].o == o)
			return &s->v[i];
	return NULL;
}

/* count more references of o in s (taken by the caller already) */
static cudaError_t set_add(struct rt_uobj_set *s, struct rt_uobj *o, uint64_t count)
{
	struct rt_uobj_ref *r = find(s, o);

	if (!r) {
		struct rt_uobj_ref *v = mearas_dynarray_grow(s->v, &s->cap, s->n + 1, sizeof(*v), 4);

		if (!v)
			return cudaErrorMemoryAllocation;
		s->v = v;
		r = &s->v[s->n++];
		*r = (struct rt_uobj_ref){ .o = o };
	}
	r->count += count;
	return cudaSuccess;
}

cudaError_t rt_uobj_graph_retain(struct rt_graph *g, struct rt_uobj *o, unsigned count, unsigned flags)
{
	cudaError_t e;

	if (!count || (flags & ~(unsigned)cudaGraphUserObjectMove))
		return cudaErrorInvalidValue;
	/* a move hands over the caller's references: none are taken */
	if (!(flags & cudaGraphUserObjectMove))
		rt_uobj_retain(o, count);
	e = set_add(&g->uobj, o, count);
	if (e && !(flags & cudaGraphUserObjectMove))
		rt_uobj_release(o, count);
	return e;
}

cudaError_t rt_uobj_graph_release(struct rt_graph *g, struct rt_uobj *o, unsigned count)
{
	struct rt_uobj_ref *r = find(&g->uobj, o);

	if (!count || !r || r->count < count)
		return cudaErrorInvalidValue;
	r->count -= count;
	if (!r->count)
		*r = g->uobj.v[--g->uobj.n];
	return rt_uobj_release(o, count);
}

cudaError_t rt_uobj_set_copy(struct rt_uobj_set *dst, const struct rt_uobj_set *src)
{
	for (size_t i = 0; i < src->n; i++) {
		cudaError_t e = set_add(dst, src->v[i].o, src->v[i].count);

		if (e)
			return e;
		rt_uobj_retain(src->v[i].o, src->v[i].count);
	}
	return cudaSuccess;
}

void rt_uobj_set_release(struct rt_uobj_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		rt_uobj_release(s->v[i].o, s->v[i].count);
	free(s->v);
	*s = (struct rt_uobj_set){ 0 };
}

/* an executable graph's: its graph's and, child graph by child graph, theirs */
cudaError_t rt_uobj_set_copy_tree(struct rt_uobj_set *dst, struct rt_graph *g)
{
	cudaError_t e = rt_uobj_set_copy(dst, &g->uobj);

	for (size_t i = 0; !e && g->built && i < g->nnodes; i++) {
		const struct rt_node_params *p = rt_gnode_params(g->nodes[i]);

		if (p->type == cudaGraphNodeTypeGraph && p->u.child)
			e = rt_uobj_set_copy_tree(dst, p->u.child);
	}
	return e;
}

static void CUDART_CB launch_done(void *arg)
{
	struct rt_uobj_set *held = arg;

	rt_uobj_set_release(held);
	free(held);
}

/* A launch of x on st holds x's references until its work is done (a host
 * function after it lets go). Not while st captures: the host function
 * would be the outer graph's, run at its launches, not after this one. */
cudaError_t rt_uobj_launch_hold(const struct rt_graph_exec *x, const struct rt_stream_ref *st)
{
	struct rt_uobj_set *held;
	cudaError_t e;

	if (!x->uobj.n || rt_capture_active(st))
		return cudaSuccess;
	held = calloc(1, sizeof(*held));
	if (!held)
		return cudaErrorMemoryAllocation;
	e = rt_uobj_set_copy(held, &x->uobj);
	if (!e)
		e = rt_post_host_fn_on(st, NULL, launch_done, NULL, held);
	if (e) {
		rt_uobj_set_release(held);
		free(held);
	}
	return e;
}
