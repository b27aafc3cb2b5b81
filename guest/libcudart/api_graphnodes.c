// SPDX-License-Identifier: MIT
/*
 * Graphs built node by node, through the runtime API: the runtime's structs
 * to the core's node parameters and back (guest/core/graphnodes.c keeps
 * the graphs and replays them into a capture at instantiation). A graph
 * belongs to the device current when it was created. Memory nodes are
 * api_graphmem.c's. The generic calls (cudaGraphAddNode, cudaGraphNodeSetParams,
 * cudaGraphExecNodeSetParams) go to each kind's code. Kernel nodes take the
 * attributes a launch carries (cudaGraphKernelNodeSetAttribute). Memcpy nodes
 * to or from a symbol are plain memcpy nodes of the symbol's address on the
 * graph's device. External semaphore and conditional nodes stay NotSupported
 * (stubs by gen_unsupported.sh, or refused with a log line by the generic calls).
 */
#include <stdlib.h>
#include <string.h>

#include "mearas/fatbin.h"
#include "mearas/log.h"
#include "rt.h"

cudaError_t rt_graph_of(cudaGraph_t h, struct rt_graph **g)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	*g = rt_graph_get(h);
	return *g ? cudaSuccess : cudaErrorInvalidValue;
}

static cudaError_t node_of(cudaGraphNode_t h, int type, struct rt_gnode **n)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	*n = rt_gnode_get(h);
	if (!*n || (type >= 0 && rt_gnode_type(*n) != type))
		return cudaErrorInvalidValue;
	return cudaSuccess;
}

/* exec NULL: the graph's node; else the node in that executable graph */
static cudaError_t exec_of(cudaGraphExec_t h, struct rt_graph_exec **x)
{
	*x = NULL;
	if (!h)
		return cudaSuccess;
	*x = rt_graph_exec_get(h);
	return *x ? cudaSuccess : cudaErrorInvalidValue;
}

static cudaError_t set(const char *call, struct rt_graph_exec *x, struct rt_gnode *n, const struct rt_node_params *p)
{
	return x ? rt_graph_exec_set(call, x, n, p) : rt_gnode_set(call, n, p);
}

cudaError_t rt_node_params_of(cudaGraphNode_t h, int type, const void *out, const struct rt_node_params **p)
{
	struct rt_gnode *n;
	cudaError_t e = node_of(h, type, &n);

	if (!e && !out)
		e = cudaErrorInvalidValue;
	*p = e ? NULL : rt_gnode_params(n);
	return e;
}

/* the runtime's parameters of a kind from the core's node: shared by Get */
typedef void (*params_out_fn)(const struct rt_node_params *p, void *q);

static cudaError_t get_node(cudaGraphNode_t node, int type, void *q, params_out_fn conv)
{
	const struct rt_node_params *p;
	cudaError_t e = rt_node_params_of(node, type, q, &p);

	if (!e)
		conv(p, q);
	return rt_set_error(e);
}

/* the node of type that a Set or ExecSet call changes, and exec_of */
static cudaError_t set_target(cudaGraphExec_t hExec, cudaGraphNode_t h, int type, struct rt_graph_exec **x,
			      struct rt_gnode **n)
{
	cudaError_t e = node_of(h, type, n);

	return e ? e : exec_of(hExec, x);
}

RT_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
	struct rt_graph *g;
	int dev;
	cudaError_t e = rt_ensure_device(&dev);

	if (!e && !pGraph)
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_graph_create(dev, flags, &g);
	if (!e)
		*pGraph = (cudaGraph_t)g;
	return rt_set_error(e);
}

static cudaError_t add(const char *call, cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps,
		       size_t n, const struct rt_node_params *p)
{
	struct rt_graph *g;
	struct rt_gnode *node;
	cudaError_t e = rt_need(rt_graph_of(graph, &g), out);

	if (e)
		return e;
	e = rt_graph_add(call, g, (void *const *)deps, n, p, &node);
	if (!e)
		*out = (cudaGraphNode_t)node;
	return e;
}

/* ---- kernel nodes ---- */

struct kbuf {
	uint8_t buf[MEARAS_MAX_PARAM_BYTES];
	uint32_t offsets[MEARAS_MAX_PARAM_BYTES / 4 + 1];
};

static cudaError_t kernel_params(const char *call, int vgpu, const struct cudaKernelNodeParams *q, struct kbuf *kb,
				 struct rt_node_params *p)
{
	const struct mearas_kernel_info *k;
	struct rt_func *f;
	uint32_t len;
	cudaError_t e;

