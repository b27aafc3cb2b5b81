// SPDX-License-Identifier: MIT
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attached.h"

static struct attached_slot *table;
static struct attached_slot *mine;

int attached_init(void)
{
	void *p;

	if (table)
		return 0;
	p = mmap(NULL, sizeof(*table) * ATTACHED_SLOTS, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	table = p;
	return 0;
}

static bool gone(int32_t pid)
{
	return pid > 0 && kill(pid, 0) && errno == ESRCH;
}

void attached_claim(const char *assembly, int32_t client_pid, const char *vm)
{
	if (!table || !assembly[0])
		return;
	for (unsigned i = 0; i < ATTACHED_SLOTS; i++) {
		struct attached_slot *s = &table[i];
		int32_t expect = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);

		/* free, or left by a worker that died without giving it back */
		if (expect < 0 || (expect > 0 && !gone(expect)))
			continue;
		if (!__atomic_compare_exchange_n(&s->pid, &expect, -1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		s->client_pid = client_pid > 0 ? client_pid : 0;
		snprintf(s->assembly, sizeof(s->assembly), "%s", assembly);
		snprintf(s->vm, sizeof(s->vm), "%s", vm);
		__atomic_store_n(&s->pid, (int32_t)getpid(), __ATOMIC_RELEASE);
		mine = s;
		return;
	}
}

void attached_release(void)
{
	if (mine)
		__atomic_store_n(&mine->pid, 0, __ATOMIC_RELEASE);
	mine = NULL;
}

void attached_foreach(const char *id, void (*fn)(const struct attached_slot *s, void *ctx), void *ctx)
{
	for (unsigned i = 0; table && i < ATTACHED_SLOTS; i++) {
		struct attached_slot copy;
		int32_t pid = __atomic_load_n(&table[i].pid, __ATOMIC_ACQUIRE);

		if (pid <= 0 || gone(pid))
			continue;
		copy = table[i];
		copy.assembly[sizeof(copy.assembly) - 1] = 0;
		copy.vm[sizeof(copy.vm) - 1] = 0;
		if (__atomic_load_n(&table[i].pid, __ATOMIC_ACQUIRE) == pid && !strcmp(copy.assembly, id))
			fn(&copy, ctx);
	}
}
