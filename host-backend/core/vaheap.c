// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/dynarray.h"
#include "vaheap.h"

#define ALLOC_ALIGN 256u        /* cudaMalloc's alignment guarantee */
/* Fully free chunks this large are unmapped; smaller ones are kept for
 * reuse while all the free chunks kept come to at most this much, so the
 * device memory a heap holds beyond its allocations stays bounded whatever
 * sizes a client allocates and frees. */
#define LARGE_CHUNK (64u << 20)

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	void *p = mearas_dynarray_grow(*arr, cap, need, elem, 16);

	if (!p)
		return -ENOMEM;
	*arr = p;
	return 0;
}

/* First index whose va is > va. */
static size_t upper_bound(const struct vaheap_range *r, size_t n, uint64_t va)
{
	return MEARAS_DYNARRAY_UPPER_BOUND(r, n, va, va);
}

static int range_insert(struct vaheap_range **arr, size_t *n, size_t *cap, struct vaheap_range v)
{
	if (grow((void **)arr, cap, *n + 1, sizeof(**arr)))
		return -ENOMEM;
	mearas_dynarray_insert(*arr, n, upper_bound(*arr, *n, v.va), &v, sizeof(v));
	return 0;
}

static void range_remove(struct vaheap_range *arr, size_t *n, size_t at)
{
	memmove(&arr[at], &arr[at + 1], (*n - at - 1) * sizeof(*arr));
	(*n)--;
}

void vaheap_init(struct vaheap *h, uint64_t base, uint64_t size, uint64_t granularity,
		 uint64_t quota, const struct vaheap_ops *ops, void *ctx)
{
	memset(h, 0, sizeof(*h));
	h->base = base;
	h->size = size;
	h->granularity = granularity ? granularity : VAHEAP_DEFAULT_GRANULARITY;
	h->chunk_min = align_up(32u << 20, h->granularity);
	h->quota = quota;
	h->ops = ops;
	h->ctx = ctx;
}

/* Lowest free stretch of the window that holds size bytes at an address
 * aligned to align (a power of two). */
static int find_window_gap(const struct vaheap *h, uint64_t size, uint64_t align, uint64_t *va)
{
	uint64_t cur = align_up(h->base, align);

	for (size_t i = 0; i < h->nchunks; i++) {
		if (h->chunks[i].va >= cur && h->chunks[i].va - cur >= size) {
			*va = cur;
			return 0;
		}
		if (h->chunks[i].va + h->chunks[i].size > cur)
			cur = align_up(h->chunks[i].va + h->chunks[i].size, align);
	}
	if (cur >= h->base && cur - h->base <= h->size && h->base + h->size - cur >= size) {
		*va = cur;
		return 0;
	}
	return -ENOSPC;
}

/* Puts c in the sorted chunk table (room made by the caller): its index. */
static size_t insert_chunk(struct vaheap *h, struct vaheap_chunk c)
{
	size_t at;

	for (at = 0; at < h->nchunks && h->chunks[at].va < c.va; at++)
		;
	mearas_dynarray_insert(h->chunks, &h->nchunks, at, &c, sizeof(c));
	/* chunk indices at and above shifted by one */
	for (size_t i = 0; i < h->nallocs; i++)
		if (h->allocs[i].chunk >= at)
			h->allocs[i].chunk++;
	for (size_t i = 0; i < h->nfrees; i++)
		if (h->frees[i].chunk >= at)
			h->frees[i].chunk++;
	return at;
}

static void remove_chunk(struct vaheap *h, size_t ci)
{
	memmove(&h->chunks[ci], &h->chunks[ci + 1], (h->nchunks - ci - 1) * sizeof(h->chunks[0]));
	h->nchunks--;
	for (size_t i = 0; i < h->nallocs; i++)
		if (h->allocs[i].chunk > ci)
			h->allocs[i].chunk--;
	for (size_t i = 0; i < h->nfrees; i++)
		if (h->frees[i].chunk > ci)
			h->frees[i].chunk--;
}

