/* SPDX-License-Identifier: MIT */
/*
 * A host function captured into a graph runs at every launch of the graph.
 * mearasd used to free the host function's request after its first run, so
 * the second launch used freed memory in the worker. Here the graph is
 * launched 200 times, destroyed before its instantiation (which keeps
 * running it), each run answered; then host functions are captured without
 * end. Every launch must ask the client exactly once (a fresh run number
 * each time), the capture flood must be refused at mearasd's limit with
 * cudaErrorMemoryAllocation, and the worker must keep serving.
 *   host_func_graph_relaunch SOCKET
 * Exit 0 when all of that held.
 */
#include "check.h" /* REQUIRE_MSG: a failure ends the program, exit 1 */
#include "sim_kernels.h"

#define TOKEN 99

/* The next host-function request on slot 0 of vGPU 0; 0, or -1 after 5 s. */
static int host_request(struct hostile *h, struct mearas_cqe *out)
{
	uint8_t *base = h->region + h->hdr->vgpu_off[0] + h->l.cqs;
	struct mearas_ring_ctl *ctl = (struct mearas_ring_ctl *)base;
	struct mearas_cqe *ring = (struct mearas_cqe *)(ctl + 1);

	for (int i = 0; i < 50000; i++) {
		if (mearas_load_acquire(&ctl->tail) != h->cq_head[0][0]) {
			*out = ring[h->cq_head[0][0] & (h->hdr->cq_entries - 1)];
			h->cq_head[0][0]++;
			mearas_store_release(&ctl->head, h->cq_head[0][0]);
			return 0;
		}
		usleep(100);
	}
	return -1;
}

static void host_done(struct hostile *h, uint64_t token, uint64_t run)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_HOST_FUNC_DONE);

	e.args.a[0] = token;
	e.args.a[1] = run;
	hostile_submit(h, 0, &e);
}

static void post_host_func(struct hostile *h, uint32_t stream)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_HOST_FUNC);

	e.stream = stream;
	e.args.a[0] = TOKEN;
	hostile_submit(h, 0, &e);
}

int main(int argc, char **argv)
{
	struct hostile h;
	struct mearas_cqe c;
	uint64_t last = 0, runs[200];
	int r;

	hostile_open(&h, argc, argv, 1, 16ull << 20);
	h.slot = 1;     /* slot 0 carries the host-function requests */
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_STREAM_CREATE, 0, 5, 0) == 0, "stream");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_CAPTURE_BEGIN, 5, 0, 0) == 0, "capture begin");
	post_host_func(&h, 5);
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_CAPTURE_END, 5, 7, 0) == 0, "capture end");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_GRAPH_INSTANTIATE, 0, 7, 8) == 0, "instantiate");
	/* the graph goes first: its instantiation still runs the host function */
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_GRAPH_DESTROY, 0, 7, 0) == 0, "graph destroy");
	for (int i = 0; i < 200; i++) {
		r = sim_call1(&h, 0, MEARAS_OP_GRAPH_LAUNCH, 5, 8, 0);
		REQUIRE_MSG(r == 0, "launch %d: status %d (the worker died?)", i, r);
		REQUIRE_MSG(host_request(&h, &c) == 0, "launch %d: no host-function request", i);
		REQUIRE_MSG((c.flags & MEARAS_CQE_HOST_FUNC) && c.val[0] == TOKEN, "launch %d: request %#x token %llu", i,
		       c.flags, (unsigned long long)c.val[0]);
		runs[i] = c.user_data;
		host_done(&h, TOKEN, c.user_data);
	}
	for (int i = 0; i < 200; i++) {
		REQUIRE_MSG(runs[i] > last, "launch %d: run number %llu after %llu", i, (unsigned long long)runs[i],
		       (unsigned long long)last);
		last = runs[i];
	}
	printf("200 launches of a destroyed graph's instantiation: one request each\n");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_GRAPH_EXEC_DESTROY, 0, 8, 0) == 0, "exec destroy");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_GRAPH_LAUNCH, 5, 8, 0) == SEC_cudaErrorInvalidResourceHandle,
	       "launch after destroy");

	/* capture host functions without end: refused at the limit */
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_STREAM_CREATE, 0, 6, 0) == 0, "stream 6");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_CAPTURE_BEGIN, 6, 0, 0) == 0, "capture begin 6");
	for (int i = 0; i < 20000; i++)
		post_host_func(&h, 6);
	r = sim_call1(&h, 0, MEARAS_OP_SYNC_ERROR, 0, 0, 0);
	printf("20000 captured host functions: %d\n", r);
	REQUIRE_MSG(r == SEC_cudaErrorMemoryAllocation, "capture flood: status %d, want cudaErrorMemoryAllocation", r);
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_CAPTURE_END, 6, 9, 0) == 0, "capture end 9");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_GRAPH_DESTROY, 0, 9, 0) == 0, "graph destroy 9");
	/* freed with their graph: there is room again */
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_CAPTURE_BEGIN, 6, 0, 0) == 0, "capture begin again");
	post_host_func(&h, 6);
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_SYNC_ERROR, 0, 0, 0) == 0, "a host function after the flood");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_CAPTURE_END, 6, 10, 0) == 0, "capture end 10");
	printf("host functions of graphs outlive their first run; the capture flood was refused\n");
	return 0;
}
