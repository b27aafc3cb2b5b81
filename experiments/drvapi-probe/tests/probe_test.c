/* CPU test of drvapi-probe: loads the probe as libcuda.so.1 (through
 * LD_LIBRARY_PATH) with PROBE_REAL_LIBCUDA pointing at libfakecuda.so, and
 * checks that calls through cuGetProcAddress, through forwarders and
 * through wrapped export-table slots give the same results and out-params
 * as calling the fake directly. The log it leaves is checked by
 * check_log.py. Prints one PASS/FAIL line per check. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_api.h"

static int npass, nfail;

static void check(int ok, const char *name, const char *fmt, ...) {
    if (ok) {
        printf("PASS %s\n", name);
        npass++;
        return;
    }
    printf("FAIL %s: ", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    nfail++;
}

typedef int (*init_fn)(unsigned);
typedef int (*intp_fn)(int *);
typedef int (*gpa2_fn)(const char *, void **, int, uint64_t, int *);
typedef int (*gpa1_fn)(const char *, void **, int, uint64_t);
typedef int (*xt_fn)(const void **, const fake_uuid *);
typedef int (*alloc_fn)(uint64_t *, size_t);
typedef int (*free_fn)(uint64_t);
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
typedef int (*launch2_fn)(void *, unsigned);
typedef const void *(*tabptr_fn)(const fake_uuid *);

static void *probe, *fake;

static void *sym(void *h, const char *name) {
    void *p = dlsym(h, name);
    if (!p) {
        printf("FAIL dlsym %s: %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

/* A callback whose address the probe should classify as code. */
void test_cls_dtor(void *a, void *b, void *c) {
    (void)a;
    (void)b;
    (void)c;
}

