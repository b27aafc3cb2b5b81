// Graphs built node by node through the driver API alone (C, -lcuda; run
// with 2 vGPUs): a module of PTX with the sim's mearas_sim_add_u32 (it adds
// to mapped host memory), a graph of a 2D memset of 4-byte elements, a copy
// of pinned memory to the device, a 2D copy back with pitches, a kernel node
// on the result and a host node, branches joined by an empty node; edges
// and dependencies with their (default) edge data, parameters read back,
// relaunches, exec node updates (kernel, memset, memcpy) and
// cuGraphExecUpdate_v2 with its result info; the generic cuGraphAddNode,
// cuGraphNodeSetParams and cuGraphExecNodeSetParams, with a programmatic
// edge kept as a full dependency; event record and wait nodes (generic and
// their own calls); a node of another graph, a function or
// context of the other device, other edge data, 3D copies: refused.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drv_check.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			  ".visible .entry mearas_sim_add_u32(.param .u64 p, .param .u32 n, .param .u32 v)\n"
			  "{\n\tret;\n}\n";

#define ROWS 4
#define COLS 16                 /* 4-byte words per row */
#define PITCH 256               /* device pitch in bytes */
#define HPITCH (COLS * 4 + 32)  /* host pitch of the copy back */

static volatile int host_runs;

static void host_fn(void *arg)
{
	(void)arg;
	host_runs = host_runs + 1;
}

struct graph {
	CUgraph g;
	CUgraphNode set, up, back, join, kern, host;
};

static CUdeviceptr dev, dev2;
static unsigned *pinned;        /* [0, ROWS * HPITCH): the copy back; then COLS words to upload */
static CUfunction fn, fn_other;
static CUcontext ctx0, ctx1;

static unsigned *row(int r)
{
	return (unsigned *)((char *)pinned + (size_t)r * HPITCH);
}

static unsigned *upload(void)
{
	return (unsigned *)((char *)pinned + ROWS * HPITCH);
}

static CUDA_MEMSET_NODE_PARAMS memset_of(unsigned value)
{
	CUDA_MEMSET_NODE_PARAMS m;

	memset(&m, 0, sizeof(m));
	m.dst = dev;
	m.pitch = PITCH;
	m.value = value;
	m.elementSize = 4;
	m.width = COLS;
	m.height = ROWS;
	return m;
}

/* upload's COLS words to row 1 of dev */
static CUDA_MEMCPY3D up_of(CUdeviceptr base)
{
	CUDA_MEMCPY3D c;

	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = upload();
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = base;
	c.dstY = 1;
	c.dstPitch = PITCH;
	c.WidthInBytes = COLS * 4;
	c.Height = 1;
	c.Depth = 1;
	return c;
}

static CUDA_MEMCPY3D back_of(void)
{
	CUDA_MEMCPY3D c;

	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = dev;
	c.srcPitch = PITCH;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = pinned;
	c.dstPitch = HPITCH;
	c.WidthInBytes = COLS * 4;
	c.Height = ROWS;
	c.Depth = 1;
	return c;
}

static CUDA_KERNEL_NODE_PARAMS kernel_of(void **args)
{
	CUDA_KERNEL_NODE_PARAMS k;

	memset(&k, 0, sizeof(k));
	k.func = fn;
	k.gridDimX = k.gridDimY = k.gridDimZ = 1;
	k.blockDimX = k.blockDimY = k.blockDimZ = 1;
	k.kernelParams = args;
	return k;
}

/* set -> up -> back -> kern(row 2 += add) -> join <- host(after set) */
static struct graph build(unsigned value, unsigned add)
{
	struct graph x;
	CUDA_MEMSET_NODE_PARAMS m = memset_of(value);
	CUDA_MEMCPY3D up = up_of(dev), back = back_of();
	unsigned *p = row(2), n = COLS;
	void *args[] = { &p, &n, &add };
	CUDA_KERNEL_NODE_PARAMS k = kernel_of(args);
	CUDA_HOST_NODE_PARAMS h = { host_fn, NULL };
	CUgraphNode ends[2];

