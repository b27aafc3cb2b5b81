/* SPDX-License-Identifier: MIT */
/*
 * Who uses which assembly now, for people (ListAssemblies' attachments):
 * one shared anonymous table made before any worker is forked; each worker
 * of a client of an assembly (a process client, or a VM's slot worker for
 * one guest process) holds an entry while it serves. Only mearasd and its
 * workers map it. An entry whose worker is gone is skipped by readers and
 * taken back by the next claim.
 */
#ifndef MEARAS_ATTACHED_H
#define MEARAS_ATTACHED_H

#include <stdint.h>

#define ATTACHED_SLOTS 1024

struct attached_slot {
	int32_t pid;            /* the worker; 0 free, -1 being filled in */
	int32_t client_pid;     /* a process client's pid (the kernel's), a guest process's (the guest's word) */
	char assembly[64];
	char vm[64];            /* the VM of a guest process, "" for a process client */
};

/* mearasd, before the first fork; 0 or -1 (nothing is listed then) */
int attached_init(void);
/* worker: this process serves client_pid (of vm) on assembly; "" assemblies are not listed */
void attached_claim(const char *assembly, int32_t client_pid, const char *vm);
/* worker: done serving */
void attached_release(void);
/* control thread: calls fn for each live entry of assembly id */
void attached_foreach(const char *id, void (*fn)(const struct attached_slot *s, void *ctx), void *ctx);

#endif