	if (!q)
		return cudaErrorInvalidValue;
	if (q->extra) {
		log_warn("%s: kernel node parameters passed through `extra` are not supported by mearas "
			 "(use kernelParams)", call);
		return cudaErrorNotSupported;
	}
	f = rt_func_by_host(q->func);
	if (!f)
		return cudaErrorInvalidDeviceFunction;
	e = rt_launch_check(vgpu, q->gridDim, q->blockDim, q->sharedMemBytes);
	if (!e)
		e = rt_func_ready(f, vgpu);
	if (!e)
		e = rt_func_pack(f, q->kernelParams, kb->buf, &len);
	if (e)
		return e;
	k = rt_func_info(f);
	memset(p, 0, sizeof(*p));
	p->type = cudaGraphNodeTypeKernel;
	p->u.k.func = q->func;
	p->u.k.func_id = rt_func_id(f);
	p->u.k.vgpu = vgpu;
	p->u.k.grid[0] = q->gridDim.x;
	p->u.k.grid[1] = q->gridDim.y;
	p->u.k.grid[2] = q->gridDim.z;
	p->u.k.block[0] = q->blockDim.x;
	p->u.k.block[1] = q->blockDim.y;
	p->u.k.block[2] = q->blockDim.z;
	p->u.k.smem = q->sharedMemBytes;
	p->u.k.params = kb->buf;
	p->u.k.len = len;
	p->u.k.nparams = k->nparams;
	for (uint32_t i = 0; i < k->nparams; i++)
		kb->offsets[i] = k->params[i].offset;
	p->u.k.offsets = kb->offsets;
	return cudaSuccess;
}

RT_EXPORT cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					     const cudaGraphNode_t *pDependencies, size_t numDependencies,
					     const struct cudaKernelNodeParams *pNodeParams)
{
	struct rt_node_params p;
	struct rt_graph *g;
	struct kbuf *kb;
	cudaError_t e = rt_graph_of(graph, &g);

	if (e)
		return rt_set_error(e);
	kb = malloc(sizeof(*kb));
	if (!kb)
		return rt_set_error(cudaErrorMemoryAllocation);
	e = kernel_params("cudaGraphAddKernelNode", g->vgpu, pNodeParams, kb, &p);
	if (!e)
		e = add("cudaGraphAddKernelNode", pGraphNode, graph, pDependencies, numDependencies, &p);
	free(kb);
	return rt_set_error(e);
}

static void kernel_params_out(const struct rt_node_params *p, void *out)
{
	const struct rt_kernel_node *k = &p->u.k;
	struct cudaKernelNodeParams *q = out;

	q->func = k->func;
	q->gridDim = (dim3){ k->grid[0], k->grid[1], k->grid[2] };
	q->blockDim = (dim3){ k->block[0], k->block[1], k->block[2] };
	q->sharedMemBytes = k->smem;
	q->kernelParams = k->nparams ? k->args : NULL;
	q->extra = NULL;
}

RT_EXPORT cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams *q)
{
	return get_node(node, cudaGraphNodeTypeKernel, q, kernel_params_out);
}

/* a kernel node's attributes: those a LAUNCH carries (guest/core/nodeattr.c);
 * the others are NotSupported, logged */
RT_EXPORT cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
						      cudaKernelNodeAttrValue *value_out)
{
	struct rt_gnode *n;
	cudaError_t e = node_of(hNode, cudaGraphNodeTypeKernel, &n);

	if (!e)
		e = rt_gnode_kernel_attr("cudaGraphKernelNodeGetAttribute", n, (int)attr, NULL, value_out);
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
						      const cudaKernelNodeAttrValue *value)
{
	struct rt_gnode *n;
	cudaError_t e = node_of(hNode, cudaGraphNodeTypeKernel, &n);

	if (!e)
		e = rt_gnode_kernel_attr("cudaGraphKernelNodeSetAttribute", n, (int)attr, value, NULL);
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst, cudaGraphNode_t hSrc)
{
	struct rt_gnode *dst, *src;
	cudaError_t e = node_of(hDst, cudaGraphNodeTypeKernel, &dst);

	if (!e)
		e = node_of(hSrc, cudaGraphNodeTypeKernel, &src);
	if (!e)
		e = rt_gnode_kernel_attrs_copy(dst, src);
	return rt_set_error(e);
}

static cudaError_t generic_set(const char *call, bool exec, cudaGraphExec_t hExec, cudaGraphNode_t node,
			       struct cudaGraphNodeParams *q);

/* as the generic call would with this kernel's parameters (the V2 struct has
 * the first one's fields, in order) */
static cudaError_t set_kernel(const char *call, cudaGraphExec_t hExec, cudaGraphNode_t node,
			      const struct cudaKernelNodeParams *q)
{
	struct cudaGraphNodeParams g;

	if (!q)
		return cudaErrorInvalidValue;
	memset(&g, 0, sizeof(g));
	g.type = cudaGraphNodeTypeKernel;
	memcpy(&g.kernel, q, sizeof(*q));
	return generic_set(call, hExec != NULL, hExec, node, &g);
}

RT_EXPORT cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams *p)
{
	return rt_set_error(set_kernel("cudaGraphKernelNodeSetParams", NULL, node, p));
}

RT_EXPORT cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t node,
						       const struct cudaKernelNodeParams *p)
{
	return rt_set_error(x ? set_kernel("cudaGraphExecKernelNodeSetParams", x, node, p) : cudaErrorInvalidValue);
}

/* the core's node of the runtime's parameters of a kind (memcpy, memset,
 * host): shared by Add, Set and ExecSet */