	CHECK(cuGraphCreate(&x.g, 0));
	CHECK(cuGraphAddMemsetNode(&x.set, x.g, NULL, 0, &m, ctx0));
	CHECK(cuGraphAddMemcpyNode(&x.up, x.g, &x.set, 1, &up, NULL));
	CHECK(cuGraphAddMemcpyNode(&x.back, x.g, &x.up, 1, &back, ctx0));
	CHECK(cuGraphAddKernelNode(&x.kern, x.g, &x.back, 1, &k));
	CHECK(cuGraphAddHostNode(&x.host, x.g, &x.set, 1, &h));
	ends[0] = x.kern;
	ends[1] = x.host;
	CHECK(cuGraphAddEmptyNode(&x.join, x.g, ends, 2));
	return x;
}

/* build's graph through the generic cuGraphAddNode, with a second kernel
 * node (row 2 += add again) after the first over a programmatic edge, which
 * mearas keeps as a full dependency */
static struct graph build_generic(unsigned value, unsigned add, CUgraphNode *kern2)
{
	struct graph x;
	CUDA_MEMSET_NODE_PARAMS m = memset_of(value);
	unsigned *p = row(2), n = COLS;
	void *args[] = { &p, &n, &add };
	CUDA_KERNEL_NODE_PARAMS k = kernel_of(args);
	CUgraphEdgeData programmatic = { .from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC,
					 .type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC };
	CUgraphNodeParams q;
	CUgraphNode ends[2];

	CHECK(cuGraphCreate(&x.g, 0));
	memset(&q, 0, sizeof(q));
	q.type = CU_GRAPH_NODE_TYPE_MEMSET;
	memcpy(&q.memset, &m, sizeof(m));
	q.memset.ctx = ctx0;
	CHECK(cuGraphAddNode(&x.set, x.g, NULL, NULL, 0, &q));
	memset(&q, 0, sizeof(q));
	q.type = CU_GRAPH_NODE_TYPE_MEMCPY;
	q.memcpy.copyParams = up_of(dev);
	CHECK(cuGraphAddNode(&x.up, x.g, &x.set, NULL, 1, &q));
	q.memcpy.copyParams = back_of();
	q.memcpy.copyCtx = ctx0;
	CHECK(cuGraphAddNode(&x.back, x.g, &x.up, NULL, 1, &q));
	memset(&q, 0, sizeof(q));
	q.type = CU_GRAPH_NODE_TYPE_KERNEL;
	memcpy(&q.kernel, &k, sizeof(k));
	CHECK(cuGraphAddNode(&x.kern, x.g, &x.back, NULL, 1, &q));
	CHECK(cuGraphAddNode(kern2, x.g, &x.kern, &programmatic, 1, &q));
	memset(&q, 0, sizeof(q));
	q.type = CU_GRAPH_NODE_TYPE_HOST;
	q.host.fn = host_fn;
	CHECK(cuGraphAddNode(&x.host, x.g, &x.set, NULL, 1, &q));
	memset(&q, 0, sizeof(q));
	q.type = CU_GRAPH_NODE_TYPE_EMPTY;
	ends[0] = *kern2;
	ends[1] = x.host;
	CHECK(cuGraphAddNode(&x.join, x.g, ends, NULL, 2, &q));
	return x;
}

/* The sim device replays a graph's host node by asking this process to run
 * it and goes on: the stream's synchronization can come back before it has
 * run. Waits (2 s at most) for the one run a launch since `before` makes. */
static void wait_host_run(int before, const char *what)
{
	for (int i = 0; i < 2000 && host_runs == before; i++)
		usleep(1000);
	REQUIRE(host_runs == before + 1, "%s: the host node ran %d times", what, host_runs - before);
}

