// SPDX-License-Identifier: MIT
/*
 * Graphs by stream capture: capture, instantiation, launch and destruction.
 * Host functions captured into a graph are owned by the graph (struct
 * hf_share), its instantiations and their launches in flight.
 */
#include <stdlib.h>

#include "exec_internal.h"
#include "mearas/log.h"

int exec_no_graphs(struct vgpu *v)
{
	static int said;

	if (!said++)
		log_warn("graphs by stream capture are not supported by device '%s'", v->ops->name);
	return cudaErrorNotSupported;
}

int exec_op_CAPTURE_BEGIN(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_CAPTURE_BEGIN *in,
			  struct mearas_cqe *c, struct fence_req *f)
{
	int r;

	(void)c, (void)f;
	if (!v->ops->capture_begin)
		return exec_no_graphs(v);
	if (e->stream == MEARAS_STREAM_LEGACY && !(e->flags & MEARAS_SQE_PER_THREAD))
		return cudaErrorStreamCaptureUnsupported;
	r = v->ops->capture_begin(v->dev, in->stream, (int)in->a->mode);
	if (r == 0)
		v->captures_open = true; /* records on capturing streams count as nodes from now on */
	return r;
}

/* The share graph g owns (*out): the host functions captured into it,
 * which leave the loose list, and its node count. Fails, destroying g, when
 * the device cannot say which or how many they are. */
static int adopt_host_funcs(struct vgpu *v, void *g, struct hf_share **out)
{
	struct hf_share *sh = calloc(1, sizeof(*sh));
	size_t n = 0, got = 0;
	void **args = NULL;
	int r = sh ? 0 : cudaErrorMemoryAllocation;

	*out = NULL;
	if (!r && v->ops->graph_node_count)
		r = v->ops->graph_node_count(v->dev, g, &sh->nodes);
	if (!r && v->hf_loose)
		r = v->ops->graph_host_funcs ? v->ops->graph_host_funcs(v->dev, g, exec_host_func_trampoline, NULL, 0, &n)
					     : cudaErrorNotSupported;
	if (!r && n) {
		args = calloc(n, sizeof(*args));
		r = args ? v->ops->graph_host_funcs(v->dev, g, exec_host_func_trampoline, args, n, &got)
			 : cudaErrorMemoryAllocation;
	}
	for (struct host_func_req **pp = &v->hf_loose; !r && n && *pp;) {
		struct host_func_req *q = *pp;
		bool mine = false;

		for (size_t i = 0; i < n && i < got && !mine; i++)
			mine = args[i] == q;
		if (!mine) {
			pp = &q->next;
			continue;
		}
		*pp = q->next;
		q->next = sh->reqs;
		sh->reqs = q;
	}
	free(args);
	if (r) {
		free(sh);
		v->ops->graph_destroy(v->dev, g);
		return r;
	}
	sh->refs = 1;
	*out = sh;
	return 0;
}

/* Once no stream of this vGPU captures: captured host functions no graph
 * took (a failed capture) are freed, as nothing can run them, and the
 * records of open captures count no more (their nodes are in graphs, or
 * gone with a capture that failed). */
static void captures_over(struct vgpu *v)
{
	struct handle_table *streams = exec_table(v, MEARAS_KIND_STREAM);

	if (!v->hf_loose && !v->captures_open)
		return;
	for (uint32_t i = 0; i < streams->cap; i++)
		if (streams->slots[i].obj && exec_stream_capturing(v, streams->slots[i].obj))
			return;
	for (unsigned i = 0; i < MEARAS_MAX_THREADS; i++)
		if (v->ptds[i] && exec_stream_capturing(v, v->ptds[i]))
			return;
	exec_hf_free_list(v, v->hf_loose);
	v->hf_loose = NULL;
	v->captures_open = false;
	v->capture_nodes = 0;
}

int exec_op_CAPTURE_END(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_CAPTURE_END *in,
			struct mearas_cqe *c, struct fence_req *f)
{
	struct hf_share *sh = NULL;
	void *g;
	int r;

	(void)e, (void)c, (void)f;
	if (!v->ops->capture_end)
		return exec_no_graphs(v);
	r = v->ops->capture_end(v->dev, in->stream, &g);
	if (r)
		exec_refuse_log(v, "capture end refused (%d): the stream is not capturing, or did not begin the capture",
				r);
	if (r == 0)
		r = adopt_host_funcs(v, g, &sh);
	if (r == 0) {
		/* its nodes count as the graph's now */
		v->capture_nodes -= sh->nodes < v->capture_nodes ? sh->nodes : v->capture_nodes;
		v->graph_nodes += sh->nodes;
		r = exec_keep_or_destroy(v, MEARAS_KIND_GRAPH, in->a->graph, g, (uintptr_t)sh);
	}
	captures_over(v);
	return r;
}

int exec_op_CAPTURE_STATUS(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_CAPTURE_STATUS *in,
			   struct mearas_cqe *c, struct fence_req *f)
{
	int st = 0, r;

