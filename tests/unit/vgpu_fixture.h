/* SPDX-License-Identifier: MIT */
/* An in-process worker with sim-backed vGPUs, wired with worker.c's own
 * pieces (region header, rings, eventfds, heap), for feeding records to
 * exec_record() and reading the completions back from the CQs. */
#ifndef MEARAS_UNIT_VGPU_FIXTURE_H
#define MEARAS_UNIT_VGPU_FIXTURE_H

#include <stdbool.h>
#include <string.h>

#include "core/engine.h"
#include "core/exec.h"
#include "core/handles.h"
#include "core/worker.h"

#define FIXTURE_DATA_SIZE (8ull << 20)

struct fixture {
	struct backend_config cfg;
	struct worker *w;
};

/* 0, or -1 with a message on stderr */
int fixture_init(struct fixture *f, unsigned nvgpus, uint64_t quota);
void fixture_destroy(struct fixture *f);

/* Next completion of thread slot `slot` of vGPU `vg`; false if none. */
bool fixture_cq_pop(struct fixture *f, unsigned vg, unsigned slot, struct mearas_cqe *out);
/* Completions waiting in a slot. */
uint32_t fixture_cq_ready(struct fixture *f, unsigned vg, unsigned slot);

/* Runs one record that wants a completion on thread slot `slot` and returns
 * its status; val (may be NULL) gets the completion's values. -1000 (and a
 * message) when no completion (or more than one, or another) was posted. */
int fixture_call(struct fixture *f, unsigned vg, unsigned slot, struct mearas_sqe *e, uint64_t val[2]);

/* The same on slot 0. */
static inline int fixture_run(struct fixture *f, unsigned vg, struct mearas_sqe *e, uint64_t val[2])
{
	return fixture_call(f, vg, 0, e, val);
}

/* The record op on `stream` with arguments args[0..n), run on vGPU vg, slot `slot`. */
int fixture_op(struct fixture *f, unsigned vg, unsigned slot, unsigned op, uint32_t stream,
	       const uint64_t *args, unsigned n);
static inline struct mearas_sqe sqe_of(unsigned op)
{
	struct mearas_sqe e;

	memset(&e, 0, sizeof(e));
	e.op = (uint16_t)op;
	return e;
}

/* Allocates size bytes on vGPU vg through MEM_ALLOC; 0 on failure. */
static inline uint64_t fixture_alloc(struct fixture *f, unsigned vg, uint64_t size)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_MEM_ALLOC);
	uint64_t val[2];

	e.args.a[0] = size;
	return fixture_run(f, vg, &e, val) == 0 ? val[0] : 0;
}

#endif
