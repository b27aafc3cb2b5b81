/* JSON-lines log: one object per line, built in a caller-supplied buffer and
 * written with a single write(2), so lines of concurrent threads and of
 * forked children (O_APPEND) do not interleave. No malloc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define JB_RESERVE 48 /* room kept for ,"trunc":true and closing brackets */

static int log_fd = 2;
static atomic_uint_fast64_t log_seq;
static __thread long cached_tid;
static char exe_name[256];

void probe_log_open(void) {
    const char *path = getenv("PROBE_LOG");
    if (path && *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0)
            log_fd = fd;
        else
            dprintf(2, "drvapi-probe: cannot open PROBE_LOG %s: %s; logging to stderr\n", path,
                    strerror(errno));
    }
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
        const char *b = strrchr(buf, '/');
        snprintf(exe_name, sizeof exe_name, "%.255s", b ? b + 1 : buf);
    }
}

int probe_log_fd(void) { return log_fd; }

long probe_tid(void) {
    if (!cached_tid)
        cached_tid = syscall(SYS_gettid);
    return cached_tid;
}

static void jb_put(struct jb *j, const char *s, size_t n) {
    if (j->trunc)
        return;
    if (j->len + n > j->cap) {
        j->trunc = 1;
        return;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
}

void jb_raw(struct jb *j, const char *s) { jb_put(j, s, strlen(s)); }

size_t jb_mark(const struct jb *j) { return j->len; }

int jb_ok_or_rollback(struct jb *j, size_t mark) {
    if (!j->trunc)
        return 1;
    /* Drop the half-written piece; later pieces are refused too. */
    j->len = mark;
    return 0;
}

void jb_printf(struct jb *j, const char *fmt, ...) {
    if (j->trunc)
        return;
    va_list ap;
    va_start(ap, fmt);
    size_t room = j->cap - j->len;
    int n = vsnprintf(j->buf + j->len, room + 1, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n > room)
        j->trunc = 1;
    else
        j->len += (size_t)n;
}

void jb_str(struct jb *j, const char *s) {
    if (!s) {
        jb_raw(j, "null");
        return;
    }
    static const char hexd[] = "0123456789abcdef";
    jb_put(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p && !j->trunc; p++) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            jb_put(j, e, 2);
        } else if (c < 0x20 || c >= 0x7f) {
            char e[6] = {'\\', 'u', '0', '0', hexd[c >> 4], hexd[c & 15]};
            jb_put(j, e, 6);
        } else {
            jb_put(j, (const char *)p, 1);
        }
    }
    jb_put(j, "\"", 1);
}

void jb_key(struct jb *j, const char *key) {
    jb_put(j, ",\"", 2);
    jb_raw(j, key);
    jb_put(j, "\":", 2);
}

void jb_kstr(struct jb *j, const char *key, const char *s) {
    size_t m = jb_mark(j);
    jb_key(j, key);
    jb_str(j, s);
    jb_ok_or_rollback(j, m);
}

void jb_ki64(struct jb *j, const char *key, int64_t v) {
    size_t m = jb_mark(j);
    jb_key(j, key);
    jb_printf(j, "%lld", (long long)v);
    jb_ok_or_rollback(j, m);
}

void jb_ku64(struct jb *j, const char *key, uint64_t v) {
    size_t m = jb_mark(j);
    jb_key(j, key);
    jb_printf(j, "%llu", (unsigned long long)v);
    jb_ok_or_rollback(j, m);
}

void jb_khex(struct jb *j, const char *key, uint64_t v) {
    size_t m = jb_mark(j);
    jb_key(j, key);
    jb_printf(j, "\"0x%llx\"", (unsigned long long)v);
    jb_ok_or_rollback(j, m);
}

void jb_kbool(struct jb *j, const char *key, int v) {
    size_t m = jb_mark(j);
    jb_key(j, key);
    jb_raw(j, v ? "true" : "false");
    jb_ok_or_rollback(j, m);
}

void jb_kbytes(struct jb *j, const char *key, const unsigned char *p, size_t n) {
    static const char hexd[] = "0123456789abcdef";
    size_t m = jb_mark(j);
    jb_key(j, key);
    jb_put(j, "\"", 1);
    for (size_t i = 0; i < n && !j->trunc; i++) {
        char e[2] = {hexd[p[i] >> 4], hexd[p[i] & 15]};
        jb_put(j, e, 2);
    }
    jb_put(j, "\"", 1);
    jb_ok_or_rollback(j, m);
}

