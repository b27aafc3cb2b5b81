// SPDX-License-Identifier: MIT
/*
 * Graphs and executable graphs: ids chosen here, the graphs themselves kept
 * by the back end (made by capture, capture.c), or here when built node by
 * node (graphnodes.c: instantiated through a capture of their own). Both front ends hand out
 * pointers to these structs, so a CUgraph is a cudaGraph_t and a
 * CUgraphExec a cudaGraphExec_t.
 */
#include <pthread.h>
#include <stdlib.h>

#include "mearas/log.h"
#include "core.h"

#define GRAPH_MAGIC 0x6d477268u
#define EXEC_MAGIC  0x6d457865u

struct rt_graph *rt_graph_get(void *h)
{
	struct rt_graph *g = h;

	return g && g->magic == GRAPH_MAGIC ? g : NULL;
}

struct rt_graph_exec *rt_graph_exec_get(void *h)
{
	struct rt_graph_exec *x = h;

	return x && x->magic == EXEC_MAGIC ? x : NULL;
}

/* a graph object with a fresh id, not yet known to the back end */
cudaError_t rt_graph_new(int vgpu, struct rt_graph **out)
{
	struct rt_graph *g = calloc(1, sizeof(*g));

	if (!g)
		return cudaErrorMemoryAllocation;
	g->id = rt_new_handle();
	if (!g->id) {
		free(g);
		return cudaErrorMemoryAllocation;
	}
	g->magic = GRAPH_MAGIC;
	g->vgpu = vgpu;
	*out = g;
	return cudaSuccess;
}

/* Executable graphs of a graph with memory nodes: CUDA allows one at a
 * time (a second instantiation is cudaErrorNotSupported until the first
 * is destroyed). The link is dropped by whichever of the two goes first. */
static pthread_mutex_t mem_exec_lock = PTHREAD_MUTEX_INITIALIZER;

static bool has_memory_nodes(struct rt_graph *g)
{
	if (!g->built)
		return g->mem.nodes > 0; /* the alloc and free nodes its capture counted */
	for (size_t i = 0; i < g->nnodes; i++) {
		int t = rt_gnode_type(g->nodes[i]);

		if (t == cudaGraphNodeTypeMemAlloc || t == cudaGraphNodeTypeMemFree)
			return true;
	}
	return false;
}

static void mem_exec_unlink(struct rt_graph *g, struct rt_graph_exec *x)
{
	pthread_mutex_lock(&mem_exec_lock);
	if (g && g->mem_exec) {
		g->mem_exec->mem_graph = NULL;
		g->mem_exec = NULL;
	}
	if (x && x->mem_graph) {
		x->mem_graph->mem_exec = NULL;
		x->mem_graph = NULL;
	}
	pthread_mutex_unlock(&mem_exec_lock);
}

void rt_graph_free(struct rt_graph *g)
{
	mem_exec_unlink(g, NULL);
	rt_graph_free_nodes(g);
	rt_uobj_set_release(&g->uobj);
	rt_gmem_set_release(&g->mem);
	g->magic = 0;
	free(g);
}

/* the cudaGraphInstantiateFlags mearas does not take: graphs launched
 * from the device would need the device's own graph handles */
static const struct {
	unsigned long long flag;
	const char *name;
} unsupported_flags[] = {
	{ cudaGraphInstantiateFlagDeviceLaunch, "DeviceLaunch" },
};
/* passed to the instantiation where the graph runs: the real driver frees
 * the graph's allocations at each launch, or honours node priorities */
#define HOST_FLAGS (cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority)

