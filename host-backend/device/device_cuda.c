// SPDX-License-Identifier: MIT
/*
 * The GPU device: everything through the CUDA driver API, loaded with
 * dlopen so that mearasd starts (with --device=sim) on machines without a
 * driver. Each vGPU uses its GPU's primary context and its own
 * virtual-address window (cuMemAddressReserve at a fixed address), mapped in
 * chunks with cuMemCreate/cuMemMap.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cudaProfiler.h>

#include "device.h"
#include "mearas/log.h"
#include "mearas/array_cu.h"
#include "mearas/link.h"
#include "mearas/tensormap.h"
#include "kmd_version.h"
#include "pcie_link.h"

/* The driver functions used: one table gives the pointer declarations and
 * the lookups. Names go through the macros of cuda.h (cuMemAlloc ->
 * cuMemAlloc_v2 ...) before being looked up. */
#define CUDA_SYMS(X)                                                            \
	X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)         \
	X(cuDeviceGetUuid) X(cuDeviceTotalMem) X(cuDeviceGetAttribute)          \
	X(cuDriverGetVersion) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)    \
	X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemCreate) X(cuMemMap)   \
	X(cuMemSetAccess) X(cuMemUnmap) X(cuMemRelease)                         \
	X(cuMemGetAllocationGranularity) X(cuMemHostRegister)                   \
	X(cuMemHostUnregister) X(cuMemGetInfo) X(cuMemcpyHtoDAsync)             \
	X(cuMemcpyDtoHAsync) X(cuMemcpyAsync) X(cuMemcpy2DAsync)                \
	X(cuMemsetD8Async) X(cuMemsetD16Async) X(cuMemsetD32Async)              \
	X(cuStreamWriteValue32) X(cuStreamWriteValue64) X(cuStreamWaitValue32)  \
	X(cuStreamWaitValue64)                                                  \
	X(cuMemsetD2D8Async) X(cuModuleLoadData) X(cuModuleUnload)              \
	X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuFuncGetAttribute)       \
	X(cuFuncSetAttribute) X(cuFuncSetCacheConfig) X(cuFuncGetParamInfo)     \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuLaunchKernel)        \
	X(cuOccupancyMaxActiveClusters) X(cuOccupancyAvailableDynamicSMemPerBlock) \
	X(cuLaunchKernelEx) X(cuStreamCreateWithPriority) X(cuStreamDestroy)    \
	X(cuStreamWaitEvent) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventRecordWithFlags) \
	X(cuEventQuery) X(cuEventElapsedTime) X(cuStreamBeginCapture)           \
	X(cuStreamEndCapture) X(cuStreamIsCapturing) X(cuGraphInstantiate)      \
	X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuGraphClone) \
	X(cuLaunchHostFunc) X(cuGetErrorName) X(cuDeviceCanAccessPeer)        \
	X(cuCtxSynchronize) X(cuStreamSynchronize) X(cuEventSynchronize)        \
	X(cuGraphGetNodes) X(cuGraphNodeGetType) X(cuGraphHostNodeGetParams)      \
	X(cuCtxSetLimit) X(cuCtxGetLimit) X(cuProfilerStart) X(cuProfilerStop)   \
	X(cuLinkCreate) X(cuLinkAddData) X(cuLinkComplete) X(cuLinkDestroy)     \
	X(cuArray3DCreate) X(cuArrayDestroy) X(cuMemcpy3DAsync)                 \
	X(cuArrayGetMemoryRequirements)                                         \
	X(cuTexObjectCreate) X(cuTexObjectDestroy) X(cuSurfObjectCreate)        \
	X(cuSurfObjectDestroy) X(cuMemHostAlloc) X(cuMemHostGetDevicePointer)   \
	X(cuStreamQuery)

#define SYM_STR2(x) #x
#define SYM_STR(x) SYM_STR2(x)
#define SYM_PTR(name) static __typeof__(&name) p_##name;
CUDA_SYMS(SYM_PTR)

/* CUresult values are the cudaError_t values for everything we pass on. */
static int cu_err(CUresult r)
{
	return (int)r;
}

struct mdev {
	CUdevice dev;
	CUcontext ctx;
	int phys;
	CUdeviceptr window;
	uint64_t window_size;
	CUstream probe;         /* an empty stream of our own (cuda_status), made with the flags */
};

struct cuda_func {
	CUfunction f;
	uint32_t nparams;
	uint32_t offsets[];
};

struct cuda_module {
	CUmodule m;
	void *image;            /* kept for the module's life (lazy loading reads it) */
};

static void *libcuda;
/* optional (CUDA 12.3 and later): kernel names in log lines */
static CUresult (*p_cuFuncGetName)(const char **name, CUfunction f);
/* optional: tensor maps (CUDA 12.0; Im2colWide 12.8), NULL in older drivers */
static __typeof__(&cuTensorMapEncodeTiled) p_cuTensorMapEncodeTiled;
static __typeof__(&cuTensorMapEncodeIm2col) p_cuTensorMapEncodeIm2col;
static __typeof__(&cuTensorMapEncodeIm2colWide) p_cuTensorMapEncodeIm2colWide;

static int cuda_init(char *err, size_t errlen)
{
	const char *path;
	CUresult r;

	if (libcuda)
		return 0;
	/* MEARAS_CUDA_DRIVER names the driver when the library path holds
	 * something else first */
	path = getenv("MEARAS_CUDA_DRIVER");
	if (!path || !*path)
		path = "libcuda.so.1";
	libcuda = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!libcuda) {
		snprintf(err, errlen, "cannot load the CUDA driver (%s): %s", path, dlerror());
		return cudaErrorInsufficientDriver;
	}
	/* mearas's own libcuda.so.1 (the guest front end) would connect back
	 * to a mearasd: never serve vGPUs through it */
	if (dlsym(libcuda, "mearas_front_end")) {
		snprintf(err, errlen, "%s is mearas's front end, not NVIDIA's driver: take mearas's library "
			 "directory out of mearasd's LD_LIBRARY_PATH, or name the driver with MEARAS_CUDA_DRIVER", path);
		dlclose(libcuda);
		libcuda = NULL;
		return cudaErrorInsufficientDriver;
	}
