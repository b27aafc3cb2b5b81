// SPDX-License-Identifier: MIT
/* Client-chosen handle ids (streams, events, modules...) to device objects. */
#include <driver_types.h> /* cudaError_t values */
#include <stdlib.h>
#include <string.h>

#include "handles.h"
#include "mearas/region.h"

int htab_put(struct handle_table *t, uint64_t id, void *obj, uint64_t aux)
{
	if (id == 0 || id >= MEARAS_MAX_HANDLES)
		return cudaErrorInvalidValue;
	if (id >= t->cap) {
		uint32_t ncap = t->cap ? t->cap : 64;
		struct hslot *n;

		while (ncap <= id)
			ncap *= 2;
		n = realloc(t->slots, ncap * sizeof(*n));
		if (!n)
			return cudaErrorMemoryAllocation;
		memset(n + t->cap, 0, (ncap - t->cap) * sizeof(*n));
		t->slots = n;
		t->cap = ncap;
	}
	if (t->slots[id].obj)
		return cudaErrorInvalidValue; /* id in use: a confused or hostile client */
	t->slots[id].obj = obj;
	t->slots[id].aux = aux;
	return 0;
}

struct hslot *htab_get(struct handle_table *t, uint64_t id)
{
	if (id == 0 || id >= t->cap || !t->slots[id].obj)
		return NULL;
	return &t->slots[id];
}

void *htab_take(struct handle_table *t, uint64_t id)
{
	struct hslot *s = htab_get(t, id);
	void *obj;

	if (!s)
		return NULL;
	obj = s->obj;
	s->obj = NULL;
	s->aux = 0;
	return obj;
}

void htab_free(struct handle_table *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = 0;
}
