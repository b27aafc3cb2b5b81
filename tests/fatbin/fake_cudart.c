/* SPDX-License-Identifier: MIT */
/*
 * A minimal stand-in for libcudart, linked with nvcc-built objects
 * (-cudart none): it receives the real registration calls of nvcc-generated
 * host code, indexes each registered fat binary with mearas_fatbin_*, and on
 * every launch packs the argument pointers into a parameter buffer with the
 * parsed layout, which main() compares with the samples' expectations: one
 * case for the registration, one per kernel for its layout, one per sample
 * for its launches. Usage: reg_VARIANT [--wrapper-version=N] [CASE...]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "expect.h"
#include "mearas/fatbin.h"

typedef struct { unsigned x, y, z; } dim3_t;

/* the entry points nvcc-generated host code calls */
void **__cudaRegisterFatBinary(void *wrapper);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaUnregisterFatBinary(void **handle);
char __cudaInitModule(void **handle);
void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun,
			    const char *device_name, int thread_limit, void *tid, void *bid,
			    void *bdim, void *gdim, int *wsize);
unsigned __cudaPushCallConfiguration(dim3_t grid, dim3_t block, size_t shmem, void *stream);
int __cudaPopCallConfiguration(dim3_t *grid, dim3_t *block, size_t *shmem, void *stream);
int __cudaGetKernel(void **kernel, const void *host_fun);
int __cudaLaunchKernel(void *kernel, dim3_t grid, dim3_t block, void **args, size_t shmem,
		       void *stream);
int __cudaLaunchKernel_ptsz(void *kernel, dim3_t grid, dim3_t block, void **args,
			    size_t shmem, void *stream);
int cudaLaunchKernel(const void *func, dim3_t grid, dim3_t block, void **args, size_t shmem,
		     void *stream);

#define MAX_MODULES 16
#define MAX_FUNCS 256
#define MAX_SETS 16

struct module {
	struct mearas_fatbin_index *idx;
	int wrapper_version;
	int ended;
	int locate_rc;          /* registration happens before main: checked there */
	int may_print;          /* mearas_image_may_print's answer */
	char err[256];
};

struct func {
	const void *host_fun;
	const char *device_name;
	struct module *mod;
};

static struct module modules[MAX_MODULES];
static size_t nmodules;
static struct func funcs[MAX_FUNCS];
static size_t nfuncs;
static struct {
	const struct expect_kernel *table;
	size_t n;
	void (*launch_all)(void);
} sets[MAX_SETS];
static size_t nsets;

static struct {
	const void *host_fun;
	unsigned char *bytes, *mask;
	size_t len;
	int pending;
} next_launch;

void **__cudaRegisterFatBinary(void *wrapper)
{
	if (nmodules == MAX_MODULES) {
		fprintf(stderr, "fake_cudart: too many modules\n");
		exit(2);
	}
	struct module *m = &modules[nmodules++];
	const void *fatbin;
	size_t size;
	m->locate_rc = mearas_fatbin_locate(wrapper, &fatbin, &size);
	m->wrapper_version = ((const int *)wrapper)[1];
	if (m->locate_rc == 0) {
		m->idx = mearas_fatbin_index_new(fatbin, size, m->err, sizeof(m->err));
		m->may_print = mearas_image_may_print(fatbin, size);
	}
	return (void **)m;
}

void __cudaRegisterFatBinaryEnd(void **handle)
{
	((struct module *)handle)->ended = 1;
}

void __cudaUnregisterFatBinary(void **handle)
{
	struct module *m = (struct module *)handle;
	mearas_fatbin_index_free(m->idx);
	m->idx = NULL;
}

char __cudaInitModule(void **handle)
{
	(void)handle;
	return 1;
}

void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun,
			    const char *device_name, int thread_limit, void *tid, void *bid,
			    void *bdim, void *gdim, int *wsize)
{
	(void)device_fun, (void)thread_limit, (void)tid, (void)bid, (void)bdim, (void)gdim,
		(void)wsize;
	if (nfuncs == MAX_FUNCS) {
		fprintf(stderr, "fake_cudart: too many functions\n");
		exit(2);
	}
	funcs[nfuncs++] = (struct func){ host_fun, device_name, (struct module *)handle };
}

static dim3_t cfg_grid, cfg_block;
static size_t cfg_shmem;
static void *cfg_stream;

