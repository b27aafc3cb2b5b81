// SPDX-License-Identifier: MIT
/*
 * Virtual memory management: cuMemAddressReserve, cuMemCreate, cuMemMap,
 * cuMemSetAccess and the rest, over the back end's VMM records (ops.spec:
 * VMM_*; host-backend/core/exec_vmm.c checks everything again).
 *
 * Each vGPU has its own device address window, so a reservation belongs to
 * one vGPU: the one whose window holds the address hint, else the current
 * context's. Physical memory (a CUmemGenericAllocationHandle: a pointer to
 * a struct vmm_handle here) is memory of one vGPU, charged against its
 * quota, and maps into reservations of that vGPU only. The back end makes a
 * mapping read-write for its own device when it is made; cuMemSetAccess
 * checks and records the access descriptors (cuMemGetAccess reads them
 * back) and refuses access for another device (CUDA_ERROR_NOT_SUPPORTED:
 * vGPUs do not map each other's memory). Shareable handles (export/import)
 * are not served.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mearas/log.h"
#include "cu.h"

#define VMM_MAGIC 0x6d566d6du

struct vmm_handle {
	uint32_t magic;
	int vgpu;
	uint32_t id;
	uint64_t size;
	CUmemAllocationProp prop;
	unsigned refs;          /* the program's: cuMemCreate, cuMemRetainAllocationHandle */
	unsigned maps;          /* mappings using it; the back end's handle goes when both are 0 */
};

struct vmm_resv {
	int vgpu;
	uint64_t va, size;
};

struct vmm_map {
	int vgpu;
	uint64_t va, size;
	struct vmm_handle *h;
	unsigned long long prot; /* CU_MEM_ACCESS_FLAGS_* for its own device, as cuMemSetAccess set it */
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vmm_handle **handles;
static size_t nhandles, cap_handles;
static struct vmm_resv *resvs;
static size_t nresvs, cap_resvs;
static struct vmm_map *maps;    /* sorted by va */
static size_t nmaps, cap_maps;

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	void *p;
	size_t n;

