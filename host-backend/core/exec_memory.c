// SPDX-License-Identifier: MIT
/*
 * Memory records: allocation in the vGPU's address window (vaheap), copies
 * and memsets checked over their whole span, mapped host ranges, and memory
 * pools. Pools are the back end's own: a vGPU's memory comes from its
 * window, so a pool is the accounting and the attributes of the allocations
 * made through it (stream-ordered allocation allocates at once; a trim has
 * nothing to give back).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "ranges.h"

struct exec_pool {
	uint64_t release_threshold;
	uint64_t reuse[3];      /* follow event dependencies, opportunistic, internal dependencies */
	uint64_t used, used_high;
	uint32_t refs;          /* the client's handle, and one per live allocation */
};

void exec_pool_put(struct vgpu *v, struct exec_pool *p, bool table)
{
	(void)v, (void)table;
	if (p && --p->refs == 0)
		free(p);
}

int exec_op_NOP(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_NOP *in, struct mearas_cqe *c,
		struct fence_req *f)
{
	(void)v, (void)e, (void)in, (void)c, (void)f;
	return 0;
}

int exec_op_MEM_ALLOC(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEM_ALLOC *in,
		      struct mearas_cqe *c, struct fence_req *f)
{
	struct exec_pool *p = in->pool ? in->pool->obj : NULL;
	uint64_t size = 0;
	int r;

	(void)e, (void)f;
	pthread_mutex_lock(&v->heap_lock);
	r = vaheap_alloc(&v->heap, in->a->size, &c->val[0]);
	if (r == 0 && p) {
		vaheap_set_tag(&v->heap, c->val[0], p);
		/* the range's size, rounded as the heap rounds it: what a free
		 * gives back (exec_mem_free) */
		size = vaheap_find(&v->heap, c->val[0], 1)->size;
	}
	pthread_mutex_unlock(&v->heap_lock);
	if (r || !p)
		return r;
	p->refs++;
	p->used += size;
	if (p->used > p->used_high)
		p->used_high = p->used;
	return 0;
}

/* Frees an allocation (once the device is done with it), giving its bytes
 * back to the pool it came from. */
int exec_mem_free(struct vgpu *v, uint64_t va)
{
	const struct vaheap_range *r = vaheap_find(&v->heap, va, 1);
	struct exec_pool *p;
	uint64_t size;
	int bad;

	if (!r || r->va != va || r->vmm)
		return cudaErrorInvalidValue;
	p = r->tag;
	size = r->size;
	pthread_mutex_lock(&v->heap_lock);
	bad = vaheap_free(&v->heap, va);
	pthread_mutex_unlock(&v->heap_lock);
	if (bad)
		return cudaErrorInvalidValue;
	if (p) {
		p->used -= size < p->used ? size : p->used;
		exec_pool_put(v, p, false);
	}
	return 0;
}

static int check_free(struct vgpu *v, uint64_t va)
{
	const struct vaheap_range *r = vaheap_find(&v->heap, va, 1);

	/* a VMM mapping is not cudaFree's (cuMemUnmap's): refused as on a GPU */
	return (r && r->va == va && !r->vmm) ? 0 : cudaErrorInvalidValue;
}

/* a free of ptr once everything before it on stream is done */
static int free_after(struct vgpu *v, uint64_t ptr, void *stream, struct fence_req *f)
{
	int r = check_free(v, ptr);

	if (r)
		return r;
	f->stream = stream;
	f->action = PENDING_FREE;
	f->arg = ptr;
	return 0;
}

int exec_op_MEM_FREE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEM_FREE *in,
		     struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c;
	/* cudaFree waits for the device: free once everything before it is done */
	return free_after(v, in->a->ptr, v->ops->stream_default(v->dev), f);
}

int exec_op_MEM_FREE_ASYNC(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEM_FREE_ASYNC *in,
			   struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c;
	return free_after(v, in->a->ptr, in->stream, f);
}

int exec_op_MEM_GET_INFO(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEM_GET_INFO *in,
			 struct mearas_cqe *c, struct fence_req *f)
{
	uint64_t dfree, dtotal, used = v->heap.used;
	int r = v->ops->mem_info(v->dev, &dfree, &dtotal);

	(void)e, (void)in, (void)f;
	if (r)
		return r;
	/* the vGPU sees its quota as its memory; what its identity's other
	 * clients hold of a shared quota is in use too (as another process's
	 * memory is natively) */
	if (v->heap.ops && v->heap.ops->charged) {
		uint64_t shared = v->heap.ops->charged(v->heap.ctx);

		if (shared > used)
			used = shared;
	}
	c->val[1] = v->heap.quota < dtotal ? v->heap.quota : dtotal;
	c->val[0] = used < c->val[1] ? c->val[1] - used : 0;
	if (c->val[0] > dfree)
		c->val[0] = dfree;
	return 0;
}

