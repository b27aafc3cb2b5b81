/* cuGetProcAddress (v1 ABI, 4 arguments) and cuGetProcAddress_v2
 * (5 arguments): forwarded and logged. The pointer the real driver returns
 * is handed back unchanged, except that the probe's own functions replace
 * the real cuGetProcAddress(_v2), cuGetExportTable, cuInit,
 * cuDriverGetVersion and cuDeviceGetCount (so callers keep coming through
 * the probe), and that with PROBE_WRAP_PROCS=1 every other pointer is
 * replaced by a counting thunk. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "probe.h"

PROBE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                       uint64_t flags);
PROBE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                          uint64_t flags, int *symbolStatus);
PROBE_EXPORT CUresult cuGetExportTable(const void **table, const probe_uuid *id);
PROBE_EXPORT CUresult cuInit(unsigned flags);
PROBE_EXPORT CUresult cuDriverGetVersion(int *version);
PROBE_EXPORT CUresult cuDeviceGetCount(int *count);

/* Counting thunks and error-logging thunks (thunks.S). */
extern char probe_pw_thunks[] PROBE_HIDDEN;
extern char probe_pe_thunks[] PROBE_HIDDEN;
extern void *probe_pw_target[] PROBE_HIDDEN;
extern _Atomic uint64_t probe_pw_count[] PROBE_HIDDEN;

static const char *pw_name[PROBE_PW_NTHUNK];
static unsigned pw_used;
static int pw_full_logged;
static pthread_mutex_t pw_lock = PTHREAD_MUTEX_INITIALIZER;

void *probe_count_wrap(void *target, const char *name) {
    if (!probe_cfg.wrap_procs || !target)
        return target;
    void *res = target;
    pthread_mutex_lock(&pw_lock);
    unsigned i;
    for (i = 0; i < pw_used; i++)
        if (probe_pw_target[i] == target)
            break;
    if (i == pw_used && pw_used < PROBE_PW_NTHUNK) {
        probe_pw_target[i] = target;
        pw_name[i] = name; /* names are string literals or caller's constants */
        pw_used++;
    }
    if (i < pw_used)
        res = (probe_cfg.wrap_procs > 1 ? probe_pe_thunks : probe_pw_thunks) + (size_t)i * PROBE_THUNK_STRIDE;
    else if (!pw_full_logged) {
        pw_full_logged = 1;
        char buf[512];
        struct jb j;
        jb_begin(&j, buf, sizeof buf, "note", NULL);
        jb_kstr(&j, "msg", "counting thunk pool full; later pointers are not counted");
        jb_end(&j);
    }
    pthread_mutex_unlock(&pw_lock);
    return res;
}

/* PROBE_WRAP_PROCS=2: the calling thunks' two halves. rec is the
 * thunk frame's record area (at least 16 bytes, 16-aligned). */
struct pe_rec {
    uint32_t idx;
    const void *retaddr;
};
#define PE_ERRORS_LOGGED 20 /* per function; later errors are only counted */
static _Atomic uint32_t pe_errors[PROBE_PW_NTHUNK];

PROBE_HIDDEN void *probe_pe_pre(uint32_t idx, const uint64_t *gp, const void *retaddr, struct pe_rec *rec);
PROBE_HIDDEN void probe_pe_post(struct pe_rec *rec, uint64_t rax);

void *probe_pe_pre(uint32_t idx, const uint64_t *gp, const void *retaddr, struct pe_rec *rec) {
    (void)gp;
    rec->idx = idx;
    rec->retaddr = retaddr;
    atomic_fetch_add(&probe_pw_count[idx], 1);
    return probe_pw_target[idx];
}

void probe_pe_post(struct pe_rec *rec, uint64_t rax) {
    CUresult rc = (CUresult)(uint32_t)rax;
    if (rc == 0 || atomic_fetch_add(&pe_errors[rec->idx], 1) >= PE_ERRORS_LOGGED)
        return;
    char buf[1024], sym[256];
    struct jb j;
    jb_begin(&j, buf, sizeof buf, "proc_error", rec->retaddr);
    jb_kstr(&j, "sym", pw_name[rec->idx] ? pw_name[rec->idx] : "?");
    probe_symname(probe_pw_target[rec->idx], sym, sizeof sym);
    jb_kstr(&j, "target", sym);
    jb_ki64(&j, "rc", rc);
    jb_end(&j);
}

static uint64_t pw_count(unsigned i) {
    return atomic_load(&probe_pw_count[i]);
}

static void pw_count_elem(struct jb *j, unsigned i, uint64_t n, int first) {
    char sym[256];
    probe_symname(probe_pw_target[i], sym, sizeof sym);
    jb_raw(j, first ? "{\"name\":" : ",{\"name\":");
    jb_str(j, pw_name[i]);
    jb_kstr(j, "real_sym", sym);
    jb_ku64(j, "n", n);
    jb_raw(j, "}");
}

void probe_dump_counts(void) {
    if (!probe_cfg.wrap_procs)
        return;
    static char buf[1 << 17];
    jb_count_list(buf, sizeof buf, "proc_counts", pw_used, pw_count, pw_count_elem);
}

