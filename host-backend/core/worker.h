/* SPDX-License-Identifier: MIT */
/*
 * One worker process per client: it owns the client's region, one thread
 * per vGPU (its engine's), and every device object the client created. A
 * client that goes away takes its worker with it, so nothing it held
 * outlives it and a fault in one client cannot touch another. Serving a
 * client's connection is client.c's; this is the worker and its region,
 * which VM slots (vm/vm_slot.c) set up the same way.
 */
#ifndef MEARAS_WORKER_H
#define MEARAS_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "mearas/region.h"
#include "vgpu.h"

struct worker {
	const struct backend_config *cfg;
	int sock;
	int memfd;
	uint8_t *region;
	uint64_t region_size;
	uint8_t *data;
	uint64_t data_size;
	unsigned nvgpus, nthreads;
	int wake_fds[MEARAS_MAX_THREADS];
	int out_fd, err_fd;     /* read ends of our stdout/stderr pipes */
	/* set by one thread, polled by others (pollers, the socket watcher) */
	_Atomic int stop;
	_Atomic bool broken;
	/* the GPU time limit fired: calls fail with cudaErrorLaunchTimeout and
	 * the process exits, taking the context with it (watchdog.c) */
	_Atomic bool timed_out;
	char tenant[96];        /* who this worker serves, for log lines */
	unsigned va_index0;     /* device address window of vGPU 0 (VM slots use several) */
	unsigned tenant_slot;   /* slot in the tenant table charged for its memory; 0 = none */
	/* completion notification when set (VM transport), else wake_fds */
	void (*wake)(struct worker *w, unsigned cq);
	void *wake_ctx;
	/* VM transport: after a synchronizing record's flush, moves pending
	 * device output to the client; true when the client has output to read */
	bool (*take_output)(struct worker *w);
	struct vgpu vgpus[MEARAS_MAX_VGPUS];
};

/* The engine that runs vGPU i of a worker with configuration cfg. */
const struct vgpu_engine *worker_engine(const struct backend_config *cfg, unsigned i);
/* Sets vGPU i of w up: its engine opens it (ndev: GPUs of this node), then
 * its heap, its rings (in the block worker_init_region placed) and its kick
 * eventfd. 0, or a cudaError_t with the reason in err. */
int worker_setup_vgpu(struct worker *w, unsigned i, int ndev, char *err, size_t errlen);
/* The parts of vGPU setup that do not open anything: v is vGPU i of w
 * (locks made), and its heap, rings (block blk of layout l) and kick
 * eventfd once its window and devinfo are known (tests set vGPUs up so). */
void vgpu_attach(struct vgpu *v, struct worker *w, unsigned i);
int vgpu_wire(struct vgpu *v, uint8_t *blk, const struct mearas_vgpu_layout *l, uint64_t va_base,
	      uint64_t va_size, uint64_t granularity, uint64_t quota);
/* Writes the region header at w->region for w->nvgpus vGPUs; sets w->data. */
void worker_init_region(struct worker *w, uint64_t data_off);
/* A memfd region for w->nvgpus vGPUs and w->data_size bytes of data area,
 * mapped where the client can map it too; its header written. */
int worker_build_region(struct worker *w, char *err, size_t errlen);

/* The shared counters (control/vgpustats.h) of w's vGPUs: a slot claimed
 * under these labels and each vGPU's counters wired to it, before the vGPUs'
 * threads start (owner_slot: the worker's tenant slot, or
 * VSTAT_NO_OWNER_SLOT for a VM's slot worker). Nothing is counted when the
 * table has no room. */
void worker_stats_claim(struct worker *w, const char *assembly, const char *owner, unsigned owner_slot);
/* What the vGPUs' threads keep in their own fields (records, memory, link
 * figures), into the shared counters. */
void worker_stats_publish(struct worker *w);

#endif
