/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * User-space interface of the mearas guest kernel module (/dev/mearasN).
 *
 * The device is QEMU's ivshmem PCI device (1af4:1110). mmap() of the fd maps
 * BAR2 (the shared memory) write-back cacheable; offsets and lengths beyond
 * BAR2 are refused with EINVAL. read() returns one __u64: the mask of vectors
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

#define MEARAS_IOC_MAGIC 0xB7
#define MEARAS_IOC_INFO _IOR(MEARAS_IOC_MAGIC, 0, struct mearas_info)
#define MEARAS_IOC_RING _IOW(MEARAS_IOC_MAGIC, 1, struct mearas_doorbell)
#define MEARAS_IOC_WAIT _IOWR(MEARAS_IOC_MAGIC, 2, struct mearas_wait)
#define MEARAS_IOC_CLAIM _IOWR(MEARAS_IOC_MAGIC, 3, struct mearas_claim)

#endif /* MEARAS_KMOD_UAPI_H */
