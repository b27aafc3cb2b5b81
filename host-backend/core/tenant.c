// SPDX-License-Identifier: MIT
/* Per-identity accounting of client workers (tenant.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mearas/log.h"
#include "tenant.h"

struct tslot {
	uint32_t used;
	uint32_t ident;                 /* index into ids */
	uint32_t pool;                  /* 1 + index into pools; 0 before the hello */
	uint64_t data;                  /* data area bytes charged */
	uint64_t dev[MEARAS_MAX_VGPUS]; /* device memory bytes charged, per vGPU */
};

struct tident {
	struct tenant_id id;
	uint32_t workers;               /* 0: the entry is free */
	uint64_t data;
};

struct tpool {
	uint32_t refs;                  /* workers charging it; 0: free */
	uint32_t ident;
	char name[64];                  /* assembly id, "" = none */
	uint64_t dev[MEARAS_MAX_VGPUS];
};

struct ttable {
	pthread_mutex_t lock;
	struct tenant_limits lim;
	uint32_t nworkers;
	struct tslot slots[TENANT_SLOTS_MAX];
	struct tident ids[TENANT_SLOTS_MAX];
	struct tpool pools[TENANT_SLOTS_MAX];
};

static struct ttable *T;

const char *tenant_id_str(const struct tenant_id *id, char *buf, size_t len)
{
	switch (id->kind) {
	case TENANT_UID:
		snprintf(buf, len, "uid %u", id->uid);
		break;
	case TENANT_VM:
		snprintf(buf, len, "VM %.*s", (int)sizeof(id->vm), id->vm);
		break;
	default:
		snprintf(buf, len, "nobody");
		break;
	}
	return buf;
}

bool tenant_id_equal(const struct tenant_id *a, const struct tenant_id *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == TENANT_UID)
		return a->uid == b->uid;
	if (a->kind == TENANT_VM)
		return !strncmp(a->vm, b->vm, sizeof(a->vm));
	return false;
}

int tenant_id_parse(const char *s, struct tenant_id *id)
{
	memset(id, 0, sizeof(*id));
	if (!strncmp(s, "uid:", 4)) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(s + 4, &end, 10);
		if (errno || end == s + 4 || *end || s[4] == '-' || v > UINT32_MAX - 1)
			return -1;
		id->kind = TENANT_UID;
		id->uid = (uint32_t)v;
		return 0;
	}
	if (!strncmp(s, "vm:", 3) && s[3] && strlen(s + 3) < sizeof(id->vm)) {
		id->kind = TENANT_VM;
		snprintf(id->vm, sizeof(id->vm), "%s", s + 3);
		return 0;
	}
	return -1;
}

bool tenant_privileged(const struct tenant_id *id)
{
	return id->kind == TENANT_UID && (id->uid == 0 || id->uid == (uint32_t)geteuid());
}