#define SYM_LOAD(name)                                                                  \
	p_##name = (__typeof__(&name))dlsym(libcuda, SYM_STR(name));                    \
	if (!p_##name) {                                                                \
		snprintf(err, errlen, "the CUDA driver lacks %s (driver too old?)", SYM_STR(name)); \
		return cudaErrorInsufficientDriver;                                     \
	}
	CUDA_SYMS(SYM_LOAD)
#undef SYM_LOAD
	p_cuFuncGetName = (CUresult (*)(const char **, CUfunction))dlsym(libcuda, "cuFuncGetName");
	p_cuTensorMapEncodeTiled = (__typeof__(&cuTensorMapEncodeTiled))dlsym(libcuda, "cuTensorMapEncodeTiled");
	p_cuTensorMapEncodeIm2col = (__typeof__(&cuTensorMapEncodeIm2col))dlsym(libcuda, "cuTensorMapEncodeIm2col");
	p_cuTensorMapEncodeIm2colWide =
		(__typeof__(&cuTensorMapEncodeIm2colWide))dlsym(libcuda, "cuTensorMapEncodeIm2colWide");
	r = p_cuInit(0);
	if (r) {
		snprintf(err, errlen, "cuInit failed with error %d", (int)r);
		return cu_err(r);
	}
	return 0;
}

static int cuda_count(void)
{
	int n = 0;

	if (!p_cuDeviceGetCount || p_cuDeviceGetCount(&n))
		return 0;
	return n;
}

static CUmemAllocationProp alloc_prop(int phys)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = phys;
	return p;
}

/* read and write access of the device phys to a mapping */
static CUmemAccessDesc rw_access(int phys)
{
	CUmemAccessDesc a;

	memset(&a, 0, sizeof(a));
	a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.location.id = phys;
	a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return a;
}

static int cuda_open(struct mdev **out, int phys, uint64_t va_base, uint64_t va_size,
		     struct mearas_devinfo *info, uint64_t *granularity)
{
	struct mdev *d = calloc(1, sizeof(*d));
	CUmemAllocationProp prop = alloc_prop(phys);
	size_t gran = 0, total = 0;
	CUuuid uuid;
	CUresult r;

