// SPDX-License-Identifier: MIT
/*
 * Managed memory (cudaMallocManaged, cuMemAllocManaged) as zero-copy memory:
 * page-locked blocks of the data area, mapped for the device, whose host
 * address is also their device address (unified addressing, the region at
 * the back end's address). Host and device reach the same bytes, the device
 * over the bus: slower than device memory, never stale (on remote vGPUs the
 * blocks are followed as mapped memory is). Prefetches and advice are
 * accepted and change nothing; the total is bounded by the data area
 * (MEARAS_DATA_MB). The blocks are kept in a list so frees, attribute
 * queries and prefetches know them.
 */
#include <pthread.h>
#include <stdlib.h>

#include "mearas/log.h"
#include "core.h"

struct managed_block {
	uintptr_t base;
	uint64_t size;
	struct managed_block *next;
};

static struct managed_block *blocks;
static pthread_mutex_t managed_lock = PTHREAD_MUTEX_INITIALIZER;

cudaError_t rt_managed_alloc(void **p, uint64_t size)
{
	struct managed_block *b;
	cudaError_t e = rt_need(rt_ensure(), p && size);

	if (e)
		return e;
	if (!rt.same_address) {
		log_warn("managed memory is not supported here: the data area is not at the back end's address "
			 "(its host pointers would mean nothing on the device)");
		return cudaErrorNotSupported;
	}
	b = malloc(sizeof(*b));
	*p = b ? dh_alloc(size) : NULL;
	if (!*p) {
		free(b);
		log_warn("managed allocation of %llu bytes does not fit the data area (%llu MiB), where mearas keeps "
			 "managed memory: raise MEARAS_DATA_MB", (unsigned long long)size,
			 (unsigned long long)(rt.data_size >> 20));
		return cudaErrorMemoryAllocation;
	}
	rt_host_allocated(*p, size, true);
	*b = (struct managed_block){ .base = (uintptr_t)*p, .size = size };
	pthread_mutex_lock(&managed_lock);
	b->next = blocks;
	blocks = b;
	pthread_mutex_unlock(&managed_lock);
	return cudaSuccess;
}

bool rt_managed_free(void *p)
{
	struct managed_block **pp, *b = NULL;

	pthread_mutex_lock(&managed_lock);
	for (pp = &blocks; *pp; pp = &(*pp)->next) {
		if ((*pp)->base == (uintptr_t)p) {
			b = *pp;
			*pp = b->next;
			break;
		}
	}
	pthread_mutex_unlock(&managed_lock);
	if (!b)
		return false;
	rt_host_unmapped(p);
	dh_free(p);
	free(b);
	return true;
}

/* the block holding p (*block, a copy: blocks are freed under the lock) */
static bool block_of(const void *p, struct managed_block *block)
{
	uintptr_t a = (uintptr_t)p;
	bool found = false;

	pthread_mutex_lock(&managed_lock);
	for (const struct managed_block *b = blocks; b && !found; b = b->next) {
		found = a >= b->base && a - b->base < b->size;
		if (found)
			*block = *b;
	}
	pthread_mutex_unlock(&managed_lock);
	return found;
}

bool rt_managed_find(const void *p, uint64_t len)
{
	struct managed_block b;

	return block_of(p, &b) && len <= b.size - ((uintptr_t)p - b.base);
}

bool rt_managed_attachable(const void *p, uint64_t len, unsigned flags)
{
	struct managed_block b;

	if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
		return false;
	return block_of(p, &b) && (uintptr_t)p == b.base && (len == 0 || len == b.size);
}
