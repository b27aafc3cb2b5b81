/* cuGetExportTable: logs the request and the real table (size word, each
 * slot's dladdr and first code bytes), then hands the caller a table whose
 * function slots are logging thunks (thunks.S) that call the original.
 *
 * Modes per table:
 *   copy  - a copy of the table with thunks in its function slots (default);
 *   patch - the real table itself, its function slots overwritten in place
 *           (used for the two tables whose ADDRESSES enter cudart's integrity
 *           check: CUDART_INTERFACE 6bd5fb6c and INTEGRITY_CHECK d4082055;
 *           d4082055 slot 1 is left alone, its address is hashed too);
 *   raw   - the real table, unchanged (logged only).
 * PROBE_HASHED_TABLES=patch|copy|raw picks the mode of the two hashed
 * tables, PROBE_RAW_TABLES=hexprefix,... forces raw for others,
 * PROBE_XT_WRAP=0 makes every table raw. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

PROBE_EXPORT CUresult cuGetExportTable(const void **table, const probe_uuid *id);

enum { XT_COPY, XT_PATCH, XT_RAW };
static const char *const mode_name[] = {"copy", "patch", "raw"};

static const char HASHED_CUDART[] = "6bd5fb6c5bf4e74a8987d93912fd9df9";
static const char HASHED_INTEGRITY[] = "d4082055bde6704b8d34ba123c66e1f2";

struct xt_table {
    char hex[33];
    const void *real;
    void **handed;
    int mode;
    const char *layout; /* "sized", "headerless", "odd" */
    unsigned n_hdr;     /* slots by the header (incl. slot 0) or up to the terminator */
    unsigned n_total;   /* n_hdr + words taken beyond it (copy mode) */
};

/* Record kept in probe_xt_common's frame between the pre and post calls. */
struct xt_rec {
    uint32_t idx;
    uint32_t logged;
    uint64_t call_seq;
    const void *retaddr;
    uint64_t args[6];
    uint8_t kind[6];
    uint16_t len[6];
    unsigned char before[6][PROBE_DUMP_MAX];
};
_Static_assert(sizeof(struct xt_rec) <= XT_REC_SIZE, "xt_rec exceeds its frame slot");
_Static_assert(XT_FRAME % 16 == 0, "frame must keep 16-byte alignment");

extern char probe_xt_thunks[] PROBE_HIDDEN;
PROBE_HIDDEN void *probe_xt_pre(uint32_t idx, const uint64_t *gp, const void *retaddr,
                                struct xt_rec *rec);
PROBE_HIDDEN void probe_xt_post(struct xt_rec *rec, uint64_t rax);

static struct xt_table tabs[PROBE_XT_TABLES];
static unsigned n_tabs;
static void *copies[PROBE_XT_TABLES][PROBE_XT_SLOTS + 1];
static void *xt_orig[PROBE_XT_NTHUNK];
static _Atomic uint64_t xt_calls[PROBE_XT_NTHUNK];
static pthread_mutex_t xt_lock = PTHREAD_MUTEX_INITIALIZER;

static void *thunk_addr(unsigned t, unsigned s) {
    return probe_xt_thunks + (size_t)(t * PROBE_XT_SLOTS + s) * PROBE_THUNK_STRIDE;
}

static int is_code(uint64_t v) {
    size_t room;
    return probe_mem_kind(v, &room) == MEM_CODE;
}

static int in_raw_list(const char *hex) {
    const char *p = probe_cfg.raw_tables;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n && n <= 32 && !strncasecmp(hex, p, n))
            return 1;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

static int pick_mode(const char *hex) {
    if (!probe_cfg.xt_wrap || in_raw_list(hex))
        return XT_RAW;
    if (!strcmp(hex, HASHED_CUDART) || !strcmp(hex, HASHED_INTEGRITY))
        return probe_cfg.hashed_mode == 1 ? XT_COPY
               : probe_cfg.hashed_mode == 2 ? XT_RAW
                                            : XT_PATCH;
    return XT_COPY;
}

/* Reads the table's words and decides its layout. w must hold
 * PROBE_XT_SLOTS + 1 words. */
