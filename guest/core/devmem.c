// SPDX-License-Identifier: MIT
/*
 * Device allocations this process made, by vGPU: lets the library answer
 * pointer queries, infer copy directions (cudaMemcpyDefault) and refuse bad
 * device pointers with the error native CUDA gives, without a round trip.
 * (The back end checks again: it trusts nothing the guest says.)
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "mearas/dynarray.h"

struct dm_alloc {
	uint64_t ptr, size;
	int vgpu;
	int is_global;          /* DM_GLOBAL, DM_VMM: valid for copies, not for cudaFree */
};

static pthread_rwlock_t dm_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct dm_alloc *allocs;
static size_t nallocs, cap;

static size_t upper_bound(uint64_t ptr)
{
	return MEARAS_DYNARRAY_UPPER_BOUND(allocs, nallocs, ptr, ptr);
}

void dm_add(int vgpu, uint64_t ptr, uint64_t size, int is_global)
{
	struct dm_alloc a = { ptr, size, vgpu, is_global }, *p;

	pthread_rwlock_wrlock(&dm_lock);
	p = mearas_dynarray_grow(allocs, &cap, nallocs + 1, sizeof(*allocs), 256);
	if (p) {
		allocs = p;
		mearas_dynarray_insert(allocs, &nallocs, upper_bound(ptr), &a, sizeof(a));
	}
	pthread_rwlock_unlock(&dm_lock);
}

bool dm_remove(int vgpu, uint64_t ptr)
{
	size_t at;
	bool ok = false;

	pthread_rwlock_wrlock(&dm_lock);
	at = upper_bound(ptr);
	if (at > 0 && allocs[at - 1].ptr == ptr && allocs[at - 1].vgpu == vgpu && !allocs[at - 1].is_global) {
		memmove(&allocs[at - 1], &allocs[at], (nallocs - at) * sizeof(*allocs));
		nallocs--;
		ok = true;
	}
	pthread_rwlock_unlock(&dm_lock);
	return ok;
}

bool dm_remove_vmm(int vgpu, uint64_t ptr)
{
	size_t at;
	bool ok = false;

	pthread_rwlock_wrlock(&dm_lock);
	at = upper_bound(ptr);
	if (at > 0 && allocs[at - 1].ptr == ptr && allocs[at - 1].vgpu == vgpu && allocs[at - 1].is_global == DM_VMM) {
		memmove(&allocs[at - 1], &allocs[at], (nallocs - at) * sizeof(*allocs));
		nallocs--;
		ok = true;
	}
	pthread_rwlock_unlock(&dm_lock);
	return ok;
}

/* [ptr, ptr+len) runs from mapping at over the adjacent mappings after it
 * (one stretch of device memory, as on a GPU) */
static bool vmm_span(size_t at, uint64_t ptr, uint64_t len)
{
	const struct dm_alloc *a = &allocs[at];
	uint64_t end = a->ptr + a->size, left = len - (end - ptr);

	if (a->is_global != DM_VMM)
		return false;
	for (size_t i = at + 1; i < nallocs; i++) {
		const struct dm_alloc *b = &allocs[i];

		if (b->is_global != DM_VMM || b->vgpu != a->vgpu || b->ptr != end)
			return false;
		if (left <= b->size)
			return true;
		left -= b->size;
		end += b->size;
	}
	return false;
}

int dm_find(uint64_t ptr, uint64_t len, uint64_t *base, uint64_t *size)
{
	size_t at;
	int vgpu = -1;

	pthread_rwlock_rdlock(&dm_lock);
	at = upper_bound(ptr);
	if (at > 0) {
		const struct dm_alloc *a = &allocs[at - 1];

		if (ptr - a->ptr < a->size &&
		    (len <= a->size - (ptr - a->ptr) || vmm_span(at - 1, ptr, len))) {
			vgpu = a->vgpu;
			if (base)
				*base = a->ptr;
			if (size)
				*size = a->size;
		}
	}
	pthread_rwlock_unlock(&dm_lock);
	return vgpu;
}

int dm_window_owner(uint64_t ptr)
{
	for (unsigned i = 0; i < rt.nvgpus; i++) {
		const struct mearas_devinfo *d = rt.v[i].info;

		if (ptr >= d->va_base && ptr - d->va_base < d->va_size)
			return (int)i;
	}
	return -1;
}

void dm_forget_vgpu(int vgpu)
{
	pthread_rwlock_wrlock(&dm_lock);
	RT_DROP_VGPU(allocs, nallocs, vgpu);
	pthread_rwlock_unlock(&dm_lock);
}
