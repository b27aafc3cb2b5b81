// SPDX-License-Identifier: MIT
/*
 * Mapped host memory on a remote vGPU. The program's kernels write pinned
 * host memory of the forwarding node through the device; a remote GPU
 * reaches only the serving node's copy of the data area (mapped at the same
 * address, so the pointers agree). Both nodes keep, per mapped range, a
 * shadow: the bytes as both sides last agreed on them. The bytes where a
 * node's data area differs from its shadow are what that node changed
 * since: the forwarder sends the host's changes before each launch
 * (forward_mapped.c), the serving node sends the device's changes before
 * each completion it reports. Runs of changed bytes closer than MAPPED_GAP
 * go as one piece (a kernel that changes one byte of every word would
 * otherwise make a piece per byte); the receiver writes only the bytes of a
 * piece that differ from its own shadow, so the unchanged bytes between the
 * runs leave what its side wrote there alone: host and device may write
 * different bytes of one range (as CUDA allows) without overwriting each
 * other's.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "mapped.h"

/* Runs of changed bytes less than this apart go as one piece. */
#define MAPPED_GAP 256u

struct mapped_entry {
	uint64_t off, size;
	uint8_t *shadow;
};

struct remote_mapped {
	pthread_mutex_t lock;
	struct mapped_entry *e;
	uint32_t n, cap;
	uint32_t count;         /* atomic copy of n for the lock-free check */
	struct remote_budget *budget; /* shadows and the table are taken from it (NULL: none) */
};

struct remote_mapped *remote_mapped_new(void)
{
	struct remote_mapped *m = calloc(1, sizeof(*m));

	if (m)
		pthread_mutex_init(&m->lock, NULL);
	return m;
}

void remote_mapped_set_budget(struct remote_mapped *m, struct remote_budget *b)
{
	m->budget = b;
}

void remote_mapped_free(struct remote_mapped *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->n; i++) {
		free(m->e[i].shadow);
		remote_budget_give(m->budget, m->e[i].size);
	}
	free(m->e);
	remote_budget_give(m->budget, (uint64_t)m->cap * sizeof(*m->e));
	pthread_mutex_destroy(&m->lock);
	free(m);
}

bool remote_mapped_any(const struct remote_mapped *m)
{
	return m && __atomic_load_n(&m->count, __ATOMIC_ACQUIRE) != 0;
}

static void drop_at(struct remote_mapped *m, uint32_t i)
{
	free(m->e[i].shadow);
	remote_budget_give(m->budget, m->e[i].size);
	m->e[i] = m->e[--m->n];
}

bool remote_mapped_set(struct remote_mapped *m, const uint8_t *base, uint64_t off, uint64_t size, bool on)
{
	bool ok = true;

	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; i < m->n; i++) {
		if (m->e[i].off == off) {
			drop_at(m, i); /* mapped again: a fresh shadow */
			break;
		}
	}
	if (on) {
		/* a full copy of the range: the budget says whether this link may have it */
		uint8_t *shadow = NULL;

		if (remote_budget_take(m->budget, size, "a mapped-range shadow")) {
			shadow = malloc(size);
			if (!shadow)
				remote_budget_give(m->budget, size);
		}
		if (!shadow) {
			ok = false;
		} else if (m->n == m->cap) {
			struct mapped_entry *ne = remote_budget_grow(m->budget, m->e, &m->cap, sizeof(*m->e), 8,
								     "the mapped-range table");

			if (!ne) {
				free(shadow);
				remote_budget_give(m->budget, size);
				ok = false;
			} else {
				m->e = ne;
			}
		}
		if (ok) {
			memcpy(shadow, base + off, size);
			m->e[m->n++] = (struct mapped_entry){ off, size, shadow };
		}
	}
	__atomic_store_n(&m->count, m->n, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&m->lock);
	return ok;
}

/* The part of [off, off + len) inside entry x: false when none. */
static bool overlap(const struct mapped_entry *x, uint64_t off, uint64_t len, uint64_t *from, uint64_t *to)
{
	uint64_t a = off > x->off ? off : x->off;
	uint64_t b = off + len < x->off + x->size ? off + len : x->off + x->size;

	*from = a;
	*to = b;
	return a < b;
}