static int copy_args(struct vgpu *v, int dir, uint64_t *dst, uint64_t *src, uint64_t size)
{
	void *h;

	switch (dir) {
	case MEARAS_COPY_HTOD:
		if (!exec_dev_owner(v, *dst, size) || !(h = exec_data_ptr(v, *src, size)))
			return cudaErrorInvalidValue;
		*src = (uint64_t)(uintptr_t)h;
		return 0;
	case MEARAS_COPY_DTOH:
		if (!exec_dev_owner(v, *src, size) || !(h = exec_data_ptr(v, *dst, size)))
			return cudaErrorInvalidValue;
		*dst = (uint64_t)(uintptr_t)h;
		return 0;
	case MEARAS_COPY_DTOD:
		if (!exec_dev_owner(v, *src, size) || !exec_dev_owner(v, *dst, size))
			return cudaErrorInvalidValue;
		return 0;
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
}

int exec_op_MEMCPY(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEMCPY *in,
		   struct mearas_cqe *c, struct fence_req *f)
{
	const struct mearas_args_MEMCPY *a = in->a;
	uint64_t dst = a->dst, src = a->src;
	int dir = (int)a->dir;
	int r;

	(void)e, (void)c;
	f->stream = in->stream;
	r = copy_args(v, dir, &dst, &src, a->size);
	if (r || a->size == 0)
		return r;
	return v->ops->copy(v->dev, f->stream, dir, dst, src, a->size);
}

int exec_op_MEMCPY_INLINE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEMCPY_INLINE *in,
			  struct mearas_cqe *c, struct fence_req *f)
{
	(void)c;
	f->stream = in->stream;
	if (!exec_dev_owner(v, in->a->dst, in->bytes_len))
		return cudaErrorInvalidValue;
	if (in->bytes_len == 0)
		return 0;
	/* The bytes live in the record only until it is done, and a capture
	 * would keep their address for every launch of its graph: refused, as
	 * CUDA refuses pageable host memory (what the front end sends inline)
	 * in a capture. */
	if (exec_record_captures(v, e, f->stream)) {
		exec_refuse_log(v, "copy of %u bytes from pageable host memory into a stream capture refused "
				"(cudaErrorStreamCaptureUnsupported, as CUDA does): pinned memory can be captured",
				in->bytes_len);
		return cudaErrorStreamCaptureUnsupported;
	}
	/* The device reads the bytes before the call returns (the driver stages
	 * pageable memory synchronously); the record's slot is not reused before
	 * that, since head moves only after this record is done. */
	return v->ops->copy(v->dev, f->stream, MEARAS_COPY_HTOD, in->a->dst, (uint64_t)(uintptr_t)in->bytes,
			    in->bytes_len);
}

int exec_op_MEMCPY_2D(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEMCPY_2D *in,
		      struct mearas_cqe *c, struct fence_req *f)
{
	const struct mearas_args_MEMCPY_2D *a = in->a;
	uint64_t dst = a->dst, src = a->src, width = a->width, height = a->height;
	int dir = (int)a->dir;
	uint64_t dspan, sspan;
	int r = 0;

	(void)e, (void)c;
	f->stream = in->stream;
	if (width == 0 || height == 0)
		return 0;
	if (width > a->dpitch || width > a->spitch || height > RANGE_2D_MAX_ROWS ||
	    a->dpitch > RANGE_2D_MAX_PITCH || a->spitch > RANGE_2D_MAX_PITCH) {
		exec_refuse_log(v, "2D copy refused: %llu rows of %llu bytes, pitches %llu/%llu: bad pitch or height",
				(unsigned long long)height, (unsigned long long)width, (unsigned long long)a->dpitch,
				(unsigned long long)a->spitch);
		return cudaErrorInvalidPitchValue;
	}
	if (!range_2d_span(width, a->dpitch, height, &dspan) || !range_2d_span(width, a->spitch, height, &sspan)) {
		exec_refuse_log(v, "2D copy refused: %llu rows of %llu bytes, pitches %llu/%llu span past 2^64",
				(unsigned long long)height, (unsigned long long)width, (unsigned long long)a->dpitch,
				(unsigned long long)a->spitch);
		return cudaErrorInvalidValue;
	}
	if (dir == MEARAS_COPY_HTOD) {
		if (!exec_dev_owner(v, dst, dspan) || !exec_data_ptr(v, a->src, sspan))
			r = cudaErrorInvalidValue;
		src = (uint64_t)(uintptr_t)exec_data_ptr(v, a->src, sspan);
	} else if (dir == MEARAS_COPY_DTOH) {
		if (!exec_dev_owner(v, src, sspan) || !exec_data_ptr(v, dst, dspan))
			r = cudaErrorInvalidValue;
		dst = (uint64_t)(uintptr_t)exec_data_ptr(v, a->dst, dspan);
	} else if (dir == MEARAS_COPY_DTOD) {
		if (!exec_dev_owner(v, src, sspan) || !exec_dev_owner(v, dst, dspan))
			r = cudaErrorInvalidValue;
	} else {
		r = cudaErrorInvalidMemcpyDirection;
	}
	if (r == cudaErrorInvalidValue)
		exec_refuse_log(v, "2D copy refused: %llu rows of %llu bytes (dst pitch %llu, span %llu; src pitch %llu, "
				"span %llu) leave this client's memory", (unsigned long long)height,
				(unsigned long long)width, (unsigned long long)a->dpitch, (unsigned long long)dspan,
				(unsigned long long)a->spitch, (unsigned long long)sspan);
	if (r)
		return r;
	return v->ops->copy_2d(v->dev, f->stream, dir, dst, a->dpitch, src, a->spitch, width, height);
}

