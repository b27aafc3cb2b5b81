// SPDX-License-Identifier: MIT
/*
 * Graphs built node by node, through the driver API: the entry points turn
 * the driver's structs into the core's node parameters and back
 * (guest/core/graphnodes.c keeps the graphs and replays them into a capture
 * at instantiation). A CUgraphNode is a core node, the runtime's
 * cudaGraphNode_t too. A graph belongs to the device of the context current
 * when it was created; kernel functions, memcpy and memset contexts of
 * other devices are refused (CUDA_ERROR_INVALID_VALUE). Memory nodes are
 * graphmem.c's. Kernel nodes take the attributes a launch carries
 * (cuGraphKernelNodeSetAttribute). Event record/wait, external semaphore,
 * batch memop and conditional nodes stay NotSupported stubs (gen_unsupported.sh).
 */
#define __CUDA_API_VERSION_INTERNAL
#include <stdlib.h>
#include <string.h>

#include "mearas/fatbin.h"
#include "mearas/log.h"
#include "cu.h"

CUresult cu_graph_of(CUgraph h, struct rt_graph **g)
{
	void *o;
	CUresult r = cu_handle(h, CU_GRAPH_OBJ, CUDA_ERROR_INVALID_VALUE, &o);

	*g = o;
	return r;
}

static CUresult node_of(CUgraphNode h, int type, struct rt_gnode **n)
{
	void *o;
	CUresult r = cu_handle(h, CU_NODE_OBJ, CUDA_ERROR_INVALID_VALUE, &o);

	*n = o;
	return !r && type >= 0 && rt_gnode_type(*n) != type ? CU_REFUSE(CUDA_ERROR_INVALID_VALUE) : r;
}

CUresult cu_node_params(CUgraphNode h, int type, const void *out, const struct rt_node_params **p)
{
	struct rt_gnode *n;
	CUresult r = cu_need(node_of(h, type, &n), out);

	*p = r ? NULL : rt_gnode_params(n);
	return r;
}

/* the node h of type and, hExec given, that executable graph (else NULL) */
static CUresult set_target(CUgraphExec hExec, CUgraphNode h, int type, struct rt_graph_exec **x,
			   struct rt_gnode **n)
{
	CUresult r = node_of(h, type, n);

	if (r)
		return r;
	*x = NULL;
	if (hExec && !(*x = rt_graph_exec_get(hExec)))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return CUDA_SUCCESS;
}

/* x NULL: the graph's node; else the node in that executable graph */
static CUresult set_params(const char *call, struct rt_graph_exec *x, struct rt_gnode *n,
			   const struct rt_node_params *p)
{
	return cu_result(x ? rt_graph_exec_set(call, x, n, p) : rt_gnode_set(call, n, p));
}

/* a context given with a node's parameters: NULL is the current one */
static CUresult ctx_vgpu(CUcontext ctx, int *vgpu)
{
	struct cu_ctx *c = ctx ? cu_ctx_get(ctx) : cu_current();

	if (!c)
		return CU_REFUSE(ctx ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_CONTEXT);
	*vgpu = c->vgpu;
	return CUDA_SUCCESS;
}

/* a context given with a node's parameters is one of the graph's device */
static CUresult same_ctx(int vgpu, CUcontext ctx)
{
	int cv;
	CUresult r = ctx_vgpu(ctx, &cv);

	if (r)
		return r;
	return cv == vgpu ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

CU_EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct cu_ctx *c;
	struct rt_graph *g;
	CUresult r = cu_need(cu_current_ctx(&c), phGraph);

	if (r)
		return r;
	r = cu_result(rt_graph_create(c->vgpu, flags, &g));
	if (!r)
		*phGraph = (CUgraph)g;
	return r;
}

static CUresult add(const char *call, CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps, size_t n,
		    const struct rt_node_params *p)
{
	struct rt_graph *g;
	struct rt_gnode *node;
	CUresult r = cu_need(cu_graph_of(hGraph, &g), out);

	if (r)
		return r;
	r = cu_result(rt_graph_add(call, g, (void *const *)deps, n, p, &node));
	if (!r)
		*out = (CUgraphNode)node;
	return r;
}

/* ---- kernel nodes ---- */

/* the core's kernel node of a driver kernel node's fields, for a graph of
 * vgpu; buf and offsets hold what it points at until it is copied */