void remote_mapped_absorb(struct remote_mapped *m, const uint8_t *base, uint64_t off, uint64_t len)
{
	if (!remote_mapped_any(m))
		return;
	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; i < m->n; i++) {
		uint64_t a, b;

		if (overlap(&m->e[i], off, len, &a, &b))
			memcpy(m->e[i].shadow + (a - m->e[i].off), base + a, b - a);
	}
	pthread_mutex_unlock(&m->lock);
}

/* Bytes of a piece that differ from the shadow are the other node's
 * changes: into the data area and the shadow. Equal ones are left alone in
 * the data area, which may hold this node's own newer write there. */
static void apply_changes(uint8_t *data, uint8_t *shadow, const uint8_t *in, uint64_t len)
{
	uint64_t i = 0;

	while (i < len) {
		uint64_t x, y;

		if (i + 8 <= len) {
			memcpy(&x, in + i, 8);
			memcpy(&y, shadow + i, 8);
			if (x == y) {
				i += 8;
				continue;
			}
		}
		if (in[i] != shadow[i])
			data[i] = shadow[i] = in[i];
		i++;
	}
}

static bool in_some_range(const struct remote_mapped *m, uint64_t at)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (at - m->e[i].off < m->e[i].size)
			return true;
	return false;
}

void remote_mapped_write(struct remote_mapped *m, uint8_t *base, uint64_t off, const void *bytes, uint64_t len)
{
	const uint8_t *in = bytes;
	bool whole = false;

	pthread_mutex_lock(&m->lock);
	/* ranges may overlap: each one's shadow takes the changes it sees */
	for (uint32_t i = 0; i < m->n; i++) {
		uint64_t a, b;

		if (!overlap(&m->e[i], off, len, &a, &b))
			continue;
		apply_changes(base + a, m->e[i].shadow + (a - m->e[i].off), in + (a - off), b - a);
		whole |= a == off && b == off + len;
	}
	/* bytes outside every range (one unmapped while the piece was on its
	 * way) go in as they are */
	for (uint64_t k = 0; !whole && k < len; k++)
		if (!in_some_range(m, off + k))
			base[off + k] = in[k];
	pthread_mutex_unlock(&m->lock);
}

/* Next run of differing bytes in [*pos, end) of cur vs old; false when none. */
static bool next_run(const uint8_t *cur, const uint8_t *old, uint64_t *pos, uint64_t end, uint64_t *run_end)
{
	uint64_t i = *pos;

	/* whole words first: mapped ranges are mostly unchanged */
	while (i + 8 <= end) {
		uint64_t x, y;

		memcpy(&x, cur + i, 8);
		memcpy(&y, old + i, 8);
		if (x != y)
			break;
		i += 8;
	}
	while (i < end && cur[i] == old[i])
		i++;
	if (i >= end)
		return false;
	*pos = i;
	while (i < end && cur[i] != old[i])
		i++;
	*run_end = i;
	return true;
}

uint64_t remote_mapped_diff(struct remote_mapped *m, const uint8_t *base, remote_mapped_emit_fn emit, void *ctx)
{
	uint64_t sent = 0;

	if (!remote_mapped_any(m))
		return 0;
	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; i < m->n; i++) {
		struct mapped_entry *x = &m->e[i];
		const uint8_t *cur = base + x->off;
		uint64_t pos = 0, end, next, next_end;

		while (next_run(cur, x->shadow, &pos, x->size, &end)) {
			/* runs closer than MAPPED_GAP join: the bytes between are
			 * unchanged here (equal to the shadow), and the receiver skips
			 * what equals its shadow */
			for (next = end; next_run(cur, x->shadow, &next, x->size, &next_end) && next - end < MAPPED_GAP;
			     next = next_end)
				end = next_end;
			memcpy(x->shadow + pos, cur + pos, end - pos);
			/* from the shadow: what goes is exactly what is recorded as sent */
			if (emit(ctx, x->off + pos, x->shadow + pos, end - pos))
				break; /* the link failed: the rest does not matter */
			sent += end - pos;
			pos = end;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return sent;
}
