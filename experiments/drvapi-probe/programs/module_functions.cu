// What export table 6e163fbe slot 7 does, asked of the driver directly (the
// slot cuFFT calls after loading a module; guest/libcuda/exptables.c serves
// it), and whether a runtime call leaves the primary context current.
// Built with -cudart shared -lcuda; run natively and through mearas
// (LD_LIBRARY_PATH=build/lib) and diff the outputs: lines starting with '#'
// carry addresses and orders, for reading, not comparing.
//
// Slot 7 is called as (context, module, visit, user) with a visit that
// records every argument register it gets, on modules of PTX: one kernel
// (which is then launched to show the handle works), three kernels, none;
// with a NULL context; and, as modes of their own in case the driver
// crashes, with a NULL visit (null-visit) and with a function handle as
// the module (bad-module).
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

// CHECK: a driver call must succeed, else "FAIL: CALL returned NAME at line N"
#include "../../../tests/sim/drv_check.h"

#define CKRT(call)                                                                                 \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            printf("FAIL: %s returned %s at line %d\n", #call, cudaGetErrorName(e_), __LINE__);    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static const char ptx_one[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                              ".visible .entry k_one(.param .u64 p)\n{\n"
                              "\t.reg .b64 %rd<3>;\n\t.reg .b32 %r<2>;\n"
                              "\tld.param.u64 %rd1, [p];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
                              "\tmov.u32 %r1, 42;\n\tst.global.u32 [%rd2], %r1;\n\tret;\n}\n";
