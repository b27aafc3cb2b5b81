// SPDX-License-Identifier: MIT
/*
 * Answers about a kernel that stay the same, for the runtime's and the
 * driver's front ends (libcudart/api_launch.c, libcuda/module.c, launch.c): its attributes
 * (FUNC_ATTRS's answer is fixed for a loaded function) and its occupancy per
 * block size and dynamic shared memory (until an attribute or the cache
 * preference of the function is set on that vGPU, or the vGPU is reset).
 * Libraries such as CUB ask before every launch, and each answer from the
 * back end is a round trip. Two small direct-mapped tables keyed by the
 * function's handle (handles are never reused) and the vGPU.
 *
 * And the attributes a program set (dynamic shared memory, carveout,
 * cluster shape ...): the driver reads them back as set, so the front ends
 * answer them from here. Kept until the function's module goes or the vGPU
 * is reset, never evicted.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core.h"

#define ATTR_SLOTS 1024u
#define OCC_SLOTS 1024u

struct attr_slot {
	uint32_t id;
	int vgpu;
	uint64_t p[2];
};

struct occ_slot {
	uint32_t id;
	int vgpu;
	uint64_t block, smem;
	int32_t blocks;
};

struct set_attr {
	uint32_t id;
	int vgpu, attr, value;
	struct set_attr *next;
};

#define SET_BUCKETS 256u

/* id 0 marks a free slot (handles start at 1) */
static struct attr_slot attr_slots[ATTR_SLOTS];
static struct occ_slot occ_slots[OCC_SLOTS];
static struct set_attr *set_attrs[SET_BUCKETS];
static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned slot_of(uint64_t a, uint64_t b, uint64_t c, unsigned n)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
		     c * 0x94d049bb133111ebull;

	return (unsigned)((h ^ (h >> 29)) % n);
}

cudaError_t rt_func_attrs(int vgpu, uint32_t id, uint64_t p[2])
{
	struct attr_slot *s = &attr_slots[slot_of(id, (uint64_t)vgpu, 0, ATTR_SLOTS)];
	bool known;
	cudaError_t e;

	pthread_mutex_lock(&info_lock);
	known = s->id == id && s->vgpu == vgpu;
	if (known) {
		p[0] = s->p[0];
		p[1] = s->p[1];
	}
	pthread_mutex_unlock(&info_lock);
	if (known)
		return cudaSuccess;
	e = rt_do_FUNC_ATTRS(vgpu, id, &p[0], &p[1]);
	if (e)
		return e;
	pthread_mutex_lock(&info_lock);
	*s = (struct attr_slot){ .id = id, .vgpu = vgpu, .p = { p[0], p[1] } };
	pthread_mutex_unlock(&info_lock);
	return cudaSuccess;
}

cudaError_t rt_func_occupancy(int vgpu, uint32_t id, uint64_t block, uint64_t smem, int32_t *blocks)
{
	struct occ_slot *s = &occ_slots[slot_of(id, (uint64_t)vgpu << 32 | block, smem, OCC_SLOTS)];
	bool known;
	cudaError_t e;

	pthread_mutex_lock(&info_lock);
	known = s->id == id && s->vgpu == vgpu && s->block == block && s->smem == smem;
	if (known)
		*blocks = s->blocks;
	pthread_mutex_unlock(&info_lock);
	if (known)
		return cudaSuccess;
	e = rt_do_OCCUPANCY(vgpu, id, block, smem, blocks);
	if (e)
		return e;
	pthread_mutex_lock(&info_lock);
	*s = (struct occ_slot){ .id = id, .vgpu = vgpu, .block = block, .smem = smem, .blocks = *blocks };
	pthread_mutex_unlock(&info_lock);
	return cudaSuccess;
}

/* under info_lock: the values set for (vgpu, id), every function's of vgpu
 * when id is 0, dropped */
static void drop_set_values(int vgpu, uint32_t id)
{
	for (unsigned b = 0; b < SET_BUCKETS; b++) {
		struct set_attr **pp = &set_attrs[b];

		while (*pp) {
			struct set_attr *a = *pp;

			if (a->vgpu == vgpu && (!id || a->id == id)) {
				*pp = a->next;
				free(a);
			} else {
				pp = &a->next;
			}
		}
	}
}

/* under info_lock: what is kept for function id on vgpu (id 0: all of
 * vgpu's) dropped; its set values too when set_values (always for id 0) */
static void forget_locked(int vgpu, uint32_t id, bool set_values)
{
	for (unsigned i = 0; i < OCC_SLOTS; i++)
		if (occ_slots[i].vgpu == vgpu && (!id || occ_slots[i].id == id))
			occ_slots[i].id = 0;
	for (unsigned i = 0; i < ATTR_SLOTS && !id; i++)
		if (attr_slots[i].vgpu == vgpu)
			attr_slots[i].id = 0;
	if (set_values || !id)
		drop_set_values(vgpu, id);
}

void rt_func_forget(int vgpu, uint32_t id)
{
	pthread_mutex_lock(&info_lock);
	forget_locked(vgpu, id, false);
	pthread_mutex_unlock(&info_lock);
}

void rt_func_gone(int vgpu, uint32_t id)
{
	pthread_mutex_lock(&info_lock);
	forget_locked(vgpu, id, true);
	pthread_mutex_unlock(&info_lock);
}

static struct set_attr **set_bucket(int vgpu, uint32_t id)
{
	return &set_attrs[slot_of(id, (uint64_t)vgpu, 0, SET_BUCKETS)];
}

cudaError_t rt_func_note_set(int vgpu, uint32_t id, int attr, int value)
{
	struct set_attr *a;

	pthread_mutex_lock(&info_lock);
	for (a = *set_bucket(vgpu, id); a; a = a->next)
		if (a->id == id && a->vgpu == vgpu && a->attr == attr)
			break;
	if (!a) {
		a = malloc(sizeof(*a));
		if (!a) {
			pthread_mutex_unlock(&info_lock);
			return cudaErrorMemoryAllocation;
		}
		*a = (struct set_attr){ .id = id, .vgpu = vgpu, .attr = attr, .next = *set_bucket(vgpu, id) };
		*set_bucket(vgpu, id) = a;
	}
	a->value = value;
	pthread_mutex_unlock(&info_lock);
	return cudaSuccess;
}

bool rt_func_set_value(int vgpu, uint32_t id, int attr, int *value)
{
	bool found = false;

	pthread_mutex_lock(&info_lock);
	for (const struct set_attr *a = *set_bucket(vgpu, id); a && !found; a = a->next)
		if (a->id == id && a->vgpu == vgpu && a->attr == attr) {
			*value = a->value;
			found = true;
		}
	pthread_mutex_unlock(&info_lock);
	return found;
}
