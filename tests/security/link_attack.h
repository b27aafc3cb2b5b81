/* SPDX-License-Identifier: MIT */
/*
 * What the attacks on a link port share (attacks/link_*.c): their command
 * line, PORT N SECONDS, and the clock they measure the server with.
 */
#ifndef MEARAS_TESTS_LINK_ATTACK_H
#define MEARAS_TESTS_LINK_ATTACK_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* PORT N SECONDS into port, n and secs; another count of arguments prints
 * "usage: PROGRAM PORT N SECS_NAME" and exits 2 */
static inline void link_attack_args(int argc, char **argv, const char *secs_name, unsigned *port,
				    unsigned *n, double *secs)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s PORT N %s\n", argv[0], secs_name);
		exit(2);
	}
	*port = (unsigned)atoi(argv[1]);
	*n = (unsigned)atoi(argv[2]);
	*secs = atof(argv[3]);
}

/* seconds on the monotonic clock */
static inline double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

#endif