typedef cudaError_t (*params_fn)(const char *call, const void *q, struct rt_node_params *p);

static cudaError_t add_node(const char *call, cudaGraphNode_t *out, cudaGraph_t graph, const cudaGraphNode_t *deps,
			    size_t n, params_fn conv, const void *q)
{
	struct rt_node_params p;
	cudaError_t e = conv(call, q, &p);

	return rt_set_error(e ? e : add(call, out, graph, deps, n, &p));
}

/* hExec NULL: Set; else ExecSet, which takes no NULL executable graph */
static cudaError_t set_node(const char *call, bool exec, cudaGraphExec_t hExec, cudaGraphNode_t node, int type,
			    params_fn conv, const void *q)
{
	struct rt_node_params p;
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	cudaError_t e = exec && !hExec ? cudaErrorInvalidValue : set_target(hExec, node, type, &x, &n);

	if (!e)
		e = conv(call, q, &p);
	return rt_set_error(e ? e : set(call, x, n, &p));
}

/*
 * cudaGraphAdd<Kind>Node, cudaGraph<Kind>NodeGetParams,
 * cudaGraph<Kind>NodeSetParams and cudaGraphExec<Kind>NodeSetParams: Params
 * to the core's node of type by to_core, back by from_core. A macro: C has
 * no other way to define several exported functions from one body.
 */
#define NODE_CALLS(Kind, Params, type, to_core, from_core)                                                      \
	RT_EXPORT cudaError_t cudaGraphAdd##Kind##Node(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,          \
						       const cudaGraphNode_t *pDependencies,                    \
						       size_t numDependencies, const Params *q)                 \
	{                                                                                                       \
		return add_node("cudaGraphAdd" #Kind "Node", pGraphNode, graph, pDependencies, numDependencies, \
				to_core, q);                                                                    \
	}                                                                                                       \
	RT_EXPORT cudaError_t cudaGraph##Kind##NodeGetParams(cudaGraphNode_t node, Params *q)                   \
	{                                                                                                       \
		return get_node(node, type, q, from_core);                                                      \
	}                                                                                                       \
	RT_EXPORT cudaError_t cudaGraph##Kind##NodeSetParams(cudaGraphNode_t node, const Params *q)             \
	{                                                                                                       \
		return set_node("cudaGraph" #Kind "NodeSetParams", false, NULL, node, type, to_core, q);        \
	}                                                                                                       \
	RT_EXPORT cudaError_t cudaGraphExec##Kind##NodeSetParams(cudaGraphExec_t x, cudaGraphNode_t node,       \
								 const Params *q)                               \
	{                                                                                                       \
		return set_node("cudaGraphExec" #Kind "NodeSetParams", true, x, node, type, to_core, q);        \
	}

/* ---- memcpy nodes: one 2D region (no arrays, depth 1) ---- */

static const char *at(const struct cudaPitchedPtr *p, const struct cudaPos *pos)
{
	return (const char *)p->ptr + pos->x + p->pitch * (pos->y + pos->z * p->ysize);
}

static cudaError_t memcpy_params(const char *call, const void *q, struct rt_node_params *p)
{
	const struct cudaMemcpy3DParms *c = q;

	if (!c)
		return cudaErrorInvalidValue;
	if (c->srcArray || c->dstArray) {
		log_warn("%s: memcpy nodes with CUDA arrays are not supported by mearas", call);
		return cudaErrorNotSupported;
	}
	if (c->extent.depth > 1) {
		log_warn("%s: 3D memcpy nodes (depth > 1) are not supported by mearas", call);
		return cudaErrorNotSupported;
	}
	if (c->extent.depth != 1 || c->extent.height < 1 || !c->srcPtr.ptr || !c->dstPtr.ptr)
		return cudaErrorInvalidValue;
	memset(p, 0, sizeof(*p));
	p->type = cudaGraphNodeTypeMemcpy;
	p->u.c.src = at(&c->srcPtr, &c->srcPos);
	p->u.c.dst = (void *)at(&c->dstPtr, &c->dstPos);
	p->u.c.width = c->extent.width;
	p->u.c.height = c->extent.height;
	p->u.c.spitch = c->extent.height > 1 ? c->srcPtr.pitch : c->extent.width;
	p->u.c.dpitch = c->extent.height > 1 ? c->dstPtr.pitch : c->extent.width;
	p->u.c.kind = c->kind;
	return cudaSuccess;
}

static void memcpy_1d(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, struct rt_node_params *p)
{
	memset(p, 0, sizeof(*p));
	p->type = cudaGraphNodeTypeMemcpy;
	p->u.c.dst = dst;
	p->u.c.src = src;
	p->u.c.width = p->u.c.dpitch = p->u.c.spitch = count;
	p->u.c.height = 1;
	p->u.c.kind = kind;
}

RT_EXPORT cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					     const cudaGraphNode_t *pDependencies, size_t numDependencies,
					     const struct cudaMemcpy3DParms *pCopyParams)
{
	return add_node("cudaGraphAddMemcpyNode", pGraphNode, graph, pDependencies, numDependencies, memcpy_params,
			pCopyParams);
}

