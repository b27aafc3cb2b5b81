/* Data-plane framing after the handshake. All integers little-endian.
 *
 * frame  = header(16) body(body_len)
 * header = magic u32 | type u8 | flags u8 | reserved u16 | count u32 | body_len u32
 * BATCH  body: count x { seq u64 | len u32 | mflags u32 | payload[len] }
 * REPLY  body: { seq u64 | len u32 | status u32 | payload[len] }
 * CHUNK  body: { tag u64 | bulk_id u64 | offset u64 | total u64 | data[] }
 * HEARTBEAT / HEARTBEAT_ACK body: { stamp u64 };  CLOSE body: empty
 * BULK_END body: { bulk_id u64 | total u64 } (main connection of a striped link, stripe.h)
 */
#ifndef MEARAS_LINK_WIRE_H
#define MEARAS_LINK_WIRE_H

#include <stdint.h>
#include <stddef.h>

#define LINK_FRAME_MAGIC 0x4b4e4c4du /* "MLNK" */
#define LINK_FRAME_HDR 16u
#define LINK_MSG_HDR 16u
#define LINK_CHUNK_HDR 32u
#define LINK_MAX_BODY (64u << 20)
#define LINK_MAX_BODY_CHUNK (LINK_MAX_BODY - LINK_CHUNK_HDR)
#define LINK_MSG_WANTS_REPLY 1u

enum link_frame_type {
	LINK_FRAME_BATCH = 1,
	LINK_FRAME_REPLY = 2,
	LINK_FRAME_CHUNK = 3,
	LINK_FRAME_HEARTBEAT = 4,
	LINK_FRAME_HEARTBEAT_ACK = 5,
	LINK_FRAME_CLOSE = 6,
	LINK_FRAME_BULK_END = 7,
};

struct link_frame_hdr {
	uint8_t type;
	uint8_t flags;
	uint32_t count;
	uint32_t body_len;
};

void wire_put_u32(uint8_t *p, uint32_t v);
void wire_put_u64(uint8_t *p, uint64_t v);
uint32_t wire_get_u32(const uint8_t *p);
uint64_t wire_get_u64(const uint8_t *p);
void wire_encode_frame(uint8_t out[LINK_FRAME_HDR], const struct link_frame_hdr *h);
/* 0 on success, MEARAS_LINK_E_PROTO on bad magic/type/size. */
int wire_decode_frame(const uint8_t in[LINK_FRAME_HDR], struct link_frame_hdr *h);
void wire_encode_msg(uint8_t out[LINK_MSG_HDR], uint64_t seq, uint32_t len, uint32_t flags);

/* Decoders of what a peer sends (fuzzed by tests/fuzz/fuzz_link_msg): they
 * read only the bytes they are given and check every length. */
struct link_msg {
	uint64_t seq;
	uint32_t len;
	uint32_t flags;
	const uint8_t *data;    /* len bytes, inside the body */
};
/* The message of a BATCH body (body_len bytes) at *off, which moves past it;
 * MEARAS_LINK_E_PROTO when its header or its bytes do not fit the body. */
int wire_next_msg(const uint8_t *body, uint32_t body_len, size_t *off, struct link_msg *m);

struct link_chunk {
	uint64_t tag, bulk_id, offset, total;
};
void wire_decode_chunk(const uint8_t in[LINK_CHUNK_HDR], struct link_chunk *c);

/* The header of a REPLY frame fh; E_PROTO unless its payload is exactly the
 * rest of the frame (fh->body_len >= LINK_MSG_HDR is the caller's check). */
int wire_decode_reply(const struct link_frame_hdr *fh, const uint8_t in[LINK_MSG_HDR], uint64_t *seq, uint32_t *len);

#endif
