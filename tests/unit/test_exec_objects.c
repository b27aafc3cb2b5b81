// SPDX-License-Identifier: MIT
/* exec_record(): handles and device objects -- streams and events (ids out
 * of range, duplicates, unknown and destroyed handles), modules from a real
 * fat binary (--fatbin=PATH, built by nvcc from kernels.cu), images that
 * say they go on past the record's bytes or hold a pointer (refused before
 * the device's loader, which takes no length, sees them), function lookup,
 * launches with the wrong parameter size or configuration, functions dying
 * with their module, module globals, the device memory a module holds
 * charged to the quota, a device reset. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "fixture_cases.h"
#include "mearas/fatbin.h"
#include "mearas/log.h"


static int run1(unsigned op, uint32_t stream, uint64_t a0, uint64_t a1, uint64_t a2)
{
	return FIXTURE_OP(op, stream, a0, a1, a2);
}

static int run_named(unsigned op, uint64_t a0, uint64_t a1, const char *name, uint64_t val[2])
{
	struct mearas_sqe e = sqe_of(op);

	e.args.a[0] = a0;
	e.args.a[1] = a1;
	e.payload_len = (uint32_t)strlen(name) + 1;
	memcpy(e.inline_payload, name, e.payload_len);
	return fixture_run(&fx, 0, &e, val);
}

static int launch(uint64_t func, uint32_t grid, uint32_t block, uint32_t param_bytes, uint32_t stream)
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_LAUNCH);

	e.stream = stream;
	e.args.a[0] = func;
	e.args.a[1] = grid | (1ull << 32);
	e.args.a[2] = 1 | ((uint64_t)block << 32);
	e.args.a[3] = 1 | (1ull << 32);
	if (param_bytes <= MEARAS_SQE_INLINE) {
		e.payload_len = param_bytes;
	} else {
		e.flags = MEARAS_SQE_PAYLOAD_ARENA;
		e.payload_off = 0;
		e.payload_len = param_bytes;
	}
	return fixture_run(&fx, 0, &e, NULL);
}

static void test_streams_events(void)
{
	const int bad = cudaErrorInvalidValue, gone = cudaErrorInvalidResourceHandle;

	CHECK_EQ(run1(MEARAS_OP_STREAM_CREATE, 0, 0, 0, 0), bad);
	CHECK_EQ(run1(MEARAS_OP_STREAM_CREATE, 0, MEARAS_MAX_HANDLES, 0, 0), bad);
	CHECK_EQ(run1(MEARAS_OP_STREAM_CREATE, 0, UINT64_MAX, 0, 0), bad);
	CHECK_EQ(run1(MEARAS_OP_STREAM_CREATE, 0, 7, 2, 0), bad);      /* unknown flags */
	CHECK_EQ(run1(MEARAS_OP_STREAM_CREATE, 0, 7, 1, (uint64_t)-1), 0);
	CHECK_EQ(run1(MEARAS_OP_STREAM_CREATE, 0, 7, 0, 0), bad);      /* duplicate */
	CHECK_EQ(run1(MEARAS_OP_STREAM_SYNC, 7, 0, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_STREAM_QUERY, 7, 0, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_STREAM_SYNC, 8, 0, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_STREAM_SYNC, MEARAS_MAX_HANDLES + 5, 0, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_STREAM_SYNC, MEARAS_STREAM_PER_THREAD, 0, 0, 0), 0);

	CHECK_EQ(run1(MEARAS_OP_EVENT_CREATE, 0, 0, 0, 0), bad);
	CHECK_EQ(run1(MEARAS_OP_EVENT_CREATE, 0, MEARAS_MAX_HANDLES, 0, 0), bad);
	CHECK_EQ(run1(MEARAS_OP_EVENT_CREATE, 0, 3, 0x100, 0), bad);   /* unknown flags */
	CHECK_EQ(run1(MEARAS_OP_EVENT_CREATE, 0, 3, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_CREATE, 0, 3, 0, 0), bad);
	CHECK_EQ(run1(MEARAS_OP_EVENT_CREATE, 0, 4, cudaEventDisableTiming, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_RECORD, 7, 3, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_RECORD, 7, 4, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_RECORD, 7, 99, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_EVENT_RECORD, 99, 3, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_EVENT_ELAPSED, 0, 3, 3, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_ELAPSED, 0, 3, 4, 0), gone);     /* timing disabled */
	CHECK_EQ(run1(MEARAS_OP_EVENT_ELAPSED, 0, 3, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_STREAM_WAIT_EVENT, 7, 3, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_STREAM_WAIT_EVENT, 7, 12, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_EVENT_SYNC, 0, 3, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_QUERY, 0, 3, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_DESTROY, 0, 3, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_DESTROY, 0, 3, 0, 0), gone);     /* destroyed */
	CHECK_EQ(run1(MEARAS_OP_EVENT_SYNC, 0, 3, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_EVENT_QUERY, 0, 3, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_EVENT_DESTROY, 0, 0, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_EVENT_DESTROY, 0, UINT64_MAX, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_STREAM_DESTROY, 0, 7, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_STREAM_DESTROY, 0, 7, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_STREAM_SYNC, 7, 0, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_EVENT_RECORD, 7, 4, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_STREAM_CREATE, 0, 7, 0, 0), 0);        /* id free again */
	/* graphs: unknown handles */
	CHECK_EQ(run1(MEARAS_OP_GRAPH_LAUNCH, 0, 5, 0, 0), cudaErrorInvalidResourceHandle);
	CHECK_EQ(run1(MEARAS_OP_GRAPH_DESTROY, 0, 5, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_GRAPH_EXEC_DESTROY, 0, 5, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_CAPTURE_STATUS, 99, 0, 0, 0), gone);
	CHECK_EQ(run1(MEARAS_OP_CAPTURE_STATUS, 7, 0, 0, 0), 0);
}