RT_EXPORT cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					       const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dst,
					       const void *src, size_t count, enum cudaMemcpyKind kind)
{
	struct rt_node_params p;

	memcpy_1d(dst, src, count, kind, &p);
	return rt_set_error(add("cudaGraphAddMemcpyNode1D", pGraphNode, graph, pDependencies, numDependencies, &p));
}

/* a memcpy node of count bytes at offset in symbol, on the graph's vGPU:
 * to it from src (to), or from it to dst; a plain memcpy node after that */
static cudaError_t symbol_node(bool to, int vgpu, void *dst, const void *src, const void *symbol, size_t count,
			       size_t offset, enum cudaMemcpyKind kind, struct rt_node_params *p)
{
	uint64_t d;
	cudaError_t e = rt_symbol_kind(to, kind);

	if (!e)
		e = rt_symbol_range(symbol, vgpu, count, offset, &d);
	if (e)
		return e;
	if (to)
		memcpy_1d((void *)(uintptr_t)d, src, count, kind, p);
	else
		memcpy_1d(dst, (const void *)(uintptr_t)d, count, kind, p);
	return cudaSuccess;
}

static cudaError_t add_symbol_node(const char *call, bool to, cudaGraphNode_t *out, cudaGraph_t graph,
				   const cudaGraphNode_t *deps, size_t ndeps, void *dst, const void *src,
				   const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind)
{
	struct rt_node_params p;
	struct rt_graph *g;
	cudaError_t e = rt_graph_of(graph, &g);

	if (!e)
		e = symbol_node(to, g->vgpu, dst, src, symbol, count, offset, kind, &p);
	return e ? e : add(call, out, graph, deps, ndeps, &p);
}

RT_EXPORT cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						     const cudaGraphNode_t *pDependencies, size_t numDependencies,
						     const void *symbol, const void *src, size_t count, size_t offset,
						     enum cudaMemcpyKind kind)
{
	return rt_set_error(add_symbol_node("cudaGraphAddMemcpyNodeToSymbol", true, pGraphNode, graph, pDependencies,
					    numDependencies, NULL, src, symbol, count, offset, kind));
}

RT_EXPORT cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						       const cudaGraphNode_t *pDependencies, size_t numDependencies,
						       void *dst, const void *symbol, size_t count, size_t offset,
						       enum cudaMemcpyKind kind)
{
	return rt_set_error(add_symbol_node("cudaGraphAddMemcpyNodeFromSymbol", false, pGraphNode, graph,
					    pDependencies, numDependencies, dst, NULL, symbol, count, offset, kind));
}

/* exec NULL: the graph's node; else the node in that executable graph */
static cudaError_t set_symbol_node(const char *call, bool to, cudaGraphExec_t hExec, cudaGraphNode_t node,
				   void *dst, const void *src, const void *symbol, size_t count, size_t offset,
				   enum cudaMemcpyKind kind)
{
	struct rt_node_params p;
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	cudaError_t e = set_target(hExec, node, cudaGraphNodeTypeMemcpy, &x, &n);

	if (!e)
		e = symbol_node(to, rt_gnode_graph(n)->vgpu, dst, src, symbol, count, offset, kind, &p);
	return e ? e : set(call, x, n, &p);
}

RT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t node, const void *symbol, const void *src,
							   size_t count, size_t offset, enum cudaMemcpyKind kind)
{
	return rt_set_error(set_symbol_node("cudaGraphMemcpyNodeSetParamsToSymbol", true, NULL, node, NULL, src,
					    symbol, count, offset, kind));
}

RT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t node, void *dst, const void *symbol,
							     size_t count, size_t offset, enum cudaMemcpyKind kind)
{
	return rt_set_error(set_symbol_node("cudaGraphMemcpyNodeSetParamsFromSymbol", false, NULL, node, dst, NULL,
					    symbol, count, offset, kind));
}

RT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
							       const void *symbol, const void *src, size_t count,
							       size_t offset, enum cudaMemcpyKind kind)
{
	if (!hGraphExec)
		return rt_set_error(cudaErrorInvalidValue);
	return rt_set_error(set_symbol_node("cudaGraphExecMemcpyNodeSetParamsToSymbol", true, hGraphExec, node, NULL,
					    src, symbol, count, offset, kind));
}

RT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
								 void *dst, const void *symbol, size_t count,
								 size_t offset, enum cudaMemcpyKind kind)
{
	if (!hGraphExec)
		return rt_set_error(cudaErrorInvalidValue);
	return rt_set_error(set_symbol_node("cudaGraphExecMemcpyNodeSetParamsFromSymbol", false, hGraphExec, node,
					    dst, NULL, symbol, count, offset, kind));
}

static void memcpy_params_out(const struct rt_node_params *p, void *out)
{
	const struct rt_memcpy_node *c = &p->u.c;
	struct cudaMemcpy3DParms *q = out;

	memset(q, 0, sizeof(*q));
	q->srcPtr = (struct cudaPitchedPtr){ (void *)c->src, c->spitch, c->width, c->height };
	q->dstPtr = (struct cudaPitchedPtr){ c->dst, c->dpitch, c->width, c->height };
	q->extent = (struct cudaExtent){ c->width, c->height, 1 };
	q->kind = c->kind;
}

