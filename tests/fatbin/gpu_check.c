/* SPDX-License-Identifier: MIT */
/*
 * On a machine with a GPU: checks the parsed layouts against the driver's own
 * answer (cuFuncGetParamInfo) for every kernel of every fat binary found in
 * the given files (raw .nv_fatbin section dumps: fat binaries end to end).
 * Not part of `make test` (no GPU there). Usage: gpu_check FILE... (one case
 * per file; a mismatch fails it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "check.h"
#include "mearas/fatbin.h"
#include "test_util.h"

static unsigned agree, unloadable;

static void check_kernel(CUmodule mod, const struct mearas_kernel_info *k)
{
	CUfunction f;
	if (cuModuleGetFunction(&f, mod, k->name) != CUDA_SUCCESS) {
		CHECK_FAIL("MISMATCH %s: the driver has no such function", k->name);
		return;
	}
	int ok = 1;
	size_t i = 0;
	for (;; i++) {
		size_t off, size;
		CUresult r = cuFuncGetParamInfo(f, i, &off, &size);
		if (r != CUDA_SUCCESS)
			break;
		if (i >= k->nparams || off != k->params[i].offset || size != k->params[i].size) {
			CHECK_FAIL("MISMATCH %s param %zu: driver %zu:%zu, parsed %s%u:%u", k->name, i,
			       off, size, i >= k->nparams ? "(none) " : "",
			       i < k->nparams ? k->params[i].offset : 0,
			       i < k->nparams ? k->params[i].size : 0);
			ok = 0;
		}
	}
	if (i != k->nparams) {
		CHECK_FAIL("MISMATCH %s: driver %zu params, parsed %u", k->name, i, k->nparams);
		ok = 0;
	}
	agree += ok;
}

static void check_file(void *arg)
{
	const char *path = arg;
	size_t size;
	unsigned char *data = read_file(path, &size);
	REQUIRE_MSG(data, "%s: unreadable", path);
	size_t off = 0;
	unsigned nfat = 0;
	while (off + 16 <= size) {
		if (data[off] == 0) {
			off += 8;	/* padding between fat binaries */
			continue;
		}
		const void *fb;
		size_t len;
		if (mearas_fatbin_locate(data + off, &fb, &len) || len > size - off) {
			CHECK_FAIL("%s: no fat binary at offset %zu", path, off);
			break;
		}
		char err[256];
		struct mearas_fatbin_index *idx = mearas_fatbin_index_new(fb, len, err, sizeof(err));
		if (!idx) {
			CHECK_FAIL("%s: fat binary at %zu refused: %s", path, off, err);
		} else {
			CUmodule mod;
			CUresult r = cuModuleLoadData(&mod, fb);
			if (r != CUDA_SUCCESS) {
				const char *why = "?";
				cuGetErrorName(r, &why);
				printf("  %s: fat binary at %zu (%zu kernels) not loadable here: %s\n",
				       path, off, mearas_fatbin_kernel_count(idx), why);
				unloadable++;
			} else {
				for (size_t i = 0; i < mearas_fatbin_kernel_count(idx); i++)
					check_kernel(mod, mearas_fatbin_kernel_at(idx, i));
				cuModuleUnload(mod);
			}
			mearas_fatbin_index_free(idx);
		}
		off += len;
		nfat++;
	}
	printf("  %s: %u fat binaries\n", path, nfat);
	free(data);
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUdevice dev;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
		fprintf(stderr, "no usable CUDA device\n");
		return 2;
	}
	check_init(1, argv); /* the arguments are files, not case names */
	for (int i = 1; i < argc; i++)
		check_run_one(argv[i], check_file, argv[i]);
	printf("kernels agreeing with cuFuncGetParamInfo: %u; fat binaries not loadable: %u\n",
	       agree, unloadable);
	return check_done();
}
