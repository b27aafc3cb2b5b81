/* SPDX-License-Identifier: MIT */
/* Client-chosen handle ids (streams, events, modules...) to device objects:
 * one table per kind and vGPU (handles.c). */
#ifndef MEARAS_HANDLES_H
#define MEARAS_HANDLES_H

#include <stdint.h>

struct hslot {
	void *obj;
	uint64_t aux;           /* per kind: function's parameter bytes, event flags, module's charged bytes... */
};

struct handle_table {
	struct hslot *slots;
	uint32_t cap;
};

/* 0, or a cudaError_t: an id out of range or in use, no memory */
int htab_put(struct handle_table *t, uint64_t id, void *obj, uint64_t aux);
struct hslot *htab_get(struct handle_table *t, uint64_t id);
void *htab_take(struct handle_table *t, uint64_t id);
void htab_free(struct handle_table *t);

#endif
