/* A fake "real driver" for the CPU test: a handful of cu* exports, a
 * cuGetProcAddress that resolves to its own functions, and export tables
 * whose slots write through out pointers and return values. */
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "fake_api.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- plain exports ---- */
EXPORT int fake_init_calls;

EXPORT int cuInit(unsigned flags) {
    fake_init_calls++;
    return flags == 0 ? 0 : FAKE_ERR_INVALID_DEVICE;
}

EXPORT int cuDriverGetVersion(int *v) {
    if (!v)
        return 1;
    *v = FAKE_DRIVER_VERSION;
    return 0;
}

EXPORT int cuDeviceGetCount(int *n) {
    if (!n)
        return 1;
    *n = FAKE_DEVICE_COUNT;
    return 0;
}

EXPORT int cuMemAlloc_v2(uint64_t *p, size_t size) {
    *p = 0x100000 + size;
    return 0;
}

EXPORT int cuMemFree_v2(uint64_t p) { return p == 0x1234 ? 0 : 1; }

/* Eleven arguments: the pure forwarder must pass the stack ones through. */
EXPORT int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shmem, void *stream, void **params,
                          void **extra) {
    (void)f;
    (void)params;
    return (int)(gx + 2 * gy + 3 * gz + 4 * bx + 5 * by + 6 * bz + 7 * shmem) +
           (stream ? 1000 : 0) + (extra ? 2000 : 0);
}

/* Not exported: what dladdr cannot name. */
__attribute__((noinline)) static int launch_ptsz(void *f, unsigned gx) {
    (void)f;
    return (int)gx + 77;
}

/* ---- export tables ---- */
EXPORT int fake_a1(uint64_t *out, uint64_t a) {
    *out = 3 * a + 1;
    return 0x11;
}

EXPORT int fake_a2(int a, int b, int c, int d, int e, int f, int g, int h, uint64_t *out) {
    *out = (uint64_t)(a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h);
    return (int)(*out & 0xffff);
}

EXPORT double fake_a3(double x, double y, uint64_t *out) {
    *out = (uint64_t)(x * 1000.0);
    return x * y;
}

EXPORT int fake_a4(uint64_t *out, int n, ...) {
    va_list ap;
    va_start(ap, n);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += va_arg(ap, double);
    va_end(ap);
    *out = (uint64_t)(s * 10.0);
    return n;
}

EXPORT struct fake_pair fake_a5(uint64_t a, uint64_t b) {
    struct fake_pair p = {a + b, a * b};
    return p;
}

static void *cls_key, *cls_val;
EXPORT int fake_cls_put(void *ctx, void *key, void *val, void (*dtor)(void *, void *, void *)) {
    (void)ctx;
    (void)dtor;
    cls_key = key;
    cls_val = val;
    return 0;
}
EXPORT int fake_cls_del(void *ctx, void *key) {
    (void)ctx;
    if (key != cls_key)
        return FAKE_ERR_NOT_FOUND;
    cls_key = cls_val = NULL;
    return 0;
}
EXPORT int fake_cls_get(void **out, void *ctx, void *key) {
    (void)ctx;
    if (!cls_key || key != cls_key)
        return FAKE_ERR_NOT_FOUND;
    *out = cls_val;
    return 0;
}

EXPORT int fake_c1(void **out, int dev) {
    *out = (void *)(uintptr_t)(0xc0ffee00u + (unsigned)dev);
    return 0;
}
EXPORT int fake_c2(uint32_t *out) {
    *out = 0xcafe;
    return 0;
}

EXPORT int fake_i1(unsigned version, uint64_t ts, uint64_t res[2]) {
    res[0] = (uint64_t)version * 7;
    res[1] = ts ^ 0x55;
    return 0;
}
EXPORT int fake_i2(void *p) {
    (void)p;
    return 999;
}

EXPORT int fake_f1(uint64_t *out) {
    *out = 0xf1;
    return 1;
}
EXPORT int fake_f2(uint64_t *out) {
    *out = 0xf2;
    return 2;
}
EXPORT int fake_f3(uint64_t *out) {
    *out = 0xf3f3;
    return 3;
}

/* const tables with relocations land in .data.rel.ro, read-only after
 * relocation (the library is linked with -z relro -z now), like the real
 * driver's: the probe's in-place patching must mprotect them. */
static const void *const plain_tab[] = {(void *)(6 * 8), (void *)fake_a1, (void *)fake_a2,
                                        (void *)fake_a3, (void *)fake_a4, (void *)fake_a5};
static const void *const cls_tab[] = {(void *)fake_cls_put, (void *)fake_cls_del,
                                      (void *)fake_cls_get, NULL};
static const void *const cudart_tab[] = {(void *)(4 * 8), (void *)fake_c1, (void *)fake_c2,
                                         NULL};
static const void *const integ_tab[] = {(void *)(3 * 8), (void *)fake_i1, (void *)fake_i2};
static const void *const comp_tab[] = {(void *)(3 * 8), (void *)fake_f1, (void *)fake_f2,
                                       (void *)(2 * 8), (void *)fake_f3, NULL};

static const struct {
    fake_uuid id;
    const void *const *tab;
} tables[] = {
    {UUID_PLAIN, plain_tab}, {UUID_CLS, cls_tab},   {UUID_CUDART, cudart_tab},
    {UUID_INTEG, integ_tab}, {UUID_COMP, comp_tab},
};

/* For the test: the real table behind a UUID. */
EXPORT const void *fake_table_ptr(const fake_uuid *id) {
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        if (!memcmp(tables[i].id.bytes, id->bytes, 16))
            return tables[i].tab;
    return NULL;
}

EXPORT int cuGetExportTable(const void **pp, const fake_uuid *id) {
    if (!pp || !id)
        return 1;
    const void *t = fake_table_ptr(id);
    if (!t)
        return FAKE_ERR_NOT_FOUND;
    *pp = t;
    return 0;
}

/* ---- cuGetProcAddress ---- */
EXPORT int cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags,
                               int *status);

EXPORT int cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags) {
    return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}

int cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *status) {
    if (!sym || !pfn)
        return 1;
    void *p = NULL;
    int st = 0, rc = 0;
    if (!strcmp(sym, "cuInit"))
        p = (void *)cuInit;
    else if (!strcmp(sym, "cuDriverGetVersion"))
        p = (void *)cuDriverGetVersion;
    else if (!strcmp(sym, "cuDeviceGetCount"))
        p = (void *)cuDeviceGetCount;
    else if (!strcmp(sym, "cuGetExportTable"))
        p = (void *)cuGetExportTable;
    else if (!strcmp(sym, "cuGetProcAddress"))
        p = ver >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
    else if (!strcmp(sym, "cuMemAlloc")) {
        if (ver >= 3020)
            p = (void *)cuMemAlloc_v2;
        else {
            st = 2;
            rc = FAKE_ERR_NOT_FOUND;
        }
    } else if (!strcmp(sym, "cuMemFree"))
        p = (void *)cuMemFree_v2;
    else if (!strcmp(sym, "cuLaunchKernel"))
        p = (flags & 2) ? (void *)launch_ptsz : (void *)cuLaunchKernel;
    else
        st = 1;
    *pfn = p;
    if (status)
        *status = st;
    return rc;
}
