/* SPDX-License-Identifier: MIT */
/*
 * Pending completions: every record that waits for the device (a
 * synchronization, cudaFreeAsync...) keeps an entry and a fence event in
 * the worker until its stream gets there. Behind a stream that never
 * finishes they grew without bound. Here a kernel keeps a stream busy for
 * 10 minutes and 20000 stream-ordered frees and 200 synchronizations are
 * queued behind it: past mearasd's bound each must fail at once with
 * cudaErrorMemoryAllocation (the synchronizations must not hang); what
 * waits for nothing still runs there, and the client's other vGPU works.
 *   pending_completion_flood SOCKET
 * Exit 0 when all of that held.
 */
#include "check.h" /* REQUIRE_MSG: a failure ends the program, exit 1 */
#include "sim_kernels.h"

#define SPIN_FUNC 2

int main(int argc, char **argv)
{
	struct hostile h;
	uint64_t dev;
	int r;

	hostile_open(&h, argc, argv, 2, 16ull << 20);
	REQUIRE_MSG(sim_load_kernel(&h, 0, 1, "mearas_sim_spin", 1, 1 << 20) == 0, "spin kernel");
	REQUIRE_MSG(sim_func_get(&h, 0, 1, SPIN_FUNC, "mearas_sim_spin") == 0, "spin function");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_STREAM_CREATE, 0, 5, 0) == 0, "stream");
	dev = hostile_alloc(&h, 0, 4096, NULL);
	REQUIRE_MSG(dev != 0, "allocation");
	sim_launch_u32(&h, 0, SPIN_FUNC, 5, 600000);
	for (int i = 0; i < 20000; i++) {
		struct mearas_sqe e = hostile_sqe(MEARAS_OP_MEM_FREE_ASYNC);

		e.stream = 5;
		e.args.a[0] = dev;
		hostile_submit(&h, 0, &e);
	}
	r = sim_call1(&h, 0, MEARAS_OP_SYNC_ERROR, 0, 0, 0);
	printf("20000 frees behind a busy stream: %d\n", r);
	REQUIRE_MSG(r == SEC_cudaErrorMemoryAllocation, "free flood: status %d, want cudaErrorMemoryAllocation", r);
	for (int i = 0; i < 200; i++) {
		r = sim_call1(&h, 0, MEARAS_OP_STREAM_SYNC, 5, 0, 0);
		REQUIRE_MSG(r == SEC_cudaErrorMemoryAllocation, "synchronization %d: status %d (-1000: none within 10 s)", i,
		       r);
	}
	printf("200 synchronizations behind it refused at once\n");
	/* records that wait for nothing still run on this vGPU, and the
	 * client's other vGPU works in full */
	REQUIRE_MSG(hostile_alloc(&h, 0, 4096, NULL) != 0, "an allocation on the flooded vGPU");
	dev = hostile_alloc(&h, 1, 4096, NULL);
	REQUIRE_MSG(dev != 0, "an allocation on vGPU 1");
	memcpy(h.data, "intact", 7);
	REQUIRE_MSG(hostile_memcpy(&h, 1, dev, 0, 7, MEARAS_COPY_HTOD) == 0, "copy to vGPU 1");
	memset(h.data, 0, 7);
	REQUIRE_MSG(hostile_memcpy(&h, 1, 0, dev, 7, MEARAS_COPY_DTOH) == 0 && !memcmp(h.data, "intact", 7),
	       "copy back from vGPU 1");
	printf("pending completions bounded; the rest kept working\n");
	return 0;
}
