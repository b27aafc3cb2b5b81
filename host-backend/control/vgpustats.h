/* SPDX-License-Identifier: MIT */
/*
 * Per-client counters shared between the workers and mearasd's main
 * process: one shared anonymous mapping made before any worker is forked.
 * Only mearasd and its workers map it (never a client), so the readers (the
 * control thread's call rates, the metrics thread) can trust what they read
 * there as much as they trust the workers.
 *
 * A worker claims a slot and counts into it with relaxed atomic adds (no
 * lock, no system call per record). When the worker has exited, however it
 * ended, mearasd's main process folds the slot into totals kept per series
 * (identity, assembly, vGPU, GPU, local or remote) and frees it, so the
 * counters of a series only ever grow.
 *
 * A VM's slot workers (one per guest process) are not mearasd's children:
 * their slots carry no tenant slot (VSTAT_NO_OWNER_SLOT). The VM worker that
 * forked one marks its slot ended once it has exited (a zombie, its pid not
 * yet free for reuse); mearasd's main process folds the ended ones, and any
 * whose process is gone altogether (its VM worker died first), when it is
 * scraped and at least every second while such slots are live.
 */
#ifndef MEARAS_VGPUSTATS_H
#define MEARAS_VGPUSTATS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/ranges.h"
#include "mearas/region.h"

#define VSTAT_SLOTS 1024
#define VSTAT_NAME 64
#define VSTAT_OWNER 80  /* "vm:" and a VM name (tenant.h) */
#define VSTAT_NO_OWNER_SLOT UINT32_MAX /* a VM's slot worker: no tenant slot */
/* synchronizing-call latency buckets: upper bounds in microseconds (and +Inf) */
#define VSTAT_LAT_BUCKETS 12
#define VSTAT_LAT_BOUNDS_US { 10, 25, 50, 100, 250, 500, 1000, 2500, 10000, 100000, 1000000, 10000000 }

enum vstat_link_state { VSTAT_LINK_NONE = 0, VSTAT_LINK_UP = 1, VSTAT_LINK_BROKEN = 2 };

/* One vGPU of a client. Counters only grow; gauges are the last value. */
struct vstat_vgpu {
	uint64_t records;                       /* records taken from the ring */
	uint64_t calls[MEARAS_OPCLASS_COUNT];   /* by op class (ops.spec, opgen.py) */
	uint64_t bytes_h2d, bytes_d2h;          /* copies to and from the device */
	uint64_t errors;                        /* completions and records that failed */
	uint64_t sync_count, sync_ns;           /* synchronizing calls, their latency */
	uint64_t sync_bucket[VSTAT_LAT_BUCKETS + 1]; /* per bucket (last: above every bound) */
	uint64_t mem_used, mem_quota;           /* gauges: device memory of this client, its quota */
	/* remote vGPUs: the link (gauges; counters copied from remote-link's) */
	uint64_t link_bytes_sent, link_bytes_received, link_batches, link_msgs;
	uint64_t link_rtt_ns;                   /* last heartbeat round trip, 0: none measured */
	uint32_t link_state;                    /* enum vstat_link_state */
	int32_t gpu;                            /* this node's GPU, or the remote node's */
	uint8_t remote;
	char peer[VSTAT_NAME];                  /* remote: host:port */
};

struct vstat_slot {
	int32_t pid;                    /* 0 = free, -1 = being filled in; claimed with compare-and-swap */
	uint32_t nvgpus;
	uint32_t owner_slot;            /* the worker's tenant slot (mearasd frees by it), or VSTAT_NO_OWNER_SLOT */
	uint32_t ended;                 /* a VM slot worker's: it has exited (its VM worker says) */
	char assembly[VSTAT_NAME];
	char owner[VSTAT_OWNER];        /* "uid:1000", "vm:NAME" */
	struct vstat_vgpu v[MEARAS_MAX_VGPUS];
};

/* mearasd, before the first fork; 0 or -1 (counters then stay off) */
int vstats_init(void);
/* the table, or NULL when vstats_init failed */
struct vstat_slot *vstats_table(void);

