// SPDX-License-Identifier: MIT
/*
 * Validation and execution of records. The guest is untrusted: every field
 * of a record is checked before use (op, flags, completion slot, payload
 * bounds, data-area ranges, device ranges against this client's live
 * allocations, handles against this client's tables). A bad record gets an
 * error completion (or a deferred error for records without one), never a
 * crash.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mearas/clock.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "worker.h"

struct fence_req {
	void *stream;           /* record a fence on this stream, complete when it passes */
	void *event;            /* or wait for this user event */
	enum pending_action action;
	uint64_t arg;
	int flush;              /* a synchronizing call: flush device output when done */
};

typedef int (*op_fn)(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c,
		     struct fence_req *f);

#define KNOWN_SQE_FLAGS (MEARAS_SQE_WANT_CQE | MEARAS_SQE_PAYLOAD_ARENA | MEARAS_SQE_PER_THREAD)

/* ---- validation helpers ---- */

static int payload(struct vgpu *v, const struct mearas_sqe *e, const uint8_t **p, uint32_t *len)
{
	*len = e->payload_len;
	if (e->flags & MEARAS_SQE_PAYLOAD_ARENA) {
		if (e->payload_off > MEARAS_ARENA_SIZE || e->payload_len > MEARAS_ARENA_SIZE - e->payload_off)
			return cudaErrorInvalidValue;
		*p = v->arena + e->payload_off;
	} else {
		if (e->payload_len > MEARAS_SQE_INLINE)
			return cudaErrorInvalidValue;
		*p = e->inline_payload;
	}
	return 0;
}

/* A NUL-terminated string at the start of the payload, copied out (the
 * client could change the shared bytes while we use them). */
static int payload_string(struct vgpu *v, const struct mearas_sqe *e, char *out, size_t outlen,
			  size_t *used)
{
	const uint8_t *p;
	uint32_t len;
	size_t n;

	if (payload(v, e, &p, &len))
		return cudaErrorInvalidValue;
	if (len > outlen)
		len = (uint32_t)outlen;
	memcpy(out, p, len);
	n = strnlen(out, len);
	if (n == len || n == 0)
		return cudaErrorInvalidValue;
	*used = n + 1;
	return 0;
}

static bool dev_range_ok(struct vgpu *v, uint64_t va, uint64_t len)
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

/* Device memory of any vGPU of this client (for copies between vGPUs). */
static struct vgpu *dev_owner(struct vgpu *v, uint64_t va, uint64_t len)
{
	if (dev_range_ok(v, va, len))
		return v;
	for (unsigned i = 0; i < v->w->nvgpus; i++) {
		struct vgpu *o = &v->w->vgpus[i];

		if (o != v && va >= o->heap.base && va - o->heap.base < o->heap.size + MEARAS_GLOBALS_RESERVE &&
		    dev_range_ok(o, va, len))
			return o;
	}
	return NULL;
}

static void *data_ptr(struct vgpu *v, uint64_t off, uint64_t len)
{
	if (off > v->w->data_size || len > v->w->data_size - off)
		return NULL;
	return v->w->data + off;
}

static int resolve_stream(struct vgpu *v, const struct mearas_sqe *e, void **s)
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
	h = htab_get(&v->streams, e->stream);
	if (!h)
		return cudaErrorInvalidResourceHandle;
	*s = h->obj;
	return 0;
}

/* A client-chosen id for a new object: in range and not in use. */
static bool id_free(struct handle_table *t, uint64_t id)
{
	return id != 0 && id < MEARAS_MAX_HANDLES && !htab_get(t, id);
}

/* Destroy a device object of the kind that table t holds; the device's
 * status, 0 for the kinds whose destruction cannot fail (modules, graphs).
 * Functions die with their module: nothing to do for them. */
static int destroy_obj(struct vgpu *v, struct handle_table *t, void *obj)
{
	if (t == &v->streams)
		return v->ops->stream_destroy(v->dev, obj);
	if (t == &v->events)
		return v->ops->event_destroy(v->dev, obj);
	if (t == &v->modules)
		v->ops->module_unload(v->dev, obj);
	else if (t == &v->graphs)
		v->ops->graph_destroy(v->dev, obj);
	else if (t == &v->execs)
		v->ops->graph_exec_destroy(v->dev, obj);
	return 0;
}

/* Keep a new device object under its client id, or destroy it. */
static int keep_or_destroy(struct vgpu *v, struct handle_table *t, uint64_t id, void *obj, uint64_t aux)
{
	int r = htab_put(t, id, obj, aux);

	if (r)
		destroy_obj(v, t, obj);
	return r;
}

/* The *_DESTROY records: take the client's object out of its table, destroy it. */
static int take_and_destroy(struct vgpu *v, struct handle_table *t, uint64_t id)
{
	void *obj = htab_take(t, id);

	if (!obj)
		return cudaErrorInvalidResourceHandle;
	return destroy_obj(v, t, obj);
}