int exec_op_MEMSET(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEMSET *in,
		   struct mearas_cqe *c, struct fence_req *f)
{
	const struct mearas_args_MEMSET *a = in->a;

	(void)e, (void)c;
	f->stream = in->stream;
	if ((a->elem_size != 1 && a->elem_size != 2 && a->elem_size != 4) || a->count > (1ull << 40))
		return cudaErrorInvalidValue;
	if (a->count == 0)
		return 0;
	if (!exec_dev_owner(v, a->dst, a->count * a->elem_size))
		return cudaErrorInvalidValue;
	return v->ops->memset(v->dev, f->stream, a->dst, (uint32_t)a->value, a->count, (unsigned)a->elem_size);
}

int exec_op_MEMSET_2D(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEMSET_2D *in,
		      struct mearas_cqe *c, struct fence_req *f)
{
	const struct mearas_args_MEMSET_2D *a = in->a;
	uint64_t span;

	(void)e, (void)c;
	f->stream = in->stream;
	if (a->width == 0 || a->height == 0)
		return 0;
	if (a->width > a->pitch || a->pitch > RANGE_2D_MAX_PITCH || a->height > RANGE_2D_MAX_ROWS)
		return cudaErrorInvalidValue;
	if (!range_2d_span(a->width, a->pitch, a->height, &span) || !exec_dev_owner(v, a->dst, span)) {
		exec_refuse_log(v, "2D memset refused: %llu rows of %llu bytes, pitch %llu, at %#llx leave this "
				"client's memory", (unsigned long long)a->height, (unsigned long long)a->width,
				(unsigned long long)a->pitch, (unsigned long long)a->dst);
		return cudaErrorInvalidValue;
	}
	return v->ops->memset_2d(v->dev, f->stream, a->dst, a->pitch, (uint8_t)a->value, a->width, a->height);
}

int exec_op_HOST_MAPPED(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_HOST_MAPPED *in,
			struct mearas_cqe *c, struct fence_req *f)
{
	(void)in, (void)c, (void)f;
	/* the data area is mapped for the device as a whole: only checked here */
	return host_mapped_valid(e, v->w->data_size) ? 0 : cudaErrorInvalidValue;
}

/* ---- memory pools ---- */

int exec_op_POOL_CREATE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_POOL_CREATE *in,
			struct mearas_cqe *c, struct fence_req *f)
{
	struct exec_pool *p = calloc(1, sizeof(*p));

	(void)e, (void)c, (void)f;
	if (!p)
		return cudaErrorMemoryAllocation;
	p->refs = 1;
	p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
	return exec_keep_or_destroy(v, MEARAS_KIND_POOL, in->a->pool, p, 0);
}

int exec_op_POOL_SET_ATTR(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_POOL_SET_ATTR *in,
			  struct mearas_cqe *c, struct fence_req *f)
{
	struct exec_pool *p = in->pool->obj;
	uint64_t value = in->a->value;

	(void)v, (void)e, (void)c, (void)f;
	switch (in->a->attr) {
	case cudaMemPoolReuseFollowEventDependencies:
	case cudaMemPoolReuseAllowOpportunistic:
	case cudaMemPoolReuseAllowInternalDependencies:
		p->reuse[in->a->attr - cudaMemPoolReuseFollowEventDependencies] = value != 0;
		return 0;
	case cudaMemPoolAttrReleaseThreshold:
		p->release_threshold = value;
		return 0;
	case cudaMemPoolAttrReservedMemHigh:
	case cudaMemPoolAttrUsedMemHigh:
		/* as in CUDA: only a reset to 0 (to the current use) */
		if (value)
			return cudaErrorInvalidValue;
		p->used_high = p->used;
		return 0;
	default:
		return cudaErrorInvalidValue;
	}
}