cudaError_t rt_graph_instantiate(struct rt_graph *g, unsigned long long flags, const struct rt_stream_ref *upload,
				 const char *call, struct rt_graph_exec **out)
{
	struct rt_graph_exec *x;
	cudaError_t e;

	for (size_t i = 0; i < sizeof(unsupported_flags) / sizeof(unsupported_flags[0]); i++) {
		if (flags & unsupported_flags[i].flag) {
			log_warn("%s: instantiation flag %s is not supported by mearas: returning not supported",
				 call, unsupported_flags[i].name);
			return cudaErrorNotSupported;
		}
	}
	if (flags & cudaGraphInstantiateFlagUpload) {
		if (!upload)
			return cudaErrorInvalidValue; /* WithParams only */
		if (upload->vgpu != g->vgpu)
			return cudaErrorInvalidValue;
		flags &= ~(unsigned long long)cudaGraphInstantiateFlagUpload;
	}
	if (flags & ~(unsigned long long)HOST_FLAGS)
		return cudaErrorInvalidValue;
	x = calloc(1, sizeof(*x));
	if (!x)
		return cudaErrorMemoryAllocation;
	if (has_memory_nodes(g)) {
		pthread_mutex_lock(&mem_exec_lock);
		if (!g->mem_exec) {
			g->mem_exec = x;
			x->mem_graph = g;
		}
		pthread_mutex_unlock(&mem_exec_lock);
		if (!x->mem_graph) {
			log_warn("%s: a graph with memory nodes has an executable graph already (CUDA allows one at a "
				 "time): returning not supported", call);
			free(x);
			return cudaErrorNotSupported;
		}
	}
	x->id = rt_new_handle();
	x->vgpu = g->vgpu;
	x->flags = flags;
	/* the graph's allocations stay while it can run */
	e = x->id ? rt_gmem_set_copy(&x->mem, &g->mem) : cudaErrorMemoryAllocation;
	if (!e)
		e = rt_uobj_set_copy_tree(&x->uobj, g);
	if (!e && g->built) {
		/* replayed into a capture (graphnodes.c); the copy stays for updates */
		struct rt_graph *cap;

		e = rt_graph_clone(call, g, &x->shape);
		if (!e) {
			e = rt_graph_replay(x->shape, &cap);
			if (!e) {
				e = rt_do_GRAPH_INSTANTIATE(g->vgpu, cap->id, x->id, flags);
				rt_graph_destroy(cap);
			}
			if (e)
				rt_graph_free(x->shape);
		}
	} else if (!e) {
		e = rt_do_GRAPH_INSTANTIATE(g->vgpu, g->id, x->id, flags);
	}
	if (e) {
		mem_exec_unlink(NULL, x);
		rt_uobj_set_release(&x->uobj);
		rt_gmem_set_release(&x->mem);
		free(x);
		return e;
	}
	x->magic = EXEC_MAGIC;
	/* an upload asked for needs nothing more (rt_graph_upload) */
	*out = x;
	return cudaSuccess;
}

cudaError_t rt_graph_launch(struct rt_graph_exec *x, const struct rt_stream_ref *st)
{
	cudaError_t e;

	if (st->vgpu != x->vgpu)
		return cudaErrorInvalidValue;
	e = rt_do_GRAPH_LAUNCH(st->vgpu, st, x->id);
	return e ? e : rt_uobj_launch_hold(x, st);
}

/* Nothing to post: an upload only does ahead of time what a launch does
 * itself when the graph was not uploaded (the back end's launch uploads on
 * the device it runs on), so skipping it changes when that work happens,
 * not what a launch does. Checked as a launch on st would be. */
cudaError_t rt_graph_upload(struct rt_graph_exec *x, const struct rt_stream_ref *st)
{
	return st->vgpu == x->vgpu ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t rt_graph_destroy(struct rt_graph *g)
{
	cudaError_t e = g->built ? cudaSuccess : rt_do_GRAPH_DESTROY(g->vgpu, g->id);

	rt_graph_free(g);
	return e;
}

cudaError_t rt_graph_exec_destroy(struct rt_graph_exec *x)
{
	cudaError_t e = rt_do_GRAPH_EXEC_DESTROY(x->vgpu, x->id);

	mem_exec_unlink(NULL, x);
	if (x->shape)
		rt_graph_free(x->shape);
	rt_uobj_set_release(&x->uobj); /* a launch in flight holds its own */
	rt_gmem_set_release(&x->mem);
	x->magic = 0;
	free(x);
	return e;
}

cudaError_t rt_graph_node_count(struct rt_graph *g, size_t *n)
{
	uint64_t count;
	cudaError_t e;

	if (g->built) {
		*n = g->nnodes;
		return cudaSuccess;
	}
	e = rt_do_GRAPH_NODE_COUNT(g->vgpu, g->id, &count);

	/* with the alloc and free nodes the capture counted (not the back end's) */
	if (!e)
		*n = (size_t)count + g->mem.nodes;
	return e;
}
