// SPDX-License-Identifier: MIT
/*
 * Graphs built node by node (cudaGraphCreate / cuGraphCreate and the
 * Add*Node calls of both front ends). The structure is kept here: nodes
 * with their parameters copied when added or set (as CUDA copies them),
 * each with its list of dependencies (edges in order). The back end knows
 * graphs only as captures make them, so an instantiation replays the graph
 * into a capture: on private streams of the graph's vGPU, nodes are posted
 * in a topological order through the core's usual paths (launch, copy,
 * memset, host function), a node on the stream of one of its dependencies
 * when that dependency is the stream's last work, else on a fresh stream,
 * and every other edge is an event recorded after the dependency and waited
 * for (fork and join), so the captured graph has the same dependencies.
 * Child graphs are copied when added and inlined at replay. An executable
 * graph keeps a copy of what it runs: setting a node's parameters in it, or
 * updating it from a graph of the same topology, replays the copy again and
 * swaps the back end's executable graph.
 *
 * A kernel node's attributes (priority, cluster shape ...) are kept packed
 * as a LAUNCH carries them and go with its launch at replay; setting its
 * parameters keeps them.
 *
 * Event record and wait nodes replay as external records and waits
 * (cudaEventRecordExternal, cudaEventWaitExternal), which a capture keeps
 * as such nodes; their event is the caller's, which must outlive the graph
 * and its executable graphs (as in CUDA).
 *
 * Not done here (NotSupported, logged): memory allocation, external
 * semaphore, batch memop and conditional nodes, child graphs made by
 * capture, and memcpy nodes with pageable host memory (a capture would
 * take its bytes when it is made, not when the graph runs).
 */
#include <stdlib.h>
#include <string.h>

#include "mearas/log.h"
#include "core.h"

#define NODE_MAGIC 0x6d4e6f64u

struct rt_gnode {
	uint32_t magic;
	struct rt_graph *g;
	size_t index;                   /* in g->nodes */
	struct rt_node_params p;        /* owned copies */
	struct rt_gnode **deps;         /* incoming edges, in order */
	size_t ndeps, capdeps;
	struct rt_gnode *orig;          /* a copy's original (clones, executable graphs) */
	struct rt_gnode *alias;         /* an executable graph's copy: the node it was last updated from */
	bool disabled;                  /* an executable graph's copy: runs as an empty node (SetEnabled) */
};

struct rt_gnode *rt_gnode_get(void *h)
{
	struct rt_gnode *n = h;

	return n && n->magic == NODE_MAGIC ? n : NULL;
}

struct rt_graph *rt_gnode_graph(struct rt_gnode *n)
{
	return n->g;
}

int rt_gnode_type(struct rt_gnode *n)
{
	return n->p.type;
}

const struct rt_node_params *rt_gnode_params(struct rt_gnode *n)
{
	return &n->p;
}

void rt_memset_node_params(struct rt_node_params *p, void *dst, size_t pitch, unsigned value, unsigned elem,
			   size_t width, size_t height)
{
	memset(p, 0, sizeof(*p));
	p->type = cudaGraphNodeTypeMemset;
	p->u.s.dst = dst;
	p->u.s.pitch = pitch;
	p->u.s.value = value;
	p->u.s.elem = elem;
	p->u.s.width = width;
	p->u.s.height = height;
}

cudaError_t rt_graph_create(int vgpu, unsigned flags, struct rt_graph **out)
{
	struct rt_graph *g;
	cudaError_t e;

	if (!out || flags)
		return cudaErrorInvalidValue;
	e = rt_graph_new(vgpu, &g);
	if (e)
		return e;
	g->built = true;
	*out = g;
	return cudaSuccess;
}

/* ---- parameters ---- */

static void disown(struct rt_node_params *p)
{
	if (p->type == cudaGraphNodeTypeKernel) {
		free((void *)p->u.k.params);
		free((void *)p->u.k.offsets);
		free(p->u.k.args);
	} else if (p->type == cudaGraphNodeTypeGraph && p->u.child) {
		rt_graph_free(p->u.child);
	}
	memset(p, 0, sizeof(*p));
}

/* pointers of host memory a capture reads or writes when it runs: the data
 * area or registered memory; device memory is told by the allocations */
static bool usable_at_run(const void *p, size_t span)
{
	return dm_find((uint64_t)(uintptr_t)p, span, NULL, NULL) >= 0 || dh_contains(p, span) ||
	       rt_registered_twin(p, span);
}