/* The fat binary into the data area at 4096; its size. */
static size_t read_fatbin(void)
{
	const char *path = check_opt("fatbin");
	FILE *f;
	size_t n;

	REQUIRE_MSG(path, "no --fatbin=PATH given");
	f = fopen(path, "rb");
	REQUIRE_MSG(f, "%s: cannot open", path);
	n = fread(fx.w->data + 4096, 1, FIXTURE_DATA_SIZE - 4096, f);
	fclose(f);
	REQUIRE(n > 16 && n < (4u << 20));
	return n;
}

static void test_module_load(void)
{
	size_t n = read_fatbin();

	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 0, 4096, n), cudaErrorInvalidValue);      /* id 0 */
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, MEARAS_MAX_HANDLES, 4096, n), cudaErrorInvalidValue);
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, 15), cudaErrorInvalidValue);    /* too small */
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, FIXTURE_DATA_SIZE), cudaErrorInvalidValue);
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096 + 8, n - 8), cudaErrorInvalidKernelImage);
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, n / 2), cudaErrorInvalidKernelImage); /* cut */
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, n), 0);
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, n), cudaErrorInvalidValue);     /* duplicate */
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 2, 4096, n), 0);
}

/* ---- images the device's loader would read past ---- */

static int loads_seen;          /* module_load calls that reached the device */
static struct mdev_ops counting_ops;

static int counting_module_load(struct mdev *d, const void *image, size_t size, void **module)
{
	loads_seen++;
	return mdev_sim_ops.module_load(d, image, size, module);
}

/* vGPU 0's device counts the images its loader is given */
static void count_loads(void)
{
	counting_ops = *fx.w->vgpus[0].ops;
	counting_ops.module_load = counting_module_load;
	fx.w->vgpus[0].ops = &counting_ops;
	loads_seen = 0;
}

static char log_path[64];
static int log_fd = -1;

static void log_capture(void)
{
	strcpy(log_path, "/tmp/mearas-unit-log.XXXXXX");
	log_fd = mkstemp(log_path);
	REQUIRE(log_fd >= 0);
	unlink(log_path);
	mearas_log_set_fd(log_fd);
}

