// SPDX-License-Identifier: MIT
/* Lazy connection to mearasd, the vGPUs it serves, thread slots. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mearas/log.h"
#include "attrs_offered.h"
#include "core.h"

struct rt rt;
/* marks this libcuda.so.1 as mearas's front end: mearasd refuses to use it
 * as the driver it serves vGPUs with */
CORE_API const char mearas_front_end[] = "mearas guest front end";
__thread struct rt_thread rt_tls = { .device = 0, .slot = -1 };

static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static pthread_key_t slot_key;

/* cudaDeviceProp's fields from the vGPU's attributes: G(field, attribute)
 * as the GPU reports it, O(field, attribute) as mearas offers it */
#define PROP_ATTRS(G, O)                                                                                \
	G(sharedMemPerBlock, MaxSharedMemoryPerBlock) G(regsPerBlock, MaxRegistersPerBlock)             \
	G(warpSize, WarpSize) G(memPitch, MaxPitch) G(maxThreadsPerBlock, MaxThreadsPerBlock)           \
	G(maxThreadsDim[0], MaxBlockDimX) G(maxThreadsDim[1], MaxBlockDimY)                             \
	G(maxThreadsDim[2], MaxBlockDimZ) G(maxGridSize[0], MaxGridDimX) G(maxGridSize[1], MaxGridDimY) \
	G(maxGridSize[2], MaxGridDimZ) G(totalConstMem, TotalConstantMemory)                           \
	G(major, ComputeCapabilityMajor) G(minor, ComputeCapabilityMinor)                               \
	G(textureAlignment, TextureAlignment) G(texturePitchAlignment, TexturePitchAlignment)           \
	G(multiProcessorCount, MultiProcessorCount) G(integrated, Integrated)                           \
	G(canMapHostMemory, CanMapHostMemory) G(maxTexture1D, MaxTexture1DWidth)                        \
	G(maxTexture2D[0], MaxTexture2DWidth) G(maxTexture2D[1], MaxTexture2DHeight)                    \
	G(maxTexture3D[0], MaxTexture3DWidth) G(maxTexture3D[1], MaxTexture3DHeight)                    \
	G(maxTexture3D[2], MaxTexture3DDepth) G(surfaceAlignment, SurfaceAlignment)                     \
	G(concurrentKernels, ConcurrentKernels) G(ECCEnabled, EccEnabled) G(pciBusID, PciBusId)         \
	G(pciDeviceID, PciDeviceId) G(pciDomainID, PciDomainId) G(tccDriver, TccDriver)                 \
	G(asyncEngineCount, AsyncEngineCount) G(unifiedAddressing, UnifiedAddressing)                   \
	G(memoryBusWidth, GlobalMemoryBusWidth) G(l2CacheSize, L2CacheSize)                             \
	G(persistingL2CacheMaxSize, MaxPersistingL2CacheSize)                                           \
	G(maxThreadsPerMultiProcessor, MaxThreadsPerMultiProcessor)                                     \
	G(streamPrioritiesSupported, StreamPrioritiesSupported)                                         \
	G(globalL1CacheSupported, GlobalL1CacheSupported) G(localL1CacheSupported, LocalL1CacheSupported) \
	G(sharedMemPerMultiprocessor, MaxSharedMemoryPerMultiprocessor)                                 \
	G(regsPerMultiprocessor, MaxRegistersPerMultiprocessor) O(managedMemory, ManagedMemory)         \
	G(isMultiGpuBoard, IsMultiGpuBoard) G(multiGpuBoardGroupID, MultiGpuBoardGroupID)               \
	G(hostNativeAtomicSupported, HostNativeAtomicSupported)                                         \
	G(computePreemptionSupported, ComputePreemptionSupported) G(cooperativeLaunch, CooperativeLaunch) \
	G(sharedMemPerBlockOptin, MaxSharedMemoryPerBlockOptin)                                         \
	G(maxBlocksPerMultiProcessor, MaxBlocksPerMultiprocessor)                                       \
	G(accessPolicyMaxWindowSize, MaxAccessPolicyWindowSize)                                         \
	G(reservedSharedMemPerBlock, ReservedSharedMemoryPerBlock)                                      \
	G(hostRegisterSupported, HostRegisterSupported) O(sparseCudaArraySupported, SparseCudaArraySupported) \
	G(hostRegisterReadOnlySupported, HostRegisterReadOnlySupported)                                 \
	G(timelineSemaphoreInteropSupported, TimelineSemaphoreInteropSupported)                         \
	G(memoryPoolsSupported, MemoryPoolsSupported) O(gpuDirectRDMASupported, GPUDirectRDMASupported) \
	G(gpuDirectRDMAFlushWritesOptions, GPUDirectRDMAFlushWritesOptions)                             \
	G(gpuDirectRDMAWritesOrdering, GPUDirectRDMAWritesOrdering)                                     \
	G(memoryPoolSupportedHandleTypes, MemoryPoolSupportedHandleTypes)                               \
	O(deferredMappingCudaArraySupported, DeferredMappingCudaArraySupported)                         \
	O(ipcEventSupported, IpcEventSupport) G(clusterLaunch, ClusterLaunch)                           \
	G(deviceNumaConfig, NumaConfig) G(deviceNumaId, NumaId) G(mpsEnabled, MpsEnabled)               \
	G(hostNumaId, HostNumaId) G(gpuPciDeviceID, GpuPciDeviceId) G(gpuPciSubsystemID, GpuPciSubsystemId) \
	O(hostNumaMultinodeIpcSupported, HostNumaMultinodeIpcSupported)