RT_EXPORT cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms *q)
{
	return get_node(node, cudaGraphNodeTypeMemcpy, q, memcpy_params_out);
}

static cudaError_t set_memcpy(const char *call, cudaGraphExec_t hExec, cudaGraphNode_t node,
			      const struct rt_node_params *p)
{
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	cudaError_t e = set_target(hExec, node, cudaGraphNodeTypeMemcpy, &x, &n);

	return e ? e : set(call, x, n, p);
}

RT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const struct cudaMemcpy3DParms *q)
{
	struct rt_node_params p;
	cudaError_t e = memcpy_params("cudaGraphMemcpyNodeSetParams", q, &p);

	return rt_set_error(e ? e : set_memcpy("cudaGraphMemcpyNodeSetParams", NULL, node, &p));
}

RT_EXPORT cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void *dst, const void *src, size_t count,
						     enum cudaMemcpyKind kind)
{
	struct rt_node_params p;

	memcpy_1d(dst, src, count, kind, &p);
	return rt_set_error(set_memcpy("cudaGraphMemcpyNodeSetParams1D", NULL, node, &p));
}

RT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t node,
						       const struct cudaMemcpy3DParms *q)
{
	struct rt_node_params p;
	cudaError_t e = x ? memcpy_params("cudaGraphExecMemcpyNodeSetParams", q, &p) : cudaErrorInvalidValue;

	return rt_set_error(e ? e : set_memcpy("cudaGraphExecMemcpyNodeSetParams", x, node, &p));
}

RT_EXPORT cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t x, cudaGraphNode_t node, void *dst,
							 const void *src, size_t count, enum cudaMemcpyKind kind)
{
	struct rt_node_params p;

	if (!x)
		return rt_set_error(cudaErrorInvalidValue);
	memcpy_1d(dst, src, count, kind, &p);
	return rt_set_error(set_memcpy("cudaGraphExecMemcpyNodeSetParams1D", x, node, &p));
}

/* ---- memset nodes ---- */

static cudaError_t memset_params(const char *call, const void *q, struct rt_node_params *p)
{
	const struct cudaMemsetParams *m = q;

	(void)call;
	if (!m)
		return cudaErrorInvalidValue;
	rt_memset_node_params(p, m->dst, m->pitch, m->value, m->elementSize, m->width, m->height);
	return cudaSuccess;
}

static void memset_params_out(const struct rt_node_params *p, void *out)
{
	const struct rt_memset_node *m = &p->u.s;
	struct cudaMemsetParams *q = out;

	q->dst = m->dst;
	q->pitch = m->pitch;
	q->value = m->value;
	q->elementSize = m->elem;
	q->width = m->width;
	q->height = m->height;
}

NODE_CALLS(Memset, struct cudaMemsetParams, cudaGraphNodeTypeMemset, memset_params, memset_params_out)

/* ---- host, empty and child graph nodes ---- */

static cudaError_t host_params(const char *call, const void *q, struct rt_node_params *p)
{
	const struct cudaHostNodeParams *h = q;

	(void)call;
	if (!h)
		return cudaErrorInvalidValue;
	memset(p, 0, sizeof(*p));
	p->type = cudaGraphNodeTypeHost;
	p->u.h.fn = h->fn;
	p->u.h.user = h->userData;
	return cudaSuccess;
}

static void host_params_out(const struct rt_node_params *p, void *out)
{
	struct cudaHostNodeParams *q = out;

	q->fn = p->u.h.fn;
	q->userData = p->u.h.user;
}

NODE_CALLS(Host, struct cudaHostNodeParams, cudaGraphNodeTypeHost, host_params, host_params_out)

/* ---- event record and wait nodes (the event: the caller's) ---- */

static cudaError_t record_params(const char *call, const void *q, struct rt_node_params *p)
{
	(void)call;
	return rt_event_node_params(cudaGraphNodeTypeEventRecord, (void *)q, p);
}

static cudaError_t wait_params(const char *call, const void *q, struct rt_node_params *p)
{
	(void)call;
	return rt_event_node_params(cudaGraphNodeTypeWaitEvent, (void *)q, p);
}

static void event_out(const struct rt_node_params *p, void *q)
{
	*(cudaEvent_t *)q = (cudaEvent_t)p->u.ev;
}

RT_EXPORT cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						  const cudaGraphNode_t *pDependencies, size_t numDependencies,
						  cudaEvent_t event)
{
	return add_node("cudaGraphAddEventRecordNode", pGraphNode, graph, pDependencies, numDependencies,
			record_params, event);
}

RT_EXPORT cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						const cudaGraphNode_t *pDependencies, size_t numDependencies,
						cudaEvent_t event)
{
	return add_node("cudaGraphAddEventWaitNode", pGraphNode, graph, pDependencies, numDependencies, wait_params,
			event);
}

