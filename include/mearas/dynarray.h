/* SPDX-License-Identifier: MIT */
/*
 * Arrays that grow by doubling, and arrays kept sorted by a uint64_t key
 * (the runtime library's device allocations, the back end's heap ranges):
 * the pieces they share. Header-only: the guest libraries, mearasd and the
 * tests all include it.
 */
#ifndef MEARAS_DYNARRAY_H
#define MEARAS_DYNARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* arr (*cap elements of elem bytes) with room for need elements: arr itself
 * when it has that room, else arr reallocated to twice its capacity (first
 * elements when it has none), doubled again until need fits, with *cap
 * updated. NULL, with arr and *cap as they were, when memory is short. */
static inline void *mearas_dynarray_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap, bytes;
	void *na;

	if (need <= *cap)
		return arr;
	ncap = *cap ? *cap * 2 : first;
	while (ncap < need)
		ncap *= 2;
	if (__builtin_mul_overflow(ncap, elem, &bytes))
		return NULL;
	na = realloc(arr, bytes);
	if (na)
		*cap = ncap;
	return na;
}

/* e (elem bytes) goes in at index at of arr (*n elements, room for one
 * more): the elements from at on move up one. */
static inline void mearas_dynarray_insert(void *arr, size_t *n, size_t at, const void *e, size_t elem)
{
	char *slot = (char *)arr + at * elem;

	memmove(slot + elem, slot, (*n - at) * elem);
	memcpy(slot, e, elem);
	(*n)++;
}

/* The first index of arr (n elements of elem bytes, sorted by the uint64_t
 * at key_off of each) whose key is greater than key; n when none is. */
static inline size_t mearas_dynarray_upper_bound(const void *arr, size_t n, size_t elem, size_t key_off, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		uint64_t k;

		memcpy(&k, (const char *)arr + mid * elem + key_off, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The same for an array of structs sorted by their uint64_t member: a macro,
 * since it takes the member's name. */
#define MEARAS_DYNARRAY_UPPER_BOUND(arr, n, member, key) \
	mearas_dynarray_upper_bound((arr), (n), sizeof(*(arr)), offsetof(__typeof__(*(arr)), member), (key))

#endif