static cudaError_t check(const char *call, struct rt_graph *g, const struct rt_node_params *p)
{
	switch (p->type) {
	case cudaGraphNodeTypeKernel: {
		const struct rt_kernel_node *k = &p->u.k;

		if (k->vgpu != g->vgpu || k->len > MEARAS_MAX_PARAM_BYTES || (k->len && !k->params) ||
		    (k->flags & ~MEARAS_LAUNCH_KNOWN))
			return cudaErrorInvalidValue;
		for (uint32_t i = 0; i < k->nparams; i++)
			if (k->offsets[i] > k->len)
				return cudaErrorInvalidValue;
		return cudaSuccess;
	}
	case cudaGraphNodeTypeMemcpy: {
		const struct rt_memcpy_node *c = &p->u.c;
		size_t dspan, sspan;

		if (!c->dst || !c->src || (unsigned)c->kind > cudaMemcpyDefault || !c->height)
			return cudaErrorInvalidValue;
		if (c->height > 1 && (c->width > c->dpitch || c->width > c->spitch))
			return cudaErrorInvalidValue;
		dspan = c->height > 1 ? c->dpitch * (c->height - 1) + c->width : c->width;
		sspan = c->height > 1 ? c->spitch * (c->height - 1) + c->width : c->width;
		if (c->width && dm_find((uint64_t)(uintptr_t)c->dst, dspan, NULL, NULL) < 0 &&
		    dm_find((uint64_t)(uintptr_t)c->src, sspan, NULL, NULL) < 0) {
			/* the core copies host to host on the calling thread, not in a capture */
			log_warn("%s: a memcpy node from host to host memory is not supported by mearas", call);
			return cudaErrorNotSupported;
		}
		if (c->width && (!usable_at_run(c->dst, dspan) || !usable_at_run(c->src, sspan))) {
			log_warn("%s: a memcpy node of pageable host memory is not supported by mearas (use memory "
				 "from cudaMallocHost/cuMemAllocHost or registered memory)", call);
			return cudaErrorNotSupported;
		}
		return cudaSuccess;
	}
	case cudaGraphNodeTypeMemset: {
		const struct rt_memset_node *s = &p->u.s;
		uint64_t bytes = (uint64_t)s->width * s->elem, span;

		if (s->elem != 1 && s->elem != 2 && s->elem != 4)
			return cudaErrorInvalidValue;
		if (!s->width || !s->height || (uintptr_t)s->dst % s->elem)
			return cudaErrorInvalidValue;
		if (s->height > 1 && (bytes > s->pitch || s->pitch % s->elem))
			return cudaErrorInvalidValue;
		span = s->height > 1 ? s->pitch * (s->height - 1) + bytes : bytes;
		if (dm_find((uint64_t)(uintptr_t)s->dst, span, NULL, NULL) < 0)
			return cudaErrorInvalidValue;
		return cudaSuccess;
	}
	case cudaGraphNodeTypeHost:
		return p->u.h.fn ? cudaSuccess : cudaErrorInvalidValue;
	case cudaGraphNodeTypeGraph: {
		struct rt_graph *c = rt_graph_get(p->u.child);

		if (!c || c == g)
			return cudaErrorInvalidValue;
		if (!c->built) {
			log_warn("%s: a child graph made by stream capture is not supported by mearas (build it node "
				 "by node)", call);
			return cudaErrorNotSupported;
		}
		return c->vgpu == g->vgpu ? cudaSuccess : cudaErrorInvalidValue;
	}
	case cudaGraphNodeTypeEmpty:
		return cudaSuccess;
	case cudaGraphNodeTypeMemAlloc:
		return p->u.m.bytesize ? cudaSuccess : cudaErrorInvalidValue;
	case cudaGraphNodeTypeMemFree:
		return p->u.m.dptr ? cudaSuccess : cudaErrorInvalidValue;
	case cudaGraphNodeTypeWaitEvent:
	case cudaGraphNodeTypeEventRecord:
		/* the event of the graph's vGPU (a wait across vGPUs is the host's) */
		return p->u.ev && p->u.ev->vgpu == g->vgpu ? cudaSuccess : cudaErrorInvalidValue;
	default:
		log_warn("%s: graph node type %d is not supported by mearas", call, p->type);
		return cudaErrorNotSupported;
	}
}

static cudaError_t clone_graph(struct rt_graph *g, struct rt_graph **out);

/* dst: a copy of src the node owns */
static cudaError_t own(struct rt_node_params *dst, const struct rt_node_params *src)
{
	*dst = *src;
	if (src->type == cudaGraphNodeTypeKernel) {
		const struct rt_kernel_node *k = &src->u.k;
		uint8_t *params = malloc(k->len ? k->len : 1);
		uint32_t *offsets = malloc(k->nparams ? k->nparams * sizeof(*offsets) : 1);
		void **args = malloc(k->nparams ? k->nparams * sizeof(*args) : 1);

		if (!params || !offsets || !args) {
			free(params);
			free(offsets);
			free(args);
			memset(dst, 0, sizeof(*dst));
			return cudaErrorMemoryAllocation;
		}
		if (k->len)
			memcpy(params, k->params, k->len);
		for (uint32_t i = 0; i < k->nparams; i++) {
			offsets[i] = k->offsets[i];
			args[i] = params + offsets[i];
		}
		dst->u.k.params = params;
		dst->u.k.offsets = offsets;
		dst->u.k.args = args;
	} else if (src->type == cudaGraphNodeTypeGraph) {
		cudaError_t e = clone_graph(src->u.child, &dst->u.child);

		if (e) {
			memset(dst, 0, sizeof(*dst));
			return e;
		}
	}
	return cudaSuccess;
}

/* ---- structure ---- */

/* new kernel parameters keep the node's attributes: those are set apart
 * (cudaGraphKernelNodeSetAttribute), not with the parameters */
static void keep_attrs(struct rt_node_params *dst, const struct rt_node_params *from)
{
	if (dst->type != cudaGraphNodeTypeKernel || from->type != cudaGraphNodeTypeKernel)
		return;
	dst->u.k.flags = from->u.k.flags;
	memcpy(dst->u.k.cluster, from->u.k.cluster, sizeof(dst->u.k.cluster));
}

/* v (of *cap elements of size elem, n of them used) with room for one more:
 * v itself, or v grown to twice its capacity (first when empty); NULL when
 * out of memory, v then unchanged */
static void *room(void *v, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t c;
	void *nv;

	if (n < *cap)
		return v;
	c = *cap ? *cap * 2 : first;
	nv = realloc(v, c * elem);
	if (nv)
		*cap = c;
	return nv;
}

static cudaError_t add_dep(struct rt_gnode *n, struct rt_gnode *d)
{
	struct rt_gnode **nd = room(n->deps, &n->capdeps, n->ndeps, sizeof(*nd), 4);

	if (!nd)
		return cudaErrorMemoryAllocation;
	n->deps = nd;
	n->deps[n->ndeps++] = d;
	return cudaSuccess;
}

static bool has_dep(const struct rt_gnode *n, const struct rt_gnode *d)
{
	for (size_t i = 0; i < n->ndeps; i++)
		if (n->deps[i] == d)
			return true;
	return false;
}

/* a new node of g (no dependencies yet), its parameters own copies of p */
static cudaError_t new_node(struct rt_graph *g, const struct rt_node_params *p, struct rt_gnode **out)
{
	struct rt_gnode *n;
	struct rt_gnode **nn = room(g->nodes, &g->cap, g->nnodes, sizeof(*nn), 8);
	cudaError_t e;

	if (!nn)
		return cudaErrorMemoryAllocation;
	g->nodes = nn;
	n = calloc(1, sizeof(*n));
	if (!n)
		return cudaErrorMemoryAllocation;
	e = own(&n->p, p);
	if (e) {
		free(n);
		return e;
	}
	n->magic = NODE_MAGIC;
	n->g = g;
	n->index = g->nnodes;
	g->nodes[g->nnodes++] = n;
	*out = n;
	return cudaSuccess;
}