static void fill_prop(struct rt_vgpu *v)
{
	const int32_t *a = v->info->attrs;
	struct cudaDeviceProp *p = &v->prop;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", v->info->name);
	memcpy(p->uuid.bytes, v->info->uuid, 16);
	p->totalGlobalMem = v->info->total_mem;
	/* each field the attribute of the same meaning gives, as the GPU
	 * reports it (FROM_GPU) or as mearas offers it (OFFERED: attrs_offered.h) */
#define FROM_GPU(field, attr) p->field = a[cudaDevAttr##attr];
#define OFFERED(field, attr) p->field = core_offered_attr(cudaDevAttr##attr, a[cudaDevAttr##attr]);
	PROP_ATTRS(FROM_GPU, OFFERED)
#undef FROM_GPU
#undef OFFERED
	/* no access to pageable host memory, no concurrent managed access */
	p->pageableMemoryAccess = 0;
	p->concurrentManagedAccess = 0;
	p->canUseHostPointerForRegisteredMem = 0;
	p->pageableMemoryAccessUsesHostPageTables = 0;
	p->directManagedMemAccessFromHost = 0;
}

static void slot_release(void *arg)
{
	int slot = (int)(intptr_t)arg - 1;

	if (slot > 0)
		__atomic_and_fetch(&rt.slots_used, ~(1ull << slot), __ATOMIC_ACQ_REL);
}

/*
 * How long a wait for a completion spins before it sleeps. A local vGPU
 * answers a synchronizing call within a few microseconds of the GPU; a
 * remote one a network round trip later (tens of microseconds), and a
 * thread that went to sleep by then costs another wakeup on top. Like the
 * CUDA driver's automatic scheduling, spin only where cores are plentiful.
 * MEARAS_SPIN_US overrides both.
 */
static unsigned wait_spin_us(const struct mearas_devinfo *info)
{
	const char *env = getenv("MEARAS_SPIN_US");

	if (env && *env)
		return (unsigned)strtoul(env, NULL, 10);
	if (info->is_remote && sysconf(_SC_NPROCESSORS_ONLN) >= 4)
		return 300;
	return 20;
}

/*
 * MEARAS_VISIBLE_VGPUS=I,J,...: the process sees only those of mearasd's
 * vGPUs, in that order, as devices 0, 1, ... (as CUDA_VISIBLE_DEVICES does
 * for GPUs, which libcuda.so.1 does not apply: a program sees its assembly).
 * Unset or empty: all of them. Fills map[] with mearasd's indices and
 * returns how many; 0 after logging why the value is refused (an index that
 * is not a decimal number below `total`, one given twice, an empty entry).
 */
static unsigned visible_vgpus(unsigned total, unsigned map[MEARAS_MAX_VGPUS])
{
	const char *env = getenv("MEARAS_VISIBLE_VGPUS");
	const char *p = env;
	unsigned n = 0, seen = 0;

	if (!env || !*env) {
		for (unsigned i = 0; i < total; i++)
			map[i] = i;
		return total;
	}
	for (;;) {
		unsigned long v = 0;
		const char *start = p;

		while (*p >= '0' && *p <= '9' && p - start < 3)
			v = v * 10 + (unsigned long)(*p++ - '0');
		if (p == start || (*p && *p != ',')) {
			log_err("MEARAS_VISIBLE_VGPUS=%.64s: not a comma-separated list of vGPU indices", env);
			return 0;
		}
		if (v >= total) {
			log_err("MEARAS_VISIBLE_VGPUS=%.64s: no vGPU %lu (this process has %u: 0..%u)", env, v, total,
				total - 1);
			return 0;
		}
		if (seen & (1u << v)) {
			log_err("MEARAS_VISIBLE_VGPUS=%.64s: vGPU %lu given twice", env, v);
			return 0;
		}
		seen |= 1u << v;
		map[n++] = (unsigned)v;
		if (!*p)
			return n;
		p++;
	}
}

