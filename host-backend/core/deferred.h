/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous errors, reported as CUDA reports them: an error of work that
 * nothing waits for is kept (the first one) and returned by the next
 * synchronizing call that succeeds. A vGPU keeps them for its records
 * (exec.c); a remote vGPU's session on the serving node keeps those of the
 * records it completes without a completion for the forwarder.
 */
#ifndef MEARAS_DEFERRED_H
#define MEARAS_DEFERRED_H

#include <stdbool.h>

#include "mearas/region.h"

/* ops whose completion also reports an earlier asynchronous error */
static inline bool reports_deferred(unsigned op)
{
	return mearas_op_props(op)->deferred;
}

/* Work nothing waits for ended with status: kept unless one is kept already. */
static inline void deferred_keep(int *held, int status)
{
	if (status && !*held)
		*held = status;
}

/* The status a completion of op reports: its own, or, when that is success
 * and op reports them, the error kept (which is then gone). */
static inline int deferred_report(int *held, unsigned op, int status)
{
	if (status == 0 && *held && reports_deferred(op)) {
		status = *held;
		*held = 0;
	}
	return status;
}

#endif