/* Real export -> the probe's function of the same name. */
struct own_fn {
    const char *name;
    void **real;
    void *own;
};
static struct own_fn own_fns[6];

void probe_procaddr_init(void) {
    struct own_fn t[6] = {
        {"cuGetProcAddress", (void **)&probe_real.cuGetProcAddress, (void *)cuGetProcAddress},
        {"cuGetProcAddress_v2", (void **)&probe_real.cuGetProcAddress_v2,
         (void *)cuGetProcAddress_v2},
        {"cuGetExportTable", (void **)&probe_real.cuGetExportTable, (void *)cuGetExportTable},
        {"cuInit", (void **)&probe_real.cuInit, (void *)cuInit},
        {"cuDriverGetVersion", (void **)&probe_real.cuDriverGetVersion,
         (void *)cuDriverGetVersion},
        {"cuDeviceGetCount", (void **)&probe_real.cuDeviceGetCount, (void *)cuDeviceGetCount},
    };
    memcpy(own_fns, t, sizeof t);
}

/* Decides what to hand back for a pointer the real driver returned. */
static void *redirect(const char *symbol, void *p, int version, const char **how) {
    *how = "real";
    if (!p)
        return p;
    for (unsigned i = 0; i < 6; i++)
        if (*own_fns[i].real && p == *own_fns[i].real) {
            *how = "own";
            return own_fns[i].own;
        }
    /* A name we must keep but a pointer that is no export we know. */
    if (symbol && !strcmp(symbol, "cuGetProcAddress")) {
        *how = "own";
        return version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
    }
    if (symbol && !strcmp(symbol, "cuGetExportTable")) {
        *how = "own";
        return (void *)cuGetExportTable;
    }
    if (probe_cfg.wrap_procs) {
        void *w = probe_count_wrap(p, symbol);
        if (w != p)
            *how = "count";
        return w;
    }
    return p;
}

static void log_proc(const char *api, const void *ret, const char *symbol, int version,
                     uint64_t flags, CUresult rc, const int *status, void *real_ptr,
                     void *handed, const char *how) {
    char buf[2048];
    struct jb j;
    jb_begin(&j, buf, sizeof buf, "proc", ret);
    jb_kstr(&j, "api", api);
    jb_kstr(&j, "sym", symbol);
    jb_ki64(&j, "ver", version);
    jb_ku64(&j, "flags", flags);
    jb_ki64(&j, "rc", rc);
    if (status)
        jb_ki64(&j, "status", *status);
    jb_khex(&j, "ptr", (uint64_t)(uintptr_t)real_ptr);
    char sym[256];
    probe_symname(real_ptr, sym, sizeof sym);
    jb_kstr(&j, "real_sym", sym);
    if (real_ptr && !sym[0])
        jb_ksym(&j, "real_where", real_ptr);
    jb_kstr(&j, "ret", how);
    if (handed != real_ptr)
        jb_khex(&j, "handed", (uint64_t)(uintptr_t)handed);
    jb_end(&j);
}

/* Symbols are copied into a small intern table so counting-thunk names stay
 * valid after the caller frees its string. */
static const char *intern(const char *s) {
    static char pool[1 << 16];
    static size_t used;
    static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
    if (!s)
        return "?";
    const char *res = "?";
    pthread_mutex_lock(&lk);
    for (size_t i = 0; i < used;) {
        if (!strcmp(pool + i, s)) {
            res = pool + i;
            goto out;
        }
        i += strlen(pool + i) + 1;
    }
    size_t n = strlen(s) + 1;
    if (used + n <= sizeof pool) {
        memcpy(pool + used, s, n);
        res = pool + used;
        used += n;
    }
out:
    pthread_mutex_unlock(&lk);
    return res;
}

/* What both entry points do with the real driver's answer: the pointer
 * handed out instead where one is redirected, and the log line. */
static void hand_out(const char *api, const void *ret, const char *symbol, void **pfn, int cudaVersion,
                     uint64_t flags, CUresult rc, const int *status) {
    void *p = pfn ? *pfn : NULL;
    const char *how = "real";
    void *q = redirect(probe_cfg.wrap_procs ? intern(symbol) : symbol, p, cudaVersion, &how);
    if (pfn && q != p)
        *pfn = q;
    log_proc(api, ret, symbol, cudaVersion, flags, rc, status, p, q, how);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, uint64_t flags,
                             int *symbolStatus) {
    const void *ret = __builtin_return_address(0);
    probe_need_real((const void *)probe_real.cuGetProcAddress_v2, "cuGetProcAddress_v2");
    CUresult rc = probe_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
    hand_out("v2", ret, symbol, pfn, cudaVersion, flags, rc, symbolStatus);
    return rc;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, uint64_t flags) {
    const void *ret = __builtin_return_address(0);
    probe_need_real((const void *)probe_real.cuGetProcAddress, "cuGetProcAddress");
    CUresult rc = probe_real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    hand_out("v1", ret, symbol, pfn, cudaVersion, flags, rc, NULL);
    return rc;
}
