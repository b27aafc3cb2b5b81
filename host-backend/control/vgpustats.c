// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mearas/log.h"
#include "vgpustats.h"

/* finished series kept at most; past it the one seen longest ago goes */
#define VSTAT_DONE_MAX 4096

static struct vstat_slot *table;
static struct vstat_slot *mine;     /* a worker's own slot */

/* mearasd's main process only: the finished series, under done_lock */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vstat_series *done;
static unsigned ndone;
static uint64_t fold_clock;

int vstats_init(void)
{
	void *p;

	if (table)
		return 0;
	p = mmap(NULL, sizeof(struct vstat_slot) * VSTAT_SLOTS, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	table = p;
	return 0;
}

struct vstat_slot *vstats_table(void)
{
	return table;
}

void vstats_claim(const char *assembly, const char *owner, unsigned owner_slot, unsigned nvgpus)
{
	int32_t self = (int32_t)getpid();

	if (!table)
		return;
	for (unsigned i = 0; i < VSTAT_SLOTS; i++) {
		int32_t expect = 0;
		struct vstat_slot *s = &table[i];

		if (!__atomic_compare_exchange_n(&s->pid, &expect, -1, false, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		/* -1 while filling in: readers skip it */
		snprintf(s->assembly, sizeof(s->assembly), "%s", assembly);
		snprintf(s->owner, sizeof(s->owner), "%s", owner);
		s->owner_slot = owner_slot;
		s->ended = 0;
		s->nvgpus = nvgpus;
		memset(s->v, 0, sizeof(s->v));
		__atomic_store_n(&s->pid, self, __ATOMIC_RELEASE);
		mine = s;
		return;
	}
	log_warn("call-rate table full: this client's calls are not counted");
}

struct vstat_vgpu *vstats_vgpu(unsigned v)
{
	return mine && v < MEARAS_MAX_VGPUS ? &mine->v[v] : NULL;
}

void vstats_publish(unsigned v, uint64_t records)
{
	if (mine && v < MEARAS_MAX_VGPUS)
		vstat_set(&mine->v[v].records, records);
}

void vstats_release(void)
{
	/* the slot stays claimed: mearasd folds it once this process is gone */
	mine = NULL;
}

/* ---- mearasd's main process: series ---- */

static bool same_series(const struct vstat_series *a, const char *owner, const char *assembly,
			const struct vstat_vgpu *v, unsigned k)
{
	return a->vgpu == k && a->gpu == v->gpu && a->remote == v->remote && !strcmp(a->owner, owner) &&
	       !strcmp(a->assembly, assembly) && !strcmp(a->peer, v->remote ? v->peer : "");
}

static void series_init(struct vstat_series *a, const char *owner, const char *assembly,
			const struct vstat_vgpu *v, unsigned k)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->owner, sizeof(a->owner), "%s", owner);
	snprintf(a->assembly, sizeof(a->assembly), "%s", assembly);
	snprintf(a->peer, sizeof(a->peer), "%s", v->remote ? v->peer : "");
	a->vgpu = k;
	a->gpu = v->gpu;
	a->remote = v->remote;
}

/* Adds v's counters to a (the gauges: as the caller says). */
static void series_add(struct vstat_series *a, const struct vstat_vgpu *v, bool live)
{
	struct vstat_vgpu *s = &a->sum;

	s->records += v->records;
	for (unsigned c = 0; c < MEARAS_OPCLASS_COUNT; c++)
		s->calls[c] += v->calls[c];
	s->bytes_h2d += v->bytes_h2d;
	s->bytes_d2h += v->bytes_d2h;
	s->errors += v->errors;
	s->sync_count += v->sync_count;
	s->sync_ns += v->sync_ns;
	for (unsigned b = 0; b <= VSTAT_LAT_BUCKETS; b++)
		s->sync_bucket[b] += v->sync_bucket[b];
	s->link_bytes_sent += v->link_bytes_sent;
	s->link_bytes_received += v->link_bytes_received;
	s->link_batches += v->link_batches;
	s->link_msgs += v->link_msgs;
	if (v->link_state != VSTAT_LINK_NONE)
		a->links_opened++;
	if (!live)
		return;
	a->live++;
	s->mem_used += v->mem_used;
	if (v->mem_quota > s->mem_quota)
		s->mem_quota = v->mem_quota;
	if (v->link_state == VSTAT_LINK_UP)
		a->links_up++;
	else if (v->link_state == VSTAT_LINK_BROKEN)
		a->links_broken++;
	if (v->link_rtt_ns)
		s->link_rtt_ns = v->link_rtt_ns;
}

/* A copy of a live slot's vGPU, read field by field with relaxed loads. */
static void read_vgpu(const struct vstat_vgpu *src, struct vstat_vgpu *dst)
{
	const uint64_t *from = (const uint64_t *)src;
	uint64_t *to = (uint64_t *)dst;
	size_t words = offsetof(struct vstat_vgpu, link_state) / sizeof(uint64_t);

	_Static_assert(offsetof(struct vstat_vgpu, link_state) % sizeof(uint64_t) == 0, "counters are words");
	for (size_t i = 0; i < words; i++)
		to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
	dst->link_state = __atomic_load_n(&src->link_state, __ATOMIC_RELAXED);
	/* set once before the vGPU's thread starts */
	dst->gpu = src->gpu;
	dst->remote = src->remote;
	memcpy(dst->peer, src->peer, sizeof(dst->peer));
	dst->peer[sizeof(dst->peer) - 1] = 0;
}

static struct vstat_series *done_find(const char *owner, const char *assembly, const struct vstat_vgpu *v,
				      unsigned k)
{
	struct vstat_series *a;
	unsigned oldest = 0;

	for (unsigned i = 0; i < ndone; i++)
		if (same_series(&done[i], owner, assembly, v, k))
			return &done[i];
	if (!done && !(done = calloc(VSTAT_DONE_MAX, sizeof(*done))))
		return NULL;
	if (ndone == VSTAT_DONE_MAX) {
		static bool said;

		for (unsigned i = 1; i < ndone; i++)
			if (done[i].last_seen < done[oldest].last_seen)
				oldest = i;
		if (!said)
			log_warn("metrics: %u finished series kept at most: the oldest are dropped", VSTAT_DONE_MAX);
		said = true;
		a = &done[oldest];
	} else {
		a = &done[ndone++];
	}
	series_init(a, owner, assembly, v, k);
	return a;
}

/* s's process is gone: what it wrote is final; into the totals, then freed
 * (under done_lock) */
static void fold_slot(struct vstat_slot *s)
{
	s->assembly[sizeof(s->assembly) - 1] = 0;
	s->owner[sizeof(s->owner) - 1] = 0;
	for (unsigned k = 0; k < s->nvgpus && k < MEARAS_MAX_VGPUS; k++) {
		struct vstat_vgpu v;
		struct vstat_series *a;

		read_vgpu(&s->v[k], &v);
		a = done_find(s->owner, s->assembly, &v, k);
		if (a) {
			series_add(a, &v, false);
			a->last_seen = ++fold_clock;
		}
	}
	__atomic_store_n(&s->pid, 0, __ATOMIC_RELEASE);
}

void vstats_worker_gone(unsigned owner_slot)
{
	if (!table || owner_slot == VSTAT_NO_OWNER_SLOT)
		return;
	pthread_mutex_lock(&done_lock);
	for (unsigned i = 0; i < VSTAT_SLOTS; i++) {
		struct vstat_slot *s = &table[i];
		int32_t pid = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);

		/* -1: a live worker filling it in (its owner_slot may be an earlier one's) */
		if (pid <= 0 || s->owner_slot != owner_slot)
			continue;
		/* the worker is gone: what it wrote is final */
		fold_slot(s);
	}
	pthread_mutex_unlock(&done_lock);
}

