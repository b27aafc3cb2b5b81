// SPDX-License-Identifier: MIT
/*
 * A worker's region and vGPUs: the shared region (header, a block of rings
 * per vGPU, the data area), and each vGPU set up on its engine with its
 * device address window, heap and rings. Process clients (client.c) and
 * VM slots (vm/vm_slot.c) are set up alike.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h"
#include "memfd.h"
#include "mearas/log.h"
#include "tenant.h"
#include "worker.h"

/* Each vGPU of a client gets its own 1 TiB device address window, so device
 * pointers of different vGPUs never collide (also across nodes). */
#define VA_WINDOW_BASE 0x100000000000ull
#define VA_WINDOW_SIZE 0x010000000000ull
/* The region is mapped here in the worker before the driver starts (so its
 * own address reservations avoid it), and the client maps it at the same
 * address when it can: then pinned host pointers are valid on the device. */
#define REGION_ADDR_HINT 0x600000000000ull
/* where regions go: a remote session's wanted address (the client's, which
 * its own hint put near REGION_ADDR_HINT; a VM slot's data area sits closer
 * to the start of its region than ours, so ours may begin a little below) is
 * taken only inside this zone */
#define REGION_ZONE_START (REGION_ADDR_HINT - 0x1000000000ull)
#define REGION_ZONE_END 0x700000000000ull

/* A remote session's worker maps its region so that its data area lies at the
 * client's address (cfg->data_va): mapped host pointers then mean the same on
 * both nodes. 0 when there is none or it is not a page-aligned address in the
 * zone (the client fell back to another address, or a hostile peer). */
static uint64_t region_wanted(const struct backend_config *cfg, uint64_t data_off, uint64_t size)
{
	uint64_t start = cfg->data_va - data_off;

	if (!cfg->data_va || cfg->data_va < REGION_ZONE_START + data_off || (cfg->data_va & 4095) ||
	    start > REGION_ZONE_END || size > REGION_ZONE_END - start)
		return 0;
	return start;
}

static int heap_map(void *ctx, uint64_t va, uint64_t size, void **cookie)
{
	struct vgpu *v = ctx;

	return v->ops->chunk_map(v->dev, va, size, cookie);
}

static void heap_unmap(void *ctx, uint64_t va, uint64_t size, void *cookie)
{
	struct vgpu *v = ctx;

	v->ops->chunk_unmap(v->dev, va, size, cookie);
}

/* Device memory counts against the quota of the client's identity (all its
 * workers on this vGPU ordinal, of the same assembly), not of this worker. */
static int heap_charge(void *ctx, uint64_t bytes)
{
	struct vgpu *v = ctx;
	static bool told;

	if (!tenant_charge_dev(v->w->tenant_slot, v->index, bytes, v->heap.quota))
		return 0;
	if (!told)
		log_warn("vGPU %u: allocation of %llu bytes refused: this user's clients hold its quota of "
			 "%llu MiB together", v->index, (unsigned long long)bytes,
			 (unsigned long long)(v->heap.quota >> 20));
	told = true;
	return -1;
}

static uint64_t heap_charged(void *ctx)
{
	struct vgpu *v = ctx;

	return tenant_dev_used(v->w->tenant_slot, v->index);
}

static void heap_uncharge(void *ctx, uint64_t bytes)
{
	struct vgpu *v = ctx;

	tenant_uncharge_dev(v->w->tenant_slot, v->index, bytes);
}

static int heap_reserve(void *ctx, uint64_t va, uint64_t size, void **cookie)
{
	struct vgpu *v = ctx;

	*cookie = NULL;
	return v->ops->va_reserve ? v->ops->va_reserve(v->dev, va, size, cookie) : 0;
}

static void heap_release(void *ctx, uint64_t va, uint64_t size, void *cookie)
{
	struct vgpu *v = ctx;

	if (v->ops->va_release)
		v->ops->va_release(v->dev, va, size, cookie);
}

static const struct vaheap_ops heap_ops = {
	.map = heap_map, .unmap = heap_unmap, .charge = heap_charge, .uncharge = heap_uncharge,
	.charged = heap_charged,
	.reserve = heap_reserve, .release = heap_release,
};

const struct vgpu_engine *worker_engine(const struct backend_config *cfg, unsigned i)
{
	return remote_vgpu_is_remote(&cfg->remote, i) ? cfg->remote_engine : &vgpu_engine_local;
}

void vgpu_attach(struct vgpu *v, struct worker *w, unsigned i)
{
	v->w = w;
	v->index = i;
	v->ops = w->cfg->dev;
	pthread_mutex_init(&v->cq_lock, NULL);
	pthread_mutex_init(&v->hf_lock, NULL);
	pthread_mutex_init(&v->heap_lock, NULL);
	pthread_cond_init(&v->hf_cond, NULL);
}

int vgpu_wire(struct vgpu *v, uint8_t *blk, const struct mearas_vgpu_layout *l, uint64_t va_base,
	      uint64_t va_size, uint64_t granularity, uint64_t quota)
{
	vaheap_init(&v->heap, va_base, va_size - MEARAS_GLOBALS_RESERVE, granularity, quota, &heap_ops, v);
	mearas_vgpu_rings_at(&v->rings, blk, l, MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES, MEARAS_ARENA_SIZE);
	mearas_sqc_init(&v->sq, &v->rings);
	for (unsigned t = 0; t < v->w->nthreads; t++)
		mearas_cqp_init(&v->cq[t], &v->rings, t);
	v->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return v->kick_fd < 0 ? -1 : 0;
}