static int get_obj(struct handle_table *t, uint64_t id, void **obj)
{
	struct hslot *h = htab_get(t, id);

	if (!h)
		return cudaErrorInvalidResourceHandle;
	*obj = h->obj;
	return 0;
}

/* ---- operations ---- */

static int op_NOP(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)v, (void)e, (void)c, (void)f;
	return 0;
}

static int op_MEM_ALLOC(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)f;
	return vaheap_alloc(&v->heap, e->args.a[0], &c->val[0]);
}

static int check_free(struct vgpu *v, uint64_t va)
{
	const struct vaheap_range *r = vaheap_find(&v->heap, va, 1);

	return (r && r->va == va) ? 0 : cudaErrorInvalidValue;
}

static int op_MEM_FREE(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	int r = check_free(v, e->args.a[0]);

	(void)c;
	if (r)
		return r;
	/* cudaFree waits for the device: free once everything before it is done */
	f->stream = v->ops->stream_default(v->dev);
	f->action = PENDING_FREE;
	f->arg = e->args.a[0];
	return 0;
}

static int op_MEM_FREE_ASYNC(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	int r = check_free(v, e->args.a[0]);

	(void)c;
	if (r)
		return r;
	r = resolve_stream(v, e, &f->stream);
	f->action = PENDING_FREE;
	f->arg = e->args.a[0];
	return r;
}

static int op_MEM_GET_INFO(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	uint64_t dfree, dtotal;
	int r = v->ops->mem_info(v->dev, &dfree, &dtotal);

	(void)e, (void)f;
	if (r)
		return r;
	/* the vGPU sees its quota as its memory */
	c->val[1] = v->heap.quota < dtotal ? v->heap.quota : dtotal;
	c->val[0] = c->val[1] - v->heap.used;
	if (c->val[0] > dfree)
		c->val[0] = dfree;
	return 0;
}

