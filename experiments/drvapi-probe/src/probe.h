/* drvapi-probe: a forwarding libcuda.so.1 that logs how CUDA runtimes and
 * libraries use the driver. Internal declarations. cuda.h is deliberately
 * not included: it renames cuGetProcAddress and friends with macros, and we
 * must define the exported names exactly. */
#ifndef PROBE_H
#define PROBE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "probe_abi.h"

#define PROBE_HIDDEN __attribute__((visibility("hidden")))
#define PROBE_EXPORT __attribute__((visibility("default")))

typedef int CUresult; /* CUDA_SUCCESS = 0 */
typedef struct {
    unsigned char bytes[16];
} probe_uuid;

/* ---- settings (init.c) ---- */
struct probe_settings {
    int wrap_procs;        /* PROBE_WRAP_PROCS: 1 counting thunks, 2 also logging errors */
    int xt_wrap;           /* PROBE_XT_WRAP (default 1): wrap export tables */
    int hashed_mode;       /* PROBE_HASHED_TABLES: 0 patch, 1 copy, 2 raw */
    unsigned dump_bytes;   /* PROBE_DUMP (default 64, max PROBE_DUMP_MAX) */
    unsigned xt_max_lines; /* PROBE_XT_MAX_LINES per slot (default 500) */
    char raw_tables[256];  /* PROBE_RAW_TABLES: comma list of hex prefixes */
};
PROBE_HIDDEN extern struct probe_settings probe_cfg;
PROBE_HIDDEN extern void *probe_real_handle;
PROBE_HIDDEN extern char probe_real_path[4096];

/* Generated (build/gen/fwd.S, build/gen/fwd_names.c). */
PROBE_HIDDEN extern void *probe_fwd_slots[];
PROBE_HIDDEN extern const char *const probe_fwd_names[];
PROBE_HIDDEN extern const unsigned probe_fwd_count;
PROBE_HIDDEN extern const unsigned probe_export_total; /* incl. the ones in C */
PROBE_HIDDEN void probe_fwd_missing(unsigned idx) __attribute__((noreturn));

/* Real-driver entry points the C code forwards to. */
struct probe_real {
    CUresult (*cuGetProcAddress)(const char *, void **, int, uint64_t);
    CUresult (*cuGetProcAddress_v2)(const char *, void **, int, uint64_t, int *);
    CUresult (*cuGetExportTable)(const void **, const probe_uuid *);
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDeviceGetCount)(int *);
};
PROBE_HIDDEN extern struct probe_real probe_real;
PROBE_HIDDEN void probe_need_real(const void *fn, const char *name);

/* ---- logging (log.c) ---- */
struct jb {
    char *buf;
    size_t cap; /* usable bytes, a reserve for closing brackets is kept */
    size_t len;
    int trunc;
};
/* Begins a line: {"seq":..,"t_ns":..,"pid":..,"tid":..,"ev":EV,"caller":..
 * retaddr may be NULL (no caller field). Returns the sequence number. */
PROBE_HIDDEN uint64_t jb_begin(struct jb *j, char *buf, size_t size, const char *ev,
                               const void *retaddr);
PROBE_HIDDEN void jb_raw(struct jb *j, const char *s);
PROBE_HIDDEN void jb_key(struct jb *j, const char *key); /* ,"key": */
PROBE_HIDDEN void jb_str(struct jb *j, const char *s);   /* "escaped" or null */
PROBE_HIDDEN void jb_kstr(struct jb *j, const char *key, const char *s);
PROBE_HIDDEN void jb_ki64(struct jb *j, const char *key, int64_t v);
PROBE_HIDDEN void jb_ku64(struct jb *j, const char *key, uint64_t v);
PROBE_HIDDEN void jb_khex(struct jb *j, const char *key, uint64_t v); /* "0x.." */
PROBE_HIDDEN void jb_kbool(struct jb *j, const char *key, int v);
PROBE_HIDDEN void jb_kbytes(struct jb *j, const char *key, const unsigned char *p, size_t n);
PROBE_HIDDEN void jb_ksym(struct jb *j, const char *key, const void *addr); /* module+off(sym) */
PROBE_HIDDEN void jb_printf(struct jb *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Atomic pieces: jb_mark/jb_rollback let a caller drop a half-written
 * element when the buffer fills. */
PROBE_HIDDEN size_t jb_mark(const struct jb *j);
PROBE_HIDDEN int jb_ok_or_rollback(struct jb *j, size_t mark);
PROBE_HIDDEN void jb_close(struct jb *j, const char *s); /* "]" or "}" */
PROBE_HIDDEN void jb_end(struct jb *j); /* closes the object, one write(2) */
/* A whole line EV with "counts":[...] in buf: an element for each counter
 * i < n whose count(i) is not 0, written by elem (a comma before it unless
 * first); the first element that does not fit the buffer ends the list. */
PROBE_HIDDEN void jb_count_list(char *buf, size_t size, const char *ev, unsigned n,
                                uint64_t (*count)(unsigned i),
                                void (*elem)(struct jb *j, unsigned i, uint64_t calls, int first));

PROBE_HIDDEN void probe_log_open(void);
PROBE_HIDDEN int probe_log_fd(void);
PROBE_HIDDEN long probe_tid(void);
/* "module+0xoff" (+ "(sym+0xoff)") for an address; writes into out. */
PROBE_HIDDEN void probe_describe_addr(const void *addr, char *out, size_t outsz);
/* Symbol name (or name+0xoff) of an address, "" when dladdr knows none. */
PROBE_HIDDEN void probe_symname(const void *addr, char *out, size_t outsz);
PROBE_HIDDEN void probe_uuid_hex(const probe_uuid *u, char out[33]);

/* ---- memory safety (safemem.c) ---- */
enum { MEM_NONE = 0, MEM_RO = 1, MEM_RW = 2, MEM_CODE = 3 };
PROBE_HIDDEN void probe_maps_init(void);
/* Classifies an address; *room = bytes to the end of its mapping. */
PROBE_HIDDEN int probe_mem_kind(uint64_t addr, size_t *room);
/* Copies up to n bytes without ever faulting; returns bytes copied. */
PROBE_HIDDEN size_t probe_safe_read(void *dst, uint64_t addr, size_t n);
/* Makes [addr, addr+n) writable; returns the old protection or -1. */
PROBE_HIDDEN int probe_make_writable(uint64_t addr, size_t n);
PROBE_HIDDEN void probe_restore_prot(uint64_t addr, size_t n, int prot);

/* ---- cuGetProcAddress (procaddr.c) ---- */
PROBE_HIDDEN void probe_procaddr_init(void);
/* Counting thunk for a target (PROBE_WRAP_PROCS=1), or target itself. */
PROBE_HIDDEN void *probe_count_wrap(void *target, const char *name);
PROBE_HIDDEN void probe_dump_counts(void);

/* ---- export tables (exptable.c) ---- */
PROBE_HIDDEN void probe_dump_xt_counts(void);

#endif
