// SPDX-License-Identifier: MIT
/* Seed corpus of fuzz_remote_records (fuzz_remote.h): what a forwarder
 * sends (host-backend/remote/forward.c forward_one): copies with inline
 * and bulk data, device-to-host copies followed by DONE, arena payloads,
 * HOST_MAPPED ranges and mapped bytes, captures and graph launches,
 * refused and malformed records, REAP calls. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_remote.h"
#include "fuzz_seeds.h"
#include "remote/messages.h"

#define TAG(t, off) (((uint64_t)(t) << FUZZ_TAG_SHIFT) | (off))
#define W MEARAS_SQE_WANT_CQE

static void put_msg(struct seedbuf *b, bool wants_reply, const void *msg, size_t len)
{
	sb_u8(b, REMI_MSG);
	sb_u8(b, wants_reply);
	sb_u8(b, (uint8_t)len);
	sb_u8(b, (uint8_t)(len >> 8));
	sb_put(b, msg, len);
}

static void put_u64(struct seedbuf *b, uint64_t v)
{
	sb_u32(b, (uint32_t)v);
	sb_u32(b, (uint32_t)(v >> 32));
}

static void put_chunk(struct seedbuf *b, uint64_t tag, uint64_t offset, uint16_t len)
{
	sb_u8(b, REMI_CHUNK);
	put_u64(b, tag);
	put_u64(b, offset);
	sb_u8(b, (uint8_t)len);
	sb_u8(b, (uint8_t)(len >> 8));
	for (uint16_t i = 0; i < len; i++)
		sb_u8(b, (uint8_t)(i * 7 + 1));
}

static void put_reap(struct seedbuf *b)
{
	const uint32_t req[2] = { REMOTE_MSG_REAP, 0 };

	put_msg(b, true, req, sizeof(req));
}

static struct mearas_sqe sqe(unsigned op, uint16_t flags, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	struct mearas_sqe e;

	memset(&e, 0, sizeof(e));
	e.op = (uint16_t)op;
	e.flags = flags;
	e.args.a[0] = a0, e.args.a[1] = a1, e.args.a[2] = a2, e.args.a[3] = a3;
	return e;
}

/* A RECORD: header, payload_len payload bytes, then data_len inline data bytes when flags say so. */
static void put_record(struct seedbuf *b, const struct mearas_sqe *e, uint32_t flags, uint32_t payload_len,
		       uint64_t data_off, uint32_t data_len)
{
	struct remote_record_hdr h = { .kind = REMOTE_MSG_RECORD, .flags = flags, .payload_len = payload_len,
				       .data_off = data_off, .data_len = data_len, .sqe = *e };
	struct seedbuf m = { 0 };

	sb_put(&m, &h, sizeof(h));
	for (uint32_t i = 0; i < payload_len; i++)
		sb_u8(&m, (uint8_t)(i * 3));
	for (uint32_t i = 0; (flags & REMOTE_REC_DATA_INLINE) && i < data_len; i++)
		sb_u8(&m, (uint8_t)(i * 5));
	put_msg(b, false, m.p, m.len);
	free(m.p);
}

static void put_open(struct seedbuf *b)
{
	struct remote_open_req o = { .magic = REMOTE_MAGIC, .version = REMOTE_VERSION, .kind = REMOTE_MSG_OPEN,
				     .nthreads = 4, .data_size = 8u << 20 };

	memcpy(o.node, "seed", 5);
	put_msg(b, true, &o, sizeof(o));
}