	(void)e, (void)f;
	if (v->ops->capture_status) {
		r = v->ops->capture_status(v->dev, in->stream, &st);
		if (r)
			return r;
	}
	c->val[0] = (uint64_t)st;
	return 0;
}

/* A copy of sh's nodes (what of the graph `what` makes) fits the vGPU's
 * limit on nodes held; else refused, logged. */
static int copy_fits(struct vgpu *v, const struct hf_share *sh, const char *what)
{
	if (!sh || v->capture_nodes + v->graph_nodes + sh->nodes <= MEARAS_MAX_GRAPH_NODES)
		return 0;
	exec_refuse_log(v, "%s of a graph of %llu nodes refused: the vGPU's captures and graphs hold %llu nodes "
			"already (limit %u)", what, (unsigned long long)sh->nodes,
			(unsigned long long)(v->capture_nodes + v->graph_nodes), MEARAS_MAX_GRAPH_NODES);
	return cudaErrorMemoryAllocation;
}

/* sh is held by one more graph or instantiation, which counts its nodes */
static void share_held(struct vgpu *v, struct hf_share *sh)
{
	if (sh) {
		sh->refs++;
		v->graph_nodes += sh->nodes;
	}
}

int exec_op_GRAPH_INSTANTIATE(struct vgpu *v, const struct mearas_sqe *e,
			      const struct exec_in_GRAPH_INSTANTIATE *in, struct mearas_cqe *c, struct fence_req *f)
{
	struct hf_share *sh;
	void *x;
	int r;

	(void)e, (void)c, (void)f;
	if (!v->ops->graph_instantiate)
		return exec_no_graphs(v);
	/* the flags the real driver acts on where the graph runs; the others
	 * are the front end's (upload) or refused there (device launch) */
	if (in->a->flags & ~(uint64_t)(cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority))
		return cudaErrorInvalidValue;
	sh = (struct hf_share *)(uintptr_t)in->graph->aux;
	/* an instantiation is a copy of the graph's nodes */
	r = copy_fits(v, sh, "instantiation");
	if (!r)
		r = v->ops->graph_instantiate(v->dev, in->graph->obj, in->a->flags, &x);
	if (r)
		return r;
	/* the instantiation runs the graph's host functions too */
	share_held(v, sh);
	return exec_keep_or_destroy(v, MEARAS_KIND_EXEC, in->a->exec, x, (uintptr_t)sh);
}

int exec_op_GRAPH_LAUNCH(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_GRAPH_LAUNCH *in,
			 struct mearas_cqe *c, struct fence_req *f)
{
	struct hf_share *sh = (struct hf_share *)(uintptr_t)in->exec->aux;
	int r;

	(void)c;
	if (!v->ops->graph_launch)
		return exec_no_graphs(v);
	/* the stream is the fence: a launch that wants a completion (a remote
	 * node's, whose graph copies to the host) gets it when the graph is done */
	f->stream = in->stream;
	/* into a capture? (the graph's host functions need the answer whatever
	 * the stream, as before) */
	if (sh && (sh->reqs ? exec_stream_capturing(v, f->stream) : exec_record_captures(v, e, f->stream))) {
		if (sh->reqs)
			return cudaErrorStreamCaptureUnsupported; /* its host functions would outlive their owner */
		/* captured as a child graph: a copy of its nodes (exec_record counted one) */
		r = copy_fits(v, sh, "launch into a capture");
		if (!r)
			r = v->ops->graph_launch(v->dev, in->exec->obj, f->stream);
		if (r == 0 && sh->nodes)
			v->capture_nodes += sh->nodes - 1;
		return r;
	}
	r = v->ops->graph_launch(v->dev, in->exec->obj, f->stream);
	if (r || !sh || !sh->reqs)
		return r;
	/* its host functions stay until this launch is done, whatever the client destroys meanwhile */
	sh->refs++;
	f->action = PENDING_RELEASE;
	f->arg = (uintptr_t)sh;
	return 0;
}

int exec_op_GRAPH_NODE_COUNT(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_GRAPH_NODE_COUNT *in,
			     struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)f;
	if (!v->ops->graph_node_count)
		return exec_no_graphs(v);
	return v->ops->graph_node_count(v->dev, in->graph->obj, &c->val[0]);
}

/* A clone shares the original's captured host functions (its host nodes
 * call them with the same arguments) and counts its nodes again. */
int exec_op_GRAPH_CLONE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_GRAPH_CLONE *in,
			struct mearas_cqe *c, struct fence_req *f)
{
	struct hf_share *sh = (struct hf_share *)(uintptr_t)in->graph->aux;
	void *g;
	int r;

	(void)e, (void)c, (void)f;
	if (!v->ops->graph_clone)
		return exec_no_graphs(v);
	r = copy_fits(v, sh, "clone");
	if (!r)
		r = v->ops->graph_clone(v->dev, in->graph->obj, &g);
	if (r)
		return r;
	share_held(v, sh);
	return exec_keep_or_destroy(v, MEARAS_KIND_GRAPH, in->a->clone, g, (uintptr_t)sh);
}
