/* SPDX-License-Identifier: MIT */
/*
 * Kernels for raw-ring attacks on mearasd --device=sim: a PTX fat binary
 * made at run time (ptx_fatbin.h) loaded through MODULE_LOAD, its kernel
 * looked up with FUNC_GET and launched with u32 parameters. The model's
 * mearas_sim_spin(ms) keeps a stream busy for ms milliseconds (a kernel
 * that does not finish, as far as anyone waiting on the stream can tell).
 */
#ifndef MEARAS_TESTS_SIM_KERNELS_H
#define MEARAS_TESTS_SIM_KERNELS_H

#include "hostile.h"
#include "ptx_fatbin.h"
#include "sqe_build.h"

/* cudaError_t values the attacks expect (this suite builds without the toolkit's headers) */
enum {
	SEC_cudaErrorMemoryAllocation = 2,
	SEC_cudaErrorInvalidResourceHandle = 400,
	SEC_cudaErrorNotReady = 600,
};

/* Loads kernel `name` (nparams u32s) as module `mod` on vGPU v, staging the
 * image at data-area offset `off`; the MODULE_LOAD status (-1: no room). */
static inline int sim_load_kernel(struct hostile *h, unsigned v, uint64_t mod, const char *name,
				  unsigned nparams, uint64_t off)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_MODULE_LOAD);
	size_t n = ptx_fatbin(h->data + off, h->hdr->data_size - off, name, nparams);

	if (!n)
		return -1;
	e.args.a[0] = mod;
	e.args.a[1] = off;
	e.args.a[2] = n;
	return hostile_call(h, v, &e, NULL);
}

static inline int sim_func_get(struct hostile *h, unsigned v, uint64_t mod, uint64_t id, const char *name)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_FUNC_GET);

	e.args.a[0] = mod;
	e.args.a[1] = id;
	e.payload_len = (uint32_t)strlen(name) + 1;
	memcpy(e.inline_payload, name, e.payload_len);
	return hostile_call(h, v, &e, NULL);
}

/* Posts a launch of func (one u32 parameter) on stream, one block of one thread. */
static inline void sim_launch_u32(struct hostile *h, unsigned v, uint64_t func, uint32_t stream, uint32_t arg)
{
	struct mearas_sqe e = sqe_launch_u32(func, stream, arg);

	hostile_submit(h, v, &e);
}

/* A record with one argument, wanting a completion: its status. */
static inline int sim_call1(struct hostile *h, unsigned v, unsigned op, uint32_t stream, uint64_t a0, uint64_t a1)
{
	struct mearas_sqe e = hostile_sqe(op);

	e.stream = stream;
	e.args.a[0] = a0;
	e.args.a[1] = a1;
	return hostile_call(h, v, &e, NULL);
}

#endif