unsigned __cudaPushCallConfiguration(dim3_t grid, dim3_t block, size_t shmem, void *stream)
{
	cfg_grid = grid, cfg_block = block, cfg_shmem = shmem, cfg_stream = stream;
	return 0;
}

int __cudaPopCallConfiguration(dim3_t *grid, dim3_t *block, size_t *shmem, void *stream)
{
	*grid = cfg_grid, *block = cfg_block, *shmem = cfg_shmem;
	memcpy(stream, &cfg_stream, sizeof(cfg_stream));
	return 0;
}

static const struct func *func_by_host(const void *host_fun)
{
	for (size_t i = 0; i < nfuncs; i++)
		if (funcs[i].host_fun == host_fun)
			return &funcs[i];
	return NULL;
}

/* The kernel handle given out by __cudaGetKernel is our struct func. */
int __cudaGetKernel(void **kernel, const void *host_fun)
{
	const struct func *f = func_by_host(host_fun);
	*kernel = (void *)f;
	return f ? 0 : 98 /* cudaErrorInvalidDeviceFunction */;
}

static void check_launch(const struct func *f, void **args)
{
	CHECK_MSG(f != NULL, "launch of an unregistered function");
	if (!f)
		return;
	const struct mearas_kernel_info *k = mearas_fatbin_find_kernel(f->mod->idx, f->device_name);
	CHECK_MSG(k != NULL, "launch: %s not in its fat binary", f->device_name);
	CHECK_MSG(next_launch.pending && next_launch.host_fun == f->host_fun,
	      "launch of %s was not the expected one", f->device_name);
	if (!k || !next_launch.pending)
		return;
	next_launch.pending = 0;
	unsigned char *buf = calloc(1, k->param_bytes ? k->param_bytes : 1);
	if (!buf)
		abort();
	for (uint32_t i = 0; i < k->nparams; i++)
		memcpy(buf + k->params[i].offset, args[i], k->params[i].size);
	size_t differ = 0;
	for (size_t i = 0; i < next_launch.len && i < k->param_bytes; i++)
		differ += next_launch.mask[i] && buf[i] != next_launch.bytes[i];
	CHECK_MSG(k->param_bytes == next_launch.len && differ == 0,
	      "launch %s: packed %u bytes, %zu of them differ from the host mirror (%zu bytes)",
	      f->device_name, k->param_bytes, differ, next_launch.len);
	free(buf);
}

int __cudaLaunchKernel(void *kernel, dim3_t grid, dim3_t block, void **args, size_t shmem,
		       void *stream)
{
	(void)grid, (void)block, (void)shmem, (void)stream;
	check_launch(kernel, args);
	return 0;
}

int __cudaLaunchKernel_ptsz(void *kernel, dim3_t grid, dim3_t block, void **args,
			    size_t shmem, void *stream)
{
	return __cudaLaunchKernel(kernel, grid, block, args, shmem, stream);
}

int cudaLaunchKernel(const void *func, dim3_t grid, dim3_t block, void **args, size_t shmem,
		     void *stream)
{
	(void)grid, (void)block, (void)shmem, (void)stream;
	check_launch(func_by_host(func), args);
	return 0;
}

void expect_register(const struct expect_kernel *table, size_t n, void (*launch_all)(void))
{
	if (nsets == MAX_SETS) {
		fprintf(stderr, "fake_cudart: too many expectation sets\n");
		exit(2);
	}
	sets[nsets].table = table;
	sets[nsets].n = n;
	sets[nsets].launch_all = launch_all;
	nsets++;
}

void expect_next_launch(const void *host_fun, const void *bytes, const unsigned char *mask,
			size_t len)
{
	CHECK_MSG(!next_launch.pending, "previous expected launch never happened");
	free(next_launch.bytes);
	free(next_launch.mask);
	next_launch.bytes = malloc(len ? len : 1);
	next_launch.mask = malloc(len ? len : 1);
	if (!next_launch.bytes || !next_launch.mask)
		abort();
	if (len) {
		memcpy(next_launch.bytes, bytes, len);
		if (mask)
			memcpy(next_launch.mask, mask, len);
		else
			memset(next_launch.mask, 1, len);
	}
	next_launch.host_fun = host_fun;
	next_launch.len = len;
	next_launch.pending = 1;
}