int worker_setup_vgpu(struct worker *w, unsigned i, int ndev, char *err, size_t errlen)
{
	const struct backend_config *cfg = w->cfg;
	struct vgpu *v = &w->vgpus[i];
	struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
							 MEARAS_ARENA_SIZE, w->nthreads);
	/* where worker_init_region put the block: our own arithmetic, never
	 * the region header, which a client (a guest process) can rewrite */
	uint8_t *blk = w->region + 4096 + l.size * i;
	/* filled here, then copied out: nothing is read back from the region */
	struct mearas_devinfo *info = &v->info;
	/* remote sessions start at the client's ordinal, VM slots at their own window */
	uint64_t base = VA_WINDOW_BASE + (uint64_t)(cfg->va_window_first + w->va_index0 + i) * VA_WINDOW_SIZE;
	uint64_t gran = 0, quota;
	const struct vgpu_engine *engine = worker_engine(cfg, i);
	int phys, r;

	vgpu_attach(v, w, i);
	memset(info, 0, sizeof(*info));
	if (!engine) {
		snprintf(err, errlen, "vGPU %u: remote vGPUs cannot run here", i);
		return cudaErrorDevicesUnavailable;
	}
	v->engine = engine;
	phys = cfg->gpu_map[i] >= 0 ? cfg->gpu_map[i] : !engine->local ? 0 : (int)(i % (unsigned)ndev);
	v->phys = phys;
	r = engine->open(v, phys, base, VA_WINDOW_SIZE, info, &gran, err, errlen);
	if (r)
		return r;
	base = info->va_base ? info->va_base : base;
	quota = cfg->quota[i] ? cfg->quota[i] : info->total_mem;
	if (quota > info->total_mem)
		quota = info->total_mem;
	info->total_mem = quota;
	info->va_base = base;
	info->va_size = VA_WINDOW_SIZE;
	/* a remote vGPU's comes with its devinfo from the serving node */
	if (!info->vmm_granularity)
		info->vmm_granularity = gran ? gran : VAHEAP_DEFAULT_GRANULARITY;
	memcpy(blk + l.devinfo, info, sizeof(*info));
	if (vgpu_wire(v, blk, &l, base, VA_WINDOW_SIZE, gran, quota)) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		return cudaErrorMemoryAllocation;
	}
	if (engine->local)
		log_info("vGPU %u -> %s device %d (%s), quota %llu MiB", i, v->ops->name, phys, info->name,
			 (unsigned long long)(quota >> 20));
	return 0;
}

int worker_build_region(struct worker *w, char *err, size_t errlen)
{
	struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
							 MEARAS_ARENA_SIZE, w->nthreads);
	uint64_t off = 4096, data_off, want;

	/* room for the most vGPUs, whatever this client has (unused pages cost
	 * nothing): the data area then sits at the same address in every
	 * worker, so the serving node's copy of it is where the client's pointers
	 * to mapped host memory point */
	data_off = mearas_align_up(off + l.size * MEARAS_MAX_VGPUS, 2u << 20);
	w->region_size = data_off + w->data_size;
	w->memfd = mearas_sealed_memfd("mearas-region", w->region_size);
	if (w->memfd < 0) {
		snprintf(err, errlen, "shared region of %llu bytes: %s",
			 (unsigned long long)w->region_size, strerror(errno));
		return -1;
	}
	want = region_wanted(w->cfg, data_off, w->region_size);
	w->region = mmap((void *)(uintptr_t)(want ? want : REGION_ADDR_HINT), w->region_size,
			 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, w->memfd, 0);
	if (w->region == MAP_FAILED && want)
		w->region = mmap((void *)REGION_ADDR_HINT, w->region_size, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED_NOREPLACE, w->memfd, 0);
	if (w->region == MAP_FAILED)
		w->region = mmap(NULL, w->region_size, PROT_READ | PROT_WRITE, MAP_SHARED, w->memfd, 0);
	if (w->region == MAP_FAILED) {
		snprintf(err, errlen, "mmap region: %s", strerror(errno));
		return -1;
	}
	worker_init_region(w, data_off);
	return 0;
}

void worker_init_region(struct worker *w, uint64_t data_off)
{
	struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
							 MEARAS_ARENA_SIZE, w->nthreads);
	struct mearas_region_hdr *hdr = (struct mearas_region_hdr *)w->region;
	uint64_t off = 4096;

	hdr->magic = MEARAS_REGION_MAGIC;
	hdr->version = MEARAS_PROTO_VERSION;
	hdr->hdr_size = sizeof(*hdr);
	hdr->region_size = w->region_size;
	hdr->nvgpus = w->nvgpus;
	hdr->nthreads = w->nthreads;
	hdr->sq_entries = MEARAS_SQ_ENTRIES;
	hdr->cq_entries = MEARAS_CQ_ENTRIES;
	hdr->arena_size = MEARAS_ARENA_SIZE;
	hdr->data_off = data_off;
	hdr->data_size = w->data_size;
	hdr->vgpu_size = l.size;
	for (unsigned i = 0; i < w->nvgpus; i++)
		hdr->vgpu_off[i] = off + l.size * i;
	w->data = w->region + data_off;
}
