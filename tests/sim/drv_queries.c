// The driver API's small queries and their refusals (C, against mearas's
// libcuda.so.1): what the context, stream, event, function, kernel, device
// and error-name calls answer, and the error each gives for a missing
// pointer, a handle that names nothing and a call before cuInit. One case a
// run, named by the argument:
//   uninit    before cuInit: CUDA_ERROR_NOT_INITIALIZED (the error names answer)
//   answers   the values of the queries on live objects
//   nullout   a NULL out pointer: CUDA_ERROR_INVALID_VALUE
//   handles   a handle that names nothing: the code each call gives for it
//   pointer_set  cuPointerSetAttribute: SYNC_MEMOPS on device memory taken
//             (and read back 1); other attributes, other memory and a NULL
//             value refused
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "drv_check.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			  ".visible .entry mearas_sim_add_u32(.param .u64 p, .param .u32 n, .param .u32 v)\n"
			  "{\n\tret;\n}\n";

/* not a CUDA object: zeroed memory, which no magic number matches */
static uint64_t junk[16];
#define JUNK(type) ((type)(void *)junk)

static void uninit(void)
{
	int n = 0;
	CUcontext c;
	CUmoduleLoadingMode mode;
	const char *s = NULL;
	float ms;

	EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
	EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuCtxGetCurrent(&c));
	EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuModuleGetLoadingMode(&mode));
	EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuEventQuery(JUNK(CUevent)));
	EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuStreamDestroy(JUNK(CUstream)));
	EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuGraphDestroy(JUNK(CUgraph)));
	EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuEventElapsedTime(&ms, JUNK(CUevent), JUNK(CUevent)));
	EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuMemFree(0));
	/* names and texts need no driver */
	CHECK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
	REQUIRE(s && !strcmp(s, "CUDA_ERROR_INVALID_VALUE"), "name %s", s ? s : "(null)");
	/* the text (cuda.h's description), not the name again */
	CHECK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
	REQUIRE(s && strlen(s) > 20 && !strstr(s, "CUDA_ERROR"), "text %s", s ? s : "(null)");
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetErrorName((CUresult)123456, &s));
	REQUIRE(!s, "an unknown code's name is %s, expected NULL", s);
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetErrorString((CUresult)123456, &s));
	REQUIRE(!s, "an unknown code's text is %s, expected NULL", s);
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetErrorName(CUDA_SUCCESS, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetErrorString(CUDA_SUCCESS, NULL));
	printf("uninit: ok\n");
}

struct objs {
	CUcontext ctx;
	CUstream s;
	CUevent a, b;
	CUmodule mod;
	CUfunction fn;
	CUlibrary lib;
	CUkernel kern;
};

static struct objs setup(void)
{
	struct objs o;

	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&o.ctx, 0));
	CHECK(cuCtxSetCurrent(o.ctx));
	CHECK(cuStreamCreateWithPriority(&o.s, CU_STREAM_NON_BLOCKING, -9));
	CHECK(cuEventCreate(&o.a, 0));
	CHECK(cuEventCreate(&o.b, 0));
	CHECK(cuModuleLoadData(&o.mod, ptx));
	CHECK(cuModuleGetFunction(&o.fn, o.mod, "mearas_sim_add_u32"));
	CHECK(cuLibraryLoadData(&o.lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&o.kern, o.lib, "mearas_sim_add_u32"));
	return o;
}

