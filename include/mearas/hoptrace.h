/* SPDX-License-Identifier: MIT */
/*
 * Where a remote call's time goes: timestamps at the hops of the remote path
 * (forwarding node, link, serving node, its worker), for
 * `scripts/remote-latency.sh --hops`. Compiled in only with -DMEARAS_HOPTRACE
 * (`make hoptrace`, build/hop/bin/mearasd); the shipped build has none: every
 * mearas_hop() is then an empty inline function.
 *
 * With MEARAS_HOPTRACE_DIR set, each process appends CLOCK_MONOTONIC stamps
 * of hop NAME to the file DIR/PID.NAME: a little-endian u64 count, then that
 * many u64 nanosecond stamps (at most HOPTRACE_MAX), in a shared mapping (no
 * system call per stamp, nothing to flush at exit). All mearasd of one
 * machine share the clock, so the analysis (experiments/harness/mearas_exp/
 * hops.py, which reads this format) chains a call's stamps across processes.
 */
#ifndef MEARAS_HOPTRACE_H
#define MEARAS_HOPTRACE_H

/* X(name): in the order a synchronous remote call passes them */
#define MEARAS_HOPS(X)                                                                                 \
	X(fwd_pick)      /* forwarding node: a record that wants a completion taken from the ring */ \
	X(fwd_posted)    /* forwarding node: the ring drained onto the link */                      \
	X(send_start)    /* either node: a link send begins (transport) */                           \
	X(send_sealed)   /* either node: its records are sealed (encrypted links) */                \
	X(send_end)      /* either node: the send's bytes are with the kernel */                     \
	X(recv)          /* either node: a receive returned bytes */                                  \
	X(srv_feed)      /* serving node: a record that wants a completion read from the link */     \
	X(srv_fed)       /* serving node: a record in the worker's ring */                           \
	X(wrk_exec)      /* serving node's worker: a record that wants a completion taken */         \
	X(wrk_posted)    /* a worker (or the forwarder): a completion posted to a ring */            \
	X(srv_collected) /* serving node: a completion read from the worker's ring */                \
	X(fwd_applied)   /* forwarding node: a completion of the reply matched to its record */

#define MEARAS_HOP_ENUM(name) MEARAS_HOP_##name,
enum mearas_hop { MEARAS_HOPS(MEARAS_HOP_ENUM) MEARAS_HOP_COUNT };
#undef MEARAS_HOP_ENUM

#ifdef MEARAS_HOPTRACE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define HOPTRACE_MAX (1u << 20)

struct mearas_hop_file {
	uint64_t n;
	uint64_t at[HOPTRACE_MAX];
};

/* The mapping of hop h in this process (per translation unit: each maps the
 * same file, and the count is shared through it); NULL when off. */
static inline struct mearas_hop_file *mearas_hop_file(enum mearas_hop h)
{
#define MEARAS_HOP_NAME(name) #name,
	static const char *const names[] = { MEARAS_HOPS(MEARAS_HOP_NAME) };
#undef MEARAS_HOP_NAME
	static struct mearas_hop_file *file[MEARAS_HOP_COUNT];
	static pid_t owner[MEARAS_HOP_COUNT]; /* a forked worker maps its own */
	static const char *dir;
	static int looked;

	if (!looked) {
		dir = getenv("MEARAS_HOPTRACE_DIR");
		looked = 1;
	}
	if (!dir || (unsigned)h >= MEARAS_HOP_COUNT)
		return NULL;
	if (!file[h] || owner[h] != getpid()) {
		char path[512];
		int fd;
		void *p;

		snprintf(path, sizeof(path), "%s/%d.%s", dir, (int)getpid(), names[h]);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return NULL;
		p = ftruncate(fd, sizeof(struct mearas_hop_file)) ? MAP_FAILED :
		    mmap(NULL, sizeof(struct mearas_hop_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (p == MAP_FAILED)
			return NULL;
		file[h] = p;
		owner[h] = getpid();
	}
	return file[h];
}

static inline void mearas_hop(enum mearas_hop h)
{
	struct mearas_hop_file *f = mearas_hop_file(h);
	struct timespec ts;
	uint64_t i;

	if (!f)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	i = __atomic_fetch_add(&f->n, 1, __ATOMIC_RELAXED);
	if (i < HOPTRACE_MAX)
		f->at[i] = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#else
static inline void mearas_hop(enum mearas_hop h)
{
	(void)h;
}
#endif

#endif