/* the log written since log_capture(); ends the capture */
static const char *log_text(void)
{
	static char buf[65536];
	ssize_t n;

	mearas_log_set_fd(STDERR_FILENO);
	n = pread(log_fd, buf, sizeof(buf) - 1, 0);
	close(log_fd);
	log_fd = -1;
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

/* whether the log written since log_capture() holds `what`; ends the capture */
static bool log_has(const char *what)
{
	return strstr(log_text(), what) != NULL;
}

/* an image of `size` bytes at data offset 4096 refused with a log line, and
 * the device's loader never saw it */
static void image_refused(uint64_t size, const char *what)
{
	int before = loads_seen, r;

	log_capture();
	r = run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, size);
	CHECK_MSG(log_has("module image refused"), "%s: no log line", what);
	CHECK_MSG(r == cudaErrorInvalidKernelImage, "%s: status %d", what, r);
	CHECK_MSG(loads_seen == before, "%s: the device's loader saw it", what);
}

/* The image's own account of its size (a fat binary's header, an ELF's
 * section headers, PTX text's NUL) past the record's bytes: a loader that
 * takes no length (cuModuleLoadData on a GPU) would read on past them. */
static void test_image_past_its_bytes(void)
{
	size_t n = read_fatbin();
	uint8_t *img = fx.w->data + 4096;
	uint64_t body;

	count_loads();
	/* the fat binary cut short: its header still says n bytes */
	image_refused(n - 64, "a fat binary cut short");
	/* its header says a GiB more than there is */
	memcpy(&body, img + 8, 8);
	body += 1ull << 30;
	memcpy(img + 8, &body, 8);
	image_refused(n, "a fat binary header past the bytes");
	/* PTX text without its NUL in the record's bytes */
	memset(img, 'a', 256);
	memcpy(img, ".version 8.0\n", 13);
	image_refused(256, "PTX without its NUL");
	/* an ELF whose section headers lie past the bytes */
	memset(img, 0, 256);
	memcpy(img, "\x7f" "ELF\x02\x01\x01", 7);
	img[0x3a] = 64;                 /* e_shentsize */
	img[0x3c] = 4;                  /* e_shnum */
	img[0x28] = 0xc0;               /* e_shoff: 192 + 4 x 64 > 256 */
	image_refused(256, "ELF sections past the bytes");
	/* the real image is still loaded */
	n = read_fatbin();
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, n), 0);
	CHECK_EQ(loads_seen, 1);
}

/* A __fatBinC_Wrapper_t holds a pointer: a loader would follow it into the
 * daemon's memory. */
static void test_image_wrapper_refused(void)
{
	uint8_t *img = fx.w->data + 4096;
	uint32_t magic = MEARAS_FATBINC_MAGIC, version = 1;
	uint64_t ptr = (uint64_t)(uintptr_t)&counting_ops;

	count_loads();
	memset(img, 0, 64);
	memcpy(img, &magic, 4);
	memcpy(img + 4, &version, 4);
	memcpy(img + 8, &ptr, 8);
	image_refused(64, "a fat binary wrapper");
}

/* A client can have records refused at will: at most 10 log lines a second
 * per vGPU, and the count of the rest in a line of the next second. */
static void test_refusals_logged_within_budget(void)
{
	uint8_t *img = fx.w->data + 4096;
	uint32_t magic = MEARAS_FATBINC_MAGIC, version = 1;
	const char *log, *p;
	int lines = 0;

	memset(img, 0, 64);
	memcpy(img, &magic, 4);
	memcpy(img + 4, &version, 4);
	usleep(1100000); /* a second of their own */
	log_capture();
	for (int i = 0; i < 50; i++)
		CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, 64), cudaErrorInvalidKernelImage);
	usleep(1100000);
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, 64), cudaErrorInvalidKernelImage);
	log = log_text();
	for (p = log; (p = strstr(p, "module image refused")); p++)
		lines++;
	CHECK_MSG(lines == 11, "%d lines of refused images for 51 refusals", lines);
	CHECK_MSG(strstr(log, "40 more refused records not logged") != NULL, "no count of the dropped lines");
}

