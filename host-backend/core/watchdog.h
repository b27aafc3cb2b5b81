/* SPDX-License-Identifier: MIT */
/* The GPU time limit of a process client's kernels (watchdog.c,
 * --kernel-timeout-ms). */
#ifndef MEARAS_WATCHDOG_H
#define MEARAS_WATCHDOG_H

#include <stdbool.h>

struct worker;
struct vgpu;

/* give each local vGPU of w a watchdog when cfg->kernel_timeout_ms is set */
int watchdog_arm(struct worker *w);
/* work was issued on stream: kernel work (counted against the limit), or a
 * wait (for an event or a host function: not counted); func names the kernel */
void watchdog_mark(struct vgpu *v, void *stream, bool kernel, void *func);
/* check the stream heads (at most once a millisecond); returns marks passed;
 * sets w->timed_out when a kernel ran past the limit */
int watchdog_poll(struct vgpu *v);
/* how long an idle poller with work in flight may sleep */
int watchdog_nap_ms(struct vgpu *v);
/* worker's main thread: a watched poller stuck in one driver call (one
 * that waits behind a kernel past the limit) cannot check the limit
 * itself; true (and the client timed out) when one is */
bool watchdog_pollers_stuck(struct worker *w);
/* the limit fired: wake the client's threads, let the pollers fail their
 * waits, then return so the process exits (the driver frees the context) */
void watchdog_teardown(struct worker *w);
/* free v's watchdog and its events (tests; a worker just exits) */
void watchdog_disarm(struct vgpu *v);

#endif