static plain1_fn thread_slot1;
static void *thread_main(void *arg) {
    uintptr_t base = (uintptr_t)arg;
    for (uint64_t i = 0; i < 50; i++) {
        uint64_t out = 0;
        int r = thread_slot1(&out, base + i);
        if (r != 0x11 || out != 3 * (base + i) + 1)
            return (void *)1;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--call-init")) {
        /* Only load the probe and call cuInit (run with a bad real path). */
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h)
            return 2;
        return ((init_fn)sym(h, "cuInit"))(0);
    }
    const char *real_path = getenv("PROBE_REAL_LIBCUDA");
    const char *wrap = getenv("PROBE_WRAP_PROCS");
    int wrap_mode = wrap && (!strcmp(wrap, "1") || !strcmp(wrap, "2"));
    if (!real_path) {
        printf("FAIL setup: PROBE_REAL_LIBCUDA unset\n");
        return 1;
    }
    probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!probe) {
        printf("FAIL setup: dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    Dl_info di;
    int is_probe = dladdr(sym(probe, "cuInit"), &di) && strstr(di.dli_fname, "/probe/");
    check(is_probe, "libcuda.so.1 resolves to the probe", "%s", di.dli_fname);
    fake = dlopen(real_path, RTLD_NOW | RTLD_NOLOAD);
    check(fake != NULL, "probe loaded the real driver by absolute path", "not loaded");
    if (!fake)
        return 1;
    tabptr_fn table_ptr = (tabptr_fn)sym(fake, "fake_table_ptr");

    /* ---- bootstrap calls ---- */
    init_fn p_init = (init_fn)sym(probe, "cuInit");
    int *init_calls = (int *)sym(fake, "fake_init_calls");
    int before = *init_calls;
    int r0 = p_init(0), r7 = p_init(7);
    check(r0 == 0 && r7 == FAKE_ERR_INVALID_DEVICE && *init_calls == before + 2,
          "cuInit result passes through", "rc %d %d calls %d", r0, r7, *init_calls - before);
    int v = 0;
    int rv = ((intp_fn)sym(probe, "cuDriverGetVersion"))(&v);
    check(rv == 0 && v == FAKE_DRIVER_VERSION, "cuDriverGetVersion out-param", "rc %d v %d", rv,
          v);
    int n = 0;
    int rn = ((intp_fn)sym(probe, "cuDeviceGetCount"))(&n);
    check(rn == 0 && n == FAKE_DEVICE_COUNT, "cuDeviceGetCount out-param", "rc %d n %d", rn, n);

    /* ---- pure forwarders ---- */
    free_fn p_free = (free_fn)sym(probe, "cuMemFree_v2");
    check((void *)p_free != dlsym(fake, "cuMemFree_v2"), "forwarder is the probe's own symbol",
          "same address as the fake");
    check(p_free(0x1234) == 0 && p_free(5) == 1, "forwarder passes args and results",
          "%d %d", p_free(0x1234), p_free(5));
    uint64_t dp = 0;
    int ra = ((alloc_fn)sym(probe, "cuMemAlloc_v2"))(&dp, 4096);
    check(ra == 0 && dp == 0x100000 + 4096, "forwarder out-param", "rc %d dp %llx", ra,
          (unsigned long long)dp);
    launch_fn p_launch = (launch_fn)sym(probe, "cuLaunchKernel");
    launch_fn f_launch = (launch_fn)sym(fake, "cuLaunchKernel");
    int lp = p_launch(NULL, 1, 2, 3, 4, 5, 6, 7, (void *)1, NULL, (void **)8);
    int lf = f_launch(NULL, 1, 2, 3, 4, 5, 6, 7, (void *)1, NULL, (void **)8);
    check(lp == lf, "forwarder with 11 args (stack args)", "%d vs %d", lp, lf);

    /* ---- cuGetProcAddress ---- */
    gpa2_fn gpa2 = (gpa2_fn)sym(probe, "cuGetProcAddress_v2");
    gpa1_fn gpa1 = (gpa1_fn)sym(probe, "cuGetProcAddress");
    void *pf = NULL;
    int st = -1;
    int rg = gpa2("cuMemAlloc", &pf, 12000, 0, &st);
    void *fake_alloc = dlsym(fake, "cuMemAlloc_v2");
    if (wrap_mode)
        check(rg == 0 && st == 0 && pf && pf != fake_alloc,
              "gpa_v2 cuMemAlloc gives a counting thunk (PROBE_WRAP_PROCS=1)", "rc %d st %d", rg,
              st);
    else
        check(rg == 0 && st == 0 && pf == fake_alloc, "gpa_v2 cuMemAlloc gives the real pointer",
              "rc %d st %d pf %p", rg, st, pf);
    dp = 0;
    ra = pf ? ((alloc_fn)pf)(&dp, 8) : -1;
    check(ra == 0 && dp == 0x100008, "pointer from gpa_v2 works", "rc %d dp %llx", ra,
          (unsigned long long)dp);
    pf = (void *)1;
    st = -1;
    rg = gpa2("cuMemAlloc", &pf, 3000, 0, &st);
    check(rg == FAKE_ERR_NOT_FOUND && st == 2 && pf == NULL,
          "gpa_v2 rc and symbolStatus pass through (version not sufficient)", "rc %d st %d pf %p",
          rg, st, pf);
    pf = (void *)1;
    rg = gpa2("cuNoSuchThing", &pf, 13000, 0, &st);
    check(rg == 0 && st == 1 && pf == NULL, "gpa_v2 unknown name: NULL, SYMBOL_NOT_FOUND",
          "rc %d st %d pf %p", rg, st, pf);
    rg = gpa2("cuGetProcAddress", &pf, 12000, 0, &st);
    check(rg == 0 && pf == (void *)gpa2, "gpa_v2 'cuGetProcAddress' (12000) returns the probe's v2",
          "pf %p", pf);
    rg = gpa2("cuGetProcAddress", &pf, 11080, 0, &st);
    check(rg == 0 && pf == (void *)gpa1, "gpa_v2 'cuGetProcAddress' (11080) returns the probe's v1",
          "pf %p", pf);
    rg = gpa2("cuGetExportTable", &pf, 13000, 0, &st);
    check(rg == 0 && pf == sym(probe, "cuGetExportTable"),
          "gpa_v2 'cuGetExportTable' returns the probe's", "pf %p", pf);
    rg = gpa1("cuInit", &pf, 2000, 0);
    check(rg == 0 && pf == (void *)p_init, "gpa_v1 'cuInit' returns the probe's cuInit", "pf %p",
          pf);
    rg = gpa2("cuLaunchKernel", &pf, 7000, 2, &st);
    int lk = (rg == 0 && pf) ? ((launch2_fn)pf)(NULL, 5) : -1;
    check(lk == 82, "gpa_v2 flags=2 gives the fake's internal ptsz function", "rc %d -> %d", rg,
          lk);

    /* ---- export tables ---- */
    xt_fn gxt = (xt_fn)sym(probe, "cuGetExportTable");
    fake_uuid u_plain = UUID_PLAIN, u_cls = UUID_CLS, u_cudart = UUID_CUDART,
              u_integ = UUID_INTEG, u_comp = UUID_COMP, u_unknown = UUID_UNKNOWN;

    const void **tp = NULL;
    int rt = gxt((const void **)&tp, &u_plain);
    const void *const *real_plain = table_ptr(&u_plain);
    check(rt == 0 && tp && (const void *)tp != (const void *)real_plain,
          "plain table: handed a copy", "rc %d tp %p real %p", rt, (void *)tp,
          (const void *)real_plain);
    if (rt != 0 || !tp)
        return 1;
    check(tp[0] == real_plain[0], "copy keeps slot 0 (size)", "%p vs %p", tp[0], real_plain[0]);
    int all_wrapped = 1;
    for (int s = 1; s <= 5; s++)
        all_wrapped &= tp[s] != NULL && tp[s] != real_plain[s];
    check(all_wrapped, "every function slot of the copy is a thunk", "a slot is unwrapped");

    uint64_t o1 = 0, o2 = 0;
    int s1 = ((plain1_fn)tp[1])(&o1, 5);
    int d1 = ((plain1_fn)real_plain[1])(&o2, 5);
    check(s1 == d1 && s1 == 0x11 && o1 == o2 && o1 == 16, "slot 1: result and out-param",
          "%d/%d %llu/%llu", s1, d1, (unsigned long long)o1, (unsigned long long)o2);
    o1 = o2 = 0;
    int s2 = ((plain2_fn)tp[2])(1, 2, 3, 4, 5, 6, 7, 8, &o1);
    int d2 = ((plain2_fn)real_plain[2])(1, 2, 3, 4, 5, 6, 7, 8, &o2);
    check(s2 == d2 && o1 == o2 && o1 == 204, "slot 2: 9 args, three on the stack",
          "%d/%d %llu/%llu", s2, d2, (unsigned long long)o1, (unsigned long long)o2);
    o1 = o2 = 0;
    double s3 = ((plain3_fn)tp[3])(1.5, 2.25, &o1);
    double d3 = ((plain3_fn)real_plain[3])(1.5, 2.25, &o2);
    check(s3 == d3 && s3 == 3.375 && o1 == o2 && o1 == 1500,
          "slot 3: xmm arguments and xmm result", "%g/%g %llu/%llu", s3, d3,
          (unsigned long long)o1, (unsigned long long)o2);
    o1 = o2 = 0;
    int s4 = ((plain4_fn)tp[4])(&o1, 3, 1.5, 2.5, 3.25);
    int d4 = ((plain4_fn)real_plain[4])(&o2, 3, 1.5, 2.5, 3.25);
    check(s4 == d4 && s4 == 3 && o1 == o2 && o1 == 72, "slot 4: varargs doubles (al kept)",
          "%d/%d %llu/%llu", s4, d4, (unsigned long long)o1, (unsigned long long)o2);
    struct fake_pair p5 = ((plain5_fn)tp[5])(6, 7);
    check(p5.a == 13 && p5.b == 42, "slot 5: struct result in rax:rdx", "%llu %llu",
          (unsigned long long)p5.a, (unsigned long long)p5.b);

    const void **tp2 = NULL;
    gxt((const void **)&tp2, &u_plain);
    check(tp2 == tp, "a repeated request gets the same copy", "%p vs %p", (void *)tp2,
          (void *)tp);

    /* header-less (context local storage) */
    const void **tc = NULL;
    rt = gxt((const void **)&tc, &u_cls);
    const void *const *real_cls = table_ptr(&u_cls);
    check(rt == 0 && tc && (const void *)tc != (const void *)real_cls && tc[0] != real_cls[0] &&
              tc[1] != real_cls[1] && tc[2] != real_cls[2] && tc[3] == NULL,
          "header-less table: copy, 3 thunks, NULL terminator kept", "rc %d", rt);
    if (rt == 0 && tc) {
        int key, val;
        void *got = NULL;
        int rp = ((cls_put_fn)tc[0])(NULL, &key, &val, test_cls_dtor);
        int rgt = ((cls_get_fn)tc[2])(&got, NULL, &key);
        int rmiss = ((cls_get_fn)tc[2])(&got, NULL, &val);
        int rd = ((cls_del_fn)tc[1])(NULL, &key);
        check(rp == 0 && rgt == 0 && got == &val && rmiss == FAKE_ERR_NOT_FOUND && rd == 0,
              "header-less slots: put/get/del results and out-param", "%d %d %d %d", rp, rgt,
              rmiss, rd);
    }

    /* the two hashed tables: patched in place */
    const void **tr = NULL;
    rt = gxt((const void **)&tr, &u_cudart);
    const void *const *real_cudart = table_ptr(&u_cudart);
    Dl_info d_slot;
    int slot1_in_probe = rt == 0 && tr && dladdr(tr[1], &d_slot) && strstr(d_slot.dli_fname, "/probe/");
    check(rt == 0 && (const void *)tr == (const void *)real_cudart && slot1_in_probe &&
              tr[3] == NULL,
          "6bd5fb6c: same table address, slots patched in place, NULL slot left", "rc %d",
          rt);
    if (rt == 0 && tr) {
        void *ctx = NULL;
        uint32_t c2 = 0;
        int rc1 = ((cudart1_fn)tr[1])(&ctx, 2);
        int rc2 = ((cudart2_fn)tr[2])(&c2);
        check(rc1 == 0 && ctx == (void *)(uintptr_t)0xc0ffee02 && rc2 == 0 && c2 == 0xcafe,
              "patched slots: results and out-params", "%d %p %d %x", rc1, ctx, rc2, c2);
    }
    const void **ti = NULL;
    rt = gxt((const void **)&ti, &u_integ);
    const void *const *real_integ = table_ptr(&u_integ);
    void *fake_i1 = dlsym(fake, "fake_i1");
    check(rt == 0 && (const void *)ti == (const void *)real_integ && ti[1] == fake_i1 &&
              ti[2] != dlsym(fake, "fake_i2"),
          "d4082055: same address, slot 1 untouched, slot 2 patched", "rc %d", rt);
    if (rt == 0 && ti) {
        uint64_t res[2] = {0, 0};
        int r1 = ((integ1_fn)ti[1])(13002, 0x1000, res);
        int r2 = ((integ2_fn)ti[2])(res);
        check(r1 == 0 && res[0] == 13002 * 7 && res[1] == (0x1000 ^ 0x55) && r2 == 999,
              "d4082055 slots still work", "%d %d", r1, r2);
    }

    /* composite: a slot past the header count is still callable */
    const void **tq = NULL;
    rt = gxt((const void **)&tq, &u_comp);
    if (rt == 0 && tq) {
        uint64_t out = 0;
        int r4 = ((comp_fn)tq[4])(&out);
        check(tq[0] == (void *)24 && tq[3] == (void *)16 && r4 == 3 && out == 0xf3f3,
              "composite table: slot 4 past the 3-slot header works", "%d %llx", r4,
              (unsigned long long)out);
    } else {
        check(0, "composite table handed", "rc %d", rt);
    }

    const void *tu = (const void *)0x5555;
    rt = gxt(&tu, &u_unknown);
    check(rt == FAKE_ERR_NOT_FOUND && tu == (const void *)0x5555,
          "unknown UUID: error passes through, pointer untouched", "rc %d tu %p", rt, tu);

    /* threads through one thunk */
    thread_slot1 = (plain1_fn)tp[1];
    pthread_t th[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, thread_main, (void *)(i * 1000));
    int thread_ok = 1;
    for (int i = 0; i < 4; i++) {
        void *res;
        pthread_join(th[i], &res);
        thread_ok &= res == NULL;
    }
    check(thread_ok, "4 threads x 50 calls through a thunk", "a result was wrong");

    /* a symbol the real driver lacks aborts with its name */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", 1);
        dup2(devnull, 2);
        typedef int (*ctx4_fn)(void *, void *, unsigned, int);
        ((ctx4_fn)sym(probe, "cuCtxCreate_v4"))(NULL, NULL, 0, 0);
        _exit(0);
    }
    int wst = 0;
    waitpid(pid, &wst, 0);
    check(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGABRT, "missing symbol aborts",
          "status 0x%x", wst);

    printf("probe_test: %d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