/* stream 7, modules 1 and 2 of the fat binary */
static void stream_and_modules(void)
{
	size_t n = read_fatbin();

	REQUIRE(run1(MEARAS_OP_STREAM_CREATE, 0, 7, 0, 0) == 0);
	REQUIRE(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, n) == 0);
	REQUIRE(run1(MEARAS_OP_MODULE_LOAD, 0, 2, 4096, n) == 0);
}

static void test_functions_and_launch(void)
{
	uint64_t val[2];

	stream_and_modules();
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 1, 10, "k_three", val), 0);
	CHECK_EQ(val[0], 3);
	CHECK_EQ(val[1], 24);   /* int*, float (padded), double */
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 1, 10, "k_three", NULL), cudaErrorInvalidValue); /* dup id */
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 1, 0, "k_three", NULL), cudaErrorInvalidValue);
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 1, MEARAS_MAX_HANDLES, "k_three", NULL), cudaErrorInvalidValue);
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 1, 11, "no_such_kernel", NULL), cudaErrorInvalidDeviceFunction);
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 9, 11, "k_three", NULL), cudaErrorInvalidResourceHandle);
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 1, 11, "k_none", val), 0);
	CHECK_EQ(val[1], 0);
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 2, 12, "k_three", NULL), 0);

	CHECK_EQ(launch(10, 1, 32, 24, 0), 0);
	CHECK_EQ(launch(10, 1, 32, 16, 0), cudaErrorInvalidValue);     /* wrong parameter size */
	CHECK_EQ(launch(10, 1, 32, 25, 0), cudaErrorInvalidValue);
	CHECK_EQ(launch(10, 1, 32, 0, 0), cudaErrorInvalidValue);
	CHECK_EQ(launch(10, 1, 32, MEARAS_MAX_PARAM_BYTES + 1, 0), cudaErrorInvalidValue);
	CHECK_EQ(launch(11, 1, 32, 0, 0), 0);
	CHECK_EQ(launch(11, 1, 32, 8, 0), cudaErrorInvalidValue);
	CHECK_EQ(launch(10, 0, 32, 24, 0), cudaErrorInvalidConfiguration);
	CHECK_EQ(launch(10, 1, 0, 24, 0), cudaErrorInvalidConfiguration);
	CHECK_EQ(launch(10, 1, 32, 24, 4444), cudaErrorInvalidResourceHandle);
	CHECK_EQ(launch(10, 1, 32, 24, 7), 0);
	CHECK_EQ(launch(0, 1, 32, 24, 0), cudaErrorInvalidDeviceFunction);
	CHECK_EQ(launch(13, 1, 32, 24, 0), cudaErrorInvalidDeviceFunction);
	CHECK_EQ(launch(UINT64_MAX, 1, 32, 24, 0), cudaErrorInvalidDeviceFunction);
	{
		struct mearas_sqe e = sqe_of(MEARAS_OP_LAUNCH);

		e.args.a[0] = 10;
		e.args.a[1] = 1 | (1ull << 32);
		e.args.a[2] = 1 | (32ull << 32);
		e.args.a[3] = 1 | (1ull << 32);
		e.args.LAUNCH.smem = (1u << 30) + 1;   /* dynamic shared memory */
		e.payload_len = 24;
		CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidConfiguration);
		/* a cluster shape names all three dimensions or none */
		e.args.LAUNCH.smem = 0;
		e.args.LAUNCH.cluster[0] = 2;
		CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidConfiguration);
	}
	CHECK_EQ(run1(MEARAS_OP_FUNC_ATTRS, 0, 10, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_FUNC_ATTRS, 0, 13, 0, 0), cudaErrorInvalidDeviceFunction);
	CHECK_EQ(run1(MEARAS_OP_FUNC_SET_ATTR, 0, 13, 0, 0), cudaErrorInvalidDeviceFunction);
	CHECK_EQ(run1(MEARAS_OP_OCCUPANCY, 0, 10, 256, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_OCCUPANCY, 0, 10, 0, 0), cudaErrorInvalidValue);
	CHECK_EQ(run1(MEARAS_OP_OCCUPANCY, 0, 10, 4097, 0), cudaErrorInvalidValue);
	CHECK_EQ(run1(MEARAS_OP_OCCUPANCY, 0, 10, 256, (1u << 30) + 1), cudaErrorInvalidValue);

	/* functions die with their module; the other module's stay */
	CHECK_EQ(run1(MEARAS_OP_MODULE_UNLOAD, 0, 1, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_MODULE_UNLOAD, 0, 1, 0, 0), cudaErrorInvalidResourceHandle);
	CHECK_EQ(launch(10, 1, 32, 24, 0), cudaErrorInvalidDeviceFunction);
	CHECK_EQ(launch(11, 1, 32, 0, 0), cudaErrorInvalidDeviceFunction);
	CHECK_EQ(launch(12, 1, 32, 24, 0), 0);
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 1, 10, "k_three", NULL), cudaErrorInvalidResourceHandle);
}