static void answers(void)
{
	struct objs o = setup();
	char name[256], bus[32], small[4];
	const char *str;
	CUdevice dev = -1, found = -1;
	unsigned int flags = 99, version = 0;
	unsigned long long id = 0, id2 = 0;
	int prio = 99, n = 0;
	CUcontext c = NULL;
	CUfunc_cache cache = CU_FUNC_CACHE_PREFER_L1;
	CUmodule m = NULL;
	CUlibrary l = NULL;
	CUfunctionLoadingState state = CU_FUNCTION_LOADING_STATE_UNLOADED;
	CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
	float ms = -1;

	CHECK(cuDeviceGetCount(&n));
	REQUIRE(n >= 1, "%d devices", n);
	CHECK(cuCtxGetCurrent(&c));
	REQUIRE(c == o.ctx, "the current context is not the primary one made current");
	CHECK(cuCtxGetDevice(&dev));
	REQUIRE(dev == 0, "context device %d", dev);
	dev = -1;
	CHECK(cuCtxGetDevice_v2(&dev, o.ctx));
	REQUIRE(dev == 0, "context device (v2) %d", dev);
	CHECK(cuCtxGetApiVersion(o.ctx, &version));
	REQUIRE(version == 3020, "API version %u", version);
	CHECK(cuCtxGetFlags(&flags));
	REQUIRE(flags == 0, "context flags %u", flags);
	CHECK(cuCtxGetId(NULL, &id));
	CHECK(cuCtxGetId(o.ctx, &id2));
	REQUIRE(id && id == id2, "context ids %llu and %llu", id, id2);
	CHECK(cuCtxGetCacheConfig(&cache));
	REQUIRE(cache == CU_FUNC_CACHE_PREFER_NONE, "cache config %d", (int)cache);
	CHECK(cuCtxSynchronize());
	CHECK(cuCtxSynchronize_v2(o.ctx));
	CHECK(cuModuleGetLoadingMode(&mode));
	REQUIRE(mode == CU_MODULE_LAZY_LOADING, "loading mode %d", (int)mode);

	CHECK(cuStreamGetFlags(o.s, &flags));
	REQUIRE(flags == CU_STREAM_NON_BLOCKING, "stream flags %u", flags);
	CHECK(cuStreamGetPriority(o.s, &prio));
	REQUIRE(prio == -5, "stream priority %d (asked -9: clamped to -5)", prio);
	CHECK(cuStreamGetFlags(NULL, &flags));
	REQUIRE(flags == CU_STREAM_DEFAULT, "default stream flags %u", flags);
	CHECK(cuStreamGetPriority(NULL, &prio));
	REQUIRE(prio == 0, "default stream priority %d", prio);
	dev = -1;
	CHECK(cuStreamGetDevice(o.s, &dev));
	REQUIRE(dev == 0, "stream device %d", dev);
	CHECK(cuStreamGetCtx(o.s, &c));
	REQUIRE(c == o.ctx, "the stream's context is not the primary one");
	CHECK(cuStreamGetId(o.s, &id));
	CHECK(cuStreamGetId(CU_STREAM_PER_THREAD, &id2));
	REQUIRE(id != id2, "stream ids %llu, per-thread %llu", id, id2);
	CHECK(cuStreamGetId(NULL, &id2));
	REQUIRE(id != id2, "stream ids %llu, legacy %llu", id, id2);
	CHECK(cuEventRecord(o.a, o.s));
	CHECK(cuEventRecordWithFlags(o.b, o.s, CU_EVENT_RECORD_EXTERNAL));
	CHECK(cuStreamWaitEvent(NULL, o.b, CU_EVENT_WAIT_EXTERNAL));
	CHECK(cuStreamSynchronize(o.s));
	CHECK(cuStreamQuery(o.s));
	CHECK(cuEventSynchronize(o.b));
	CHECK(cuEventQuery(o.b));
	CHECK(cuEventElapsedTime(&ms, o.a, o.b));
	REQUIRE(ms >= 0, "elapsed %f ms", (double)ms);

	CHECK(cuFuncGetName(&str, o.fn));
	REQUIRE(!strcmp(str, "mearas_sim_add_u32"), "function name %s", str);
	CHECK(cuFuncGetModule(&m, o.fn));
	REQUIRE(m == o.mod, "the function's module is not the one it came from");
	CHECK(cuFuncIsLoaded(&state, o.fn));
	REQUIRE(state == CU_FUNCTION_LOADING_STATE_LOADED, "loading state %d", (int)state);
	CHECK(cuKernelGetName(&str, o.kern));
	REQUIRE(!strcmp(str, "mearas_sim_add_u32"), "kernel name %s", str);
	CHECK(cuKernelGetLibrary(&l, o.kern));
	REQUIRE(l == o.lib, "the kernel's library is not the one it came from");

	CHECK(cuDeviceGetName(name, sizeof(name), 0));
	REQUIRE(name[0], "an empty device name");
	CHECK(cuDeviceGetName(small, sizeof(small), 0));
	REQUIRE(strlen(small) == 3 && !strncmp(small, name, 3), "name cut to 4 bytes: '%s' of '%s'", small, name);
	CHECK(cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
	/* domain:bus:device.function, in hex */
	REQUIRE(strlen(bus) == 16 && bus[8] == ':' && bus[11] == ':' && !strcmp(bus + 14, ".0"), "bus id %s", bus);
	CHECK(cuDeviceGetByPCIBusId(&found, bus));
	REQUIRE(found == 0, "bus id %s names device %d", bus, found);

	CHECK(cuMemFree(0));
	CHECK(cuMemFreeAsync(0, o.s));
	printf("answers: ok\n");
}

static void nullout(void)
{
	struct objs o = setup();
	char name[8];

	EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetCount(NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetName(NULL, 8, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetName(name, 0, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetPCIBusId(NULL, 8, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetPCIBusId(name, -1, 0));
	EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetName(name, 8, 999));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetByPCIBusId(NULL, "0000:00:00.0"));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxGetCurrent(NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxGetDevice(NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxGetDevice_v2(NULL, o.ctx));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxGetApiVersion(o.ctx, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxGetFlags(NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxGetId(o.ctx, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxGetCacheConfig(NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleGetLoadingMode(NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamGetFlags(o.s, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamGetPriority(o.s, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamGetId(o.s, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamGetCtx(o.s, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamGetDevice(o.s, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchHostFunc(o.s, NULL, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuEventElapsedTime(NULL, o.a, o.b));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetName(NULL, o.fn));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetModule(NULL, o.fn));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncIsLoaded(NULL, o.fn));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetName(NULL, o.kern));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetLibrary(NULL, o.kern));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuEventCreate(NULL, 0));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamWaitEvent(o.s, o.a, 2));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuEventRecordWithFlags(o.a, o.s, 2));
	printf("nullout: ok\n");
}

static void handles(void)
{
	struct objs o = setup();
	const char *str;
	unsigned long long id;
	CUlibrary l;
	float ms;

	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy(JUNK(CUstream)));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventDestroy(JUNK(CUevent)));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(JUNK(CUevent)));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventSynchronize(JUNK(CUevent)));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, o.a, JUNK(CUevent)));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(JUNK(CUevent), o.s));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuStreamWaitEvent(o.s, JUNK(CUevent), 0));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(JUNK(CUstream)));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuStreamGetId(JUNK(CUstream), &id));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphDestroy(JUNK(CUgraph)));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphExecDestroy(JUNK(CUgraphExec)));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(JUNK(CUmemoryPool)));
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent(JUNK(CUcontext)));
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetId(JUNK(CUcontext), &id));
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize_v2(JUNK(CUcontext)));
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(JUNK(CUcontext)));
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(o.ctx)); /* a primary context */
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuKernelGetName(&str, JUNK(CUkernel)));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuKernelGetLibrary(&l, JUNK(CUkernel)));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree((CUdeviceptr)0x1234));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync((CUdeviceptr)0x1234, o.s));
	printf("handles: ok\n");
}

static void pointer_set(void)
{
	struct objs o = setup();
	CUdeviceptr d = 0;
	unsigned one = 1, zero = 0, got = 0;
	static unsigned char host[64];

	(void)o;
	CHECK(cuMemAlloc(&d, 4096));
	CHECK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
	CHECK(cuPointerSetAttribute(&zero, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d + 100));
	CHECK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
	REQUIRE(got == 1, "SYNC_MEMOPS reads %u", got);
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_CONTEXT, d));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuPointerSetAttribute(NULL, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
	EXPECT(CUDA_ERROR_INVALID_VALUE,
	       cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)(uintptr_t)host));
	CHECK(cuMemFree(d));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
	printf("pointer_set: ok\n");
}

int main(int argc, char **argv)
{
	/* each mode sets up its own context (uninit: before cuInit) */
	static const struct drv_mode modes[] = {
		{ "uninit", uninit }, { "answers", answers }, { "nullout", nullout },
		{ "handles", handles }, { "pointer_set", pointer_set },
	};

	drv_mode_of(argc, argv, modes, DRV_NMODES(modes))->run();
	return 0;
}
