/* SPDX-License-Identifier: MIT */
/*
 * mearasd as the ivshmem server of VMs (--vm=NAME:SOCKET:SIZE_MB[:VGPUS]).
 *
 * Per VM, mearasd forks a supervisor (vm_server.c) that creates the VM's
 * shared memory and forks a VM worker (vm_worker.c); the worker serves the
 * ivshmem socket and every guest process of the VM through the client
 * slots of include/mearas/vm_proto.h (vm_slot.c). When the VM goes away
 * (QEMU exits or is killed) the worker exits, taking all of the VM's device
 * state with it; the supervisor marks the old memory dead (guests still
 * mapping it get errors, not hangs) and starts a fresh worker with fresh
 * memory for the next VM on the socket.
 */
#ifndef MEARAS_VM_H
#define MEARAS_VM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mearas/vm_proto.h"
#include "worker.h"

#define VM_MAX_SPECS 16u

struct vm_spec {
	char name[64];
	char socket[108];
	uint64_t size;          /* bytes; a power of two (a PCI BAR) */
	unsigned vgpus;         /* per guest process; 0 = mearasd's default */
	/* the user QEMU runs as (--vm-user): owns the socket and, with root,
	 * is the only one admitted on it; 0 = root only */
	uid_t qemu_uid;
	gid_t qemu_gid;
};

/* --vm-user's default when that user exists (Debian/Ubuntu libvirt) */
#define VM_DEFAULT_QEMU_USER "libvirt-qemu"

/* The slot layout of a VM's shared memory. */
struct vm_layout {
	unsigned nslots, nvgpus;
	uint64_t slot_off, slot_size, region_fixed, data_size;
};

struct ivshmem_server;
struct vm;

struct vm_slot {
	struct vm *vm;
	unsigned index;
	bool opened;            /* devices opened (kept for the worker's life) */
	bool active;            /* pollers running for token */
	bool dead_marked;
	uint32_t token;
	uint32_t out_head[2];   /* our own heads of the slot's output rings */
	struct worker w;
	struct mearas_devinfo info[MEARAS_MAX_VGPUS]; /* pristine copies */
};

struct vm {
	const struct backend_config *cfg;
	const struct vm_spec *spec;
	struct vm_layout lay;
	uint8_t *base;
	struct mearas_vm_hdr *hdr;
	struct ivshmem_server *srv;
	unsigned peer;          /* the guest's peer id, 0 before it connects */
	int ndev;
	bool registered;        /* the whole BAR registered with the device */
	volatile int gone;      /* the guest disconnected */
	int out_fd, err_fd;     /* read ends of our stdout/stderr pipes, -1 none */
	bool test_printf;       /* MEARAS_TEST_PRINTF=1: write markers to them */
	pthread_mutex_t out_lock; /* pollers of all slots share the pipes */
	struct vm_slot slots[MEARAS_VM_MAX_SLOTS];
};

/* vm_server.c */
int vm_parse_spec(const char *arg, struct vm_spec *out, char *err, size_t errlen);
/* user: a name, a numeric uid, or NULL for the default; sets every spec's
 * qemu_uid/qemu_gid; 0 or -1 with err */
int vm_resolve_user(const char *user, struct vm_spec *specs, unsigned n, char *err, size_t errlen);
int vm_compute_layout(uint64_t size, unsigned nvgpus, struct vm_layout *l, char *err, size_t errlen);
/* forks one supervisor per VM; 0 or -1 */
int vm_servers_start(const struct backend_config *cfg, const struct vm_spec *specs, unsigned n);
/* at mearasd's exit: a socket a killed worker left behind */
void vm_servers_unlink(const struct vm_spec *specs, unsigned n);

/* vm_worker.c: serves one VM connection on memfd; returns the exit status */
int vm_worker_run(const struct backend_config *cfg, const struct vm_spec *spec, int memfd);

/* vm_slot.c */
int vm_slot_start(struct vm *vm, unsigned k, uint32_t token, char *err, size_t errlen);
void vm_slot_stop(struct vm *vm, unsigned k);

/* vm_output.c: device printf/assert output into the slots' output rings */
int vm_output_capture(struct vm *vm, char *err, size_t errlen);
void vm_output_attach(struct vm *vm, struct vm_slot *s);
void vm_output_reset(struct vm *vm, struct vm_slot *s);

#endif