static void free_node(struct rt_gnode *n)
{
	disown(&n->p);
	free(n->deps);
	n->magic = 0;
	free(n);
}

void rt_graph_free_nodes(struct rt_graph *g)
{
	for (size_t i = 0; i < g->nnodes; i++)
		free_node(g->nodes[i]);
	free(g->nodes);
	g->nodes = NULL;
	g->nnodes = g->cap = 0;
}

/* dependency lists name live nodes of g, each once */
static cudaError_t check_deps(struct rt_graph *g, void *const *deps, size_t ndeps)
{
	if (ndeps && !deps)
		return cudaErrorInvalidValue;
	for (size_t i = 0; i < ndeps; i++) {
		struct rt_gnode *d = rt_gnode_get(deps[i]);

		if (!d || d->g != g)
			return cudaErrorInvalidValue;
		for (size_t j = 0; j < i; j++)
			if (deps[j] == deps[i])
				return cudaErrorInvalidValue;
	}
	return cudaSuccess;
}

cudaError_t rt_graph_add(const char *call, struct rt_graph *g, void *const *deps, size_t ndeps,
			 const struct rt_node_params *p, struct rt_gnode **out)
{
	struct rt_gnode *n = NULL;
	struct rt_node_params q;
	bool freed = false;
	cudaError_t e;

	if (!out || !p)
		return cudaErrorInvalidValue;
	if (!g->built) {
		log_warn("%s: adding nodes to a graph made by stream capture is not supported by mearas", call);
		return cudaErrorNotSupported;
	}
	e = check_deps(g, deps, ndeps);
	if (!e)
		e = check(call, g, p);
	/* graph memory (graphmem.c): an alloc node's is allocated now and
	 * held by the graph; a free node marks its memory freed */
	q = *p;
	if (!e && p->type == cudaGraphNodeTypeMemAlloc)
		e = rt_gmem_node_alloc(g, &q);
	if (!e && p->type == cudaGraphNodeTypeMemFree) {
		e = rt_gmem_free_in_graph((uint64_t)(uintptr_t)p->u.m.dptr, call);
		freed = !e;
	}
	if (!e)
		e = new_node(g, &q, &n);
	for (size_t i = 0; !e && i < ndeps; i++)
		e = add_dep(n, deps[i]);
	if (e) {
		if (n && g->nnodes && g->nodes[g->nnodes - 1] == n) {
			g->nnodes--;
			free_node(n);
		}
		if (freed)
			rt_gmem_unfree((uint64_t)(uintptr_t)p->u.m.dptr);
		/* an alloc node's memory goes with the graph */
		if (p->type == cudaGraphNodeTypeMemAlloc && q.u.m.dptr)
			rt_gmem_free_in_graph((uint64_t)(uintptr_t)q.u.m.dptr, call);
		return e;
	}
	*out = n;
	return cudaSuccess;
}

cudaError_t rt_event_node_params(int type, void *event, struct rt_node_params *p)
{
	struct rt_event *ev = rt_event_get(event);

	if (!ev)
		return cudaErrorInvalidValue;
	memset(p, 0, sizeof(*p));
	p->type = type;
	p->u.ev = ev;
	return cudaSuccess;
}

cudaError_t rt_gnode_set(const char *call, struct rt_gnode *n, const struct rt_node_params *p)
{
	struct rt_node_params copy;
	cudaError_t e;

	if (!p || p->type != n->p.type)
		return cudaErrorInvalidValue;
	e = check(call, n->g, p);
	if (!e)
		e = own(&copy, p);
	if (e)
		return e;
	keep_attrs(&copy, &n->p);
	disown(&n->p);
	n->p = copy;
	return cudaSuccess;
}

cudaError_t rt_gnode_kernel_attr(const char *call, struct rt_gnode *n, int id, const cudaLaunchAttributeValue *set,
				 cudaLaunchAttributeValue *get)
{
	struct rt_kernel_node *k = &n->p.u.k;

	if (n->p.type != cudaGraphNodeTypeKernel)
		return cudaErrorInvalidValue;
	if (set)
		return rt_kernel_node_attr_set(id, set, call, k->grid, &k->flags, k->cluster);
	return rt_kernel_node_attr_get(id, k->flags, k->cluster, call, get);
}

cudaError_t rt_gnode_kernel_attrs_copy(struct rt_gnode *dst, struct rt_gnode *src)
{
	if (dst->p.type != cudaGraphNodeTypeKernel || src->p.type != cudaGraphNodeTypeKernel)
		return cudaErrorInvalidValue;
	if (dst->g->vgpu != src->g->vgpu)
		/* nodes of two contexts: 201, the driver's CUDA_ERROR_INVALID_CONTEXT */
		return cudaErrorDeviceUninitialized;
	keep_attrs(&dst->p, &src->p);
	return cudaSuccess;
}

static bool has_dependents(struct rt_graph *g, const struct rt_gnode *n)
{
	for (size_t i = 0; i < g->nnodes; i++)
		if (has_dep(g->nodes[i], n))
			return true;
	return false;
}

/* CUDA's list convention (rt_graph_nodes) over a count and a getter */
static void put(void **out, size_t cap, size_t *k, void *v)
{
	if (out && *k < cap)
		out[*k] = v;
	(*k)++;
}

static void finish(void **out, size_t cap, size_t k, size_t *n)
{
	if (!out) {
		*n = k;
		return;
	}
	for (size_t i = k; i < cap; i++)
		out[i] = NULL;
	if (k < cap)
		*n = k;
}

cudaError_t rt_graph_nodes(struct rt_graph *g, bool roots, void **out, size_t *n)
{
	size_t k = 0, cap;

	if (!n)
		return cudaErrorInvalidValue;
	cap = *n;
	for (size_t i = 0; i < g->nnodes; i++)
		if (!roots || !g->nodes[i]->ndeps)
			put(out, cap, &k, g->nodes[i]);
	finish(out, cap, k, n);
	return cudaSuccess;
}

