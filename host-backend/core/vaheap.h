/* SPDX-License-Identifier: MIT */
/*
 * Device memory of one vGPU: a virtual-address window, mapped in chunks by
 * the device (cuMemCreate+cuMemMap on a GPU, host memory in the model), and
 * carved into allocations. Every address the client sees lies in the window,
 * so pointers of different vGPUs never collide, and every device address a
 * record names can be checked against the live allocations.
 */
#ifndef MEARAS_VAHEAP_H
#define MEARAS_VAHEAP_H

#include <stddef.h>
#include <stdint.h>

struct vaheap_range {
	uint64_t va, size;
	size_t chunk;           /* index into chunks (allocations, free extents) */
	void *tag;              /* allocations: the owner's (memory pool), NULL by default */
};

struct vaheap_chunk {
	uint64_t va, size, used;
	void *cookie;           /* device's handle for the mapping */
};

struct vaheap_ops {
	int (*map)(void *ctx, uint64_t va, uint64_t size, void **cookie);
	void (*unmap)(void *ctx, uint64_t va, uint64_t size, void *cookie);
	/* optional: memory shared with other heaps (an identity's quota held
	 * by several workers); charge returns 0, or -1 to refuse bytes more */
	int (*charge)(void *ctx, uint64_t bytes);
	void (*uncharge)(void *ctx, uint64_t bytes);
};

struct vaheap {
	uint64_t base, size;
	uint64_t granularity;   /* chunk sizes are multiples of this */
	uint64_t chunk_min;     /* small allocations share chunks of this size */
	uint64_t quota;         /* bytes the client may allocate */
	uint64_t used;          /* bytes allocated */
	const struct vaheap_ops *ops;
	void *ctx;
	struct vaheap_chunk *chunks;
	size_t nchunks, cap_chunks;
	struct vaheap_range *allocs;    /* sorted by va */
	size_t nallocs, cap_allocs;
	struct vaheap_range *frees;     /* sorted by va */
	size_t nfrees, cap_frees;
};

void vaheap_init(struct vaheap *h, uint64_t base, uint64_t size, uint64_t granularity,
		 uint64_t quota, const struct vaheap_ops *ops, void *ctx);
/* Returns a cudaError_t: 0, cudaErrorMemoryAllocation (2). */
int vaheap_alloc(struct vaheap *h, uint64_t size, uint64_t *va);
/* Returns 0, or cudaErrorInvalidValue (1) when va is not a live allocation's start. */
int vaheap_free(struct vaheap *h, uint64_t va);
/* Tags the live allocation starting at va (0), or returns cudaErrorInvalidValue. */
int vaheap_set_tag(struct vaheap *h, uint64_t va, void *tag);
/* The live allocation holding all of [va, va+len), or NULL. */
const struct vaheap_range *vaheap_find(const struct vaheap *h, uint64_t va, uint64_t len);
const struct vaheap_chunk *vaheap_chunk_of(const struct vaheap *h, uint64_t va);
/* Frees every allocation and unmaps every chunk. */
void vaheap_destroy(struct vaheap *h);

#endif