static CUresult kernel_params(int vgpu, CUfunction func, CUkernel kern, CUcontext ctx, const unsigned grid[3],
			      const unsigned block[3], unsigned smem, void **params, void **extra, uint8_t *buf,
			      uint32_t *offsets, struct rt_node_params *p)
{
	const struct mearas_kernel_info *k;
	struct cu_function *f;
	uint32_t len = 0;
	CUresult r = cu_function_of(func ? func : (CUfunction)kern, &f);

	if (r)
		return r;
	if (f->m->vgpu != vgpu)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE); /* a function of another device's context */
	r = cu_launch_check(vgpu, grid, block, smem);
	if (!r)
		r = cu_launch_pack(f, params, extra, buf, &len);
	if (r)
		return r;
	memset(p, 0, sizeof(*p));
	p->type = cudaGraphNodeTypeKernel;
	p->u.k.func = func;
	p->u.k.kern = kern;
	p->u.k.ctx = ctx;
	p->u.k.func_id = f->id;
	p->u.k.vgpu = vgpu;
	memcpy(p->u.k.grid, grid, sizeof(p->u.k.grid));
	memcpy(p->u.k.block, block, sizeof(p->u.k.block));
	p->u.k.smem = smem;
	p->u.k.params = buf;
	p->u.k.len = len;
	k = f->info;
	if (!extra && k) {
		p->u.k.nparams = k->nparams;
		for (uint32_t i = 0; i < k->nparams; i++)
			offsets[i] = k->params[i].offset;
		p->u.k.offsets = offsets;
	}
	return CUDA_SUCCESS;
}

/* the v1 struct is the v2 struct's first fields */
static CUresult kernel_v2(int vgpu, const CUDA_KERNEL_NODE_PARAMS_v2 *q, bool v2, uint8_t *buf, uint32_t *offsets,
			  struct rt_node_params *p)
{
	if (!q)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return kernel_params(vgpu, q->func, v2 ? q->kern : NULL, v2 ? q->ctx : NULL,
			     (const unsigned[3]){ q->gridDimX, q->gridDimY, q->gridDimZ },
			     (const unsigned[3]){ q->blockDimX, q->blockDimY, q->blockDimZ }, q->sharedMemBytes,
			     q->kernelParams, q->extra, buf, offsets, p);
}

/* room for a kernel node's packed parameters and layout */
struct kbuf {
	uint8_t buf[MEARAS_MAX_PARAM_BYTES];
	uint32_t offsets[MEARAS_MAX_PARAM_BYTES / 4 + 1];
};

static CUresult add_kernel(const char *call, CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps, size_t n,
			   const void *q, bool v2)
{
	struct kbuf *kb;
	struct rt_node_params p;
	struct rt_graph *g;
	CUresult r = cu_graph_of(hGraph, &g);

	if (r)
		return r;
	kb = malloc(sizeof(*kb));
	if (!kb)
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	r = kernel_v2(g->vgpu, q, v2, kb->buf, kb->offsets, &p);
	if (!r)
		r = add(call, out, hGraph, deps, n, &p);
	free(kb);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
						const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	return add_kernel("cuGraphAddKernelNode", o, g, d, n, p, false);
}

CU_EXPORT CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
						   const CUDA_KERNEL_NODE_PARAMS_v2 *p);
CU_EXPORT CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
						   const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	return add_kernel("cuGraphAddKernelNode_v2", o, g, d, n, p, true);
}

static CUresult get_kernel(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v2 *q, bool v2)
{
	const struct rt_node_params *p;
	const struct rt_kernel_node *k;
	CUresult r = cu_node_params(h, cudaGraphNodeTypeKernel, q, &p);

	if (r)
		return r;
	k = &p->u.k;
	q->func = (CUfunction)k->func;
	q->gridDimX = k->grid[0];
	q->gridDimY = k->grid[1];
	q->gridDimZ = k->grid[2];
	q->blockDimX = k->block[0];
	q->blockDimY = k->block[1];
	q->blockDimZ = k->block[2];
	q->sharedMemBytes = k->smem;
	q->kernelParams = k->nparams ? k->args : NULL;
	q->extra = NULL;
	if (v2) {
		q->kern = (CUkernel)k->kern;
		q->ctx = (CUcontext)k->ctx;
	}
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	return get_kernel(h, (CUDA_KERNEL_NODE_PARAMS_v2 *)p, false);
}

CU_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v2 *p);
CU_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	return get_kernel(h, p, true);
}

/* exec NULL: the graph's node; else the node in that executable graph */
static CUresult set_kernel(const char *call, CUgraphExec hExec, CUgraphNode h, const void *q, bool v2)
{
	struct kbuf *kb;
	struct rt_node_params p;
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	CUresult r = set_target(hExec, h, cudaGraphNodeTypeKernel, &x, &n);

	if (r)
		return r;
	kb = malloc(sizeof(*kb));
	if (!kb)
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	r = kernel_v2(rt_gnode_graph(n)->vgpu, q, v2, kb->buf, kb->offsets, &p);
	if (!r)
		r = set_params(call, x, n, &p);
	free(kb);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	return set_kernel("cuGraphKernelNodeSetParams", NULL, h, p, false);
}

CU_EXPORT CUresult CUDAAPI cuGraphKernelNodeSetParams_v2(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v2 *p);
CU_EXPORT CUresult CUDAAPI cuGraphKernelNodeSetParams_v2(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	return set_kernel("cuGraphKernelNodeSetParams_v2", NULL, h, p, true);
}

CU_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode h,
							  const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	return set_kernel("cuGraphExecKernelNodeSetParams", x, h, p, false);
}

CU_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode h,
							     const CUDA_KERNEL_NODE_PARAMS_v2 *p);
