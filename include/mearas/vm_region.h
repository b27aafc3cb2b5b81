/* SPDX-License-Identifier: MIT */
/*
 * mearas over a VM: the layout of the ivshmem BAR2 that mearasd (the VM's
 * ivshmem server) shares with one guest.
 *
 *   +-----------------------------+ 0
 *   | struct mearas_vm_hdr        |  VM header and one control block per slot
 *   +-----------------------------+ MEARAS_VM_OUT_OFF
 *   | struct mearas_vm_output x 8 |  per slot: device printf/assert output
 *   +-----------------------------+ hdr.slot_off (2 MiB aligned)
 *   | slot 0: a client region     |  in the process format of region.h: region
 *   |                             |  header, vGPU blocks, data area
 *   +-----------------------------+ hdr.slot_off + hdr.slot_size
 *   | slot 1 ...                  |
 *   +-----------------------------+
 *
 * A guest process claims a free slot by compare-and-swap of slot.claim from
 * 0 to its token (the guest kernel module does it, MEARAS_IOC_CLAIM, so the
 * slot is given back when the process dies), rings the host doorbell, and
 * waits until slot.ready equals its token: the host has then reset the
 * slot's region and started its pollers. Giving the slot back is the swap
 * of claim from the token to 0 plus a doorbell; the host frees every device
 * object of the slot and resets it.
 *
 * Notifications (ivshmem-doorbell, MEARAS_VM_VECTORS vectors):
 *   guest -> host: doorbell to peer 0, vector MEARAS_VM_VEC_HOST, after
 *                  setting bits in slot.kick (vGPUs whose poller sleeps)
 *                  or changing slot.claim;
 *   host -> guest: vector MEARAS_VM_VEC_SLOT when a slot's state changed,
 *                  vector MEARAS_VM_VEC_WAKE when a completion was posted to
 *                  a ring whose consumer set NEED_WAKEUP. Guest waiters
 *                  re-check their rings after any wakeup.
 * Liveness: the host's worker bumps hdr.heartbeat at least every 500 ms; a
 * guest thread whose 1 s waits time out with it standing still for
 * MEARAS_VM_DEAD_MS treats the back end as gone (its worker was killed
 * without anyone marking the memory dead).
 * The host never trusts what it reads here: tokens are only compared, kick
 * bits are masked, slot numbers are its own.
 */
#ifndef MEARAS_VM_REGION_H
#define MEARAS_VM_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "mearas/kmod_uapi.h"
#include "mearas/region.h"

#define MEARAS_VM_MAGIC       0x314d565341524145ULL /* "EARASVM1" */
#define MEARAS_VM_VERSION     1u
#define MEARAS_VM_MAX_SLOTS   8u
#define MEARAS_VM_VECTORS     2u
#define MEARAS_VM_VEC_HOST    0u   /* guest -> host doorbell */
#define MEARAS_VM_VEC_SLOT    0u   /* host -> guest: slot state changed */
#define MEARAS_VM_VEC_WAKE    1u   /* host -> guest: completions */
#define MEARAS_VM_SLOT_ALIGN  (2ull << 20)
#define MEARAS_VM_MIN_DATA    (8ull << 20)
#define MEARAS_VM_BEAT_MS     500u
#define MEARAS_VM_DEAD_MS     5000u

struct mearas_vm_slot {
	uint32_t claim;         /* guest: 0 free, else the owner's token */
	uint32_t ready;         /* host: the token the slot is set up for, 0 none */
	uint32_t kick;          /* guest: bit per vGPU to wake; the host clears it */
	int32_t owner_pid;      /* guest: informational */
	uint64_t region_addr;   /* host: where mearasd maps the slot's region */
	uint32_t pad[10];
};

struct mearas_vm_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t state;         /* MEARAS_BACKEND_READY / MEARAS_BACKEND_DEAD */
	uint64_t shm_size;
	uint32_t nslots;
	uint32_t nvgpus;        /* per slot */
	uint64_t slot_off;
	uint64_t slot_size;
	uint32_t heartbeat;     /* host: counts while the worker runs (every 500 ms) */
	uint32_t pad[7];
	struct mearas_vm_slot slots[MEARAS_VM_MAX_SLOTS];
};