static int copy_args(struct vgpu *v, int dir, uint64_t *dst, uint64_t *src, uint64_t size)
{
	void *h;

	switch (dir) {
	case MEARAS_COPY_HTOD:
		if (!dev_owner(v, *dst, size) || !(h = data_ptr(v, *src, size)))
			return cudaErrorInvalidValue;
		*src = (uint64_t)(uintptr_t)h;
		return 0;
	case MEARAS_COPY_DTOH:
		if (!dev_owner(v, *src, size) || !(h = data_ptr(v, *dst, size)))
			return cudaErrorInvalidValue;
		*dst = (uint64_t)(uintptr_t)h;
		return 0;
	case MEARAS_COPY_DTOD:
		if (!dev_owner(v, *src, size) || !dev_owner(v, *dst, size))
			return cudaErrorInvalidValue;
		return 0;
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
}

static int op_MEMCPY(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	uint64_t dst = e->args.a[0], src = e->args.a[1], size = e->args.a[2];
	int dir = (int)e->args.a[3];
	int r = resolve_stream(v, e, &f->stream);

	(void)c;
	if (r)
		return r;
	r = copy_args(v, dir, &dst, &src, size);
	if (r || size == 0)
		return r;
	return v->ops->copy(v->dev, f->stream, dir, dst, src, size);
}

static int op_MEMCPY_INLINE(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	const uint8_t *p;
	uint32_t len;
	int r = resolve_stream(v, e, &f->stream);

	(void)c;
	if (r)
		return r;
	if (payload(v, e, &p, &len) || !dev_owner(v, e->args.a[0], len))
		return cudaErrorInvalidValue;
	if (len == 0)
		return 0;
	/* The device reads the bytes before the call returns (the driver stages
	 * pageable memory synchronously); the record's slot is not reused before
	 * that, since head moves only after this record is done. */
	return v->ops->copy(v->dev, f->stream, MEARAS_COPY_HTOD, e->args.a[0], (uint64_t)(uintptr_t)p, len);
}

static int op_MEMCPY_2D(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	uint64_t dst = e->args.a[0], dpitch = e->args.a[1], src = e->args.a[2], spitch = e->args.a[3];
	uint64_t width = e->args.a[4], height = e->args.a[5];
	int dir = (int)e->args.a[6];
	uint64_t dspan, sspan;
	int r = resolve_stream(v, e, &f->stream);

	(void)c;
	if (r)
		return r;
	if (width == 0 || height == 0)
		return 0;
	if (width > dpitch || width > spitch || height > (1ull << 32) ||
	    dpitch > (1ull << 40) || spitch > (1ull << 40))
		return cudaErrorInvalidPitchValue;
	dspan = dpitch * (height - 1) + width;
	sspan = spitch * (height - 1) + width;
	if (dir == MEARAS_COPY_HTOD) {
		r = copy_args(v, dir, &dst, &src, 0);
		if (!r && (!dev_owner(v, dst, dspan) || !data_ptr(v, e->args.a[2], sspan)))
			r = cudaErrorInvalidValue;
		src = (uint64_t)(uintptr_t)data_ptr(v, e->args.a[2], sspan);
	} else if (dir == MEARAS_COPY_DTOH) {
		if (!dev_owner(v, src, sspan) || !data_ptr(v, dst, dspan))
			r = cudaErrorInvalidValue;
		dst = (uint64_t)(uintptr_t)data_ptr(v, e->args.a[0], dspan);
	} else if (dir == MEARAS_COPY_DTOD) {
		if (!dev_owner(v, src, sspan) || !dev_owner(v, dst, dspan))
			r = cudaErrorInvalidValue;
	} else {
		r = cudaErrorInvalidMemcpyDirection;
	}
	if (r)
		return r;
	return v->ops->copy_2d(v->dev, f->stream, dir, dst, dpitch, src, spitch, width, height);
}

static int op_MEMSET(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	uint64_t dst = e->args.a[0], count = e->args.a[2], elem = e->args.a[3];
	int r = resolve_stream(v, e, &f->stream);

	(void)c;
	if (r)
		return r;
	if ((elem != 1 && elem != 2 && elem != 4) || count > (1ull << 40))
		return cudaErrorInvalidValue;
	if (count == 0)
		return 0;
	if (!dev_owner(v, dst, count * elem))
		return cudaErrorInvalidValue;
	return v->ops->memset(v->dev, f->stream, dst, (uint32_t)e->args.a[1], count, (unsigned)elem);
}

static int op_MEMSET_2D(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	uint64_t dst = e->args.a[0], pitch = e->args.a[1], width = e->args.a[3], height = e->args.a[4];
	int r = resolve_stream(v, e, &f->stream);

	(void)c;
	if (r)
		return r;
	if (width == 0 || height == 0)
		return 0;
	if (width > pitch || pitch > (1ull << 40) || height > (1ull << 32))
		return cudaErrorInvalidValue;
	if (!dev_owner(v, dst, pitch * (height - 1) + width))
		return cudaErrorInvalidValue;
	return v->ops->memset_2d(v->dev, f->stream, dst, pitch, (uint8_t)e->args.a[2], width, height);
}

static int op_MODULE_LOAD(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	uint64_t id = e->args.a[0], size = e->args.a[2];
	const void *img = data_ptr(v, e->args.a[1], size);
	void *copy, *mod;
	int r;

	(void)c, (void)f;
	if (!img || size < 16 || size > (1ull << 31))
		return cudaErrorInvalidValue;
	if (!id_free(&v->modules, id))
		return cudaErrorInvalidValue;
	/* a private copy: the client cannot change the image while it is parsed */
	copy = malloc(size);
	if (!copy)
		return cudaErrorMemoryAllocation;
	memcpy(copy, img, size);
	r = v->ops->module_load(v->dev, copy, size, &mod);
	free(copy);
	if (r)
		return r;
	return keep_or_destroy(v, &v->modules, id, mod, 0);
}

static int op_MODULE_UNLOAD(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *mod = htab_take(&v->modules, e->args.a[0]);

	(void)c, (void)f;
	if (!mod)
		return cudaErrorInvalidResourceHandle;
	/* functions of the module die with it */
	for (uint32_t i = 0; i < v->funcs.cap; i++)
		if (v->funcs.slots[i].obj && (v->funcs.slots[i].aux >> 32) == e->args.a[0])
			htab_take(&v->funcs, i);
	v->ops->module_unload(v->dev, mod);
	return 0;
}

static int op_FUNC_GET(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	char name[4096];
	size_t used;
	void *mod, *fn;
	uint32_t nparams, pbytes;
	int r;

	(void)f;
	if (payload_string(v, e, name, sizeof(name), &used))
		return cudaErrorInvalidValue;
	if (get_obj(&v->modules, e->args.a[0], &mod))
		return cudaErrorInvalidResourceHandle;
	if (e->args.a[0] >= (1ull << 32) || !id_free(&v->funcs, e->args.a[1]))
		return cudaErrorInvalidValue;
	r = v->ops->func_get(v->dev, mod, name, &fn, &nparams, &pbytes);
	if (r)
		return r;
	c->val[0] = nparams;
	c->val[1] = pbytes;
	/* aux: module id << 32 | parameter bytes the device expects */
	return htab_put(&v->funcs, e->args.a[1], fn, (e->args.a[0] << 32) | pbytes);
}

static int op_FUNC_ATTRS(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *fn;

	(void)f;
	if (get_obj(&v->funcs, e->args.a[0], &fn))
		return cudaErrorInvalidDeviceFunction;
	return v->ops->func_attrs(v->dev, fn, c->val);
}

static int op_FUNC_SET_ATTR(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *fn;

	(void)c, (void)f;
	if (get_obj(&v->funcs, e->args.a[0], &fn))
		return cudaErrorInvalidDeviceFunction;
	return v->ops->func_set_attr(v->dev, fn, (int)e->args.a[1], (int)e->args.a[2]);
}

static int op_OCCUPANCY(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *fn;
	int blocks = 0, r;

	(void)f;
	if (get_obj(&v->funcs, e->args.a[0], &fn))
		return cudaErrorInvalidDeviceFunction;
	if (e->args.a[1] == 0 || e->args.a[1] > 4096 || e->args.a[2] > (1u << 30))
		return cudaErrorInvalidValue;
	r = v->ops->occupancy(v->dev, fn, (int)e->args.a[1], e->args.a[2], &blocks);
	c->val[0] = (uint64_t)blocks;
	return r;
}

static int op_GLOBAL_GET(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	char name[4096];
	size_t used;
	void *mod;
	int r;

	(void)f;
	if (payload_string(v, e, name, sizeof(name), &used))
		return cudaErrorInvalidValue;
	if (get_obj(&v->modules, e->args.a[0], &mod))
		return cudaErrorInvalidResourceHandle;
	r = v->ops->global_get(v->dev, mod, name, e->args.a[1], &c->val[0], &c->val[1]);
	if (r)
		return r;
	if (!dev_range_ok(v, c->val[0], c->val[1])) {
		struct global_range *g;

		if (v->nglobals == v->cap_globals) {
			size_t ncap = v->cap_globals ? v->cap_globals * 2 : 16;

			g = realloc(v->globals, ncap * sizeof(*g));
			if (!g)
				return cudaErrorMemoryAllocation;
			v->globals = g;
			v->cap_globals = ncap;
		}
		v->globals[v->nglobals++] = (struct global_range){ .va = c->val[0], .size = c->val[1] };
	}
	return 0;
}

static int op_LAUNCH(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	struct hslot *fn = htab_get(&v->funcs, e->args.a[0]);
	struct mdev_launch l;
	const uint8_t *p;
	uint32_t len, want;
	_Alignas(16) uint8_t params[MEARAS_MAX_PARAM_BYTES + 4];
	int r;

	(void)c;
	if (!fn)
		return cudaErrorInvalidDeviceFunction;
	r = resolve_stream(v, e, &f->stream);
	if (r)
		return r;
	if (payload(v, e, &p, &len) || len > MEARAS_MAX_PARAM_BYTES)
		return cudaErrorInvalidValue;
	want = (uint32_t)fn->aux;
	if (want != 0xffffffffu && len != want)
		return cudaErrorInvalidValue;
	l.grid[0] = (uint32_t)e->args.a[1];
	l.grid[1] = (uint32_t)(e->args.a[1] >> 32);
	l.grid[2] = (uint32_t)e->args.a[2];
	l.block[0] = (uint32_t)(e->args.a[2] >> 32);
	l.block[1] = (uint32_t)e->args.a[3];
	l.block[2] = (uint32_t)(e->args.a[3] >> 32);
	if (!l.grid[0] || !l.grid[1] || !l.grid[2] || !l.block[0] || !l.block[1] || !l.block[2] ||
	    e->args.a[4] > (1u << 30))
		return cudaErrorInvalidConfiguration;
	l.smem = (uint32_t)e->args.a[4];
	l.cooperative = (e->args.a[5] & 1) != 0;
	/* parameters are copied out of shared memory before the driver sees them */
	memcpy(params, p, len);
	l.params = params;
	l.param_bytes = len;
	return v->ops->launch(v->dev, fn->obj, f->stream, &l);
}

static int op_STREAM_CREATE(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *s;
	int r;

	(void)c, (void)f;
	if (!id_free(&v->streams, e->args.a[0]))
		return cudaErrorInvalidValue;
	if (e->args.a[1] & ~1ull)
		return cudaErrorInvalidValue;
	r = v->ops->stream_create(v->dev, (unsigned)e->args.a[1], (int)(int64_t)e->args.a[2], &s);
	if (r)
		return r;
	return keep_or_destroy(v, &v->streams, e->args.a[0], s, 0);
}

static int op_STREAM_DESTROY(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)c, (void)f;
	return take_and_destroy(v, &v->streams, e->args.a[0]);
}