CU_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode h,
							     const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	return set_kernel("cuGraphExecKernelNodeSetParams_v2", x, h, p, true);
}

/* the attributes a launch carries (guest/core/nodeattr.c; the ids and value
 * layout are the runtime's); the others are NotSupported, logged */
static CUresult kernel_attr(const char *call, CUgraphNode h, CUkernelNodeAttrID attr,
			    const CUkernelNodeAttrValue *set, CUkernelNodeAttrValue *get)
{
	struct rt_gnode *n;
	CUresult r = node_of(h, cudaGraphNodeTypeKernel, &n);

	if (r)
		return r;
	return cu_result(rt_gnode_kernel_attr(call, n, (int)attr, (const cudaLaunchAttributeValue *)set,
					      (cudaLaunchAttributeValue *)get));
}

CU_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
							 CUkernelNodeAttrValue *value_out)
{
	return kernel_attr("cuGraphKernelNodeGetAttribute", hNode, attr, NULL, value_out);
}

CU_EXPORT CUresult CUDAAPI cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
							 const CUkernelNodeAttrValue *value)
{
	return kernel_attr("cuGraphKernelNodeSetAttribute", hNode, attr, value, NULL);
}

CU_EXPORT CUresult CUDAAPI cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src)
{
	struct rt_gnode *d, *s;
	CUresult r = node_of(dst, cudaGraphNodeTypeKernel, &d);

	if (!r)
		r = node_of(src, cudaGraphNodeTypeKernel, &s);
	return r ? r : cu_result(rt_gnode_kernel_attrs_copy(d, s));
}

/* ---- memcpy nodes: one 2D region of host or device memory (no arrays, depth 1) ---- */

