/* SPDX-License-Identifier: MIT */
/*
 * The byte rings of struct mearas_vm_output (vm_region.h): the host side
 * writes, the guest side reads. The host trusts nothing in shared memory:
 * it keeps its own head, reads the guest's tail once and checks it.
 */
#ifndef MEARAS_VM_OUTPUT_H
#define MEARAS_VM_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mearas/vm_region.h"

/* Host: appends up to len bytes at *head (the host's private index) to ring
 * r with data area buf of size bytes (a power of two). Returns the bytes
 * written; the rest is counted in r->dropped. A tail that does not lie in
 * [head - size, head] (a guest that scribbled on it) counts as a full ring. */
static inline size_t mearas_vm_out_put(struct mearas_vm_out_ring *r, uint8_t *buf, uint32_t size, uint32_t *head,
				       const void *src, size_t len)
{
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	uint32_t used = *head - tail, room = used <= size ? size - used : 0;
	size_t n = len < room ? len : room;
	uint32_t at = *head & (size - 1), first = size - at;

	if (first > n)
		first = (uint32_t)n;
	memcpy(buf + at, src, first);
	memcpy(buf, (const uint8_t *)src + first, n - first);
	*head += (uint32_t)n;
	__atomic_store_n(&r->head, *head, __ATOMIC_RELEASE);
	if (n < len)
		__atomic_add_fetch(&r->dropped, (uint32_t)(len - n), __ATOMIC_RELAXED);
	return n;
}

/* Guest: copies up to len waiting bytes into dst and consumes them. Returns
 * the bytes copied; a head further than size ahead (a broken host) reads as
 * empty. */
static inline size_t mearas_vm_out_get(struct mearas_vm_out_ring *r, const uint8_t *buf, uint32_t size, void *dst,
				       size_t len)
{
	uint32_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), tail = r->tail;
	uint32_t avail = head - tail;
	size_t n = len < avail ? len : avail;
	uint32_t at = tail & (size - 1), first = size - at;

	if (avail > size)
		return 0;
	if (first > n)
		first = (uint32_t)n;
	memcpy(dst, buf + at, first);
	memcpy((uint8_t *)dst + first, buf, n - first);
	__atomic_store_n(&r->tail, tail + (uint32_t)n, __ATOMIC_RELEASE);
	return n;
}

#endif
