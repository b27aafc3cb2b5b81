// SPDX-License-Identifier: MIT
/*
 * The exposition text: one family after the other (# HELP, # TYPE, then its
 * samples), from a snapshot of the vGPU series (vgpustats.c). Per vGPU of
 * each identity and assembly: calls by op class, bytes by direction,
 * errors, synchronizing-call latency (a histogram), memory used against the
 * quota; per remote link: state, round trip, bytes, batches, messages, links
 * opened; per GPU: what NVML says (metrics_gpu.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "vgpustats.h"

void mtext_printf(struct mtext *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	for (;;) {
		size_t room = t->cap - t->len;

		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if ((size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		{
			size_t ncap = (t->cap ? t->cap * 2 : 16384) + (size_t)n;
			char *nb = realloc(t->buf, ncap);

			if (!nb) {
				t->failed = true;
				return;
			}
			t->buf = nb;
			t->cap = ncap;
		}
	}
}

void mtext_label(struct mtext *t, const char *name, const char *value)
{
	mtext_printf(t, "%s=\"", name);
	for (const char *p = value; *p; p++) {
		if (*p == '\\')
			mtext_printf(t, "\\\\");
		else if (*p == '"')
			mtext_printf(t, "\\\"");
		else if (*p == '\n')
			mtext_printf(t, "\\n");
		else
			mtext_printf(t, "%c", *p);
	}
	mtext_printf(t, "\"");
}

void mtext_free(struct mtext *t)
{
	free(t->buf);
	*t = (struct mtext){ 0 };
}

static void family(struct mtext *t, const char *name, const char *type, const char *help)
{
	mtext_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* {owner=...,assembly=...,vgpu=...,gpu=...,kind=...[,extra]} of a vGPU series */
static void vgpu_labels(struct mtext *t, const struct vstat_series *s, const char *extra)
{
	mtext_printf(t, "{");
	mtext_label(t, "owner", s->owner);
	mtext_printf(t, ",");
	mtext_label(t, "assembly", s->assembly);
	mtext_printf(t, ",vgpu=\"%u\",gpu=\"%d\",kind=\"%s\"%s%s}", s->vgpu, s->gpu, s->remote ? "remote" : "local",
		     extra ? "," : "", extra ? extra : "");
}

static void link_labels(struct mtext *t, const struct vstat_series *s, const char *extra)
{
	mtext_printf(t, "{");
	mtext_label(t, "peer", s->peer);
	mtext_printf(t, ",");
	mtext_label(t, "owner", s->owner);
	mtext_printf(t, ",");
	mtext_label(t, "assembly", s->assembly);
	mtext_printf(t, ",vgpu=\"%u\",gpu=\"%d\"%s%s}", s->vgpu, s->gpu, extra ? "," : "", extra ? extra : "");
}

typedef void (*labels_fn)(struct mtext *t, const struct vstat_series *s, const char *extra);

/* name{labels} of a vGPU series or of its link: a sample's value follows */
static void series(struct mtext *t, const char *name, labels_fn labels, const struct vstat_series *s,
		   const char *extra)
{
	mtext_printf(t, "%s", name);
	labels(t, s, extra);
}

static void sample(struct mtext *t, const char *name, labels_fn labels, const struct vstat_series *s,
		   const char *extra, unsigned long long v)
{
	series(t, name, labels, s, extra);
	mtext_printf(t, " %llu\n", v);
}

/* a sample in seconds of a count of nanoseconds */
static void seconds(struct mtext *t, const char *name, labels_fn labels, const struct vstat_series *s,
		    const char *extra, uint64_t ns)
{
	series(t, name, labels, s, extra);
	mtext_printf(t, " %.9f\n", (double)ns / 1e9);
}