cudaError_t rt_graph_edges(struct rt_graph *g, void **from, void **to, size_t *n)
{
	size_t k = 0, cap;

	if (!n || (!from) != (!to))
		return cudaErrorInvalidValue;
	cap = *n;
	for (size_t i = 0; i < g->nnodes; i++) {
		struct rt_gnode *t = g->nodes[i];

		for (size_t j = 0; j < t->ndeps; j++) {
			if (from && k < cap) {
				from[k] = t->deps[j];
				to[k] = t;
			}
			k++;
		}
	}
	finish(from, cap, k, n);
	if (to)
		finish(to, cap, k, &cap);
	return cudaSuccess;
}

cudaError_t rt_gnode_edges(struct rt_gnode *node, bool dependents, void **out, size_t *n)
{
	struct rt_graph *g = node->g;
	size_t k = 0, cap;

	if (!n)
		return cudaErrorInvalidValue;
	cap = *n;
	if (!dependents) {
		for (size_t i = 0; i < node->ndeps; i++)
			put(out, cap, &k, node->deps[i]);
	} else {
		for (size_t i = 0; i < g->nnodes; i++)
			if (has_dep(g->nodes[i], node))
				put(out, cap, &k, g->nodes[i]);
	}
	finish(out, cap, k, n);
	return cudaSuccess;
}

static cudaError_t edge_nodes(struct rt_graph *g, void *f, void *t, struct rt_gnode **from, struct rt_gnode **to)
{
	*from = rt_gnode_get(f);
	*to = rt_gnode_get(t);
	if (!*from || !*to || (*from)->g != g || (*to)->g != g || *from == *to)
		return cudaErrorInvalidValue;
	return cudaSuccess;
}

/* all or nothing: every edge of the lists is checked first; for adding,
 * none is there yet nor twice in the lists; for removing, each is there */
static cudaError_t check_edges(struct rt_graph *g, void *const *from, void *const *to, size_t n, bool adding)
{
	struct rt_gnode *f, *t;
	cudaError_t e;

	if (!g->built)
		return cudaErrorNotSupported;
	if (n && (!from || !to))
		return cudaErrorInvalidValue;
	for (size_t i = 0; i < n; i++) {
		e = edge_nodes(g, from[i], to[i], &f, &t);
		if (e)
			return e;
		if (has_dep(t, f) == adding)
			return cudaErrorInvalidValue; /* exists already, or not at all */
		for (size_t j = 0; adding && j < i; j++)
			if (from[j] == from[i] && to[j] == to[i])
				return cudaErrorInvalidValue;
	}
	return cudaSuccess;
}

/* Edge data as both front ends take it: the default kind, or a programmatic
 * edge out of a kernel's programmatic or launch-completion port, which is
 * kept as a full dependency (the downstream node starts when the upstream
 * one has ended; said once); anything else is refused. */
cudaError_t rt_graph_edge_data(const cudaGraphEdgeData *e, size_t n)
{
	static int said;

	for (size_t i = 0; e && i < n; i++) {
		const cudaGraphEdgeData *d = &e[i];
		bool reserved = false;

		for (size_t k = 0; k < sizeof(d->reserved); k++)
			reserved |= d->reserved[k] != 0;
		if (!d->type && !d->from_port && !d->to_port && !reserved)
			continue;
		if (d->type == cudaGraphDependencyTypeProgrammatic && !d->to_port && !reserved &&
		    (d->from_port == cudaGraphKernelNodePortProgrammatic ||
		     d->from_port == cudaGraphKernelNodePortLaunchCompletion)) {
			if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
				log_info("programmatic graph edges are kept by mearas as full dependencies "
					 "(the downstream kernel starts when the upstream one has ended)");
			continue;
		}
		log_warn("graph edge data (type %u, ports %u -> %u) is not supported by mearas", d->type, d->from_port,
			 d->to_port);
		return cudaErrorNotSupported;
	}
	return cudaSuccess;
}

/* Add/RemoveDependencies of both front ends once the graph is known to be
 * built: the edge data checked, then the edges added or removed */
cudaError_t rt_graph_change_deps(struct rt_graph *g, void *const *from, void *const *to,
				 const cudaGraphEdgeData *ed, size_t n, bool add)
{
	cudaError_t e = rt_graph_edge_data(ed, n);

	if (e)
		return e;
	return add ? rt_graph_add_deps(g, from, to, n) : rt_graph_remove_deps(g, from, to, n);
}

cudaError_t rt_graph_add_deps(struct rt_graph *g, void *const *from, void *const *to, size_t n)
{
	cudaError_t e = check_edges(g, from, to, n, true);

	for (size_t i = 0; i < n && !e; i++)
		e = add_dep(to[i], from[i]);
	return e;
}

static void drop_dep(struct rt_gnode *t, const struct rt_gnode *f)
{
	for (size_t j = 0; j < t->ndeps; j++) {
		if (t->deps[j] == f) {
			memmove(&t->deps[j], &t->deps[j + 1], (t->ndeps - j - 1) * sizeof(t->deps[0]));
			t->ndeps--;
			return;
		}
	}
}

cudaError_t rt_graph_remove_deps(struct rt_graph *g, void *const *from, void *const *to, size_t n)
{
	cudaError_t e = check_edges(g, from, to, n, false);

	for (size_t i = 0; i < n && !e; i++)
		drop_dep(to[i], from[i]);
	return e;
}

cudaError_t rt_gnode_destroy(struct rt_gnode *n)
{
	struct rt_graph *g = n->g;

	for (size_t i = 0; i < g->nnodes; i++)
		drop_dep(g->nodes[i], n);
	memmove(&g->nodes[n->index], &g->nodes[n->index + 1], (g->nnodes - n->index - 1) * sizeof(g->nodes[0]));
	g->nnodes--;
	for (size_t i = n->index; i < g->nnodes; i++)
		g->nodes[i]->index = i;
	free_node(n);
	return cudaSuccess;
}

/* a new built graph with g's nodes, parameters and edges, each node naming
 * its original */