int exec_op_POOL_GET_ATTR(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_POOL_GET_ATTR *in,
			  struct mearas_cqe *c, struct fence_req *f)
{
	const struct exec_pool *p = in->pool->obj;

	(void)v, (void)e, (void)f;
	switch (in->a->attr) {
	case cudaMemPoolReuseFollowEventDependencies:
	case cudaMemPoolReuseAllowOpportunistic:
	case cudaMemPoolReuseAllowInternalDependencies:
		c->val[0] = p->reuse[in->a->attr - cudaMemPoolReuseFollowEventDependencies];
		return 0;
	case cudaMemPoolAttrReleaseThreshold:
		c->val[0] = p->release_threshold;
		return 0;
	/* memory is reserved as it is allocated: reserved is used */
	case cudaMemPoolAttrReservedMemCurrent:
	case cudaMemPoolAttrUsedMemCurrent:
		c->val[0] = p->used;
		return 0;
	case cudaMemPoolAttrReservedMemHigh:
	case cudaMemPoolAttrUsedMemHigh:
		c->val[0] = p->used_high;
		return 0;
	default:
		return cudaErrorInvalidValue;
	}
}

int exec_op_POOL_TRIM(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_POOL_TRIM *in,
		      struct mearas_cqe *c, struct fence_req *f)
{
	/* freed memory goes back to the vGPU's window at once: nothing is kept to trim */
	(void)v, (void)e, (void)in, (void)c, (void)f;
	return 0;
}

/* ---- stream memory operations (cuStreamWriteValue*, cuStreamWaitValue*) ---- */

/* the word a memory operation names: this client's device memory, or its
 * data area (where the device reaches the worker's registered mapping) */
static int memop_target(struct vgpu *v, uint64_t addr, unsigned size, unsigned place, uint64_t *target, bool *host)
{
	if (size != 4 && size != 8)
		return cudaErrorInvalidValue;
	if (addr % size)
		return cudaErrorInvalidValue; /* the driver wants the word aligned */
	if (place == MEARAS_MEMOP_DEVICE) {
		if (!exec_dev_owner(v, addr, size))
			return cudaErrorInvalidValue;
		*target = addr;
		*host = false;
		return 0;
	}
	if (place == MEARAS_MEMOP_HOST) {
		void *p = exec_data_ptr(v, addr, size);

		if (!p || (uintptr_t)p % size)
			return cudaErrorInvalidValue;
		*target = (uint64_t)(uintptr_t)p;
		*host = true;
		return 0;
	}
	return cudaErrorInvalidValue;
}

/* both ops carry the same arguments: a write's flags may say no barrier, a
 * wait's name its condition (and may ask for a flush) */
static int memop(struct vgpu *v, void *stream, bool wait, const struct mearas_args_STREAM_WRITE_VALUE *a)
{
	uint64_t target;
	bool host;
	bool bad_flags = wait ? (a->flags & ~MEARAS_MEMOP_FLUSH) > MEARAS_MEMOP_NOR
			      : (a->flags & ~MEARAS_MEMOP_NO_BARRIER) != 0;
	int r;

	if (!v->ops->stream_memop)
		return cudaErrorNotSupported;
	if (bad_flags || (a->size == 4 && a->value >> 32))
		return cudaErrorInvalidValue;
	r = memop_target(v, a->addr, a->size, a->place, &target, &host);
	return r ? r : v->ops->stream_memop(v->dev, stream, wait, target, host, a->value, a->size, a->flags);
}

_Static_assert(sizeof(struct mearas_args_STREAM_WRITE_VALUE) == sizeof(struct mearas_args_STREAM_WAIT_VALUE) &&
		       offsetof(struct mearas_args_STREAM_WRITE_VALUE, flags) ==
			       offsetof(struct mearas_args_STREAM_WAIT_VALUE, flags),
	       "the stream memory operations' arguments differ");

int exec_op_STREAM_WRITE_VALUE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_STREAM_WRITE_VALUE *in,
			       struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c, (void)f;
	return memop(v, in->stream, false, in->a);
}

int exec_op_STREAM_WAIT_VALUE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_STREAM_WAIT_VALUE *in,
			      struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c, (void)f;
	return memop(v, in->stream, true, (const struct mearas_args_STREAM_WRITE_VALUE *)in->a);
}
