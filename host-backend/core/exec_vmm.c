// SPDX-License-Identifier: MIT
/*
 * Virtual memory management records (cuMemAddressReserve, cuMemCreate,
 * cuMemMap, cuMemUnmap, cuMemRelease, cuMemAddressFree). Reservations and
 * mappings live in the vGPU's heap (vaheap.h): a reservation is a stretch of
 * the window no allocation comes from; a mapping is an allocation range
 * marked vmm, so every record naming mapped memory is checked as for any
 * allocation. Physical memory is an object of kind phys under a client id,
 * charged against the vGPU's quota when made and given back when its handle
 * is released and no mapping uses it any more (as on a GPU). Mappings are
 * read-write for the vGPU's own device from the moment they are made.
 */
#include <stdlib.h>

#include "exec_internal.h"
#include "mearas/log.h"

struct exec_phys {
	void *dev;              /* the device's physical memory */
	uint64_t size;
	uint32_t refs;          /* the client's handle, and one per mapping */
};

/* what the heap's range of a mapping points to (its tag) */
struct exec_vmap {
	struct exec_phys *p;
	void *cookie;           /* the device's mapping */
};

static int no_vmm(struct vgpu *v)
{
	if (v->ops->phys_create && v->ops->phys_map)
		return 0;
	exec_refuse_log(v, "virtual memory management is not supported by the %s device", v->ops->name);
	return cudaErrorNotSupported;
}

void exec_phys_put(struct vgpu *v, struct exec_phys *p)
{
	if (!p || --p->refs)
		return;
	v->ops->phys_release(v->dev, p->dev);
	exec_charged_free(v, p->size, p);
}

int exec_op_VMM_RESERVE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_VMM_RESERVE *in,
			struct mearas_cqe *c, struct fence_req *f)
{
	int r = no_vmm(v);

	(void)e, (void)f;
	if (r)
		return r;
	pthread_mutex_lock(&v->heap_lock);
	r = vaheap_reserve(&v->heap, in->a->size, in->a->alignment, in->a->addr, &c->val[0]);
	pthread_mutex_unlock(&v->heap_lock);
	if (r == cudaErrorInvalidValue)
		exec_refuse_log(v, "address reservation of %#llx bytes aligned to %#llx refused: not multiples of the "
				"granularity (%#llx) and a power of two", (unsigned long long)in->a->size,
				(unsigned long long)in->a->alignment, (unsigned long long)v->heap.granularity);
	return r;
}

int exec_op_VMM_ADDRESS_FREE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_VMM_ADDRESS_FREE *in,
			     struct mearas_cqe *c, struct fence_req *f)
{
	int r;

	(void)e, (void)c, (void)f;
	pthread_mutex_lock(&v->heap_lock);
	r = vaheap_reserve_free(&v->heap, in->a->va, in->a->size);
	pthread_mutex_unlock(&v->heap_lock);
	if (r) {
		exec_refuse_log(v, "address free of %#llx (%#llx bytes) refused: not a whole reservation, or still "
				"mapped", (unsigned long long)in->a->va, (unsigned long long)in->a->size);
		return cudaErrorInvalidValue;
	}
	return 0;
}

int exec_op_VMM_CREATE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_VMM_CREATE *in,
		       struct mearas_cqe *c, struct fence_req *f)
{
	uint64_t size = in->a->size;
	struct exec_phys *p;
	int r = no_vmm(v);

	(void)e, (void)c, (void)f;
	if (r)
		return r;
	if (size == 0 || size % v->heap.granularity)
		return cudaErrorInvalidValue;
	p = exec_charged_new(v, size, sizeof(*p));
	if (!p)
		return cudaErrorMemoryAllocation;
	r = v->ops->phys_create(v->dev, size, &p->dev);
	if (r) {
		exec_charged_free(v, size, p);
		return r;
	}
	p->size = size;
	p->refs = 1;
	return exec_keep_or_destroy(v, MEARAS_KIND_PHYS, in->a->handle, p, 0);
}

int exec_op_VMM_MAP(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_VMM_MAP *in,
		    struct mearas_cqe *c, struct fence_req *f)
{
	const struct mearas_args_VMM_MAP *a = in->a;
	struct exec_phys *p = in->handle->obj;
	uint64_t gran = v->heap.granularity;
	struct exec_vmap *m;
	int r;

	(void)e, (void)c, (void)f;
	if (a->size == 0 || a->va % gran || a->size % gran || a->offset % gran || a->offset > p->size ||
	    a->size > p->size - a->offset) {
		exec_refuse_log(v, "map of %#llx bytes at %#llx from offset %#llx of a %#llx-byte handle refused: "
				"misaligned or past the handle's end", (unsigned long long)a->size,
				(unsigned long long)a->va, (unsigned long long)a->offset, (unsigned long long)p->size);
		return cudaErrorInvalidValue;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return cudaErrorMemoryAllocation;
	/* the heap first: it refuses ranges outside a reservation or over a
	 * mapping; other vGPUs see the mapping once the device has made it */
	pthread_mutex_lock(&v->heap_lock);
	r = vaheap_map(&v->heap, a->va, a->size, m);
	if (r) {
		pthread_mutex_unlock(&v->heap_lock);
		if (r == cudaErrorInvalidValue)
			exec_refuse_log(v, "map of %#llx bytes at %#llx refused: not inside one reservation, or over "
					"another mapping", (unsigned long long)a->size, (unsigned long long)a->va);
		free(m);
		return r;
	}
	r = v->ops->phys_map(v->dev, a->va, a->size, p->dev, a->offset, &m->cookie);
	if (r) {
		vaheap_unmap(&v->heap, a->va, a->size, NULL, NULL);
		pthread_mutex_unlock(&v->heap_lock);
		free(m);
		return r;
	}
	m->p = p;
	p->refs++;
	pthread_mutex_unlock(&v->heap_lock);
	return 0;
}

static void unmap_one(void *arg, const struct vaheap_range *r)
{
	struct vgpu *v = arg;
	struct exec_vmap *m = r->tag;

	v->ops->phys_unmap(v->dev, r->va, r->size, m->cookie);
	exec_phys_put(v, m->p);
	free(m);
}

int exec_op_VMM_UNMAP(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_VMM_UNMAP *in,
		      struct mearas_cqe *c, struct fence_req *f)
{
	int r = no_vmm(v);

	(void)e, (void)c, (void)f;
	if (r)
		return r;
	pthread_mutex_lock(&v->heap_lock);
	r = vaheap_unmap(&v->heap, in->a->va, in->a->size, unmap_one, v);
	pthread_mutex_unlock(&v->heap_lock);
	if (r) {
		exec_refuse_log(v, "unmap of %#llx bytes at %#llx refused: not whole mappings end to end",
				(unsigned long long)in->a->size, (unsigned long long)in->a->va);
		return cudaErrorInvalidValue;
	}
	return 0;
}

void exec_vmm_teardown(struct vgpu *v)
{
	size_t i = 0;

	/* every mapping, then (with the handle table gone already) the memory */
	pthread_mutex_lock(&v->heap_lock);
	while (i < v->heap.nallocs) {
		const struct vaheap_range *r = &v->heap.allocs[i];

		if (!r->vmm) {
			i++;
			continue;
		}
		if (vaheap_unmap(&v->heap, r->va, r->size, unmap_one, v)) {
			log_err("vGPU %u: a mapping at %#llx would not come out", v->index, (unsigned long long)r->va);
			i++;
		}
	}
	pthread_mutex_unlock(&v->heap_lock);
}
