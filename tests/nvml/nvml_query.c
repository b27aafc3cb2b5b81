// SPDX-License-Identifier: MIT
/*
 * mearas's libnvidia-ml.so.1 against mearasd --device=sim: what NVML says
 * about the vGPUs, checked against what mearas's libcuda.so.1 says about
 * them. One behaviour per case; run-tests.sh runs each case in a process of
 * its own (NVML's state and the core's connection are per process), with
 * MEARAS_SOCKET naming a mearasd with 2 vGPUs and --quota-mb=QUOTA. The
 * fixture calls nvmlInit before a case and nvmlShutdown after it, but for the
 * bare_* cases, which test what comes before or instead of it:
 * gpu_lost kills mearasd's workers (--daemon-pid=PID), so no other client
 * of that mearasd may run beside it.
 *   nvml_query [--quota-mb=QUOTA] [--daemon-pid=PID] [CASE...]
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cuda.h>
#include <nvml.h>

#include "check.h"

#define NVML_OK(call) REQUIRE_RC(call, NVML_SUCCESS)
#define CU_OK(call) REQUIRE_RC(call, CUDA_SUCCESS)

#define NVGPUS 2u

static uint64_t quota_bytes(void)
{
	return check_opt_u64("quota-mb", 512) << 20;
}

static nvmlDevice_t handle(unsigned i)
{
	nvmlDevice_t d = NULL;

	NVML_OK(nvmlDeviceGetHandleByIndex_v2(i, &d));
	return d;
}

/* ---- stderr of a stretch of calls, to check what was logged ---- */

static int saved_stderr = -1;
static char log_path[64];