static void render_vgpus(struct mtext *t, const struct vstat_series *ss, int n)
{
	static const uint32_t bounds_us[VSTAT_LAT_BUCKETS] = VSTAT_LAT_BOUNDS_US;
	char extra[64];

	family(t, "mearas_vgpu_clients", "gauge", "Client processes using the vGPU now.");
	for (int i = 0; i < n; i++) {
		sample(t, "mearas_vgpu_clients", vgpu_labels, &ss[i], NULL, ss[i].live);
	}
	family(t, "mearas_vgpu_calls_total", "counter",
	       "Calls (records) run on the vGPU, by op class (include/mearas/ops.spec).");
	for (int i = 0; i < n; i++)
		for (unsigned c = 0; c < MEARAS_OPCLASS_COUNT; c++) {
			snprintf(extra, sizeof(extra), "class=\"%s\"", mearas_op_class_name(c));
			sample(t, "mearas_vgpu_calls_total", vgpu_labels, &ss[i], extra, ss[i].sum.calls[c]);
		}
	family(t, "mearas_vgpu_copy_bytes_total", "counter",
	       "Bytes copied between the client's host memory and the vGPU, by direction.");
	for (int i = 0; i < n; i++) {
		sample(t, "mearas_vgpu_copy_bytes_total", vgpu_labels, &ss[i], "direction=\"h2d\"",
		       ss[i].sum.bytes_h2d);
		sample(t, "mearas_vgpu_copy_bytes_total", vgpu_labels, &ss[i], "direction=\"d2h\"",
		       ss[i].sum.bytes_d2h);
	}
	family(t, "mearas_vgpu_errors_total", "counter", "Calls on the vGPU that failed.");
	for (int i = 0; i < n; i++) {
		sample(t, "mearas_vgpu_errors_total", vgpu_labels, &ss[i], NULL, ss[i].sum.errors);
	}
	family(t, "mearas_vgpu_sync_latency_seconds", "histogram",
	       "Synchronizing calls: from taking the record off the ring to posting its completion.");
	for (int i = 0; i < n; i++) {
		uint64_t cum = 0;

		for (unsigned b = 0; b <= VSTAT_LAT_BUCKETS; b++) {
			cum += ss[i].sum.sync_bucket[b];
			if (b < VSTAT_LAT_BUCKETS)
				snprintf(extra, sizeof(extra), "le=\"%g\"", bounds_us[b] / 1e6);
			else
				snprintf(extra, sizeof(extra), "le=\"+Inf\"");
			sample(t, "mearas_vgpu_sync_latency_seconds_bucket", vgpu_labels, &ss[i], extra, cum);
		}
		seconds(t, "mearas_vgpu_sync_latency_seconds_sum", vgpu_labels, &ss[i], NULL, ss[i].sum.sync_ns);
		/* the buckets' total, read in the same pass (the count field may be a step ahead) */
		sample(t, "mearas_vgpu_sync_latency_seconds_count", vgpu_labels, &ss[i], NULL, cum);
	}
	/* memory: local vGPUs with clients now (a remote vGPU's memory is the serving node's) */
	family(t, "mearas_vgpu_memory_used_bytes", "gauge", "Device memory the vGPU's clients hold now.");
	for (int i = 0; i < n; i++)
		if (ss[i].live && !ss[i].remote) {
			sample(t, "mearas_vgpu_memory_used_bytes", vgpu_labels, &ss[i], NULL, ss[i].sum.mem_used);
		}
	family(t, "mearas_vgpu_memory_quota_bytes", "gauge",
	       "Device memory quota of the vGPU (shared by the identity's clients of one assembly).");
	for (int i = 0; i < n; i++)
		if (ss[i].live && !ss[i].remote) {
			sample(t, "mearas_vgpu_memory_quota_bytes", vgpu_labels, &ss[i], NULL, ss[i].sum.mem_quota);
		}
}

/* the links' counters, remote vGPU series only: one sample each, or two
 * (label[0] and label[1], by direction); at: their offsets in the series */
static const struct link_counter {
	const char *name, *help, *label[2];
	size_t at[2];
} link_counters[] = {
	{ "mearas_link_opened_total",
	  "Links opened to the peer for this vGPU (one per client process; more than one: reconnections).",
	  { NULL, NULL },
	  { offsetof(struct vstat_series, links_opened), 0 } },
	{ "mearas_link_bytes_total",
	  "Bytes on the link, by direction.",
	  { "direction=\"sent\"", "direction=\"received\"" },
	  { offsetof(struct vstat_series, sum.link_bytes_sent),
	    offsetof(struct vstat_series, sum.link_bytes_received) } },
	{ "mearas_link_batches_total",
	  "Batches of records sent on the link.",
	  { NULL, NULL },
	  { offsetof(struct vstat_series, sum.link_batches), 0 } },
	{ "mearas_link_messages_total",
	  "Messages (records and calls) sent on the link.",
	  { NULL, NULL },
	  { offsetof(struct vstat_series, sum.link_msgs), 0 } },
};

static uint64_t field_u64(const struct vstat_series *s, size_t at)
{
	uint64_t v;

	memcpy(&v, (const char *)s + at, sizeof(v));
	return v;
}

static void render_links(struct mtext *t, const struct vstat_series *ss, int n)
{
	family(t, "mearas_link_state", "gauge",
	       "Live links of remote vGPUs by state (a broken link is not re-made: its client's calls fail).");
	for (int i = 0; i < n; i++) {
		if (!ss[i].remote || !ss[i].live)
			continue;
		sample(t, "mearas_link_state", link_labels, &ss[i], "state=\"up\"", ss[i].links_up);
		sample(t, "mearas_link_state", link_labels, &ss[i], "state=\"broken\"", ss[i].links_broken);
	}
	family(t, "mearas_link_rtt_seconds", "gauge",
	       "Round trip of the link's last heartbeat (sent when the link is quiet).");
	for (int i = 0; i < n; i++) {
		if (!ss[i].remote || !ss[i].live || !ss[i].sum.link_rtt_ns)
			continue;
		seconds(t, "mearas_link_rtt_seconds", link_labels, &ss[i], NULL, ss[i].sum.link_rtt_ns);
	}
	for (size_t c = 0; c < sizeof(link_counters) / sizeof(link_counters[0]); c++) {
		const struct link_counter *lc = &link_counters[c];

		family(t, lc->name, "counter", lc->help);
		for (int i = 0; i < n; i++) {
			if (!ss[i].remote)
				continue;
			for (int k = 0; k < (lc->label[1] ? 2 : 1); k++)
				sample(t, lc->name, link_labels, &ss[i], lc->label[k], field_u64(&ss[i], lc->at[k]));
		}
	}
}

int metrics_render(const struct metrics_source *src, struct mtext *t)
{
	struct vstat_series *ss;
	int n = vstats_snapshot(&ss);

	family(t, "mearas_info", "gauge", "This mearasd: its node name and device.");
	mtext_printf(t, "mearas_info{");
	mtext_label(t, "node", src->node);
	mtext_printf(t, ",");
	mtext_label(t, "device", src->device);
	mtext_printf(t, "} 1\n");
	if (n < 0)
		return -1;
	render_vgpus(t, ss, n);
	render_links(t, ss, n);
	free(ss);
	if (src->nvml)
		metrics_render_gpus(t);
	else
		mtext_printf(t, "# mearas: device %s: no GPU utilization (it is measured by NVML on GPUs only)\n",
			     src->device);
	return t->failed ? -1 : 0;
}
