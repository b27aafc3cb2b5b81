/* cuInit, cuDriverGetVersion, cuDeviceGetCount: forwarded and logged (name,
 * result, output) so the log shows where they fall in the bootstrap order
 * relative to cuGetProcAddress and cuGetExportTable. */
#include "probe.h"

PROBE_EXPORT CUresult cuInit(unsigned flags);
PROBE_EXPORT CUresult cuDriverGetVersion(int *version);
PROBE_EXPORT CUresult cuDeviceGetCount(int *count);

static void log_call(const char *name, const void *ret, CUresult rc, const char *k1, int64_t v1,
                     const char *k2, const int *out) {
    char buf[1024];
    struct jb j;
    jb_begin(&j, buf, sizeof buf, "call", ret);
    jb_kstr(&j, "fn", name);
    jb_ki64(&j, "rc", rc);
    if (k1)
        jb_ki64(&j, k1, v1);
    if (k2 && out && rc == 0)
        jb_ki64(&j, k2, *out);
    jb_end(&j);
}

CUresult cuInit(unsigned flags) {
    probe_need_real((const void *)probe_real.cuInit, "cuInit");
    CUresult rc = probe_real.cuInit(flags);
    log_call("cuInit", __builtin_return_address(0), rc, "flags", flags, NULL, NULL);
    return rc;
}

CUresult cuDriverGetVersion(int *version) {
    probe_need_real((const void *)probe_real.cuDriverGetVersion, "cuDriverGetVersion");
    CUresult rc = probe_real.cuDriverGetVersion(version);
    log_call("cuDriverGetVersion", __builtin_return_address(0), rc, NULL, 0, "version", version);
    return rc;
}

CUresult cuDeviceGetCount(int *count) {
    probe_need_real((const void *)probe_real.cuDeviceGetCount, "cuDeviceGetCount");
    CUresult rc = probe_real.cuDeviceGetCount(count);
    log_call("cuDeviceGetCount", __builtin_return_address(0), rc, NULL, 0, "count", count);
    return rc;
}
