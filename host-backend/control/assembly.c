// SPDX-License-Identifier: MIT
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assembly.h"
#include "core/config.h"
#include "mearas/log.h"
#include "remote/config.h"

#define ASSEMBLY_MAX 1024

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct assembly *table[ASSEMBLY_MAX];

/* A worker is forked by the accept loop while the control thread may be
 * changing the table: hold the lock across fork so the child's copy is whole. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&table_lock);
}

static void fork_done(void)
{
	pthread_mutex_unlock(&table_lock);
}

static void install_fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}

void assembly_table_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, install_fork_handlers);
}

static int slot_of(const char *id)
{
	for (int i = 0; i < ASSEMBLY_MAX; i++)
		if (table[i] && !strcmp(table[i]->id, id))
			return i;
	return -1;
}

enum assembly_status assembly_add(const struct assembly *a)
{
	enum assembly_status st = ASSEMBLY_NO_MEMORY;
	struct assembly *copy;

	pthread_mutex_lock(&table_lock);
	if (slot_of(a->id) >= 0) {
		st = ASSEMBLY_EXISTS;
		goto out;
	}
	for (int i = 0; i < ASSEMBLY_MAX; i++) {
		if (table[i])
			continue;
		copy = malloc(sizeof(*copy));
		if (!copy)
			goto out;
		*copy = *a;
		copy->owner = strdup(a->owner ? a->owner : "");
		if (!copy->owner) {
			free(copy);
			goto out;
		}
		table[i] = copy;
		st = ASSEMBLY_OK;
		break;
	}
out:
	pthread_mutex_unlock(&table_lock);
	return st;
}

enum assembly_status assembly_remove(const char *id)
{
	struct assembly *a = NULL;
	int i;

	pthread_mutex_lock(&table_lock);
	i = slot_of(id);
	if (i >= 0) {
		a = table[i];
		table[i] = NULL;
	}
	pthread_mutex_unlock(&table_lock);
	if (!a)
		return ASSEMBLY_NOT_FOUND;
	free(a->owner);
	free(a);
	return ASSEMBLY_OK;
}

void assembly_foreach(void (*fn)(const struct assembly *a, void *ctx), void *ctx)
{
	pthread_mutex_lock(&table_lock);
	for (int i = 0; i < ASSEMBLY_MAX; i++)
		if (table[i])
			fn(table[i], ctx);
	pthread_mutex_unlock(&table_lock);
}

int assembly_find(const char *id, struct assembly *out)
{
	int i;

	pthread_mutex_lock(&table_lock);
	i = slot_of(id);
	if (i >= 0) {
		*out = *table[i];
		out->owner = NULL;
	}
	pthread_mutex_unlock(&table_lock);
	return i >= 0 ? 0 : -1;
}

int assembly_apply(const char *id, const struct tenant_id *who, bool privileged, unsigned asked_nvgpus,
		   struct backend_config *cfg, unsigned *nvgpus, char *err, size_t errlen)
{
	struct assembly a;
	char caller[96], owner[96];

	if (assembly_find(id, &a)) {
		snprintf(err, errlen, "assembly '%s' is not instantiated on this node "
			 "(never booked here, or released)", id);
		return -1;
	}
	tenant_id_str(who, caller, sizeof(caller));
	tenant_id_str(&a.who, owner, sizeof(owner));
	if (!tenant_id_equal(&a.who, who)) {
		if (!privileged) {
			/* the name alone is no credential: say so, and not whose it is */
			snprintf(err, errlen, "assembly '%s' was not booked for %s: only the identity it was "
				 "booked for may use it (mearas run books one for you)", id, caller);
			log_warn("%s named assembly %s, booked for %s: refused", caller, id, owner);
			return -1;
		}
		log_info("%s (privileged) uses assembly %s, booked for %s", caller, id, owner);
	}
	if (asked_nvgpus && asked_nvgpus != a.nvgpus) {
		snprintf(err, errlen, "MEARAS_VGPUS=%u but assembly '%s' has %u vGPU(s)",
			 asked_nvgpus, id, a.nvgpus);
		return -1;
	}
	for (unsigned i = 0; i < a.nvgpus; i++) {
		cfg->gpu_map[i] = (int)a.vgpus[i].gpu_index;
		cfg->quota[i] = a.vgpus[i].quota;
		memset(&cfg->remote.target[i], 0, sizeof(cfg->remote.target[i]));
		if (a.vgpus[i].remote[0]) {
			char spec[160];

			snprintf(spec, sizeof(spec), "%u=%s/%u", i, a.vgpus[i].remote, a.vgpus[i].gpu_index);
			if (remote_parse_target(&cfg->remote, spec)) {
				snprintf(err, errlen, "assembly '%s': bad remote address '%s'", id, a.vgpus[i].remote);
				return -1;
			}
		}
	}
	*nvgpus = a.nvgpus;
	return 0;
}