/* the launch attributes a record's flags carry: known bits reach the
 * device, an unknown bit or an out-of-range value is refused */
static void test_launch_attribute_flags(void)
{
	struct mearas_sqe e;

	stream_and_modules();
	CHECK_EQ(run_named(MEARAS_OP_FUNC_GET, 1, 10, "k_three", NULL), 0);
	e = sqe_of(MEARAS_OP_LAUNCH);
	e.args.a[0] = 10;
	e.args.a[1] = 1 | (1ull << 32);
	e.args.a[2] = 1 | (32ull << 32);
	e.args.a[3] = 1 | (1ull << 32);
	e.payload_len = 24;
	e.args.LAUNCH.flags = MEARAS_LAUNCH_PROGRAMMATIC | MEARAS_LAUNCH_SYNC_DOMAIN_REMOTE | MEARAS_LAUNCH_PRIORITY |
			      (0xfdu << MEARAS_LAUNCH_PRIORITY_SHIFT) | MEARAS_LAUNCH_CARVEOUT |
			      (100u << MEARAS_LAUNCH_CARVEOUT_SHIFT) | (2u << MEARAS_LAUNCH_POLICY_SHIFT);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	e.args.LAUNCH.flags = 1u << 7;                          /* no attribute of that bit */
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e.args.LAUNCH.flags = 1u << 31;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e.args.LAUNCH.flags = 3u << MEARAS_LAUNCH_POLICY_SHIFT; /* policy 3 does not exist */
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	e.args.LAUNCH.flags = MEARAS_LAUNCH_CARVEOUT | (101u << MEARAS_LAUNCH_CARVEOUT_SHIFT);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
}

/* module 2's g_counter (64 bytes) at *va, and a record copying 64 bytes of
 * the data area to it */
static struct mearas_sqe copy_to_global(uint64_t *va)
{
	uint64_t val[2] = { 0 };
	struct mearas_sqe e = sqe_of(MEARAS_OP_MEMCPY);

	stream_and_modules();
	REQUIRE(run_named(MEARAS_OP_GLOBAL_GET, 2, 64, "g_counter", val) == 0);
	CHECK(val[0] != 0);
	CHECK_EQ(val[1], 64);
	*va = val[0];
	e.args.a[0] = val[0];
	e.args.a[2] = 64;
	e.args.a[3] = MEARAS_COPY_HTOD;
	return e;
}

static void test_globals(void)
{
	uint64_t va;
	struct mearas_sqe e = copy_to_global(&va);

	/* the global is device memory the client may copy to, within its size */
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	e.args.a[0] = va + 60;
	e.args.a[2] = 8;
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	CHECK_EQ(run_named(MEARAS_OP_GLOBAL_GET, 9, 64, "g_counter", NULL), cudaErrorInvalidResourceHandle);
	CHECK_EQ(run_named(MEARAS_OP_GLOBAL_GET, 2, 0, "other", NULL), cudaErrorInvalidSymbol);
}

