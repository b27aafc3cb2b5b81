/* SPDX-License-Identifier: MIT */
/* What every fuzz target does when its harness (not the code under test)
 * cannot go on: say why, under the target's name, and abort. */
#ifndef MEARAS_FUZZ_DIE_H
#define MEARAS_FUZZ_DIE_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", program_invocation_short_name, what);
	abort();
}

/* The start of a target's LLVMFuzzerInitialize: with FUZZ_WRITE_SEEDS=DIR
 * in the environment, write its seeds into DIR (write_seeds returns 0 or -1)
 * and exit (status 1 when that failed) instead of fuzzing. */
static inline void fuzz_seeds_if_asked(int (*write_seeds)(const char *dir))
{
	const char *dir = getenv("FUZZ_WRITE_SEEDS");

	if (dir)
		exit(write_seeds(dir) ? 1 : 0);
}

static inline void must(bool ok, const char *what)
{
	if (!ok)
		die(what);
}

#endif