/* Device printf/assert output of one slot, host -> guest. Each ring is a
 * byte stream: the host writes at head (its own copy is authoritative; what
 * it stores here is for the guest), the guest reads from tail and advances
 * it. Indices count bytes modulo 2^32; the size is a power of two. Bytes
 * that do not fit are dropped and counted (the worker must never block on
 * a guest that does not read). */
#define MEARAS_VM_OUT_OFF     (64ull << 10)
#define MEARAS_VM_OUT_STDOUT  (128u << 10)
#define MEARAS_VM_OUT_STDERR  (32u << 10)

struct mearas_vm_out_ring {
	uint32_t head;          /* host: bytes written */
	uint32_t tail;          /* guest: bytes consumed */
	uint32_t dropped;       /* host: bytes lost because the ring was full */
	uint32_t pad[13];
};

struct mearas_vm_output {
	struct mearas_vm_out_ring ring[2];  /* 0 stdout, 1 stderr */
	uint8_t pad[4096 - 2 * sizeof(struct mearas_vm_out_ring)];
	uint8_t out[MEARAS_VM_OUT_STDOUT];
	uint8_t err[MEARAS_VM_OUT_STDERR];
};

_Static_assert(sizeof(struct mearas_vm_output) % 4096 == 0, "slot output is page-aligned for mmap");
_Static_assert(MEARAS_VM_OUT_OFF + MEARAS_VM_MAX_SLOTS * sizeof(struct mearas_vm_output) <= MEARAS_VM_SLOT_ALIGN,
	       "slot output areas fit before slot 0");

_Static_assert(sizeof(struct mearas_vm_slot) == 64, "slot control is one cache line");
/* what the guest module reads and writes (kmod_uapi.h) */
_Static_assert(MEARAS_VMH_MAGIC == MEARAS_VM_MAGIC && MEARAS_VMH_MAX_SLOTS == MEARAS_VM_MAX_SLOTS &&
	       MEARAS_VMH_VEC_HOST == MEARAS_VM_VEC_HOST &&
	       offsetof(struct mearas_vm_hdr, state) == MEARAS_VMH_OFF_STATE &&
	       offsetof(struct mearas_vm_hdr, nslots) == MEARAS_VMH_OFF_NSLOTS &&
	       offsetof(struct mearas_vm_hdr, nvgpus) == MEARAS_VMH_OFF_NVGPUS &&
	       offsetof(struct mearas_vm_hdr, slot_off) == MEARAS_VMH_OFF_SLOT_OFF &&
	       offsetof(struct mearas_vm_hdr, slot_size) == MEARAS_VMH_OFF_SLOT_SIZE &&
	       offsetof(struct mearas_vm_hdr, heartbeat) == MEARAS_VMH_OFF_HEARTBEAT &&
	       offsetof(struct mearas_vm_hdr, slots) == MEARAS_VMH_OFF_SLOTS &&
	       sizeof(struct mearas_vm_slot) == MEARAS_VMH_SLOT_BYTES &&
	       offsetof(struct mearas_vm_slot, claim) == MEARAS_VMH_SLOT_CLAIM &&
	       offsetof(struct mearas_vm_slot, ready) == MEARAS_VMH_SLOT_READY &&
	       offsetof(struct mearas_vm_slot, kick) == MEARAS_VMH_SLOT_KICK &&
	       offsetof(struct mearas_vm_slot, owner_pid) == MEARAS_VMH_SLOT_OWNER_PID &&
	       offsetof(struct mearas_vm_slot, region_addr) == MEARAS_VMH_SLOT_REGION_ADDR &&
	       MEARAS_VMH_OUT_OFF == MEARAS_VM_OUT_OFF && MEARAS_VMH_OUT_BYTES == sizeof(struct mearas_vm_output),
	       "kmod_uapi.h's view of the VM header matches");
_Static_assert(sizeof(struct mearas_vm_hdr) <= 4096, "VM header fits a page");

/* Size of one slot's client region holding nvgpus vGPUs and data bytes of
 * data area (the layout build_region in host-backend/core/worker.c makes). */
static inline uint64_t mearas_vm_region_fixed(uint32_t nvgpus)
{
	struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
							 MEARAS_ARENA_SIZE, MEARAS_MAX_THREADS);

	return mearas_align_up(4096 + l.size * nvgpus, 2u << 20);
}

#endif