static int op_STREAM_SYNC(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)c;
	f->flush = 1;
	return resolve_stream(v, e, &f->stream);
}

static int op_STREAM_QUERY(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *s, *ev;
	int r;

	(void)c, (void)f;
	r = resolve_stream(v, e, &s);
	if (r)
		return r;
	r = v->ops->event_create(v->dev, cudaEventDisableTiming, &ev);
	if (r)
		return r;
	r = v->ops->event_record(v->dev, ev, s);
	if (!r)
		r = v->ops->event_query(v->dev, ev);
	v->ops->event_destroy(v->dev, ev);
	return r;
}

/* The record's stream and the event of args[0] (STREAM_WAIT_EVENT, EVENT_RECORD). */
static int stream_and_event(struct vgpu *v, const struct mearas_sqe *e, void **s, void **ev)
{
	int r = resolve_stream(v, e, s);

	if (r)
		return r;
	return get_obj(&v->events, e->args.a[0], ev);
}

static int op_STREAM_WAIT_EVENT(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *s, *ev;
	int r;

	(void)c, (void)f;
	r = stream_and_event(v, e, &s, &ev);
	return r ? r : v->ops->stream_wait_event(v->dev, s, ev, (unsigned)e->args.a[1]);
}

static int op_EVENT_CREATE(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *ev;
	int r;

	(void)c, (void)f;
	if (!id_free(&v->events, e->args.a[0]))
		return cudaErrorInvalidValue;
	if (e->args.a[1] & ~(uint64_t)(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess))
		return cudaErrorInvalidValue;
	r = v->ops->event_create(v->dev, (unsigned)e->args.a[1], &ev);
	if (r)
		return r;
	return keep_or_destroy(v, &v->events, e->args.a[0], ev, e->args.a[1]);
}

