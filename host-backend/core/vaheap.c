// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vaheap.h"

#define ALLOC_ALIGN 256u        /* cudaMalloc's alignment guarantee */
#define LARGE_CHUNK (64u << 20) /* fully free chunks this large are unmapped */

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	void *p;
	size_t ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* First index whose va is > va. */
static size_t upper_bound(const struct vaheap_range *r, size_t n, uint64_t va)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r[mid].va <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int range_insert(struct vaheap_range **arr, size_t *n, size_t *cap, struct vaheap_range v)
{
	size_t at;

	if (grow((void **)arr, cap, *n + 1, sizeof(**arr)))
		return -ENOMEM;
	at = upper_bound(*arr, *n, v.va);
	memmove(&(*arr)[at + 1], &(*arr)[at], (*n - at) * sizeof(**arr));
	(*arr)[at] = v;
	(*n)++;
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
	h->granularity = granularity ? granularity : (2u << 20);
	h->chunk_min = align_up(32u << 20, h->granularity);
	h->quota = quota;
	h->ops = ops;
	h->ctx = ctx;
}

/* Lowest free stretch of the window that holds size bytes. */
static int find_window_gap(const struct vaheap *h, uint64_t size, uint64_t *va)
{
	uint64_t cur = h->base;

	for (size_t i = 0; i < h->nchunks; i++) {
		if (h->chunks[i].va - cur >= size) {
			*va = cur;
			return 0;
		}
		cur = h->chunks[i].va + h->chunks[i].size;
	}
	if (h->base + h->size - cur >= size) {
		*va = cur;
		return 0;
	}
	return -ENOSPC;
}

static int add_chunk(struct vaheap *h, uint64_t need)
{
	uint64_t size = align_up(need, h->granularity), va;
	struct vaheap_chunk c;
	size_t at;
	void *cookie;

	if (size < h->chunk_min)
		size = h->chunk_min;
	if (find_window_gap(h, size, &va))
		return -ENOSPC;
	if (grow((void **)&h->chunks, &h->cap_chunks, h->nchunks + 1, sizeof(*h->chunks)) ||
	    grow((void **)&h->frees, &h->cap_frees, h->nfrees + 1, sizeof(*h->frees)))
		return -ENOMEM;
	if (h->ops->map(h->ctx, va, size, &cookie))
		return -ENOMEM;
	c = (struct vaheap_chunk){ .va = va, .size = size, .used = 0, .cookie = cookie };
	for (at = 0; at < h->nchunks && h->chunks[at].va < va; at++)
		;
	memmove(&h->chunks[at + 1], &h->chunks[at], (h->nchunks - at) * sizeof(c));
	h->chunks[at] = c;
	h->nchunks++;
	/* chunk indices at and above shifted by one */
	for (size_t i = 0; i < h->nallocs; i++)
		if (h->allocs[i].chunk >= at)
			h->allocs[i].chunk++;
	for (size_t i = 0; i < h->nfrees; i++)
		if (h->frees[i].chunk >= at)
			h->frees[i].chunk++;
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

static void release_chunk_if_idle(struct vaheap *h, size_t ci)
{
	struct vaheap_chunk c = h->chunks[ci];

	if (c.used != 0 || c.size < LARGE_CHUNK)
		return;
	for (size_t i = 0; i < h->nfrees; i++) {
		if (h->frees[i].chunk == ci) {
			range_remove(h->frees, &h->nfrees, i);
			break;
		}
	}
	h->ops->unmap(h->ctx, c.va, c.size, c.cookie);
	memmove(&h->chunks[ci], &h->chunks[ci + 1], (h->nchunks - ci - 1) * sizeof(c));
	h->nchunks--;
	for (size_t i = 0; i < h->nallocs; i++)
		if (h->allocs[i].chunk > ci)
			h->allocs[i].chunk--;
	for (size_t i = 0; i < h->nfrees; i++)
		if (h->frees[i].chunk > ci)
			h->frees[i].chunk--;
}

int vaheap_free(struct vaheap *h, uint64_t va)
{
	size_t at = upper_bound(h->allocs, h->nallocs, va);
	struct vaheap_range a;
	size_t fi;

	if (at == 0 || h->allocs[at - 1].va != va)
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

	if (at == 0 || h->allocs[at - 1].va != va)
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
	if (va - a->va >= a->size || len > a->size - (va - a->va))
		return NULL;
	return a;
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

void vaheap_destroy(struct vaheap *h)
{
	if (h->used && h->ops && h->ops->uncharge)
		h->ops->uncharge(h->ctx, h->used);
	for (size_t i = 0; i < h->nchunks; i++)
		h->ops->unmap(h->ctx, h->chunks[i].va, h->chunks[i].size, h->chunks[i].cookie);
	free(h->chunks);
	free(h->allocs);
	free(h->frees);
	h->chunks = NULL;
	h->allocs = h->frees = NULL;
	h->nchunks = h->nallocs = h->nfrees = 0;
	h->cap_chunks = h->cap_allocs = h->cap_frees = 0;
	h->used = 0;
}