static void measure(struct xt_table *t, uint64_t *w) {
    memset(w, 0, (PROBE_XT_SLOTS + 1) * sizeof *w);
    size_t got = probe_safe_read(w, (uint64_t)(uintptr_t)t->real, (PROBE_XT_SLOTS + 1) * 8) / 8;
    uint64_t w0 = w[0];
    t->n_hdr = t->n_total = 0;
    if (got == 0) {
        t->layout = "unreadable";
    } else if (w0 > 0x10000) {
        /* No size header: function pointers up to NULL or ~0. */
        unsigned n = 0;
        while (n < 64 && n < got && w[n] != 0 && w[n] != ~(uint64_t)0)
            n++;
        t->layout = "headerless";
        t->n_hdr = t->n_total = n;
    } else if (w0 >= 8 && w0 < 4096 && w0 % 8 == 0) {
        unsigned n = (unsigned)(w0 / 8);
        if (n > PROBE_XT_SLOTS)
            n = PROBE_XT_SLOTS;
        if (n > got)
            n = (unsigned)got;
        t->layout = "sized";
        t->n_hdr = n;
        /* Composite tables (e.g. f8cff951 per GX) continue past their first
         * header with further size words and functions; take such words
         * too, up to 64, so a caller indexing past the header still finds
         * the real function in our copy. */
        unsigned e = n;
        while (e < 64 && e < got &&
               (is_code(w[e]) || (w[e] >= 8 && w[e] < 4096 && w[e] % 8 == 0)))
            e++;
        t->n_total = e;
    } else {
        t->layout = "odd";
    }
}

/* Builds the handed table; caller holds xt_lock. Returns the table index. */
static unsigned build(struct xt_table *t, unsigned ti, const uint64_t *w) {
    int headerless = !strcmp(t->layout, "headerless");
    unsigned first = headerless ? 0 : 1;
    if (t->mode == XT_COPY) {
        void **c = copies[ti];
        for (unsigned s = 0; s < t->n_total; s++) {
            c[s] = (void *)(uintptr_t)w[s];
            if (s >= first && is_code(w[s])) {
                xt_orig[ti * PROBE_XT_SLOTS + s] = (void *)(uintptr_t)w[s];
                c[s] = thunk_addr(ti, s);
            }
        }
        if (headerless)
            c[t->n_total] = (void *)(uintptr_t)w[t->n_total]; /* terminator */
        t->handed = c;
    } else if (t->mode == XT_PATCH) {
        void **real = (void **)(uintptr_t)t->real;
        int old = probe_make_writable((uint64_t)(uintptr_t)real, t->n_hdr * 8);
        if (old < 0) {
            t->mode = XT_RAW;
            t->handed = real;
            return ti;
        }
        int integrity = !strcmp(t->hex, HASHED_INTEGRITY);
        for (unsigned s = first; s < t->n_hdr; s++) {
            if (integrity && s == 1)
                continue; /* its address is part of cudart's check */
            if (!is_code(w[s]))
                continue;
            xt_orig[ti * PROBE_XT_SLOTS + s] = (void *)(uintptr_t)w[s];
            __atomic_store_n(&real[s], thunk_addr(ti, s), __ATOMIC_RELEASE);
        }
        probe_restore_prot((uint64_t)(uintptr_t)real, t->n_hdr * 8, old);
        t->n_total = t->n_hdr;
        t->handed = real;
    } else {
        t->handed = (void **)(uintptr_t)t->real;
    }
    return ti;
}

static void log_table(struct jb *j, const struct xt_table *t, unsigned ti, const uint64_t *w) {
    jb_khex(j, "word0", w[0]);
    jb_kstr(j, "layout", t->layout);
    jb_ku64(j, "n_slots", t->n_hdr);
    jb_ku64(j, "n_ext", t->n_total - t->n_hdr);
    jb_kstr(j, "mode", mode_name[t->mode]);
    jb_khex(j, "handed", (uint64_t)(uintptr_t)t->handed);
    size_t m = jb_mark(j);
    jb_key(j, "slots");
    jb_raw(j, "[");
    if (!jb_ok_or_rollback(j, m))
        return;
    unsigned first = strcmp(t->layout, "headerless") ? 1 : 0;
    unsigned end = t->n_total + (first == 0 ? 1 : 0); /* show the terminator */
    for (unsigned s = first; s < end && s <= PROBE_XT_SLOTS; s++) {
        size_t e = jb_mark(j);
        jb_printf(j, "%s{\"i\":%u", s == first ? "" : ",", s);
        jb_khex(j, "val", w[s]);
        if (s >= t->n_hdr)
            jb_kbool(j, "beyond_hdr", 1);
        if (is_code(w[s])) {
            jb_ksym(j, "where", (const void *)(uintptr_t)w[s]);
            unsigned char code[8];
            size_t n = probe_safe_read(code, w[s], sizeof code);
            jb_kbytes(j, "code", code, n);
        }
        void *o = xt_orig[ti * PROBE_XT_SLOTS + s];
        jb_kbool(j, "wrapped", t->mode != XT_RAW && o != NULL && s < PROBE_XT_SLOTS);
        jb_raw(j, "}");
        if (!jb_ok_or_rollback(j, e))
            break;
    }
    jb_close(j, "]");
}

