// SPDX-License-Identifier: MIT
/* The unit tests' cases on a fresh vgpu_fixture worker each (tests/check.h's
 * runner): the worker of the running case is `fx`. */
#ifndef MEARAS_UNIT_FIXTURE_CASES_H
#define MEARAS_UNIT_FIXTURE_CASES_H

#include "check.h"
#include "vgpu_fixture.h"

/* FIXTURE_OP(op, stream, a0, a1...): fixture_op on fx's vGPU 0, slot 0 (_ON: another slot) */
#define FIXTURE_OP_ON(slot, op, stream, ...)                                           \
	fixture_op(&fx, 0, slot, op, stream, (const uint64_t[]){ __VA_ARGS__ },        \
		   (unsigned)(sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t)))
#define FIXTURE_OP(op, stream, ...) FIXTURE_OP_ON(0, op, stream, __VA_ARGS__)

/* The worker of the case running under fixture_main. */
extern struct fixture fx;

/* Runs the cases of a test program, each on a fresh fx of nvgpus vGPUs
 * (quota bytes of memory each; 0: the device's), prepared further by `then`
 * (may be NULL); after each case fx must not have cut its client off, and
 * is freed. FIXTURE_MAIN(cases, nvgpus, quota, then) is the program's main. */
int fixture_main(const struct check_case *cases, size_t n, unsigned nvgpus, uint64_t quota,
		 void (*then)(void), int argc, char **argv);
#define FIXTURE_MAIN(cases, nvgpus, quota, then)                                       \
	int main(int argc, char **argv)                                                \
	{                                                                              \
		return fixture_main(cases, CHECK_COUNT(cases), nvgpus, quota, then, argc, argv); \
	}

#endif