static cudaError_t clone_graph(struct rt_graph *g, struct rt_graph **out)
{
	struct rt_graph *c;
	struct rt_gnode *n;
	cudaError_t e = rt_graph_create(g->vgpu, 0, &c);

	for (size_t i = 0; !e && i < g->nnodes; i++) {
		e = new_node(c, &g->nodes[i]->p, &n);
		if (!e)
			n->orig = g->nodes[i];
	}
	for (size_t i = 0; !e && i < g->nnodes; i++)
		for (size_t j = 0; !e && j < g->nodes[i]->ndeps; j++)
			e = add_dep(c->nodes[i], c->nodes[g->nodes[i]->deps[j]->index]);
	if (!e)
		e = rt_gmem_set_copy(&c->mem, &g->mem); /* its alloc nodes' memory */
	if (!e)
		e = rt_uobj_set_copy(&c->uobj, &g->uobj);
	if (e) {
		if (c)
			rt_graph_free(c);
		return e;
	}
	*out = c;
	return cudaSuccess;
}

/* a graph made by capture is the back end's: so is its clone */
static cudaError_t clone_captured(struct rt_graph *g, struct rt_graph **out)
{
	struct rt_graph *c;
	cudaError_t e = rt_graph_new(g->vgpu, &c);

	if (e)
		return e;
	e = rt_do_GRAPH_CLONE(g->vgpu, g->id, c->id);
	if (e) {
		rt_graph_free(c);
		return e;
	}
	e = rt_gmem_set_copy(&c->mem, &g->mem);
	if (!e)
		e = rt_uobj_set_copy(&c->uobj, &g->uobj);
	if (e) {
		rt_graph_destroy(c);
		return e;
	}
	*out = c;
	return cudaSuccess;
}

cudaError_t rt_graph_clone(const char *call, struct rt_graph *g, struct rt_graph **out)
{
	if (!out)
		return cudaErrorInvalidValue;
	if (!g->built)
		return clone_captured(g, out);
	return clone_graph(g, out);
}

cudaError_t rt_gnode_find_in_clone(struct rt_graph *clone, struct rt_gnode *orig, struct rt_gnode **out)
{
	if (!out || !clone->built)
		return cudaErrorInvalidValue;
	for (size_t i = 0; i < clone->nnodes; i++) {
		if (clone->nodes[i]->orig == orig) {
			*out = clone->nodes[i];
			return cudaSuccess;
		}
	}
	return cudaErrorInvalidValue;
}

/* ---- replay into a capture ---- */

/* the graph flattened: child graphs inlined between an entry and an exit
 * join (p NULL: nothing to post) */
struct flat {
	const struct rt_node_params *p;
	size_t *deps;
	size_t ndeps;
	size_t pending;                 /* unposted dependencies (ordering) */
	size_t ndependents;
	int stream;
	struct rt_event *done;          /* recorded after it, when it has dependents */
};

struct flatten {
	struct flat *v;
	size_t n, cap;
};

#define NONE ((size_t)-1)

static size_t push(struct flatten *F, const struct rt_node_params *p)
{
	struct flat *nv = room(F->v, &F->cap, F->n, sizeof(*nv), 16);

	if (!nv)
		return NONE;
	F->v = nv;
	memset(&F->v[F->n], 0, sizeof(F->v[0]));
	F->v[F->n].p = p;
	F->v[F->n].stream = -1;
	return F->n++;
}

static cudaError_t set_deps(struct flatten *F, size_t i, size_t n)
{
	F->v[i].deps = n ? calloc(n, sizeof(size_t)) : NULL;
	if (n && !F->v[i].deps)
		return cudaErrorMemoryAllocation;
	F->v[i].ndeps = n;
	return cudaSuccess;
}

/* g's nodes after entry (NONE: none); *exit the join that follows them all
 * (children only) */
static cudaError_t flatten(struct flatten *F, struct rt_graph *g, size_t entry, size_t *exit, int depth)
{
	size_t *in, *out, nsinks = 0;
	cudaError_t e = cudaSuccess;

	if (depth > 64)
		return cudaErrorInvalidValue;
	in = calloc(g->nnodes + 1, sizeof(*in));
	out = calloc(g->nnodes + 1, sizeof(*out));
	if (!in || !out)
		e = cudaErrorMemoryAllocation;
	for (size_t i = 0; !e && i < g->nnodes; i++) {
		struct rt_gnode *n = g->nodes[i];

		if (n->p.type == cudaGraphNodeTypeGraph) {
			in[i] = push(F, NULL);
			e = in[i] == NONE ? cudaErrorMemoryAllocation : flatten(F, n->p.u.child, in[i], &out[i], depth + 1);
		} else {
			/* memory nodes post nothing: the graph holds its memory (graphmem.c) */
			bool empty = n->p.type == cudaGraphNodeTypeEmpty || n->p.type == cudaGraphNodeTypeMemAlloc ||
				     n->p.type == cudaGraphNodeTypeMemFree || n->disabled;

			in[i] = out[i] = push(F, empty ? NULL : &n->p);
			if (in[i] == NONE)
				e = cudaErrorMemoryAllocation;
		}
	}
	for (size_t i = 0; !e && i < g->nnodes; i++) {
		struct rt_gnode *n = g->nodes[i];

		if (n->ndeps) {
			e = set_deps(F, in[i], n->ndeps);
			for (size_t j = 0; !e && j < n->ndeps; j++)
				F->v[in[i]].deps[j] = out[n->deps[j]->index];
		} else if (entry != NONE) {
			e = set_deps(F, in[i], 1);
			if (!e)
				F->v[in[i]].deps[0] = entry;
		}
		if (!has_dependents(g, n))
			nsinks++;
	}
	if (!e && exit) {
		size_t x = push(F, NULL), k = 0;

		if (x == NONE)
			e = cudaErrorMemoryAllocation;
		if (!e && !g->nnodes) {
			e = set_deps(F, x, 1);
			if (!e)
				F->v[x].deps[0] = entry;
		} else if (!e) {
			e = set_deps(F, x, nsinks);
			for (size_t i = 0; !e && i < g->nnodes; i++)
				if (!has_dependents(g, g->nodes[i]))
					F->v[x].deps[k++] = out[i];
		}
		*exit = x;
	}
	free(in);
	free(out);
	return e;
}