static void copies(struct seedbuf *b)
{
	struct mearas_sqe e;

	put_open(b);
	put_reap(b);
	e = sqe(MEARAS_OP_MEMCPY, W, TAG(FUZZ_TAG_A, 0), 0, 512, MEARAS_COPY_HTOD);
	put_record(b, &e, REMOTE_REC_DATA_INLINE, 0, 0, 512);
	e = sqe(MEARAS_OP_MEMCPY, W, 4096, TAG(FUZZ_TAG_A, 0), 512, MEARAS_COPY_DTOH);
	put_record(b, &e, REMOTE_REC_WANT_DONE, 0, 0, 0);
	e = sqe(MEARAS_OP_MEMCPY, 0, 8192, TAG(FUZZ_TAG_B, 64), 300, MEARAS_COPY_DTOH);
	put_record(b, &e, REMOTE_REC_WANT_DONE, 0, 0, 0);
	e = sqe(MEARAS_OP_MEMCPY_2D, W, 16384, 128, TAG(FUZZ_TAG_A, 0), 256);
	e.args.a[4] = 64, e.args.a[5] = 4, e.args.a[6] = MEARAS_COPY_DTOH;
	put_record(b, &e, REMOTE_REC_WANT_DONE, 0, 0, 0);
	put_chunk(b, 65536, 0, 1000);
	e = sqe(MEARAS_OP_MEMCPY, W, TAG(FUZZ_TAG_B, 0), 65536, 1000, MEARAS_COPY_HTOD);
	put_record(b, &e, REMOTE_REC_DATA_BULK, 0, 65536, 1000);
	e = sqe(MEARAS_OP_SYNC_ERROR, W, 0, 0, 0, 0);
	put_record(b, &e, 0, 0, 0, 0);
	put_reap(b);
}

static void payloads(struct seedbuf *b)
{
	struct mearas_sqe e;

	put_reap(b);
	e = sqe(MEARAS_OP_MEMCPY_INLINE, W | MEARAS_SQE_PAYLOAD_ARENA, TAG(FUZZ_TAG_A, 100), 0, 0, 0);
	put_record(b, &e, 0, 300, 0, 0);
	e = sqe(MEARAS_OP_MEMCPY_INLINE, W | MEARAS_SQE_PAYLOAD_ARENA, TAG(FUZZ_TAG_A, 0), 0, 0, 0);
	put_record(b, &e, 0, 16, 0, 0);
	e = sqe(MEARAS_OP_MEMCPY_INLINE, W | MEARAS_SQE_PAYLOAD_ARENA, TAG(FUZZ_TAG_A, 0), 0, 0, 0);
	put_record(b, &e, REMOTE_REC_BAD_PAYLOAD, 0, 0, 0);
	e = sqe(MEARAS_OP_MEM_ALLOC, W, 1 << 20, 0, 0, 0);
	put_record(b, &e, REMOTE_REC_REFUSED, 0, 0, 0);
	e = sqe(MEARAS_OP_MEMSET, W, TAG(FUZZ_TAG_B, 0), 7, 4096, 1);
	e.stream = FUZZ_STREAM;
	put_record(b, &e, 0, 0, 0, 0);
	e = sqe(MEARAS_OP_HOST_FUNC, 0, 5, 0, 0, 0);
	put_record(b, &e, 0, 0, 0, 0);
	/* a malformed record: its payload runs past the message */
	{
		struct remote_record_hdr h = { .kind = REMOTE_MSG_RECORD, .flags = REMOTE_REC_WANT_DONE,
					       .payload_len = 1000,
					       .sqe = sqe(MEARAS_OP_MEMCPY, W, 0, 0, 0, 0) };

		put_msg(b, false, &h, sizeof(h));
	}
	put_reap(b);
}