/* a module's globals are device memory of the client only while the module
 * is loaded: after MODULE_UNLOAD a copy to one is refused */
static void test_globals_unloaded(void)
{
	uint64_t va;
	struct mearas_sqe e = copy_to_global(&va);

	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), 0);
	CHECK_EQ(run1(MEARAS_OP_MODULE_UNLOAD, 0, 2, 0, 0), 0);
	CHECK_EQ(fixture_run(&fx, 0, &e, NULL), cudaErrorInvalidValue);
	CHECK_EQ(fx.w->vgpus[0].nglobals, 0);
}

/* ---- the device memory a module holds, charged to the quota ---- */

/* the bytes mearas_module_footprint gives the fat binary of n bytes at 4096 */
static uint64_t fatbin_footprint(size_t n)
{
	uint64_t bytes = 0;
	char why[160];

	REQUIRE_MSG(mearas_module_footprint(fx.w->data + 4096, n, &bytes, why, sizeof(why)) == 0, "%s", why);
	return bytes;
}

/* while it is loaded, a module's code and variables (g_counter: 64 bytes)
 * count against the quota; unloading gives them back */
static void test_module_charged_while_loaded(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	size_t n = read_fatbin();
	uint64_t before = v->heap.used, bytes = fatbin_footprint(n);

	CHECK(bytes >= 64);
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, n), 0);
	CHECK_EQ(v->heap.used, before + bytes);
	CHECK_EQ(run1(MEARAS_OP_MODULE_UNLOAD, 0, 1, 0, 0), 0);
	CHECK_EQ(v->heap.used, before);
}

/* a module that would take more than the memory left is refused before the
 * device's loader sees it, as a GPU out of memory refuses it */
static void test_module_over_quota(void)
{
	struct vgpu *v = &fx.w->vgpus[0];
	size_t n = read_fatbin();
	uint64_t quota = v->heap.quota;
	int r;

	count_loads();
	v->heap.quota = v->heap.used + fatbin_footprint(n) - 1;
	log_capture();
	r = run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, n);
	CHECK_MSG(log_has("module refused: its code and variables take"), "no log line");
	CHECK_EQ(r, cudaErrorMemoryAllocation);
	CHECK_EQ(loads_seen, 0);
	v->heap.quota = quota;
	CHECK_EQ(run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, n), 0);
}

/* A cubin of a few hundred bytes whose zero-filled variables section says
 * 1 TiB: the loader would allocate it from the GPU's memory, outside every
 * quota. Refused before the loader sees it. */
static void test_module_zero_filled_variables(void)
{
	static const char names[] = "\0.shstrtab\0.nv.global";
	uint8_t *img = fx.w->data + 4096;
	uint8_t *sh = img + 128;
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;
	int r;

	count_loads();
	memset(img, 0, 512);
	memcpy(img, "\x7f" "ELF\x02\x01\x01", 7);
	memcpy(img + 64, names, sizeof(names));
	v64 = 128, memcpy(img + 0x28, &v64, 8);         /* e_shoff */
	v16 = 64, memcpy(img + 0x3a, &v16, 2);          /* e_shentsize */
	v16 = 3, memcpy(img + 0x3c, &v16, 2);           /* e_shnum */
	v16 = 1, memcpy(img + 0x3e, &v16, 2);           /* e_shstrndx */
	/* section 1: the names, STRTAB */
	v32 = 1, memcpy(sh + 64, &v32, 4);
	v32 = 3, memcpy(sh + 64 + 4, &v32, 4);
	v64 = 64, memcpy(sh + 64 + 24, &v64, 8);
	v64 = sizeof(names), memcpy(sh + 64 + 32, &v64, 8);
	/* section 2: .nv.global, NOBITS, write + alloc, 1 TiB */
	v32 = 11, memcpy(sh + 128, &v32, 4);
	v32 = 8, memcpy(sh + 128 + 4, &v32, 4);
	v64 = 3, memcpy(sh + 128 + 8, &v64, 8);
	v64 = 1ull << 40, memcpy(sh + 128 + 32, &v64, 8);
	REQUIRE(fatbin_footprint(320) == 1ull << 40);
	log_capture();
	r = run1(MEARAS_OP_MODULE_LOAD, 0, 1, 4096, 320);
	CHECK_MSG(log_has("module refused: its code and variables take 1099511627776 bytes"), "no log line");
	CHECK_EQ(r, cudaErrorMemoryAllocation);
	CHECK_EQ(loads_seen, 0);
}