static int op_EVENT_DESTROY(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)c, (void)f;
	return take_and_destroy(v, &v->events, e->args.a[0]);
}

static int op_EVENT_RECORD(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *s, *ev;
	int r;

	(void)c, (void)f;
	r = stream_and_event(v, e, &s, &ev);
	return r ? r : v->ops->event_record(v->dev, ev, s);
}

static int op_EVENT_SYNC(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)c;
	if (get_obj(&v->events, e->args.a[0], &f->event))
		return cudaErrorInvalidResourceHandle;
	f->flush = 1;
	return 0;
}

static int op_EVENT_QUERY(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *ev;

	(void)c, (void)f;
	if (get_obj(&v->events, e->args.a[0], &ev))
		return cudaErrorInvalidResourceHandle;
	return v->ops->event_query(v->dev, ev);
}

static int op_EVENT_ELAPSED(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *a, *b;
	float ms = 0;
	int r;

	(void)f;
	if (get_obj(&v->events, e->args.a[0], &a) || get_obj(&v->events, e->args.a[1], &b))
		return cudaErrorInvalidResourceHandle;
	r = v->ops->event_elapsed(v->dev, a, b, &ms);
	memcpy(&c->val[0], &ms, sizeof(ms));
	return r;
}

/* Make the legacy stream wait for every stream of this vGPU, so a fence on
 * it passes when all work submitted so far is done, without blocking. */
static int join_all_streams(struct vgpu *v, void **legacy)
{
	*legacy = v->ops->stream_default(v->dev);
	for (uint32_t i = 0; i < v->streams.cap + MEARAS_MAX_THREADS; i++) {
		void *s = i < v->streams.cap ? v->streams.slots[i].obj : v->ptds[i - v->streams.cap];
		void *ev;
		int r;

		if (!s)
			continue;
		r = v->ops->event_create(v->dev, cudaEventDisableTiming, &ev);
		if (r)
			return r;
		r = v->ops->event_record(v->dev, ev, s);
		if (!r)
			r = v->ops->stream_wait_event(v->dev, *legacy, ev, 0);
		v->ops->event_destroy(v->dev, ev);
		if (r)
			return r;
	}
	return 0;
}

static int op_CTX_SYNC(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c;
	f->flush = 1;
	return join_all_streams(v, &f->stream);
}

static int op_DEVICE_RESET(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c;
	f->action = PENDING_RESET;
	return join_all_streams(v, &f->stream);
}

struct host_func_req {
	struct vgpu *v;
	uint64_t token;
};

/* Runs in stream order (a driver thread on a GPU): ask the client to run its
 * function, and hold the stream until it says it is done. */
static void host_func_trampoline(void *arg)
{
	struct host_func_req *req = arg;
	struct vgpu *v = req->v;
	struct mearas_cqe c = { .user_data = 0, .status = 0, .flags = MEARAS_CQE_HOST_FUNC,
				.val = { req->token, v->index } };

	while (!post_cqe(v, 0, &c)) {
		if (v->w->stop || v->w->broken)
			goto out;
		usleep(100);
	}
	if (v->ops == &mdev_sim_ops)
		goto out; /* the model runs this on the poller itself: it cannot wait */
	pthread_mutex_lock(&v->hf_lock);
	while (v->hf_done_token < req->token && !v->w->stop && !v->w->broken) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&v->hf_cond, &v->hf_lock, &ts);
	}
	pthread_mutex_unlock(&v->hf_lock);
out:
	free(req);
}

static int op_HOST_FUNC(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	struct host_func_req *req;
	void *s;
	int r;

	(void)c, (void)f;
	r = resolve_stream(v, e, &s);
	if (r)
		return r;
	req = malloc(sizeof(*req));
	if (!req)
		return cudaErrorMemoryAllocation;
	req->v = v;
	req->token = e->args.a[0];
	r = v->ops->host_func(v->dev, s, host_func_trampoline, req);
	if (r)
		free(req);
	return r;
}

static int op_HOST_FUNC_DONE(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)c, (void)f;
	pthread_mutex_lock(&v->hf_lock);
	if (e->args.a[0] > v->hf_done_token)
		v->hf_done_token = e->args.a[0];
	pthread_cond_broadcast(&v->hf_cond);
	pthread_mutex_unlock(&v->hf_lock);
	return 0;
}

