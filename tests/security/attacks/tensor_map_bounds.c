/* SPDX-License-Identifier: MIT */
/*
 * TENSOR_MAP_ENCODE records from a hostile client (raw rings): a descriptor
 * is a door to memory for the GPU's TMA unit, so mearasd must hand out none
 * for memory that is not the client's. Refused, each with
 * cudaErrorInvalidValue and no byte written to the data area:
 *  - another connection's buffer (the same vGPU window, another worker),
 *    a tensor running past its allocation, one whose strides span past 2^64;
 *  - absurd ranks (0, 6, 2^32-1, im2col 2), unknown calls, enums past
 *    their range, dimensions 0 and 2^32+1, a stride of 2^40, entries past
 *    the rank set;
 *  - arguments too short, too long, past the inline bytes or the arena;
 *    a map length other than 128, a map outside or wrapping the data area.
 * A valid record then still works (the sim's encoding comes back).
 *   tensor_map_bounds SOCKET
 * Exit 0 when every record got the status it must.
 */
#include "hostile.h"
#include "mearas/tensormap.h"

#define INVALID 1 /* cudaErrorInvalidValue */
#define DATA (64ull << 20)
#define OUT 4096ull             /* where maps are asked for in the data area */

static int bad;

/* A 2D float tensor of 32 x 8 (rows 128 bytes apart) at addr. */
static struct mearas_tmap_args tiled(uint64_t addr)
{
	struct mearas_tmap_args a;

	memset(&a, 0, sizeof(a));
	a.addr = addr;
	a.rank = 2;
	a.dtype = 7; /* FLOAT32 */
	a.dims[0] = 32;
	a.dims[1] = 8;
	a.strides[0] = 128;
	a.box[0] = 32;
	a.box[1] = 8;
	a.estrides[0] = a.estrides[1] = 1;
	return a;
}

/* A record: kind, map offset and length, the arguments (len bytes) at the
 * start of the arena (they do not fit a record's inline bytes). */
static int encode(struct hostile *h, uint32_t kind, uint64_t map, uint64_t map_len, const void *args, uint32_t len)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_TENSOR_MAP_ENCODE);

	e.args.TENSOR_MAP_ENCODE.kind = kind;
	e.args.TENSOR_MAP_ENCODE.map = map;
	e.args.TENSOR_MAP_ENCODE.map_len = map_len;
	e.flags = MEARAS_SQE_PAYLOAD_ARENA;
	e.payload_off = 0;
	e.payload_len = len;
	memcpy(hostile_arena(h, 0), args, len);
	return hostile_call(h, 0, &e, NULL);
}

static void expect(struct hostile *h, const char *what, int st)
{
	static const uint8_t zero[MEARAS_TMAP_BYTES];

	printf("%s: status %d\n", what, st);
	if (st != INVALID) {
		printf("FAIL: %s: want %d\n", what, INVALID);
		bad = 1;
	}
	if (memcmp(h->data + OUT, zero, sizeof(zero))) {
		printf("FAIL: %s: the data area was written\n", what);
		bad = 1;
		memset(h->data + OUT, 0, MEARAS_TMAP_BYTES);
	}
}

static void refuse(struct hostile *h, const char *what, uint32_t kind, const struct mearas_tmap_args *a)
{
	expect(h, what, encode(h, kind, OUT, MEARAS_TMAP_BYTES, a, sizeof(*a)));
}

