/* Load-time setup: settings, the real driver (dlopen by absolute path, never
 * ourselves), the forwarder pointer table, the header line; exit-time call
 * counts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe.h"

#include "version.h" /* PROBE_VERSION, written by the Makefile */

#define DEFAULT_REAL "/usr/lib/x86_64-linux-gnu/libcuda.so.1"

struct probe_settings probe_cfg;
void *probe_real_handle;
char probe_real_path[4096];
struct probe_real probe_real;

static char real_err[512];
static const char *real_source = "none";

static unsigned env_uint(const char *name, unsigned dflt) {
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    return (unsigned)strtoul(v, NULL, 0);
}

static void read_settings(void) {
    probe_cfg.wrap_procs = (int)env_uint("PROBE_WRAP_PROCS", 0) > 1 ? 2 : env_uint("PROBE_WRAP_PROCS", 0) != 0;
    probe_cfg.xt_wrap = env_uint("PROBE_XT_WRAP", 1) != 0;
    probe_cfg.dump_bytes = env_uint("PROBE_DUMP", 64);
    if (probe_cfg.dump_bytes > PROBE_DUMP_MAX)
        probe_cfg.dump_bytes = PROBE_DUMP_MAX;
    probe_cfg.xt_max_lines = env_uint("PROBE_XT_MAX_LINES", 500);
    const char *h = getenv("PROBE_HASHED_TABLES");
    probe_cfg.hashed_mode = 0;
    if (h && !strcmp(h, "copy"))
        probe_cfg.hashed_mode = 1;
    else if (h && !strcmp(h, "raw"))
        probe_cfg.hashed_mode = 2;
    const char *r = getenv("PROBE_RAW_TABLES");
    snprintf(probe_cfg.raw_tables, sizeof probe_cfg.raw_tables, "%s", r ? r : "");
}

/* Same file as this library? (guards against loading ourselves) */
static int is_self(const char *path) {
    Dl_info di;
    struct stat a, b;
    if (!dladdr((void *)&is_self, &di) || !di.dli_fname)
        return 0;
    if (stat(path, &a) != 0 || stat(di.dli_fname, &b) != 0)
        return 0;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int usable(const char *path) {
    return path && *path == '/' && access(path, R_OK) == 0 && !is_self(path) &&
           !strstr(path, "/stubs/");
}

/* Finds ".../libcuda.so.1" paths in /etc/ld.so.cache (what ldconfig -p
 * prints) without running ldconfig: the cache's string table holds them as
 * NUL-terminated absolute paths. */
static int from_ld_cache(char *out, size_t outsz) {
    int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int found = 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        size_t n = (size_t)st.st_size;
        char *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            static const char tail[] = "/libcuda.so.1";
            size_t tl = sizeof tail - 1;
            for (size_t i = 0; i < n && !found;) {
                size_t len = strnlen(m + i, n - i);
                if (len > tl && len < outsz && m[i] == '/' &&
                    !memcmp(m + i + len - tl, tail, tl)) {
                    memcpy(out, m + i, len);
                    out[len] = 0;
                    found = usable(out);
                }
                i += len + 1;
            }
            munmap(m, n);
        }
    }
    close(fd);
    return found;
}

static void locate_real(void) {
    const char *env = getenv("PROBE_REAL_LIBCUDA");
    if (env && *env) {
        snprintf(probe_real_path, sizeof probe_real_path, "%s", env);
        real_source = "PROBE_REAL_LIBCUDA";
        if (is_self(probe_real_path)) {
            snprintf(real_err, sizeof real_err, "PROBE_REAL_LIBCUDA names the probe itself");
            probe_real_path[0] = 0;
        }
        return;
    }
    static const char *const candidates[] = {
        DEFAULT_REAL, "/usr/lib64/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1",
        "/usr/lib/wsl/lib/libcuda.so.1"};
    if (usable(DEFAULT_REAL)) {
        snprintf(probe_real_path, sizeof probe_real_path, "%s", DEFAULT_REAL);
        real_source = "default";
        return;
    }
    if (from_ld_cache(probe_real_path, sizeof probe_real_path)) {
        real_source = "ld.so.cache";
        return;
    }
    for (size_t i = 1; i < sizeof candidates / sizeof candidates[0]; i++)
        if (usable(candidates[i])) {
            snprintf(probe_real_path, sizeof probe_real_path, "%s", candidates[i]);
            real_source = "fallback";
            return;
        }
    snprintf(real_err, sizeof real_err, "no real libcuda.so.1 found (set PROBE_REAL_LIBCUDA)");
}

