#include "wire.h"
#include "remote_link.h"

#include <stddef.h>

void wire_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void wire_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t wire_get_u32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t wire_get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

void wire_encode_frame(uint8_t out[LINK_FRAME_HDR], const struct link_frame_hdr *h)
{
	wire_put_u32(out, LINK_FRAME_MAGIC);
	out[4] = h->type;
	out[5] = h->flags;
	out[6] = 0;
	out[7] = 0;
	wire_put_u32(out + 8, h->count);
	wire_put_u32(out + 12, h->body_len);
}

int wire_decode_frame(const uint8_t in[LINK_FRAME_HDR], struct link_frame_hdr *h)
{
	if (wire_get_u32(in) != LINK_FRAME_MAGIC)
		return MEARAS_LINK_E_PROTO;
	h->type = in[4];
	h->flags = in[5];
	h->count = wire_get_u32(in + 8);
	h->body_len = wire_get_u32(in + 12);
	if (h->type < LINK_FRAME_BATCH || h->type > LINK_FRAME_BULK_END)
		return MEARAS_LINK_E_PROTO;
	if (h->body_len > LINK_MAX_BODY)
		return MEARAS_LINK_E_PROTO;
	return MEARAS_LINK_OK;
}

void wire_encode_msg(uint8_t out[LINK_MSG_HDR], uint64_t seq, uint32_t len, uint32_t flags)
{
	wire_put_u64(out, seq);
	wire_put_u32(out + 8, len);
	wire_put_u32(out + 12, flags);
}

int wire_next_msg(const uint8_t *body, uint32_t body_len, size_t *off, struct link_msg *m)
{
	if (*off > body_len || body_len - *off < LINK_MSG_HDR)
		return MEARAS_LINK_E_PROTO;
	const uint8_t *h = body + *off;
	m->seq = wire_get_u64(h);
	m->len = wire_get_u32(h + 8);
	m->flags = wire_get_u32(h + 12);
	if (m->len > body_len - *off - LINK_MSG_HDR)
		return MEARAS_LINK_E_PROTO;
	m->data = h + LINK_MSG_HDR;
	*off += LINK_MSG_HDR + m->len;
	return MEARAS_LINK_OK;
}

void wire_decode_chunk(const uint8_t in[LINK_CHUNK_HDR], struct link_chunk *c)
{
	c->tag = wire_get_u64(in);
	c->bulk_id = wire_get_u64(in + 8);
	c->offset = wire_get_u64(in + 16);
	c->total = wire_get_u64(in + 24);
}

int wire_decode_reply(const struct link_frame_hdr *fh, const uint8_t in[LINK_MSG_HDR], uint64_t *seq, uint32_t *len)
{
	*seq = wire_get_u64(in);
	*len = wire_get_u32(in + 8);
	return *len == fh->body_len - LINK_MSG_HDR ? MEARAS_LINK_OK : MEARAS_LINK_E_PROTO;
}