static int add_chunk(struct vaheap *h, uint64_t need)
{
	uint64_t size = align_up(need, h->granularity), va;
	size_t at;
	void *cookie;

	if (size < h->chunk_min)
		size = h->chunk_min;
	if (find_window_gap(h, size, h->granularity, &va))
		return -ENOSPC;
	if (grow((void **)&h->chunks, &h->cap_chunks, h->nchunks + 1, sizeof(*h->chunks)) ||
	    grow((void **)&h->frees, &h->cap_frees, h->nfrees + 1, sizeof(*h->frees)))
		return -ENOMEM;
	if (h->ops->map(h->ctx, va, size, &cookie))
		return -ENOMEM;
	at = insert_chunk(h, (struct vaheap_chunk){ .va = va, .size = size, .used = 0, .cookie = cookie });
	return range_insert(&h->frees, &h->nfrees, &h->cap_frees,
			    (struct vaheap_range){ .va = va, .size = size, .chunk = at });
}

int vaheap_alloc(struct vaheap *h, uint64_t size, uint64_t *va)
{
	uint64_t need;

	if (size == 0 || size > h->size)
		return 2;
	need = align_up(size, ALLOC_ALIGN);
	if (h->used + need > h->quota || h->used + need < h->used)
		return 2;
	if (h->ops->charge && h->ops->charge(h->ctx, need))
		return 2;
	for (int attempt = 0; attempt < 2; attempt++) {
		for (size_t i = 0; i < h->nfrees; i++) {
			struct vaheap_range *f = &h->frees[i];
			struct vaheap_range a;

			if (f->size < need)
				continue;
			a = (struct vaheap_range){ .va = f->va, .size = need, .chunk = f->chunk };
			if (grow((void **)&h->allocs, &h->cap_allocs, h->nallocs + 1, sizeof(*h->allocs)))
				goto fail;
			f->va += need;
			f->size -= need;
			if (f->size == 0)
				range_remove(h->frees, &h->nfrees, i);
			range_insert(&h->allocs, &h->nallocs, &h->cap_allocs, a);
			h->chunks[a.chunk].used += need;
			h->used += need;
			*va = a.va;
			return 0;
		}
		if (attempt == 0 && add_chunk(h, need))
			goto fail;
	}
fail:
	if (h->ops->uncharge)
		h->ops->uncharge(h->ctx, need);
	return 2;
}

/* Device memory of the heap's fully free chunks, ci's left out. */
static uint64_t idle_bytes_besides(const struct vaheap *h, size_t ci)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < h->nchunks; i++)
		if (i != ci && !h->chunks[i].reserved && h->chunks[i].used == 0)
			sum += h->chunks[i].size;
	return sum;
}

static void release_chunk_if_idle(struct vaheap *h, size_t ci)
{
	struct vaheap_chunk c = h->chunks[ci];

	if (c.used != 0 || c.reserved)
		return;
	if (c.size < LARGE_CHUNK && idle_bytes_besides(h, ci) <= LARGE_CHUNK - c.size)
		return;
	for (size_t i = 0; i < h->nfrees; i++) {
		if (h->frees[i].chunk == ci) {
			range_remove(h->frees, &h->nfrees, i);
			break;
		}
	}
	h->ops->unmap(h->ctx, c.va, c.size, c.cookie);
	remove_chunk(h, ci);
}

int vaheap_free(struct vaheap *h, uint64_t va)
{
	size_t at = upper_bound(h->allocs, h->nallocs, va);
	struct vaheap_range a;
	size_t fi;

	if (at == 0 || h->allocs[at - 1].va != va || h->allocs[at - 1].vmm)
		return 1;
	a = h->allocs[at - 1];
	range_remove(h->allocs, &h->nallocs, at - 1);
	h->used -= a.size;
	h->chunks[a.chunk].used -= a.size;
	if (h->ops->uncharge)
		h->ops->uncharge(h->ctx, a.size);
	/* insert as a free extent, merging with neighbours of the same chunk */
	fi = upper_bound(h->frees, h->nfrees, a.va);
	if (fi > 0) {
		struct vaheap_range *p = &h->frees[fi - 1];

		if (p->chunk == a.chunk && p->va + p->size == a.va) {
			p->size += a.size;
			if (fi < h->nfrees && h->frees[fi].chunk == a.chunk &&
			    p->va + p->size == h->frees[fi].va) {
				p->size += h->frees[fi].size;
				range_remove(h->frees, &h->nfrees, fi);
			}
			release_chunk_if_idle(h, a.chunk);
			return 0;
		}
	}
	if (fi < h->nfrees && h->frees[fi].chunk == a.chunk && a.va + a.size == h->frees[fi].va) {
		h->frees[fi].va = a.va;
		h->frees[fi].size += a.size;
	} else if (range_insert(&h->frees, &h->nfrees, &h->cap_frees, a)) {
		return 0; /* out of memory for bookkeeping: the extent is leaked, not corrupted */
	}
	release_chunk_if_idle(h, a.chunk);
	return 0;
}