CUresult cuGetExportTable(const void **table, const probe_uuid *id) {
    const void *ret = __builtin_return_address(0);
    probe_need_real((const void *)probe_real.cuGetExportTable, "cuGetExportTable");
    CUresult rc = probe_real.cuGetExportTable(table, id);

    char hex[33] = "";
    if (id) {
        probe_uuid u;
        if (probe_safe_read(&u, (uint64_t)(uintptr_t)id, 16) == 16)
            probe_uuid_hex(&u, hex);
    }
    const void *real = (rc == 0 && table) ? *table : NULL;

    /* Register (or find) the table under the lock; log after it, since
     * dladdr takes the loader's lock. */
    struct xt_table t = {.real = real, .layout = ""};
    memcpy(t.hex, hex, sizeof t.hex);
    uint64_t w[PROBE_XT_SLOTS + 1];
    memset(w, 0, sizeof w);
    int repeat = 0, full = 0;
    unsigned idx = PROBE_XT_TABLES;
    char first_hex[33] = "";
    if (real) {
        pthread_mutex_lock(&xt_lock);
        unsigned ti;
        for (ti = 0; ti < n_tabs; ti++)
            if (tabs[ti].real == real)
                break;
        if (ti < n_tabs) {
            repeat = 1;
            t = tabs[ti];
            memcpy(first_hex, t.hex, sizeof first_hex);
        } else {
            measure(&t, w);
            t.mode = pick_mode(hex);
            if (!strcmp(t.layout, "odd") || !strcmp(t.layout, "unreadable"))
                t.mode = XT_RAW;
            if (t.mode != XT_RAW && n_tabs >= PROBE_XT_TABLES) {
                t.mode = XT_RAW;
                full = 1;
            }
            if (t.mode != XT_RAW) {
                idx = n_tabs;
                build(&t, idx, w);
                tabs[idx] = t;
                n_tabs++;
            } else {
                t.handed = (void **)(uintptr_t)real;
            }
        }
        pthread_mutex_unlock(&xt_lock);
        *table = t.handed;
    }

    size_t bufsz = 1 << 16;
    char *buf = malloc(bufsz);
    char small[1024];
    if (!buf) {
        buf = small;
        bufsz = sizeof small;
    }
    struct jb j;
    jb_begin(&j, buf, bufsz, "export_table", ret);
    jb_kstr(&j, "uuid", hex);
    jb_ki64(&j, "rc", rc);
    jb_khex(&j, "table", (uint64_t)(uintptr_t)real);
    if (rc != 0 && table)
        jb_khex(&j, "out", (uint64_t)(uintptr_t)*table);
    if (real) {
        jb_kbool(&j, "repeat", repeat);
        if (repeat) {
            jb_kstr(&j, "mode", mode_name[t.mode]);
            jb_khex(&j, "handed", (uint64_t)(uintptr_t)t.handed);
            if (strcmp(first_hex, hex))
                jb_kstr(&j, "first_uuid", first_hex);
        } else {
            if (full)
                jb_kstr(&j, "note", "thunk pool full (32 tables); handed raw");
            log_table(&j, &t, idx < PROBE_XT_TABLES ? idx : 0, w);
        }
    }
    jb_end(&j);
    if (buf != small)
        free(buf);
    return rc;
}

static void describe_args(struct jb *j, struct xt_rec *rec, int after) {
    size_t m = jb_mark(j);
    jb_key(j, "ptrs");
    jb_raw(j, "[");
    if (!jb_ok_or_rollback(j, m))
        return;
    int first = 1;
    for (int a = 0; a < 6; a++) {
        static const char *const kn[] = {"", "ro", "rw", "code"};
        uint8_t k = rec->kind[a];
        if (k == MEM_NONE || (after && k != MEM_RW))
            continue;
        size_t e = jb_mark(j);
        jb_printf(j, "%s{\"a\":%d,\"kind\":\"%s\"", first ? "" : ",", a, kn[k]);
        if (k == MEM_CODE) {
            jb_ksym(j, "sym", (const void *)(uintptr_t)rec->args[a]);
        } else if (!after) {
            jb_kbytes(j, "bytes", rec->before[a], rec->len[a]);
        } else {
            unsigned char now[PROBE_DUMP_MAX];
            size_t n = probe_safe_read(now, rec->args[a], rec->len[a]);
            jb_kbytes(j, "bytes", now, n);
            jb_kbool(j, "changed", n != rec->len[a] || memcmp(now, rec->before[a], n) != 0);
        }
        jb_raw(j, "}");
        if (!jb_ok_or_rollback(j, e))
            break;
        first = 0;
    }
    jb_close(j, "]");
}