static CUresult side(const char *call, CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y,
		     size_t z, size_t pitch, size_t height, const void **ptr, bool *is_host)
{
	const char *base;

	switch (type) {
	case CU_MEMORYTYPE_HOST:
		base = host;
		*is_host = true;
		break;
	case CU_MEMORYTYPE_DEVICE:
	case CU_MEMORYTYPE_UNIFIED:
		base = (const char *)(uintptr_t)dev;
		*is_host = false;
		break;
	case CU_MEMORYTYPE_ARRAY:
		log_warn("%s: memcpy nodes with CUDA arrays are not supported by mearas", call);
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	default:
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	if (!base)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	*ptr = base + x + pitch * (y + z * height);
	return CUDA_SUCCESS;
}

/* the core's node of the driver's parameters of a kind that come with a
 * context (memcpy, memset), for a graph of vgpu: shared by Add, Set and ExecSet */
typedef CUresult (*ctx_params_fn)(const char *call, int vgpu, const void *q, CUcontext ctx,
				  struct rt_node_params *p);

static CUresult add_ctx_node(const char *call, CUgraphNode *o, CUgraph hGraph, const CUgraphNode *d, size_t n,
			     ctx_params_fn conv, const void *q, CUcontext ctx)
{
	struct rt_node_params p;
	struct rt_graph *g;
	CUresult r = cu_graph_of(hGraph, &g);

	if (!r)
		r = conv(call, g->vgpu, q, ctx, &p);
	return r ? r : add(call, o, hGraph, d, n, &p);
}

static CUresult set_ctx_node(const char *call, CUgraphExec hExec, CUgraphNode h, int type, ctx_params_fn conv,
			     const void *q, CUcontext ctx)
{
	struct rt_node_params p;
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	CUresult r = set_target(hExec, h, type, &x, &n);

	if (!r)
		r = conv(call, rt_gnode_graph(n)->vgpu, q, ctx, &p);
	return r ? r : set_params(call, x, n, &p);
}

/*
 * cuGraphAdd<Kind>Node, cuGraph<Kind>NodeGetParams, cuGraph<Kind>NodeSetParams
 * and cuGraphExec<Kind>NodeSetParams of a kind that comes with a context:
 * Params to the core's node of type by to_core, back by from_core. A macro:
 * C has no other way to define several exported functions from one body.
 */
#define CTX_NODE_CALLS(Kind, Params, type, to_core, from_core)                                                     \
	CU_EXPORT CUresult CUDAAPI cuGraphAdd##Kind##Node(CUgraphNode *o, CUgraph hGraph, const CUgraphNode *d,    \
							  size_t n, const Params *q, CUcontext ctx)                \
	{                                                                                                          \
		return add_ctx_node("cuGraphAdd" #Kind "Node", o, hGraph, d, n, to_core, q, ctx);                  \
	}                                                                                                          \
	CU_EXPORT CUresult CUDAAPI cuGraph##Kind##NodeGetParams(CUgraphNode h, Params *q)                          \
	{                                                                                                          \
		const struct rt_node_params *p;                                                                    \
		CUresult r = cu_node_params(h, type, q, &p);                                                          \
                                                                                                                   \
		if (!r)                                                                                            \
			from_core(p, q);                                                                           \
		return r;                                                                                          \
	}                                                                                                          \
	CU_EXPORT CUresult CUDAAPI cuGraph##Kind##NodeSetParams(CUgraphNode h, const Params *q)                    \
	{                                                                                                          \
		return set_ctx_node("cuGraph" #Kind "NodeSetParams", NULL, h, type, to_core, q, NULL);             \
	}                                                                                                          \
	CU_EXPORT CUresult CUDAAPI cuGraphExec##Kind##NodeSetParams(CUgraphExec x, CUgraphNode h, const Params *q, \
								    CUcontext ctx)                                 \
	{                                                                                                          \
		return set_ctx_node("cuGraphExec" #Kind "NodeSetParams", x, h, type, to_core, q, ctx);             \
	}

static CUresult memcpy_params(const char *call, int vgpu, const void *q, CUcontext ctx, struct rt_node_params *p)
{
	const CUDA_MEMCPY3D *c = q;
	const void *src, *dst;
	bool sh, dh;
	CUresult r;

	if (!c)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = same_ctx(vgpu, ctx);
	if (r)
		return r;
	if (c->Depth != 1 || c->Height < 1) {
		if (c->Depth > 1)
			log_warn("%s: 3D memcpy nodes (Depth > 1) are not supported by mearas", call);
		return CU_REFUSE(c->Depth > 1 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE);
	}
	r = side(call, c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch,
		 c->srcHeight, &src, &sh);
	if (!r)
		r = side(call, c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstZ,
			 c->dstPitch, c->dstHeight, &dst, &dh);
	if (r)
		return r;
	memset(p, 0, sizeof(*p));
	p->type = cudaGraphNodeTypeMemcpy;
	p->u.c.dst = (void *)dst;
	p->u.c.src = src;
	p->u.c.width = c->WidthInBytes;
	p->u.c.height = c->Height;
	p->u.c.dpitch = c->Height > 1 ? c->dstPitch : c->WidthInBytes;
	p->u.c.spitch = c->Height > 1 ? c->srcPitch : c->WidthInBytes;
	if (c->srcMemoryType == CU_MEMORYTYPE_UNIFIED || c->dstMemoryType == CU_MEMORYTYPE_UNIFIED)
		p->u.c.kind = cudaMemcpyDefault;
	else
		p->u.c.kind = sh ? (dh ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
				 : (dh ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
	return CUDA_SUCCESS;
}

static void memcpy_params_out(const struct rt_node_params *p, CUDA_MEMCPY3D *q)
{
	const struct rt_memcpy_node *c = &p->u.c;

	memset(q, 0, sizeof(*q));
	q->srcMemoryType = c->kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED
			   : (c->kind == cudaMemcpyHostToDevice || c->kind == cudaMemcpyHostToHost) ? CU_MEMORYTYPE_HOST
												       : CU_MEMORYTYPE_DEVICE;
	q->dstMemoryType = c->kind == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED
			   : (c->kind == cudaMemcpyDeviceToHost || c->kind == cudaMemcpyHostToHost) ? CU_MEMORYTYPE_HOST
												       : CU_MEMORYTYPE_DEVICE;
	if (q->srcMemoryType == CU_MEMORYTYPE_HOST)
		q->srcHost = c->src;
	else
		q->srcDevice = (CUdeviceptr)(uintptr_t)c->src;
	if (q->dstMemoryType == CU_MEMORYTYPE_HOST)
		q->dstHost = c->dst;
	else
		q->dstDevice = (CUdeviceptr)(uintptr_t)c->dst;
	q->srcPitch = c->spitch;
	q->dstPitch = c->dpitch;
	q->srcHeight = q->dstHeight = c->height;
	q->WidthInBytes = c->width;
	q->Height = c->height;
	q->Depth = 1;
}

CTX_NODE_CALLS(Memcpy, CUDA_MEMCPY3D, cudaGraphNodeTypeMemcpy, memcpy_params, memcpy_params_out)

/* ---- memset nodes ---- */

static CUresult memset_params(const char *call, int vgpu, const void *q, CUcontext ctx, struct rt_node_params *p)
{
	const CUDA_MEMSET_NODE_PARAMS *m = q;
	CUresult r;

	(void)call;
	if (!m)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = same_ctx(vgpu, ctx);
	if (r)
		return r;
	rt_memset_node_params(p, (void *)(uintptr_t)m->dst, m->pitch, m->value, m->elementSize, m->width, m->height);
	return CUDA_SUCCESS;
}

static void memset_params_out(const struct rt_node_params *p, CUDA_MEMSET_NODE_PARAMS *q)
{
	const struct rt_memset_node *m = &p->u.s;

	q->dst = (CUdeviceptr)(uintptr_t)m->dst;
	q->pitch = m->pitch;
	q->value = m->value;
	q->elementSize = m->elem;
	q->width = m->width;
	q->height = m->height;
}

CTX_NODE_CALLS(Memset, CUDA_MEMSET_NODE_PARAMS, cudaGraphNodeTypeMemset, memset_params, memset_params_out)

/* ---- host, empty and child graph nodes ---- */

static CUresult host_params(const CUDA_HOST_NODE_PARAMS *h, struct rt_node_params *p)
{
	if (!h)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	memset(p, 0, sizeof(*p));
	p->type = cudaGraphNodeTypeHost;
	p->u.h.fn = h->fn;
	p->u.h.user = h->userData;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
					      const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct rt_node_params p;
	CUresult r = host_params(nodeParams, &p);

	return r ? r : add("cuGraphAddHostNode", o, g, d, n, &p);
}

CU_EXPORT CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode h, CUDA_HOST_NODE_PARAMS *q)
{
	const struct rt_node_params *p;
	CUresult r = cu_node_params(h, cudaGraphNodeTypeHost, q, &p);

	if (r)
		return r;
	q->fn = p->u.h.fn;
	q->userData = p->u.h.user;
	return CUDA_SUCCESS;
}

static CUresult set_host(const char *call, CUgraphExec hExec, CUgraphNode h, const CUDA_HOST_NODE_PARAMS *q)
{
	struct rt_node_params p;
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	CUresult r = set_target(hExec, h, cudaGraphNodeTypeHost, &x, &n);

	/* both checks fail with CUDA_ERROR_INVALID_VALUE: their order is not seen */
	if (!r)
		r = host_params(q, &p);
	return r ? r : set_params(call, x, n, &p);
}

CU_EXPORT CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p)
{
	return set_host("cuGraphHostNodeSetParams", NULL, h, p);
}

CU_EXPORT CUresult CUDAAPI cuGraphExecHostNodeSetParams(CUgraphExec x, CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p)
{
	return set_host("cuGraphExecHostNodeSetParams", x, h, p);
}

/* ---- event record and wait nodes (the event: the caller's) ---- */

static CUresult add_event(const char *call, int type, CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
			  CUevent event)
{
	struct rt_node_params p;
	CUresult r = cu_result(rt_event_node_params(type, event, &p));

	return r ? r : add(call, o, g, d, n, &p);
}

static CUresult get_event(CUgraphNode h, int type, CUevent *out)
{
	const struct rt_node_params *p;
	CUresult r = cu_node_params(h, type, out, &p);

	if (!r)
		*out = (CUevent)p->u.ev;
	return r;
}

static CUresult set_event(const char *call, int type, CUgraphExec hExec, CUgraphNode h, CUevent event)
{
	struct rt_node_params p;
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	CUresult r = set_target(hExec, h, type, &x, &n);

	if (!r)
		r = cu_result(rt_event_node_params(type, event, &p));
	return r ? r : set_params(call, x, n, &p);
}

CU_EXPORT CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
						     CUevent event)
{
	return add_event("cuGraphAddEventRecordNode", cudaGraphNodeTypeEventRecord, o, g, d, n, event);
}

CU_EXPORT CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
						   CUevent event)
{
	return add_event("cuGraphAddEventWaitNode", cudaGraphNodeTypeWaitEvent, o, g, d, n, event);
}

