/* SPDX-License-Identifier: MIT */
/*
 * Device memory of one vGPU: a virtual-address window, mapped in chunks by
 * the device (cuMemCreate+cuMemMap on a GPU, host memory in the model), and
 * carved into allocations. Every address the client sees lies in the window,
 * so pointers of different vGPUs never collide, and every device address a
 * record names can be checked against the live allocations.
 *
 * Virtual memory management (cuMemAddressReserve/cuMemMap) lives in the same
 * window: a reservation is a chunk with no device mapping of its own and no
 * free extents, so allocations never come from it; a mapping of physical
 * memory into it is an allocation range marked vmm, so copies, memsets and
 * kernels reach it as any allocation, while vaheap_free refuses it. The
 * owner maps and unmaps the device memory behind mappings itself.
 */
#ifndef MEARAS_VAHEAP_H
#define MEARAS_VAHEAP_H

#include <stddef.h>
#include <stdint.h>

struct vaheap_range {
	uint64_t va, size;
	size_t chunk;           /* index into chunks (allocations, free extents) */
	void *tag;              /* allocations: the owner's (memory pool, VMM mapping), NULL by default */
	int vmm;                /* a mapping in a reservation (vaheap_map), not vaheap_alloc's */
};

struct vaheap_chunk {
	uint64_t va, size, used;
	void *cookie;           /* device's handle for the mapping (or the reservation) */
	int reserved;           /* a reservation (vaheap_reserve): nothing of it is allocated */
};

#define VAHEAP_DEFAULT_GRANULARITY (2ull << 20)

struct vaheap_ops {
	int (*map)(void *ctx, uint64_t va, uint64_t size, void **cookie);
	void (*unmap)(void *ctx, uint64_t va, uint64_t size, void *cookie);
	/* optional: memory shared with other heaps (an identity's quota held
	 * by several workers); charge returns 0, or -1 to refuse bytes more */
	int (*charge)(void *ctx, uint64_t bytes);
	void (*uncharge)(void *ctx, uint64_t bytes);
	/* optional: a reservation made or given back (the device may need to
	 * know the stretch; a GPU's window is reserved as a whole already) */
	int (*reserve)(void *ctx, uint64_t va, uint64_t size, void **cookie);
	void (*release)(void *ctx, uint64_t va, uint64_t size, void *cookie);
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
/* The live allocation holding all of [va, va+len), or NULL. A span over
 * adjacent mappings of one reservation is valid too (as on a GPU): the
 * mapping holding va is returned. */
const struct vaheap_range *vaheap_find(const struct vaheap *h, uint64_t va, uint64_t len);
const struct vaheap_chunk *vaheap_chunk_of(const struct vaheap *h, uint64_t va);
/*
 * Virtual memory management. Sizes, alignments and addresses are multiples of
 * h->granularity; every call returns a cudaError_t: 0, cudaErrorInvalidValue
 * (1) or cudaErrorMemoryAllocation (2).
 *
 * vaheap_reserve: a reservation of size bytes at va, aligned to align (0: the
 * granularity; else a power of two), at hint when hint is a free, aligned
 * stretch of the window (else anywhere).
 */
int vaheap_reserve(struct vaheap *h, uint64_t size, uint64_t align, uint64_t hint, uint64_t *va);
/* gives back the whole reservation [va, va+size); 1 if it is not exactly one,
 * or something is still mapped in it */
int vaheap_reserve_free(struct vaheap *h, uint64_t va, uint64_t size);
/* the reservation holding all of [va, va+len), or NULL */
const struct vaheap_chunk *vaheap_reservation(const struct vaheap *h, uint64_t va, uint64_t len);
/* registers the mapping [va, va+size) with tag: 1 unless it lies in one
 * reservation, aligned, and overlaps no other mapping */
int vaheap_map(struct vaheap *h, uint64_t va, uint64_t size, void *tag);
/* takes out the mappings that make up [va, va+size) exactly (whole mappings,
 * no gaps), calling fn on each before it goes; 1 (nothing changed) otherwise */
int vaheap_unmap(struct vaheap *h, uint64_t va, uint64_t size,
		 void (*fn)(void *arg, const struct vaheap_range *r), void *arg);
/* charges bytes of physical memory against the quota (cudaErrorMemoryAllocation
 * beyond it), or gives them back */
int vaheap_charge(struct vaheap *h, uint64_t bytes);
void vaheap_uncharge(struct vaheap *h, uint64_t bytes);

/* Frees every allocation, unmaps every chunk and gives back every
 * reservation (the owner has taken its mappings out first). */
void vaheap_destroy(struct vaheap *h);

#endif
