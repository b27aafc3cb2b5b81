/* SPDX-License-Identifier: MIT */
/*
 * EVENT_SYNC waits on the client's own event; mearasd kept polling that
 * event after EVENT_DESTROY (or a device reset) freed it. Here one "thread"
 * waits on an event behind a busy stream while another destroys the event,
 * 20 times; then a reset destroys an event a wait recorded after it still
 * needs. Every wait must end with cudaSuccess once its event's work is done
 * (also when the client makes new events meanwhile, which may take the
 * destroyed event's memory), the destroyed id must be unknown at once, and
 * the worker must keep serving.
 *   event_sync_after_destroy SOCKET
 * Exit 0 when all of that held.
 */
#include "check.h" /* REQUIRE_MSG: a failure ends the program, exit 1 */
#include "sim_kernels.h"

#define SPIN_FUNC 2

/* A record wanting a completion on slot, not waited for. */
static void post_want(struct hostile *h, struct mearas_sqe *e, unsigned slot, uint64_t ud)
{
	e->flags |= MEARAS_SQE_WANT_CQE;
	e->cq = (uint16_t)slot;
	e->user_data = ud;
	hostile_submit(h, 0, e);
}

static int event_sync(struct hostile *h, uint64_t ev, unsigned slot, uint64_t ud)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_EVENT_SYNC);

	e.args.a[0] = ev;
	post_want(h, &e, slot, ud);
	return 0;
}

/* The completion of ud on slot within 5 s: its status, or -1000. */
static int completion(struct hostile *h, unsigned slot, uint64_t ud)
{
	struct mearas_cqe c;

	do {
		if (hostile_wait(h, 0, slot, &c, 5000))
			return -1000;
	} while (c.user_data != ud);
	return c.status;
}

static int load_spin(struct hostile *h)
{
	int r = sim_load_kernel(h, 0, 1, "mearas_sim_spin", 1, 1 << 20);

	return r ? r : sim_func_get(h, 0, 1, SPIN_FUNC, "mearas_sim_spin");
}

int main(int argc, char **argv)
{
	struct hostile h;
	struct mearas_sqe e;
	int r;

	hostile_open(&h, argc, argv, 1, 16ull << 20);
	h.slot = 1;
	REQUIRE_MSG(load_spin(&h) == 0, "spin kernel");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_STREAM_CREATE, 0, 5, 0) == 0, "stream");
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_STREAM_CREATE, 0, 6, 0) == 0, "stream 6");
	sim_launch_u32(&h, 0, SPIN_FUNC, 6, 600000);    /* busy for 10 minutes */
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_CREATE, 0, 8, 0) == 0, "event 8");
	for (int i = 0; i < 20; i++) {
		uint64_t ud = 1000 + i;

		REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_CREATE, 0, 3, 0) == 0, "event %d", i);
		sim_launch_u32(&h, 0, SPIN_FUNC, 5, 100);
		REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_RECORD, 5, 3, 0) == 0, "record %d", i);
		/* its twin, to see afterwards that the wait did not end early */
		REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_RECORD, 5, 8, 0) == 0, "record 8, %d", i);
		event_sync(&h, 3, 2, ud);
		r = sim_call1(&h, 0, MEARAS_OP_EVENT_DESTROY, 0, 3, 0);
		REQUIRE_MSG(r == 0, "destroy %d: %d", i, r);
		r = sim_call1(&h, 0, MEARAS_OP_EVENT_QUERY, 0, 3, 0);
		REQUIRE_MSG(r == SEC_cudaErrorInvalidResourceHandle, "query after destroy %d: %d", i, r);
		/* a new event, recorded behind work that never ends: where the
		 * destroyed event's memory went to it, the wait would hang */
		REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_CREATE, 0, 9, 0) == 0, "event 9, %d", i);
		REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_RECORD, 6, 9, 0) == 0, "record 9, %d", i);
		r = completion(&h, 2, ud);
		REQUIRE_MSG(r == 0, "wait %d on the destroyed event: %d (-1000: none within 5 s)", i, r);
		r = sim_call1(&h, 0, MEARAS_OP_EVENT_QUERY, 0, 8, 0);
		REQUIRE_MSG(r == 0, "wait %d ended before the work it waited for (twin event: %d)", i, r);
		REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_DESTROY, 0, 9, 0) == 0, "destroy 9, %d", i);
	}
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_STREAM_DESTROY, 0, 6, 0) == 0, "stream 6");
	printf("20 waits survived the destruction of their event\n");

	/* a reset destroys every event, one a later wait still needs included */
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_CREATE, 0, 4, 0) == 0, "event 4");
	sim_launch_u32(&h, 0, SPIN_FUNC, 5, 50);
	e = hostile_sqe(MEARAS_OP_DEVICE_RESET);
	post_want(&h, &e, 3, 77);
	sim_launch_u32(&h, 0, SPIN_FUNC, 5, 300);       /* not waited for by the reset */
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_RECORD, 5, 4, 0) == 0, "record 4");
	event_sync(&h, 4, 2, 78);
	r = completion(&h, 3, 77);
	REQUIRE_MSG(r == 0, "reset: %d", r);
	r = completion(&h, 2, 78);
	REQUIRE_MSG(r == 0, "wait across the reset: %d (-1000: none, the worker died?)", r);
	REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_EVENT_QUERY, 0, 4, 0) == SEC_cudaErrorInvalidResourceHandle,
	       "event 4 after the reset");
	REQUIRE_MSG(hostile_alloc(&h, 0, 4096, NULL) != 0, "an allocation after it all");
	printf("a wait survived the reset that destroyed its event\n");
	return 0;
}
