// SPDX-License-Identifier: MIT
/*
 * The data area: host memory shared with (and registered by) the back end.
 * cudaMallocHost/cudaHostAlloc memory and the staging buffers for pageable
 * copies come from here, so copies from them are DMA with no extra copy.
 * A first-fit allocator over sorted block lists.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define DH_ALIGN 256u

struct dh_block {
	uint64_t off, size;
};

static pthread_mutex_t dh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dh_block *used_blocks, *free_blocks;
static size_t nused, nfree, cap_used, cap_free;
static int dh_ready;

static int reserve(struct dh_block **a, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	struct dh_block *p = realloc(*a, n * sizeof(*p));
	if (!p)
		return -1;
	*a = p;
	*cap = n;
	return 0;
}

static size_t lower_bound(const struct dh_block *a, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void insert_at(struct dh_block *a, size_t *n, size_t at, struct dh_block b)
{
	memmove(&a[at + 1], &a[at], (*n - at) * sizeof(b));
	a[at] = b;
	(*n)++;
}

static void remove_at(struct dh_block *a, size_t *n, size_t at)
{
	memmove(&a[at], &a[at + 1], (*n - at - 1) * sizeof(*a));
	(*n)--;
}

void *dh_alloc(uint64_t size)
{
	void *p = NULL;

	if (size == 0)
		size = 1;
	if (size > UINT64_MAX - (DH_ALIGN - 1))
		return NULL; /* rounding up would wrap to a zero-byte block */
	size = (size + DH_ALIGN - 1) / DH_ALIGN * DH_ALIGN;
	pthread_mutex_lock(&dh_lock);
	if (!dh_ready) {
		if (reserve(&free_blocks, &cap_free, 1))
			goto out;
		free_blocks[0] = (struct dh_block){ 0, rt.data_size };
		nfree = 1;
		dh_ready = 1;
	}
	for (size_t i = 0; i < nfree; i++) {
		struct dh_block b;

		if (free_blocks[i].size < size)
			continue;
		if (reserve(&used_blocks, &cap_used, nused + 1))
			break;
		b = (struct dh_block){ free_blocks[i].off, size };
		free_blocks[i].off += size;
		free_blocks[i].size -= size;
		if (!free_blocks[i].size)
			remove_at(free_blocks, &nfree, i);
		insert_at(used_blocks, &nused, lower_bound(used_blocks, nused, b.off), b);
		p = rt.data + b.off;
		break;
	}
out:
	pthread_mutex_unlock(&dh_lock);
	return p;
}

int dh_free(void *ptr)
{
	uint64_t off;
	size_t at;
	struct dh_block b;

	if (!dh_contains(ptr, 1))
		return -1;
	off = (uint64_t)((uint8_t *)ptr - rt.data);
	pthread_mutex_lock(&dh_lock);
	at = lower_bound(used_blocks, nused, off);
	if (at == nused || used_blocks[at].off != off) {
		pthread_mutex_unlock(&dh_lock);
		return -1;
	}
	b = used_blocks[at];
	remove_at(used_blocks, &nused, at);
	if (reserve(&free_blocks, &cap_free, nfree + 1)) {
		pthread_mutex_unlock(&dh_lock);
		return 0; /* the block is lost, not corrupted */
	}
	at = lower_bound(free_blocks, nfree, b.off);
	insert_at(free_blocks, &nfree, at, b);
	if (at + 1 < nfree && free_blocks[at].off + free_blocks[at].size == free_blocks[at + 1].off) {
		free_blocks[at].size += free_blocks[at + 1].size;
		remove_at(free_blocks, &nfree, at + 1);
	}
	if (at > 0 && free_blocks[at - 1].off + free_blocks[at - 1].size == free_blocks[at].off) {
		free_blocks[at - 1].size += free_blocks[at].size;
		remove_at(free_blocks, &nfree, at);
	}
	pthread_mutex_unlock(&dh_lock);
	return 0;
}

bool dh_contains(const void *p, uint64_t len)
{
	const uint8_t *c = p;

	if (!rt.data || c < rt.data || c >= rt.data + rt.data_size)
		return false;
	return len <= rt.data_size - (uint64_t)(c - rt.data);
}

uint64_t dh_offset(const void *p)
{
	return (uint64_t)((const uint8_t *)p - rt.data);
}

bool dh_block(const void *p, void **base, uint64_t *size)
{
	uint64_t off;
	size_t at;
	bool found = false;

	if (!dh_contains(p, 1))
		return false;
	off = dh_offset(p);
	pthread_mutex_lock(&dh_lock);
	at = lower_bound(used_blocks, nused, off + 1);
	if (at > 0 && off - used_blocks[at - 1].off < used_blocks[at - 1].size) {
		*base = rt.data + used_blocks[at - 1].off;
		*size = used_blocks[at - 1].size;
		found = true;
	}
	pthread_mutex_unlock(&dh_lock);
	return found;
}
