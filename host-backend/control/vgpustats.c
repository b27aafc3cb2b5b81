// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mearas/log.h"
#include "vgpustats.h"

static struct vstat_slot *table;
static struct vstat_slot *mine;     /* a worker's own slot */

int vstats_init(void)
{
	void *p = mmap(NULL, sizeof(struct vstat_slot) * VSTAT_SLOTS, PROT_READ | PROT_WRITE,
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

void vstats_claim(const char *assembly, unsigned nvgpus, int32_t client_pid, const char *vm)
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
		s->nvgpus = nvgpus;
		s->client_pid = client_pid;
		snprintf(s->vm, sizeof(s->vm), "%s", vm);
		for (unsigned v = 0; v < MEARAS_MAX_VGPUS; v++)
			__atomic_store_n(&s->records[v], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->pid, self, __ATOMIC_RELEASE);
		mine = s;
		return;
	}
	log_warn("call-rate table full: this client's call rate is not reported");
}

void vstats_publish(unsigned v, uint64_t records)
{
	if (mine && v < MEARAS_MAX_VGPUS)
		__atomic_store_n(&mine->records[v], records, __ATOMIC_RELAXED);
}

void vstats_release(void)
{
	if (mine)
		__atomic_store_n(&mine->pid, 0, __ATOMIC_RELEASE);
	mine = NULL;
}
