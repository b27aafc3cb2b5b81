// SPDX-License-Identifier: MIT
/* Seed corpus of fuzz_vm_slot (fuzz_vm.h): a guest's claims, kicks and give-backs
 * with the slot workers' lives, as the guest module and the slot workers do
 * them, and a guest that scribbles on everything. */
#include <stdlib.h>

#include "fuzz_seeds.h"
#include "fuzz_vm.h"

/* the input's first bytes: slots and vGPUs, each one more than its byte */
static void header(struct seedbuf *b, uint8_t nslots, uint8_t nvgpus)
{
	sb_u8(b, nslots - 1);
	sb_u8(b, nvgpus - 1);
}

static void word(struct seedbuf *b, uint8_t op, uint8_t slot, uint32_t v)
{
	sb_u8(b, op);
	sb_u8(b, slot);
	sb_u32(b, v);
}

static void op2(struct seedbuf *b, uint8_t op, uint8_t x, uint8_t y)
{
	sb_u8(b, op);
	sb_u8(b, x);
	sb_u8(b, y);
}

static void scan(struct seedbuf *b, uint8_t fail)
{
	sb_u8(b, VMO_SCAN);
	sb_u8(b, fail);
}

/* STATUS (x: the message's size) and TAIL (x: the ring) */
static void byte_word(struct seedbuf *b, uint8_t op, uint8_t slot, uint8_t x, uint32_t v)
{
	sb_u8(b, op);
	sb_u8(b, slot);
	sb_u8(b, x);
	sb_u32(b, v);
}

static void ring_op(struct seedbuf *b, uint8_t op, uint8_t slot, uint8_t ring, uint16_t len)
{
	sb_u8(b, op);
	sb_u8(b, slot);
	sb_u8(b, ring);
	sb_u8(b, (uint8_t)len);
	sb_u8(b, (uint8_t)(len >> 8));
}

/* A guest process claims slot 0, kicks, prints, gives it back; another
 * claims slot 1, whose worker cannot start; a third's worker dies. */
static void lifecycle(struct seedbuf *b)
{
	header(b, 4, 2);
	word(b, VMO_CLAIM, 0, 0x1001);
	word(b, VMO_PID, 0, 4242);
	scan(b, 0);
	byte_word(b, VMO_STATUS, 0, 0, 0);
	word(b, VMO_KICK, 0, 3);
	scan(b, 0);
	ring_op(b, VMO_OUT, 0, 0, 300);
	ring_op(b, VMO_OUT, 0, 1, 40);
	ring_op(b, VMO_READ, 0, 0, 100);
	word(b, VMO_CLAIM, 1, 0x1002);
	scan(b, 2);
	word(b, VMO_CLAIM, 0, 0);
	scan(b, 0);
	op2(b, VMO_EXIT, 0, 0);
	scan(b, 0);
	word(b, VMO_CLAIM, 2, 0x1003);
	scan(b, 0);
	op2(b, VMO_EXIT, 2, 128 + 10);
	word(b, VMO_CLAIM, 2, 0);
	scan(b, 0);
	word(b, VMO_CLAIM, 1, 0);
	scan(b, 0);
}

/* A guest that writes what it should not: the host's ready, other slots,
 * kick bits past its vGPUs, its output tails; a worker that will not stop. */
static void scribbler(struct seedbuf *b)
{
	header(b, 2, 2);
	word(b, VMO_CLAIM, 0, 7);
	word(b, VMO_READY, 0, 7);
	scan(b, 0);
	word(b, VMO_READY, 0, 0);
	word(b, VMO_CLAIM, 5, 9);
	word(b, VMO_KICK, 5, 0xffffffffu);
	scan(b, 0);
	word(b, VMO_KICK, 0, 0xffffffffu);
	byte_word(b, VMO_STATUS, 0, 0, 0);
	scan(b, 0);
	byte_word(b, VMO_TAIL, 0, 0, 0x80000000u);
	ring_op(b, VMO_OUT, 0, 0, 65535);
	ring_op(b, VMO_OUT, 0, 0, 65535);
	ring_op(b, VMO_OUT, 0, 0, 65535);
	word(b, VMO_STATE, 0, 3);
	word(b, VMO_CLAIM, 0, 8);
	scan(b, 0);
	scan(b, 0);
	op2(b, VMO_TIME, 0x70, 0x17);
	scan(b, 0);
	byte_word(b, VMO_STATUS, 0, 0, 100);
	scan(b, 0);
}

int seeds_vm(const char *dir)
{
	struct seedbuf b = { 0 };
	int rc;

	lifecycle(&b);
	rc = sb_write(&b, dir, "lifecycle");
	scribbler(&b);
	rc |= sb_write(&b, dir, "scribbler");
	free(b.p);
	return rc;
}
