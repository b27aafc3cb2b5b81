/* SPDX-License-Identifier: MIT */
/*
 * Who a client is, and what all clients of one identity hold together.
 *
 * An identity is a local uid (clients of the client socket, learnt by
 * SO_PEERCRED) or a VM (by its name). Caps hold per identity, not per
 * connection: the number of workers, the pinned data areas they hold, and
 * the device memory allocated on each vGPU (shared by every worker of the
 * identity that uses the same assembly, or no assembly).
 *
 * Workers are processes of their own, so the accounting lives in one
 * MAP_SHARED table made by mearasd before the first fork. Each worker slot
 * holds what that worker was charged; the per-identity and per-pool totals
 * are sums of slots, kept up to date under one robust process-shared mutex
 * (a worker that dies holding it leaves the slots right; the next locker
 * recomputes the totals from them). mearasd's main process adds a slot
 * before it forks a worker and frees it when the worker has exited, however
 * it ended, so nothing a dead worker held stays charged.
 */
#ifndef MEARAS_TENANT_H
#define MEARAS_TENANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mearas/region.h"

#define TENANT_VM_NAME_MAX 64
#define TENANT_SLOTS_MAX 4096   /* --max-clients at most */

enum tenant_kind {
	TENANT_NONE = 0,
	TENANT_UID = 1,         /* a local user's processes */
	TENANT_VM = 2,          /* a VM, by name */
};

struct tenant_id {
	uint32_t kind;
	uint32_t uid;                   /* TENANT_UID */
	char vm[TENANT_VM_NAME_MAX];    /* TENANT_VM */
};

/* The caller of a client socket connection, as the kernel tells it. */
struct tenant_peer {
	struct tenant_id id;
	uint32_t gid;
	int32_t pid;
};

struct tenant_limits {
	unsigned max_workers;           /* all identities together */
	unsigned max_workers_per_id;
	uint64_t data_per_id;           /* pinned data areas, bytes */
};

/* Readable identity ("uid 1000", "VM vm1") for messages. */
const char *tenant_id_str(const struct tenant_id *id, char *buf, size_t len);
bool tenant_id_equal(const struct tenant_id *a, const struct tenant_id *b);
/* "uid:<N>" or "vm:<name>" -> id; 0, or -1 when s is neither */
int tenant_id_parse(const char *s, struct tenant_id *id);
/* root, or the user mearasd runs as: may connect, and use any assembly */
bool tenant_privileged(const struct tenant_id *id);

/* mearasd, before the first worker is forked; 0 or -1 (logged) */
int tenant_table_init(const struct tenant_limits *lim);
/*
 * mearasd's main process: a slot for a new worker of id. Returns the slot
 * (>= 1), or 0 with a message for the client in err when a cap is reached.
 */
unsigned tenant_worker_add(const struct tenant_id *id, char *err, size_t errlen);
/* mearasd: the worker of slot has exited (or was never forked) */
void tenant_worker_gone(unsigned slot);

/*
 * Worker: charge this worker's data area to its identity and name the pool
 * its device memory counts against (the assembly, "" for none). 0, or -1
 * with a message for the client in err when the identity's cap is reached.
 */
int tenant_worker_hello(unsigned slot, const char *pool, uint64_t data_bytes, char *err, size_t errlen);
/*
 * Worker: bytes more of device memory on vGPU v, against quota for the
 * identity's pool. 0, or -1 when the pool's quota would be exceeded.
 */
int tenant_charge_dev(unsigned slot, unsigned v, uint64_t bytes, uint64_t quota);
void tenant_uncharge_dev(unsigned slot, unsigned v, uint64_t bytes);
/* Worker: device memory on vGPU v held by the identity's pool (all its
 * workers, this one's included); 0 without a pool. */
uint64_t tenant_dev_used(unsigned slot, unsigned v);

#endif
