// SPDX-License-Identifier: MIT
/*
 * Large copies between pageable memory and the staging buffers are split
 * over a few helper threads: one thread's memcpy (about 10 GB/s) would
 * otherwise cap pageable transfers well below what the DMA engines move.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mearas/ring.h"
#include "core.h"

#define PARCOPY_MIN   (1u << 20)
#define PARCOPY_MAX_THREADS 8

struct part {
	uint8_t *dst;
	const uint8_t *src;
	size_t n;
};

static struct {
	pthread_mutex_t busy;           /* one parallel copy at a time */
	pthread_mutex_t lock;
	pthread_cond_t go;
	struct part parts[PARCOPY_MAX_THREADS];
	unsigned nworkers;
	uint64_t generation;
	unsigned remaining;
} pool = { .busy = PTHREAD_MUTEX_INITIALIZER, .lock = PTHREAD_MUTEX_INITIALIZER,
	   .go = PTHREAD_COND_INITIALIZER };

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void *worker(void *arg)
{
	unsigned idx = (unsigned)(uintptr_t)arg;
	uint64_t seen = 0;

	for (;;) {
		struct part p;

		pthread_mutex_lock(&pool.lock);
		while (pool.generation == seen)
			pthread_cond_wait(&pool.go, &pool.lock);
		seen = pool.generation;
		p = pool.parts[idx];
		pthread_mutex_unlock(&pool.lock);
		memcpy(p.dst, p.src, p.n);
		__atomic_sub_fetch(&pool.remaining, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void pool_start(void)
{
	const char *e = getenv("MEARAS_COPY_THREADS");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = e ? (unsigned)strtoul(e, NULL, 10) : (unsigned)(cpus > 4 ? 3 : cpus > 1 ? cpus - 1 : 0);
	pthread_attr_t a;

	if (n > PARCOPY_MAX_THREADS - 1)
		n = PARCOPY_MAX_THREADS - 1;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	for (unsigned i = 0; i < n; i++) {
		pthread_t t;

		if (pthread_create(&t, &a, worker, (void *)(uintptr_t)(i + 1)))
			break;
		pool.nworkers++;
	}
	pthread_attr_destroy(&a);
}

void rt_parcopy(void *dst, const void *src, size_t n)
{
	unsigned parts;
	size_t each;

	pthread_once(&pool_once, pool_start);
	if (n < PARCOPY_MIN || !pool.nworkers || pthread_mutex_trylock(&pool.busy)) {
		memcpy(dst, src, n);
		return;
	}
	parts = pool.nworkers + 1;
	/* round up before aligning: the parts must cover every byte of n */
	each = ((n + parts - 1) / parts + 4095) & ~(size_t)4095;
	pthread_mutex_lock(&pool.lock);
	for (unsigned i = 1; i < parts; i++) {
		size_t off = each * i < n ? each * i : n;
		/* the last part takes whatever is left, rounding included */
		size_t len = i == parts - 1 ? n - off : (off + each <= n ? each : n - off);

		pool.parts[i] = (struct part){ (uint8_t *)dst + off, (const uint8_t *)src + off, len };
	}
	pool.remaining = parts - 1;
	pool.generation++;
	pthread_cond_broadcast(&pool.go);
	pthread_mutex_unlock(&pool.lock);
	memcpy(dst, src, each < n ? each : n);
	while (__atomic_load_n(&pool.remaining, __ATOMIC_ACQUIRE))
		mearas_cpu_relax();
	pthread_mutex_unlock(&pool.busy);
}
