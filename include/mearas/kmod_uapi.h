/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * User-space interface of the mearas guest kernel module (/dev/mearasN).
 *
 * The device is QEMU's ivshmem PCI device (1af4:1110). mmap() of the fd maps
 * BAR2 (the shared memory) write-back cacheable; offsets and lengths beyond
 * BAR2 are refused with EINVAL (with a mearas VM header: see below, only
 * this file's slot). read() returns one __u64: the mask of vectors
 * that fired since this fd's previous read() (blocks unless O_NONBLOCK);
 * poll() reports POLLIN while such a vector exists. After the device is
 * removed every call returns ENODEV (poll: POLLERR | POLLHUP) and access to
 * an existing mapping raises SIGBUS.
 */
#ifndef MEARAS_KMOD_UAPI_H
#define MEARAS_KMOD_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define MEARAS_DEV_PREFIX "/dev/mearas"

/* Vectors the driver handles at most (the read() mask is 64 bits wide). */
#define MEARAS_MAX_VECTORS 64
/* Peer id of the host in mearas' ivshmem server (guests get 1..65535). */
#define MEARAS_HOST_PEER_ID 0
#define MEARAS_MAX_PEER_ID 0xffff

/* mearas_info.flags */
#define MEARAS_INFO_DOORBELL (1u << 0) /* ivshmem-doorbell: MSI-X + server */

struct mearas_info {
	__u64 shm_size;   /* BAR2 size in bytes */
	__u32 peer_id;    /* IVPosition: own peer id (0 on ivshmem-plain) */
	__u32 nr_vectors; /* MSI-X vectors in use (0 on ivshmem-plain) */
	__u32 flags;      /* MEARAS_INFO_* */
	__u32 reserved;   /* written as 0 */
};

struct mearas_doorbell {
	__u32 peer_id; /* destination peer, <= MEARAS_MAX_PEER_ID */
	__u32 vector;  /* destination vector, < MEARAS_MAX_VECTORS */
};

/*
 * Wait until the interrupt counter of @vector differs from @last_seen or
 * @timeout_ms passes. @count is always written back with the counter's
 * current value (also on ETIMEDOUT/EINTR), so a caller first reads the
 * counter (timeout_ms = 0), publishes its readiness, then waits with
 * last_seen = count: an interrupt in between is never lost.
 * Errors: ETIMEDOUT, EINTR (signal), EINVAL (bad vector/reserved),
 * EOPNOTSUPP (no interrupts), ENODEV (device removed).
 */
struct mearas_wait {
	__u32 vector;
	__u32 timeout_ms;
	__u64 last_seen;
	__u64 count; /* out */
};

/*
 * Claim a 32-bit word of BAR2 for this open file: compare-and-swap the word
 * at @offset from @expect to @value. On success the claim is remembered:
 * when the file is released (last close, or the process dies) the word is
 * swapped back from @value to @release_value (only if it still holds
 * @value) and, if it was, a doorbell is rung to (@db_peer, @db_vector).
 * Errors: EBUSY (the word held another value: @expect is written back with
 * it), EINVAL (offset unaligned or outside BAR2, reserved set, bad
 * doorbell), ENOSPC (MEARAS_MAX_CLAIMS claims on this file), ENODEV.
 */
#define MEARAS_MAX_CLAIMS 8
struct mearas_claim {
	__u64 offset;
	__u32 expect;
	__u32 value;
	__u32 release_value;
	__u32 db_peer;
	__u32 db_vector;
	__u32 reserved;  /* must be 0 */
};

/*
 * The mearas VM protocol (include/mearas/vm_region.h). When BAR2 begins with
 * a mearas VM header (MEARAS_VMH_MAGIC, written by mearasd before QEMU can
 * connect), the guest processes of the VM are kept apart by the module:
 *  - mmap() maps only the client slot this file claimed (MEARAS_IOC_VM_CLAIM)
 *    and that slot's output area; the slot's first page (its region header,
 *    the host's) is mapped read-only (a write raises SIGBUS); the VM header,
 *    with every slot's claim and kick words, and the other slots are refused
 *    (EACCES);
 *  - claim, kick, state and give-back go through the MEARAS_IOC_VM_*
 *    ioctls; MEARAS_IOC_CLAIM (raw words) is refused (EPERM).
 * A BAR2 without that header is mapped whole, as plain ivshmem memory.
 */
#define MEARAS_VMH_MAGIC 0x314d565341524145ULL
#define MEARAS_VMH_OFF_STATE 12
#define MEARAS_VMH_OFF_NSLOTS 24
#define MEARAS_VMH_OFF_NVGPUS 28
#define MEARAS_VMH_OFF_SLOT_OFF 32
#define MEARAS_VMH_OFF_SLOT_SIZE 40
#define MEARAS_VMH_OFF_HEARTBEAT 48
#define MEARAS_VMH_OFF_SLOTS 80         /* slot control blocks, 64 bytes each */
#define MEARAS_VMH_SLOT_BYTES 64
#define MEARAS_VMH_SLOT_CLAIM 0
#define MEARAS_VMH_SLOT_READY 4
#define MEARAS_VMH_SLOT_KICK 8
#define MEARAS_VMH_SLOT_OWNER_PID 12
#define MEARAS_VMH_SLOT_REGION_ADDR 16
#define MEARAS_VMH_MAX_SLOTS 8
#define MEARAS_VMH_OUT_OFF 0x10000ULL   /* per-slot output areas */
#define MEARAS_VMH_OUT_BYTES 167936ULL  /* one slot's output area */
#define MEARAS_VMH_VEC_HOST 0           /* doorbell vector of the host (peer 0) */

/* MEARAS_IOC_VM_CLAIM: takes a free slot for this file (all out). Given
 * back when the file is released (or MEARAS_IOC_VM_RELEASE), with a
 * doorbell to the host. Errors: EOPNOTSUPP (no mearas VM header), EALREADY
 * (this file holds a slot), EBUSY (all slots taken), EPROTO (malformed
 * header), ENODEV. */
struct mearas_vm_claim {
	__u32 slot;
	__u32 token;        /* the claim word's value (random, not 0) */
	__u32 nslots;
	__u32 nvgpus;       /* per slot */
	__u64 region_off;   /* mmap offset of the slot's region */
	__u64 region_size;
	__u64 region_addr;  /* where the host maps that region */
	__u64 out_off;      /* mmap offset of the slot's output area */
	__u64 out_size;
};

/* MEARAS_IOC_VM_STATE: the host's view (all out). */
struct mearas_vm_state {
	__u32 vm_state;     /* the VM header's state (MEARAS_BACKEND_*) */
	__u32 heartbeat;    /* bumped by the host's VM worker every 500 ms */
	__u32 ready;        /* the token our slot is set up for (0 none) */
	__u32 reserved;
};

#define MEARAS_IOC_MAGIC 0xB7
#define MEARAS_IOC_INFO _IOR(MEARAS_IOC_MAGIC, 0, struct mearas_info)
#define MEARAS_IOC_RING _IOW(MEARAS_IOC_MAGIC, 1, struct mearas_doorbell)
#define MEARAS_IOC_WAIT _IOWR(MEARAS_IOC_MAGIC, 2, struct mearas_wait)
#define MEARAS_IOC_CLAIM _IOWR(MEARAS_IOC_MAGIC, 3, struct mearas_claim)
#define MEARAS_IOC_VM_CLAIM _IOR(MEARAS_IOC_MAGIC, 4, struct mearas_vm_claim)
/* set these vGPU bits in our slot's kick word and ring the host (EINVAL:
 * no slot claimed) */
#define MEARAS_IOC_VM_KICK _IOW(MEARAS_IOC_MAGIC, 5, __u32)
#define MEARAS_IOC_VM_STATE _IOR(MEARAS_IOC_MAGIC, 6, struct mearas_vm_state)
/* gives our slot back now (also unmaps this file's mappings) */
#define MEARAS_IOC_VM_RELEASE _IO(MEARAS_IOC_MAGIC, 7)

#endif /* MEARAS_KMOD_UAPI_H */
