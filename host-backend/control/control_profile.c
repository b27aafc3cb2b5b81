// SPDX-License-Identifier: MIT
/*
 * GetProfile: the node's GPUs (from a probe child, cached) and their load:
 * the vGPUs of instantiated assemblies per GPU, with each vGPU's call rate
 * over the last second from the workers' shared counters (vgpustats.h).
 * GPU utilization is not measured here (no NVML): always reported as 0 (the
 * metrics endpoint, control/metrics_gpu.c, reads NVML).
 * The link server's port, bind address and whether a cluster key is loaded
 * let the node agent tell whether other nodes can reach this node's GPUs.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assembly.h"
#include "control_internal.h"
#include "mearas/log.h"
#include "vgpustats.h"

#define PROBE_TIMEOUT_MS 8000
#define RATE_PERIOD_MS 1000

static const struct mdev_ops *dev_ops;
static const char *node_name;
static const struct remote_config *remote_cfg;
static Mearas__LinkServer link_server;
static struct probe_result probe;
static int64_t probe_at_ms = -1;

static uint64_t prev_records[VSTAT_SLOTS][MEARAS_MAX_VGPUS];
static int32_t prev_pid[VSTAT_SLOTS];
static double rate[VSTAT_SLOTS][MEARAS_MAX_VGPUS];
static int64_t sampled_at_ms;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void profile_init(const struct mdev_ops *ops, const char *node, const struct remote_config *remote)
{
	dev_ops = ops;
	node_name = node;
	remote_cfg = remote;
}

const struct probe_result *profile_gpus(int max_age_ms)
{
	int64_t now = now_ms();

	if (probe_at_ms < 0 || now - probe_at_ms > max_age_ms) {
		gpu_probe(dev_ops, PROBE_TIMEOUT_MS, &probe);
		probe_at_ms = now_ms();
		if (probe.status)
			log_warn("control: GPU probe failed: %s", probe.error);
	}
	return &probe;
}

void profile_sample_rates(void)
{
	struct vstat_slot *t = vstats_table();
	int64_t now = now_ms();
	double dt = (double)(now - sampled_at_ms) / 1000.0;

	if (!t || now - sampled_at_ms < RATE_PERIOD_MS)
		return;
	for (unsigned i = 0; i < VSTAT_SLOTS; i++) {
		int32_t pid = __atomic_load_n(&t[i].pid, __ATOMIC_ACQUIRE);

		if (pid <= 0) {
			prev_pid[i] = 0;
			continue;
		}
		if (kill(pid, 0) && errno == ESRCH) {
			/* the worker is gone; mearasd's main process folds and frees its slot */
			prev_pid[i] = 0;
			continue;
		}
		for (unsigned v = 0; v < MEARAS_MAX_VGPUS; v++) {
			uint64_t r = __atomic_load_n(&t[i].v[v].records, __ATOMIC_RELAXED);

			rate[i][v] = prev_pid[i] == pid && r >= prev_records[i][v] ?
					     (double)(r - prev_records[i][v]) / dt : 0.0;
			prev_records[i][v] = r;
		}
		prev_pid[i] = pid;
	}
	sampled_at_ms = now;
}

static double assembly_rate(const char *id, unsigned ordinal)
{
	struct vstat_slot *t = vstats_table();
	double sum = 0;

	if (!t)
		return 0;
	for (unsigned i = 0; i < VSTAT_SLOTS; i++)
		if (prev_pid[i] > 0 && ordinal < t[i].nvgpus &&
		    !strncmp(t[i].assembly, id, sizeof(t[i].assembly)))
			sum += rate[i][ordinal];
	return sum;
}

struct load_builder {
	Mearas__GpuDynamic **load;
	size_t nload;
	bool failed;
};

static void add_vgpus(const struct assembly *a, void *ctx)
{
	struct load_builder *b = ctx;

	for (unsigned k = 0; k < a->nvgpus; k++) {
		unsigned g = a->vgpus[k].gpu_index;
		Mearas__GpuDynamic *d;
		Mearas__VgpuLoad *l, **grown;

		if (g >= b->nload)
			continue;
		d = b->load[g];
		l = malloc(sizeof(*l));
		grown = realloc(d->vgpus, (d->n_vgpus + 1) * sizeof(*grown));
		if (!l || !grown) {
			free(l);
			if (grown)
				d->vgpus = grown;
			b->failed = true;
			return;
		}
		d->vgpus = grown;
		mearas__vgpu_load__init(l);
		l->assembly_id = strdup(a->id);
		l->ordinal = k;
		l->calls_per_second = assembly_rate(a->id, k);
		d->vgpus[d->n_vgpus++] = l;
		if (!l->assembly_id)
			b->failed = true;
	}
}

int profile_reply(Mearas__GetProfileReply *out, char *err, size_t errlen)
{
	const struct probe_result *p = profile_gpus(2000);
	struct load_builder b = { 0 };

	mearas__get_profile_reply__init(out);
	out->node = (char *)node_name;
	mearas__link_server__init(&link_server);
	if (remote_cfg) {
		link_server.port = remote_cfg->link_port;
		link_server.bind = (char *)(remote_cfg->link_bind ? remote_cfg->link_bind : "");
		link_server.key_configured = remote_cfg->key_len > 0;
	}
	out->link = &link_server;
	if (p->status) {
		snprintf(err, errlen, "cannot read this node's GPUs: %s", p->error);
		return -1;
	}
	out->gpus = calloc(p->count, sizeof(*out->gpus));
	out->load = calloc(p->count, sizeof(*out->load));
	if (!out->gpus || !out->load)
		goto nomem;
	for (uint32_t i = 0; i < p->count; i++) {
		Mearas__GpuStatic *s = calloc(1, sizeof(*s));
		Mearas__GpuDynamic *d = calloc(1, sizeof(*d));

		if (s)
			out->gpus[out->n_gpus++] = s;
		if (d)
			out->load[out->n_load++] = d;
		if (!s || !d)
			goto nomem;
		mearas__gpu_static__init(s);
		s->index = i;
		s->name = (char *)p->gpus[i].name;
		s->cc_major = p->gpus[i].cc_major;
		s->cc_minor = p->gpus[i].cc_minor;
		s->memory_bytes = p->gpus[i].memory_bytes;
		s->sm_count = p->gpus[i].sm_count;
		s->interconnect = (char *)""; /* not known to mearasd */
		mearas__gpu_dynamic__init(d);
		d->index = i;
		/* 0 when the device could not tell (never happens with sim or cuda) */
		d->free_memory_bytes = p->gpus[i].free_known ? p->gpus[i].free_bytes : 0;
	}
	b.load = out->load;
	b.nload = out->n_load;
	assembly_foreach(add_vgpus, &b);
	if (b.failed)
		goto nomem;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory building the profile");
	return -1;
}

void profile_reply_free(Mearas__GetProfileReply *r)
{
	for (size_t i = 0; i < r->n_load; i++) {
		for (size_t k = 0; k < r->load[i]->n_vgpus; k++) {
			free(r->load[i]->vgpus[k]->assembly_id);
			free(r->load[i]->vgpus[k]);
		}
		free(r->load[i]->vgpus);
		free(r->load[i]);
	}
	for (size_t i = 0; i < r->n_gpus; i++)
		free(r->gpus[i]);
	free(r->gpus);
	free(r->load);
}