	if (need <= *cap)
		return true;
	n = *cap ? *cap * 2 : 32;
	while (n < need)
		n *= 2;
	p = realloc(*arr, n * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = n;
	return true;
}

/* the live handle behind h (lock held), or NULL */
static struct vmm_handle *handle_of(CUmemGenericAllocationHandle h)
{
	for (size_t i = 0; i < nhandles; i++)
		if ((CUmemGenericAllocationHandle)(uintptr_t)handles[i] == h)
			return handles[i];
	return NULL;
}

/* the handle's last use is gone: the back end's memory goes too (lock held) */
static void handle_drop_if_unused(struct vmm_handle *h)
{
	if (h->refs || h->maps)
		return;
	rt_do_VMM_RELEASE(h->vgpu, h->id);
	for (size_t i = 0; i < nhandles; i++) {
		if (handles[i] == h) {
			handles[i] = handles[--nhandles];
			break;
		}
	}
	h->magic = 0;
	free(h);
}

/* the reservation holding all of [va, va+len) (lock held), or NULL */
static struct vmm_resv *resv_of(uint64_t va, uint64_t len)
{
	for (size_t i = 0; i < nresvs; i++) {
		struct vmm_resv *r = &resvs[i];

		if (va >= r->va && va - r->va < r->size && len <= r->size - (va - r->va))
			return r;
	}
	return NULL;
}

/* index of the mapping holding va (lock held), or -1 */
static long map_at(uint64_t va)
{
	for (size_t i = 0; i < nmaps; i++)
		if (va >= maps[i].va && va - maps[i].va < maps[i].size)
			return (long)i;
	return -1;
}

/* the mappings [first, first+*n) make up [va, va+size) end to end (lock held) */
static bool maps_cover(uint64_t va, uint64_t size, bool whole, size_t *first, size_t *n)
{
	long i = map_at(va);
	uint64_t end;

	if (i < 0 || size == 0 || (whole && maps[i].va != va))
		return false;
	*first = (size_t)i;
	*n = 0;
	end = maps[i].va;
	/* from the mapping holding va until past va+size */
	while (end <= va || end - va < size) {
		const struct vmm_map *m;

		if (*first + *n >= nmaps)
			return false;
		m = &maps[*first + *n];
		if (m->va != end || m->vgpu != maps[i].vgpu)
			return false;
		end += m->size;
		(*n)++;
	}
	return !whole || end - va == size;
}

/* the vGPU a property names: pinned device memory of a device we have */
static CUresult prop_vgpu(const char *call, const CUmemAllocationProp *prop, int *vgpu)
{
	if (prop->type == CU_MEM_ALLOCATION_TYPE_INVALID || prop->type >= CU_MEM_ALLOCATION_TYPE_MAX)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) {
		log_warn("%s: only pinned device memory is served (allocation type %d asked)", call, (int)prop->type);
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST || prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
		log_warn("%s: host memory through cuMemCreate is not served by mearas, device memory only", call);
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (prop->location.id < 0 || (unsigned)prop->location.id >= rt.nvgpus)
		return CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
	if (prop->allocFlags.compressionType) {
		log_warn("%s: compressible memory is not served by mearas", call);
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	*vgpu = prop->location.id;
	return CUDA_SUCCESS;
}

static uint64_t granularity_of(int vgpu)
{
	uint64_t g = rt.v[vgpu].info->vmm_granularity;

	return g ? g : 2ull << 20;
}

bool cu_vmm_reservation_of(CUdeviceptr ptr, uint64_t *va, uint64_t *size)
{
	const struct vmm_resv *rv;

	pthread_mutex_lock(&vmm_lock);
	rv = resv_of(ptr, 1);
	if (rv) {
		*va = rv->va;
		*size = rv->size;
	}
	pthread_mutex_unlock(&vmm_lock);
	return rv != NULL;
}

CU_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
							 CUmemAllocationGranularity_flags option)
{
	int vgpu;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!granularity || !prop ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	/* Pinned host memory: the host's page size, what such memory is mapped
	 * in. cuMemCreate refuses it (not served, logged there): a program that
	 * probes with the granularity and a small cuMemCreate, as NCCL does
	 * before it uses cuMem host memory, sees the create fail and takes its
	 * fallback (NCCL: /dev/shm and cuMemHostRegister). NCCL 2.28 treats a
	 * failed granularity query there as success and goes on into cuMem host
	 * memory, which then fails its init. */
	if (prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
	    (prop->location.type == CU_MEM_LOCATION_TYPE_HOST || prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA)) {
		long page = sysconf(_SC_PAGESIZE);

		*granularity = page > 0 ? (size_t)page : 4096;
		return CUDA_SUCCESS;
	}
	r = prop_vgpu("cuMemGetAllocationGranularity", prop, &vgpu);
	if (r)
		return r;
	/* one value for both: the back end's heap maps in these units */
	*granularity = granularity_of(vgpu);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
					       unsigned long long flags)
{
	struct cu_ctx *c = NULL;
	int vgpu;
	uint64_t va;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!ptr || !size || flags || (alignment & (alignment - 1)))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	vgpu = addr ? dm_window_owner(addr) : -1;
	if (vgpu < 0) {
		c = cu_current();
		vgpu = c ? c->vgpu : rt_tls.device >= 0 ? rt_tls.device : 0;
	}
	if ((unsigned)vgpu >= rt.nvgpus)
		return CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
	if (size % granularity_of(vgpu))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_lock(&vmm_lock);
	if (!grow((void **)&resvs, &cap_resvs, nresvs + 1, sizeof(*resvs))) {
		pthread_mutex_unlock(&vmm_lock);
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	r = cu_result(rt_do_VMM_RESERVE(vgpu, size, alignment, addr, &va));
	if (!r) {
		resvs[nresvs++] = (struct vmm_resv){ vgpu, va, size };
		*ptr = va;
	}
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct vmm_resv *rv;
	CUresult r = cu_ready();

	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	rv = resv_of(ptr, 1);
	if (!rv || rv->va != ptr || rv->size != size) {
		pthread_mutex_unlock(&vmm_lock);
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	r = cu_result(rt_do_VMM_ADDRESS_FREE(rv->vgpu, ptr, size));
	if (!r)
		*rv = resvs[--nresvs];
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
				       const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct vmm_handle *h;
	int vgpu;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!handle || !prop || flags || !size)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = prop_vgpu("cuMemCreate", prop, &vgpu);
	if (r)
		return r;
	if (size % granularity_of(vgpu))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	h = calloc(1, sizeof(*h));
	if (!h)
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	*h = (struct vmm_handle){ .magic = VMM_MAGIC, .vgpu = vgpu, .id = rt_new_handle(), .size = size,
				  .prop = *prop, .refs = 1 };
	pthread_mutex_lock(&vmm_lock);
	if (!h->id || !grow((void **)&handles, &cap_handles, nhandles + 1, sizeof(*handles)))
		r = CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	else
		r = cu_result(rt_do_VMM_CREATE(vgpu, h->id, size));
	if (r) {
		pthread_mutex_unlock(&vmm_lock);
		free(h);
		return r;
	}
	handles[nhandles++] = h;
	pthread_mutex_unlock(&vmm_lock);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct vmm_handle *h;
	CUresult r = cu_ready();

	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	h = handle_of(handle);
	if (!h || !h->refs) {
		pthread_mutex_unlock(&vmm_lock);
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	/* mappings keep the memory until they are unmapped */
	h->refs--;
	handle_drop_if_unused(h);
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
				    unsigned long long flags)
{
	struct vmm_handle *h;
	struct vmm_resv *rv;
	size_t at;
	CUresult r = cu_ready();

	if (r)
		return r;
	/* the driver takes offset 0 only (cuda.h: "currently must be zero") */
	if (!size || flags || offset)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_lock(&vmm_lock);
	h = handle_of(handle);
	rv = resv_of(ptr, size);
	if (!h || !rv || size > h->size || !grow((void **)&maps, &cap_maps, nmaps + 1, sizeof(*maps))) {
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		goto out;
	}
	if (rv->vgpu != h->vgpu) {
		log_warn("cuMemMap: memory of device %d into a reservation of device %d: each mearas vGPU has its "
			 "own address window, so a reservation holds its own device's memory only", h->vgpu, rv->vgpu);
		r = CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
		goto out;
	}
	r = cu_result(rt_do_VMM_MAP(h->vgpu, ptr, size, offset, h->id));
	if (r)
		goto out;
	for (at = 0; at < nmaps && maps[at].va < ptr; at++)
		;
	memmove(&maps[at + 1], &maps[at], (nmaps - at) * sizeof(*maps));
	/* no access until cuMemSetAccess, as far as cuMemGetAccess tells */
	maps[at] = (struct vmm_map){ h->vgpu, ptr, size, h, CU_MEM_ACCESS_FLAGS_PROT_NONE };
	nmaps++;
	h->maps++;
	dm_add(h->vgpu, ptr, size, DM_VMM);
out:
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	size_t first, n;
	CUresult r = cu_ready();

	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	if (!maps_cover(ptr, size, true, &first, &n)) {
		pthread_mutex_unlock(&vmm_lock);
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	r = cu_result(rt_do_VMM_UNMAP(maps[first].vgpu, ptr, size));
	if (!r) {
		for (size_t i = first; i < first + n; i++) {
			dm_remove_vmm(maps[i].vgpu, maps[i].va);
			maps[i].h->maps--;
			handle_drop_if_unused(maps[i].h);
		}
		memmove(&maps[first], &maps[first + n], (nmaps - first - n) * sizeof(*maps));
		nmaps -= n;
	}
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	unsigned long long prot = CU_MEM_ACCESS_FLAGS_PROT_NONE;
	size_t first, n;
	int vgpu;
	CUresult r = cu_need(cu_ready(), desc && count && size);

	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	if (!maps_cover(ptr, size, false, &first, &n)) {
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
		goto out;
	}
	vgpu = maps[first].vgpu;
	for (size_t i = 0; i < count; i++) {
		const CUmemAccessDesc *d = &desc[i];

		if (d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d->flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		    d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
			r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
			goto out;
		}
		if (d->location.type == CU_MEM_LOCATION_TYPE_HOST || d->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
		    d->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT) {
			log_warn("cuMemSetAccess: host access to device memory is not served by mearas");
			r = CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
			goto out;
		}
		if (d->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
			r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
			goto out;
		}
		if (d->location.id < 0 || (unsigned)d->location.id >= rt.nvgpus) {
			r = CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
			goto out;
		}
		if (d->location.id != vgpu) {
			if (d->flags == CU_MEM_ACCESS_FLAGS_PROT_NONE)
				continue; /* no access for another device: what it has */
			log_warn("cuMemSetAccess: access for device %d to memory of device %d: mearas vGPUs do not map "
				 "each other's memory (copy between them instead)", d->location.id, vgpu);
			r = CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
			goto out;
		}
		prot = d->flags;
	}
	for (size_t i = first; i < first + n; i++)
		maps[i].prot = prot;
out:
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
	long i;
	CUresult r = cu_need(cu_ready(), flags && location);

	if (r)
		return r;
	if (location->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (location->id < 0 || (unsigned)location->id >= rt.nvgpus)
		return CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
	pthread_mutex_lock(&vmm_lock);
	i = map_at(ptr);
	if (i < 0) {
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	} else {
		*flags = maps[i].vgpu == location->id ? maps[i].prot : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	}
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	long i;
	CUresult r = cu_need(cu_ready(), handle);

	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	i = map_at((uint64_t)(uintptr_t)addr);
	if (i < 0) {
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	} else {
		maps[i].h->refs++;
		*handle = (CUmemGenericAllocationHandle)(uintptr_t)maps[i].h;
	}
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
								  CUmemGenericAllocationHandle handle)
{
	struct vmm_handle *h;
	CUresult r = cu_need(cu_ready(), prop);

	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	h = handle_of(handle);
	if (h && h->refs)
		*prop = h->prop;
	else
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

/* a reset vGPU's reservations, mappings and memory are gone in the back end */
static void vmm_forget_vgpu(int vgpu)
{
	size_t j = 0;

	pthread_mutex_lock(&vmm_lock);
	RT_DROP_VGPU(resvs, nresvs, vgpu);
	RT_DROP_VGPU(maps, nmaps, vgpu);
	for (size_t i = 0; i < nhandles; i++) {
		if (handles[i]->vgpu != vgpu) {
			handles[j++] = handles[i];
		} else {
			handles[i]->magic = 0;
			free(handles[i]);
		}
	}
	nhandles = j;
	pthread_mutex_unlock(&vmm_lock);
}

__attribute__((constructor)) static void vmm_init(void)
{
	rt_on_reset(vmm_forget_vgpu);
}