	if (!d)
		return cudaErrorMemoryAllocation;
	d->phys = phys;
	r = p_cuDeviceGet(&d->dev, phys);
	if (!r)
		r = p_cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
	if (!r)
		r = p_cuCtxSetCurrent(d->ctx);
	if (!r)
		r = p_cuDeviceGetName(info->name, sizeof(info->name), d->dev);
	if (!r)
		r = p_cuDeviceGetUuid(&uuid, d->dev);
	if (!r)
		r = p_cuDeviceTotalMem(&total, d->dev);
	if (!r)
		r = p_cuDriverGetVersion(&info->driver_version);
	if (!r)
		r = p_cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
	if (r) {
		free(d);
		return cu_err(r);
	}
	memcpy(info->uuid, uuid.bytes, 16);
	for (int a = 1; a < (int)MEARAS_NUM_ATTRS && a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
		int v = 0;

		if (p_cuDeviceGetAttribute(&v, (CUdevice_attribute)a, d->dev) == CUDA_SUCCESS)
			info->attrs[a] = v;
	}
	info->total_mem = total;
	info->ordinal = phys;
	/* for NVML's link queries: sysfs has the GPU's link at its PCI address */
	pcie_link_read("/sys", (unsigned)info->attrs[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
		       (unsigned)info->attrs[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID],
		       (unsigned)info->attrs[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID], &info->pcie);
	if (!kmd_version_read("/proc/driver/nvidia/version", info->kmd_version, sizeof(info->kmd_version)))
		info->kmd_version[0] = 0;
	r = p_cuMemAddressReserve(&d->window, va_size, 0, (CUdeviceptr)va_base, 0);
	if (r) {
		free(d);
		return cu_err(r);
	}
	if (d->window != va_base)
		log_warn("GPU %d: address window at %#llx instead of %#llx (pointers stay unique in this node only)",
			 phys, (unsigned long long)d->window, (unsigned long long)va_base);
	d->window_size = va_size;
	info->va_base = d->window;
	*granularity = gran;
	*out = d;
	return 0;
}

static void cuda_close(struct mdev *d)
{
	if (d->probe)
		p_cuStreamDestroy(d->probe);
	p_cuMemAddressFree(d->window, d->window_size);
	free(d);
}

static void cuda_bind_thread(struct mdev *d)
{
	p_cuCtxSetCurrent(d->ctx);
}

static int cuda_host_register(struct mdev *d, void *base, size_t size)
{
	(void)d;
	return cu_err(p_cuMemHostRegister(base, size, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
}

static void cuda_host_unregister(struct mdev *d, void *base)
{
	(void)d;
	p_cuMemHostUnregister(base);
}

static int cuda_chunk_map(struct mdev *d, uint64_t va, uint64_t size, void **cookie)
{
	CUmemAllocationProp prop = alloc_prop(d->phys);
	CUmemAccessDesc acc = rw_access(d->phys);
	CUmemGenericAllocationHandle h;
	CUresult r;

	r = p_cuMemCreate(&h, size, &prop, 0);
	if (r)
		return r == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : cu_err(r);
	r = p_cuMemMap((CUdeviceptr)va, size, 0, h, 0);
	if (!r)
		r = p_cuMemSetAccess((CUdeviceptr)va, size, &acc, 1);
	if (r) {
		p_cuMemUnmap((CUdeviceptr)va, size);
		p_cuMemRelease(h);
		return cu_err(r);
	}
	*cookie = (void *)(uintptr_t)h;
	return 0;
}

static void cuda_chunk_unmap(struct mdev *d, uint64_t va, uint64_t size, void *cookie)
{
	(void)d;
	p_cuMemUnmap((CUdeviceptr)va, size);
	p_cuMemRelease((CUmemGenericAllocationHandle)(uintptr_t)cookie);
}

/* ---- virtual memory management: the window is reserved whole at open, so
 * reservations need nothing here; physical memory is the vGPU's device's ---- */

static int cuda_phys_create(struct mdev *d, uint64_t size, void **phys)
{
	CUmemAllocationProp prop = alloc_prop(d->phys);
	CUmemGenericAllocationHandle h = 0;
	CUresult r = p_cuMemCreate(&h, size, &prop, 0);

	if (r)
		return r == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : cu_err(r);
	*phys = (void *)(uintptr_t)h;
	return 0;
}

static void cuda_phys_release(struct mdev *d, void *phys)
{
	(void)d;
	p_cuMemRelease((CUmemGenericAllocationHandle)(uintptr_t)phys);
}

static int cuda_phys_map(struct mdev *d, uint64_t va, uint64_t size, void *phys, uint64_t offset, void **cookie)
{
	CUmemAccessDesc acc = rw_access(d->phys);
	CUresult r;

	r = p_cuMemMap((CUdeviceptr)va, size, offset, (CUmemGenericAllocationHandle)(uintptr_t)phys, 0);
	if (r)
		return cu_err(r);
	r = p_cuMemSetAccess((CUdeviceptr)va, size, &acc, 1);
	if (r) {
		p_cuMemUnmap((CUdeviceptr)va, size);
		return cu_err(r);
	}
	*cookie = NULL;
	return 0;
}

static void cuda_phys_unmap(struct mdev *d, uint64_t va, uint64_t size, void *cookie)
{
	CUresult r;

	(void)cookie;
	/* work already queued may still use the range: let it finish first (the
	 * memory could otherwise go back to the driver under a running kernel) */
	r = p_cuCtxSynchronize();
	if (r)
		log_warn("GPU %d: synchronizing before an unmap at %#llx: error %d", d->phys, (unsigned long long)va,
			 (int)r);
	r = p_cuMemUnmap((CUdeviceptr)va, size);
	if (r)
		log_err("GPU %d: cuMemUnmap of %llu bytes at %#llx: error %d", d->phys, (unsigned long long)size,
			(unsigned long long)va, (int)r);
}

static int cuda_mem_info(struct mdev *d, uint64_t *free_b, uint64_t *total)
{
	size_t f = 0, t = 0;
	int r;

	(void)d;
	r = cu_err(p_cuMemGetInfo(&f, &t));
	*free_b = f;
	*total = t;
	return r;
}

static int cuda_copy(struct mdev *d, void *stream, int dir, uint64_t dst, uint64_t src, uint64_t size)
{
	CUstream s = stream;

	(void)d;
	switch (dir) {
	case MEARAS_COPY_HTOD:
		return cu_err(p_cuMemcpyHtoDAsync((CUdeviceptr)dst, (const void *)(uintptr_t)src, size, s));
	case MEARAS_COPY_DTOH:
		return cu_err(p_cuMemcpyDtoHAsync((void *)(uintptr_t)dst, (CUdeviceptr)src, size, s));
	case MEARAS_COPY_DTOD:
		return cu_err(p_cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, size, s));
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
}

static int cuda_copy_2d(struct mdev *d, void *stream, int dir, uint64_t dst, uint64_t dpitch,
			uint64_t src, uint64_t spitch, uint64_t width, uint64_t height)
{
	CUDA_MEMCPY2D c;

	(void)d;
	memset(&c, 0, sizeof(c));
	if (dir == MEARAS_COPY_HTOD || dir == MEARAS_COPY_HTOH) {
		c.srcMemoryType = CU_MEMORYTYPE_HOST;
		c.srcHost = (const void *)(uintptr_t)src;
	} else {
		c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c.srcDevice = (CUdeviceptr)src;
	}
	if (dir == MEARAS_COPY_DTOH || dir == MEARAS_COPY_HTOH) {
		c.dstMemoryType = CU_MEMORYTYPE_HOST;
		c.dstHost = (void *)(uintptr_t)dst;
	} else {
		c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c.dstDevice = (CUdeviceptr)dst;
	}
	c.srcPitch = spitch;
	c.dstPitch = dpitch;
	c.WidthInBytes = width;
	c.Height = height;
	return cu_err(p_cuMemcpy2DAsync(&c, (CUstream)stream));
}

static int cuda_memset(struct mdev *d, void *stream, uint64_t dst, uint32_t value, uint64_t count,
		       unsigned elem)
{
	(void)d;
	if (elem == 1)
		return cu_err(p_cuMemsetD8Async((CUdeviceptr)dst, (unsigned char)value, count, stream));
	if (elem == 2)
		return cu_err(p_cuMemsetD16Async((CUdeviceptr)dst, (unsigned short)value, count, stream));
	return cu_err(p_cuMemsetD32Async((CUdeviceptr)dst, value, count, stream));
}

/* host words are registered host memory: on UVA their device address is
 * their host address */
static int cuda_stream_memop(struct mdev *d, void *stream, bool wait, uint64_t addr, bool host, uint64_t value,
			     unsigned size, unsigned flags)
{
	CUstream s = (CUstream)stream;
	CUdeviceptr p = (CUdeviceptr)addr;

	(void)d, (void)host;
	if (wait)
		return cu_err(size == 4 ? p_cuStreamWaitValue32(s, p, (cuuint32_t)value, flags)
					: p_cuStreamWaitValue64(s, p, value, flags));
	return cu_err(size == 4 ? p_cuStreamWriteValue32(s, p, (cuuint32_t)value, flags)
				: p_cuStreamWriteValue64(s, p, value, flags));
}

static int cuda_memset_2d(struct mdev *d, void *stream, uint64_t dst, uint64_t pitch, uint8_t value,
			  uint64_t width, uint64_t height)
{
	(void)d;
	return cu_err(p_cuMemsetD2D8Async((CUdeviceptr)dst, pitch, value, width, height, stream));
}

static int cuda_module_load(struct mdev *d, const void *image, size_t size, void **module)
{
	struct cuda_module *m = malloc(sizeof(*m));
	CUresult r;

	(void)d;
	if (!m || !(m->image = malloc(size))) {
		free(m);
		return cudaErrorMemoryAllocation;
	}
	memcpy(m->image, image, size);
	r = p_cuModuleLoadData(&m->m, m->image);
	if (r) {
		free(m->image);
		free(m);
		return cu_err(r);
	}
	*module = m;
	return 0;
}

/* the host driver's linker, on this device's context (the caller's thread
 * has it current), for the GPU behind the vGPU */
static int cuda_link(struct mdev *d, const struct mdev_link_input *in, unsigned n, const uint32_t *opt,
		     const uint32_t *val, unsigned nopt, void *out, uint64_t cap, uint64_t *size, int *link_error)
{
	char *log = malloc(MEARAS_LINK_LOG_BYTES);
	CUjit_option o[MEARAS_LINK_MAX_OPTS + 2];
	void *ov[MEARAS_LINK_MAX_OPTS + 2];
	CUlinkState st;
	void *image = NULL;
	size_t isize = 0;
	unsigned k = 0;
	CUresult r;

	(void)d;
	if (!log)
		return cudaErrorMemoryAllocation;
	for (; k < nopt; k++) {
		o[k] = (CUjit_option)opt[k];
		ov[k] = (void *)(uintptr_t)val[k];
	}
	log[0] = '\0';
	o[k] = CU_JIT_ERROR_LOG_BUFFER;
	ov[k++] = log;
	o[k] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
	ov[k++] = (void *)(uintptr_t)MEARAS_LINK_LOG_BYTES;
	r = p_cuLinkCreate(k, o, ov, &st);
	if (r) {
		free(log);
		return cu_err(r);
	}
	for (unsigned i = 0; i < n && !r; i++)
		r = p_cuLinkAddData(st, (CUjitInputType)in[i].type, (void *)in[i].data, in[i].size, NULL, 0, NULL,
				    NULL);
	if (!r)
		r = p_cuLinkComplete(st, &image, &isize);
	*link_error = cu_err(r);
	if (r) {
		/* the log's length, as the driver leaves it, bounded */
		*size = strnlen(log, MEARAS_LINK_LOG_BYTES - 1);
		memcpy(out, log, *size < cap ? *size : cap);
	} else {
		*size = isize;
		if (isize <= cap)
			memcpy(out, image, isize);
	}
	p_cuLinkDestroy(st);
	free(log);
	return 0;
}

static void cuda_module_unload(struct mdev *d, void *module)
{
	struct cuda_module *m = module;

	(void)d;
	p_cuModuleUnload(m->m);
	free(m->image);
	free(m);
}

static const char *cuda_func_name(struct mdev *d, void *func)
{
	const char *name = NULL;

	(void)d;
	if (!p_cuFuncGetName || p_cuFuncGetName(&name, ((struct cuda_func *)func)->f))
		return NULL;
	return name;
}

static int cuda_func_get(struct mdev *d, void *module, const char *name, void **func,
			 uint32_t *nparams, uint32_t *param_bytes)
{
	struct cuda_module *m = module;
	struct cuda_func *f;
	CUfunction fn;
	uint32_t n = 0, bytes = 0;
	size_t off, sz;
	CUresult r;

	(void)d;
	r = p_cuModuleGetFunction(&fn, m->m, name);
	if (r)
		return r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidDeviceFunction : cu_err(r);
	while (n < MEARAS_MAX_PARAM_BYTES && p_cuFuncGetParamInfo(fn, n, &off, &sz) == CUDA_SUCCESS) {
		if (off + sz > bytes)
			bytes = (uint32_t)(off + sz);
		n++;
	}
	f = malloc(sizeof(*f) + n * sizeof(f->offsets[0]));
	if (!f)
		return cudaErrorMemoryAllocation;
	f->f = fn;
	f->nparams = n;
	for (uint32_t i = 0; i < n; i++) {
		p_cuFuncGetParamInfo(fn, i, &off, &sz);
		f->offsets[i] = (uint32_t)off;
	}
	*nparams = n;
	*param_bytes = bytes;
	*func = f;
	return 0;
}

static void cuda_func_put(struct mdev *d, void *func)
{
	(void)d;
	free(func);
}

static int cuda_func_attrs(struct mdev *d, void *func, uint64_t out[2])
{
	struct cuda_func *f = func;
	int regs = 0, maxt = 0, ptx = 0, bin = 0, shared = 0, local = 0, cnst = 0;

	(void)d;
	p_cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f->f);
	p_cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f->f);
	p_cuFuncGetAttribute(&ptx, CU_FUNC_ATTRIBUTE_PTX_VERSION, f->f);
	p_cuFuncGetAttribute(&bin, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f->f);
	p_cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f->f);
	p_cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f->f);
	p_cuFuncGetAttribute(&cnst, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, f->f);
	out[0] = (uint64_t)(regs & 0xffff) | ((uint64_t)(maxt & 0xffff) << 16) |
		 ((uint64_t)(ptx & 0xffff) << 32) | ((uint64_t)(bin & 0xffff) << 48);
	out[1] = (uint64_t)(shared & 0xffffff) | ((uint64_t)(local & 0xffffff) << 24) |
		 ((uint64_t)(cnst & 0xffff) << 48);
	return 0;
}

