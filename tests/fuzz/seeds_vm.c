// SPDX-License-Identifier: MIT
/* Seed corpus of fuzz_vm_slot (fuzz_vm.h): a guest's claims, kicks and give-backs
 * with the slot workers' lives, as the guest module and the slot workers do
 * them, and a guest that scribbles on everything. */
#include <stdlib.h>

#include "fuzz_seeds.h"
#include "fuzz_vm.h"

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

static void status(struct seedbuf *b, uint8_t slot, uint32_t code)
{
	sb_u8(b, VMO_STATUS);
	sb_u8(b, slot);
	sb_u8(b, 0);
	sb_u32(b, code);
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
	sb_u8(b, 3);
	sb_u8(b, 1);
	word(b, VMO_CLAIM, 0, 0x1001);
	word(b, VMO_PID, 0, 4242);
	scan(b, 0);
	status(b, 0, 0);
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
	sb_u8(b, 1);
	sb_u8(b, 1);
	word(b, VMO_CLAIM, 0, 7);
	word(b, VMO_READY, 0, 7);
	scan(b, 0);
	word(b, VMO_READY, 0, 0);
	word(b, VMO_CLAIM, 5, 9);
	word(b, VMO_KICK, 5, 0xffffffffu);
	scan(b, 0);
	word(b, VMO_KICK, 0, 0xffffffffu);
	status(b, 0, 0);
	scan(b, 0);
	sb_u8(b, VMO_TAIL);
	sb_u8(b, 0);
	sb_u8(b, 0);
	sb_u32(b, 0x80000000u);
	ring_op(b, VMO_OUT, 0, 0, 65535);
	ring_op(b, VMO_OUT, 0, 0, 65535);
	ring_op(b, VMO_OUT, 0, 0, 65535);
	word(b, VMO_STATE, 0, 3);
	word(b, VMO_CLAIM, 0, 8);
	scan(b, 0);
	scan(b, 0);
	op2(b, VMO_TIME, 0x70, 0x17);
	scan(b, 0);
	status(b, 0, 100);
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
