// SPDX-License-Identifier: MIT
/*
 * cuLink* through mearas's libcuda: the inputs go to the host's linker (the
 * sim's linker model) at cuLinkComplete, and the image comes back for
 * cuModuleLoadData. Modes (one behaviour each):
 *   linked      a kernel whose PTX calls a function another PTX input
 *               defines (one given as data, one as a file): the image loads,
 *               the kernel runs (the sim's add), the logs are empty
 *   unresolved  the kernel's PTX alone: CUDA_ERROR_INVALID_PTX, and the
 *               error log the caller gave names the missing function
 *   refused     bad inputs: an unknown type, NVVM, no inputs, a missing
 *               file, a destroyed state
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drv_check.h"

static const char kernel_ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".extern .func (.param .b32 r) helper_add(.param .b32 x);\n"
	".visible .entry mearas_sim_add_u32(.param .u64 p, .param .u32 n, .param .u32 v)\n"
	"{\n\tret;\n}\n";

static const char helper_ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .func (.param .b32 r) helper_add(.param .b32 x)\n"
	"{\n\t.reg .b32 %r<3>;\n\tld.param.b32 %r1, [x];\n\tadd.s32 %r2, %r1, 1;\n"
	"\tst.param.b32 [r], %r2;\n\tret;\n}\n";

static char info[256], error[256];
/* the driver writes the logs' sizes back into the values: they live as long as the state */
static CUjit_option o[] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
			    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_OPTIMIZATION_LEVEL };
static void *v[5];

static CUlinkState create(void)
{
	CUlinkState st;

	v[0] = info;
	v[1] = (void *)(uintptr_t)sizeof(info);
	v[2] = error;
	v[3] = (void *)(uintptr_t)sizeof(error);
	v[4] = (void *)(uintptr_t)3;
	memset(info, 'x', sizeof(info));
	memset(error, 'x', sizeof(error));
	CHECK(cuLinkCreate(5, o, v, &st));
	return st;
}

static void linked(void)
{
	char path[] = "/tmp/mearas-link-XXXXXX";
	int fd = mkstemp(path);
	CUlinkState st = create();
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr buf;
	uint32_t host[4] = { 1, 2, 3, 4 }, n = 4, add = 10;
	void *args[] = { &buf, &n, &add }, *image;
	size_t size;

	REQUIRE(fd >= 0 && write(fd, helper_ptx, sizeof(helper_ptx)) == (ssize_t)sizeof(helper_ptx), "temp file");
	close(fd);
	CHECK(cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)kernel_ptx, sizeof(kernel_ptx), "kernel", 0, NULL, NULL));
	CHECK(cuLinkAddFile(st, CU_JIT_INPUT_PTX, path, 0, NULL, NULL));
	unlink(path);
	CHECK(cuLinkComplete(st, &image, &size));
	REQUIRE(image && size > 0, "no image");
	REQUIRE(!info[0] && !error[0], "logs after a link that worked: info '%.20s', error '%.20s'", info, error);
	CHECK(cuModuleLoadData(&mod, image));
	CHECK(cuLinkDestroy(st));  /* the module keeps what it loaded */
	CHECK(cuModuleGetFunction(&fn, mod, "mearas_sim_add_u32"));
	CHECK(cuMemAlloc(&buf, sizeof(host)));
	CHECK(cuMemcpyHtoD(buf, host, sizeof(host)));
	CHECK(cuLaunchKernel(fn, 1, 1, 1, 4, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(host, buf, sizeof(host)));
	REQUIRE(host[0] == 11 && host[3] == 14, "the linked kernel's work: %u %u", host[0], host[3]);
	CHECK(cuMemFree(buf));
	CHECK(cuModuleUnload(mod));
}

static void unresolved(void)
{
	CUlinkState st = create();
	void *image;
	size_t size;

	CHECK(cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)kernel_ptx, sizeof(kernel_ptx), NULL, 0, NULL, NULL));
	EXPECT(CUDA_ERROR_INVALID_PTX, cuLinkComplete(st, &image, &size));
	REQUIRE(strstr(error, "helper_add") != NULL, "the error log does not name the function: '%.200s'", error);
	REQUIRE((size_t)(uintptr_t)v[3] == strlen(error), "the error log's size written back: %zu for %zu bytes",
		(size_t)(uintptr_t)v[3], strlen(error));
	CHECK(cuLinkDestroy(st));
}

static void refused(void)
{
	CUlinkState st = create();
	void *image;
	size_t size;

	EXPECT(CUDA_ERROR_INVALID_VALUE, cuLinkComplete(st, &image, &size));      /* no inputs */
	EXPECT(CUDA_ERROR_INVALID_VALUE,
	       cuLinkAddData(st, (CUjitInputType)99, (void *)kernel_ptx, sizeof(kernel_ptx), NULL, 0, NULL, NULL));
	EXPECT(CUDA_ERROR_NOT_SUPPORTED,
	       cuLinkAddData(st, CU_JIT_INPUT_NVVM, (void *)kernel_ptx, sizeof(kernel_ptx), NULL, 0, NULL, NULL));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuLinkAddData(st, CU_JIT_INPUT_PTX, NULL, 10, NULL, 0, NULL, NULL));
	EXPECT(CUDA_ERROR_FILE_NOT_FOUND,
	       cuLinkAddFile(st, CU_JIT_INPUT_PTX, "/nonexistent/mearas.ptx", 0, NULL, NULL));
	CHECK(cuLinkDestroy(st));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLinkDestroy(st));
}

int main(int argc, char **argv)
{
	static const struct drv_mode modes[] = {
		{ "linked", linked }, { "unresolved", unresolved }, { "refused", refused },
	};

	return drv_run_mode_in_primary(argc, argv, modes, DRV_NMODES(modes));
}