struct replay {
	int vgpu;
	struct rt_stream **streams;
	long *tail;                     /* flat index last posted on each stream; -1 none */
	size_t nstreams, cap;
	struct rt_event **events;       /* every event made, to destroy */
	size_t nevents, capevents;
};

#define TAIL_START (-1L)

static cudaError_t new_event(struct replay *R, struct rt_event **out)
{
	struct rt_event **ne = room(R->events, &R->capevents, R->nevents, sizeof(*ne), 16);
	cudaError_t e;

	if (!ne)
		return cudaErrorMemoryAllocation;
	R->events = ne;
	e = rt_event_create(R->vgpu, cudaEventDisableTiming, out);
	if (!e)
		R->events[R->nevents++] = *out;
	return e;
}

static cudaError_t new_stream(struct replay *R, int *idx)
{
	cudaError_t e;

	if (R->nstreams == R->cap) {
		size_t cap = R->cap ? R->cap * 2 : 8;
		struct rt_stream **ns = realloc(R->streams, cap * sizeof(*ns));
		long *nt = realloc(R->tail, cap * sizeof(*nt));

		if (ns)
			R->streams = ns;
		if (nt)
			R->tail = nt;
		if (!ns || !nt)
			return cudaErrorMemoryAllocation;
		R->cap = cap;
	}
	e = rt_stream_create(R->vgpu, cudaStreamNonBlocking, 0, &R->streams[R->nstreams]);
	if (e)
		return e;
	R->tail[R->nstreams] = TAIL_START;
	*idx = (int)R->nstreams++;
	return cudaSuccess;
}

static cudaError_t ref_of(struct replay *R, int s, struct rt_stream_ref *st)
{
	return rt_stream_ref((cudaStream_t)R->streams[s], st);
}

/* post one node's work on stream s */
static cudaError_t post(struct replay *R, int s, const struct rt_node_params *p)
{
	cudaStream_t stream = (cudaStream_t)R->streams[s];
	struct rt_stream_ref st;
	cudaError_t e = ref_of(R, s, &st);

	if (e)
		return e;
	switch (p->type) {
	case cudaGraphNodeTypeKernel: {
		const struct rt_kernel_node *k = &p->u.k;

		return rt_do_LAUNCH(st.vgpu, &st, k->func_id, k->grid, k->block, k->cluster, k->smem, k->flags,
				    k->params, k->len, false);
	}
	case cudaGraphNodeTypeMemcpy: {
		const struct rt_memcpy_node *c = &p->u.c;

		if (c->height == 1)
			return rt_memcpy(c->dst, c->src, c->width, c->kind, stream, true);
		return rt_memcpy_2d(c->dst, c->dpitch, c->src, c->spitch, c->width, c->height, c->kind, stream,
				    true);
	}
	case cudaGraphNodeTypeMemset: {
		const struct rt_memset_node *m = &p->u.s;
		uint64_t dst = (uint64_t)(uintptr_t)m->dst;

		if (m->elem == 1)
			return rt_memset(m->dst, m->pitch, (int)(m->value & 0xff), m->width, m->height, stream);
		for (size_t row = 0; row < m->height && !e; row++)
			e = rt_do_MEMSET(st.vgpu, &st, dst + row * m->pitch, m->value, m->width, m->elem, false);
		return e;
	}
	case cudaGraphNodeTypeHost:
		return rt_post_host_fn(stream, p->u.h.fn, NULL, p->u.h.user);
	case cudaGraphNodeTypeEventRecord:
		return rt_event_record(p->u.ev, &st, MEARAS_EVENT_RECORD_EXTERNAL);
	case cudaGraphNodeTypeWaitEvent:
		/* posted even before the event's first record: the graph waits
		 * for whatever record is the latest when it runs */
		return rt_do_STREAM_WAIT_EVENT(st.vgpu, &st, p->u.ev->id, MEARAS_EVENT_WAIT_EXTERNAL);
	default:
		return cudaErrorNotSupported; /* refused when added */
	}
}

/* the order of posting: Kahn's, by flat index among the ready ones */
static cudaError_t order(struct flatten *F, size_t *ord)
{
	size_t k = 0, head = 0;

	for (size_t i = 0; i < F->n; i++) {
		F->v[i].pending = F->v[i].ndeps;
		for (size_t j = 0; j < F->v[i].ndeps; j++)
			F->v[F->v[i].deps[j]].ndependents++;
	}
	for (size_t i = 0; i < F->n; i++)
		if (!F->v[i].pending)
			ord[k++] = i;
	while (head < k) {
		size_t i = ord[head++];

		/* the dependents of i: scan (graphs are small) */
		for (size_t t = 0; t < F->n; t++)
			for (size_t j = 0; j < F->v[t].ndeps; j++)
				if (F->v[t].deps[j] == i && !--F->v[t].pending)
					ord[k++] = t;
	}
	return k == F->n ? cudaSuccess : cudaErrorInvalidValue; /* a cycle */
}

static cudaError_t post_all(struct replay *R, struct flatten *F, const size_t *ord, struct rt_event *start)
{
	struct rt_stream_ref st;
	cudaError_t e = cudaSuccess;

	for (size_t o = 0; o < F->n && !e; o++) {
		size_t i = ord[o];
		struct flat *f = &F->v[i];
		int s = -1;

		/* a stream whose last work is one of its dependencies */
		for (size_t j = 0; j < f->ndeps && s < 0; j++) {
			int ds = F->v[f->deps[j]].stream;

			if (R->tail[ds] == (long)f->deps[j])
				s = ds;
		}
		if (s < 0 && !f->ndeps && R->tail[0] == TAIL_START)
			s = 0;
		if (s < 0) {
			e = new_stream(R, &s);
			if (e)
				break;
		}
		e = ref_of(R, s, &st);
		/* a fresh stream joins the capture by waiting */
		if (!e && R->tail[s] == TAIL_START && s != 0 && !f->ndeps)
			e = rt_stream_wait(&st, start, 0);
		for (size_t j = 0; j < f->ndeps && !e; j++) {
			struct flat *d = &F->v[f->deps[j]];

			if (d->stream != s || R->tail[s] != (long)f->deps[j])
				e = rt_stream_wait(&st, d->done, 0);
		}
		if (!e && f->p)
			e = post(R, s, f->p);
		f->stream = s;
		R->tail[s] = (long)i;
		if (!e && f->ndependents) {
			e = new_event(R, &f->done);
			if (!e)
				e = rt_event_record(f->done, &st, 0);
		}
	}
	/* every stream joins the first again */
	for (size_t s = 1; s < R->nstreams && !e; s++) {
		struct rt_stream_ref st0;
		struct rt_event *j;

		e = new_event(R, &j);
		if (!e)
			e = ref_of(R, (int)s, &st);
		if (!e)
			e = rt_event_record(j, &st, 0);
		if (!e)
			e = ref_of(R, 0, &st0);
		if (!e)
			e = rt_stream_wait(&st0, j, 0);
	}
	return e;
}