int main(int argc, char **argv)
{
	struct hostile h, other;
	struct mearas_tmap_args a;
	struct mearas_sim_tmap s;
	struct mearas_sqe e;
	uint64_t mine, theirs, o0;
	uint8_t big[512];
	int r;

	if (argc < 2 || (r = hostile_connect(&h, argv[1], 1, DATA, NULL)) ||
	    (r = hostile_connect(&other, argv[1], 1, DATA, NULL))) {
		printf("FAIL: connect (%d)\n", argc < 2 ? -2 : r);
		return 1;
	}
	/* the other connection holds two buffers, this one a single one: the
	 * other's second lies where this client has nothing */
	o0 = hostile_alloc(&other, 0, 4096, NULL);
	theirs = hostile_alloc(&other, 0, 4096, NULL);
	mine = hostile_alloc(&h, 0, 4096, NULL);
	if (!o0 || !theirs || !mine || theirs == mine) {
		printf("FAIL: allocations (%#llx %#llx %#llx)\n", (unsigned long long)o0, (unsigned long long)theirs,
		       (unsigned long long)mine);
		return 1;
	}
	memset(h.data + OUT, 0, MEARAS_TMAP_BYTES);

	/* memory that is not this client's */
	a = tiled(theirs);
	refuse(&h, "another connection's buffer", MEARAS_TMAP_TILED, &a);
	a = tiled(mine + 4096 - 512);
	refuse(&h, "a tensor past its allocation's end", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.dims[1] = 1ull << 32;
	a.strides[0] = (1ull << 40) - 16;
	refuse(&h, "strides spanning past 2^64", MEARAS_TMAP_TILED, &a);
	a = tiled(0);
	refuse(&h, "address 0", MEARAS_TMAP_TILED, &a);

	/* absurd shapes */
	a = tiled(mine);
	a.rank = 0;
	refuse(&h, "rank 0", MEARAS_TMAP_TILED, &a);
	a.rank = 6;
	refuse(&h, "rank 6", MEARAS_TMAP_TILED, &a);
	a.rank = 0xffffffffu;
	refuse(&h, "rank 2^32-1", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.box[0] = a.box[1] = 0;
	a.channels = a.pixels = 8;
	refuse(&h, "im2col of rank 2", MEARAS_TMAP_IM2COL, &a);
	a = tiled(mine);
	refuse(&h, "unknown call 0", 0, &a);
	refuse(&h, "unknown call 4", 4, &a);
	refuse(&h, "unknown call 2^32-1", 0xffffffffu, &a);
	a.dtype = 0x80000000u;
	refuse(&h, "data type 2^31", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.swizzle = 7;
	refuse(&h, "swizzle 7", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.wide_mode = 1;
	refuse(&h, "wide mode on a tiled map", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.dims[1] = 0;
	refuse(&h, "dimension 0", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.dims[0] = (1ull << 32) + 1;
	refuse(&h, "dimension 2^32+1", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.strides[0] = 1ull << 40;
	refuse(&h, "stride 2^40", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.dims[4] = 1;
	refuse(&h, "a dimension past the rank", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.lower[0] = -1;
	refuse(&h, "corners on a tiled map", MEARAS_TMAP_TILED, &a);
	a = tiled(mine);
	a.reserved = 1;
	refuse(&h, "reserved word set", MEARAS_TMAP_TILED, &a);

	/* the record itself (a second later: mearasd logs 10 refusals a second per vGPU) */
	usleep(1100000);
	a = tiled(mine);
	expect(&h, "arguments too short", encode(&h, MEARAS_TMAP_TILED, OUT, MEARAS_TMAP_BYTES, &a, sizeof(a) - 8));
	e = hostile_sqe(MEARAS_OP_TENSOR_MAP_ENCODE);
	e.args.TENSOR_MAP_ENCODE.kind = MEARAS_TMAP_TILED;
	e.args.TENSOR_MAP_ENCODE.map = OUT;
	e.args.TENSOR_MAP_ENCODE.map_len = MEARAS_TMAP_BYTES;
	e.payload_len = MEARAS_SQE_INLINE;
	memcpy(e.inline_payload, &a, MEARAS_SQE_INLINE);
	expect(&h, "arguments cut to the inline bytes", hostile_call(&h, 0, &e, NULL));
	expect(&h, "no arguments", encode(&h, MEARAS_TMAP_TILED, OUT, MEARAS_TMAP_BYTES, &a, 0));
	e = hostile_sqe(MEARAS_OP_TENSOR_MAP_ENCODE);
	e.args.TENSOR_MAP_ENCODE.kind = MEARAS_TMAP_TILED;
	e.args.TENSOR_MAP_ENCODE.map = OUT;
	e.args.TENSOR_MAP_ENCODE.map_len = MEARAS_TMAP_BYTES;
	e.payload_len = 0xffffffffu;
	expect(&h, "inline arguments of 2^32-1 bytes", hostile_call(&h, 0, &e, NULL));
	memset(big, 0, sizeof(big));
	memcpy(big, &a, sizeof(a));
	expect(&h, "arguments too long", encode(&h, MEARAS_TMAP_TILED, OUT, MEARAS_TMAP_BYTES, big, sizeof(big)));
	e.flags = MEARAS_SQE_PAYLOAD_ARENA;
	e.payload_off = 0xfffffff0u;
	e.payload_len = sizeof(a);
	expect(&h, "arguments past the arena", hostile_call(&h, 0, &e, NULL));
	expect(&h, "map length 0", encode(&h, MEARAS_TMAP_TILED, OUT, 0, &a, sizeof(a)));
	expect(&h, "map length 127", encode(&h, MEARAS_TMAP_TILED, OUT, 127, &a, sizeof(a)));
	expect(&h, "map length 2^63", encode(&h, MEARAS_TMAP_TILED, OUT, 1ull << 63, &a, sizeof(a)));
	expect(&h, "map at the data area's end",
	       encode(&h, MEARAS_TMAP_TILED, DATA - 64, MEARAS_TMAP_BYTES, &a, sizeof(a)));
	expect(&h, "map offset wrapping", encode(&h, MEARAS_TMAP_TILED, ~0ull - 63, MEARAS_TMAP_BYTES, &a, sizeof(a)));

	/* and a valid record still works, the arguments reaching the device */
	r = encode(&h, MEARAS_TMAP_TILED, OUT, MEARAS_TMAP_BYTES, &a, sizeof(a));
	memcpy(&s, h.data + OUT, sizeof(s));
	printf("valid map: status %d, magic %#x, address %#llx\n", r, s.magic, (unsigned long long)s.addr);
	if (r || s.magic != MEARAS_SIM_TMAP_MAGIC || s.addr != mine || s.dims[1] != 8) {
		printf("FAIL: a valid map was not encoded\n");
		bad = 1;
	}
	printf(bad ? "attack not refused\n" : "every hostile tensor map refused\n");
	return bad;
}