int vaheap_set_tag(struct vaheap *h, uint64_t va, void *tag)
{
	size_t at = upper_bound(h->allocs, h->nallocs, va);

	if (at == 0 || h->allocs[at - 1].va != va || h->allocs[at - 1].vmm)
		return 1; /* cudaErrorInvalidValue */
	h->allocs[at - 1].tag = tag;
	return 0;
}

const struct vaheap_range *vaheap_find(const struct vaheap *h, uint64_t va, uint64_t len)
{
	size_t at = upper_bound(h->allocs, h->nallocs, va);
	const struct vaheap_range *a;

	if (at == 0)
		return NULL;
	a = &h->allocs[at - 1];
	if (va - a->va >= a->size)
		return NULL;
	if (len <= a->size - (va - a->va))
		return a;
	if (!a->vmm)
		return NULL;
	/* adjacent mappings of the same reservation are one stretch of memory */
	{
		uint64_t end = a->va + a->size, left = len - (end - va);

		for (size_t i = at; i < h->nallocs; i++) {
			const struct vaheap_range *b = &h->allocs[i];

			if (!b->vmm || b->chunk != a->chunk || b->va != end)
				return NULL;
			if (left <= b->size)
				return a;
			left -= b->size;
			end += b->size;
		}
	}
	return NULL;
}

const struct vaheap_chunk *vaheap_chunk_of(const struct vaheap *h, uint64_t va)
{
	size_t lo = 0, hi = h->nchunks;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (h->chunks[mid].va + h->chunks[mid].size <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->nchunks && h->chunks[lo].va <= va)
		return &h->chunks[lo];
	return NULL;
}

/* ---- virtual memory management ---- */

static bool granular(const struct vaheap *h, uint64_t v)
{
	return v % h->granularity == 0;
}

int vaheap_reserve(struct vaheap *h, uint64_t size, uint64_t align, uint64_t hint, uint64_t *va)
{
	uint64_t at = 0;
	void *cookie = NULL;
	bool placed = false;

	if (size == 0 || !granular(h, size) || (align & (align - 1)))
		return 1;
	if (size > h->size)
		return 2;
	if (align < h->granularity)
		align = h->granularity;
	if (hint && hint % align == 0 && hint >= h->base && hint - h->base <= h->size &&
	    h->size - (hint - h->base) >= size) {
		/* the hint holds if no chunk meets [hint, hint+size) */
		placed = true;
		for (size_t i = 0; i < h->nchunks; i++)
			if (h->chunks[i].va < hint + size && hint < h->chunks[i].va + h->chunks[i].size)
				placed = false;
		at = hint;
	}
	if (!placed && find_window_gap(h, size, align, &at))
		return 2;
	if (grow((void **)&h->chunks, &h->cap_chunks, h->nchunks + 1, sizeof(*h->chunks)))
		return 2;
	if (h->ops->reserve && h->ops->reserve(h->ctx, at, size, &cookie))
		return 2;
	insert_chunk(h, (struct vaheap_chunk){ .va = at, .size = size, .cookie = cookie, .reserved = 1 });
	*va = at;
	return 0;
}

static size_t chunk_index(const struct vaheap *h, const struct vaheap_chunk *c)
{
	return (size_t)(c - h->chunks);
}