static int no_graphs(struct vgpu *v)
{
	static int said;

	if (!said++)
		log_warn("graphs by stream capture are not supported by device '%s'", v->ops->name);
	return cudaErrorNotSupported;
}

static int op_CAPTURE_BEGIN(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *s;
	int r;

	(void)c, (void)f;
	if (!v->ops->capture_begin)
		return no_graphs(v);
	if (e->stream == MEARAS_STREAM_LEGACY && !(e->flags & MEARAS_SQE_PER_THREAD))
		return cudaErrorStreamCaptureUnsupported;
	r = resolve_stream(v, e, &s);
	return r ? r : v->ops->capture_begin(v->dev, s, (int)e->args.a[0]);
}

static int op_CAPTURE_END(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *s, *g;
	int r;

	(void)c, (void)f;
	if (!v->ops->capture_end)
		return no_graphs(v);
	if (!id_free(&v->graphs, e->args.a[0]))
		return cudaErrorInvalidValue;
	r = resolve_stream(v, e, &s);
	if (r)
		return r;
	r = v->ops->capture_end(v->dev, s, &g);
	if (r)
		return r;
	return keep_or_destroy(v, &v->graphs, e->args.a[0], g, 0);
}

static int op_CAPTURE_STATUS(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *s;
	int st = 0, r;

	(void)f;
	r = resolve_stream(v, e, &s);
	if (r)
		return r;
	if (v->ops->capture_status) {
		r = v->ops->capture_status(v->dev, s, &st);
		if (r)
			return r;
	}
	c->val[0] = (uint64_t)st;
	return 0;
}

static int op_GRAPH_INSTANTIATE(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *g, *x;
	int r;

	(void)c, (void)f;
	if (!v->ops->graph_instantiate)
		return no_graphs(v);
	if (get_obj(&v->graphs, e->args.a[0], &g))
		return cudaErrorInvalidResourceHandle;
	if (!id_free(&v->execs, e->args.a[1]))
		return cudaErrorInvalidValue;
	r = v->ops->graph_instantiate(v->dev, g, &x);
	if (r)
		return r;
	return keep_or_destroy(v, &v->execs, e->args.a[1], x, 0);
}

static int op_GRAPH_LAUNCH(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *x;
	int r;

	(void)c;
	if (!v->ops->graph_launch)
		return no_graphs(v);
	if (get_obj(&v->execs, e->args.a[0], &x))
		return cudaErrorInvalidResourceHandle;
	/* the stream is the fence: a launch that wants a completion (a remote
	 * node's, whose graph copies to the host) gets it when the graph is done */
	r = resolve_stream(v, e, &f->stream);
	return r ? r : v->ops->graph_launch(v->dev, x, f->stream);
}

static int op_GRAPH_DESTROY(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)c, (void)f;
	return take_and_destroy(v, &v->graphs, e->args.a[0]);
}

static int op_GRAPH_EXEC_DESTROY(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)c, (void)f;
	return take_and_destroy(v, &v->execs, e->args.a[0]);
}

static int op_GRAPH_NODE_COUNT(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	void *g;

	(void)f;
	if (!v->ops->graph_node_count)
		return no_graphs(v);
	if (get_obj(&v->graphs, e->args.a[0], &g))
		return cudaErrorInvalidResourceHandle;
	return v->ops->graph_node_count(v->dev, g, &c->val[0]);
}

static int op_SYNC_ERROR(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)v, (void)e, (void)c, (void)f;
	return 0;
}

static int op_HOST_MAPPED(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, struct fence_req *f)
{
	(void)c, (void)f;
	/* the data area is mapped for the device as a whole: only checked here */
	return host_mapped_valid(e, v->w->data_size) ? 0 : cudaErrorInvalidValue;
}

static const op_fn handlers[MEARAS_OP_COUNT] = {
#define HANDLER(name, sync) [MEARAS_OP_##name] = op_##name,
	MEARAS_OPS(HANDLER)
#undef HANDLER
};

/* Ops whose completion also reports earlier asynchronous errors, as the
 * synchronizing CUDA calls do. */
bool reports_deferred(unsigned op)
{
	switch (op) {
	case MEARAS_OP_MEMCPY: case MEARAS_OP_MEMCPY_2D: case MEARAS_OP_MEMSET: case MEARAS_OP_MEMSET_2D:
	case MEARAS_OP_STREAM_SYNC: case MEARAS_OP_EVENT_SYNC: case MEARAS_OP_CTX_SYNC:
	case MEARAS_OP_SYNC_ERROR: case MEARAS_OP_MEM_FREE:
		return true;
	default:
		return false;
	}
}

/* ---- completions ---- */

/* Host-side cost of one synchronizing call, for the VM worker's report. */
static void account_sync(struct vgpu *v, uint64_t fetched_ns)
{
	v->sync_calls++;
	v->sync_ns += mearas_mono_ns() - fetched_ns;
}