RT_EXPORT cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t *event_out_)
{
	return get_node(node, cudaGraphNodeTypeEventRecord, event_out_, event_out);
}

RT_EXPORT cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t *event_out_)
{
	return get_node(node, cudaGraphNodeTypeWaitEvent, event_out_, event_out);
}

RT_EXPORT cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event)
{
	return set_node("cudaGraphEventRecordNodeSetEvent", false, NULL, node, cudaGraphNodeTypeEventRecord,
			record_params, event);
}

RT_EXPORT cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event)
{
	return set_node("cudaGraphEventWaitNodeSetEvent", false, NULL, node, cudaGraphNodeTypeWaitEvent, wait_params,
			event);
}

RT_EXPORT cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
							   cudaEvent_t event)
{
	return set_node("cudaGraphExecEventRecordNodeSetEvent", true, hGraphExec, hNode, cudaGraphNodeTypeEventRecord,
			record_params, event);
}

RT_EXPORT cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
							 cudaEvent_t event)
{
	return set_node("cudaGraphExecEventWaitNodeSetEvent", true, hGraphExec, hNode, cudaGraphNodeTypeWaitEvent,
			wait_params, event);
}

RT_EXPORT cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					    const cudaGraphNode_t *pDependencies, size_t numDependencies)
{
	struct rt_node_params p = { .type = cudaGraphNodeTypeEmpty };

	return rt_set_error(add("cudaGraphAddEmptyNode", pGraphNode, graph, pDependencies, numDependencies, &p));
}

RT_EXPORT cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
						 const cudaGraphNode_t *pDependencies, size_t numDependencies,
						 cudaGraph_t childGraph)
{
	struct rt_node_params p = { .type = cudaGraphNodeTypeGraph };

	p.u.child = (struct rt_graph *)childGraph;
	return rt_set_error(add("cudaGraphAddChildGraphNode", pGraphNode, graph, pDependencies, numDependencies, &p));
}

RT_EXPORT cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t *pGraph)
{
	const struct rt_node_params *p;
	cudaError_t e = rt_node_params_of(node, cudaGraphNodeTypeGraph, pGraph, &p);

	if (!e)
		*pGraph = (cudaGraph_t)p->u.child;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t hExec, cudaGraphNode_t node,
							   cudaGraph_t childGraph)
{
	struct rt_node_params p = { .type = cudaGraphNodeTypeGraph };
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	cudaError_t e = node_of(node, cudaGraphNodeTypeGraph, &n);

	if (!e)
		e = hExec ? exec_of(hExec, &x) : cudaErrorInvalidValue;
	p.u.child = (struct rt_graph *)childGraph;
	return rt_set_error(e ? e : rt_graph_exec_set("cudaGraphExecChildGraphNodeSetParams", x, n, &p));
}

/* ---- enabling and disabling a node of an executable graph ---- */

static cudaError_t node_enabled(cudaGraphExec_t hExec, cudaGraphNode_t node, const unsigned *set, unsigned *get)
{
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	cudaError_t e = node_of(node, -1, &n);

	if (!e)
		e = hExec && (set || get) ? exec_of(hExec, &x) : cudaErrorInvalidValue;
	return e ? e : rt_graph_exec_node_enabled(x, n, set, get);
}

RT_EXPORT cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, unsigned int isEnabled)
{
	return rt_set_error(node_enabled(hGraphExec, hNode, &isEnabled, NULL));
}

RT_EXPORT cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
					      unsigned int *isEnabled)
{
	return rt_set_error(node_enabled(hGraphExec, hNode, NULL, isEnabled));
}

/* ---- structure ---- */

RT_EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType)
{
	const struct rt_node_params *p;
	cudaError_t e = rt_node_params_of(node, -1, pType, &p);

	if (!e)
		*pType = (enum cudaGraphNodeType)p->type;
	return rt_set_error(e);
}

static cudaError_t built(const char *call, struct rt_graph *g)
{
	if (g->built)
		return cudaSuccess;
	log_warn("%s: the nodes of a graph made by stream capture have no handles in mearas", call);
	return cudaErrorNotSupported;
}

RT_EXPORT cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t *pRootNodes, size_t *pNumRootNodes)
{
	struct rt_graph *g;
	cudaError_t e = rt_graph_of(graph, &g);

	if (!e)
		e = built("cudaGraphGetRootNodes", g);
	return rt_set_error(e ? e : rt_graph_nodes(g, true, (void **)pRootNodes, pNumRootNodes));
}

/* the edges mearas keeps are the default kind: their data is all zeros */
static void zero_edges(cudaGraphEdgeData *e, size_t n)
{
	if (e)
		memset(e, 0, n * sizeof(*e));
}

RT_EXPORT cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t *from, cudaGraphNode_t *to,
					cudaGraphEdgeData *edgeData, size_t *numEdges)
{
	struct rt_graph *g;
	size_t cap = numEdges ? *numEdges : 0;
	cudaError_t e = rt_graph_of(graph, &g);

	if (!e)
		e = built("cudaGraphGetEdges", g);
	if (!e)
		e = rt_graph_edges(g, (void **)from, (void **)to, numEdges);
	if (!e && from)
		zero_edges(edgeData, cap);
	return rt_set_error(e);
}