void *probe_xt_pre(uint32_t idx, const uint64_t *gp, const void *retaddr, struct xt_rec *rec) {
    void *orig = idx < PROBE_XT_NTHUNK ? xt_orig[idx] : NULL;
    unsigned t = idx / PROBE_XT_SLOTS, s = idx % PROBE_XT_SLOTS;
    uint64_t n = atomic_fetch_add(&xt_calls[idx < PROBE_XT_NTHUNK ? idx : 0], 1) + 1;
    rec->idx = idx;
    rec->retaddr = retaddr;
    memcpy(rec->args, gp, sizeof rec->args);
    rec->logged = n <= probe_cfg.xt_max_lines || !orig;
    if (!rec->logged)
        return orig;
    for (int a = 0; a < 6; a++) {
        size_t room;
        rec->kind[a] = (uint8_t)probe_mem_kind(rec->args[a], &room);
        rec->len[a] = 0;
        if (rec->kind[a] == MEM_RW || rec->kind[a] == MEM_RO) {
            size_t want = probe_cfg.dump_bytes < room ? probe_cfg.dump_bytes : room;
            rec->len[a] = (uint16_t)probe_safe_read(rec->before[a], rec->args[a], want);
        }
    }
    char buf[8192];
    struct jb j;
    rec->call_seq = jb_begin(&j, buf, sizeof buf, "xt_call", retaddr);
    jb_kstr(&j, "uuid", t < PROBE_XT_TABLES ? tabs[t].hex : "?");
    jb_ku64(&j, "slot", s);
    jb_ku64(&j, "n", n);
    size_t m = jb_mark(&j);
    jb_key(&j, "args");
    jb_printf(&j, "[\"0x%llx\",\"0x%llx\",\"0x%llx\",\"0x%llx\",\"0x%llx\",\"0x%llx\"]",
              (unsigned long long)rec->args[0], (unsigned long long)rec->args[1],
              (unsigned long long)rec->args[2], (unsigned long long)rec->args[3],
              (unsigned long long)rec->args[4], (unsigned long long)rec->args[5]);
    jb_ok_or_rollback(&j, m);
    describe_args(&j, rec, 0);
    if (n == probe_cfg.xt_max_lines)
        jb_kstr(&j, "note", "last logged call of this slot; later calls are only counted");
    jb_end(&j);
    if (!orig) {
        dprintf(2, "drvapi-probe: thunk %u has no original function; aborting\n", idx);
        abort();
    }
    return orig;
}

void probe_xt_post(struct xt_rec *rec, uint64_t rax) {
    if (!rec->logged)
        return;
    unsigned t = rec->idx / PROBE_XT_SLOTS, s = rec->idx % PROBE_XT_SLOTS;
    char buf[8192];
    struct jb j;
    jb_begin(&j, buf, sizeof buf, "xt_ret", rec->retaddr);
    jb_kstr(&j, "uuid", t < PROBE_XT_TABLES ? tabs[t].hex : "?");
    jb_ku64(&j, "slot", s);
    jb_ku64(&j, "call_seq", rec->call_seq);
    jb_khex(&j, "rax", rax);
    jb_ki64(&j, "rc", (int32_t)(uint32_t)rax);
    describe_args(&j, rec, 1);
    jb_end(&j);
}

static uint64_t xt_count(unsigned i) {
    return atomic_load(&xt_calls[i]);
}

static void xt_count_elem(struct jb *j, unsigned i, uint64_t n, int first) {
    jb_printf(j, "%s{\"uuid\":\"%s\",\"slot\":%u,\"n\":%llu}", first ? "" : ",",
              tabs[i / PROBE_XT_SLOTS].hex, i % PROBE_XT_SLOTS, (unsigned long long)n);
}

void probe_dump_xt_counts(void) {
    static char buf[1 << 17];
    jb_count_list(buf, sizeof buf, "xt_counts", PROBE_XT_NTHUNK, xt_count, xt_count_elem);
}