CU_EXPORT CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode h, CUevent *out)
{
	return get_event(h, cudaGraphNodeTypeEventRecord, out);
}

CU_EXPORT CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode h, CUevent *out)
{
	return get_event(h, cudaGraphNodeTypeWaitEvent, out);
}

CU_EXPORT CUresult CUDAAPI cuGraphEventRecordNodeSetEvent(CUgraphNode h, CUevent event)
{
	return set_event("cuGraphEventRecordNodeSetEvent", cudaGraphNodeTypeEventRecord, NULL, h, event);
}

CU_EXPORT CUresult CUDAAPI cuGraphEventWaitNodeSetEvent(CUgraphNode h, CUevent event)
{
	return set_event("cuGraphEventWaitNodeSetEvent", cudaGraphNodeTypeWaitEvent, NULL, h, event);
}

CU_EXPORT CUresult CUDAAPI cuGraphExecEventRecordNodeSetEvent(CUgraphExec x, CUgraphNode h, CUevent event)
{
	return x ? set_event("cuGraphExecEventRecordNodeSetEvent", cudaGraphNodeTypeEventRecord, x, h, event)
		 : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

CU_EXPORT CUresult CUDAAPI cuGraphExecEventWaitNodeSetEvent(CUgraphExec x, CUgraphNode h, CUevent event)
{
	return x ? set_event("cuGraphExecEventWaitNodeSetEvent", cudaGraphNodeTypeWaitEvent, x, h, event)
		 : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

CU_EXPORT CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n)
{
	struct rt_node_params p = { .type = cudaGraphNodeTypeEmpty };

	return add("cuGraphAddEmptyNode", o, g, d, n, &p);
}

CU_EXPORT CUresult CUDAAPI cuGraphAddChildGraphNode(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
						    CUgraph childGraph)
{
	struct rt_node_params p = { .type = cudaGraphNodeTypeGraph };

	p.u.child = (struct rt_graph *)childGraph;
	return add("cuGraphAddChildGraphNode", o, g, d, n, &p);
}

/* the node's own copy, valid as long as the node */
CU_EXPORT CUresult CUDAAPI cuGraphChildGraphNodeGetGraph(CUgraphNode h, CUgraph *phGraph)
{
	const struct rt_node_params *p;
	CUresult r = cu_node_params(h, cudaGraphNodeTypeGraph, phGraph, &p);

	if (r)
		return r;
	*phGraph = (CUgraph)p->u.child;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuGraphExecChildGraphNodeSetParams(CUgraphExec hExec, CUgraphNode h, CUgraph childGraph)
{
	struct rt_node_params p = { .type = cudaGraphNodeTypeGraph };
	struct rt_graph_exec *x;
	struct rt_gnode *n;
	CUresult r = node_of(h, cudaGraphNodeTypeGraph, &n);

	if (r)
		return r;
	x = rt_graph_exec_get(hExec);
	if (!x)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	p.u.child = (struct rt_graph *)childGraph;
	return cu_result(rt_graph_exec_set("cuGraphExecChildGraphNodeSetParams", x, n, &p));
}

/* ---- structure ---- */

CU_EXPORT CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode h, CUgraphNodeType *type)
{
	const struct rt_node_params *p;
	CUresult r = cu_node_params(h, -1, type, &p);

	if (r)
		return r;
	*type = (CUgraphNodeType)p->type;
	return CUDA_SUCCESS;
}

/* lists of nodes exist for built graphs only */
static CUresult built(const char *call, struct rt_graph *g)
{
	if (g->built)
		return CUDA_SUCCESS;
	log_warn("%s: the nodes of a graph made by stream capture have no handles in mearas", call);
	return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
}

CU_EXPORT CUresult CUDAAPI cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes)
{
	struct rt_graph *g;
	CUresult r = cu_graph_of(hGraph, &g);

	if (!r)
		r = built("cuGraphGetRootNodes", g);
	return r ? r : cu_result(rt_graph_nodes(g, true, (void **)rootNodes, numRootNodes));
}