static void run(CUgraphExec exec, CUstream s, unsigned value, unsigned add, const char *what)
{
	int before = host_runs;

	for (int i = 0; i < COLS; i++)
		upload()[i] = 1000 + i;
	memset(pinned, 0, ROWS * HPITCH);
	CHECK(cuMemsetD8(dev, 0, PITCH * ROWS));
	CHECK(cuGraphLaunch(exec, s));
	CHECK(cuStreamSynchronize(s));
	for (int r = 0; r < ROWS; r++)
		for (int c = 0; c < COLS; c++) {
			unsigned want = r == 1 ? 1000u + c : value;

			if (r == 2)
				want += add;
			REQUIRE(row(r)[c] == want, "%s: row %d word %d is %u, expected %u", what, r, c, row(r)[c],
				want);
		}
	/* the bytes between rows on the host are not written */
	REQUIRE(((unsigned *)((char *)pinned + COLS * 4))[0] == 0, "%s: the copy wrote past its width", what);
	wait_host_run(before, what);
}

static void queries(struct graph *x)
{
	CUgraphNode from[8], to[8], deps[4];
	CUgraphEdgeData ed[8];
	size_t n = 8;
	CUgraphNodeType t;
	CUDA_MEMSET_NODE_PARAMS m;
	CUDA_MEMCPY3D c;
	CUDA_KERNEL_NODE_PARAMS k;

	memset(ed, 0x5a, sizeof(ed));
	CHECK(cuGraphGetEdges(x->g, from, to, ed, &n));
	REQUIRE(n == 6 && from[0] == x->set && to[0] == x->up && to[5] == x->join && ed[5].type == 0 &&
			ed[5].from_port == 0,
		"edges: %zu", n);
	n = 4;
	memset(ed, 0x5a, sizeof(ed));
	CHECK(cuGraphNodeGetDependencies(x->join, deps, ed, &n));
	REQUIRE(n == 2 && deps[0] == x->kern && deps[1] == x->host && ed[1].to_port == 0, "join's deps: %zu", n);
	n = 4;
	CHECK(cuGraphNodeGetDependentNodes(x->set, deps, NULL, &n));
	REQUIRE(n == 2 && deps[0] == x->up && deps[1] == x->host, "set's dependents: %zu", n);
	CHECK(cuGraphNodeGetType(x->kern, &t));
	REQUIRE(t == CU_GRAPH_NODE_TYPE_KERNEL, "kernel node type %d", (int)t);
	CHECK(cuGraphMemsetNodeGetParams(x->set, &m));
	REQUIRE(m.dst == dev && m.pitch == PITCH && m.elementSize == 4 && m.width == COLS && m.height == ROWS,
		"memset params");
	CHECK(cuGraphMemcpyNodeGetParams(x->back, &c));
	REQUIRE(c.srcMemoryType == CU_MEMORYTYPE_DEVICE && c.srcDevice == dev && c.dstMemoryType == CU_MEMORYTYPE_HOST &&
			c.dstHost == pinned && c.dstPitch == HPITCH && c.srcPitch == PITCH &&
			c.WidthInBytes == COLS * 4 && c.Height == ROWS && c.Depth == 1,
		"memcpy params");
	CHECK(cuGraphKernelNodeGetParams(x->kern, &k));
	REQUIRE(k.func == fn && *(unsigned **)k.kernelParams[0] == row(2) && *(unsigned *)k.kernelParams[2] == 7,
		"kernel params");
}

static void errors(struct graph *x)
{
	CUgraph other;
	CUgraphNode n;
	CUDA_MEMSET_NODE_PARAMS m = memset_of(1);
	CUDA_MEMCPY3D c = up_of(dev);
	unsigned *p = row(2), cnt = COLS, add = 1;
	void *args[] = { &p, &cnt, &add };
	CUDA_KERNEL_NODE_PARAMS k = kernel_of(args);
	CUgraphEdgeData ed;

	CHECK(cuGraphCreate(&other, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddEmptyNode(&n, other, &x->set, 1));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemsetNode(&n, other, NULL, 0, &m, ctx1));
	k.func = fn_other;
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode(&n, other, NULL, 0, &k));
	k.func = fn;
	k.blockDimX = 4096;
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode(&n, other, NULL, 0, &k));
	c.Depth = 2;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuGraphAddMemcpyNode(&n, other, NULL, 0, &c, NULL));
	memset(&ed, 0, sizeof(ed));
	ed.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuGraphAddDependencies(x->g, &x->host, &x->kern, &ed, 1));
	ed.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
	ed.to_port = 1;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuGraphAddDependencies(x->g, &x->host, &x->kern, &ed, 1));
	{
		CUgraphNodeParams q;

		memset(&q, 0, sizeof(q));
		q.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
		EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuGraphAddNode(&n, other, NULL, NULL, 0, &q));
		q.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC; /* served (graphmem.c): no size is an error */
		EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddNode(&n, other, NULL, NULL, 0, &q));
		q.type = CU_GRAPH_NODE_TYPE_EMPTY;
		q.reserved2 = 1;
		EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddNode(&n, other, NULL, NULL, 0, &q));
	}
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphKernelNodeGetParams(x->set, &k));
	CHECK(cuGraphDestroy(other));
}