static void mapped(struct seedbuf *b)
{
	struct remote_mapped_msg m = { .kind = REMOTE_MSG_MAPPED, .off = 8192, .len = 100 };
	struct mearas_sqe e;
	struct seedbuf mm = { 0 };

	e = sqe(MEARAS_OP_HOST_MAPPED, W, 8192, 4096, 1, 0);
	put_record(b, &e, 0, 0, 0, 0);
	sb_put(&mm, &m, sizeof(m));
	for (int i = 0; i < 100; i++)
		sb_u8(&mm, (uint8_t)i);
	put_msg(b, false, mm.p, mm.len);
	free(mm.p);
	e = sqe(MEARAS_OP_MEMCPY, W, TAG(FUZZ_TAG_A, 0), 8192, 256, MEARAS_COPY_HTOD);
	put_record(b, &e, REMOTE_REC_DATA_INLINE, 0, 8192, 256);
	e = sqe(MEARAS_OP_MEMCPY, W, 8192 + 512, TAG(FUZZ_TAG_A, 0), 256, MEARAS_COPY_DTOH);
	put_record(b, &e, REMOTE_REC_WANT_DONE, 0, 0, 0);
	put_reap(b);
	e = sqe(MEARAS_OP_HOST_MAPPED, 0, 8192, 4096, 0, 0);
	put_record(b, &e, 0, 0, 0, 0);
	e = sqe(MEARAS_OP_HOST_MAPPED, W, 1 << 20, 6 << 20, 1, 0);
	put_record(b, &e, REMOTE_REC_REFUSED, 0, 0, 0);
	e = sqe(MEARAS_OP_HOST_MAPPED, W, 1 << 20, 6 << 20, 1, 0);
	put_record(b, &e, 0, 0, 0, 0);
	put_reap(b);
}

static void graphs(struct seedbuf *b)
{
	struct mearas_sqe e;

	e = sqe(MEARAS_OP_CAPTURE_BEGIN, W, 0, 0, 0, 0);
	e.stream = FUZZ_STREAM;
	put_record(b, &e, 0, 0, 0, 0);
	e = sqe(MEARAS_OP_MEMCPY, 0, 4096, TAG(FUZZ_TAG_A, 0), 128, MEARAS_COPY_DTOH);
	e.stream = FUZZ_STREAM;
	put_record(b, &e, REMOTE_REC_WANT_DONE, 0, 0, 0);
	e = sqe(MEARAS_OP_CAPTURE_END, W, 1, 0, 0, 0);
	e.stream = FUZZ_STREAM;
	put_record(b, &e, 0, 0, 0, 0);
	e = sqe(MEARAS_OP_GRAPH_INSTANTIATE, W, 1, 1, 0, 0);
	put_record(b, &e, 0, 0, 0, 0);
	e = sqe(MEARAS_OP_GRAPH_LAUNCH, W, 1, 0, 0, 0);
	e.stream = FUZZ_STREAM;
	put_record(b, &e, REMOTE_REC_WANT_DONE, 0, 0, 0);
	e = sqe(MEARAS_OP_STREAM_SYNC, W, 0, 0, 0, 0);
	e.stream = FUZZ_STREAM;
	put_record(b, &e, 0, 0, 0, 0);
	put_reap(b);
}

/* The worker dies with copies in flight; a record after it is refused. */
static void worker_dies(struct seedbuf *b)
{
	struct mearas_sqe e;

	copies(b);
	e = sqe(MEARAS_OP_MEMCPY, W, 4096, TAG(FUZZ_TAG_A, 0), 512, MEARAS_COPY_DTOH);
	put_record(b, &e, REMOTE_REC_WANT_DONE, 0, 0, 0);
	sb_u8(b, REMI_GONE);
	e = sqe(MEARAS_OP_MEMSET, W, TAG(FUZZ_TAG_B, 0), 1, 64, 1);
	put_record(b, &e, REMOTE_REC_WANT_DONE, 0, 0, 0);
	put_reap(b);
}

int seeds_remote(const char *dir)
{
	static const struct {
		const char *name;
		uint8_t flags;
		void (*fn)(struct seedbuf *b);
	} v[] = {
		{ "copies", 0, copies },
		{ "copies-not-started", REMF_NO_START, copies },
		{ "payloads", 0, payloads },
		{ "mapped", 0, mapped },
		{ "mapped-budget", REMF_BUDGET, mapped },
		{ "graphs", REMF_GRAPHS, graphs },
		{ "worker-dies", 0, worker_dies },
	};
	struct seedbuf b = { 0 };
	int rc = 0;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sb_u8(&b, v[i].flags);
		v[i].fn(&b);
		rc |= sb_write(&b, dir, v[i].name);
	}
	free(b.p);
	return rc;
}