/* the edges mearas keeps are the default kind: their data is all zeros */
static void zero_edges(CUgraphEdgeData *e, size_t n)
{
	if (e)
		memset(e, 0, n * sizeof(*e));
}

/*
 * Edge data given to mearas. A programmatic edge (type PROGRAMMATIC, from a
 * kernel's PROGRAMMATIC or LAUNCH_ORDER port) lets the downstream kernel
 * start before its upstream one ends; waiting for the end instead is one of
 * the schedules the driver may pick (no kernel can count on the overlap), so
 * such an edge is kept as a full dependency, said once at info level. Other
 * data (unknown types or ports) is refused.
 */
static CUresult no_edge_data(const CUgraphEdgeData *e, size_t n)
{
	/* CUgraphEdgeData is cudaGraphEdgeData, field for field */
	return rt_graph_edge_data((const cudaGraphEdgeData *)e, n) ? CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED)
								     : CUDA_SUCCESS;
}

static CUresult get_edges(const char *call, CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *e,
			  size_t *n)
{
	struct rt_graph *g;
	size_t cap = n ? *n : 0;
	CUresult r = cu_graph_of(hGraph, &g);

	if (!r)
		r = built(call, g);
	if (!r)
		r = cu_result(rt_graph_edges(g, (void **)from, (void **)to, n));
	if (!r && from)
		zero_edges(e, cap);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *n)
{
	return get_edges("cuGraphGetEdges", g, from, to, NULL, n);
}

CU_EXPORT CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *e,
					      size_t *n);
CU_EXPORT CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *e,
					      size_t *n)
{
	return get_edges("cuGraphGetEdges_v2", g, from, to, e, n);
}

static CUresult node_edges(CUgraphNode h, bool dependents, CUgraphNode *out, CUgraphEdgeData *e, size_t *n)
{
	struct rt_gnode *node;
	size_t cap = n ? *n : 0;
	CUresult r = node_of(h, -1, &node);

	if (!r)
		r = cu_result(rt_gnode_edges(node, dependents, (void **)out, n));
	if (!r && out)
		zero_edges(e, cap);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode h, CUgraphNode *d, size_t *n)
{
	return node_edges(h, false, d, NULL, n);
}

CU_EXPORT CUresult CUDAAPI cuGraphNodeGetDependencies_v2(CUgraphNode h, CUgraphNode *d, CUgraphEdgeData *e, size_t *n);
CU_EXPORT CUresult CUDAAPI cuGraphNodeGetDependencies_v2(CUgraphNode h, CUgraphNode *d, CUgraphEdgeData *e, size_t *n)
{
	return node_edges(h, false, d, e, n);
}

CU_EXPORT CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode h, CUgraphNode *d, size_t *n)
{
	return node_edges(h, true, d, NULL, n);
}

CU_EXPORT CUresult CUDAAPI cuGraphNodeGetDependentNodes_v2(CUgraphNode h, CUgraphNode *d, CUgraphEdgeData *e,
							   size_t *n);
CU_EXPORT CUresult CUDAAPI cuGraphNodeGetDependentNodes_v2(CUgraphNode h, CUgraphNode *d, CUgraphEdgeData *e,
							   size_t *n)
{
	return node_edges(h, true, d, e, n);
}

