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

static inline void must(bool ok, const char *what)
{
	if (!ok)
		die(what);
}

#endif
