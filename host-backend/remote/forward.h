/* SPDX-License-Identifier: MIT */
/*
 * The forwarder: the forwarding node's side of a remote vGPU, an engine
 * (core/engine.h) whose thread drains the vGPU's submission ring in order
 * and posts each record on the vGPU's link, with its arena payload and the
 * data-area bytes it reads; REAP calls kept outstanding bring back
 * device-to-host bytes, device output and completions, which the link's
 * receive thread reads straight into the client's region (no extra thread
 * hop on a synchronous call, no staging copy), and the next reply is
 * already on its way. A broken link fails every record in flight, and every
 * later one, with cudaErrorDevicesUnavailable.
 *
 *   forward.c         opening the link; the thread: drain, forward, split large copies
 *   forward_d2h.c     device-to-host copies in flight: the bytes a record must not carry
 *   forward_mapped.c  mapped host memory: the host's changes, pushed ahead of launches
 *   reap.c            the REAP calls and their replies (the link's receive thread)
 */
#ifndef MEARAS_REMOTE_FORWARD_H
#define MEARAS_REMOTE_FORWARD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "budget.h"
#include "config.h"
#include "core/vgpu.h"
#include "mearas/region.h"
#include "rxserve.h"
#include "tokens.h"

struct mearas_link;
struct remote_mapped;

/* REAP calls the forwarder keeps outstanding (at most REMOTE_REAPS_MAX).
 * The forwarder sends one again with each batch it flushes, in the same
 * frame (reap_flush); the reaper thread only steps in when no more than
 * REAP_LOW are left (a stream of replies and no records going out). */
#define REAP_OUTSTANDING 3u
#define REAP_LOW 1u

struct reap_slot {
	struct vgpu *v;
	struct reap_slot *next_free;
};

/* A device-to-host copy forwarded and not done yet (REMOTE_ITEM_DONE). */
struct d2h_flight {
	uint32_t id;
	struct mearas_span r;
	uint64_t end;           /* r.off + the span of its rows */
};

/* A byte range of the data area, [a, b). */
struct span {
	uint64_t a, b;
};

/* The forwarder's state of one remote vGPU (its engine_data). */
struct remote_vgpu {
	struct mearas_link *link;
	struct remote_tokens tokens;
	pthread_t reaper;
	int failed;             /* atomic: first link error */
	struct reap_slot slot[REAP_OUTSTANDING];
	pthread_mutex_t reap_lock;
	pthread_cond_t reap_cond;
	struct reap_slot *free_slots; /* replies applied: to be sent again */
	unsigned nfree;               /* slots on free_slots (reap_lock) */
	uint64_t reaps_piggybacked;   /* REAP calls sent with a batch (forwarder thread only) */
	uint64_t d2h_bulk_bytes;      /* atomic: device-to-host bytes that came over the data connections */
	char peer[REMOTE_HOST_MAX + 8];
	/* device-to-host copies in flight: added by the forwarder, taken off by
	 * the receive thread; nd2h is also read without the lock (the forwarder
	 * alone adds, so a 0 it reads means none of its copies is in flight) */
	pthread_mutex_t d2h_lock;
	struct d2h_flight *d2h;
	uint32_t nd2h;
	size_t cap_d2h;
	uint64_t d2h_lo, d2h_hi; /* every range in flight lies within [lo, hi) */
	uint32_t next_done_id;   /* forwarder only */
	/* mapped host memory (mapped.c); can_map: the serving node's data
	 * area sits at this node's address, so pointers into it agree */
	struct remote_mapped *mapped;
	bool can_map;
	/* what the shadows may take in this process (the tenant's worker): the
	 * same bound as the serving node's default (--link-mem-mb) */
	struct remote_budget mapped_budget;
	/* Who drains the ring (forward.c): the link's receive thread while it
	 * serves (rxserve.h: it read a reply, and sends the next call itself),
	 * else the forwarder thread; fwd_lock makes it one at a time. */
	struct vgpu *v;
	pthread_mutex_t fwd_lock;
	int rx_may;             /* atomic (and under fwd_lock): the forwarder thread runs */
	struct rx_serve rx;
	uint64_t drains_rx, drains_thread; /* drains that sent records, by each (under fwd_lock) */
};

/* the engine of remote vGPUs (core/engine.h), set as the configuration's remote_engine */
extern const struct vgpu_engine remote_forward_engine;

/* Whether remote vGPU vgpu of rc can be had now: its node answers and admits
 * this one (cluster key, encryption). 0, or -1 with the reason in err. */
int remote_probe(const struct remote_config *rc, unsigned vgpu, char *err, size_t errlen);

static inline struct remote_vgpu *rv_of(struct vgpu *v)
{
	return v->engine_data;
}

/* forward.c: the link's rx_idle (the receive thread between receives) */
void forward_rx_idle(void *ctx, bool spinning);
/* forward.c: the link is gone: everything in flight and everything later fails */
void forward_fail_link(struct vgpu *v, int rc, const char *why);
/* forward.c: a completion to the client's ring (a full ring breaks the client) */
void forward_post(struct vgpu *v, uint16_t cq, const struct mearas_cqe *c);

/* forward_d2h.c: a device-to-host copy of rows r (span len) goes out: in
 * flight until d2h_done(id); false when out of memory (not followed) */
bool d2h_track(struct remote_vgpu *rv, const struct mearas_span *r, uint64_t len, uint32_t *id);
/* on the receive thread: the copy's bytes have landed (or will never come) */
void d2h_done(struct remote_vgpu *rv, uint32_t id);
/* The parts of [off, off + len) of the data area that no device-to-host copy
 * in flight writes: *out (malloc'd, *n of them). false when the whole range
 * is free of them (the common case, *out untouched), or when out of memory
 * (then the whole range goes, as before this check existed). */
bool d2h_uncovered(struct remote_vgpu *rv, uint64_t off, uint64_t len, struct span **out, size_t *n);

/* forward_mapped.c: before record e goes: a HOST_MAPPED range is shadowed
 * and sent whole, a launch first sends what the host changed; returns
 * REMOTE_REC_REFUSED for a HOST_MAPPED this node cannot shadow */
uint32_t forward_mapped_before(struct vgpu *v, const struct mearas_sqe *e);

/* reap.c: starts the thread that keeps the REAP calls outstanding */
int reap_start(struct vgpu *v);
/* reap.c: sends the link's batch, with a REAP call in the same frame when
 * one is due: a synchronous call's reply frees a REAP slot, and its next
 * record takes it again without a wakeup of the reaper or a frame of its
 * own. The forwarder's thread. */
int reap_flush(struct vgpu *v);

#endif
