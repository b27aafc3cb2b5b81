/* Classifying and reading addresses without faulting. A cache of
 * /proc/self/maps (read at startup; re-read on a miss when a library was
 * loaded or unloaded since, else at most every 20 ms) says whether a value points into readable, writable or executable
 * memory; the bytes themselves are read with process_vm_readv on our own
 * pid, which returns EFAULT instead of faulting. Where that system call is
 * refused, reads fall back to memcpy bounded by the cached mapping. */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define MAX_MAPS 32768

struct map_range {
    uint64_t start, end;
    int prot; /* PROT_* bits */
};

static struct map_range maps[MAX_MAPS];
static unsigned n_maps;
static uint64_t last_refresh_ns;
static unsigned long long seen_adds, seen_subs;
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static int vm_readv_ok = 1;
static char maps_buf[1 << 16];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t parse_hex(const char **pp) {
    uint64_t v = 0;
    const char *p = *pp;
    for (;; p++) {
        char c = *p;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uint64_t)(c - 'a' + 10);
        else
            break;
    }
    *pp = p;
    return v;
}

/* Parses one "start-end perms ..." line. */
static void parse_line(const char *line) {
    if (n_maps >= MAX_MAPS)
        return;
    const char *p = line;
    uint64_t s = parse_hex(&p);
    if (*p != '-')
        return;
    p++;
    uint64_t e = parse_hex(&p);
    if (*p != ' ')
        return;
    p++;
    int prot = 0;
    if (p[0] == 'r')
        prot |= PROT_READ;
    if (p[1] == 'w')
        prot |= PROT_WRITE;
    if (p[2] == 'x')
        prot |= PROT_EXEC;
    maps[n_maps].start = s;
    maps[n_maps].end = e;
    maps[n_maps].prot = prot;
    n_maps++;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    unsigned long long *v = data;
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
    return 1; /* the counters are the same for every object: stop */
}

/* Has a library been loaded or unloaded since the last refresh? */
static int objects_changed(void) {
    unsigned long long v[2] = {0, 0};
    dl_iterate_phdr(first_object, v);
    return v[0] != seen_adds || v[1] != seen_subs;
}

/* Caller holds maps_lock. */
static void refresh_locked(void) {
    unsigned long long v[2] = {0, 0};
    dl_iterate_phdr(first_object, v);
    seen_adds = v[0];
    seen_subs = v[1];
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    last_refresh_ns = now_ns();
    if (fd < 0)
        return;
    n_maps = 0;
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, maps_buf + have, sizeof maps_buf - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        maps_buf[have] = 0;
        char *line = maps_buf;
        char *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            parse_line(line);
            line = nl + 1;
        }
        have = strlen(line);
        memmove(maps_buf, line, have);
    }
    close(fd);
}

void probe_maps_init(void) {
    pthread_mutex_lock(&maps_lock);
    refresh_locked();
    pthread_mutex_unlock(&maps_lock);
}

static const struct map_range *find_locked(uint64_t addr) {
    /* /proc/self/maps is sorted by address. */
    unsigned lo = 0, hi = n_maps;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (addr < maps[mid].start)
            hi = mid;
        else if (addr >= maps[mid].end)
            lo = mid + 1;
        else
            return &maps[mid];
    }
    return NULL;
}

static int lookup(uint64_t addr, struct map_range *out) {
    int found = 0;
    pthread_mutex_lock(&maps_lock);
    const struct map_range *r = find_locked(addr);
    if (!r && (objects_changed() || now_ns() - last_refresh_ns > 20000000ull)) {
        refresh_locked();
        r = find_locked(addr);
    }
    if (r) {
        *out = *r;
        found = 1;
    }
    pthread_mutex_unlock(&maps_lock);
    return found;
}

int probe_mem_kind(uint64_t addr, size_t *room) {
    *room = 0;
    /* Small integers and non-canonical values are not pointers. */
    if (addr < 0x10000 || addr >= 0x800000000000ull)
        return MEM_NONE;
    struct map_range r;
    if (!lookup(addr, &r) || !(r.prot & PROT_READ))
        return MEM_NONE;
    *room = (size_t)(r.end - addr);
    if (r.prot & PROT_EXEC)
        return MEM_CODE;
    return (r.prot & PROT_WRITE) ? MEM_RW : MEM_RO;
}

size_t probe_safe_read(void *dst, uint64_t addr, size_t n) {
    if (!n)
        return 0;
    if (vm_readv_ok) {
        struct iovec local = {dst, n};
        struct iovec remote = {(void *)(uintptr_t)addr, n};
        ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (r >= 0)
            return (size_t)r;
        if (errno == EFAULT)
            return 0;
        if (errno == ENOSYS || errno == EPERM)
            vm_readv_ok = 0;
        else
            return 0;
    }
    size_t room;
    if (probe_mem_kind(addr, &room) == MEM_NONE)
        return 0;
    if (n > room)
        n = room;
    memcpy(dst, (const void *)(uintptr_t)addr, n);
    return n;
}

int probe_make_writable(uint64_t addr, size_t n) {
    struct map_range r;
    if (!lookup(addr, &r))
        return -1;
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t s = addr & ~(uint64_t)(pg - 1);
    uint64_t e = (addr + n + (uint64_t)pg - 1) & ~(uint64_t)(pg - 1);
    if (e > r.end) /* table spans mappings: not handled */
        return -1;
    if (r.prot & PROT_WRITE)
        return r.prot;
    if (mprotect((void *)(uintptr_t)s, (size_t)(e - s), r.prot | PROT_WRITE) != 0)
        return -1;
    return r.prot;
}

void probe_restore_prot(uint64_t addr, size_t n, int prot) {
    if (prot < 0 || (prot & PROT_WRITE))
        return;
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t s = addr & ~(uint64_t)(pg - 1);
    uint64_t e = (addr + n + (uint64_t)pg - 1) & ~(uint64_t)(pg - 1);
    mprotect((void *)(uintptr_t)s, (size_t)(e - s), prot);
    pthread_mutex_lock(&maps_lock);
    refresh_locked();
    pthread_mutex_unlock(&maps_lock);
}
