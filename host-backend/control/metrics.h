/* SPDX-License-Identifier: MIT */
/*
 * mearasd's metrics: Prometheus text exposition (version 0.0.4) of the
 * workers' shared counters (vgpustats.h), the remote links and, on GPUs,
 * NVML's utilization, served over HTTP on GET /metrics (metrics_http.c,
 * libmicrohttpd) when --metrics-port is given; off by default.
 */
#ifndef MEARAS_METRICS_H
#define MEARAS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_DEFAULT_BIND "127.0.0.1"

/* A growing text buffer; on failure it keeps failed set and stops growing. */
struct mtext {
	char *buf;
	size_t len, cap;
	bool failed;
};

void mtext_printf(struct mtext *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* a label value, escaped as the exposition format wants (\\, \", \n) */
void mtext_label(struct mtext *t, const char *name, const char *value);
void mtext_free(struct mtext *t);

/* What the exposition describes besides the counters (set once at start). */
struct metrics_source {
	const char *node;               /* this node's name */
	const char *device;             /* "cuda" or "sim" */
	bool nvml;                      /* read GPU utilization from the host's NVML */
};

/* metrics_text.c: the whole exposition into t; 0, or -1 (out of memory) */
int metrics_render(const struct metrics_source *src, struct mtext *t);

/* metrics_gpu.c: the host's NVML (libnvidia-ml.so.1, dlopen'd at first use):
 * each GPU's figures into t, or a comment saying why there are none */
void metrics_render_gpus(struct mtext *t);

/* metrics_http.c: serve GET /metrics on bind:port in a thread of its own.
 * 0, or -1 with the reason on stderr. */
int metrics_start(const char *bind, uint16_t port, const struct metrics_source *src);
void metrics_stop(void);

#endif