cudaError_t rt_graph_replay(struct rt_graph *g, struct rt_graph **captured)
{
	struct replay R = { .vgpu = g->vgpu };
	struct flatten F = { 0 };
	struct rt_stream_ref st0;
	struct rt_event *start = NULL;
	size_t *ord = NULL;
	int s0;
	cudaError_t e, e2;

	e = flatten(&F, g, NONE, NULL, 0);
	if (!e) {
		ord = calloc(F.n + 1, sizeof(*ord));
		e = ord ? order(&F, ord) : cudaErrorMemoryAllocation;
	}
	if (!e)
		e = new_stream(&R, &s0);
	if (!e)
		e = ref_of(&R, s0, &st0);
	if (!e)
		e = rt_capture_begin(&st0, cudaStreamCaptureModeRelaxed);
	if (!e) {
		e = new_event(&R, &start);
		if (!e)
			e = rt_event_record(start, &st0, 0);
		if (!e)
			e = post_all(&R, &F, ord, start);
		/* the capture ends whatever happened */
		e2 = rt_capture_end(&st0, captured);
		if (e && !e2)
			rt_graph_destroy(*captured);
		if (!e)
			e = e2;
	}
	for (size_t i = 0; i < R.nevents; i++)
		rt_event_destroy(R.events[i]);
	for (size_t i = 0; i < R.nstreams; i++)
		rt_stream_destroy(R.streams[i]);
	for (size_t i = 0; i < F.n; i++)
		free(F.v[i].deps);
	free(F.v);
	free(ord);
	free(R.events);
	free(R.streams);
	free(R.tail);
	return e;
}

/* ---- executable graphs ---- */

/* a new back-end executable graph of x's copy in place of the old one */
static cudaError_t reinstantiate(struct rt_graph_exec *x)
{
	struct rt_graph *cap;
	uint32_t id = rt_new_handle();
	cudaError_t e;

	if (!id)
		return cudaErrorMemoryAllocation;
	e = rt_graph_replay(x->shape, &cap);
	if (e)
		return e;
	e = rt_do_GRAPH_INSTANTIATE(x->vgpu, cap->id, id, x->flags);
	rt_graph_destroy(cap);
	if (e)
		return e;
	/* launches in flight finish with the old one */
	rt_do_GRAPH_EXEC_DESTROY(x->vgpu, x->id);
	x->id = id;
	return cudaSuccess;
}

static struct rt_gnode *shape_node(struct rt_graph_exec *x, struct rt_gnode *node)
{
	for (size_t i = 0; i < x->shape->nnodes; i++)
		if (x->shape->nodes[i]->orig == node || x->shape->nodes[i]->alias == node)
			return x->shape->nodes[i];
	return NULL;
}

/* cudaGraphNodeSetEnabled and GetEnabled (set NULL: get): a kernel, memset
 * or memcpy node of an executable graph built node by node. A disabled node
 * is replayed as an empty one, so what depends on it still waits for its
 * dependencies; its parameters stay, and updates change them as before. */
cudaError_t rt_graph_exec_node_enabled(struct rt_graph_exec *x, struct rt_gnode *node, const unsigned *set,
				       unsigned *get)
{
	struct rt_gnode *n = x->shape ? shape_node(x, node) : NULL;
	bool was;
	cudaError_t e;

	if (!n || (n->p.type != cudaGraphNodeTypeKernel && n->p.type != cudaGraphNodeTypeMemset &&
		   n->p.type != cudaGraphNodeTypeMemcpy))
		return cudaErrorInvalidValue;
	if (!set) {
		*get = !n->disabled;
		return cudaSuccess;
	}
	was = n->disabled;
	n->disabled = !*set;
	if (n->disabled == was)
		return cudaSuccess;
	e = reinstantiate(x);
	if (e)
		n->disabled = was;
	return e;
}

cudaError_t rt_graph_exec_set(const char *call, struct rt_graph_exec *x, struct rt_gnode *node,
			      const struct rt_node_params *p)
{
	struct rt_gnode *n = x->shape ? shape_node(x, node) : NULL;
	struct rt_node_params old;
	cudaError_t e;

	if (!n || !p || p->type != n->p.type)
		return cudaErrorInvalidValue;
	if (p->type == cudaGraphNodeTypeGraph && p->u.child) {
		/* the child must keep its topology: an update of the inlined copy */
		int result;
		void *err, *err_from;
		struct rt_graph *c = rt_graph_get(p->u.child);

		if (!c || !c->built)
			return cudaErrorInvalidValue;
		e = rt_graph_exec_update(&(struct rt_graph_exec){ .vgpu = x->vgpu, .shape = n->p.u.child, .id = 0 },
					 c, &result, &err, &err_from);
		if (e == cudaErrorGraphExecUpdateFailure)
			return cudaErrorInvalidValue; /* not the child's topology */
		return e ? e : reinstantiate(x);
	}
	e = check(call, x->shape, p);
	if (e)
		return e;
	old = n->p;
	e = own(&n->p, p);
	if (e) {
		n->p = old;
		return e;
	}
	keep_attrs(&n->p, &old);
	e = reinstantiate(x);
	if (e) {
		disown(&n->p);
		n->p = old;
		return e;
	}
	disown(&old);
	return cudaSuccess;
}

