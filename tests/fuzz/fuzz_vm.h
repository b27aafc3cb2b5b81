/* SPDX-License-Identifier: MIT */
/*
 * Input of fuzz_vm_slot (also written by seeds_vm.c): a VM's guest writing
 * its shared memory (vm_region.h) between the VM worker's scans, and the slot
 * workers' lives.
 *   u8 nslots (1 + n % 8), u8 nvgpus (1 + n % MEARAS_MAX_VGPUS)
 *   then steps until the end, each an op byte (VMO_*) and its arguments:
 *     CLAIM/READY/KICK/PID/STATE  u8 slot (any of the header's 8), u32 value:
 *                                 the guest writes that word of the slot
 *                                 (STATE: the slot's region header state)
 *     SCAN    u8 fail: the VM worker scans; starting a slot worker fails
 *             for the slots whose bit is set
 *     STATUS  u8 slot, u8 size, u32 status: its worker reports (size odd: a
 *             message cut short by size / 2 + 1 bytes)
 *     EXIT    u8 slot, u8 how: its worker exits (how < 128: with status
 *             how, else killed by signal how % 64 + 1)
 *     TIME    u16 ms: time passes; workers past their stop grace are killed
 *     OUT     u8 slot, u8 ring, u16 len: its worker moves len bytes of
 *             device output into a ring of the slot's output area
 *     TAIL    u8 slot, u8 ring, u32 tail: the guest writes that ring's tail
 *     READ    u8 slot, u8 ring, u16 len: the guest reads up to len bytes
 *   all little-endian.
 */
#ifndef MEARAS_FUZZ_VM_H
#define MEARAS_FUZZ_VM_H

enum {
	VMO_CLAIM,
	VMO_READY,
	VMO_KICK,
	VMO_PID,
	VMO_STATE,
	VMO_SCAN,
	VMO_STATUS,
	VMO_EXIT,
	VMO_TIME,
	VMO_OUT,
	VMO_TAIL,
	VMO_READ,
	VMO_COUNT
};

/* FUZZ_WRITE_SEEDS=DIR build/fuzz_vm_slot: 0 or -1 */
int seeds_vm(const char *dir);

#endif
