/* SPDX-License-Identifier: MIT */
/*
 * Per-client call counters shared between the workers and mearasd's control
 * thread: one shared anonymous mapping made before any worker is forked.
 * Only mearasd and its workers map it (never a client), so the control
 * thread can trust what it reads there as much as it trusts its workers.
 */
#ifndef MEARAS_VGPUSTATS_H
#define MEARAS_VGPUSTATS_H

#include <stdint.h>

#include "mearas/region.h"

#define VSTAT_SLOTS 1024

struct vstat_slot {
	int32_t pid;                    /* 0 = free; claimed with compare-and-swap */
	uint32_t nvgpus;
	char assembly[64];
	uint64_t records[MEARAS_MAX_VGPUS]; /* records executed per vGPU */
	/* who the worker serves, for people (ListAssemblies): a process
	 * client's pid (the kernel's), or a VM guest process's (the guest's
	 * word) and the VM */
	int32_t client_pid;
	char vm[64];
};

/* mearasd, before the first fork; 0 or -1 (counters then stay off) */
int vstats_init(void);
/* the table, or NULL when vstats_init failed */
struct vstat_slot *vstats_table(void);

/* worker: claim a slot for this client (assembly may be ""; vm "" for a
 * process client) */
void vstats_claim(const char *assembly, unsigned nvgpus, int32_t client_pid, const char *vm);
/* worker: vGPU v has executed this many records (into the slot) */
void vstats_publish(unsigned v, uint64_t records);
/* worker: give the slot back */
void vstats_release(void);

#endif
