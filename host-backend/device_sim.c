// SPDX-License-Identifier: MIT
/*
 * The host-memory device model (mearasd --device=sim): device memory is host
 * memory behind the same address windows, copies and memsets really move
 * bytes, streams and events keep CUDA's ordering trivially (every operation
 * completes before the next starts), fat binaries are parsed to resolve
 * kernels by name and check their parameter sizes, and kernel launches are
 * counted, not run. It lets the CPU lane test everything but kernel execution.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "device.h"
#include "mearas/fatbin.h"
#include "mearas/log.h"

#define SIM_MEMORY      (16ull << 30)   /* reported total memory */
#define SIM_GRANULARITY (2ull << 20)

struct sim_chunk {
	uint64_t va, size;
	uint8_t *host;
};

struct sim_global {
	char *name;
	uint64_t va, size;
	struct sim_global *next;
};

struct sim_module {
	struct mearas_fatbin_index *index;
	struct sim_global *globals;
};

struct sim_event {
	struct timespec when;
	int recorded;
	unsigned flags;
};

struct mdev {
	pthread_mutex_t lock;   /* chunks are changed by one poller, read by others (peer copies) */
	struct sim_chunk *chunks;
	size_t nchunks, cap;
	uint64_t launches;
	int stream_token;       /* streams need a unique non-NULL handle */
	uint64_t globals_next, globals_end;
	uint8_t *host_base;     /* the registered (mapped) host range: the data area */
	size_t host_size;
};

/* Every model of this worker, so copies can reach a peer vGPU's memory. */
static pthread_mutex_t sim_all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mdev *sim_all[MEARAS_MAX_VGPUS];

static int sim_init(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return 0;
}

static int sim_count(void)
{
	return 2;
}

static void fill_attrs(int32_t *a)
{
	/* values of an H100 SXM, so programs that size themselves by properties behave */
	static const struct { int attr; int32_t val; } attrs[] = {
		{ cudaDevAttrMaxThreadsPerBlock, 1024 }, { cudaDevAttrMaxBlockDimX, 1024 },
		{ cudaDevAttrMaxBlockDimY, 1024 }, { cudaDevAttrMaxBlockDimZ, 64 },
		{ cudaDevAttrMaxGridDimX, 2147483647 }, { cudaDevAttrMaxGridDimY, 65535 },
		{ cudaDevAttrMaxGridDimZ, 65535 }, { cudaDevAttrMaxSharedMemoryPerBlock, 49152 },
		{ cudaDevAttrTotalConstantMemory, 65536 }, { cudaDevAttrWarpSize, 32 },
		{ cudaDevAttrMaxPitch, 2147483647 }, { cudaDevAttrMaxRegistersPerBlock, 65536 },
		{ cudaDevAttrClockRate, 1980000 }, { cudaDevAttrTextureAlignment, 512 },
		{ cudaDevAttrGpuOverlap, 1 }, { cudaDevAttrMultiProcessorCount, 132 },
		{ cudaDevAttrKernelExecTimeout, 0 }, { cudaDevAttrIntegrated, 0 },
		{ cudaDevAttrCanMapHostMemory, 1 }, { cudaDevAttrComputeMode, 0 },
		{ cudaDevAttrConcurrentKernels, 1 }, { cudaDevAttrEccEnabled, 1 },
		{ cudaDevAttrPciBusId, 0 }, { cudaDevAttrPciDeviceId, 0 },
		{ cudaDevAttrMemoryClockRate, 2619000 }, { cudaDevAttrGlobalMemoryBusWidth, 5120 },
		{ cudaDevAttrL2CacheSize, 52428800 }, { cudaDevAttrMaxThreadsPerMultiProcessor, 2048 },
		{ cudaDevAttrAsyncEngineCount, 3 }, { cudaDevAttrUnifiedAddressing, 1 },
		{ cudaDevAttrComputeCapabilityMajor, 9 }, { cudaDevAttrComputeCapabilityMinor, 0 },
		{ cudaDevAttrStreamPrioritiesSupported, 1 }, { cudaDevAttrGlobalL1CacheSupported, 1 },
		{ cudaDevAttrLocalL1CacheSupported, 1 },
		{ cudaDevAttrMaxSharedMemoryPerMultiprocessor, 233472 },
		{ cudaDevAttrMaxRegistersPerMultiprocessor, 65536 }, { cudaDevAttrManagedMemory, 0 },
		{ cudaDevAttrCooperativeLaunch, 1 }, { cudaDevAttrMaxSharedMemoryPerBlockOptin, 232448 },
		{ cudaDevAttrMaxBlocksPerMultiprocessor, 32 }, { cudaDevAttrReservedSharedMemoryPerBlock, 1024 },
		{ cudaDevAttrHostRegisterSupported, 1 }, { cudaDevAttrMemoryPoolsSupported, 1 },
		{ cudaDevAttrComputePreemptionSupported, 1 },
	};
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (attrs[i].attr >= 0 && attrs[i].attr < (int)MEARAS_NUM_ATTRS)
			a[attrs[i].attr] = attrs[i].val;
}

