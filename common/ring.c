// SPDX-License-Identifier: MIT
/*
 * The ends of a vGPU's rings (include/mearas/ring.h): one implementation
 * for every side that produces or consumes records and completions.
 */
#include <stddef.h>
#include <string.h>

#include "mearas/ring.h"

void mearas_vgpu_rings_at(struct mearas_vgpu_rings *r, uint8_t *block, const struct mearas_vgpu_layout *l,
			  uint32_t sq_entries, uint32_t cq_entries, uint32_t arena_size)
{
	r->info = (struct mearas_devinfo *)(block + l->devinfo);
	r->sq = (struct mearas_ring_ctl *)(block + l->sq_ctl);
	r->sqes = (struct mearas_sqe *)(block + l->sqes);
	r->arena = block + l->arena;
	r->cqs = block + l->cqs;
	r->cq_stride = l->cq_stride;
	r->sq_entries = sq_entries;
	r->cq_entries = cq_entries;
	r->arena_size = arena_size;
}

struct mearas_ring_ctl *mearas_cq_ctl(const struct mearas_vgpu_rings *r, unsigned slot)
{
	return (struct mearas_ring_ctl *)(r->cqs + r->cq_stride * slot);
}

/* ---- SQ producer ---- */

void mearas_sqp_init(struct mearas_sq_producer *p, const struct mearas_vgpu_rings *r)
{
	memset(p, 0, sizeof(*p));
	p->ctl = r->sq;
	p->sqes = r->sqes;
	p->arena = r->arena;
	p->entries = r->sq_entries;
	p->arena_size = r->arena_size;
}

bool mearas_sqp_has_slot(struct mearas_sq_producer *p)
{
	if (p->tail - p->head_cached < p->entries - 1)
		return true;
	p->head_cached = mearas_load_acquire(&p->ctl->head);
	return p->tail - p->head_cached < p->entries - 1;
}

bool mearas_sqp_drained(const struct mearas_sq_producer *p)
{
	return mearas_load_acquire(&p->ctl->head) == p->tail;
}

/* arena_head when the last consumed record was posted */
static uint32_t arena_released(const struct mearas_sq_producer *p)
{
	uint32_t head = mearas_load_acquire(&p->ctl->head);

	return p->arena_mark[(head - 1) & (p->entries - 1)];
}

uint32_t mearas_sqp_arena_need(const struct mearas_sq_producer *p, uint32_t len)
{
	uint32_t pos = p->arena_head % p->arena_size;

	return pos + len > p->arena_size ? len + (p->arena_size - pos) : len;
}

bool mearas_sqp_arena_has(struct mearas_sq_producer *p, uint32_t need)
{
	/* everything posted is consumed: the arena is all free */
	if (mearas_sqp_drained(p))
		return true;
	return p->arena_size - (p->arena_head - arena_released(p)) >= need;
}

/* The record at the tail is written: remember where the arena stands, publish. */
static bool publish(struct mearas_sq_producer *p)
{
	p->arena_mark[p->tail & (p->entries - 1)] = p->arena_head;
	p->tail++;
	mearas_store_release(&p->ctl->tail, p->tail);
	return mearas_ring_needs_wakeup(p->ctl);
}

bool mearas_sqp_push(struct mearas_sq_producer *p, struct mearas_sqe *e, const void *payload, uint32_t len)
{
	struct mearas_sqe *slot = &p->sqes[p->tail & (p->entries - 1)];

	e->payload_len = len;
	if (len > MEARAS_SQE_INLINE) {
		uint32_t pos;

		if (mearas_sqp_drained(p))
			p->arena_head = arena_released(p); /* idle: restart where the consumer is */
		pos = p->arena_head % p->arena_size;
		if (pos + len > p->arena_size) {
			p->arena_head += p->arena_size - pos;
			pos = 0;
		}
		memcpy(p->arena + pos, payload, len);
		p->arena_head += len;
		e->flags |= MEARAS_SQE_PAYLOAD_ARENA;
		e->payload_off = pos;
	}
	/* only the lines in use: the record's header, then its inline bytes */
	memcpy(slot, e, offsetof(struct mearas_sqe, inline_payload));
	if (len && len <= MEARAS_SQE_INLINE)
		memcpy(slot->inline_payload, payload, len);
	return publish(p);
}

bool mearas_sqp_push_record(struct mearas_sq_producer *p, const struct mearas_sqe *e)
{
	struct mearas_sqe *slot = &p->sqes[p->tail & (p->entries - 1)];

	memcpy(slot, e, offsetof(struct mearas_sqe, inline_payload));
	if (!(e->flags & MEARAS_SQE_PAYLOAD_ARENA) && e->payload_len)
		memcpy(slot->inline_payload, e->inline_payload,
		       e->payload_len < MEARAS_SQE_INLINE ? e->payload_len : MEARAS_SQE_INLINE);
	return publish(p);
}

/* ---- SQ consumer ---- */

void mearas_sqc_init(struct mearas_sq_consumer *c, const struct mearas_vgpu_rings *r)
{
	c->ctl = r->sq;
	c->sqes = r->sqes;
	c->entries = r->sq_entries;
	c->head = 0;
}

int mearas_sqc_available(const struct mearas_sq_consumer *c)
{
	uint32_t avail = mearas_load_acquire(&c->ctl->tail) - c->head;

	return avail > c->entries ? -1 : (int)avail;
}

void mearas_sqc_fetch(const struct mearas_sq_consumer *c, struct mearas_sqe *e)
{
	const struct mearas_sqe *slot = &c->sqes[c->head & (c->entries - 1)];

	memcpy(e, slot, offsetof(struct mearas_sqe, inline_payload));
	if (!(e->flags & MEARAS_SQE_PAYLOAD_ARENA) && e->payload_len)
		memcpy(e->inline_payload, slot->inline_payload,
		       e->payload_len < MEARAS_SQE_INLINE ? e->payload_len : MEARAS_SQE_INLINE);
	__builtin_prefetch(&c->sqes[(c->head + 1) & (c->entries - 1)]);
}

/* ---- CQ producer ---- */

void mearas_cqp_init(struct mearas_cq_producer *p, const struct mearas_vgpu_rings *r, unsigned slot)
{
	p->ctl = mearas_cq_ctl(r, slot);
	p->cqes = (struct mearas_cqe *)(p->ctl + 1);
	p->entries = r->cq_entries;
	p->tail = 0;
	__atomic_store_n(&p->ctl->consumer_done, 0, __ATOMIC_RELAXED);
}

bool mearas_cqp_push(struct mearas_cq_producer *p, const struct mearas_cqe *c)
{
	if (p->tail - mearas_load_acquire(&p->ctl->head) >= p->entries)
		return false;
	p->cqes[p->tail & (p->entries - 1)] = *c;
	p->tail++;
	mearas_store_release(&p->ctl->tail, p->tail);
	return true;
}

/* ---- CQ consumer ---- */

void mearas_cqc_init(struct mearas_cq_consumer *c, const struct mearas_vgpu_rings *r, unsigned slot)
{
	c->ctl = mearas_cq_ctl(r, slot);
	c->cqes = (const struct mearas_cqe *)(c->ctl + 1);
	c->entries = r->cq_entries;
	c->head = 0;
}

bool mearas_cqc_pop(struct mearas_cq_consumer *c, struct mearas_cqe *out)
{
	if (mearas_load_acquire(&c->ctl->tail) == c->head)
		return false;
	*out = c->cqes[c->head & (c->entries - 1)];
	c->head++;
	mearas_store_release(&c->ctl->head, c->head);
	return true;
}
