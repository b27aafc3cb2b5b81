// SPDX-License-Identifier: MIT
/*
 * Lifetimes of a client's device objects. Each kind lives in its handle
 * table under the id the client chose; objects that device work still uses
 * outlive the client's destroy record: an event that synchronizations wait
 * on (held), the host functions of a captured graph (shared by the graph,
 * its instantiations and their launches), a memory pool that allocations
 * still come from.
 */
#include <stdlib.h>

#include "exec_internal.h"
#include "mearas/log.h"

/* ---- client events that pending completions wait on ---- */

static struct ev_hold *hold_find(struct vgpu *v, void *ev)
{
	for (struct ev_hold *h = v->holds; h; h = h->next)
		if (h->ev == ev)
			return h;
	return NULL;
}

int exec_hold_get(struct vgpu *v, void *ev)
{
	struct ev_hold *h = hold_find(v, ev);

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return cudaErrorMemoryAllocation;
		h->ev = ev;
		h->next = v->holds;
		v->holds = h;
	}
	h->refs++;
	return 0;
}

/* The last pending completion on a client event is gone: destroy the event
 * now if the client did so meanwhile. */
void exec_hold_put(struct vgpu *v, void *ev)
{
	struct ev_hold **pp = &v->holds, *h;

	while ((h = *pp) && h->ev != ev)
		pp = &h->next;
	if (!h || --h->refs)
		return;
	*pp = h->next;
	if (h->orphan)
		v->ops->event_destroy(v->dev, h->ev);
	free(h);
}

/* ---- host functions captured into graphs ---- */

void exec_hf_free_list(struct vgpu *v, struct host_func_req *r)
{
	while (r) {
		struct host_func_req *n = r->next;

		free(r);
		v->hf_ncaptured--;
		r = n;
	}
}

void exec_share_put(struct vgpu *v, struct hf_share *sh)
{
	if (!sh || --sh->refs)
		return;
	exec_hf_free_list(v, sh->reqs);
	free(sh);
}

/* A graph or an instantiation is gone: its nodes no longer count. */
void exec_graph_put(struct vgpu *v, struct hf_share *sh)
{
	if (sh)
		v->graph_nodes -= sh->nodes < v->graph_nodes ? sh->nodes : v->graph_nodes;
	exec_share_put(v, sh);
}

/* ---- streams ---- */

void exec_forget_stream(struct vgpu *v, void *s)
{
	for (size_t i = 0; i < v->npend; i++) {
		struct pending *p = &v->pend[i];

		if (p->flush_stream != s || !p->own_fence)
			continue;
		/* our event flushes instead; a flag has none, and a flush of the
		 * whole device could wait for other streams: none then */
		p->flush_stream = NULL;
		p->flush_event = p->fence;
		if (p->flag)
			p->flush = 0;
	}
}

/* ---- kernel records (FUNC_GET) ---- */

/* Bytes a kernel record costs the device (cuda: parameter offsets). */
uint64_t exec_func_cost(uint32_t nparams)
{
	return 64 + 4ull * nparams;
}

/* funcs aux: module id << 48 | parameter count << 32 | parameter bytes */
uint64_t exec_func_aux(uint64_t module, uint32_t nparams, uint32_t pbytes)
{
	if (nparams > 0xffff)
		nparams = 0xffff;
	return module << 48 | (uint64_t)nparams << 32 | pbytes;
}

void exec_func_release(struct vgpu *v, void *fn, uint64_t aux)
{
	uint64_t cost = exec_func_cost((uint32_t)(aux >> 32) & 0xffff);

	v->func_bytes -= cost < v->func_bytes ? cost : v->func_bytes;
	if (v->ops->func_put)
		v->ops->func_put(v->dev, fn);
}

/* ---- every kind ---- */

int exec_destroy_obj(struct vgpu *v, enum mearas_handle_kind k, void *obj, uint64_t aux)
{
	switch (k) {
	case MEARAS_KIND_STREAM:
		exec_forget_stream(v, obj);
		return v->ops->stream_destroy(v->dev, obj);
	case MEARAS_KIND_EVENT: {
		struct ev_hold *h = hold_find(v, obj);

		if (h) {
			exec_refuse_log(v, "event destroyed while %u synchronizations wait on it: destroyed when they end",
					h->refs);
			h->orphan = true;
			return 0;
		}
		return v->ops->event_destroy(v->dev, obj);
	}
	case MEARAS_KIND_FUNC:
		exec_func_release(v, obj, aux);
		return 0;
	case MEARAS_KIND_MODULE: /* aux: the bytes charged for it */
		v->ops->module_unload(v->dev, obj);
		vaheap_uncharge(&v->heap, aux);
		return 0;
	case MEARAS_KIND_GRAPH:
		v->ops->graph_destroy(v->dev, obj);
		exec_graph_put(v, (struct hf_share *)(uintptr_t)aux);
		return 0;
	case MEARAS_KIND_EXEC:
		v->ops->graph_exec_destroy(v->dev, obj);
		exec_graph_put(v, (struct hf_share *)(uintptr_t)aux);
		return 0;
	case MEARAS_KIND_POOL:
		exec_pool_put(v, obj, true);
		return 0;
	case MEARAS_KIND_PHYS:
		exec_phys_put(v, obj);
		return 0;
	case MEARAS_KIND_ARRAY:
		exec_array_destroy(v, obj);
		return 0;
	case MEARAS_KIND_TEXOBJ:
	case MEARAS_KIND_SURFOBJ:
		exec_texobj_destroy(v, k, obj);
		return 0;
	case MEARAS_KIND_COUNT:
		break;
	}
	return cudaErrorInvalidValue;
}

bool exec_charge(struct vgpu *v, uint64_t bytes)
{
	return bytes <= v->heap.quota && !vaheap_charge(&v->heap, bytes);
}

void *exec_charged_new(struct vgpu *v, uint64_t bytes, size_t objsize)
{
	void *obj;

	if (!exec_charge(v, bytes))
		return NULL;
	obj = calloc(1, objsize);
	if (!obj)
		vaheap_uncharge(&v->heap, bytes);
	return obj;
}

void exec_charged_free(struct vgpu *v, uint64_t bytes, void *obj)
{
	vaheap_uncharge(&v->heap, bytes);
	free(obj);
}

int exec_keep_or_destroy(struct vgpu *v, enum mearas_handle_kind k, uint64_t id, void *obj, uint64_t aux)
{
	int r = htab_put(exec_table(v, k), id, obj, aux);

	if (r)
		exec_destroy_obj(v, k, obj, aux);
	return r;
}

int exec_take_and_destroy(struct vgpu *v, enum mearas_handle_kind k, uint64_t id)
{
	struct handle_table *t = exec_table(v, k);
	struct hslot *h = htab_get(t, id);
	uint64_t aux;

	if (!h)
		return cudaErrorInvalidResourceHandle;
	aux = h->aux;
	return exec_destroy_obj(v, k, htab_take(t, id), aux);
}