static int sim_open(struct mdev **out, int phys, uint64_t va_base, uint64_t va_size,
		    struct mearas_devinfo *info, uint64_t *granularity)
{
	struct mdev *d;

	if (phys < 0 || phys >= sim_count())
		return cudaErrorInvalidDevice;
	d = calloc(1, sizeof(*d));
	if (!d)
		return cudaErrorMemoryAllocation;
	pthread_mutex_init(&d->lock, NULL);
	d->globals_next = va_base + va_size - MEARAS_GLOBALS_RESERVE;
	d->globals_end = va_base + va_size;
	snprintf(info->name, sizeof(info->name), "mearas-sim (host-memory model %d)", phys);
	for (int i = 0; i < 16; i++)
		info->uuid[i] = (uint8_t)(0x5a ^ (phys * 16 + i));
	info->total_mem = SIM_MEMORY;
	info->driver_version = 13000;
	info->ordinal = phys;
	info->is_sim = 1;
	fill_attrs(info->attrs);
	info->attrs[cudaDevAttrPciBusId] = 0x10 + phys;
	*granularity = SIM_GRANULARITY;
	pthread_mutex_lock(&sim_all_lock);
	for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++) {
		if (!sim_all[i]) {
			sim_all[i] = d;
			break;
		}
	}
	pthread_mutex_unlock(&sim_all_lock);
	*out = d;
	return 0;
}

static void sim_close(struct mdev *d)
{
	pthread_mutex_lock(&sim_all_lock);
	for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++)
		if (sim_all[i] == d)
			sim_all[i] = NULL;
	pthread_mutex_unlock(&sim_all_lock);
	for (size_t i = 0; i < d->nchunks; i++)
		munmap(d->chunks[i].host, d->chunks[i].size);
	free(d->chunks);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static void sim_bind_thread(struct mdev *d)
{
	(void)d;
}

static int sim_host_register(struct mdev *d, void *base, size_t size)
{
	d->host_base = base;
	d->host_size = size;
	return 0;
}

static void sim_host_unregister(struct mdev *d, void *base)
{
	(void)d;
	(void)base;
}

static int sim_chunk_map(struct mdev *d, uint64_t va, uint64_t size, void **cookie)
{
	struct sim_chunk c = { .va = va, .size = size };
	size_t at;

	c.host = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c.host == MAP_FAILED)
		return cudaErrorMemoryAllocation;
	pthread_mutex_lock(&d->lock);
	if (d->nchunks == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 16;
		struct sim_chunk *n = realloc(d->chunks, ncap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&d->lock);
			munmap(c.host, size);
			return cudaErrorMemoryAllocation;
		}
		d->chunks = n;
		d->cap = ncap;
	}
	for (at = 0; at < d->nchunks && d->chunks[at].va < va; at++)
		;
	memmove(&d->chunks[at + 1], &d->chunks[at], (d->nchunks - at) * sizeof(c));
	d->chunks[at] = c;
	d->nchunks++;
	pthread_mutex_unlock(&d->lock);
	*cookie = c.host;
	return 0;
}

