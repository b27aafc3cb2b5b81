/* SPDX-License-Identifier: MIT */
/*
 * The local engine (poller.c): one poller thread per vGPU drains the
 * submission ring in order and runs each record on this node's device. The
 * ring helpers serve the forwarder of remote vGPUs too.
 */
#ifndef MEARAS_POLLER_H
#define MEARAS_POLLER_H

#include <stdbool.h>

struct mearas_sqe;
struct vgpu;

/* thread main of a local vGPU (vgpu_engine_local) */
void *poller_main(void *arg);
/* records waiting in the vGPU's submission ring, or -1 (the indices are
 * out of range: logged, the client is marked corrupt by the caller) */
int sq_available(struct vgpu *v);
/* runs every record waiting in the ring; returns how many, or -1 when the
 * ring is corrupt or the client broke it */
int sq_drain(struct vgpu *v);
/* What sq_each's run did with a record: took it (SQ_NEXT: on to the next
 * one; SQ_BROKEN: the client broke it, stop), or left it in the ring for
 * later (SQ_LEAVE: stop there). */
enum sq_step { SQ_NEXT, SQ_BROKEN, SQ_LEAVE };
/* The same with run(v, record, ctx) for each record, in order (the local
 * engine's exec_record, the forwarder's forward): consumption is published
 * every publish_every records and at the end; returns the records taken, or
 * -1 when the ring is corrupt or run said SQ_BROKEN. */
int sq_each(struct vgpu *v, enum sq_step (*run)(struct vgpu *v, const struct mearas_sqe *e, void *ctx), void *ctx,
	    unsigned publish_every);
/* wait up to timeout_ms for a kick on v->kick_fd and consume it (pollers
 * of local and remote vGPUs, once mearas_ring_prepare_sleep said so) */
void sleep_on_kick(struct vgpu *v, int timeout_ms);

#endif