static CUresult change_deps(const char *call, CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
			    const CUgraphEdgeData *e, size_t n, bool add_them)
{
	struct rt_graph *g;
	CUresult r = cu_graph_of(hGraph, &g);

	if (!r)
		r = built(call, g);
	return r ? r : cu_result(rt_graph_change_deps(g, (void *const *)from, (void *const *)to,
						      (const cudaGraphEdgeData *)e, n, add_them));
}

/* name (no edge data) and name##_v2 (edge data), as the driver exports
 * both; a macro: C has no other way to define two exported functions from
 * one body */
#define DEPS_CALLS(name, add_them)                                                                           \
	CU_EXPORT CUresult CUDAAPI name(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n) \
	{                                                                                                    \
		return change_deps(#name, g, from, to, NULL, n, add_them);                                   \
	}                                                                                                    \
	CU_EXPORT CUresult CUDAAPI name##_v2(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,      \
					     const CUgraphEdgeData *e, size_t n);                            \
	CU_EXPORT CUresult CUDAAPI name##_v2(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,      \
					     const CUgraphEdgeData *e, size_t n)                             \
	{                                                                                                    \
		return change_deps(#name "_v2", g, from, to, e, n, add_them);                                \
	}

DEPS_CALLS(cuGraphAddDependencies, true)
DEPS_CALLS(cuGraphRemoveDependencies, false)

CU_EXPORT CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode h)
{
	struct rt_gnode *n;
	CUresult r = node_of(h, -1, &n);

	return r ? r : cu_result(rt_gnode_destroy(n));
}

CU_EXPORT CUresult CUDAAPI cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
	struct rt_graph *g, *c;
	CUresult r = cu_need(cu_graph_of(originalGraph, &g), phGraphClone);

	if (!r)
		r = cu_result(rt_graph_clone("cuGraphClone", g, &c));
	if (!r)
		*phGraphClone = (CUgraph)c;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph)
{
	struct rt_graph *g;
	struct rt_gnode *n;
	CUresult r = cu_need(cu_graph_of(hClonedGraph, &g), phNode);

	if (r)
		return r;
	r = cu_result(rt_gnode_find_in_clone(g, (struct rt_gnode *)hOriginalNode, &n));
	if (!r)
		*phNode = (CUgraphNode)n;
	return r;
}

/* ---- updates of executable graphs ---- */

static CUresult update(CUgraphExec hExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *info)
{
	struct rt_graph_exec *x;
	struct rt_graph *g;
	void *err = NULL, *err_from = NULL;
	int result = CU_GRAPH_EXEC_UPDATE_ERROR;
	CUresult r = cu_graph_of(hGraph, &g);

	if (r)
		return r;
	x = rt_graph_exec_get(hExec);
	if (!x || !info)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = cu_result(rt_graph_exec_update(x, g, &result, &err, &err_from));
	info->result = (CUgraphExecUpdateResult)result;
	info->errorNode = (CUgraphNode)err;
	info->errorFromNode = (CUgraphNode)err_from;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info);
CU_EXPORT CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
	return update(x, g, info);
}

/* CUDA 10.2's: the node to blame and the result, both required */
CU_EXPORT CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec x, CUgraph g, CUgraphNode *hErrorNode_out,
					     CUgraphExecUpdateResult *updateResult_out)
{
	CUgraphExecUpdateResultInfo info = { 0 };
	CUresult r;

	if (!hErrorNode_out || !updateResult_out)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = update(x, g, &info);
	*hErrorNode_out = info.errorNode;
	*updateResult_out = info.result;
	return r;
}

/* ---- enabling and disabling a node of an executable graph ---- */

static CUresult node_enabled(CUgraphExec hExec, CUgraphNode h, const unsigned *set, unsigned *get)
{
	struct rt_graph_exec *x = hExec ? rt_graph_exec_get(hExec) : NULL;
	struct rt_gnode *n;
	CUresult r = node_of(h, -1, &n);

	if (!r && (!x || (!set && !get)))
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return r ? r : cu_result(rt_graph_exec_node_enabled(x, n, set, get));
}

CU_EXPORT CUresult CUDAAPI cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled)
{
	return node_enabled(hGraphExec, hNode, &isEnabled, NULL);
}

CU_EXPORT CUresult CUDAAPI cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int *isEnabled)
{
	return node_enabled(hGraphExec, hNode, NULL, isEnabled);
}

/* ---- the generic calls (cuGraphAddNode, cuGraphNodeSetParams,
 * cuGraphExecNodeSetParams): a CUgraphNodeParams of a kind served above (or
 * a memory node, graphmem.c's) goes to that kind's code; other kinds are
 * refused with a log line ---- */

static CUresult generic_unserved(const char *call, CUgraphNodeType type)
{
	log_warn("%s: graph nodes of type %d are not supported by mearas: returning CUDA_ERROR_NOT_SUPPORTED", call,
		 (int)type);
	return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
}

/* the reserved fields are zero, as the driver requires */
static bool generic_reserved_zero(const CUgraphNodeParams *q)
{
	return !q->reserved0[0] && !q->reserved0[1] && !q->reserved0[2] && !q->reserved2;
}