bool post_cqe(struct vgpu *v, uint16_t cq, const struct mearas_cqe *c)
{
	struct mearas_ring_ctl *ctl;
	struct mearas_cqe *ring;
	uint32_t head, tail;

	if (cq >= v->w->nthreads)
		return false;
	ctl = (struct mearas_ring_ctl *)(v->cqs + v->cq_stride * cq);
	ring = (struct mearas_cqe *)(ctl + 1);
	pthread_mutex_lock(&v->cq_lock);
	tail = v->cq_tail[cq];
	head = mearas_load_acquire(&ctl->head);
	if (tail - head >= MEARAS_CQ_ENTRIES) {
		pthread_mutex_unlock(&v->cq_lock);
		return false;
	}
	ring[tail & (MEARAS_CQ_ENTRIES - 1)] = *c;
	v->cq_tail[cq] = tail + 1;
	mearas_store_release(&ctl->tail, tail + 1);
	pthread_mutex_unlock(&v->cq_lock);
	if (mearas_ring_needs_wakeup(ctl) && v->w->wake) {
		v->w->wake(v->w, cq);
	} else if (mearas_ring_needs_wakeup(ctl)) {
		uint64_t one = 1;

		if (write(v->w->wake_fds[cq], &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("wake slot %u: %s", cq, strerror(errno));
	}
	return true;
}

static void complete(struct vgpu *v, struct pending *p)
{
	if (p->flush && v->ops->flush_output)
		/* the work is done: this returns at once, having flushed printf output */
		v->ops->flush_output(v->dev, p->flush_event ? NULL : p->flush_stream, p->flush_event);
	if (p->flush && v->w->take_output) {
		/* before the completion is posted: the client sees both together */
		if (v->w->take_output(v->w))
			p->cqe.flags |= MEARAS_CQE_OUTPUT;
	} else if (p->flush && v->ops->flush_output && worker_output_pending(v->w)) {
		p->cqe.flags |= MEARAS_CQE_OUTPUT;
	}
	if (p->action == PENDING_FREE) {
		if (vaheap_free(&v->heap, p->arg) && p->cqe.status == 0)
			p->cqe.status = cudaErrorInvalidValue;
	} else if (p->action == PENDING_RESET) {
		vgpu_teardown(v);
	}
	if (!p->want_cqe) {
		if (p->cqe.status && !v->deferred_error)
			v->deferred_error = p->cqe.status;
		return;
	}
	if (!post_cqe(v, p->cq, &p->cqe)) {
		log_err("vGPU %u: completion slot %u overflows: the client is misbehaving", v->index, p->cq);
		v->w->broken = true;
		return;
	}
	account_sync(v, p->fetched_ns);
}

/*
 * Completions leave in submission order wherever the work is ordered on the
 * device: a remote vGPU ships a device-to-host copy's bytes when its
 * completion is posted, so a stream synchronization must not be posted
 * before the copy it follows. Fences are queried newest first: if a later
 * fence has passed, every fence it is ordered after (same stream, or an
 * event it waited for) has passed too and is seen passed when queried
 * after it; then the passed ones are completed oldest first. Unrelated work
 * on other streams is never held back.
 */
int exec_poll_pending(struct vgpu *v)
{
	size_t keep = 0, n = v->npend;
	int done = 0;

	for (size_t i = n; i-- > 0;)
		v->pend[i].poll_status = v->ops->event_query(v->dev, v->pend[i].fence);
	for (size_t i = 0; i < n; i++) {
		struct pending p = v->pend[i];

		if (p.poll_status == cudaErrorNotReady) {
			v->pend[keep++] = p;
			continue;
		}
		if (p.poll_status && !p.cqe.status)
			p.cqe.status = p.poll_status;
		if (p.own_fence)
			v->ops->event_destroy(v->dev, p.fence);
		complete(v, &p);
		done++;
	}
	/* entries complete() may have added meanwhile move down behind the kept ones */
	memmove(v->pend + keep, v->pend + n, (v->npend - n) * sizeof(*v->pend));
	v->npend = keep + (v->npend - n);
	return done;
}

static void add_pending(struct vgpu *v, struct pending *p)
{
	if (v->npend == v->cap_pend) {
		size_t ncap = v->cap_pend ? v->cap_pend * 2 : 64;
		struct pending *n = realloc(v->pend, ncap * sizeof(*n));

		if (!n) {
			p->cqe.status = cudaErrorMemoryAllocation;
			if (p->own_fence)
				v->ops->event_destroy(v->dev, p->fence);
			complete(v, p);
			return;
		}
		v->pend = n;
		v->cap_pend = ncap;
	}
	v->pend[v->npend++] = *p;
}

/* The GPU time limit watches kernel work on each stream, and the waits
 * that hold a stream for something other than its own kernels. */
static void watch_record(struct vgpu *v, const struct mearas_sqe *e, const struct fence_req *f)
{
	void *s;

	switch (e->op) {
	case MEARAS_OP_LAUNCH:
		watchdog_mark(v, f->stream, true, htab_get(&v->funcs, e->args.a[0])->obj);
		break;
	case MEARAS_OP_GRAPH_LAUNCH:
		watchdog_mark(v, f->stream, true, NULL);
		break;
	case MEARAS_OP_HOST_FUNC:
	case MEARAS_OP_STREAM_WAIT_EVENT:
		if (!resolve_stream(v, e, &s))
			watchdog_mark(v, s, false, NULL);
		break;
	default:
		break;
	}
}

/* The GPU time limit fired: this client's waits end now with status. No
 * device call that could wait for the running kernel (output flush, reset,
 * freeing memory): the process exits next and the driver frees it all. */
void exec_fail_pending(struct vgpu *v, int status)
{
	for (size_t i = 0; i < v->npend; i++) {
		struct pending p = v->pend[i];

		p.cqe.status = status;
		p.flush = 0;
		p.action = PENDING_POST;
		/* returns at once; the driver frees an unfinished event later */
		if (p.own_fence)
			v->ops->event_destroy(v->dev, p.fence);
		complete(v, &p);
	}
	v->npend = 0;
}

void exec_record(struct vgpu *v, const struct mearas_sqe *e)
{
	struct mearas_cqe c = { .user_data = e->user_data };
	struct fence_req f = { 0 };
	bool want = (e->flags & MEARAS_SQE_WANT_CQE) != 0;
	uint64_t fetched_ns = want ? mearas_mono_ns() : 0;
	int r;

	/* single writer; the worker's main thread reads it for the call rate */
	__atomic_store_n(&v->records, v->records + 1, __ATOMIC_RELAXED);
	if (e->op >= MEARAS_OP_COUNT || (e->flags & ~KNOWN_SQE_FLAGS) || e->cq >= v->w->nthreads) {
		r = cudaErrorInvalidValue;
		log_warn("vGPU %u: malformed record (op %u, flags %#x, slot %u) refused",
			 v->index, e->op, e->flags, e->cq);
		f = (struct fence_req){ 0 };
	} else {
		r = handlers[e->op](v, e, &c, &f);
		log_debug("vGPU %u: %s -> %d", v->index, mearas_op_name(e->op), r);
	}
	if (r == 0 && v->watch)
		watch_record(v, e, &f);
	if (r == 0 && want && reports_deferred(e->op) && v->deferred_error) {
		r = v->deferred_error;
		v->deferred_error = 0;
	}
	c.status = r;
	/* a fence only for records that wait for the device or act after it */
	if (r == 0 && (f.stream || f.event) && (want || f.action != PENDING_POST)) {
		struct pending p = { .want_cqe = want, .action = f.action, .arg = f.arg, .cqe = c, .cq = e->cq,
				     .fetched_ns = fetched_ns, .flush = f.flush, .flush_event = f.event,
				     .flush_stream = f.stream == v->ops->stream_default(v->dev) && e->op == MEARAS_OP_CTX_SYNC
						     ? NULL : f.stream };

		if (f.event) {
			p.fence = f.event;
		} else {
			r = v->ops->event_create(v->dev, cudaEventDisableTiming, &p.fence);
			if (!r) {
				p.own_fence = 1;
				r = v->ops->event_record(v->dev, p.fence, f.stream);
				if (r)
					v->ops->event_destroy(v->dev, p.fence);
			}
		}
		if (!r) {
			add_pending(v, &p);
			exec_poll_pending(v);
			return;
		}
		c.status = r;
	}
	if (!want) {
		if (r && !v->deferred_error)
			v->deferred_error = r;
		return;
	}
	if (!post_cqe(v, e->cq, &c)) {
		log_err("vGPU %u: completion slot %u overflows: the client is misbehaving", v->index, e->cq);
		v->w->broken = true;
		return;
	}
	account_sync(v, fetched_ns);
}

/* Frees every object and all memory of the vGPU (cudaDeviceReset, or the
 * client going away). */
void vgpu_teardown(struct vgpu *v)
{
	struct handle_table *objs[] = { &v->execs, &v->graphs, &v->events, &v->streams, &v->funcs, &v->modules };

	for (size_t k = 0; k < sizeof(objs) / sizeof(objs[0]); k++) {
		struct handle_table *t = objs[k];

		for (uint32_t i = 0; i < t->cap; i++) {
			void *o = t->slots[i].obj;

			if (!o)
				continue;
			destroy_obj(v, t, o);
			t->slots[i].obj = NULL;
		}
	}
	for (unsigned i = 0; i < MEARAS_MAX_THREADS; i++) {
		if (v->ptds[i])
			v->ops->stream_destroy(v->dev, v->ptds[i]);
		v->ptds[i] = NULL;
	}
	{
		uint64_t base = v->heap.base, size = v->heap.size, gran = v->heap.granularity, quota = v->heap.quota;
		const struct vaheap_ops *hops = v->heap.ops;
		void *ctx = v->heap.ctx;

		vaheap_destroy(&v->heap);
		vaheap_init(&v->heap, base, size, gran, quota, hops, ctx);
	}
	v->nglobals = 0;
	v->deferred_error = 0;
}
