// SPDX-License-Identifier: MIT
/*
 * The host-memory device model (mearasd --device=sim): device memory is host
 * memory behind the same address windows, copies and memsets really move
 * bytes, streams and events keep CUDA's ordering trivially (every operation
 * completes before the next starts), fat binaries are parsed to resolve
 * kernels by name and check their parameter sizes, and kernel launches are
 * counted, not run. It lets the CPU lane test everything but kernel execution.
 *
 * Two models let tests see work that is not done yet and graphs:
 *  - time: a launch of mearas_sim_spin(unsigned ms) keeps its stream busy
 *    for ms milliseconds; events recorded behind it pass only then, and
 *    streams that wait for them inherit the delay (copies still move their
 *    bytes at once);
 *  - capture: work put on a capturing stream is recorded as graph nodes
 *    (copies, memsets, launches, host functions) and replayed at each
 *    launch of the instantiated graph. A stream that waits for an event
 *    recorded in a capture joins it (CUDA's fork), and its work goes into
 *    the same graph; the graph runs its nodes in the order they were
 *    captured, which keeps every dependency the capture expressed. Ending
 *    the capture (on the stream that began it) ends it for all its streams.
 * And one kernel never finishes (mearas_sim_hang), for the GPU time limit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "device.h"
#include "mearas/dynarray.h"
#include "mearas/fatbin.h"
#include "mearas/log.h"
#include "mearas/tensormap.h"
#include "device_sim_array.h"
#include "device_sim_memop.h"
#include "device_sim_link.h"

#define SIM_MEMORY      (16ull << 30)   /* reported total memory */
#define SIM_GRANULARITY (2ull << 20)

struct sim_chunk {
	uint64_t va, size;
	uint8_t *host;
	/* a VMM reservation: host is an inaccessible mapping of its size, and
	 * only the stretches in mdev.vmaps (physical memory mapped over it)
	 * are memory */
	bool resv;
};

/* VMM physical memory: a memfd, so one piece can be mapped at several
 * addresses and every mapping sees the same bytes */
struct sim_phys {
	int fd;
	uint64_t size;
};

struct sim_vmap {
	uint64_t va, size;
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
	unsigned refs;          /* its handle's, and one per graph record node */
	struct timespec when;
	int recorded;
	int in_capture;         /* last recorded on a capturing stream */
	struct sim_graph *cap;  /* that capture's graph (a reference) */
	unsigned flags;
	uint64_t ready_ns;      /* passes at this monotonic time */
};

/* A function: what func_get hands out, one per lookup as on a GPU. */
struct sim_func {
	const struct mearas_kernel_info *k;
};

enum sim_node_kind { SN_COPY, SN_COPY_2D, SN_MEMSET, SN_MEMSET_2D, SN_LAUNCH, SN_HOST, SN_EVENT_RECORD, SN_EVENT_WAIT };

struct sim_node {
	enum sim_node_kind kind;
	int dir;
	uint64_t dst, dpitch, src, spitch, width, height;
	uint32_t value;
	unsigned elem;
	char *name;             /* SN_LAUNCH: kernel name and a copy of the parameters */
	void *params;
	uint32_t param_bytes;
	struct mdev_launch launch; /* SN_LAUNCH: its configuration and attributes (params not kept) */
	void (*fn)(void *);     /* SN_HOST */
	void *arg;
	struct sim_event *event; /* SN_EVENT_RECORD, SN_EVENT_WAIT (a reference) */
};

/* A captured graph; instantiations share it (refs). */
struct sim_graph {
	struct sim_node *nodes;
	size_t n, cap;
	unsigned refs;
	int ended;              /* its capture is over */
	void *origin;           /* the stream that began the capture */
};

struct sim_exec {
	struct sim_graph *g;
};

struct sim_stream {
	uint64_t busy_until;    /* monotonic ns its work finishes (mearas_sim_spin) */
	struct sim_graph *capture;      /* capturing into this graph */
};

/* cudaLimit 0..6 (stack, printf FIFO, malloc heap, device runtime sync
 * depth and pending launches, L2 fetch granularity, persisting L2 size) */
#define SIM_LIMITS 7
static const uint64_t sim_limit_defaults[SIM_LIMITS] = { 1024, 1u << 20, 8u << 20, 2, 2048, 64, 0 };

