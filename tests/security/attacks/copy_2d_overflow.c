/* SPDX-License-Identifier: MIT */
/*
 * 2D copies and memsets whose span, pitch*(height-1)+width, wraps in 64
 * bits: were it checked as computed, only `width` bytes would be validated
 * while rows land 2^40 bytes apart, in another vGPU's window or outside the
 * data area. Every such record must fail with cudaErrorInvalidValue (a
 * pitch past any device's maximum: cudaErrorInvalidPitchValue) and leave
 * the other window's bytes unread.
 *   copy_2d_overflow SOCKET
 * Exit 0 when every record was refused and no secret byte came back.
 */
#include "hostile.h"

static const char secret[] = "SECRET-IN-OTHER-WINDOW";

/* want: cudaErrorInvalidValue (1), or cudaErrorInvalidPitchValue (12) for
 * a pitch past any device's maximum */
static int expect_refused(struct hostile *h, const char *what, struct mearas_sqe *e, int want)
{
	int r = hostile_call(h, 0, e, NULL);

	printf("%s: status %d\n", what, r);
	if (r == -1000) {
		printf("FAIL: %s: no completion (the worker died?)\n", what);
		return 1;
	}
	if (r != want) {
		printf("FAIL: %s: status %d, want %d\n", what, r, want);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct hostile h;
	struct mearas_sqe e;
	uint64_t a0, a1;
	int r, bad = 0;

	hostile_open(&h, argc, argv, 2, 64ull << 20);
	a0 = hostile_alloc(&h, 0, 4096, NULL);
	a1 = hostile_alloc(&h, 1, 4096, NULL);
	if (!a0 || !a1) {
		printf("FAIL: allocations\n");
		return 1;
	}
	memset(h.data, 0, 4096);
	memcpy(h.data, secret, sizeof(secret));
	r = hostile_memcpy(&h, 1, a1, 0, 64, MEARAS_COPY_HTOD);
	memset(h.data, 0, 64);
	r |= hostile_memcpy(&h, 0, a0, 0, 64, MEARAS_COPY_HTOD);
	if (r) {
		printf("FAIL: setup copies: %d\n", r);
		return 1;
	}

	/* device rows 2^40 apart read into the data area: 2^40 * 2^24 wraps to 0 */
	e = hostile_sqe(MEARAS_OP_MEMCPY_2D);
	e.args.a[0] = 0;                /* dst: data offset */
	e.args.a[1] = 32;               /* dpitch */
	e.args.a[2] = a0;               /* src */
	e.args.a[3] = 1ull << 40;       /* spitch */
	e.args.a[4] = 32;               /* width */
	e.args.a[5] = (1ull << 24) + 1; /* height */
	e.args.a[6] = MEARAS_COPY_DTOH;
	bad |= expect_refused(&h, "DTOH 2D, wrapping source span", &e, 1);
	if (memmem(h.data, 4096, "SECRET", 6)) {
		printf("FAIL: the other window's bytes reached the data area\n");
		bad = 1;
	}

	/* host rows 2^40 apart: outside the data area */
	e = hostile_sqe(MEARAS_OP_MEMCPY_2D);
	e.args.a[0] = a0;
	e.args.a[1] = 1ull << 40;
	e.args.a[2] = 0;
	e.args.a[3] = 1ull << 40;
	e.args.a[4] = 32;
	e.args.a[5] = (1ull << 24) + 1;
	e.args.a[6] = MEARAS_COPY_HTOD;
	bad |= expect_refused(&h, "HTOD 2D, wrapping host and device spans", &e, 1);

	/* pitch*(height-1) itself wraps past 2^64 */
	e = hostile_sqe(MEARAS_OP_MEMCPY_2D);
	e.args.a[0] = 0;
	e.args.a[1] = 32;
	e.args.a[2] = a0;
	e.args.a[3] = 0x8000000000000000ull;
	e.args.a[4] = 32;
	e.args.a[5] = 3;
	e.args.a[6] = MEARAS_COPY_DTOH;
	bad |= expect_refused(&h, "DTOH 2D, pitch*(height-1) past 2^64", &e, 12);

	/* a 2D memset whose span wraps */
	e = hostile_sqe(MEARAS_OP_MEMSET_2D);
	e.args.a[0] = a0;
	e.args.a[1] = 1ull << 40;       /* pitch */
	e.args.a[2] = 0x41;             /* value */
	e.args.a[3] = 32;               /* width */
	e.args.a[4] = (1ull << 24) + 1; /* height */
	bad |= expect_refused(&h, "MEMSET 2D, wrapping span", &e, 1);

	/* the other window still holds its bytes, and vGPU 0 still works */
	memset(h.data, 0, 64);
	if (hostile_memcpy(&h, 1, 0, a1, 64, MEARAS_COPY_DTOH) || memcmp(h.data, secret, sizeof(secret))) {
		printf("FAIL: vGPU 1's buffer changed or cannot be read back\n");
		bad = 1;
	}
	printf(bad ? "attack not refused\n" : "every wrapping 2D record refused\n");
	return bad;
}