static int cuda_func_set_attr(struct mdev *d, void *func, int attr, int value)
{
	struct cuda_func *f = func;

	(void)d;
	if (attr < 0)
		return cu_err(p_cuFuncSetCacheConfig(f->f, (CUfunc_cache)value));
	return cu_err(p_cuFuncSetAttribute(f->f, (CUfunction_attribute)attr, value));
}

static int cuda_occupancy(struct mdev *d, void *func, int block, size_t smem, int *blocks)
{
	struct cuda_func *f = func;

	(void)d;
	return cu_err(p_cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f->f, block, smem));
}

/* l as the driver's launch configuration: its shape, and the attributes the
 * record carried (attr holds them all) */
#define LAUNCH_ATTRS 7
static void launch_config(const struct mdev_launch *l, CUstream s, CUlaunchAttribute attr[LAUNCH_ATTRS],
			  CUlaunchConfig *cfg)
{
	unsigned n = 0;

	memset(cfg, 0, sizeof(*cfg));
	memset(attr, 0, LAUNCH_ATTRS * sizeof(*attr));
	if (l->cooperative) {
		attr[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attr[n++].value.cooperative = 1;
	}
	if (l->cluster[0]) {
		attr[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[n].value.clusterDim.x = l->cluster[0];
		attr[n].value.clusterDim.y = l->cluster[1];
		attr[n++].value.clusterDim.z = l->cluster[2];
	}
	if (l->programmatic) {
		attr[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
		attr[n++].value.programmaticStreamSerializationAllowed = 1;
	}
	if (l->sync_domain_remote) {
		attr[n].id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
		attr[n++].value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
	}
	if (l->cluster_policy) {
		attr[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
		attr[n++].value.clusterSchedulingPolicyPreference = (CUclusterSchedulingPolicy)l->cluster_policy;
	}
	if (l->has_priority) {
		attr[n].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
		attr[n++].value.priority = l->priority;
	}
	if (l->has_carveout) {
		attr[n].id = CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
		attr[n++].value.sharedMemCarveout = (unsigned)l->carveout;
	}
	cfg->gridDimX = l->grid[0];
	cfg->gridDimY = l->grid[1];
	cfg->gridDimZ = l->grid[2];
	cfg->blockDimX = l->block[0];
	cfg->blockDimY = l->block[1];
	cfg->blockDimZ = l->block[2];
	cfg->sharedMemBytes = l->smem;
	cfg->hStream = s;
	cfg->attrs = n ? attr : NULL;
	cfg->numAttrs = n;
}

static int cuda_occupancy_clusters(struct mdev *d, void *func, const struct mdev_launch *l, int *clusters)
{
	struct cuda_func *f = func;
	CUlaunchConfig cfg;
	CUlaunchAttribute attr[LAUNCH_ATTRS];

	(void)d;
	launch_config(l, NULL, attr, &cfg);
	return cu_err(p_cuOccupancyMaxActiveClusters(clusters, f->f, &cfg));
}

static int cuda_global_get(struct mdev *d, void *module, const char *name, uint64_t size_hint,
			   uint64_t *ptr, uint64_t *size)
{
	struct cuda_module *m = module;
	CUdeviceptr p;
	size_t s;
	CUresult r;

	(void)d;
	(void)size_hint;
	r = p_cuModuleGetGlobal(&p, &s, m->m, name);
	if (r)
		return r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidSymbol : cu_err(r);
	*ptr = p;
	*size = s;
	return 0;
}

/* The legacy default stream: CU_STREAM_LEGACY is the handle the poller keeps
 * (it must be non-NULL), NULL is how the driver's fast path names it. */
static CUstream drv_stream(void *s)
{
	return s == CU_STREAM_LEGACY ? NULL : (CUstream)s;
}

static int cuda_launch(struct mdev *d, void *func, void *stream, const struct mdev_launch *l)
{
	struct cuda_func *f = func;
	size_t size = l->param_bytes;

	(void)d;
	void *kp[f->nparams + 1];

	/* parameter pointers into the packed buffer, as the runtime passes them */
	for (uint32_t i = 0; i < f->nparams; i++)
		kp[i] = (uint8_t *)l->params + f->offsets[i];
	if (f->nparams && f->offsets[f->nparams - 1] >= size)
		return cudaErrorInvalidValue;
	if (!l->cooperative && !l->cluster[0] && !l->programmatic && !l->sync_domain_remote && !l->cluster_policy &&
	    !l->has_priority && !l->has_carveout)
		return cu_err(p_cuLaunchKernel(f->f, l->grid[0], l->grid[1], l->grid[2], l->block[0],
					       l->block[1], l->block[2], l->smem, drv_stream(stream),
					       f->nparams ? kp : NULL, NULL));
	{
		CUlaunchConfig cfg;
		CUlaunchAttribute attr[LAUNCH_ATTRS];

		launch_config(l, stream, attr, &cfg);
		return cu_err(p_cuLaunchKernelEx(&cfg, f->f, kp, NULL));
	}
}

static void *cuda_stream_default(struct mdev *d)
{
	(void)d;
	return CU_STREAM_LEGACY;
}

static int cuda_stream_create(struct mdev *d, unsigned flags, int priority, void **s)
{
	(void)d;
	return cu_err(p_cuStreamCreateWithPriority((CUstream *)s, flags, priority));
}

static int cuda_stream_destroy(struct mdev *d, void *s)
{
	(void)d;
	return cu_err(p_cuStreamDestroy((CUstream)s));
}

static int cuda_stream_wait_event(struct mdev *d, void *s, void *ev, unsigned flags)
{
	(void)d;
	return cu_err(p_cuStreamWaitEvent((CUstream)s, (CUevent)ev, flags));
}

static int cuda_event_create(struct mdev *d, unsigned flags, void **e)
{
	(void)d;
	return cu_err(p_cuEventCreate((CUevent *)e, flags));
}

static int cuda_event_destroy(struct mdev *d, void *e)
{
	(void)d;
	return cu_err(p_cuEventDestroy((CUevent)e));
}

static int cuda_event_record(struct mdev *d, void *e, void *s)
{
	(void)d;
	return cu_err(p_cuEventRecord((CUevent)e, (CUstream)s));
}

static int cuda_event_record_external(struct mdev *d, void *e, void *s)
{
	(void)d;
	return cu_err(p_cuEventRecordWithFlags((CUevent)e, (CUstream)s, CU_EVENT_RECORD_EXTERNAL));
}

static int cuda_event_query(struct mdev *d, void *e)
{
	(void)d;
	return cu_err(p_cuEventQuery((CUevent)e));
}

/* A set of completion flags: pinned host words the device writes through
 * their mapped address. Never freed: a write still queued behind a stream
 * must not land in memory used for something else (the context frees them
 * at the process's end). */
struct cuda_flags {
	uint32_t *words;
	CUdeviceptr dev;
	unsigned n;
};

static int cuda_flags_create(struct mdev *d, unsigned n, void **flags)
{
	struct cuda_flags *f = calloc(1, sizeof(*f));
	CUresult r;

	if (!f)
		return cudaErrorMemoryAllocation;
	/* the stream cuda_status asks on, made here: without it no flags (events
	 * then), rather than waits failed later by its making failing */
	if (!d->probe)
		r = p_cuStreamCreateWithPriority(&d->probe, CU_STREAM_NON_BLOCKING, 0);
	else
		r = CUDA_SUCCESS;
	if (!r)
		r = p_cuMemHostAlloc((void **)&f->words, (size_t)n * sizeof(uint32_t),
				     CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
	if (!r)
		r = p_cuMemHostGetDevicePointer(&f->dev, f->words, 0);
	if (r) {
		/* a set not made leaks its words rather than risk a free under the device */
		free(f);
		return cu_err(r);
	}
	memset(f->words, 0, (size_t)n * sizeof(uint32_t));
	f->n = n;
	*flags = f;
	return 0;
}

static int cuda_flag_write(struct mdev *d, void *flags, unsigned i, uint32_t value, void *stream)
{
	struct cuda_flags *f = flags;

	(void)d;
	if (i >= f->n)
		return cudaErrorInvalidValue;
	/* the default write waits for the stream's earlier work, and its
	 * writes (a device-to-host copy's bytes) are visible before it */
	return cu_err(p_cuStreamWriteValue32((CUstream)stream, f->dev + (CUdeviceptr)i * sizeof(uint32_t), value,
					     CU_STREAM_WRITE_VALUE_DEFAULT));
}

static uint32_t cuda_flag_read(struct mdev *d, void *flags, unsigned i)
{
	struct cuda_flags *f = flags;

	(void)d;
	return i < f->n ? __atomic_load_n(&f->words[i], __ATOMIC_ACQUIRE) : 0;
}

/* A query of an empty non-blocking stream of our own returns the context's
 * sticky error, if any, and nothing else: no work of the client's is on it,
 * and unlike the legacy stream it is not tied to a capture of a blocking
 * stream (which would answer cudaErrorStreamCaptureImplicit). */
static int cuda_status(struct mdev *d)
{
	/* made with the flags (cuda_flags_create); exec.c asks only once they exist */
	CUresult r = p_cuStreamQuery(d->probe);

	return r == CUDA_ERROR_NOT_READY ? 0 : cu_err(r);
}

static int cuda_event_elapsed(struct mdev *d, void *start, void *end, float *ms)
{
	(void)d;
	return cu_err(p_cuEventElapsedTime(ms, (CUevent)start, (CUevent)end));
}

static int cuda_capture_begin(struct mdev *d, void *s, int mode)
{
	(void)d;
	(void)mode;
	/* relaxed: the poller itself makes calls (fences, other clients'
	 * streams) that global mode would count against the capture */
	return cu_err(p_cuStreamBeginCapture((CUstream)s, CU_STREAM_CAPTURE_MODE_RELAXED));
}

static int cuda_capture_end(struct mdev *d, void *s, void **graph)
{
	(void)d;
	return cu_err(p_cuStreamEndCapture((CUstream)s, (CUgraph *)graph));
}

static int cuda_capture_status(struct mdev *d, void *s, int *status)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	int r;

	(void)d;
	r = cu_err(p_cuStreamIsCapturing((CUstream)s, &st));
	*status = (int)st;
	return r;
}

static int cuda_graph_instantiate(struct mdev *d, void *graph, uint64_t flags, void **exec)
{
	(void)d;
	return cu_err(p_cuGraphInstantiate((CUgraphExec *)exec, (CUgraph)graph, (unsigned long long)flags));
}

static int cuda_graph_launch(struct mdev *d, void *exec, void *s)
{
	(void)d;
	return cu_err(p_cuGraphLaunch((CUgraphExec)exec, (CUstream)s));
}

static void cuda_graph_destroy(struct mdev *d, void *graph)
{
	(void)d;
	p_cuGraphDestroy((CUgraph)graph);
}

static void cuda_graph_exec_destroy(struct mdev *d, void *exec)
{
	(void)d;
	p_cuGraphExecDestroy((CUgraphExec)exec);
}

static void cuda_flush_output(struct mdev *d, void *stream, void *event)
{
	(void)d;
	if (event)
		p_cuEventSynchronize((CUevent)event);
	else if (stream)
		p_cuStreamSynchronize((CUstream)stream);
	else
		p_cuCtxSynchronize();
}

static int cuda_graph_node_count(struct mdev *d, void *graph, uint64_t *count)
{
	size_t n = 0;
	int r;

	(void)d;
	r = cu_err(p_cuGraphGetNodes((CUgraph)graph, NULL, &n));
	*count = n;
	return r;
}

static int cuda_graph_clone(struct mdev *d, void *graph, void **clone)
{
	(void)d;
	return cu_err(p_cuGraphClone((CUgraph *)clone, (CUgraph)graph));
}

static int cuda_host_func(struct mdev *d, void *s, void (*fn)(void *), void *arg)
{
	(void)d;
	return cu_err(p_cuLaunchHostFunc((CUstream)s, fn, arg));
}

static int cuda_graph_host_funcs(struct mdev *d, void *graph, void (*fn)(void *), void **args, size_t max,
				 size_t *n)
{
	CUgraphNode *nodes;
	size_t count = 0;
	int r;

	(void)d;
	*n = 0;
	r = cu_err(p_cuGraphGetNodes((CUgraph)graph, NULL, &count));
	if (r || !count)
		return r;
	nodes = calloc(count, sizeof(*nodes));
	if (!nodes)
		return cudaErrorMemoryAllocation;
	r = cu_err(p_cuGraphGetNodes((CUgraph)graph, nodes, &count));
	for (size_t i = 0; !r && i < count; i++) {
		CUgraphNodeType t;
		CUDA_HOST_NODE_PARAMS hp;

		r = cu_err(p_cuGraphNodeGetType(nodes[i], &t));
		if (r || t != CU_GRAPH_NODE_TYPE_HOST)
			continue;
		r = cu_err(p_cuGraphHostNodeGetParams(nodes[i], &hp));
		if (!r && hp.fn == fn) {
			if (*n < max)
				args[*n] = hp.userData;
			(*n)++;
		}
	}
	free(nodes);
	return r;
}

/* The host's driver encodes the map (its format is NVIDIA's): the
 * arguments have been checked for their shape and the tensor's place in the
 * client's memory (core/exec_tensormap.c); the driver checks the rest. The
 * guest's device addresses are this GPU's, so the map is valid for its
 * kernels. */
static int cuda_tensor_map_encode(struct mdev *d, unsigned kind, const struct mearas_tmap_args *a, uint8_t *out)
{
	CUtensorMap map;
	cuuint64_t dims[MEARAS_TMAP_MAX_RANK], strides[MEARAS_TMAP_MAX_RANK - 1];
	cuuint32_t box[MEARAS_TMAP_MAX_RANK], estrides[MEARAS_TMAP_MAX_RANK];
	int lower[3], upper[3];
	void *addr = (void *)(uintptr_t)a->addr;
	CUresult r;

	(void)d;
	for (unsigned i = 0; i < MEARAS_TMAP_MAX_RANK; i++) {
		dims[i] = a->dims[i];
		box[i] = a->box[i];
		estrides[i] = a->estrides[i];
		if (i + 1 < MEARAS_TMAP_MAX_RANK)
			strides[i] = a->strides[i];
	}
	for (unsigned i = 0; i < 3; i++) {
		lower[i] = a->lower[i];
		upper[i] = a->upper[i];
	}
	memset(&map, 0, sizeof(map));
	switch (kind) {
	case MEARAS_TMAP_TILED:
		if (!p_cuTensorMapEncodeTiled)
			return cudaErrorNotSupported;
		r = p_cuTensorMapEncodeTiled(&map, (CUtensorMapDataType)a->dtype, a->rank, addr, dims, strides, box,
					     estrides, (CUtensorMapInterleave)a->interleave,
					     (CUtensorMapSwizzle)a->swizzle, (CUtensorMapL2promotion)a->l2promo,
					     (CUtensorMapFloatOOBfill)a->oobfill);
		break;
	case MEARAS_TMAP_IM2COL:
		if (!p_cuTensorMapEncodeIm2col)
			return cudaErrorNotSupported;
		r = p_cuTensorMapEncodeIm2col(&map, (CUtensorMapDataType)a->dtype, a->rank, addr, dims, strides, lower,
					      upper, a->channels, a->pixels, estrides,
					      (CUtensorMapInterleave)a->interleave, (CUtensorMapSwizzle)a->swizzle,
					      (CUtensorMapL2promotion)a->l2promo, (CUtensorMapFloatOOBfill)a->oobfill);
		break;
	case MEARAS_TMAP_IM2COL_WIDE:
		if (!p_cuTensorMapEncodeIm2colWide)
			return cudaErrorNotSupported;
		r = p_cuTensorMapEncodeIm2colWide(&map, (CUtensorMapDataType)a->dtype, a->rank, addr, dims, strides,
						  lower[0], upper[0], a->channels, a->pixels, estrides,
						  (CUtensorMapInterleave)a->interleave,
						  (CUtensorMapIm2ColWideMode)a->wide_mode, (CUtensorMapSwizzle)a->swizzle,
						  (CUtensorMapL2promotion)a->l2promo, (CUtensorMapFloatOOBfill)a->oobfill);
		break;
	default:
		return cudaErrorInvalidValue;
	}
	if (r)
		return cu_err(r);
	_Static_assert(sizeof(map) == MEARAS_TMAP_BYTES, "a CUtensorMap is 128 bytes");
	memcpy(out, &map, sizeof(map));
	return 0;
}

/* ---- ops with a generated handler (include/mearas/ops.spec `dev` lines);
 * the poller's thread has the vGPU's context current (cuda_bind_thread) ---- */

int cuda_set_limit(struct mdev *d, uint32_t limit, uint64_t value)
{
	(void)d;
	return cu_err(p_cuCtxSetLimit((CUlimit)limit, (size_t)value));
}

int cuda_get_limit(struct mdev *d, uint32_t limit, uint64_t *value)
{
	size_t v = 0;
	int r;

	(void)d;
	r = cu_err(p_cuCtxGetLimit(&v, (CUlimit)limit));
	*value = v;
	return r;
}

int cuda_occupancy_smem(struct mdev *d, void *func, uint32_t blocks, uint32_t block, uint64_t *smem)
{
	struct cuda_func *f = func;
	size_t v = 0;
	int r;

	(void)d;
	if (blocks > INT_MAX || block > INT_MAX)
		return cudaErrorInvalidValue;
	r = cu_err(p_cuOccupancyAvailableDynamicSMemPerBlock(&v, f->f, (int)blocks, (int)block));
	*smem = v;
	return r;
}

int cuda_profiler_start(struct mdev *d)
{
	(void)d;
	return cu_err(p_cuProfilerStart());
}

int cuda_profiler_stop(struct mdev *d)
{
	(void)d;
	return cu_err(p_cuProfilerStop());
}

MEARAS_MDEV_OP_TABLE(cuda);

/* ---- CUDA arrays, texture and surface objects (core/exec_array.c checked
 * the shapes, boxes and memory; the driver checks the rest) ---- */

static int cuda_array_create(struct mdev *d, const struct mdev_array *a, void **array)
{
	CUDA_ARRAY3D_DESCRIPTOR desc = { .Width = a->width, .Height = a->height, .Depth = a->depth,
					 .Format = (CUarray_format)a->format, .NumChannels = a->channels,
					 .Flags = a->flags };
	CUarray arr = NULL;
	int r;

	(void)d;
	r = cu_err(p_cuArray3DCreate(&arr, &desc));
	if (!r)
		*array = arr;
	return r;
}

/* An array made with deferred mapping holds no memory; the driver says what
 * it would take (its tiled layout pads small and narrow arrays). */
static int cuda_array_footprint(struct mdev *d, const struct mdev_array *a, uint64_t *bytes)
{
	CUDA_ARRAY3D_DESCRIPTOR desc = { .Width = a->width, .Height = a->height, .Depth = a->depth,
					 .Format = (CUarray_format)a->format, .NumChannels = a->channels,
					 .Flags = a->flags | CUDA_ARRAY3D_DEFERRED_MAPPING };
	CUDA_ARRAY_MEMORY_REQUIREMENTS req = { 0 };
	CUarray arr = NULL;
	int r;

	r = cu_err(p_cuArray3DCreate(&arr, &desc));
	if (r)
		return r;
	r = cu_err(p_cuArrayGetMemoryRequirements(&req, arr, d->dev));
	p_cuArrayDestroy(arr);
	if (!r)
		*bytes = req.size;
	return r;
}

static void cuda_array_destroy(struct mdev *d, void *array)
{
	(void)d;
	p_cuArrayDestroy((CUarray)array);
}

static int cuda_array_copy(struct mdev *d, void *stream, void *array, const struct mdev_array_copy *c)
{
	CUDA_MEMCPY3D m;
	bool to_array = c->dir == MEARAS_ARRAY_HTOA || c->dir == MEARAS_ARRAY_DTOA;
	bool host = c->dir == MEARAS_ARRAY_HTOA || c->dir == MEARAS_ARRAY_ATOH;
	CUmemorytype lin = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;

	(void)d;
	memset(&m, 0, sizeof(m));
	if (to_array) {
		m.srcMemoryType = lin;
		m.srcHost = (const void *)(uintptr_t)c->mem;
		m.srcDevice = (CUdeviceptr)c->mem;
		m.srcPitch = c->pitch;
		m.srcHeight = c->height;
		m.dstMemoryType = CU_MEMORYTYPE_ARRAY;
		m.dstArray = (CUarray)array;
		m.dstXInBytes = c->x;
		m.dstY = c->y;
		m.dstZ = c->z;
	} else {
		m.srcMemoryType = CU_MEMORYTYPE_ARRAY;
		m.srcArray = (CUarray)array;
		m.srcXInBytes = c->x;
		m.srcY = c->y;
		m.srcZ = c->z;
		m.dstMemoryType = lin;
		m.dstHost = (void *)(uintptr_t)c->mem;
		m.dstDevice = (CUdeviceptr)c->mem;
		m.dstPitch = c->pitch;
		m.dstHeight = c->height;
	}
	m.WidthInBytes = c->width;
	m.Height = c->height;
	m.Depth = 1;
	return cu_err(p_cuMemcpy3DAsync(&m, (CUstream)stream));
}

static int cuda_tex_create(struct mdev *d, const struct mearas_tex_args *t, void *array, uint64_t *value)
{
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
	CUDA_RESOURCE_VIEW_DESC view;
	CUtexObject obj = 0;
	int r;

	(void)d;
	mearas_tex_cu_resource(t, (CUarray)array, &res);
	MEARAS_TEX_DESC_OUT(&tex, t);
	tex.flags = t->flags;
	MEARAS_TEX_VIEW_OUT(&view, t);
	r = cu_err(p_cuTexObjectCreate(&obj, &res, &tex, t->has_view ? &view : NULL));
	if (!r)
		*value = obj;
	return r;
}

static void cuda_tex_destroy(struct mdev *d, uint64_t value)
{
	(void)d;
	p_cuTexObjectDestroy((CUtexObject)value);
}

static int cuda_surf_create(struct mdev *d, void *array, uint64_t *value)
{
	CUDA_RESOURCE_DESC res;
	CUsurfObject obj = 0;
	int r;

	(void)d;
	memset(&res, 0, sizeof(res));
	res.resType = CU_RESOURCE_TYPE_ARRAY;
	res.res.array.hArray = (CUarray)array;
	r = cu_err(p_cuSurfObjectCreate(&obj, &res));
	if (!r)
		*value = obj;
	return r;
}

static void cuda_surf_destroy(struct mdev *d, uint64_t value)
{
	(void)d;
	p_cuSurfObjectDestroy((CUsurfObject)value);
}

const struct mdev_ops mdev_cuda_ops = {
	.name = "cuda",
	.op = &mdev_cuda_op_table,
	.startup_note = "local GPUs through the CUDA driver API",
	.init = cuda_init,
	.count = cuda_count,
	.open = cuda_open,
	.close = cuda_close,
	.bind_thread = cuda_bind_thread,
	.host_register = cuda_host_register,
	.host_unregister = cuda_host_unregister,
	.chunk_map = cuda_chunk_map,
	.chunk_unmap = cuda_chunk_unmap,
	.phys_create = cuda_phys_create,
	.phys_release = cuda_phys_release,
	.phys_map = cuda_phys_map,
	.phys_unmap = cuda_phys_unmap,
	.mem_info = cuda_mem_info,
	.copy = cuda_copy,
	.copy_2d = cuda_copy_2d,
	.memset = cuda_memset,
	.stream_memop = cuda_stream_memop,
	.memset_2d = cuda_memset_2d,
	.module_load = cuda_module_load,
	.module_unload = cuda_module_unload,
	.link = cuda_link,
	.func_get = cuda_func_get,
	.func_attrs = cuda_func_attrs,
	.func_set_attr = cuda_func_set_attr,
	.occupancy = cuda_occupancy,
	.occupancy_clusters = cuda_occupancy_clusters,
	.global_get = cuda_global_get,
	.launch = cuda_launch,
	.func_name = cuda_func_name,
	.stream_default = cuda_stream_default,
	.stream_create = cuda_stream_create,
	.stream_destroy = cuda_stream_destroy,
	.stream_wait_event = cuda_stream_wait_event,
	.event_create = cuda_event_create,
	.event_destroy = cuda_event_destroy,
	.event_record = cuda_event_record,
	.event_record_external = cuda_event_record_external,
	.event_query = cuda_event_query,
	.flags_create = cuda_flags_create,
	.flag_write = cuda_flag_write,
	.flag_read = cuda_flag_read,
	.status = cuda_status,
	.event_elapsed = cuda_event_elapsed,
	.capture_begin = cuda_capture_begin,
	.capture_end = cuda_capture_end,
	.capture_status = cuda_capture_status,
	.graph_instantiate = cuda_graph_instantiate,
	.graph_launch = cuda_graph_launch,
	.graph_destroy = cuda_graph_destroy,
	.graph_exec_destroy = cuda_graph_exec_destroy,
	.host_func = cuda_host_func,
	.graph_host_funcs = cuda_graph_host_funcs,
	.func_put = cuda_func_put,
	.flush_output = cuda_flush_output,
	.graph_node_count = cuda_graph_node_count,
	.graph_clone = cuda_graph_clone,
	.tensor_map_encode = cuda_tensor_map_encode,
	.array_create = cuda_array_create,
	.array_footprint = cuda_array_footprint,
	.array_destroy = cuda_array_destroy,
	.array_copy = cuda_array_copy,
	.tex_create = cuda_tex_create,
	.tex_destroy = cuda_tex_destroy,
	.surf_create = cuda_surf_create,
	.surf_destroy = cuda_surf_destroy,
};