struct mdev {
	pthread_mutex_t lock;   /* chunks are changed by one poller, read by others (peer copies) */
	struct sim_chunk *chunks;
	size_t nchunks, cap;
	struct sim_vmap *vmaps;         /* sorted by va */
	size_t nvmaps, cap_vmaps;
	uint64_t launches;
	struct sim_stream legacy;       /* the default stream */
	uint64_t globals_next, globals_end;
	uint8_t *host_base;     /* the registered (mapped) host range: the data area */
	size_t host_size;
	uint64_t limits[SIM_LIMITS];    /* cudaLimit values, as an H100's context starts */
	bool profiling;
	/* device printf (mearas_sim_printf) not yet flushed; under lock */
	char printf_buf[4096];
	size_t printf_len;
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
		{ cudaDevAttrMaxRegistersPerMultiprocessor, 65536 }, { cudaDevAttrManagedMemory, 1 },
		{ cudaDevAttrCooperativeLaunch, 1 }, { cudaDevAttrMaxSharedMemoryPerBlockOptin, 232448 },
		{ cudaDevAttrMaxBlocksPerMultiprocessor, 32 }, { cudaDevAttrReservedSharedMemoryPerBlock, 1024 },
		{ cudaDevAttrHostRegisterSupported, 1 }, { cudaDevAttrMemoryPoolsSupported, 1 },
		{ cudaDevAttrComputePreemptionSupported, 1 },
		/* what an HGX H100 reports for sharing memory between processes and
		 * devices; mearas's front ends answer 0 where they do not serve it
		 * (guest/core/attrs_offered.h) */
		{ CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1 },
		{ CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 1 },
		{ CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 1 }, { CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 1 },
		{ CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 1 }, { CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 1 },
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
	memcpy(d->limits, sim_limit_defaults, sizeof(d->limits));
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
	/* the modelled GPU's link (an H100 SXM's: PCIe 5.0 x16), trained to its
	 * maximum; the host-memory model has no link of its own */
	info->pcie = (struct mearas_pcie_link){ .cur_gen = 5, .max_gen = 5, .gpu_max_gen = 5,
						.cur_width = 16, .max_width = 16 };
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
	free(d->vmaps);
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

static int sim_chunk_add(struct mdev *d, uint64_t va, uint64_t size, int prot, bool resv, void **cookie)
{
	struct sim_chunk c = { .va = va, .size = size, .resv = resv }, *n;
	size_t at;

	c.host = mmap(NULL, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c.host == MAP_FAILED)
		return cudaErrorMemoryAllocation;
	pthread_mutex_lock(&d->lock);
	n = mearas_dynarray_grow(d->chunks, &d->cap, d->nchunks + 1, sizeof(c), 16);
	if (!n) {
		pthread_mutex_unlock(&d->lock);
		munmap(c.host, size);
		return cudaErrorMemoryAllocation;
	}
	d->chunks = n;
	for (at = 0; at < d->nchunks && d->chunks[at].va < va; at++)
		;
	mearas_dynarray_insert(d->chunks, &d->nchunks, at, &c, sizeof(c));
	pthread_mutex_unlock(&d->lock);
	*cookie = c.host;
	return 0;
}

static int sim_chunk_map(struct mdev *d, uint64_t va, uint64_t size, void **cookie)
{
	return sim_chunk_add(d, va, size, PROT_READ | PROT_WRITE, false, cookie);
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

/* [va, va+len) lies in VMM mappings end to end (d->lock held). */
static bool vmm_covered(const struct mdev *d, uint64_t va, uint64_t len)
{
	uint64_t end = va;

	for (size_t i = 0; i < d->nvmaps; i++) {
		const struct sim_vmap *m = &d->vmaps[i];

		if (m->va + m->size <= end)
			continue;
		if (m->va > end)
			return false;
		end = m->va + m->size;
		if (end - va >= len)
			return true;
	}
	return len == 0;
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
			if (!c->resv || vmm_covered(d, va, len))
				p = c->host + (va - c->va);
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return p;
}

/* ---- virtual memory management ---- */

static int sim_va_reserve(struct mdev *d, uint64_t va, uint64_t size, void **cookie)
{
	/* address space only: nothing is memory until physical memory is mapped over it */
	return sim_chunk_add(d, va, size, PROT_NONE, true, cookie);
}

static void sim_va_release(struct mdev *d, uint64_t va, uint64_t size, void *cookie)
{
	sim_chunk_unmap(d, va, size, cookie);
}

static int sim_phys_create(struct mdev *d, uint64_t size, void **phys)
{
	struct sim_phys *p = calloc(1, sizeof(*p));

	(void)d;
	if (!p)
		return cudaErrorMemoryAllocation;
	p->fd = memfd_create("mearas-sim-vmm", MFD_CLOEXEC);
	if (p->fd < 0 || ftruncate(p->fd, (off_t)size)) {
		log_warn("sim: physical memory of %llu bytes: %s", (unsigned long long)size, strerror(errno));
		if (p->fd >= 0)
			close(p->fd);
		free(p);
		return cudaErrorMemoryAllocation;
	}
	p->size = size;
	*phys = p;
	return 0;
}

static void sim_phys_release(struct mdev *d, void *phys)
{
	struct sim_phys *p = phys;

	(void)d;
	close(p->fd);
	free(p);
}

/*
 * The physical memory's pages go over the reservation's own inaccessible
 * mapping (MAP_FIXED inside a range this model mapped itself, never at an
 * address a client names), so adjacent mappings are one contiguous stretch
 * of host memory as they are one stretch of device memory, and copies over
 * them need nothing special.
 */
static int sim_phys_map(struct mdev *d, uint64_t va, uint64_t size, void *phys, uint64_t offset, void **cookie)
{
	struct sim_phys *p = phys;
	struct sim_chunk *c = NULL;
	size_t at;
	int r = 0;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nchunks; i++)
		if (d->chunks[i].resv && va >= d->chunks[i].va && va - d->chunks[i].va < d->chunks[i].size &&
		    size <= d->chunks[i].size - (va - d->chunks[i].va))
			c = &d->chunks[i];
	if (!c || offset > p->size || size > p->size - offset) {
		r = cudaErrorInvalidValue;
		goto out;
	}
	if (d->nvmaps == d->cap_vmaps) {
		size_t ncap = d->cap_vmaps ? d->cap_vmaps * 2 : 16;
		struct sim_vmap *n = realloc(d->vmaps, ncap * sizeof(*n));

		if (!n) {
			r = cudaErrorMemoryAllocation;
			goto out;
		}
		d->vmaps = n;
		d->cap_vmaps = ncap;
	}
	if (mmap(c->host + (va - c->va), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, p->fd,
		 (off_t)offset) == MAP_FAILED) {
		log_warn("sim: mapping %llu bytes of physical memory: %s", (unsigned long long)size, strerror(errno));
		r = cudaErrorMemoryAllocation;
		goto out;
	}
	for (at = 0; at < d->nvmaps && d->vmaps[at].va < va; at++)
		;
	memmove(&d->vmaps[at + 1], &d->vmaps[at], (d->nvmaps - at) * sizeof(d->vmaps[0]));
	d->vmaps[at] = (struct sim_vmap){ va, size };
	d->nvmaps++;
	*cookie = c->host + (va - c->va);
out:
	pthread_mutex_unlock(&d->lock);
	return r;
}

static void sim_phys_unmap(struct mdev *d, uint64_t va, uint64_t size, void *cookie)
{
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nvmaps; i++) {
		if (d->vmaps[i].va == va) {
			memmove(&d->vmaps[i], &d->vmaps[i + 1], (d->nvmaps - i - 1) * sizeof(d->vmaps[0]));
			d->nvmaps--;
			break;
		}
	}
	/* back to inaccessible address space of the reservation */
	if (mmap(cookie, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
		log_err("sim: unmapping %llu bytes at %#llx: %s", (unsigned long long)size, (unsigned long long)va,
			strerror(errno));
	pthread_mutex_unlock(&d->lock);
}

static int sim_mem_info(struct mdev *d, uint64_t *free_b, uint64_t *total)
{
	(void)d;
	*free_b = SIM_MEMORY;
	*total = SIM_MEMORY;
	return 0;
}

/* the host bytes of [va, va+len) of this device or a peer (device_sim_array.h) */
uint8_t *sim_any_host(struct mdev *d, uint64_t va, uint64_t len)
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

static uint64_t sim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The graph a stream captures into, or NULL. */
static struct sim_graph *capturing(void *stream)
{
	struct sim_graph *g = stream ? ((struct sim_stream *)stream)->capture : NULL;

	return g && !g->ended ? g : NULL;
}

bool sim_captures(void *stream)
{
	return capturing(stream) != NULL;
}

uint64_t sim_stream_done_ns(void *stream)
{
	struct sim_stream *s = stream;

	return s && s->busy_until > sim_now_ns() ? s->busy_until : 0;
}

static int graph_add(struct sim_graph *g, const struct sim_node *n)
{
	if (g->n == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 16;
		struct sim_node *nn = realloc(g->nodes, ncap * sizeof(*nn));

		if (!nn)
			return cudaErrorMemoryAllocation;
		g->nodes = nn;
		g->cap = ncap;
	}
	g->nodes[g->n++] = *n;
	return 0;
}

static void event_put(struct sim_event *ev);

static void graph_put(struct sim_graph *g)
{
	if (--g->refs)
		return;
	for (size_t i = 0; i < g->n; i++) {
		free(g->nodes[i].name);
		free(g->nodes[i].params);
		if (g->nodes[i].event)
			event_put(g->nodes[i].event);
	}
	free(g->nodes);
	free(g);
}

static int sim_copy(struct mdev *d, void *stream, int dir, uint64_t dst, uint64_t src, uint64_t size)
{
	uint8_t *s, *t;

	if (capturing(stream))
		return graph_add(capturing(stream), &(struct sim_node){ .kind = SN_COPY, .dir = dir, .dst = dst,
									.src = src, .width = size });
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
	if (capturing(stream))
		return graph_add(capturing(stream), &(struct sim_node){ .kind = SN_COPY_2D, .dir = dir, .dst = dst,
									.dpitch = dpitch, .src = src, .spitch = spitch,
									.width = width, .height = height });
	for (uint64_t r = 0; r < height; r++) {
		int e = sim_copy(d, NULL, dir, dst + r * dpitch, src + r * spitch, width);

		if (e)
			return e;
	}
	return 0;
}

static int sim_memset(struct mdev *d, void *stream, uint64_t dst, uint32_t value, uint64_t count,
		      unsigned elem)
{
	uint8_t *p;

	if (capturing(stream))
		return graph_add(capturing(stream), &(struct sim_node){ .kind = SN_MEMSET, .dst = dst, .value = value,
									.width = count, .elem = elem });
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
	if (capturing(stream))
		return graph_add(capturing(stream), &(struct sim_node){ .kind = SN_MEMSET_2D, .dst = dst,
									.dpitch = pitch, .value = value,
									.width = width, .height = height });
	for (uint64_t r = 0; r < height; r++) {
		int e = sim_memset(d, NULL, dst + r * pitch, value, width, 1);

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

/* A function refers to its kernel's entry in the module's index; like the
 * GPU device, each lookup allocates a record, freed by func_put. */
static int sim_func_get(struct mdev *d, void *module, const char *name, void **func,
			uint32_t *nparams, uint32_t *param_bytes)
{
	struct sim_module *m = module;
	const struct mearas_kernel_info *k = mearas_fatbin_find_kernel(m->index, name);
	struct sim_func *f;

	(void)d;
	if (!k)
		return cudaErrorInvalidDeviceFunction;
	f = malloc(sizeof(*f));
	if (!f)
		return cudaErrorMemoryAllocation;
	f->k = k;
	*nparams = k->nparams;
	*param_bytes = k->param_bytes;
	*func = f;
	return 0;
}

static void sim_func_put(struct mdev *d, void *func)
{
	(void)d;
	free(func);
}

static const char *sim_func_name(struct mdev *d, void *func)
{
	(void)d;
	return ((struct sim_func *)func)->k->name;
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

/* its launches take no clusters (sim_launch): none is ever resident */
static int sim_occupancy_clusters(struct mdev *d, void *func, const struct mdev_launch *l, int *clusters)
{
	(void)d, (void)func, (void)l;
	*clusters = 0;
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
 * Pointers into the mapped host range and into this vGPU's device memory
 * (allocations and mapped VMM memory) are modelled; anything else is an
 * illegal address, as a GPU's fault.
 */
#define SIM_KERNEL_ADD_U32 "mearas_sim_add_u32"

static int sim_add_u32(struct mdev *d, const void *params, uint32_t len)
{
	uint8_t *dp;
	uint64_t p;
	uint32_t n, v;

	if (len != 16)
		return cudaErrorInvalidValue;
	memcpy(&p, params, 8);
	memcpy(&n, (const uint8_t *)params + 8, 4);
	memcpy(&v, (const uint8_t *)params + 12, 4);
	if (n && !(p & 3) && (dp = sim_host(d, p, 4ull * n)) != NULL) {
		/* device memory of this vGPU (allocations, mapped VMM memory) */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t x;

			memcpy(&x, dp + 4ull * i, 4);
			x += v;
			memcpy(dp + 4ull * i, &x, 4);
		}
		return 0;
	}
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

/* mearas_sim_spin(unsigned ms): the stream is busy for ms milliseconds. */
#define SIM_KERNEL_SPIN "mearas_sim_spin"

static void sim_spin(struct sim_stream *s, const void *params, uint32_t len)
{
	uint32_t ms = 0;
	uint64_t now = sim_now_ns();

	if (len >= 4)
		memcpy(&ms, params, 4);
	if (s->busy_until < now)
		s->busy_until = now;
	s->busy_until += (uint64_t)ms * 1000000ull;
}

/*
 * A kernel that never finishes: work behind it on its stream (events,
 * fences, host functions, streams that wait for it) never completes until
 * the context is torn down, i.e. the worker process exits. On a GPU:
 *   extern "C" __global__ void mearas_sim_hang(volatile unsigned *flag)
 *   { while (!*flag) ; }
 * with a flag that stays 0.
 */
#define SIM_KERNEL_HANG "mearas_sim_hang"
#define SIM_NEVER UINT64_MAX

static bool sim_hung(const struct sim_stream *s)
{
	return s->busy_until == SIM_NEVER;
}

/*
 * mearas_sim_launch_attrs(unsigned *out): writes the launch attributes its
 * launch came with, so that tests see what reached the device: out[0..7] =
 * cooperative, programmatic stream serialization, remote sync domain,
 * cluster scheduling policy, priority given, priority, carveout given,
 * carveout. A graph's kernel node replays with those it was captured with.
 * The model runs a stream's work in order, which every attribute allows.
 */
#define SIM_KERNEL_LAUNCH_ATTRS "mearas_sim_launch_attrs"

static int sim_launch_attrs(struct mdev *d, const struct mdev_launch *l, const void *params, uint32_t len)
{
	uint32_t w[8];
	uint64_t p;
	uint8_t *dp;

	if (len != 8)
		return cudaErrorInvalidValue;
	memcpy(&p, params, 8);
	if ((p & 3) || !(dp = sim_host(d, p, sizeof(w))))
		return cudaErrorIllegalAddress;
	w[0] = (uint32_t)l->cooperative;
	w[1] = (uint32_t)l->programmatic;
	w[2] = (uint32_t)l->sync_domain_remote;
	w[3] = (uint32_t)l->cluster_policy;
	w[4] = (uint32_t)l->has_priority;
	w[5] = (uint32_t)l->priority;
	w[6] = (uint32_t)l->has_carveout;
	w[7] = (uint32_t)l->carveout;
	memcpy(dp, w, sizeof(w));
	return 0;
}

/*
 * mearas_sim_printf(unsigned v): device printf. Its line waits in the
 * model's buffer until a synchronizing call flushes it to the worker's
 * stdout, as a GPU's printf buffer does (a full buffer drops lines, as
 * there). On a GPU:
 *   extern "C" __global__ void mearas_sim_printf(unsigned v)
 *   { printf("mearas-sim device printf: %u\n", v); }
 * launched with one thread.
 */
#define SIM_KERNEL_PRINTF "mearas_sim_printf"

static int sim_printf(struct mdev *d, const void *params, uint32_t len)
{
	size_t room;
	uint32_t v;
	int n;

	if (len != 4)
		return cudaErrorInvalidValue;
	memcpy(&v, params, 4);
	pthread_mutex_lock(&d->lock);
	room = sizeof(d->printf_buf) - d->printf_len;
	n = snprintf(d->printf_buf + d->printf_len, room, "mearas-sim device printf: %u\n", v);
	if (n > 0 && (size_t)n < room)
		d->printf_len += (size_t)n;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static void sim_flush_output(struct mdev *d, void *stream, void *event)
{
	(void)stream;
	(void)event;
	pthread_mutex_lock(&d->lock);
	if (d->printf_len && write(STDOUT_FILENO, d->printf_buf, d->printf_len) < 0)
		log_warn("sim: device printf: %s", strerror(errno));
	d->printf_len = 0;
	pthread_mutex_unlock(&d->lock);
}

/* Runs a kernel by name on stream s with its configuration l (a launch's,
 * or the one a graph's kernel node was captured with). */
static int run_kernel(struct mdev *d, const char *name, void *stream, const struct mdev_launch *l,
		      const void *params, uint32_t len)
{
	d->launches++;
	if (!strcmp(name, SIM_KERNEL_ADD_U32))
		return sim_add_u32(d, params, len);
	if (!strcmp(name, SIM_KERNEL_LAUNCH_ATTRS))
		return sim_launch_attrs(d, l, params, len);
	if (!strcmp(name, SIM_KERNEL_PRINTF))
		return sim_printf(d, params, len);
	if (!strcmp(name, SIM_KERNEL_SPIN) && !sim_hung(stream))
		sim_spin(stream, params, len);
	if (!strcmp(name, SIM_KERNEL_HANG))
		((struct sim_stream *)stream)->busy_until = SIM_NEVER;
	return 0;
}

static int sim_launch(struct mdev *d, void *func, void *stream, const struct mdev_launch *l)
{
	const struct mearas_kernel_info *k = ((struct sim_func *)func)->k;
	struct sim_node n = { .kind = SN_LAUNCH, .param_bytes = l->param_bytes };
	int r;

	if (l->cluster[0]) {
		/* its kernels run on the CPU, one block at a time: no cluster
		 * (distributed shared memory, cluster barriers) to give them */
		log_warn("sim: launch of %s with a thread-block cluster: not supported by the sim device", k->name);
		return cudaErrorNotSupported;
	}
	if (l->param_bytes != k->param_bytes) {
		log_warn("sim: launch of %s with %u parameter bytes, kernel takes %u",
			 k->name, l->param_bytes, k->param_bytes);
		return cudaErrorInvalidValue;
	}
	if (!capturing(stream))
		return run_kernel(d, k->name, stream, l, l->params, l->param_bytes);
	/* a graph node outlives the function and the caller's buffer: copies */
	n.name = strdup(k->name);
	n.params = malloc(l->param_bytes ? l->param_bytes : 1);
	if (!n.name || !n.params) {
		free(n.name);
		free(n.params);
		return cudaErrorMemoryAllocation;
	}
	memcpy(n.params, l->params, l->param_bytes);
	n.launch = *l;
	n.launch.params = NULL;
	r = graph_add(capturing(stream), &n);
	if (r) {
		free(n.name);
		free(n.params);
	}
	return r;
}

static void *sim_stream_default(struct mdev *d)
{
	return &d->legacy;
}

static int sim_stream_create(struct mdev *d, unsigned flags, int priority, void **s)
{
	(void)d;
	(void)flags;
	(void)priority;
	*s = calloc(1, sizeof(struct sim_stream));
	return *s ? 0 : cudaErrorMemoryAllocation;
}

static int sim_stream_destroy(struct mdev *d, void *s)
{
	struct sim_stream *st = s;

	(void)d;
	if (st->capture) {
		/* the stream that began a capture takes it with it: nothing may
		 * join or end it later, which a new stream at this freed address
		 * could otherwise do (origin is compared), making a graph of
		 * host functions that were freed once nothing captured them */
		if (st->capture->origin == st) {
			st->capture->ended = 1;
			st->capture->origin = NULL;
		}
		graph_put(st->capture);
	}
	free(st);
	return 0;
}

static int sim_stream_wait_event(struct mdev *d, void *s, void *ev, unsigned flags)
{
	struct sim_stream *st = s;
	struct sim_event *e = ev;

	if (capturing(st) && (flags & MEARAS_EVENT_WAIT_EXTERNAL)) {
		/* a node of the graph: each launch waits for the event's latest record */
		int r = graph_add(capturing(st), &(struct sim_node){ .kind = SN_EVENT_WAIT, .event = e });

		if (!r)
			e->refs++;
		return r;
	}
	if (e->in_capture && e->cap && !e->cap->ended && !capturing(st) && st != &d->legacy) {
		/* joins the capture the event was recorded in */
		if (st->capture)
			graph_put(st->capture);
		st->capture = e->cap;
		st->capture->refs++;
		return 0;
	}
	if (!capturing(st) && e->ready_ns > st->busy_until)
		st->busy_until = e->ready_ns;
	return 0;
}

static int sim_event_create(struct mdev *d, unsigned flags, void **e)
{
	struct sim_event *ev = calloc(1, sizeof(*ev));

	(void)d;
	if (!ev)
		return cudaErrorMemoryAllocation;
	ev->flags = flags;
	ev->refs = 1;
	*e = ev;
	return 0;
}

static void event_put(struct sim_event *ev)
{
	if (!--ev->refs)
		free(ev);
}

/* The handle goes; graph record nodes keep the event until they go. */
static int sim_event_destroy(struct mdev *d, void *e)
{
	struct sim_event *ev = e;

	(void)d;
	if (ev->cap)
		graph_put(ev->cap);
	ev->cap = NULL;
	event_put(ev);
	return 0;
}

static int sim_event_record(struct mdev *d, void *e, void *s)
{
	struct sim_event *ev = e;
	struct sim_stream *st = s;
	uint64_t now = sim_now_ns();

	(void)d;
	if (ev->cap)
		graph_put(ev->cap);
	ev->cap = NULL;
	if (capturing(st)) {
		/* a dependency inside the graph, not a point the host can wait for */
		ev->in_capture = 1;
		ev->cap = st->capture;
		ev->cap->refs++;
		return 0;
	}
	ev->in_capture = 0;
	ev->ready_ns = st->busy_until > now ? st->busy_until : 0;
	clock_gettime(CLOCK_MONOTONIC, &ev->when);
	if (ev->ready_ns) {
		ev->when.tv_sec = (time_t)(ev->ready_ns / 1000000000ull);
		ev->when.tv_nsec = (long)(ev->ready_ns % 1000000000ull);
	}
	ev->recorded = 1;
	return 0;
}

/* In a capture, a node that records the event at each launch of the graph
 * (a point the host can wait for); elsewhere a plain record. */
static int sim_event_record_external(struct mdev *d, void *e, void *s)
{
	struct sim_event *ev = e;
	int r;

	if (!capturing(s))
		return sim_event_record(d, e, s);
	r = graph_add(capturing(s), &(struct sim_node){ .kind = SN_EVENT_RECORD, .event = ev });
	if (!r)
		ev->refs++;
	return r;
}

static int sim_event_query(struct mdev *d, void *e)
{
	struct sim_event *ev = e;

	(void)d;
	if (ev->in_capture)
		return cudaErrorStreamCaptureUnsupported;
	return ev->ready_ns && sim_now_ns() < ev->ready_ns ? cudaErrorNotReady : 0;
}

/* the sim's context never fails as a whole */
static int sim_status(struct mdev *d)
{
	(void)d;
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
	if (sim_event_query(d, a) || sim_event_query(d, b))
		return cudaErrorNotReady;
	*ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
		      (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
	return 0;
}

static int sim_host_func(struct mdev *d, void *s, void (*fn)(void *), void *arg)
{
	(void)d;
	if (capturing(s))
		return graph_add(capturing(s), &(struct sim_node){ .kind = SN_HOST, .fn = fn, .arg = arg });
	if (sim_hung(s))
		return 0; /* never runs: arg goes with the process */
	fn(arg);
	return 0;
}

static int sim_capture_begin(struct mdev *d, void *s, int mode)
{
	struct sim_stream *st = s;

	(void)mode;
	if (st == &d->legacy)
		return cudaErrorStreamCaptureUnsupported;
	if (capturing(st))
		return cudaErrorIllegalState;
	if (st->capture)
		graph_put(st->capture); /* a capture it joined, over */
	st->capture = calloc(1, sizeof(*st->capture));
	if (!st->capture)
		return cudaErrorMemoryAllocation;
	st->capture->refs = 1;
	st->capture->origin = st;
	return 0;
}

static int sim_capture_end(struct mdev *d, void *s, void **graph)
{
	struct sim_stream *st = s;

	(void)d;
	if (!capturing(st))
		return cudaErrorIllegalState;
	if (st->capture->origin != st)
		return cudaErrorStreamCaptureUnmatched; /* a joined stream, not the one that began it */
	*graph = st->capture;
	st->capture->ended = 1;
	st->capture = NULL;
	return 0;
}

static int sim_capture_status(struct mdev *d, void *s, int *status)
{
	(void)d;
	*status = capturing(s) ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
	return 0;
}

/* flags change nothing here: a sim graph has no allocation nodes to free
 * and runs its nodes in order */
static int sim_graph_instantiate(struct mdev *d, void *graph, uint64_t flags, void **exec)
{
	struct sim_exec *x = malloc(sizeof(*x));

	(void)d, (void)flags;
	if (!x)
		return cudaErrorMemoryAllocation;
	x->g = graph;
	x->g->refs++;
	*exec = x;
	return 0;
}

static int run_node(struct mdev *d, const struct sim_node *n, void *s)
{
	switch (n->kind) {
	case SN_COPY:
		return sim_copy(d, NULL, n->dir, n->dst, n->src, n->width);
	case SN_COPY_2D:
		return sim_copy_2d(d, NULL, n->dir, n->dst, n->dpitch, n->src, n->spitch, n->width, n->height);
	case SN_MEMSET:
		return sim_memset(d, NULL, n->dst, n->value, n->width, n->elem);
	case SN_MEMSET_2D:
		return sim_memset_2d(d, NULL, n->dst, n->dpitch, (uint8_t)n->value, n->width, n->height);
	case SN_LAUNCH:
		return run_kernel(d, n->name, s, &n->launch, n->params, n->param_bytes);
	case SN_HOST:
		n->fn(n->arg);
		return 0;
	case SN_EVENT_RECORD:
		return sim_event_record(d, n->event, s);
	case SN_EVENT_WAIT:
		return sim_stream_wait_event(d, s, n->event, 0);
	}
	return cudaErrorInvalidValue;
}

static int sim_graph_launch(struct mdev *d, void *exec, void *s)
{
	struct sim_graph *g = ((struct sim_exec *)exec)->g;

	if (capturing(s))
		return cudaErrorStreamCaptureUnsupported;
	for (size_t i = 0; i < g->n; i++) {
		int r = run_node(d, &g->nodes[i], s);

		if (r)
			return r;
	}
	return 0;
}

static void sim_graph_destroy(struct mdev *d, void *graph)
{
	(void)d;
	graph_put(graph);
}

static void sim_graph_exec_destroy(struct mdev *d, void *exec)
{
	struct sim_exec *x = exec;

	(void)d;
	graph_put(x->g);
	free(x);
}

static int sim_graph_node_count(struct mdev *d, void *graph, uint64_t *count)
{
	(void)d;
	*count = ((struct sim_graph *)graph)->n;
	return 0;
}

/* a deep copy: the clone lives on when the original is destroyed */
static int sim_graph_clone(struct mdev *d, void *graph, void **clone)
{
	const struct sim_graph *g = graph;
	struct sim_graph *c = calloc(1, sizeof(*c));
	int r = c ? 0 : cudaErrorMemoryAllocation;

	(void)d;
	if (r)
		return r;
	c->refs = 1;
	c->ended = 1;
	for (size_t i = 0; i < g->n && !r; i++) {
		struct sim_node n = g->nodes[i];

		n.name = n.name ? strdup(n.name) : NULL;
		n.params = n.param_bytes ? malloc(n.param_bytes) : NULL;
		if (n.event)
			n.event->refs++; /* put with the clone's nodes */
		if (n.params)
			memcpy(n.params, g->nodes[i].params, n.param_bytes);
		if ((g->nodes[i].name && !n.name) || (n.param_bytes && !n.params))
			r = cudaErrorMemoryAllocation;
		else
			r = graph_add(c, &n);
		if (r) {
			free(n.name);
			free(n.params);
			if (n.event)
				event_put(n.event);
		}
	}
	if (r) {
		graph_put(c);
		return r;
	}
	*clone = c;
	return 0;
}

static int sim_graph_host_funcs(struct mdev *d, void *graph, void (*fn)(void *), void **args, size_t max,
				size_t *n)
{
	struct sim_graph *g = graph;

	(void)d;
	*n = 0;
	for (size_t i = 0; i < g->n; i++) {
		if (g->nodes[i].kind != SN_HOST || g->nodes[i].fn != fn)
			continue;
		if (*n < max)
			args[*n] = g->nodes[i].arg;
		(*n)++;
	}
	return 0;
}

/*
 * Tensor maps. The model has no TMA unit and NVIDIA's descriptor format is
 * not public: it checks the arguments as cuda.h documents them for a device
 * of compute capability 9.0 (what the model reports), then writes its own
 * encoding (struct mearas_sim_tmap, include/mearas/tensormap.h), which is the
 * model's and not the hardware's. The back end has already checked the rank,
 * the enums, the unused entries and the tensor's place in device memory
 * (core/exec_tensormap.c). Not modelled: the bounding box of im2col having
 * a non-zero area (cuda.h does not say how it is measured).
 */
#define TMAP_DT_16U4_ALIGN8B  13u
#define TMAP_DT_16U4_ALIGN16B 14u
#define TMAP_DT_16U6_ALIGN16B 15u
#define TMAP_INTERLEAVE_NONE  0u
#define TMAP_INTERLEAVE_32B   2u
#define TMAP_SWIZZLE_NONE     0u
#define TMAP_SWIZZLE_32B      1u
#define TMAP_SWIZZLE_64B      2u
#define TMAP_SWIZZLE_128B     3u
#define TMAP_SWIZZLE_128B_ATOM_32B 4u
#define TMAP_SWIZZLE_128B_ATOM_64B 6u

static bool tmap_float(uint32_t dtype)
{
	return dtype >= 6 && dtype <= 12; /* FLOAT16 .. TFLOAT32_FTZ */
}

/* bytes of n elements of dtype, rounded up */
static uint64_t tmap_bytes(uint32_t dtype, uint64_t n)
{
	return (n * mearas_tmap_elem_bits(dtype) + 7) / 8;
}

/* the rules every encode call shares: the address, dimensions, strides,
 * element strides, interleave, swizzle and fill; inner: the bytes of the
 * box's inner dimension (boxDim[0], or channelsPerPixel for im2col) */
static bool tmap_common_ok(const struct mearas_tmap_args *a, uint64_t inner)
{
	bool packed16 = a->dtype == TMAP_DT_16U4_ALIGN16B || a->dtype == TMAP_DT_16U6_ALIGN16B;
	bool wide32 = a->interleave == TMAP_INTERLEAVE_32B || packed16;
	uint64_t swz = a->swizzle == TMAP_SWIZZLE_NONE ? 0 : a->swizzle == TMAP_SWIZZLE_32B ? 32 :
		       a->swizzle == TMAP_SWIZZLE_64B ? 64 : 128;

	if (a->addr % (wide32 ? 32 : 16))
		return false;
	if (a->interleave != TMAP_INTERLEAVE_NONE && a->rank < 3)
		return false;
	if ((packed16 && a->dims[0] % 128) || (a->dtype == TMAP_DT_16U4_ALIGN8B && a->dims[0] % 2))
		return false;
	for (unsigned i = 0; i + 1 < a->rank; i++)
		if (a->strides[i] % (wide32 ? 32 : 16))
			return false;
	for (unsigned i = 0; i < a->rank; i++)
		if (a->estrides[i] < 1 || a->estrides[i] > 8)
			return false;
	if (a->interleave == TMAP_INTERLEAVE_32B && a->swizzle != TMAP_SWIZZLE_32B)
		return false;
	if (a->interleave == TMAP_INTERLEAVE_NONE && swz && inner > swz)
		return false;
	if (a->dtype == TMAP_DT_16U6_ALIGN16B &&
	    (a->interleave != TMAP_INTERLEAVE_NONE ||
	     (a->swizzle != TMAP_SWIZZLE_NONE && a->swizzle != TMAP_SWIZZLE_128B &&
	      a->swizzle != TMAP_SWIZZLE_128B_ATOM_32B && a->swizzle != TMAP_SWIZZLE_128B_ATOM_64B)))
		return false;
	if (a->dtype == TMAP_DT_16U4_ALIGN16B && a->swizzle != TMAP_SWIZZLE_NONE &&
	    a->swizzle != TMAP_SWIZZLE_128B && a->swizzle != TMAP_SWIZZLE_128B_ATOM_32B)
		return false;
	if (a->oobfill && !tmap_float(a->dtype))
		return false;
	return true;
}

static bool tmap_tiled_ok(const struct mearas_tmap_args *a)
{
	bool packed16 = a->dtype == TMAP_DT_16U4_ALIGN16B || a->dtype == TMAP_DT_16U6_ALIGN16B;

	for (unsigned i = 0; i < a->rank; i++)
		if (a->box[i] < 1 || a->box[i] > 256)
			return false;
	if (a->interleave == TMAP_INTERLEAVE_NONE && tmap_bytes(a->dtype, a->box[0]) % 16)
		return false;
	if (packed16 && a->box[0] != 128)
		return false;
	return tmap_common_ok(a, tmap_bytes(a->dtype, a->box[0]));
}

static bool tmap_im2col_ok(const struct mearas_tmap_args *a)
{
	/* corner offsets: rank 3 one in [-32768, 32767], rank 4 two in
	 * [-128, 127], rank 5 three in [-16, 15] */
	int32_t lim = a->rank == 3 ? 32768 : a->rank == 4 ? 128 : 16;
	bool packed16 = a->dtype == TMAP_DT_16U4_ALIGN16B || a->dtype == TMAP_DT_16U6_ALIGN16B;

	for (unsigned i = 0; i + 2 < a->rank; i++)
		if (a->lower[i] < -lim || a->lower[i] >= lim || a->upper[i] < -lim || a->upper[i] >= lim)
			return false;
	if (a->channels < 1 || a->channels > 256 || (packed16 && a->channels != 128))
		return false;
	if (a->pixels < 1 || a->pixels > 1024)
		return false;
	return tmap_common_ok(a, tmap_bytes(a->dtype, a->channels));
}

static int sim_tensor_map_encode(struct mdev *d, unsigned kind, const struct mearas_tmap_args *a, uint8_t *out)
{
	struct mearas_sim_tmap m;
	bool ok;

	(void)d;
	switch (kind) {
	case MEARAS_TMAP_TILED:
		ok = tmap_tiled_ok(a);
		break;
	case MEARAS_TMAP_IM2COL:
		ok = tmap_im2col_ok(a);
		break;
	case MEARAS_TMAP_IM2COL_WIDE:
		/* compute capability 10.0 and later; the model is a 9.0 device */
		return cudaErrorNotSupported;
	default:
		return cudaErrorInvalidValue;
	}
	if (!ok)
		return cudaErrorInvalidValue;
	memset(&m, 0, sizeof(m));
	m.magic = MEARAS_SIM_TMAP_MAGIC;
	m.kind = (uint8_t)kind;
	m.dtype = (uint8_t)a->dtype;
	m.rank = (uint8_t)a->rank;
	m.interleave = (uint8_t)a->interleave;
	m.swizzle = (uint8_t)a->swizzle;
	m.l2promo = (uint8_t)a->l2promo;
	m.oobfill = (uint8_t)a->oobfill;
	m.channels = (uint16_t)a->channels;
	m.pixels = (uint16_t)a->pixels;
	m.addr = a->addr;
	for (unsigned i = 0; i < a->rank; i++) {
		m.dims[i] = a->dims[i];
		m.box[i] = (uint8_t)(a->box[i] ? a->box[i] - 1 : 0);
		m.estrides[i] = (uint8_t)a->estrides[i];
		if (i + 1 < a->rank)
			m.strides[i] = a->strides[i];
	}
	for (unsigned i = 0; i + 2 < a->rank && kind == MEARAS_TMAP_IM2COL; i++) {
		m.lower[i] = (int16_t)a->lower[i];
		m.upper[i] = (int16_t)a->upper[i];
	}
	memcpy(out, &m, sizeof(m));
	return 0;
}

/* ---- ops with a generated handler (include/mearas/ops.spec `dev` lines) ---- */

int sim_set_limit(struct mdev *d, uint32_t limit, uint64_t value)
{
	if (limit >= SIM_LIMITS)
		return cudaErrorUnsupportedLimit;
	if (limit == cudaLimitMaxL2FetchGranularity && value > 128)
		return cudaErrorInvalidValue;
	d->limits[limit] = value;
	return 0;
}

int sim_get_limit(struct mdev *d, uint32_t limit, uint64_t *value)
{
	if (limit >= SIM_LIMITS)
		return cudaErrorUnsupportedLimit;
	*value = d->limits[limit];
	return 0;
}

/* the model's multiprocessor (sim_occupancy): 2048 threads, 32 blocks and
 * 228 KiB of shared memory shared out, 48 KiB at most a block (the default
 * limit of a function that did not raise it); blocks that cannot be resident
 * together are refused, as the driver refuses them. Its functions have no
 * static shared memory. */
int sim_occupancy_smem(struct mdev *d, void *func, uint32_t blocks, uint32_t block, uint64_t *smem)
{
	uint64_t share;

	(void)d, (void)func;
	if (!blocks || !block || block > 1024 || (uint64_t)blocks * block > 2048 || blocks > 32)
		return cudaErrorInvalidValue;
	share = 233472 / blocks;
	*smem = share > 49152 ? 49152 : share;
	return 0;
}

/* nothing to profile in the model: the calls succeed as on a GPU with no
 * profiler attached */
int sim_profiler_start(struct mdev *d)
{
	d->profiling = true;
	return 0;
}

int sim_profiler_stop(struct mdev *d)
{
	d->profiling = false;
	return 0;
}

MEARAS_MDEV_OP_TABLE(sim);

const struct mdev_ops mdev_sim_ops = {
	.name = "sim",
	.op = &mdev_sim_op_table,
	.startup_note = "host-memory device model: memory, copies, memsets, streams, events, "
			"registration and graphs by capture are real; kernel launches are checked and "
			"counted, not run",
	.init = sim_init,
	.count = sim_count,
	.open = sim_open,
	.close = sim_close,
	.bind_thread = sim_bind_thread,
	.host_register = sim_host_register,
	.host_unregister = sim_host_unregister,
	.chunk_map = sim_chunk_map,
	.chunk_unmap = sim_chunk_unmap,
	.va_reserve = sim_va_reserve,
	.va_release = sim_va_release,
	.phys_create = sim_phys_create,
	.phys_release = sim_phys_release,
	.phys_map = sim_phys_map,
	.phys_unmap = sim_phys_unmap,
	.mem_info = sim_mem_info,
	.copy = sim_copy,
	.copy_2d = sim_copy_2d,
	.memset = sim_memset,
	.stream_memop = sim_stream_memop,
	.memset_2d = sim_memset_2d,
	.module_load = sim_module_load,
	.module_unload = sim_module_unload,
	.link = sim_link,
	.array_create = sim_array_create,
	.array_destroy = sim_array_destroy,
	.array_copy = sim_array_copy,
	.tex_create = sim_tex_create,
	.tex_destroy = sim_obj_destroy,
	.surf_create = sim_surf_create,
	.surf_destroy = sim_obj_destroy,
	.func_get = sim_func_get,
	.func_put = sim_func_put,
	.func_name = sim_func_name,
	.func_attrs = sim_func_attrs,
	.func_set_attr = sim_func_set_attr,
	.occupancy = sim_occupancy,
	.occupancy_clusters = sim_occupancy_clusters,
	.global_get = sim_global_get,
	.launch = sim_launch,
	.stream_default = sim_stream_default,
	.stream_create = sim_stream_create,
	.stream_destroy = sim_stream_destroy,
	.stream_wait_event = sim_stream_wait_event,
	.event_create = sim_event_create,
	.event_destroy = sim_event_destroy,
	.event_record = sim_event_record,
	.event_record_external = sim_event_record_external,
	.event_query = sim_event_query,
	.flags_create = sim_flags_create,
	.flags_destroy = sim_flags_destroy,
	.flag_write = sim_flag_write,
	.flag_read = sim_flag_read,
	.status = sim_status,
	.event_elapsed = sim_event_elapsed,
	.host_func = sim_host_func,
	.flush_output = sim_flush_output,
	.capture_begin = sim_capture_begin,
	.capture_end = sim_capture_end,
	.capture_status = sim_capture_status,
	.graph_instantiate = sim_graph_instantiate,
	.graph_launch = sim_graph_launch,
	.graph_destroy = sim_graph_destroy,
	.graph_exec_destroy = sim_graph_exec_destroy,
	.graph_node_count = sim_graph_node_count,
	.graph_clone = sim_graph_clone,
	.graph_host_funcs = sim_graph_host_funcs,
	.tensor_map_encode = sim_tensor_map_encode,
};
