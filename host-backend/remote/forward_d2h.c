// SPDX-License-Identifier: MIT
/*
 * Device-to-host copies in flight on a remote vGPU (forward.h): their bytes
 * reach this node's data area only when a reply brings them, but a record
 * forwarded before then may read them (a host-to-device copy from the same
 * pinned buffer, later on the same stream). The forwarder keeps the rows of
 * every device-to-host copy it sent until the serving node's DONE item for
 * it has been applied, and sends such a record without the bytes those rows
 * cover: the serving node's copy of the data area has them by the time the
 * record runs (stream order), and the client's copy may still hold the old
 * ones. The forwarder never waits.
 */
#include <pthread.h>
#include <stdlib.h>

#include "forward.h"
#include "mearas/dynarray.h"

/* A device-to-host copy goes out: its rows are in flight until its DONE. */
bool d2h_track(struct remote_vgpu *rv, const struct mearas_span *r, uint64_t len, uint32_t *id)
{
	struct d2h_flight f = { .r = *r, .end = r->off + len }, *n;

	/* ids repeat after 2^32 copies: a copy in flight that long is not expected */
	f.id = ++rv->next_done_id;
	pthread_mutex_lock(&rv->d2h_lock);
	n = mearas_dynarray_grow(rv->d2h, &rv->cap_d2h, (size_t)rv->nd2h + 1, sizeof(f), 16);
	if (!n) {
		pthread_mutex_unlock(&rv->d2h_lock);
		return false;
	}
	rv->d2h = n;
	rv->d2h[rv->nd2h] = f;
	__atomic_store_n(&rv->nd2h, rv->nd2h + 1, __ATOMIC_RELEASE);
	if (f.r.off < rv->d2h_lo)
		rv->d2h_lo = f.r.off;
	if (f.end > rv->d2h_hi)
		rv->d2h_hi = f.end;
	pthread_mutex_unlock(&rv->d2h_lock);
	*id = f.id;
	return true;
}

/* On the receive thread: the copy's bytes have landed (or will never come). */
void d2h_done(struct remote_vgpu *rv, uint32_t id)
{
	pthread_mutex_lock(&rv->d2h_lock);
	for (uint32_t i = 0; i < rv->nd2h; i++) {
		if (rv->d2h[i].id != id)
			continue;
		rv->d2h[i] = rv->d2h[rv->nd2h - 1];
		__atomic_store_n(&rv->nd2h, rv->nd2h - 1, __ATOMIC_RELEASE);
		break;
	}
	if (!rv->nd2h) {
		rv->d2h_lo = UINT64_MAX;
		rv->d2h_hi = 0;
	}
	pthread_mutex_unlock(&rv->d2h_lock);
}

static bool spans_add(struct span **v, size_t *n, size_t *cap, uint64_t a, uint64_t b)
{
	struct span *nv = mearas_dynarray_grow(*v, cap, *n + 1, sizeof(*nv), 16);

	if (!nv)
		return false;
	*v = nv;
	nv[(*n)++] = (struct span){ a, b };
	return true;
}

static int span_cmp(const void *x, const void *y)
{
	const struct span *a = x, *b = y;

	return a->a < b->a ? -1 : a->a > b->a;
}

/* Under the lock: the parts of [a, b) that the rows of f write, into the list. */
static bool d2h_cover(const struct d2h_flight *f, uint64_t a, uint64_t b, struct span **v, size_t *n, size_t *cap)
{
	const struct mearas_span *r = &f->r;
	uint64_t k, k_end;

	if (f->end <= a || r->off >= b)
		return true;
	if (r->rows == 1 || r->width == r->pitch)
		return spans_add(v, n, cap, r->off > a ? r->off : a, f->end < b ? f->end : b);
	/* rows k with off + k * pitch < b and off + k * pitch + width > a */
	k = a < r->off + r->width ? 0 : (a - r->off - r->width) / r->pitch + 1;
	k_end = (b - r->off + r->pitch - 1) / r->pitch;
	if (k_end > r->rows)
		k_end = r->rows;
	for (; k < k_end; k++) {
		uint64_t x = r->off + k * r->pitch, y = x + r->width;

		if (!spans_add(v, n, cap, x > a ? x : a, y < b ? y : b))
			return false;
	}
	return true;
}

/*
 * The parts of [off, off + len) of the data area that no device-to-host copy
 * in flight writes: *out (malloc'd, *n of them). false when the whole range
 * is free of them (the common case, *out untouched), or when out of memory
 * (then the whole range goes, as before this check existed).
 */
bool d2h_uncovered(struct remote_vgpu *rv, uint64_t off, uint64_t len, struct span **out, size_t *n)
{
	struct span *c = NULL, *u = NULL;
	size_t nc = 0, cap = 0, nu = 0, ucap = 0;
	uint64_t end = off + len, at = off;
	bool ok = true;

	if (!__atomic_load_n(&rv->nd2h, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&rv->d2h_lock);
	if (end > rv->d2h_lo && off < rv->d2h_hi)
		for (uint32_t i = 0; ok && i < rv->nd2h; i++)
			ok = d2h_cover(&rv->d2h[i], off, end, &c, &nc, &cap);
	pthread_mutex_unlock(&rv->d2h_lock);
	if (!ok || !nc) {
		free(c);
		return false;
	}
	qsort(c, nc, sizeof(*c), span_cmp);
	for (size_t i = 0; ok && i < nc; i++) {
		if (c[i].a > at)
			ok = spans_add(&u, &nu, &ucap, at, c[i].a);
		if (c[i].b > at)
			at = c[i].b;
	}
	if (ok && at < end)
		ok = spans_add(&u, &nu, &ucap, at, end);
	free(c);
	if (!ok) {
		free(u);
		return false;
	}
	*out = u;
	*n = nu;
	return true;
}