const struct vaheap_chunk *vaheap_reservation(const struct vaheap *h, uint64_t va, uint64_t len)
{
	const struct vaheap_chunk *c = vaheap_chunk_of(h, va);

	if (!c || !c->reserved || len > c->size - (va - c->va))
		return NULL;
	return c;
}

int vaheap_reserve_free(struct vaheap *h, uint64_t va, uint64_t size)
{
	const struct vaheap_chunk *c = vaheap_reservation(h, va, 1);
	size_t ci;

	if (!c || c->va != va || c->size != size)
		return 1;
	ci = chunk_index(h, c);
	for (size_t i = 0; i < h->nallocs; i++)
		if (h->allocs[i].chunk == ci)
			return 1;
	if (h->ops->release)
		h->ops->release(h->ctx, c->va, c->size, c->cookie);
	remove_chunk(h, ci);
	return 0;
}

int vaheap_map(struct vaheap *h, uint64_t va, uint64_t size, void *tag)
{
	const struct vaheap_chunk *c;
	size_t at;

	if (size == 0 || !granular(h, va) || !granular(h, size) || !(c = vaheap_reservation(h, va, size)))
		return 1;
	/* no mapping may meet [va, va+size): the one before ends by va, the next starts after */
	at = upper_bound(h->allocs, h->nallocs, va);
	if (at > 0 && h->allocs[at - 1].va + h->allocs[at - 1].size > va)
		return 1;
	if (at < h->nallocs && h->allocs[at].va < va + size)
		return 1;
	if (range_insert(&h->allocs, &h->nallocs, &h->cap_allocs,
			 (struct vaheap_range){ .va = va, .size = size, .chunk = chunk_index(h, c), .tag = tag,
						.vmm = 1 }))
		return 2;
	return 0;
}

int vaheap_unmap(struct vaheap *h, uint64_t va, uint64_t size,
		 void (*fn)(void *arg, const struct vaheap_range *r), void *arg)
{
	size_t first, n = 0;
	uint64_t end = va;

	if (size == 0 || !vaheap_reservation(h, va, size))
		return 1;
	first = upper_bound(h->allocs, h->nallocs, va);
	if (first == 0 || h->allocs[first - 1].va != va)
		return 1;
	first--;
	/* whole mappings, one after the other, exactly to va+size */
	while (end - va < size) {
		const struct vaheap_range *r;

		if (first + n >= h->nallocs)
			return 1;
		r = &h->allocs[first + n];
		if (!r->vmm || r->va != end || r->size > size - (end - va))
			return 1;
		end += r->size;
		n++;
	}
	for (size_t i = 0; i < n; i++)
		if (fn)
			fn(arg, &h->allocs[first + i]);
	memmove(&h->allocs[first], &h->allocs[first + n], (h->nallocs - first - n) * sizeof(*h->allocs));
	h->nallocs -= n;
	return 0;
}

int vaheap_charge(struct vaheap *h, uint64_t bytes)
{
	if (h->used + bytes > h->quota || h->used + bytes < h->used)
		return 2;
	if (h->ops->charge && h->ops->charge(h->ctx, bytes))
		return 2;
	h->used += bytes;
	return 0;
}

void vaheap_uncharge(struct vaheap *h, uint64_t bytes)
{
	if (bytes > h->used)
		bytes = h->used;
	h->used -= bytes;
	if (h->ops->uncharge)
		h->ops->uncharge(h->ctx, bytes);
}

void vaheap_destroy(struct vaheap *h)
{
	if (h->used && h->ops && h->ops->uncharge)
		h->ops->uncharge(h->ctx, h->used);
	for (size_t i = 0; i < h->nchunks; i++) {
		const struct vaheap_chunk *c = &h->chunks[i];

		if (!c->reserved)
			h->ops->unmap(h->ctx, c->va, c->size, c->cookie);
		else if (h->ops->release)
			h->ops->release(h->ctx, c->va, c->size, c->cookie);
	}
	free(h->chunks);
	free(h->allocs);
	free(h->frees);
	h->chunks = NULL;
	h->allocs = h->frees = NULL;
	h->nchunks = h->nallocs = h->nfrees = 0;
	h->cap_chunks = h->cap_allocs = h->cap_frees = 0;
	h->used = 0;
}