void vstats_child_ended(int32_t pid)
{
	if (!table || pid <= 0)
		return;
	/* not reaped yet: no other process has this pid, so every slot with it is the child's */
	for (unsigned i = 0; i < VSTAT_SLOTS; i++)
		if (__atomic_load_n(&table[i].pid, __ATOMIC_ACQUIRE) == pid &&
		    table[i].owner_slot == VSTAT_NO_OWNER_SLOT)
			__atomic_store_n(&table[i].ended, 1, __ATOMIC_RELEASE);
}

/* under done_lock */
static unsigned fold_ended_locked(void)
{
	unsigned live = 0;

	for (unsigned i = 0; i < VSTAT_SLOTS; i++) {
		struct vstat_slot *s = &table[i];
		int32_t pid = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);

		if (pid <= 0 || s->owner_slot != VSTAT_NO_OWNER_SLOT)
			continue;
		/* ended: marked by its VM worker before reaping it; gone: no such
		 * process (its VM worker died, and it with it); a pid taken by
		 * another process since only delays the fold */
		if (__atomic_load_n(&s->ended, __ATOMIC_ACQUIRE) || (kill(pid, 0) && errno == ESRCH))
			fold_slot(s);
		else
			live++;
	}
	return live;
}

unsigned vstats_fold_ended(void)
{
	unsigned live;

	if (!table)
		return 0;
	pthread_mutex_lock(&done_lock);
	live = fold_ended_locked();
	pthread_mutex_unlock(&done_lock);
	return live;
}

int vstats_snapshot(struct vstat_series **out)
{
	struct vstat_series *list;
	unsigned n = 0, cap;

	*out = NULL;
	if (!table)
		return 0;
	pthread_mutex_lock(&done_lock);
	/* an ended slot worker's counters are in the totals before anything is read */
	fold_ended_locked();
	cap = ndone;
	for (unsigned i = 0; i < VSTAT_SLOTS; i++)
		if (__atomic_load_n(&table[i].pid, __ATOMIC_ACQUIRE) > 0)
			cap += MEARAS_MAX_VGPUS;
	list = malloc((cap ? cap : 1) * sizeof(*list));
	if (!list) {
		pthread_mutex_unlock(&done_lock);
		return -1;
	}
	if (ndone)
		memcpy(list, done, ndone * sizeof(*list));
	n = ndone;
	for (unsigned i = 0; i < VSTAT_SLOTS; i++) {
		struct vstat_slot *s = &table[i];
		char owner[VSTAT_OWNER], assembly[VSTAT_NAME];
		unsigned nv;

		/* a slot claimed since the count waits for the next scrape */
		if (__atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) <= 0 || n + MEARAS_MAX_VGPUS > cap)
			continue;
		memcpy(owner, s->owner, sizeof(owner));
		memcpy(assembly, s->assembly, sizeof(assembly));
		owner[sizeof(owner) - 1] = assembly[sizeof(assembly) - 1] = 0;
		nv = s->nvgpus < MEARAS_MAX_VGPUS ? s->nvgpus : MEARAS_MAX_VGPUS;
		for (unsigned k = 0; k < nv; k++) {
			struct vstat_vgpu v;
			struct vstat_series *a = NULL;

			read_vgpu(&s->v[k], &v);
			for (unsigned j = 0; j < n && !a; j++)
				if (same_series(&list[j], owner, assembly, &v, k))
					a = &list[j];
			if (!a) {
				a = &list[n++];
				series_init(a, owner, assembly, &v, k);
			}
			series_add(a, &v, true);
		}
	}
	pthread_mutex_unlock(&done_lock);
	*out = list;
	return (int)n;
}
