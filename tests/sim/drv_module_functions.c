// The functions of a module through the driver API (C, -lcuda), one
// behaviour per mode (a PTX module of three kernels, another of none):
//   enumerate  cuModuleGetFunctionCount and cuModuleEnumerateFunctions list
//              every kernel once (names by cuFuncGetName), the same handles
//              on every call, usable (attributes, a launch); fewer asked
//              for, fewer written; bad arguments refused
//   slot7      export table 6e163fbe slot 7 (what cuFFT calls after loading
//              a module) calls visit(user, function, module) once per
//              function of the module, the same functions as the
//              enumeration, and returns how many it visited; a module of
//              no kernels visits none and returns 0; a handle that is no
//              module visits none and returns 0
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

static const char ptx3[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			   ".visible .entry mfn_c(.param .u64 p)\n{\n\tret;\n}\n"
			   ".visible .entry mfn_a(.param .u64 p, .param .u32 n)\n{\n\tret;\n}\n"
			   ".visible .entry mfn_b()\n{\n\tret;\n}\n";
static const char ptx0[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			   ".visible .global .align 4 .u32 mfn_only_a_variable;\n";

static const char *const names[3] = { "mfn_a", "mfn_b", "mfn_c" };

/* the index of f's name in names, or -1 */
static int name_index(CUfunction f)
{
	const char *n = NULL;

	CHECK(cuFuncGetName(&n, f));
	for (int i = 0; i < 3; i++)
		if (!strcmp(n, names[i]))
			return i;
	printf("unexpected function name %s\n", n);
	return -1;
}

/* each of names exactly once among fns[0..n) */
static void require_all_names(const CUfunction *fns, unsigned n)
{
	int seen[3] = { 0, 0, 0 };

	REQUIRE(n == 3, "%u functions, expected 3", n);
	for (unsigned i = 0; i < n; i++) {
		int k = name_index(fns[i]);

		REQUIRE(k >= 0 && !seen[k], "function %u: unknown or repeated name", i);
		seen[k] = 1;
	}
}

static int enumerate(CUmodule mod, CUmodule empty)
{
	CUfunction fns[4] = { 0 }, again[3] = { 0 }, two[3] = { 0 };
	unsigned n = 99;
	int regs;
	void *args[] = { &(CUdeviceptr){ 0 }, &(unsigned){ 1 } };

	CHECK(cuModuleGetFunctionCount(&n, mod));
	REQUIRE(n == 3, "cuModuleGetFunctionCount: %u, expected 3", n);
	CHECK(cuModuleEnumerateFunctions(fns, 4, mod));
	require_all_names(fns, 3);
	REQUIRE(!fns[3], "a fourth handle was written for a module of three kernels");
	CHECK(cuModuleEnumerateFunctions(again, 3, mod));
	REQUIRE(!memcmp(fns, again, sizeof(again)), "a second enumeration gave other handles");
	CHECK(cuModuleEnumerateFunctions(two, 2, mod));
	REQUIRE(two[0] == fns[0] && two[1] == fns[1] && !two[2], "2 asked for: not the first 2 alone");
	for (unsigned i = 0; i < 3; i++)
		CHECK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fns[i]));
	for (unsigned i = 0; i < 3; i++)
		if (name_index(fns[i]) == 0) /* mfn_a(u64, u32) */
			CHECK(cuLaunchKernel(fns[i], 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	n = 99;
	CHECK(cuModuleGetFunctionCount(&n, empty));
	REQUIRE(n == 0, "a module of no kernels: count %u", n);
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleGetFunctionCount(NULL, mod));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleEnumerateFunctions(NULL, 3, mod));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunctionCount(&n, (CUmodule)fns[0]));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuModuleEnumerateFunctions(fns, 3, NULL));
	return 0;
}

struct visits {
	unsigned n;
	CUfunction f[8];
	CUmodule owner[8];
};

static void visit(void *user, CUfunction f, CUmodule owner)
{
	struct visits *v = user;

	if (v->n < 8) {
		v->f[v->n] = f;
		v->owner[v->n] = owner;
	}
	v->n++;
}

typedef unsigned (*module_functions_fn)(CUcontext, CUmodule, void (*)(void *, CUfunction, CUmodule), void *);

static int slot7(CUmodule mod, CUmodule empty)
{
	static const CUuuid id = { { 0x6e, 0x16, 0x3f, 0xbe, (char)0xb9, 0x58, 0x44, 0x4d, (char)0x83, 0x5c,
				     (char)0xe1, (char)0x82, (char)0xaf, (char)0xf1, (char)0x99, 0x1e } };
	const void *t = NULL;
	module_functions_fn fn;
	struct visits v = { 0 };
	CUfunction fns[3];
	CUcontext ctx;
	unsigned r;

	CHECK(cuGetExportTable(&t, &id));
	REQUIRE(((const uintptr_t *)t)[0] > 7 * sizeof(void *), "table too small for slot 7");
	fn = (module_functions_fn)((const uintptr_t *)t)[7];
	CHECK(cuCtxGetCurrent(&ctx));
	r = fn(ctx, mod, visit, &v);
	REQUIRE(r == 3 && v.n == 3, "slot 7 returned %u after %u visits, expected 3 and 3", r, v.n);
	require_all_names(v.f, 3);
	CHECK(cuModuleEnumerateFunctions(fns, 3, mod));
	for (unsigned i = 0; i < 3; i++) {
		REQUIRE(v.owner[i] == mod, "visit %u: module %p, expected %p", i, (void *)v.owner[i], (void *)mod);
		REQUIRE(v.f[0] == fns[i] || v.f[1] == fns[i] || v.f[2] == fns[i],
			"enumerated function %u was not visited", i);
	}
	v.n = 0;
	r = fn(ctx, empty, visit, &v);
	REQUIRE(r == 0 && v.n == 0, "a module of no kernels: slot 7 returned %u after %u visits", r, v.n);
	r = fn(ctx, (CUmodule)fns[0], visit, &v);
	REQUIRE(r == 0 && v.n == 0, "a function as module: slot 7 returned %u after %u visits", r, v.n);
	return 0;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule mod, empty;
	int rc;

	if (argc != 2 || (strcmp(argv[1], "enumerate") && strcmp(argv[1], "slot7"))) {
		fprintf(stderr, "usage: %s enumerate|slot7\n", argv[0]);
		return 2;
	}
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoadData(&mod, ptx3));
	CHECK(cuModuleLoadData(&empty, ptx0));
	rc = !strcmp(argv[1], "enumerate") ? enumerate(mod, empty) : slot7(mod, empty);
	CHECK(cuModuleUnload(mod));
	CHECK(cuModuleUnload(empty));
	if (!rc)
		printf("PASS\n");
	return rc;
}