/* worker: claim a slot for this client (assembly may be ""); owner as above */
void vstats_claim(const char *assembly, const char *owner, unsigned owner_slot, unsigned nvgpus);
/* worker: vGPU v's counters in the claimed slot, or NULL (none claimed) */
struct vstat_vgpu *vstats_vgpu(unsigned v);
/* worker: vGPU v has executed this many records (into the slot) */
void vstats_publish(unsigned v, uint64_t records);
/* worker: nothing more will be counted (the slot stays for mearasd to fold) */
void vstats_release(void);

/* data path: relaxed atomic adds, nothing when s is NULL */
static inline void vstat_add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}
static inline void vstat_set(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, n, __ATOMIC_RELAXED);
}
/* data path (inline: the executors' own test builds link no control code) */
/* a record ran (or was forwarded): its op class; the bytes a copy moves when it was
 * accepted (ok) */
static inline void vstat_record(struct vstat_vgpu *s, const struct mearas_sqe *e, uint64_t data_size, bool ok)
{
	unsigned cls;
	struct mearas_span r;
	uint64_t len;

	if (!s)
		return;
	cls = mearas_op_props(e->op)->cls;
	vstat_add(&s->calls[cls], 1);
	if (cls != MEARAS_OPCLASS_COPY || !ok)
		return;
	/* the data-area rows a copy reads are bytes to the device, those it
	 * writes bytes from it (ops.spec's reads/writes); a payload's bytes
	 * (MEMCPY_INLINE's, in the arena or in the record itself) go to it */
	if (record_reads_data(e, data_size, &r, &len))
		vstat_add(&s->bytes_h2d, r.width * r.rows);
	else if (record_writes_data(e, data_size, &r, &len))
		vstat_add(&s->bytes_d2h, r.width * r.rows);
	else if (e->flags & MEARAS_SQE_PAYLOAD_ARENA)
		vstat_add(&s->bytes_h2d, e->payload_len);
	else
		vstat_add(&s->bytes_h2d, e->payload_len < MEARAS_SQE_INLINE ? e->payload_len : MEARAS_SQE_INLINE);
}

/* a synchronizing call completed ns after its record was taken */
static inline void vstat_sync_done(struct vstat_vgpu *s, uint64_t ns)
{
	static const uint32_t bounds_us[VSTAT_LAT_BUCKETS] = VSTAT_LAT_BOUNDS_US;
	unsigned b = 0;

	if (!s)
		return;
	while (b < VSTAT_LAT_BUCKETS && ns > (uint64_t)bounds_us[b] * 1000)
		b++;
	vstat_add(&s->sync_bucket[b], 1);
	vstat_add(&s->sync_ns, ns);
	vstat_add(&s->sync_count, 1);
}

/*
 * mearasd's main process: the worker of tenant slot owner_slot has exited;
 * its slot is folded into the series totals and freed.
 */
void vstats_worker_gone(unsigned owner_slot);

/* a VM worker: its child pid (a slot worker) has exited and is not reaped yet */
void vstats_child_ended(int32_t pid);

/*
 * mearasd's main process: folds the slots of VM slot workers that ended (or
 * whose process is gone) into the totals and frees them. The number of VM
 * slot workers' slots still live.
 */
unsigned vstats_fold_ended(void);

/* A series: the totals of finished clients plus the live ones with the same labels. */
struct vstat_series {
	char owner[VSTAT_OWNER], assembly[VSTAT_NAME], peer[VSTAT_NAME];
	uint32_t vgpu;
	int32_t gpu;
	uint8_t remote;
	uint32_t live;                  /* live clients in it */
	uint32_t links_up, links_broken; /* live links by state */
	uint64_t links_opened;          /* links its clients opened, finished ones too */
	struct vstat_vgpu sum;          /* counters summed; mem_used summed over live, quota their largest */
	uint64_t last_seen;             /* for evicting the oldest finished series */
};

/*
 * A snapshot of every series into *out (malloc'd, the caller frees): the
 * finished totals plus the live slots. The number of series, or -1.
 */
int vstats_snapshot(struct vstat_series **out);

#endif