int tenant_table_init(const struct tenant_limits *lim)
{
	pthread_mutexattr_t attr;
	void *p = mmap(NULL, sizeof(*T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		log_err("client accounting table (%zu bytes): %s", sizeof(*T), strerror(errno));
		return -1;
	}
	T = p;
	T->lim = *lim;
	if (T->lim.max_workers > TENANT_SLOTS_MAX)
		T->lim.max_workers = TENANT_SLOTS_MAX;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	if (pthread_mutex_init(&T->lock, &attr)) {
		log_err("client accounting table: cannot make its lock");
		return -1;
	}
	pthread_mutexattr_destroy(&attr);
	return 0;
}

/* The totals from the slots (a worker died holding the lock). */
static void recompute(void)
{
	for (unsigned i = 0; i < T->lim.max_workers; i++) {
		T->ids[i].workers = 0;
		T->ids[i].data = 0;
		T->pools[i].refs = 0;
		memset(T->pools[i].dev, 0, sizeof(T->pools[i].dev));
	}
	T->nworkers = 0;
	for (unsigned i = 0; i < T->lim.max_workers; i++) {
		struct tslot *s = &T->slots[i];

		if (!s->used)
			continue;
		T->nworkers++;
		T->ids[s->ident].workers++;
		T->ids[s->ident].data += s->data;
		if (s->pool) {
			struct tpool *p = &T->pools[s->pool - 1];

			p->refs++;
			for (unsigned v = 0; v < MEARAS_MAX_VGPUS; v++)
				p->dev[v] += s->dev[v];
		}
	}
}

static void lock(void)
{
	if (pthread_mutex_lock(&T->lock) == EOWNERDEAD) {
		log_warn("a worker died while updating the client accounting table: totals recomputed");
		recompute();
		pthread_mutex_consistent(&T->lock);
	}
}

static void unlock(void)
{
	pthread_mutex_unlock(&T->lock);
}

unsigned tenant_worker_add(const struct tenant_id *id, char *err, size_t errlen)
{
	struct tident *e = NULL;
	unsigned ei = 0, si;
	char who[96];

	tenant_id_str(id, who, sizeof(who));
	lock();
	if (T->nworkers >= T->lim.max_workers) {
		snprintf(err, errlen, "mearasd serves %u clients already (--max-clients); try again later",
			 T->nworkers);
		goto refuse;
	}
	/* the identity's entry, else a free one (there are as many as slots) */
	for (unsigned i = 0; i < T->lim.max_workers; i++) {
		if (T->ids[i].workers && tenant_id_equal(&T->ids[i].id, id)) {
			e = &T->ids[i];
			ei = i;
			break;
		}
		if (!e && !T->ids[i].workers) {
			e = &T->ids[i];
			ei = i;
		}
	}
	if (e->workers >= T->lim.max_workers_per_id) {
		snprintf(err, errlen, "%s has %u clients connected already, the most one user may have "
			 "(mearasd --max-clients-per-user)", who, e->workers);
		goto refuse;
	}
	for (si = 0; si < T->lim.max_workers && T->slots[si].used; si++)
		;
	if (!e->workers) {
		memset(e, 0, sizeof(*e));
		e->id = *id;
	}
	e->workers++;
	T->nworkers++;
	T->slots[si] = (struct tslot){ .used = 1, .ident = ei };
	unlock();
	return si + 1;
refuse:
	unlock();
	return 0;
}

void tenant_worker_gone(unsigned slot)
{
	struct tslot *s;

	if (!T || !slot || slot > T->lim.max_workers)
		return;
	lock();
	s = &T->slots[slot - 1];
	if (s->used) {
		struct tident *e = &T->ids[s->ident];

		e->workers--;
		e->data -= s->data;
		if (s->pool) {
			struct tpool *p = &T->pools[s->pool - 1];

			p->refs--;
			for (unsigned v = 0; v < MEARAS_MAX_VGPUS; v++)
				p->dev[v] -= s->dev[v];
		}
		memset(s, 0, sizeof(*s));
		T->nworkers--;
	}
	unlock();
}

int tenant_worker_hello(unsigned slot, const char *pool, uint64_t data_bytes, char *err, size_t errlen)
{
	struct tslot *s;
	struct tident *e;
	struct tpool *p = NULL;
	unsigned pi = 0;
	char who[96];

	if (!T || !slot || slot > T->lim.max_workers)
		return 0;
	lock();
	s = &T->slots[slot - 1];
	e = &T->ids[s->ident];
	tenant_id_str(&e->id, who, sizeof(who));
	if (e->data > T->lim.data_per_id || data_bytes > T->lim.data_per_id - e->data) {
		snprintf(err, errlen, "%s holds %llu MiB of data areas already; %llu MiB more exceed the %llu MiB "
			 "one user may pin (mearasd --user-data-mb; lower MEARAS_DATA_MB)", who,
			 (unsigned long long)(e->data >> 20), (unsigned long long)(data_bytes >> 20),
			 (unsigned long long)(T->lim.data_per_id >> 20));
		unlock();
		return -1;
	}
	for (unsigned i = 0; i < T->lim.max_workers; i++) {
		struct tpool *q = &T->pools[i];

		if (q->refs && q->ident == s->ident && !strncmp(q->name, pool, sizeof(q->name))) {
			p = q;
			pi = i;
			break;
		}
		if (!p && !q->refs) {
			p = q;
			pi = i;
		}
	}
	if (!p->refs) {
		memset(p, 0, sizeof(*p));
		p->ident = s->ident;
		snprintf(p->name, sizeof(p->name), "%s", pool);
	}
	p->refs++;
	s->pool = pi + 1;
	s->data = data_bytes;
	e->data += data_bytes;
	unlock();
	return 0;
}

int tenant_charge_dev(unsigned slot, unsigned v, uint64_t bytes, uint64_t quota)
{
	struct tslot *s;
	struct tpool *p;
	int r = 0;

	if (!T || !slot || slot > T->lim.max_workers || v >= MEARAS_MAX_VGPUS)
		return 0;
	lock();
	s = &T->slots[slot - 1];
	if (s->pool) {
		p = &T->pools[s->pool - 1];
		if (p->dev[v] > quota || bytes > quota - p->dev[v]) {
			r = -1;
		} else {
			p->dev[v] += bytes;
			s->dev[v] += bytes;
		}
	}
	unlock();
	return r;
}

void tenant_uncharge_dev(unsigned slot, unsigned v, uint64_t bytes)
{
	struct tslot *s;

	if (!T || !slot || slot > T->lim.max_workers || v >= MEARAS_MAX_VGPUS)
		return;
	lock();
	s = &T->slots[slot - 1];
	if (s->pool) {
		struct tpool *p = &T->pools[s->pool - 1];

		if (bytes > s->dev[v])
			bytes = s->dev[v];
		s->dev[v] -= bytes;
		p->dev[v] -= bytes;
	}
	unlock();
}

uint64_t tenant_dev_used(unsigned slot, unsigned v)
{
	uint64_t used = 0;
	struct tslot *s;

	if (!T || !slot || slot > T->lim.max_workers || v >= MEARAS_MAX_VGPUS)
		return 0;
	lock();
	s = &T->slots[slot - 1];
	if (s->pool)
		used = T->pools[s->pool - 1].dev[v];
	unlock();
	return used;
}