/* event record and wait nodes through the generic calls and their own:
 * types, the event read back, set in the graph and in an executable graph,
 * no event refused; a launch records the node's event */
static void event_nodes(CUstream s)
{
	CUgraph g;
	CUgraphNode w, r;
	CUgraphExec x;
	CUgraphNodeParams q;
	CUgraphNodeType type;
	CUevent a, b, got = NULL;

	CHECK(cuEventCreate(&a, 0));
	CHECK(cuEventCreate(&b, 0));
	CHECK(cuGraphCreate(&g, 0));
	memset(&q, 0, sizeof(q));
	q.type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
	q.eventWait.event = a;
	CHECK(cuGraphAddNode(&w, g, NULL, NULL, 0, &q));
	memset(&q, 0, sizeof(q));
	q.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
	q.eventRecord.event = a;
	CHECK(cuGraphAddNode(&r, g, &w, NULL, 1, &q));
	CHECK(cuGraphNodeGetType(r, &type));
	REQUIRE(type == CU_GRAPH_NODE_TYPE_EVENT_RECORD, "record node type %d", (int)type);
	CHECK(cuGraphNodeGetType(w, &type));
	REQUIRE(type == CU_GRAPH_NODE_TYPE_WAIT_EVENT, "wait node type %d", (int)type);
	CHECK(cuGraphEventWaitNodeGetEvent(w, &got));
	REQUIRE(got == a, "the wait node's event is not the one given");
	q.eventRecord.event = b;
	CHECK(cuGraphNodeSetParams(r, &q));
	CHECK(cuGraphEventRecordNodeGetEvent(r, &got));
	REQUIRE(got == b, "cuGraphNodeSetParams did not set the record node's event");
	CHECK(cuGraphInstantiate(&x, g, 0));
	CHECK(cuGraphExecEventRecordNodeSetEvent(x, r, a));
	CHECK(cuGraphLaunch(x, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuEventQuery(a));
	q.eventRecord.event = NULL;
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphExecNodeSetParams(x, r, &q));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddEventRecordNode(&r, g, NULL, 0, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphEventRecordNodeGetEvent(w, &got));
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuEventDestroy(b));
	CHECK(cuEventDestroy(a));
}