/* why node a (x's) cannot take b's parameters, or 0 */
static int param_change(const struct rt_gnode *a, const struct rt_gnode *b)
{
	if (a->p.type == cudaGraphNodeTypeKernel && a->p.u.k.vgpu != b->p.u.k.vgpu)
		return cudaGraphExecUpdateErrorUnsupportedFunctionChange;
	if (a->p.type == cudaGraphNodeTypeMemcpy) {
		const struct rt_memcpy_node *p = &a->p.u.c, *q = &b->p.u.c;

		/* where each operand is cannot change */
		if (dm_find((uint64_t)(uintptr_t)p->dst, 1, NULL, NULL) != dm_find((uint64_t)(uintptr_t)q->dst, 1, NULL, NULL) ||
		    dm_find((uint64_t)(uintptr_t)p->src, 1, NULL, NULL) != dm_find((uint64_t)(uintptr_t)q->src, 1, NULL, NULL))
			return cudaGraphExecUpdateErrorParametersChanged;
	}
	if (a->p.type == cudaGraphNodeTypeMemset) {
		const struct rt_memset_node *p = &a->p.u.s, *q = &b->p.u.s;

		if (dm_find((uint64_t)(uintptr_t)p->dst, 1, NULL, NULL) != dm_find((uint64_t)(uintptr_t)q->dst, 1, NULL, NULL))
			return cudaGraphExecUpdateErrorParametersChanged;
		/* a 2D memset may change its address and value only */
		if ((p->height > 1 || q->height > 1) &&
		    (p->height != q->height || p->width != q->width || p->pitch != q->pitch || p->elem != q->elem))
			return cudaGraphExecUpdateErrorParametersChanged;
	}
	return cudaGraphExecUpdateSuccess;
}

/* a (x's copy) and b pair node by node in creation order */
static int compare(struct rt_graph *a, struct rt_graph *b, void **err, void **err_from)
{
	if (a->nnodes != b->nnodes)
		return cudaGraphExecUpdateErrorTopologyChanged;
	for (size_t i = 0; i < a->nnodes; i++) {
		struct rt_gnode *p = a->nodes[i], *q = b->nodes[i];
		int r;

		*err = q;
		if (p->p.type != q->p.type)
			return cudaGraphExecUpdateErrorNodeTypeChanged;
		if (p->ndeps != q->ndeps)
			return cudaGraphExecUpdateErrorTopologyChanged;
		for (size_t j = 0; j < p->ndeps; j++) {
			if (p->deps[j]->index != q->deps[j]->index) {
				*err_from = q->deps[j];
				return cudaGraphExecUpdateErrorTopologyChanged;
			}
		}
		r = p->p.type == cudaGraphNodeTypeGraph ? compare(p->p.u.child, q->p.u.child, err, err_from)
							: param_change(p, q);
		if (r) {
			if (p->p.type == cudaGraphNodeTypeGraph)
				*err = q; /* the node of the graph given */
			return r;
		}
	}
	*err = NULL;
	return cudaGraphExecUpdateSuccess;
}

/* a's copies take b's parameters (same topology) */
static cudaError_t take(struct rt_graph *a, struct rt_graph *b, struct rt_node_params *saved)
{
	cudaError_t e = cudaSuccess;
	size_t i;

	for (i = 0; i < a->nnodes && !e; i++) {
		struct rt_gnode *p = a->nodes[i], *q = b->nodes[i];

		saved[i] = p->p;
		if (p->p.type == cudaGraphNodeTypeGraph) {
			/* the child copies take the child's parameters node by node */
			memset(&saved[i], 0, sizeof(saved[i]));
			saved[i].type = cudaGraphNodeTypeEmpty;
			continue;
		}
		e = own(&p->p, &q->p);
		if (e)
			p->p = saved[i];
	}
	if (e) {
		/* put back what was taken */
		for (size_t k = 0; k + 1 < i; k++) {
			if (a->nodes[k]->p.type == cudaGraphNodeTypeGraph)
				continue;
			disown(&a->nodes[k]->p);
			a->nodes[k]->p = saved[k];
		}
		return e;
	}
	for (i = 0; i < a->nnodes && !e; i++)
		if (a->nodes[i]->p.type == cudaGraphNodeTypeGraph)
			e = rt_graph_exec_update(&(struct rt_graph_exec){ .vgpu = a->vgpu, .shape = a->nodes[i]->p.u.child },
						 b->nodes[i]->p.u.child, &(int){ 0 }, &(void *){ NULL },
						 &(void *){ NULL });
	for (i = 0; i < a->nnodes; i++)
		if (a->nodes[i]->p.type != cudaGraphNodeTypeGraph)
			disown(&saved[i]);
	for (i = 0; i < a->nnodes; i++)
		a->nodes[i]->alias = b->nodes[i];
	return e;
}

/* with x->id 0 (a child's copy), only the copy is updated */
cudaError_t rt_graph_exec_update(struct rt_graph_exec *x, struct rt_graph *g, int *result, void **err,
				 void **err_from)
{
	struct rt_node_params *saved;
	cudaError_t e;

	*result = cudaGraphExecUpdateError;
	*err = *err_from = NULL;
	if (!x->shape || !g->built) {
		*result = cudaGraphExecUpdateErrorNotSupported;
		log_warn("graph update: executable graphs and graphs made by stream capture cannot be updated "
			 "by mearas (instantiate the graph again)");
		return cudaErrorGraphExecUpdateFailure;
	}
	if (g->vgpu != x->vgpu)
		return cudaErrorGraphExecUpdateFailure;
	*result = compare(x->shape, g, err, err_from);
	if (*result != cudaGraphExecUpdateSuccess)
		return cudaErrorGraphExecUpdateFailure;
	saved = calloc(x->shape->nnodes + 1, sizeof(*saved));
	if (!saved)
		return cudaErrorMemoryAllocation;
	e = take(x->shape, g, saved);
	free(saved);
	if (!e && x->id)
		e = reinstantiate(x);
	if (e) {
		*result = cudaGraphExecUpdateError;
		return e;
	}
	return cudaSuccess;
}