static void rt_connect(void)
{
	const struct mearas_region_hdr *hdr;
	unsigned map[MEARAS_MAX_VGPUS];
	uint64_t size, addr = 0;
	int memfd = -1;
	cudaError_t e;

	mearas_log_init("mearas");
	pthread_key_create(&slot_key, slot_release);
	for (unsigned i = 0; i < MEARAS_MAX_THREADS; i++)
		pthread_mutex_init(&rt.slot_lock[i], NULL);
	rt.slots_used = 1; /* slot 0: the host-function thread */
	e = tp_connect(&rt.tp, &memfd, &rt.memfd_off, &size, &addr, &rt.nvgpus, &rt.nthreads);
	if (e) {
		rt.init_err = e;
		return;
	}
	/* same address as the back end, if free here: pinned memory is then
	 * also device-addressable (cudaHostAllocMapped) */
	rt.region = mmap((void *)(uintptr_t)addr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
			 memfd, (off_t)rt.memfd_off);
	if (rt.region != MAP_FAILED && (uint64_t)(uintptr_t)rt.region == addr) {
		rt.same_address = 1;
	} else {
		if (rt.region != MAP_FAILED)
			munmap(rt.region, size);
		rt.region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, (off_t)rt.memfd_off);
		log_warn("cannot map the shared region at the back end's address: mapped pinned memory "
			 "(cudaHostAllocMapped) is not available");
	}
	rt.memfd = memfd; /* kept: cudaHostRegister maps data-area pages over registered memory */
	if (rt.region == MAP_FAILED) {
		log_err("cannot map the shared region (%llu bytes): %s", (unsigned long long)size, strerror(errno));
		rt.init_err = cudaErrorMemoryAllocation;
		return;
	}
	rt.region_size = size;
	hdr = (const struct mearas_region_hdr *)rt.region;
	if (hdr->magic == MEARAS_REGION_MAGIC && hdr->version != MEARAS_PROTO_VERSION) {
		log_err("mearasd speaks protocol %u with record layout %06x, this library %u with %06x: they come "
			"from different builds (update the guest's libraries or mearasd)", hdr->version & 0xff,
			hdr->version >> 8, MEARAS_PROTO_VERSION & 0xff, MEARAS_PROTO_VERSION >> 8);
		rt.init_err = cudaErrorInsufficientDriver;
		return;
	}
	if (hdr->magic != MEARAS_REGION_MAGIC ||
	    hdr->nvgpus != rt.nvgpus || hdr->data_off + hdr->data_size > size ||
	    hdr->sq_entries != MEARAS_SQ_ENTRIES || hdr->cq_entries != MEARAS_CQ_ENTRIES ||
	    hdr->arena_size != MEARAS_ARENA_SIZE || hdr->nthreads > MEARAS_MAX_THREADS ||
	    hdr->state != MEARAS_BACKEND_READY) {
		log_err("the shared region from mearasd is not in the expected format");
		rt.init_err = cudaErrorNoDevice;
		return;
	}
	rt.nvgpus = visible_vgpus(hdr->nvgpus, map);
	if (!rt.nvgpus) {
		rt.init_err = cudaErrorNoDevice;
		return;
	}
	rt.data = rt.region + hdr->data_off;
	rt.data_size = hdr->data_size;
	for (unsigned i = 0; i < rt.nvgpus; i++) {
		struct mearas_vgpu_layout l = mearas_vgpu_layout(hdr->sq_entries, hdr->cq_entries,
								 hdr->arena_size, hdr->nthreads);
		struct rt_vgpu *v = &rt.v[i];
		uint8_t *blk = rt.region + hdr->vgpu_off[map[i]];

		mearas_vgpu_rings_at(&v->rings, blk, &l, hdr->sq_entries, hdr->cq_entries, hdr->arena_size);
		v->host = map[i];
		v->info = v->rings.info;
		mearas_sqp_init(&v->sq, &v->rings);
		for (unsigned t = 0; t < rt.nthreads; t++)
			mearas_cqc_init(&v->cq[t], &v->rings, t);
		pthread_mutex_init(&v->sq_lock, NULL);
		fill_prop(v);
		v->spin_us = wait_spin_us(v->info);
		/* keep the vGPU's device address window out of our own address
		 * space, so a host pointer is never mistaken for a device one */
		v->window_reserved = mmap((void *)(uintptr_t)v->info->va_base, v->info->va_size, PROT_NONE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1,
					  0) == (void *)(uintptr_t)v->info->va_base;
		if (!v->window_reserved)
			log_debug("vGPU %u: window %#llx not reserved in this process", i,
				  (unsigned long long)v->info->va_base);
	}
	rt.next_handle = 1;
	log_debug("connected: %u vGPU(s), data area %llu MiB", rt.nvgpus,
		  (unsigned long long)(rt.data_size >> 20));
	rt_callback_thread_start();
}