static void test_reset(void)
{
	stream_and_modules();
	REQUIRE(run1(MEARAS_OP_EVENT_CREATE, 0, 4, cudaEventDisableTiming, 0) == 0);
	REQUIRE(run_named(MEARAS_OP_FUNC_GET, 2, 12, "k_three", NULL) == 0);
	REQUIRE(run_named(MEARAS_OP_GLOBAL_GET, 2, 64, "g_counter", NULL) == 0);
	REQUIRE(launch(12, 1, 32, 24, 0) == 0);
	CHECK_EQ(run1(MEARAS_OP_CTX_SYNC, 0, 0, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_DEVICE_RESET, 0, 0, 0, 0), 0);
	/* everything is gone after a reset */
	CHECK_EQ(run1(MEARAS_OP_STREAM_SYNC, 7, 0, 0, 0), cudaErrorInvalidResourceHandle);
	CHECK_EQ(launch(12, 1, 32, 24, 0), cudaErrorInvalidDeviceFunction);
	CHECK_EQ(run1(MEARAS_OP_EVENT_RECORD, 0, 4, 0, 0), cudaErrorInvalidResourceHandle);
	CHECK_EQ(run1(MEARAS_OP_MODULE_UNLOAD, 0, 2, 0, 0), cudaErrorInvalidResourceHandle);
	CHECK_EQ(fx.w->vgpus[0].heap.used, 0);
}

/* EVENT_RECORD and STREAM_WAIT_EVENT take the external flag alone */
static void test_event_external_flags(void)
{
	const int bad = cudaErrorInvalidValue;

	REQUIRE(run1(MEARAS_OP_STREAM_CREATE, 0, 9, 0, 0) == 0);
	REQUIRE(run1(MEARAS_OP_EVENT_CREATE, 0, 5, 0, 0) == 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_RECORD, 9, 5, MEARAS_EVENT_RECORD_EXTERNAL, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_EVENT_RECORD, 9, 5, 2, 0), bad);
	CHECK_EQ(run1(MEARAS_OP_EVENT_RECORD, 9, 5, UINT64_MAX, 0), bad);
	CHECK_EQ(run1(MEARAS_OP_STREAM_WAIT_EVENT, 9, 5, MEARAS_EVENT_WAIT_EXTERNAL, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_STREAM_WAIT_EVENT, 9, 5, 2, 0), bad);
	CHECK_EQ(run1(MEARAS_OP_EVENT_DESTROY, 0, 5, 0, 0), 0);
	CHECK_EQ(run1(MEARAS_OP_STREAM_DESTROY, 0, 9, 0, 0), 0);
}

static const struct check_case cases[] = {
	{ "streams_and_events", test_streams_events },
	{ "event_external_flags", test_event_external_flags },
	{ "module_load", test_module_load },
	{ "module_image_past_its_bytes", test_image_past_its_bytes },
	{ "module_image_wrapper_refused", test_image_wrapper_refused },
	{ "refused_records_logged_within_budget", test_refusals_logged_within_budget },
	{ "functions_and_launch", test_functions_and_launch },
	{ "launch_attribute_flags", test_launch_attribute_flags },
	{ "module_globals", test_globals },
	{ "module_globals_unloaded", test_globals_unloaded },
	{ "module_charged_while_loaded", test_module_charged_while_loaded },
	{ "module_over_quota_refused", test_module_over_quota },
	{ "module_zero_filled_variables_refused", test_module_zero_filled_variables },
	{ "device_reset_drops_everything", test_reset },
};
FIXTURE_MAIN(cases, 1, 0, NULL)
