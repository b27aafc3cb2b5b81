// SPDX-License-Identifier: MIT
/*
 * CPU lists (cpus.h). A remote vGPU's round trip passes a call between
 * spinning threads (the link's receive threads, the worker): kept on a few
 * CPUs close together, each handoff moves its cache lines a shorter way,
 * which an operator chooses with --cpus as for other polling daemons.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpus.h"

/* a CPU number at *p (decimal digits only), advancing *p; one too large
 * for unsigned long reads as ULONG_MAX (past any set) */
static bool cpu_number(const char **p, unsigned long *n)
{
	char *end;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	*n = strtoul(*p, &end, 10);
	if (errno)
		*n = ULONG_MAX;
	*p = end;
	return true;
}

bool cpus_parse(const char *s, cpu_set_t *set, char *why, size_t whylen)
{
	const char *p = s;

	CPU_ZERO(set);
	if (!*p) {
		snprintf(why, whylen, "no CPU named");
		return false;
	}
	for (;;) {
		unsigned long lo, hi;

		if (!cpu_number(&p, &lo)) {
			snprintf(why, whylen, "a CPU number expected at '%s'", p);
			return false;
		}
		hi = lo;
		if (*p == '-') {
			p++;
			if (!cpu_number(&p, &hi)) {
				snprintf(why, whylen, "a CPU number expected at '%s'", p);
				return false;
			}
		}
		if (hi < lo) {
			snprintf(why, whylen, "range %lu-%lu runs backwards", lo, hi);
			return false;
		}
		if (hi >= CPU_SETSIZE) {
			snprintf(why, whylen, "a CPU past the largest this build knows (%d)", CPU_SETSIZE - 1);
			return false;
		}
		for (unsigned long c = lo; c <= hi; c++)
			CPU_SET(c, set);
		if (!*p)
			return true;
		if (*p != ',') {
			snprintf(why, whylen, "unexpected '%c' (a list is like 0-3,8)", *p);
			return false;
		}
		p++;
	}
}

void cpus_format(const cpu_set_t *set, char *out, size_t len)
{
	size_t n = 0;

	if (!len)
		return;
	out[0] = 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int last = c;
		int w;

		if (!CPU_ISSET(c, set))
			continue;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
			last++;
		w = last > c ? snprintf(out + n, len - n, "%s%d-%d", n ? "," : "", c, last)
			     : snprintf(out + n, len - n, "%s%d", n ? "," : "", c);
		if (w < 0 || (size_t)w >= len - n) {
			if (len >= 4)
				strcpy(out + (n + 4 <= len ? n : len - 4), "...");
			return;
		}
		n += (size_t)w;
		c = last;
	}
}

bool cpus_confine(const cpu_set_t *set, char *why, size_t whylen)
{
	cpu_set_t allowed, outside;
	char list[256];

	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		snprintf(why, whylen, "sched_getaffinity: %s", strerror(errno));
		return false;
	}
	CPU_XOR(&outside, set, &allowed);
	CPU_AND(&outside, &outside, set);
	if (CPU_COUNT(&outside)) {
		char mine[256];

		cpus_format(&outside, list, sizeof(list));
		cpus_format(&allowed, mine, sizeof(mine));
		snprintf(why, whylen, "CPU(s) %s are not among those this process may use (%s)", list, mine);
		return false;
	}
	if (sched_setaffinity(0, sizeof(*set), set)) {
		snprintf(why, whylen, "sched_setaffinity: %s", strerror(errno));
		return false;
	}
	return true;
}