static cudaError_t node_edges(cudaGraphNode_t node, bool dependents, cudaGraphNode_t *out, cudaGraphEdgeData *ed,
			      size_t *n)
{
	struct rt_gnode *nd;
	size_t cap = n ? *n : 0;
	cudaError_t e = node_of(node, -1, &nd);

	if (!e)
		e = rt_gnode_edges(nd, dependents, (void **)out, n);
	if (!e && out)
		zero_edges(ed, cap);
	return e;
}

RT_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *pDependencies,
						   cudaGraphEdgeData *edgeData, size_t *pNumDependencies)
{
	return rt_set_error(node_edges(node, false, pDependencies, edgeData, pNumDependencies));
}

RT_EXPORT cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t *pDependentNodes,
						     cudaGraphEdgeData *edgeData, size_t *pNumDependentNodes)
{
	return rt_set_error(node_edges(node, true, pDependentNodes, edgeData, pNumDependentNodes));
}

static cudaError_t change_deps(const char *call, cudaGraph_t graph, const cudaGraphNode_t *from,
			       const cudaGraphNode_t *to, const cudaGraphEdgeData *ed, size_t n, bool add_them)
{
	struct rt_graph *g;
	cudaError_t e = rt_graph_of(graph, &g);

	if (!e)
		e = built(call, g);
	return e ? e : rt_graph_change_deps(g, (void *const *)from, (void *const *)to, ed, n, add_them);
}

RT_EXPORT cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from,
					       const cudaGraphNode_t *to, const cudaGraphEdgeData *edgeData,
					       size_t numDependencies)
{
	return rt_set_error(change_deps("cudaGraphAddDependencies", graph, from, to, edgeData, numDependencies, true));
}

RT_EXPORT cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t *from,
						  const cudaGraphNode_t *to, const cudaGraphEdgeData *edgeData,
						  size_t numDependencies)
{
	return rt_set_error(
		change_deps("cudaGraphRemoveDependencies", graph, from, to, edgeData, numDependencies, false));
}

RT_EXPORT cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node)
{
	struct rt_gnode *n;
	cudaError_t e = node_of(node, -1, &n);

	return rt_set_error(e ? e : rt_gnode_destroy(n));
}

RT_EXPORT cudaError_t cudaGraphClone(cudaGraph_t *pGraphClone, cudaGraph_t originalGraph)
{
	struct rt_graph *g, *c;
	cudaError_t e = pGraphClone ? rt_graph_of(originalGraph, &g) : cudaErrorInvalidValue;

	if (!e)
		e = rt_graph_clone("cudaGraphClone", g, &c);
	if (!e)
		*pGraphClone = (cudaGraph_t)c;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t *pNode, cudaGraphNode_t originalNode,
					       cudaGraph_t clonedGraph)
{
	struct rt_graph *g;
	struct rt_gnode *n;
	cudaError_t e = rt_graph_of(clonedGraph, &g);

	if (!e && !pNode)
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_gnode_find_in_clone(g, (struct rt_gnode *)originalNode, &n);
	if (!e)
		*pNode = (cudaGraphNode_t)n;
	return rt_set_error(e);
}

RT_EXPORT cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
					  cudaGraphExecUpdateResultInfo *resultInfo)
{
	struct rt_graph_exec *x;
	struct rt_graph *g;
	void *err = NULL, *err_from = NULL;
	int result = cudaGraphExecUpdateError;
	cudaError_t e = rt_graph_of(hGraph, &g);

	if (e)
		return rt_set_error(e);
	x = rt_graph_exec_get(hGraphExec);
	if (!x || !resultInfo)
		return rt_set_error(cudaErrorInvalidValue);
	e = rt_graph_exec_update(x, g, &result, &err, &err_from);
	resultInfo->result = (enum cudaGraphExecUpdateResult)result;
	resultInfo->errorNode = (cudaGraphNode_t)err;
	resultInfo->errorFromNode = (cudaGraphNode_t)err_from;
	return rt_set_error(e);
}

/* ---- the generic calls: a cudaGraphNodeParams of a kind served above goes
 * to that kind's code; other kinds are refused with a log line ---- */

static cudaError_t generic_unserved(const char *call, int type)
{
	log_warn("%s: graph nodes of type %d are not supported by mearas: returning cudaErrorNotSupported", call,
		 type);
	return cudaErrorNotSupported;
}

/* the reserved fields are zero, as CUDA requires */
static bool generic_reserved_zero(const struct cudaGraphNodeParams *q)
{
	return !q->reserved0[0] && !q->reserved0[1] && !q->reserved0[2] && !q->reserved2;
}

/* q as the core's node parameters (a kernel's packed into kb); the kinds
 * Set can change: memory nodes are Add's only */
static cudaError_t generic_params(const char *call, int vgpu, const struct cudaGraphNodeParams *q, struct kbuf *kb,
				  struct rt_node_params *p)
{
	const struct cudaMemcpyNodeParams *c = &q->memcpy;

