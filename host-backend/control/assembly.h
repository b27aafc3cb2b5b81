/* SPDX-License-Identifier: MIT */
/*
 * The assemblies instantiated on this node through the control socket.
 * The table lives in mearasd's (single) process; a worker forked for a
 * client inherits a consistent snapshot of it at fork, so a client keeps the
 * assembly it started with even if the assembly is released later, and new
 * clients of a released assembly are refused.
 */
#ifndef MEARAS_ASSEMBLY_H
#define MEARAS_ASSEMBLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tenant.h"
#include "mearas/region.h"

#define ASSEMBLY_ID_MAX 63      /* fits mearas_hello.assembly with its NUL */
#define ASSEMBLY_OWNER_MAX 255  /* the manager's label of a booking, bytes */

struct assembly_vgpu {
	uint32_t gpu_index;
	uint64_t quota;         /* bytes; 0 = the GPU's memory */
	char node[64];
	char remote[128];       /* "host:port" of the node's remote-link, "" = local GPU */
};

struct assembly {
	char id[ASSEMBLY_ID_MAX + 1];
	char *owner;            /* the manager's label of the booking, for people */
	struct tenant_id who;   /* the identity it was booked for: only it may use it */
	unsigned nvgpus;
	struct assembly_vgpu vgpus[MEARAS_MAX_VGPUS]; /* indexed by ordinal */
};

enum assembly_status {
	ASSEMBLY_OK,
	ASSEMBLY_EXISTS,
	ASSEMBLY_NOT_FOUND,
	ASSEMBLY_NO_MEMORY,
};

/* Installs the fork handlers that keep the snapshot of a worker consistent. */
void assembly_table_init(void);
/* Takes a copy of *a (owner is duplicated). */
enum assembly_status assembly_add(const struct assembly *a);
enum assembly_status assembly_remove(const char *id);
/* Calls fn for every assembly under the table lock (fn must not call back in). */
void assembly_foreach(void (*fn)(const struct assembly *a, void *ctx), void *ctx);
/* Copies the assembly named id into *out (out->owner is NULL); 0 if found. */
int assembly_find(const char *id, struct assembly *out);

struct backend_config;
/*
 * Worker side: applies the assembly named in a client's hello to the
 * client's own copy of the configuration (vGPU count, vGPU -> GPU, quotas).
 * who is the client's identity as the kernel told it: an assembly booked
 * for another identity is refused, unless privileged (root, mearasd's own
 * user), which may use any. asked_nvgpus is the hello's count (0 = any).
 * Returns 0, or -1 with a message for the client in err (and a log line).
 */
int assembly_apply(const char *id, const struct tenant_id *who, bool privileged, unsigned asked_nvgpus,
		   struct backend_config *cfg, unsigned *nvgpus, char *err, size_t errlen);

#endif