static const char ptx_three[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                                ".visible .entry k_c(.param .u64 p)\n{\n\tret;\n}\n"
                                ".visible .entry k_a(.param .u64 p, .param .u32 n)\n{\n\tret;\n}\n"
                                ".visible .entry k_b()\n{\n\tret;\n}\n";
static const char ptx_none[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                               ".visible .global .align 4 .u32 only_a_variable;\n";

struct visit_rec {
    uint64_t a[6];
};
struct visits {
    std::vector<visit_rec> v;
};

// six integer argument registers: whatever the driver passes is recorded
static void visit(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
    visits *vs = (visits *)(uintptr_t)a0;
    vs->v.push_back({ { a0, a1, a2, a3, a4, a5 } });
}

typedef uint64_t (*slot7_fn)(CUcontext, CUmodule, void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                                                           uint64_t),
                             void *);
static slot7_fn slot7;

static const char *what(uint64_t x, CUcontext ctx, CUmodule mod, uint64_t fn)
{
    if (!x)
        return "null";
    if (x == (uint64_t)(uintptr_t)mod)
        return "the module";
    if (x == (uint64_t)(uintptr_t)ctx)
        return "the context";
    if (x == fn)
        return "the function";
    return "another value";
}

static std::string name_of(uint64_t f)
{
    const char *n = nullptr;
    CUresult r = cuFuncGetName(&n, (CUfunction)(uintptr_t)f);
    return r == CUDA_SUCCESS && n ? n : "(no name: " + std::to_string((int)r) + ")";
}

// slot 7 on mod; prints the return, the visits and their arguments
static visits call(const char *label, CUcontext ctx, CUmodule mod, CUcontext cur)
{
    visits vs;
    uint64_t r = slot7(ctx, mod, visit, &vs);
    printf("%s: slot 7 returned %llu (32 bits: %u), %zu visit(s)\n", label, (unsigned long long)r,
           (unsigned)r, vs.v.size());
    std::vector<std::string> names;
    for (const visit_rec &v : vs.v) {
        names.push_back(name_of(v.a[1]));
        printf("# %s: visit(%#llx, %#llx, %#llx, %#llx) name %s; third argument is %s\n", label,
               (unsigned long long)v.a[0], (unsigned long long)v.a[1], (unsigned long long)v.a[2],
               (unsigned long long)v.a[3], names.back().c_str(), what(v.a[2], cur, mod, v.a[1]));
    }
    std::sort(names.begin(), names.end());
    for (const std::string &n : names)
        printf("%s: visited %s\n", label, n.c_str());
    if (!vs.v.empty())
        printf("%s: visit's third argument is %s\n", label, what(vs.v[0].a[2], cur, mod, vs.v[0].a[1]));
    return vs;
}

// label: one call whose driver answer may be a crash (its own process run)
static void risky(const char *label, CUcontext ctx, CUmodule mod, bool null_visit)
{
    visits vs;
    printf("%s: calling\n", label);
    fflush(stdout);
    uint64_t r = slot7(ctx, mod, null_visit ? nullptr : visit, &vs);
    printf("%s: slot 7 returned %llu, %zu visit(s)\n", label, (unsigned long long)r, vs.v.size());
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";

    CUcontext cur = nullptr, prim = nullptr, popped = nullptr;
    void *p = nullptr;

    // a runtime call and the current context
    CKRT(cudaMalloc(&p, 64));
    CHECK(cuCtxGetCurrent(&cur));
    CHECK(cuDevicePrimaryCtxRetain(&prim, 0));
    printf("after cudaMalloc: device 0's primary context current: %s\n", cur == prim ? "yes" : cur ? "another" : "none");
    CHECK(cuCtxPopCurrent(&popped));
    CHECK(cuCtxGetCurrent(&cur));
    printf("after cuCtxPopCurrent: a context current: %s\n", cur ? "yes" : "no");
    CKRT(cudaFree(p));
    CHECK(cuCtxGetCurrent(&cur));
    printf("after cudaFree on an empty stack: device 0's primary context current: %s\n",
           cur == prim ? "yes" : cur ? "another" : "none");
    CHECK(cuCtxSetCurrent(prim));

    static const CUuuid id = { { 0x6e, 0x16, 0x3f, (char)0xbe, (char)0xb9, 0x58, 0x44, 0x4d, (char)0x83, 0x5c,
                                 (char)0xe1, (char)0x82, (char)0xaf, (char)0xf1, (char)0x99, 0x1e } };
    const void *t = nullptr;
    CHECK(cuGetExportTable(&t, &id));
    printf("table 6e163fbe: first word %llu\n", (unsigned long long)((const uint64_t *)t)[0]);
    slot7 = (slot7_fn)((const uintptr_t *)t)[7];

    CUmodule one, three, none;
    CHECK(cuModuleLoadData(&one, ptx_one));
    CHECK(cuModuleLoadData(&three, ptx_three));
    CHECK(cuModuleLoadData(&none, ptx_none));
    printf("# context %p, modules one %p three %p none %p\n", (void *)prim, (void *)one, (void *)three,
           (void *)none);

    if (!strcmp(mode, "null-visit")) {
        risky("one kernel, NULL visit", prim, one, true);
        return 0;
    }
    if (!strcmp(mode, "bad-module")) {
        CUfunction f1 = nullptr;
        CHECK(cuModuleGetFunction(&f1, one, "k_one"));
        risky("a function handle as module", prim, (CUmodule)f1, false);
        return 0;
    }
    visits v1 = call("one kernel", prim, one, prim);
    if (v1.v.size() == 1) {
        CUfunction byname = nullptr;
        CHECK(cuModuleGetFunction(&byname, one, "k_one"));
        printf("# one kernel: cuModuleGetFunction gives %p, slot 7 gave %#llx\n", (void *)byname,
               (unsigned long long)v1.v[0].a[1]);
        CUdeviceptr d;
        unsigned got = 0;
        CHECK(cuMemAlloc(&d, 4));
        CHECK(cuMemsetD32(d, 0, 1));
        void *args[] = { &d };
        CHECK(cuLaunchKernel((CUfunction)(uintptr_t)v1.v[0].a[1], 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
        CHECK(cuCtxSynchronize());
        CHECK(cuMemcpyDtoH(&got, d, 4));
        printf("one kernel: the visited function launched, wrote %u\n", got);
        CHECK(cuMemFree(d));
    }
    call("one kernel, second call", prim, one, prim);
    call("three kernels", prim, three, prim);
    call("no kernels", prim, none, prim);
    call("one kernel, NULL context", nullptr, one, prim);

    unsigned n = 0;
    CUresult r = cuModuleGetFunctionCount(&n, three);
    printf("cuModuleGetFunctionCount(three kernels): %d, %u\n", (int)r, n);
    if (r == CUDA_SUCCESS && n == 3) {
        CUfunction fns[3];
        CHECK(cuModuleEnumerateFunctions(fns, 3, three));
        std::vector<std::string> names;
        for (CUfunction f : fns)
            names.push_back(name_of((uint64_t)(uintptr_t)f));
        std::sort(names.begin(), names.end());
        for (const std::string &s : names)
            printf("cuModuleEnumerateFunctions(three kernels): %s\n", s.c_str());
    }

    printf("done\n");
    return 0;
}