static const char *base_name(const char *path) {
    if (!path || !*path)
        return exe_name[0] ? exe_name : "?";
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

void probe_symname(const void *addr, char *out, size_t outsz) {
    Dl_info di;
    out[0] = 0;
    if (!addr || !dladdr(addr, &di) || !di.dli_sname)
        return;
    uintptr_t off = (uintptr_t)addr - (uintptr_t)di.dli_saddr;
    if (off)
        snprintf(out, outsz, "%s+0x%lx", di.dli_sname, (unsigned long)off);
    else
        snprintf(out, outsz, "%s", di.dli_sname);
}

void probe_describe_addr(const void *addr, char *out, size_t outsz) {
    Dl_info di;
    if (!addr) {
        snprintf(out, outsz, "null");
        return;
    }
    if (!dladdr(addr, &di)) {
        snprintf(out, outsz, "?+0x%lx", (unsigned long)(uintptr_t)addr);
        return;
    }
    unsigned long off = (unsigned long)((uintptr_t)addr - (uintptr_t)di.dli_fbase);
    if (di.dli_sname) {
        unsigned long soff = (unsigned long)((uintptr_t)addr - (uintptr_t)di.dli_saddr);
        snprintf(out, outsz, "%s+0x%lx(%s+0x%lx)", base_name(di.dli_fname), off, di.dli_sname,
                 soff);
    } else {
        snprintf(out, outsz, "%s+0x%lx", base_name(di.dli_fname), off);
    }
}

void jb_ksym(struct jb *j, const char *key, const void *addr) {
    char d[512];
    probe_describe_addr(addr, d, sizeof d);
    jb_kstr(j, key, d);
}

void probe_uuid_hex(const probe_uuid *u, char out[33]) {
    static const char hexd[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hexd[u->bytes[i] >> 4];
        out[2 * i + 1] = hexd[u->bytes[i] & 15];
    }
    out[32] = 0;
}

uint64_t jb_begin(struct jb *j, char *buf, size_t size, const char *ev, const void *retaddr) {
    j->buf = buf;
    j->cap = size > JB_RESERVE ? size - JB_RESERVE : 0;
    j->len = 0;
    j->trunc = 0;
    uint64_t seq = atomic_fetch_add(&log_seq, 1);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    jb_printf(j, "{\"seq\":%llu,\"t_ns\":%llu,\"pid\":%d,\"tid\":%ld,\"ev\":",
              (unsigned long long)seq,
              (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
              (int)getpid(), probe_tid());
    jb_str(j, ev);
    if (retaddr)
        jb_ksym(j, "caller", retaddr);
    return seq;
}

void jb_close(struct jb *j, const char *s) {
    /* Closing brackets may use the reserve (nesting is shallow), so a
     * truncated line still parses. */
    size_t n = strlen(s);
    if (j->len + n + 20 <= j->cap + JB_RESERVE) {
        memcpy(j->buf + j->len, s, n);
        j->len += n;
    }
}

void jb_count_list(char *buf, size_t size, const char *ev, unsigned n,
                   uint64_t (*count)(unsigned i),
                   void (*elem)(struct jb *j, unsigned i, uint64_t calls, int first)) {
    struct jb j;
    jb_begin(&j, buf, size, ev, NULL);
    size_t m = jb_mark(&j);
    jb_key(&j, "counts");
    jb_raw(&j, "[");
    if (jb_ok_or_rollback(&j, m)) {
        int first = 1;
        for (unsigned i = 0; i < n; i++) {
            uint64_t calls = count(i);
            if (!calls)
                continue;
            size_t e = jb_mark(&j);
            elem(&j, i, calls, first);
            if (!jb_ok_or_rollback(&j, e))
                break;
            first = 0;
        }
        jb_close(&j, "]");
    }
    jb_end(&j);
}

void jb_end(struct jb *j) {
    /* The reserve always holds the tail, even after truncation. */
    j->cap += JB_RESERVE;
    if (j->trunc) {
        j->trunc = 0;
        jb_raw(j, ",\"trunc\":true");
    }
    jb_raw(j, "}\n");
    const char *p = j->buf;
    size_t left = j->len;
    while (left) {
        ssize_t n = write(log_fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        p += n;
        left -= (size_t)n;
    }
}