static CUresult generic_add(const char *call, CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
			    CUgraphNodeParams *q)
{
	struct rt_node_params p;
	CUresult r;

	if (!q || !generic_reserved_zero(q))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	switch (q->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		/* CUDA_KERNEL_NODE_PARAMS_v3 has v2's fields */
		return add_kernel(call, o, g, d, n, &q->kernel, true);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if (q->memcpy.flags || q->memcpy.reserved)
			return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		return add_ctx_node(call, o, g, d, n, memcpy_params, &q->memcpy.copyParams, q->memcpy.copyCtx);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		/* CUDA_MEMSET_NODE_PARAMS_v2: v1's fields, then the context */
		return add_ctx_node(call, o, g, d, n, memset_params, &q->memset, q->memset.ctx);
	case CU_GRAPH_NODE_TYPE_HOST:
		r = host_params((const CUDA_HOST_NODE_PARAMS *)&q->host, &p);
		return r ? r : add(call, o, g, d, n, &p);
	case CU_GRAPH_NODE_TYPE_EMPTY:
		p = (struct rt_node_params){ .type = cudaGraphNodeTypeEmpty };
		return add(call, o, g, d, n, &p);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return add_event(call, cudaGraphNodeTypeEventRecord, o, g, d, n, q->eventRecord.event);
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return add_event(call, cudaGraphNodeTypeWaitEvent, o, g, d, n, q->eventWait.event);
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (q->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) {
			log_warn("%s: child graph nodes that take their graph over (ownership %d) are not supported "
				 "by mearas: returning CUDA_ERROR_NOT_SUPPORTED", call, (int)q->graph.ownership);
			return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
		}
		p = (struct rt_node_params){ .type = cudaGraphNodeTypeGraph };
		p.u.child = (struct rt_graph *)q->graph.graph;
		return add(call, o, g, d, n, &p);
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		/* CUDA_MEM_ALLOC_NODE_PARAMS_v2 has v1's fields; dptr is an out field */
		return cuGraphAddMemAllocNode(o, g, d, n, (CUDA_MEM_ALLOC_NODE_PARAMS *)&q->alloc);
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		return cuGraphAddMemFreeNode(o, g, d, n, q->free.dptr);
	default:
		return generic_unserved(call, q->type);
	}
}

CU_EXPORT CUresult CUDAAPI cuGraphAddNode(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
					  CUgraphNodeParams *q);
CU_EXPORT CUresult CUDAAPI cuGraphAddNode(CUgraphNode *o, CUgraph g, const CUgraphNode *d, size_t n,
					  CUgraphNodeParams *q)
{
	return generic_add("cuGraphAddNode", o, g, d, n, q);
}

CU_EXPORT CUresult CUDAAPI cuGraphAddNode_v2(CUgraphNode *o, CUgraph g, const CUgraphNode *d,
					     const CUgraphEdgeData *e, size_t n, CUgraphNodeParams *q)
{
	CUresult r = no_edge_data(e, n);

	return r ? r : generic_add("cuGraphAddNode_v2", o, g, d, n, q);
}

/* x: the executable graph's copy of the node, or NULL: the node itself */
static CUresult generic_set(const char *call, CUgraphExec x, CUgraphNode h, CUgraphNodeParams *q)
{
	if (!q || !generic_reserved_zero(q))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	switch (q->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return set_kernel(call, x, h, &q->kernel, true);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if (q->memcpy.flags || q->memcpy.reserved)
			return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		return set_ctx_node(call, x, h, cudaGraphNodeTypeMemcpy, memcpy_params, &q->memcpy.copyParams,
				    q->memcpy.copyCtx);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		return set_ctx_node(call, x, h, cudaGraphNodeTypeMemset, memset_params, &q->memset, q->memset.ctx);
	case CU_GRAPH_NODE_TYPE_HOST:
		return x ? cuGraphExecHostNodeSetParams(x, h, (const CUDA_HOST_NODE_PARAMS *)&q->host)
			 : cuGraphHostNodeSetParams(h, (const CUDA_HOST_NODE_PARAMS *)&q->host);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return set_event(call, cudaGraphNodeTypeEventRecord, x, h, q->eventRecord.event);
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return set_event(call, cudaGraphNodeTypeWaitEvent, x, h, q->eventWait.event);
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (x)
			return cuGraphExecChildGraphNodeSetParams(x, h, q->graph.graph);
		return generic_unserved(call, q->type); /* the driver has no setter for it either */
	default:
		return generic_unserved(call, q->type);
	}
}

CU_EXPORT CUresult CUDAAPI cuGraphNodeSetParams(CUgraphNode h, CUgraphNodeParams *q)
{
	return generic_set("cuGraphNodeSetParams", NULL, h, q);
}

CU_EXPORT CUresult CUDAAPI cuGraphExecNodeSetParams(CUgraphExec x, CUgraphNode h, CUgraphNodeParams *q)
{
	return generic_set("cuGraphExecNodeSetParams", x, h, q);
}
