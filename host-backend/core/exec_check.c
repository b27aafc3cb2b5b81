// SPDX-License-Identifier: MIT
/*
 * Validation helpers of record execution. The guest is untrusted: every
 * field of a record is checked before use (payload bounds, data-area ranges,
 * device ranges against this client's live allocations, handles against its
 * tables), and the checks read private copies, never shared memory twice.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "exec_internal.h"
#include "mearas/log.h"

/* Refused records are logged, at most REFUSE_LOG_BURST lines a second per
 * vGPU: a hostile client must not flood the log. */
#define REFUSE_LOG_BURST 10

void exec_refuse_log(struct vgpu *v, const char *fmt, ...)
{
	char who[24], msg[256];
	va_list ap;

	snprintf(who, sizeof(who), "vGPU %u: ", v->index);
	if (!mearas_log_burst(&v->refuse_log, REFUSE_LOG_BURST, who, "refused records"))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warn("vGPU %u: %s", v->index, msg);
}

int exec_payload(struct vgpu *v, const struct mearas_sqe *e, const uint8_t **p, uint32_t *len)
{
	*len = e->payload_len;
	if (e->flags & MEARAS_SQE_PAYLOAD_ARENA) {
		if (e->payload_off > MEARAS_ARENA_SIZE || e->payload_len > MEARAS_ARENA_SIZE - e->payload_off)
			return cudaErrorInvalidValue;
		*p = v->rings.arena + e->payload_off;
	} else {
		if (e->payload_len > MEARAS_SQE_INLINE)
			return cudaErrorInvalidValue;
		*p = e->inline_payload;
	}
	return 0;
}

/* Copied out first: the client could change the shared bytes while we use them. */
int exec_payload_string(struct vgpu *v, const struct mearas_sqe *e, char *out, size_t outlen)
{
	const uint8_t *p;
	uint32_t len;
	size_t n;

	if (exec_payload(v, e, &p, &len))
		return cudaErrorInvalidValue;
	if (len > outlen)
		len = (uint32_t)outlen;
	memcpy(out, p, len);
	n = strnlen(out, len);
	if (n == len || n == 0)
		return cudaErrorInvalidValue;
	return 0;
}

bool exec_dev_range_ok(struct vgpu *v, uint64_t va, uint64_t len)
{
	if (len == 0)
		return true;
	if (vaheap_find(&v->heap, va, len))
		return true;
	for (size_t i = 0; i < v->nglobals; i++) {
		const struct global_range *g = &v->globals[i];

		if (va >= g->va && va - g->va < g->size && len <= g->size - (va - g->va))
			return true;
	}
	return false;
}

/* Device memory of any vGPU of this client (copies between vGPUs). */
struct vgpu *exec_dev_owner(struct vgpu *v, uint64_t va, uint64_t len)
{
	if (exec_dev_range_ok(v, va, len))
		return v;
	for (unsigned i = 0; i < v->w->nvgpus; i++) {
		struct vgpu *o = &v->w->vgpus[i];
		bool ok;

		if (o == v)
			continue;
		/* its thread may be changing its allocations (or resetting its heap) meanwhile */
		pthread_mutex_lock(&o->heap_lock);
		ok = va >= o->heap.base && va - o->heap.base < o->heap.size + MEARAS_GLOBALS_RESERVE &&
		     exec_dev_range_ok(o, va, len);
		pthread_mutex_unlock(&o->heap_lock);
		if (ok)
			return o;
	}
	return NULL;
}

void *exec_data_ptr(struct vgpu *v, uint64_t off, uint64_t len)
{
	if (off > v->w->data_size || len > v->w->data_size - off)
		return NULL;
	return v->w->data + off;
}

int exec_resolve_stream(struct vgpu *v, const struct mearas_sqe *e, void **s)
{
	struct hslot *h;

	if (e->stream == MEARAS_STREAM_LEGACY && !(e->flags & MEARAS_SQE_PER_THREAD)) {
		*s = v->ops->stream_default(v->dev);
		return 0;
	}
	if (e->stream == MEARAS_STREAM_LEGACY || e->stream == MEARAS_STREAM_PER_THREAD) {
		void **pt = &v->ptds[e->cq];

		if (!*pt) {
			int r = v->ops->stream_create(v->dev, 0, 0, pt);

			if (r)
				return r;
		}
		*s = *pt;
		return 0;
	}
	h = htab_get(exec_table(v, MEARAS_KIND_STREAM), e->stream);
	if (!h)
		return cudaErrorInvalidResourceHandle;
	*s = h->obj;
	return 0;
}

bool exec_id_free(struct handle_table *t, uint64_t id)
{
	return id != 0 && id < MEARAS_MAX_HANDLES && !htab_get(t, id);
}
