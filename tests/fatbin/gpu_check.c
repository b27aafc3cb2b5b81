/* SPDX-License-Identifier: MIT */
/*
 * On a machine with a GPU: checks the parsed layouts against the driver's own
 * answer (cuFuncGetParamInfo) for every kernel of every fat binary found in
 * the given files (raw .nv_fatbin section dumps: fat binaries end to end).
 * Not part of `make test` (no GPU there). Usage: gpu_check FILE...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "mearas/fatbin.h"
#include "test_util.h"

static unsigned agree, disagree, unloadable;

static void check_kernel(CUmodule mod, const struct mearas_kernel_info *k)
{
	CUfunction f;
	if (cuModuleGetFunction(&f, mod, k->name) != CUDA_SUCCESS) {
		printf("MISMATCH %s: the driver has no such function\n", k->name);
		disagree++;
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
			printf("MISMATCH %s param %zu: driver %zu:%zu, parsed %s%u:%u\n", k->name, i,
			       off, size, i >= k->nparams ? "(none) " : "",
			       i < k->nparams ? k->params[i].offset : 0,
			       i < k->nparams ? k->params[i].size : 0);
			ok = 0;
		}
	}
	if (i != k->nparams) {
		printf("MISMATCH %s: driver %zu params, parsed %u\n", k->name, i, k->nparams);
		ok = 0;
	}
	ok ? agree++ : disagree++;
}

static void check_file(const char *path)
{
	size_t size;
	unsigned char *data = read_file(path, &size);
	if (!data) {
		disagree++;
		return;
	}
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
			printf("%s: no fat binary at offset %zu\n", path, off);
			disagree++;
			break;
		}
		char err[256];
		struct mearas_fatbin_index *idx = mearas_fatbin_index_new(fb, len, err, sizeof(err));
		if (!idx) {
			printf("%s: fat binary at %zu refused: %s\n", path, off, err);
			disagree++;
		} else {
			CUmodule mod;
			CUresult r = cuModuleLoadData(&mod, fb);
			if (r != CUDA_SUCCESS) {
				const char *why = "?";
				cuGetErrorName(r, &why);
				printf("%s: fat binary at %zu (%zu kernels) not loadable here: %s\n",
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
	printf("%s: %u fat binaries\n", path, nfat);
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
	for (int i = 1; i < argc; i++)
		check_file(argv[i]);
	printf("kernels agreeing with cuFuncGetParamInfo: %u; fat binaries not loadable: %u\n",
	       agree, unloadable);
	printf("gpu_check: %u passed, %u failed\n", agree, disagree);
	return disagree ? 1 : 0;
}