static void load_real(void) {
    locate_real();
    if (!probe_real_path[0])
        return;
    int flags = RTLD_NOW | RTLD_LOCAL;
    if (env_uint("PROBE_DEEPBIND", 0))
        flags |= RTLD_DEEPBIND;
    probe_real_handle = dlopen(probe_real_path, flags);
    if (!probe_real_handle) {
        const char *e = dlerror();
        snprintf(real_err, sizeof real_err, "%s", e ? e : "dlopen failed");
        return;
    }
    void *h = probe_real_handle;
    *(void **)&probe_real.cuGetProcAddress = dlsym(h, "cuGetProcAddress");
    *(void **)&probe_real.cuGetProcAddress_v2 = dlsym(h, "cuGetProcAddress_v2");
    *(void **)&probe_real.cuGetExportTable = dlsym(h, "cuGetExportTable");
    *(void **)&probe_real.cuInit = dlsym(h, "cuInit");
    *(void **)&probe_real.cuDriverGetVersion = dlsym(h, "cuDriverGetVersion");
    *(void **)&probe_real.cuDeviceGetCount = dlsym(h, "cuDeviceGetCount");
}

/* The "missing" record of sym, a function the real driver lacks (err, when
 * given, says why it could not be had), written before the probe aborts. */
static void log_missing(const void *caller, const char *sym, const char *err) {
    char buf[1024];
    struct jb j;
    jb_begin(&j, buf, sizeof buf, "missing", caller);
    jb_kstr(&j, "sym", sym);
    jb_kstr(&j, "real", probe_real_path);
    if (err)
        jb_kstr(&j, "error", err);
    jb_end(&j);
}

void probe_fwd_missing(unsigned idx) {
    const char *sym = idx < probe_fwd_count ? probe_fwd_names[idx] : "?";
    log_missing(__builtin_return_address(0), sym, NULL);
    dprintf(2, "drvapi-probe: %s is not in the real driver (%s); aborting\n", sym, probe_real_path);
    abort();
}

void probe_need_real(const void *fn, const char *name) {
    if (fn)
        return;
    log_missing(NULL, name, real_err);
    dprintf(2, "drvapi-probe: real %s unavailable (%s %s); aborting\n", name, probe_real_path,
            real_err);
    abort();
}

__attribute__((constructor)) static void probe_init(void) {
    read_settings();
    probe_log_open();
    load_real();
    probe_maps_init();

    unsigned missing = 0;
    static char missing_list[4096];
    size_t ml = 0;
    for (unsigned i = 0; i < probe_fwd_count && probe_real_handle; i++) {
        void *p = dlsym(probe_real_handle, probe_fwd_names[i]);
        if (p) {
            probe_fwd_slots[i] = probe_count_wrap(p, probe_fwd_names[i]);
        } else {
            missing++;
            int n = snprintf(missing_list + ml, sizeof missing_list - ml, "%s%s", ml ? "," : "",
                             probe_fwd_names[i]);
            if (n > 0 && ml + (size_t)n < sizeof missing_list)
                ml += (size_t)n;
        }
    }
    probe_procaddr_init();

    int drv = 0, drv_rc = -1;
    if (probe_real.cuDriverGetVersion)
        drv_rc = probe_real.cuDriverGetVersion(&drv);

    char buf[8192];
    struct jb j;
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    jb_begin(&j, buf, sizeof buf, "header", NULL);
    jb_kstr(&j, "probe", "drvapi-probe " PROBE_VERSION);
    jb_kstr(&j, "exe", exe);
    jb_kstr(&j, "real", probe_real_path);
    jb_kstr(&j, "real_from", real_source);
    jb_kbool(&j, "real_loaded", probe_real_handle != NULL);
    if (real_err[0])
        jb_kstr(&j, "error", real_err);
    jb_ki64(&j, "driver_version", drv);
    jb_ki64(&j, "driver_version_rc", drv_rc);
    jb_ku64(&j, "n_exports", probe_export_total);
    jb_ku64(&j, "n_missing", missing);
    jb_kstr(&j, "missing", missing_list);
    jb_kbool(&j, "wrap_procs", probe_cfg.wrap_procs);
    jb_kbool(&j, "xt_wrap", probe_cfg.xt_wrap);
    jb_kstr(&j, "hashed_tables",
            probe_cfg.hashed_mode == 0 ? "patch" : probe_cfg.hashed_mode == 1 ? "copy" : "raw");
    jb_kstr(&j, "raw_tables", probe_cfg.raw_tables);
    jb_ku64(&j, "dump_bytes", probe_cfg.dump_bytes);
    jb_ku64(&j, "xt_max_lines", probe_cfg.xt_max_lines);
    jb_end(&j);
    if (!probe_real_handle)
        dprintf(2, "drvapi-probe: %s\n", real_err);
}

__attribute__((destructor)) static void probe_fini(void) {
    probe_dump_counts();
    probe_dump_xt_counts();
}