int main(void)
{
	CUdevice d0, d1;
	CUmodule mod, mod1;
	CUstream s;
	CUgraphExec exec;
	CUgraphExecUpdateResultInfo info;
	struct graph x, y, z;
	unsigned *p, n = COLS, add = 30;
	int before;
	void *args[] = { &p, &n, &add };
	CUDA_KERNEL_NODE_PARAMS k;
	CUDA_MEMSET_NODE_PARAMS m;
	CUDA_MEMCPY3D c;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&d0, 0));
	CHECK(cuDeviceGet(&d1, 1));
	CHECK(cuDevicePrimaryCtxRetain(&ctx1, d1));
	CHECK(cuCtxSetCurrent(ctx1));
	CHECK(cuModuleLoadData(&mod1, ptx));
	CHECK(cuModuleGetFunction(&fn_other, mod1, "mearas_sim_add_u32"));
	CHECK(cuDevicePrimaryCtxRetain(&ctx0, d0));
	CHECK(cuCtxSetCurrent(ctx0));
	CHECK(cuModuleLoadData(&mod, ptx));
	CHECK(cuModuleGetFunction(&fn, mod, "mearas_sim_add_u32"));
	CHECK(cuMemAlloc(&dev, PITCH * ROWS));
	CHECK(cuMemAlloc(&dev2, PITCH * ROWS));
	CHECK(cuMemAllocHost((void **)&pinned, ROWS * HPITCH + COLS * 4));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

	x = build(0x11223344u, 7);
	queries(&x);
	CHECK(cuGraphInstantiateWithFlags(&exec, x.g, 0));
	for (int l = 0; l < 3; l++)
		run(exec, s, 0x11223344u, 7, "relaunch");

	/* exec node updates: kernel, memset, and the upload into dev2 (its copy back unchanged reads dev) */
	p = row(2);
	k = kernel_of(args);
	CHECK(cuGraphExecKernelNodeSetParams(exec, x.kern, &k));
	m = memset_of(5);
	CHECK(cuGraphExecMemsetNodeSetParams(exec, x.set, &m, NULL));
	run(exec, s, 5, 30, "exec kernel and memset params");
	c = up_of(dev2);
	CHECK(cuGraphExecMemcpyNodeSetParams(exec, x.up, &c, ctx0));
	CHECK(cuMemsetD8(dev2, 0, PITCH * ROWS));
	memset(pinned, 0, ROWS * HPITCH);
	before = host_runs;
	CHECK(cuGraphLaunch(exec, s));
	CHECK(cuStreamSynchronize(s));
	REQUIRE(row(1)[0] == 5, "the upload went elsewhere, row 1 keeps the memset: %u", row(1)[0]);
	/* its host node before the next launch counts its own */
	wait_host_run(before, "exec memcpy params");

	/* cuGraphExecUpdate_v2: the same topology, then a changed one */
	y = build(9, 2);
	CHECK(cuGraphExecUpdate(exec, y.g, &info));
	REQUIRE(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS, "update result %d", (int)info.result);
	run(exec, s, 9, 2, "updated");
	z = build(9, 2);
	CHECK(cuGraphRemoveDependencies(z.g, &z.host, &z.join, NULL, 1));
	CHECK(cuGraphAddDependencies(z.g, &z.up, &z.join, NULL, 1));
	EXPECT(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(exec, z.g, &info));
	REQUIRE(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED && info.errorNode == z.join &&
			info.errorFromNode == z.up,
		"a changed edge: result %d", (int)info.result);
	run(exec, s, 9, 2, "after a refused update");

	/* the generic calls: the same graph, then a kernel node updated */
	{
		CUgraphNode kern2;
		struct graph w = build_generic(0x0badf00du, 3, &kern2);
		CUgraphExec we;
		unsigned *q_p = row(2), q_n = COLS, q_add = 10;
		void *q_args[] = { &q_p, &q_n, &q_add };
		CUgraphNodeParams q;

		CHECK(cuGraphInstantiateWithFlags(&we, w.g, 0));
		run(we, s, 0x0badf00du, 6, "generic nodes");
		memset(&q, 0, sizeof(q));
		q.type = CU_GRAPH_NODE_TYPE_KERNEL;
		k = kernel_of(q_args);
		memcpy(&q.kernel, &k, sizeof(k));
		CHECK(cuGraphExecNodeSetParams(we, kern2, &q));
		run(we, s, 0x0badf00du, 13, "generic exec node update");
		memset(&q, 0, sizeof(q));
		q.type = CU_GRAPH_NODE_TYPE_MEMSET;
		m = memset_of(77);
		memcpy(&q.memset, &m, sizeof(m));
		CHECK(cuGraphNodeSetParams(w.set, &q));
		CHECK(cuGraphMemsetNodeGetParams(w.set, &m));
		REQUIRE(m.value == 77, "cuGraphNodeSetParams: memset value %u", m.value);
		CHECK(cuGraphExecDestroy(we));
		CHECK(cuGraphDestroy(w.g));
	}

	errors(&x);
	event_nodes(s);
	CHECK(cuGraphExecDestroy(exec));
	CHECK(cuGraphDestroy(z.g));
	CHECK(cuGraphDestroy(y.g));
	CHECK(cuGraphDestroy(x.g));
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFreeHost(pinned));
	CHECK(cuMemFree(dev2));
	CHECK(cuMemFree(dev));
	printf("PASS\n");
	return 0;
}