bool rt_stopped(void)
{
	const struct mearas_region_hdr *hdr = (const struct mearas_region_hdr *)rt.region;

	if (rt.dead)
		return true;
	/* one load of a line the back end writes once: cheap on every call */
	if (hdr && __atomic_load_n(&hdr->state, __ATOMIC_ACQUIRE) != MEARAS_BACKEND_READY) {
		rt.dead = 1;
		return true;
	}
	return false;
}

cudaError_t rt_gone(void)
{
	const struct mearas_region_hdr *hdr = (const struct mearas_region_hdr *)rt.region;

	if (hdr && __atomic_load_n(&hdr->state, __ATOMIC_ACQUIRE) == MEARAS_BACKEND_TIMED_OUT)
		return cudaErrorLaunchTimeout;
	return cudaErrorDevicesUnavailable;
}

cudaError_t rt_ensure(void)
{
	pthread_once(&rt_once, rt_connect);
	if (rt.init_err)
		return rt.init_err;
	if (rt_stopped())
		return rt_gone();
	return cudaSuccess;
}

cudaError_t rt_ensure_device(int *dev)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (rt_tls.device < 0 || (unsigned)rt_tls.device >= rt.nvgpus)
		return cudaErrorInvalidDevice;
	*dev = rt_tls.device;
	/* a runtime call binds the thread to its device: the driver front end
	 * makes the device's primary context current unless a context is,
	 * as NVIDIA's runtime does, so that a library calling the driver on
	 * this thread (cuFFT's launches) finds it current */
	rt_set_device(*dev);
	return cudaSuccess;
}

int rt_slot(void)
{
	if (rt_tls.slot >= 0)
		return rt_tls.slot;
	for (;;) {
		uint64_t used = __atomic_load_n(&rt.slots_used, __ATOMIC_ACQUIRE);
		int free_slot = -1;

		for (unsigned i = 1; i < rt.nthreads; i++) {
			if (!(used & (1ull << i))) {
				free_slot = (int)i;
				break;
			}
		}
		if (free_slot < 0) {
			/* more threads than slots: share one (calls serialize on its lock) */
			rt_tls.slot = 1 + (int)((uintptr_t)pthread_self() % (rt.nthreads - 1));
			return rt_tls.slot;
		}
		if (__atomic_compare_exchange_n(&rt.slots_used, &used, used | (1ull << free_slot), false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			rt_tls.slot = free_slot;
			pthread_setspecific(slot_key, (void *)(intptr_t)(free_slot + 1));
			return free_slot;
		}
	}
}

uint32_t rt_new_handle(void)
{
	uint32_t h = __atomic_fetch_add(&rt.next_handle, 1, __ATOMIC_RELAXED);

	if (h >= MEARAS_MAX_HANDLES)
		return 0;
	return h;
}

void rt_log_unsupported(const char *name)
{
	log_warn("%s is not supported by mearas yet: returning cudaErrorNotSupported", name);
}

const char *rt_error_name(cudaError_t e)
{
	switch ((int)e) {
#define X(name, value, text) case value: return #name;
#include "cuda_errors.gen.h"
#undef X
	default:
		return NULL;
	}
}

int rt_vgpu_at_pci(unsigned n, unsigned dom, unsigned bus, unsigned slot)
{
	for (unsigned i = 0; i < n && i < rt.nvgpus; i++) {
		const int32_t *a = rt.v[i].info->attrs;

		if ((unsigned)a[cudaDevAttrPciDomainId] == dom &&
		    (unsigned)a[cudaDevAttrPciBusId] == bus &&
		    (unsigned)a[cudaDevAttrPciDeviceId] == slot)
			return (int)i;
	}
	return -1;
}

int rt_vgpu_by_bus_id(const char *bus_id)
{
	unsigned dom = 0, bus, slot;

	if (sscanf(bus_id, "%x:%x:%x", &dom, &bus, &slot) != 3) {
		dom = 0;
		if (sscanf(bus_id, "%x:%x", &bus, &slot) != 2)
			return -2;
	}
	return rt_vgpu_at_pci(rt.nvgpus, dom, bus, slot);
}