static void check_expectation(const struct expect_kernel *e)
{
	const struct func *f = func_by_host(e->host_fun);
	CHECK_MSG(f != NULL, "%s was never registered", e->label);
	if (!f)
		return;
	const struct mearas_kernel_info *k = mearas_fatbin_find_kernel(f->mod->idx, f->device_name);
	CHECK_MSG(k != NULL, "%s (%s) not found in its fat binary", e->label, f->device_name);
	if (!k)
		return;
	int same = k->nparams == e->nparams && k->param_bytes == e->param_bytes;
	for (unsigned i = 0; same && i < e->nparams; i++)
		same = k->params[i].offset == e->params[i].offset &&
		       k->params[i].size == e->params[i].size;
	CHECK_MSG(same, "%s (%s): parsed layout differs from the host mirror", e->label,
	      f->device_name);
	if (!same) {
		fprintf(stderr, "  parsed  : %u params, %u bytes:", k->nparams, k->param_bytes);
		for (unsigned i = 0; i < k->nparams; i++)
			fprintf(stderr, " %u:%u", k->params[i].offset, k->params[i].size);
		fprintf(stderr, "\n  expected: %u params, %u bytes:", e->nparams, e->param_bytes);
		for (unsigned i = 0; i < e->nparams; i++)
			fprintf(stderr, " %u:%u", e->params[i].offset, e->params[i].size);
		fputc('\n', stderr);
	}
}

/* Every fat binary was located, indexed and ended, with the wrapper version
 * asked for (--wrapper-version=N, 0: any). */
static void registration(void *arg)
{
	int want_version = (int)check_opt_u64("wrapper-version", 0);

	(void)arg;
	CHECK_MSG(nmodules > 0, "no fat binary was registered");
	for (size_t i = 0; i < nmodules; i++) {
		CHECK_MSG(modules[i].locate_rc == 0, "module %zu: mearas_fatbin_locate: %d", i,
			  modules[i].locate_rc);
		CHECK_MSG(modules[i].locate_rc || modules[i].idx, "module %zu: mearas_fatbin_index_new: %s", i,
			  modules[i].err);
		CHECK_MSG(modules[i].ended, "module %zu: __cudaRegisterFatBinaryEnd not called", i);
		if (want_version)
			CHECK_MSG(modules[i].wrapper_version == want_version,
			      "module %zu: wrapper version %d, expected %d", i,
			      modules[i].wrapper_version, want_version);
	}
}

/* samples/kernels.cu calls printf: the fat binary that holds it (whatever
 * nvcc's compression) is found to print */
static void printf_found(void *arg)
{
	int any = 0;

	(void)arg;
	for (size_t i = 0; i < nmodules; i++)
		any |= modules[i].may_print;
	CHECK_MSG(any, "no registered fat binary was found to call vprintf");
}

/* Every registered function has a layout in the fat binary it came with,
 * and every one has an expectation. */
static void functions_indexed(void *arg)
{
	size_t expected = 0;

	(void)arg;
	for (size_t i = 0; i < nfuncs; i++)
		CHECK_MSG(mearas_fatbin_find_kernel(funcs[i].mod->idx, funcs[i].device_name) != NULL,
		      "registered %s missing from its index", funcs[i].device_name);
	for (size_t s = 0; s < nsets; s++)
		expected += sets[s].n;
	CHECK_MSG(expected == nfuncs, "%zu kernels registered, %zu expected", nfuncs, expected);
}

static void layout(void *e)
{
	check_expectation(e);
}

/* each kernel of a sample launched once, packed with the parsed layout */
static void launches(void *set)
{
	size_t s = (size_t)(uintptr_t)set;

	sets[s].launch_all();
	CHECK_MSG(!next_launch.pending, "expected launch never reached the runtime");
	next_launch.pending = 0;
}

int main(int argc, char **argv)
{
	char name[160];

	check_init(argc, argv);
	check_run_one("registration", registration, NULL);
	check_run_one("printf_found", printf_found, NULL);
	check_run_one("functions_indexed", functions_indexed, NULL);
	for (size_t s = 0; s < nsets; s++) {
		for (size_t i = 0; i < sets[s].n; i++) {
			snprintf(name, sizeof(name), "layout %s", sets[s].table[i].label);
			check_run_one(name, layout, (void *)&sets[s].table[i]);
		}
		snprintf(name, sizeof(name), "launches of sample %zu", s + 1);
		check_run_one(name, launches, (void *)(uintptr_t)s);
	}
	free(next_launch.bytes);
	free(next_launch.mask);
	printf("%s: %zu modules, %zu kernels\n", argv[0], nmodules, nfuncs);
	return check_done();
}