static void sim_chunk_unmap(struct mdev *d, uint64_t va, uint64_t size, void *cookie)
{
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nchunks; i++) {
		if (d->chunks[i].va == va) {
			memmove(&d->chunks[i], &d->chunks[i + 1], (d->nchunks - i - 1) * sizeof(d->chunks[0]));
			d->nchunks--;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	munmap(cookie, size);
}

static void sim_chunk_unmap_va(struct mdev *d, uint64_t va)
{
	void *host = NULL;
	uint64_t size = 0;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nchunks; i++) {
		if (d->chunks[i].va == va) {
			host = d->chunks[i].host;
			size = d->chunks[i].size;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	if (host)
		sim_chunk_unmap(d, va, size, host);
}

/* Host address of [va, va+len) if it lies in one mapped chunk. The poller
 * validated the range against the allocations already; this is the
 * model's own guard. */
static uint8_t *sim_host(struct mdev *d, uint64_t va, uint64_t len)
{
	uint8_t *p = NULL;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nchunks; i++) {
		struct sim_chunk *c = &d->chunks[i];

		if (va >= c->va && va - c->va < c->size && len <= c->size - (va - c->va)) {
			p = c->host + (va - c->va);
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return p;
}

static int sim_mem_info(struct mdev *d, uint64_t *free_b, uint64_t *total)
{
	(void)d;
	*free_b = SIM_MEMORY;
	*total = SIM_MEMORY;
	return 0;
}


static uint8_t *sim_any_host(struct mdev *d, uint64_t va, uint64_t len)
{
	uint8_t *p = sim_host(d, va, len);

	if (p)
		return p;
	pthread_mutex_lock(&sim_all_lock);
	for (unsigned i = 0; i < MEARAS_MAX_VGPUS && !p; i++)
		if (sim_all[i] && sim_all[i] != d)
			p = sim_host(sim_all[i], va, len);
	pthread_mutex_unlock(&sim_all_lock);
	return p;
}

static int sim_copy(struct mdev *d, void *stream, int dir, uint64_t dst, uint64_t src, uint64_t size)
{
	uint8_t *s, *t;

	(void)stream;
	switch (dir) {
	case MEARAS_COPY_HTOD:
		t = sim_any_host(d, dst, size);
		s = (uint8_t *)(uintptr_t)src;
		break;
	case MEARAS_COPY_DTOH:
		t = (uint8_t *)(uintptr_t)dst;
		s = sim_any_host(d, src, size);
		break;
	case MEARAS_COPY_DTOD:
		t = sim_any_host(d, dst, size);
		s = sim_any_host(d, src, size);
		break;
	case MEARAS_COPY_HTOH:
		t = (uint8_t *)(uintptr_t)dst;
		s = (uint8_t *)(uintptr_t)src;
		break;
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
	if (!s || !t)
		return cudaErrorInvalidValue;
	memmove(t, s, size);
	return 0;
}

static int sim_copy_2d(struct mdev *d, void *stream, int dir, uint64_t dst, uint64_t dpitch,
		       uint64_t src, uint64_t spitch, uint64_t width, uint64_t height)
{
	for (uint64_t r = 0; r < height; r++) {
		int e = sim_copy(d, stream, dir, dst + r * dpitch, src + r * spitch, width);

		if (e)
			return e;
	}
	return 0;
}

static int sim_memset(struct mdev *d, void *stream, uint64_t dst, uint32_t value, uint64_t count,
		      unsigned elem)
{
	uint8_t *p;

	(void)stream;
	if (count > UINT64_MAX / elem)
		return cudaErrorInvalidValue;
	p = sim_any_host(d, dst, count * elem);
	if (!p)
		return cudaErrorInvalidValue;
	if (elem == 1) {
		memset(p, (int)(value & 0xff), count);
	} else if (elem == 2) {
		uint16_t v = (uint16_t)value;

		for (uint64_t i = 0; i < count; i++)
			memcpy(p + i * 2, &v, 2);
	} else {
		for (uint64_t i = 0; i < count; i++)
			memcpy(p + i * 4, &value, 4);
	}
	return 0;
}

static int sim_memset_2d(struct mdev *d, void *stream, uint64_t dst, uint64_t pitch, uint8_t value,
			 uint64_t width, uint64_t height)
{
	for (uint64_t r = 0; r < height; r++) {
		int e = sim_memset(d, stream, dst + r * pitch, value, width, 1);

		if (e)
			return e;
	}
	return 0;
}

static int sim_module_load(struct mdev *d, const void *image, size_t size, void **module)
{
	char err[256];
	struct sim_module *m;

	(void)d;
	m = calloc(1, sizeof(*m));
	if (!m)
		return cudaErrorMemoryAllocation;
	m->index = mearas_fatbin_index_new(image, size, err, sizeof(err));
	if (!m->index) {
		log_warn("sim: module rejected: %s", err);
		free(m);
		return cudaErrorInvalidKernelImage;
	}
	*module = m;
	return 0;
}

static void sim_module_unload(struct mdev *d, void *module)
{
	struct sim_module *m = module;

	while (m->globals) {
		struct sim_global *g = m->globals;

		m->globals = g->next;
		sim_chunk_unmap_va(d, g->va);
		free(g->name);
		free(g);
	}
	mearas_fatbin_index_free(m->index);
	free(m);
}

/* A function is its kernel's entry in the module's index: it lives as long
 * as the module, so nothing is allocated per lookup. */
static int sim_func_get(struct mdev *d, void *module, const char *name, void **func,
			uint32_t *nparams, uint32_t *param_bytes)
{
	struct sim_module *m = module;
	const struct mearas_kernel_info *k = mearas_fatbin_find_kernel(m->index, name);

	(void)d;
	if (!k)
		return cudaErrorInvalidDeviceFunction;
	*nparams = k->nparams;
	*param_bytes = k->param_bytes;
	*func = (void *)(uintptr_t)k;
	return 0;
}

static int sim_func_attrs(struct mdev *d, void *func, uint64_t out[2])
{
	(void)d;
	(void)func;
	/* numRegs 32, maxThreadsPerBlock 1024, ptx/binary version 90 */
	out[0] = 32 | (1024ull << 16) | (90ull << 32) | (90ull << 48);
	out[1] = 0;
	return 0;
}

static int sim_func_set_attr(struct mdev *d, void *func, int attr, int value)
{
	(void)d;
	(void)func;
	(void)attr;
	(void)value;
	return 0;
}

static int sim_occupancy(struct mdev *d, void *func, int block, size_t smem, int *blocks)
{
	(void)d;
	(void)func;
	if (block <= 0)
		return cudaErrorInvalidValue;
	*blocks = 2048 / block;
	if (*blocks > 32)
		*blocks = 32;
	if (smem && (size_t)*blocks * smem > 233472)
		*blocks = (int)(233472 / smem);
	return 0;
}

/* A module's globals get host memory at addresses in the top of the vGPU's
 * window, which the worker keeps out of its heap (MEARAS_GLOBALS_RESERVE). */
static int sim_global_get(struct mdev *d, void *module, const char *name, uint64_t size_hint,
			  uint64_t *ptr, uint64_t *size)
{
	struct sim_module *m = module;
	struct sim_global *g;
	uint64_t va, len;
	void *cookie;
	int e;

	for (g = m->globals; g; g = g->next) {
		if (!strcmp(g->name, name)) {
			*ptr = g->va;
			*size = g->size;
			return 0;
		}
	}
	if (size_hint == 0 || size_hint > (1u << 30))
		return cudaErrorInvalidSymbol;
	len = (size_hint + 4095) & ~4095ull;
	va = d->globals_next;
	if (va + len > d->globals_end)
		return cudaErrorMemoryAllocation;
	g = calloc(1, sizeof(*g));
	if (!g || !(g->name = strdup(name))) {
		free(g);
		return cudaErrorMemoryAllocation;
	}
	e = sim_chunk_map(d, va, len, &cookie);
	if (e) {
		free(g->name);
		free(g);
		return e;
	}
	d->globals_next += len;
	g->va = va;
	g->size = size_hint;
	g->next = m->globals;
	m->globals = g;
	*ptr = va;
	*size = size_hint;
	return 0;
}

/*
 * The model runs no device code, except one kernel by name, so that tests
 * can watch a kernel write mapped host memory (on a remote vGPU: the remote
 * node's copy of it). Its CUDA source, for programs built with nvcc:
 *   extern "C" __global__ void mearas_sim_add_u32(unsigned *p, unsigned n, unsigned v)
 *   { for (unsigned i = 0; i < n; i++) p[i] += v; }
 * Only pointers into the mapped host range are modelled.
 */
#define SIM_KERNEL_ADD_U32 "mearas_sim_add_u32"

static int sim_add_u32(struct mdev *d, const void *params, uint32_t len)
{
	uint64_t p;
	uint32_t n, v;

	if (len != 16)
		return cudaErrorInvalidValue;
	memcpy(&p, params, 8);
	memcpy(&n, (const uint8_t *)params + 8, 4);
	memcpy(&v, (const uint8_t *)params + 12, 4);
	if (!d->host_base || p < (uint64_t)(uintptr_t)d->host_base || (p & 3) ||
	    p - (uint64_t)(uintptr_t)d->host_base > d->host_size ||
	    (uint64_t)n * 4 > d->host_size - (p - (uint64_t)(uintptr_t)d->host_base)) {
		/* what a GPU would do: a fault in this context only */
		log_warn("sim: mearas_sim_add_u32 of %#llx, %u words: outside the registered host memory: illegal address",
			 (unsigned long long)p, n);
		return cudaErrorIllegalAddress;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t x;

		memcpy(&x, (uint8_t *)(uintptr_t)p + 4ull * i, 4);
		x += v;
		memcpy((uint8_t *)(uintptr_t)p + 4ull * i, &x, 4);
	}
	return 0;
}

static int sim_launch(struct mdev *d, void *func, void *stream, const struct mdev_launch *l)
{
	const struct mearas_kernel_info *k = func;

	(void)stream;
	if (l->param_bytes != k->param_bytes) {
		log_warn("sim: launch of %s with %u parameter bytes, kernel takes %u",
			 k->name, l->param_bytes, k->param_bytes);
		return cudaErrorInvalidValue;
	}
	d->launches++;
	if (!strcmp(k->name, SIM_KERNEL_ADD_U32))
		return sim_add_u32(d, l->params, l->param_bytes);
	return 0;
}

static void *sim_stream_default(struct mdev *d)
{
	return &d->stream_token;
}

static int sim_stream_create(struct mdev *d, unsigned flags, int priority, void **s)
{
	(void)d;
	(void)flags;
	(void)priority;
	*s = malloc(1);
	return *s ? 0 : cudaErrorMemoryAllocation;
}

static int sim_stream_destroy(struct mdev *d, void *s)
{
	(void)d;
	free(s);
	return 0;
}

static int sim_stream_wait_event(struct mdev *d, void *s, void *ev, unsigned flags)
{
	(void)d;
	(void)s;
	(void)ev;
	(void)flags;
	return 0;
}

static int sim_event_create(struct mdev *d, unsigned flags, void **e)
{
	struct sim_event *ev = calloc(1, sizeof(*ev));

	(void)d;
	if (!ev)
		return cudaErrorMemoryAllocation;
	ev->flags = flags;
	*e = ev;
	return 0;
}

static int sim_event_destroy(struct mdev *d, void *e)
{
	(void)d;
	free(e);
	return 0;
}

static int sim_event_record(struct mdev *d, void *e, void *s)
{
	struct sim_event *ev = e;

	(void)d;
	(void)s;
	clock_gettime(CLOCK_MONOTONIC, &ev->when);
	ev->recorded = 1;
	return 0;
}

static int sim_event_query(struct mdev *d, void *e)
{
	(void)d;
	(void)e;
	return 0;
}

static int sim_event_elapsed(struct mdev *d, void *start, void *end, float *ms)
{
	struct sim_event *a = start, *b = end;

	(void)d;
	if (!a->recorded || !b->recorded)
		return cudaErrorInvalidResourceHandle;
	if ((a->flags | b->flags) & cudaEventDisableTiming)
		return cudaErrorInvalidResourceHandle;
	*ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
		      (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
	return 0;
}

static int sim_host_func(struct mdev *d, void *s, void (*fn)(void *), void *arg)
{
	(void)d;
	(void)s;
	fn(arg);
	return 0;
}

const struct mdev_ops mdev_sim_ops = {
	.name = "sim",
	.startup_note = "host-memory device model: memory, copies, memsets, streams, events and "
			"registration are real; kernel launches are checked and counted, not run",
	.init = sim_init,
	.count = sim_count,
	.open = sim_open,
	.close = sim_close,
	.bind_thread = sim_bind_thread,
	.host_register = sim_host_register,
	.host_unregister = sim_host_unregister,
	.chunk_map = sim_chunk_map,
	.chunk_unmap = sim_chunk_unmap,
	.mem_info = sim_mem_info,
	.copy = sim_copy,
	.copy_2d = sim_copy_2d,
	.memset = sim_memset,
	.memset_2d = sim_memset_2d,
	.module_load = sim_module_load,
	.module_unload = sim_module_unload,
	.func_get = sim_func_get,
	.func_attrs = sim_func_attrs,
	.func_set_attr = sim_func_set_attr,
	.occupancy = sim_occupancy,
	.global_get = sim_global_get,
	.launch = sim_launch,
	.stream_default = sim_stream_default,
	.stream_create = sim_stream_create,
	.stream_destroy = sim_stream_destroy,
	.stream_wait_event = sim_stream_wait_event,
	.event_create = sim_event_create,
	.event_destroy = sim_event_destroy,
	.event_record = sim_event_record,
	.event_query = sim_event_query,
	.event_elapsed = sim_event_elapsed,
	.host_func = sim_host_func,
};