static void capture_begin(void)
{
	int fd;

	snprintf(log_path, sizeof(log_path), "/tmp/nvml_query.%d.log", (int)getpid());
	fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	REQUIRE(fd >= 0);
	fflush(stderr);
	saved_stderr = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* the captured text (static buffer), stderr restored and echoed */
static const char *capture_end(void)
{
	static char buf[8192];
	FILE *f;
	size_t n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	f = fopen(log_path, "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	unlink(log_path);
	fputs(buf, stderr);
	return buf;
}

static unsigned occurrences(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* ---- before nvmlInit, after nvmlShutdown, without mearasd ---- */

static void test_uninitialized(void)
{
	unsigned n = 99;
	nvmlDevice_t d;
	char s[96];

	CHECK_RC(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
	CHECK_RC(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_UNINITIALIZED);
	CHECK_RC(nvmlSystemGetDriverVersion(s, sizeof(s)), NVML_ERROR_UNINITIALIZED);
	CHECK_EQ(n, 99);
}

static void test_shutdown_uninitialized(void)
{
	CHECK_RC(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

/* documented to need no nvmlInit */
static void test_versions_before_init(void)
{
	char s[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
	int v = 0;

	NVML_OK(nvmlSystemGetCudaDriverVersion_v2(&v));
	CHECK_EQ(v, 13000);
	NVML_OK(nvmlSystemGetNVMLVersion(s, sizeof(s)));
	CHECK(strlen(s) > 0);
}

static void test_after_shutdown(void)
{
	unsigned n;
	nvmlDevice_t d;
	char s[96];

	NVML_OK(nvmlInit_v2());
	d = handle(0);
	NVML_OK(nvmlShutdown());
	CHECK_RC(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
	CHECK_RC(nvmlDeviceGetName(d, s, sizeof(s)), NVML_ERROR_UNINITIALIZED);
	CHECK_RC(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

/* each successful init needs its shutdown */
static void test_init_counted(void)
{
	unsigned n;

	NVML_OK(nvmlInit_v2());
	NVML_OK(nvmlInitWithFlags(0));
	NVML_OK(nvmlShutdown());
	NVML_OK(nvmlDeviceGetCount_v2(&n));
	NVML_OK(nvmlShutdown());
	CHECK_RC(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
}

static void test_no_mearasd(void)
{
	const char *log;
	unsigned n;
	nvmlReturn_t r;

	setenv("MEARAS_SOCKET", "/nonexistent/mearas-nvml-test.sock", 1);
	capture_begin();
	r = nvmlInit_v2();
	log = capture_end();
	CHECK_RC(r, NVML_ERROR_DRIVER_NOT_LOADED);
	CHECK_MSG(strstr(log, "mearasd could not be reached"), "no log line saying so: '%s'", log);
	CHECK_RC(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
}

/* NVML_INIT_FLAG_NO_GPUS: init succeeds without mearasd, with no devices */
static void test_no_mearasd_no_gpus_flag(void)
{
	unsigned n = 99;
	nvmlDevice_t d;

	setenv("MEARAS_SOCKET", "/nonexistent/mearas-nvml-test.sock", 1);
	NVML_OK(nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS));
	NVML_OK(nvmlDeviceGetCount_v2(&n));
	CHECK_EQ(n, 0);
	CHECK_RC(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_INVALID_ARGUMENT);
	NVML_OK(nvmlShutdown());
}

/* ---- the vGPUs (with nvmlInit, against mearasd) ---- */

/* nvmlInit before the case, nvmlShutdown after it, but for bare_* cases */
static bool bare_case(void)
{
	return !strncmp(check_state.current, "bare_", 5);
}

static void setup(void)
{
	if (!bare_case())
		REQUIRE_RC(nvmlInit_v2(), NVML_SUCCESS);
}

static void test_count(void)
{
	unsigned n = 0;
	int cn = 0;

	NVML_OK(nvmlDeviceGetCount_v2(&n));
	CHECK_EQ(n, NVGPUS);
	CU_OK(cuInit(0));
	CU_OK(cuDeviceGetCount(&cn));
	CHECK_EQ(n, cn);
}

static void test_names(void)
{
	char nv[NVML_DEVICE_NAME_V2_BUFFER_SIZE], cu[256];

	CU_OK(cuInit(0));
	for (unsigned i = 0; i < NVGPUS; i++) {
		NVML_OK(nvmlDeviceGetName(handle(i), nv, sizeof(nv)));
		CU_OK(cuDeviceGetName(cu, sizeof(cu), (CUdevice)i));
		CHECK_STR_EQ(nv, cu);
	}
}

static void test_name_too_small(void)
{
	char s[4] = "xyz";

	CHECK_RC(nvmlDeviceGetName(handle(0), s, sizeof(s)), NVML_ERROR_INSUFFICIENT_SIZE);
	CHECK_RC(nvmlDeviceGetName(handle(0), NULL, 96), NVML_ERROR_INVALID_ARGUMENT);
}

/* "GPU-" and the 16 bytes of cuDeviceGetUuid as 8-4-4-4-12 hex digits */
static void test_uuids(void)
{
	char nv[NVML_DEVICE_UUID_V2_BUFFER_SIZE], want[64];
	CUuuid u;

	CU_OK(cuInit(0));
	for (unsigned i = 0; i < NVGPUS; i++) {
		const unsigned char *b = (const unsigned char *)u.bytes;

		NVML_OK(nvmlDeviceGetUUID(handle(i), nv, sizeof(nv)));
		CU_OK(cuDeviceGetUuid(&u, (CUdevice)i));
		snprintf(want, sizeof(want),
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
			 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
		CHECK_STR_EQ(nv, want);
	}
	/* the two vGPUs of the test are different sim devices */
	{
		char other[NVML_DEVICE_UUID_V2_BUFFER_SIZE];

		NVML_OK(nvmlDeviceGetUUID(handle(0), nv, sizeof(nv)));
		NVML_OK(nvmlDeviceGetUUID(handle(1), other, sizeof(other)));
		CHECK(strcmp(nv, other) != 0);
	}
}

static void test_handle_by_uuid(void)
{
	char s[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	nvmlDevice_t d = NULL;

	for (unsigned i = 0; i < NVGPUS; i++) {
		NVML_OK(nvmlDeviceGetUUID(handle(i), s, sizeof(s)));
		NVML_OK(nvmlDeviceGetHandleByUUID(s, &d));
		CHECK(d == handle(i));
	}
	CHECK_RC(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &d),
		 NVML_ERROR_NOT_FOUND);
	CHECK_RC(nvmlDeviceGetHandleByUUID(NULL, &d), NVML_ERROR_INVALID_ARGUMENT);
}

static void test_index_and_minor(void)
{
	for (unsigned i = 0; i < NVGPUS; i++) {
		unsigned idx = 99, minor = 99;

		NVML_OK(nvmlDeviceGetIndex(handle(i), &idx));
		NVML_OK(nvmlDeviceGetMinorNumber(handle(i), &minor));
		CHECK_EQ(idx, i);
		CHECK_EQ(minor, i);
	}
}

static void test_handle_out_of_range(void)
{
	nvmlDevice_t d = NULL;

	CHECK_RC(nvmlDeviceGetHandleByIndex_v2(NVGPUS, &d), NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceGetHandleByIndex_v2(~0u, &d), NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceGetHandleByIndex_v2(0, NULL), NVML_ERROR_INVALID_ARGUMENT);
	CHECK(d == NULL);
}

/* a handle that is no handle of ours, or NULL */
static void test_bad_handle(void)
{
	char s[96];
	int x;
	nvmlDevice_t bogus = (nvmlDevice_t)(void *)&x;
	nvmlMemory_t m;

	CHECK_RC(nvmlDeviceGetName(bogus, s, sizeof(s)), NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceGetName(NULL, s, sizeof(s)), NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceGetMemoryInfo(bogus, &m), NVML_ERROR_INVALID_ARGUMENT);
	/* where the handle of a third vGPU would be: this process has two */
	bogus = (nvmlDevice_t)(void *)((char *)handle(1) + ((char *)handle(1) - (char *)handle(0)));
	CHECK_RC(nvmlDeviceGetName(bogus, s, sizeof(s)), NVML_ERROR_INVALID_ARGUMENT);
}

static void test_memory_is_quota(void)
{
	nvmlMemory_t m;
	size_t cu_free = 0, cu_total = 0;
	CUcontext ctx;

	CU_OK(cuInit(0));
	for (unsigned i = 0; i < NVGPUS; i++) {
		NVML_OK(nvmlDeviceGetMemoryInfo(handle(i), &m));
		CHECK_EQ(m.total, quota_bytes());
		CHECK(m.free <= m.total);
		CHECK_EQ(m.free + m.used, m.total);
	}
	/* the same as cuMemGetInfo on that vGPU */
	CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CU_OK(cuCtxSetCurrent(ctx));
	CU_OK(cuMemGetInfo(&cu_free, &cu_total));
	NVML_OK(nvmlDeviceGetMemoryInfo(handle(0), &m));
	CHECK_EQ(m.total, cu_total);
	CHECK_EQ(m.free, cu_free);
	CU_OK(cuDevicePrimaryCtxRelease(0));
}

/* free and used follow this process's allocations on the vGPU */
static void test_memory_follows_allocations(void)
{
	nvmlMemory_t before, during, after, other;
	CUcontext ctx;
	CUdeviceptr p;
	const size_t size = 64ull << 20;

	CU_OK(cuInit(0));
	CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CU_OK(cuCtxSetCurrent(ctx));
	NVML_OK(nvmlDeviceGetMemoryInfo(handle(0), &before));
	CU_OK(cuMemAlloc(&p, size));
	NVML_OK(nvmlDeviceGetMemoryInfo(handle(0), &during));
	NVML_OK(nvmlDeviceGetMemoryInfo(handle(1), &other));
	CU_OK(cuMemFree(p));
	NVML_OK(nvmlDeviceGetMemoryInfo(handle(0), &after));
	CHECK(during.used >= before.used + size);
	CHECK_EQ(during.free + during.used, during.total);
	CHECK_EQ(other.used, 0);
	CHECK_EQ(after.used, before.used);
	CU_OK(cuDevicePrimaryCtxRelease(0));
}

static void test_memory_v2(void)
{
	nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };

	NVML_OK(nvmlDeviceGetMemoryInfo_v2(handle(1), &m));
	CHECK_EQ(m.total, quota_bytes());
	CHECK_EQ(m.reserved, 0);
	CHECK_EQ(m.free + m.used, m.total);
	m.version = 1;
	CHECK_RC(nvmlDeviceGetMemoryInfo_v2(handle(1), &m), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	CHECK_RC(nvmlDeviceGetMemoryInfo_v2(handle(1), NULL), NVML_ERROR_INVALID_ARGUMENT);
}

static void test_compute_capability(void)
{
	CU_OK(cuInit(0));
	for (unsigned i = 0; i < NVGPUS; i++) {
		int major = -1, minor = -1, cmaj = -2, cmin = -2;

		NVML_OK(nvmlDeviceGetCudaComputeCapability(handle(i), &major, &minor));
		CU_OK(cuDeviceGetAttribute(&cmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, (CUdevice)i));
		CU_OK(cuDeviceGetAttribute(&cmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, (CUdevice)i));
		CHECK_EQ(major, cmaj);
		CHECK_EQ(minor, cmin);
	}
}

/* the bus id is cuDeviceGetPCIBusId's (NVML writes it in capitals) */
static void test_pci_info(void)
{
	CU_OK(cuInit(0));
	for (unsigned i = 0; i < NVGPUS; i++) {
		nvmlPciInfo_t pci;
		char cu[64], legacy[32];
		int bus = -1, dom = -1, dev = -1, pid = -1;

		NVML_OK(nvmlDeviceGetPciInfo_v3(handle(i), &pci));
		CU_OK(cuDeviceGetPCIBusId(cu, sizeof(cu), (CUdevice)i));
		CU_OK(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, (CUdevice)i));
		CU_OK(cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, (CUdevice)i));
		CU_OK(cuDeviceGetAttribute(&dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, (CUdevice)i));
		CU_OK(cuDeviceGetAttribute(&pid, CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, (CUdevice)i));
		CHECK_EQ(pci.bus, bus);
		CHECK_EQ(pci.domain, dom);
		CHECK_EQ(pci.device, dev);
		CHECK_EQ(pci.pciDeviceId, (unsigned)pid);
		CHECK_MSG(!strcasecmp(pci.busId, cu), "NVML busId '%s', CUDA '%s'", pci.busId, cu);
		snprintf(legacy, sizeof(legacy), "%04X:%02X:%02X.0", dom, bus, dev);
		CHECK_STR_EQ(pci.busIdLegacy, legacy);
	}
	CHECK_RC(nvmlDeviceGetPciInfo_v3(handle(0), NULL), NVML_ERROR_INVALID_ARGUMENT);
}

static void test_handle_by_pci_bus_id(void)
{
	nvmlPciInfo_t pci;
	nvmlDevice_t d = NULL;
	char s[64];

	for (unsigned i = 0; i < NVGPUS; i++) {
		NVML_OK(nvmlDeviceGetPciInfo_v3(handle(i), &pci));
		NVML_OK(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &d));
		CHECK(d == handle(i));
		/* bus:device.function, domain 0 */
		snprintf(s, sizeof(s), "%x:%x.0", pci.bus, pci.device);
		NVML_OK(nvmlDeviceGetHandleByPciBusId_v2(s, &d));
		CHECK(d == handle(i));
	}
	CHECK_RC(nvmlDeviceGetHandleByPciBusId_v2("0000:ee:1f.0", &d), NVML_ERROR_NOT_FOUND);
	CHECK_RC(nvmlDeviceGetHandleByPciBusId_v2("not a bus id", &d), NVML_ERROR_INVALID_ARGUMENT);
}

static void test_cuda_driver_version(void)
{
	int nv = 0, nv1 = 0, cu = 0;

	NVML_OK(nvmlSystemGetCudaDriverVersion_v2(&nv));
	NVML_OK(nvmlSystemGetCudaDriverVersion(&nv1));
	CU_OK(cuDriverGetVersion(&cu));
	CHECK_EQ(nv, 13000);
	CHECK_EQ(nv1, cu);
	CHECK_EQ(nv, cu);
}

static void test_driver_version(void)
{
	char s[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE], n[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
	char tiny[4];

	NVML_OK(nvmlSystemGetDriverVersion(s, sizeof(s)));
	CHECK_STR_EQ(s, "mearas-13.0");
	NVML_OK(nvmlSystemGetNVMLVersion(n, sizeof(n)));
	CHECK_STR_EQ(n, "13.mearas-13.0");
	CHECK_RC(nvmlSystemGetDriverVersion(tiny, sizeof(tiny)), NVML_ERROR_INSUFFICIENT_SIZE);
}

/* vGPUs do not reach each other's memory: every pair and capability is
 * NVML_P2P_STATUS_NOT_SUPPORTED, with NVML_SUCCESS (NCCL asks all pairs) */
static void test_p2p_status_not_supported(void)
{
	static const nvmlGpuP2PCapsIndex_t caps[] = { NVML_P2P_CAPS_INDEX_READ, NVML_P2P_CAPS_INDEX_WRITE,
						      NVML_P2P_CAPS_INDEX_NVLINK, NVML_P2P_CAPS_INDEX_ATOMICS,
						      NVML_P2P_CAPS_INDEX_PCI };

	for (unsigned a = 0; a < NVGPUS; a++)
		for (unsigned b = 0; b < NVGPUS; b++)
			for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
				nvmlGpuP2PStatus_t st = NVML_P2P_STATUS_OK;

				NVML_OK(nvmlDeviceGetP2PStatus(handle(a), handle(b), caps[c], &st));
				CHECK_EQ(st, NVML_P2P_STATUS_NOT_SUPPORTED);
			}
}

/* no vGPU is on a fabric: success with the state NOT_SUPPORTED (v3 and
 * v2 structures, and the unversioned call), a wrong version refused */
static void test_fabric_not_supported(void)
{
	for (unsigned a = 0; a < NVGPUS; a++) {
		nvmlGpuFabricInfoV_t v = { .version = nvmlGpuFabricInfo_v3, .state = 99, .cliqueId = 7 };
		nvmlGpuFabricInfo_t old = { .state = 99 };

		NVML_OK(nvmlDeviceGetGpuFabricInfoV(handle(a), &v));
		CHECK_EQ(v.state, NVML_GPU_FABRIC_STATE_NOT_SUPPORTED);
		CHECK_EQ(v.cliqueId, 0);
		v.version = NVML_STRUCT_VERSION(GpuFabricInfo, 2);
		v.state = 99;
		NVML_OK(nvmlDeviceGetGpuFabricInfoV(handle(a), &v));
		CHECK_EQ(v.state, NVML_GPU_FABRIC_STATE_NOT_SUPPORTED);
		v.version = 12345;
		CHECK_RC(nvmlDeviceGetGpuFabricInfoV(handle(a), &v), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
		NVML_OK(nvmlDeviceGetGpuFabricInfo(handle(a), &old));
		CHECK_EQ(old.state, NVML_GPU_FABRIC_STATE_NOT_SUPPORTED);
	}
}

/* the same answer as the driver API's cuDeviceCanAccessPeer */
static void test_p2p_status_agrees_with_cuda(void)
{
	CU_OK(cuInit(0));
	for (unsigned a = 0; a < NVGPUS; a++)
		for (unsigned b = 0; b < NVGPUS; b++) {
			nvmlGpuP2PStatus_t st;
			int can = -1;

			NVML_OK(nvmlDeviceGetP2PStatus(handle(a), handle(b), NVML_P2P_CAPS_INDEX_READ, &st));
			CU_OK(cuDeviceCanAccessPeer(&can, (CUdevice)a, (CUdevice)b));
			CHECK_EQ(st == NVML_P2P_STATUS_OK, can == 1);
		}
}

static void test_p2p_status_bad_arguments(void)
{
	nvmlGpuP2PStatus_t st;
	int x;

	CHECK_RC(nvmlDeviceGetP2PStatus(handle(0), handle(1), NVML_P2P_CAPS_INDEX_UNKNOWN, &st),
		 NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceGetP2PStatus(handle(0), handle(1), NVML_P2P_CAPS_INDEX_READ, NULL),
		 NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceGetP2PStatus(handle(0), (nvmlDevice_t)(void *)&x, NVML_P2P_CAPS_INDEX_READ, &st),
		 NVML_ERROR_INVALID_ARGUMENT);
}

/* the figures mearasd publishes: the sim device models an H100 SXM's
 * PCIe 5.0 x16 link (host-backend/device/device_sim.c) */
static void test_pcie_link_figures(void)
{
	for (unsigned i = 0; i < NVGPUS; i++) {
		unsigned cg = 0, mg = 0, gg = 0, cw = 0, mw = 0;

		NVML_OK(nvmlDeviceGetCurrPcieLinkGeneration(handle(i), &cg));
		NVML_OK(nvmlDeviceGetMaxPcieLinkGeneration(handle(i), &mg));
		NVML_OK(nvmlDeviceGetGpuMaxPcieLinkGeneration(handle(i), &gg));
		NVML_OK(nvmlDeviceGetCurrPcieLinkWidth(handle(i), &cw));
		NVML_OK(nvmlDeviceGetMaxPcieLinkWidth(handle(i), &mw));
		CHECK_EQ(cg, 5);
		CHECK_EQ(mg, 5);
		CHECK_EQ(gg, 5);
		CHECK_EQ(cw, 16);
		CHECK_EQ(mw, 16);
	}
}

static void test_pcie_link_null(void)
{
	CHECK_RC(nvmlDeviceGetCurrPcieLinkGeneration(handle(0), NULL), NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceGetMaxPcieLinkWidth(handle(1), NULL), NVML_ERROR_INVALID_ARGUMENT);
}

/* nvmlDeviceGetFieldValues on dev for the n fields ids[] names (scope 0),
 * every other byte of f[] set to fill first; the call must succeed */
static void get_fields(nvmlDevice_t dev, nvmlFieldValue_t *f, const unsigned *ids, int n, int fill)
{
	memset(f, fill, (size_t)n * sizeof(*f));
	for (int i = 0; i < n; i++) {
		f[i].fieldId = ids[i];
		f[i].scopeId = 0;
	}
	NVML_OK(nvmlDeviceGetFieldValues(dev, n, f));
}

/* the link counts mearas knows (a vGPU has no NVLink, NVSwitch or C2C
 * link), each field with its own NVML_SUCCESS */
static void test_field_values_link_counts(void)
{
	static const unsigned ids[] = { NVML_FI_DEV_NVLINK_LINK_COUNT, NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT,
					NVML_FI_DEV_C2C_LINK_COUNT };
	nvmlFieldValue_t f[3];

	get_fields(handle(0), f, ids, 3, 0xff);
	for (int i = 0; i < 3; i++) {
		CHECK_RC(f[i].nvmlReturn, NVML_SUCCESS);
		CHECK_EQ(f[i].valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
		CHECK_EQ(f[i].value.uiVal, 0);
		CHECK(f[i].timestamp > 0);
	}
}

/* fields mearas does not know: NOT_SUPPORTED each, the call itself succeeds
 * and the known field among them is still answered */
static void test_field_values_unknown_each_not_supported(void)
{
	static const unsigned ids[] = { NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_NVLINK_GET_STATE,
					NVML_FI_DEV_NVLINK_LINK_COUNT, 99999 };
	nvmlFieldValue_t f[4];

	get_fields(handle(1), f, ids, 4, 0);
	CHECK_RC(f[0].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
	CHECK_RC(f[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
	CHECK_RC(f[2].nvmlReturn, NVML_SUCCESS);
	CHECK_RC(f[3].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
}

static void test_field_values_bad_arguments(void)
{
	nvmlFieldValue_t f = { .fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT };
	int x;

	CHECK_RC(nvmlDeviceGetFieldValues(handle(0), 1, NULL), NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceGetFieldValues(handle(0), -1, &f), NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceGetFieldValues((nvmlDevice_t)(void *)&x, 1, &f), NVML_ERROR_INVALID_ARGUMENT);
}

/* mearasd does not measure utilization: no made-up numbers */
static void test_utilization_not_supported(void)
{
	nvmlUtilization_t u;

	CHECK_RC(nvmlDeviceGetUtilizationRates(handle(0), &u), NVML_ERROR_NOT_SUPPORTED);
}

/* an entry point mearas does not implement: NOT_SUPPORTED, its name logged once */
static void test_unsupported_logged_once(void)
{
	unsigned t = 0;
	const char *log;
	nvmlReturn_t r1, r2;

	capture_begin();
	r1 = nvmlDeviceGetTemperature(handle(0), NVML_TEMPERATURE_GPU, &t);
	r2 = nvmlDeviceGetTemperature(handle(1), NVML_TEMPERATURE_GPU, &t);
	log = capture_end();
	CHECK_RC(r1, NVML_ERROR_NOT_SUPPORTED);
	CHECK_RC(r2, NVML_ERROR_NOT_SUPPORTED);
	CHECK_EQ(occurrences(log, "nvmlDeviceGetTemperature is not supported by mearas"), 1);
}

/* NVML's private table (nvml.h does not declare it), as nvidia-smi asks for it */
nvmlReturn_t nvmlInternalGetExportTable(const void **table, const void *id);
static const unsigned char SMI_TABLE_ID[16] = { 0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
						0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4 };

static const uintptr_t *smi_table(void)
{
	const void *t = NULL;

	NVML_OK(nvmlInternalGetExportTable(&t, SMI_TABLE_ID));
	REQUIRE(t != NULL);
	return t;
}

/* slot 81 looks a device up by index (nvidia-smi -L lists devices so) */
static void test_internal_table_device_by_index(void)
{
	const uintptr_t *t = smi_table();
	nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *, unsigned) =
		(nvmlReturn_t (*)(unsigned, nvmlDevice_t *, unsigned))t[81];
	nvmlDevice_t d = NULL;

	CHECK(t[0] >= 82 * sizeof(uintptr_t));
	NVML_OK(by_index(1, &d, 0x22));
	CHECK(d == handle(1));
	CHECK_RC(by_index(99, &d, 0x22), NVML_ERROR_INVALID_ARGUMENT);
}

/* other slots and other tables: NOT_SUPPORTED, the slot's number logged once */
static void test_internal_table_unserved(void)
{
	const uintptr_t *t = smi_table();
	nvmlReturn_t (*slot5)(void) = (nvmlReturn_t (*)(void))t[5];
	const void *other = NULL;
	unsigned char id[16];
	const char *log;
	nvmlReturn_t r1, r2;

	memcpy(id, SMI_TABLE_ID, sizeof(id));
	id[15] ^= 1;
	capture_begin();
	r1 = slot5();
	r2 = slot5();
	log = capture_end();
	CHECK_RC(r1, NVML_ERROR_NOT_SUPPORTED);
	CHECK_RC(r2, NVML_ERROR_NOT_SUPPORTED);
	CHECK_EQ(occurrences(log, "slot 5 is not served by mearas"), 1);
	CHECK_RC(nvmlInternalGetExportTable(&other, id), NVML_ERROR_NOT_SUPPORTED);
	CHECK_RC(nvmlInternalGetExportTable(NULL, SMI_TABLE_ID), NVML_ERROR_INVALID_ARGUMENT);
}

/* events: a vGPU has none; sets work, waits time out */
static void test_events_none(void)
{
	nvmlEventSet_t set = NULL;
	nvmlEventData_t data;
	unsigned long long types = 99;

	NVML_OK(nvmlEventSetCreate(&set));
	NVML_OK(nvmlDeviceGetSupportedEventTypes(handle(0), &types));
	CHECK_EQ(types, 0);
	NVML_OK(nvmlDeviceRegisterEvents(handle(0), 0, set));
	CHECK_RC(nvmlDeviceRegisterEvents(handle(0), nvmlEventTypeXidCriticalError, set), NVML_ERROR_NOT_SUPPORTED);
	CHECK_RC(nvmlEventSetWait_v2(set, &data, 20), NVML_ERROR_TIMEOUT);
	CHECK_RC(nvmlEventSetWait_v2(set, NULL, 0), NVML_ERROR_INVALID_ARGUMENT);
	CHECK_RC(nvmlDeviceRegisterEvents(handle(0), 0, NULL), NVML_ERROR_INVALID_ARGUMENT);
	NVML_OK(nvmlEventSetFree(set));
}

/* kills the processes whose parent is pid (mearasd's workers); how many */
static unsigned kill_children(long pid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	unsigned n = 0;

	while (d && (e = readdir(d))) {
		char path[300], buf[512], *p;
		long ppid;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = 0;
		fclose(f);
		/* pid (comm) state ppid ...: the name may hold spaces */
		p = strrchr(buf, ')');
		if (p && sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == pid && kill(atoi(e->d_name), SIGKILL) == 0)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* our worker in mearasd ends: the vGPUs are lost to this process */
static void test_gpu_lost(void)
{
	long daemon = (long)check_opt_u64("daemon-pid", 0);
	nvmlMemory_t m;
	char s[96];

	if (!daemon)
		CHECK_SKIP("needs --daemon-pid=PID of the mearasd serving MEARAS_SOCKET");
	NVML_OK(nvmlDeviceGetMemoryInfo(handle(0), &m));
	REQUIRE(kill_children(daemon) >= 1);
	CHECK_RC(nvmlDeviceGetMemoryInfo(handle(0), &m), NVML_ERROR_GPU_IS_LOST);
	CHECK_RC(nvmlDeviceGetName(handle(1), s, sizeof(s)), NVML_ERROR_GPU_IS_LOST);
}

static void test_error_string(void)
{
	CHECK(nvmlErrorString(NVML_ERROR_UNINITIALIZED) != NULL);
	CHECK(strcmp(nvmlErrorString(NVML_SUCCESS), nvmlErrorString(NVML_ERROR_NOT_SUPPORTED)) != 0);
	CHECK(nvmlErrorString((nvmlReturn_t)12345) != NULL);
}

static void teardown(void)
{
	if (!bare_case())
		nvmlShutdown();
}

static const struct check_case cases[] = {
	/* bare_*: the fixture does not call nvmlInit */
	{ "bare_uninitialized", test_uninitialized },
	{ "bare_shutdown_uninitialized", test_shutdown_uninitialized },
	{ "bare_versions_before_init", test_versions_before_init },
	{ "bare_after_shutdown", test_after_shutdown },
	{ "bare_init_counted", test_init_counted },
	{ "bare_no_mearasd", test_no_mearasd },
	{ "bare_no_mearasd_no_gpus_flag", test_no_mearasd_no_gpus_flag },
	/* initialized */
	{ "count", test_count },
	{ "names", test_names },
	{ "name_too_small", test_name_too_small },
	{ "uuids", test_uuids },
	{ "handle_by_uuid", test_handle_by_uuid },
	{ "index_and_minor", test_index_and_minor },
	{ "handle_out_of_range", test_handle_out_of_range },
	{ "bad_handle", test_bad_handle },
	{ "memory_is_quota", test_memory_is_quota },
	{ "memory_follows_allocations", test_memory_follows_allocations },
	{ "memory_v2", test_memory_v2 },
	{ "compute_capability", test_compute_capability },
	{ "pci_info", test_pci_info },
	{ "handle_by_pci_bus_id", test_handle_by_pci_bus_id },
	{ "cuda_driver_version", test_cuda_driver_version },
	{ "driver_version", test_driver_version },
	{ "p2p_status_not_supported", test_p2p_status_not_supported },
	{ "fabric_not_supported", test_fabric_not_supported },
	{ "p2p_status_agrees_with_cuda", test_p2p_status_agrees_with_cuda },
	{ "p2p_status_bad_arguments", test_p2p_status_bad_arguments },
	{ "pcie_link_figures", test_pcie_link_figures },
	{ "pcie_link_null", test_pcie_link_null },
	{ "field_values_link_counts", test_field_values_link_counts },
	{ "field_values_unknown_each_not_supported", test_field_values_unknown_each_not_supported },
	{ "field_values_bad_arguments", test_field_values_bad_arguments },
	{ "utilization_not_supported", test_utilization_not_supported },
	{ "unsupported_logged_once", test_unsupported_logged_once },
	{ "internal_table_device_by_index", test_internal_table_device_by_index },
	{ "internal_table_unserved", test_internal_table_unserved },
	{ "events_none", test_events_none },
	{ "error_string", test_error_string },
	{ "gpu_lost", test_gpu_lost },
};

CHECK_MAIN_FIXTURE(cases, setup, teardown)