	switch (q->type) {
	case cudaGraphNodeTypeKernel:
		/* the V2 structs have their first versions' fields, in order */
		return kernel_params(call, vgpu, (const struct cudaKernelNodeParams *)&q->kernel, kb, p);
	case cudaGraphNodeTypeMemcpy:
		if (c->flags || c->reserved[0] || c->reserved[1] || c->reserved[2])
			return cudaErrorInvalidValue;
		return memcpy_params(call, &c->copyParams, p);
	case cudaGraphNodeTypeMemset:
		return memset_params(call, (const struct cudaMemsetParams *)&q->memset, p);
	case cudaGraphNodeTypeHost:
		return host_params(call, (const struct cudaHostNodeParams *)&q->host, p);
	case cudaGraphNodeTypeEventRecord:
		return record_params(call, q->eventRecord.event, p);
	case cudaGraphNodeTypeWaitEvent:
		return wait_params(call, q->eventWait.event, p);
	case cudaGraphNodeTypeEmpty:
		*p = (struct rt_node_params){ .type = cudaGraphNodeTypeEmpty };
		return cudaSuccess;
	case cudaGraphNodeTypeGraph:
		if (q->graph.ownership != cudaGraphChildGraphOwnershipClone) {
			log_warn("%s: child graph nodes that take their graph over (ownership %d) are not supported "
				 "by mearas: returning cudaErrorNotSupported", call, (int)q->graph.ownership);
			return cudaErrorNotSupported;
		}
		*p = (struct rt_node_params){ .type = cudaGraphNodeTypeGraph };
		p->u.child = (struct rt_graph *)q->graph.graph;
		return cudaSuccess;
	default:
		return generic_unserved(call, (int)q->type);
	}
}

RT_EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
				       const cudaGraphNode_t *pDependencies, const cudaGraphEdgeData *dependencyData,
				       size_t numDependencies, struct cudaGraphNodeParams *nodeParams)
{
	static const char call[] = "cudaGraphAddNode";
	struct rt_node_params p;
	struct rt_graph *g;
	struct rt_gnode *n;
	struct kbuf *kb;
	cudaError_t e = rt_graph_of(graph, &g);

	if (!e && (!nodeParams || !generic_reserved_zero(nodeParams)))
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_graph_edge_data(dependencyData, numDependencies);
	if (e)
		return rt_set_error(e);
	switch (nodeParams->type) {
	case cudaGraphNodeTypeMemAlloc:
		/* the V2 struct is the first's; its dptr is an out field */
		e = rt_need(cudaSuccess, pGraphNode);
		if (!e)
			e = rt_graph_add_mem_alloc(call, g, (void *const *)pDependencies, numDependencies,
						   (struct cudaMemAllocNodeParams *)&nodeParams->alloc, &n);
		if (!e)
			*pGraphNode = (cudaGraphNode_t)n;
		return rt_set_error(e);
	case cudaGraphNodeTypeMemFree:
		p = (struct rt_node_params){ .type = cudaGraphNodeTypeMemFree };
		p.u.m.dptr = nodeParams->free.dptr;
		return rt_set_error(add(call, pGraphNode, graph, pDependencies, numDependencies, &p));
	default:
		break;
	}
	kb = malloc(sizeof(*kb));
	if (!kb)
		return rt_set_error(cudaErrorMemoryAllocation);
	e = generic_params(call, g->vgpu, nodeParams, kb, &p);
	if (!e)
		e = add(call, pGraphNode, graph, pDependencies, numDependencies, &p);
	free(kb);
	return rt_set_error(e);
}

/* exec NULL: the node itself (cudaGraphNodeSetParams) */
static cudaError_t generic_set(const char *call, bool exec, cudaGraphExec_t hExec, cudaGraphNode_t node,
			       struct cudaGraphNodeParams *q)
{
	struct rt_node_params p;
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	struct kbuf *kb;
	cudaError_t e = exec && !hExec ? cudaErrorInvalidValue : cudaSuccess;

	if (!e && (!q || !generic_reserved_zero(q)))
		e = cudaErrorInvalidValue;
	if (!e)
		e = set_target(hExec, node, (int)q->type, &x, &n);
	if (e)
		return e;
	if (q->type == cudaGraphNodeTypeGraph && !x)
		return generic_unserved(call, (int)q->type); /* CUDA has no setter for it either */
	kb = malloc(sizeof(*kb));
	if (!kb)
		return cudaErrorMemoryAllocation;
	e = generic_params(call, rt_gnode_graph(n)->vgpu, q, kb, &p);
	if (!e)
		e = set(call, x, n, &p);
	free(kb);
	return e;
}

RT_EXPORT cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, struct cudaGraphNodeParams *nodeParams)
{
	return rt_set_error(generic_set("cudaGraphNodeSetParams", false, NULL, node, nodeParams));
}

RT_EXPORT cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t graphExec, cudaGraphNode_t node,
						 struct cudaGraphNodeParams *nodeParams)
{
	return rt_set_error(generic_set("cudaGraphExecNodeSetParams", true, graphExec, node, nodeParams));
}
