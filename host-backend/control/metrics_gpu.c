// SPDX-License-Identifier: MIT
/*
 * The GPUs' own figures for the metrics, from the host's NVML: the driver's
 * libnvidia-ml.so.1, opened with dlopen on the first scrape (mearasd has no
 * build dependency on it, and runs where it is missing). Read on the
 * metrics thread only. NVML numbers GPUs by PCI bus order, which is CUDA's
 * numbering under CUDA_DEVICE_ORDER=PCI_BUS_ID; the samples carry NVML's
 * index, the PCI bus id and the name so that they can be matched.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "mearas/log.h"
#include "metrics.h"

/* the few NVML types used here (nvml.h's layout) */
typedef void *nvml_device;
struct nvml_utilization {
	unsigned int gpu, memory;
};
struct nvml_memory {
	unsigned long long total, free, used;
};
struct nvml_pci {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

static struct {
	bool tried, ok;
	char why[160];
	int (*init)(void);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, nvml_device *);
	int (*util)(nvml_device, struct nvml_utilization *);
	int (*mem)(nvml_device, struct nvml_memory *);
	int (*name)(nvml_device, char *, unsigned int);
	int (*pci)(nvml_device, struct nvml_pci *);
	const char *(*err)(int);
} nv;

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p && !nv.why[0])
		snprintf(nv.why, sizeof(nv.why), "libnvidia-ml.so.1 lacks %s", name);
	return p;
}

static void open_nvml(void)
{
	void *h;
	struct link_map *lm = NULL;
	int r;

	nv.tried = true;
	h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(nv.why, sizeof(nv.why), "cannot open libnvidia-ml.so.1 (the NVIDIA driver's NVML)");
		log_warn("metrics: %s: %s", nv.why, dlerror());
		return;
	}
	nv.init = (int (*)(void))sym(h, "nvmlInit_v2");
	nv.count = (int (*)(unsigned int *))sym(h, "nvmlDeviceGetCount_v2");
	nv.handle = (int (*)(unsigned int, nvml_device *))sym(h, "nvmlDeviceGetHandleByIndex_v2");
	nv.util = (int (*)(nvml_device, struct nvml_utilization *))sym(h, "nvmlDeviceGetUtilizationRates");
	nv.mem = (int (*)(nvml_device, struct nvml_memory *))sym(h, "nvmlDeviceGetMemoryInfo");
	nv.name = (int (*)(nvml_device, char *, unsigned int))sym(h, "nvmlDeviceGetName");
	nv.pci = (int (*)(nvml_device, struct nvml_pci *))sym(h, "nvmlDeviceGetPciInfo_v3");
	nv.err = (const char *(*)(int))sym(h, "nvmlErrorString");
	if (nv.why[0])
		return;
	r = nv.init();
	if (r) {
		snprintf(nv.why, sizeof(nv.why), "nvmlInit failed: %s", nv.err(r));
		log_warn("metrics: %s", nv.why);
		return;
	}
	dlinfo(h, RTLD_DI_LINKMAP, &lm);
	log_info("metrics: GPU utilization from NVML (%s)", lm && lm->l_name ? lm->l_name : "libnvidia-ml.so.1");
	nv.ok = true;
}

/* what NVML answered for one GPU (ok: all of it) */
struct gpu_sample {
	bool ok;
	char name[96], bus[32];
	struct nvml_utilization u;
	struct nvml_memory m;
};

/* the gauges, in the order they are written */
enum gpu_gauge { GAUGE_UTILIZATION, GAUGE_MEMORY_USED, GAUGE_MEMORY_TOTAL };

static const struct {
	const char *name, *help;
} gauges[] = {
	[GAUGE_UTILIZATION] = { "mearas_gpu_utilization_ratio",
				"Fraction of the last sample period a kernel ran (NVML)." },
	[GAUGE_MEMORY_USED] = { "mearas_gpu_memory_used_bytes",
				"Device memory in use on the GPU, all processes (NVML)." },
	[GAUGE_MEMORY_TOTAL] = { "mearas_gpu_memory_total_bytes", "Device memory of the GPU (NVML)." },
};

/* One gauge: its HELP and TYPE lines, then a sample a GPU NVML answered for. */
static void render_gauge(struct mtext *t, enum gpu_gauge k, const struct gpu_sample *g, unsigned int n)
{
	mtext_printf(t, "# HELP %s %s\n# TYPE %s gauge\n", gauges[k].name, gauges[k].help, gauges[k].name);
	for (unsigned int i = 0; i < n; i++) {
		if (!g[i].ok)
			continue;
		mtext_printf(t, "%s{nvml_index=\"%u\",", gauges[k].name, i);
		mtext_label(t, "pci_bus_id", g[i].bus);
		mtext_printf(t, ",");
		mtext_label(t, "name", g[i].name);
		if (k == GAUGE_UTILIZATION)
			mtext_printf(t, "} %.2f\n", g[i].u.gpu / 100.0);
		else
			mtext_printf(t, "} %llu\n", k == GAUGE_MEMORY_USED ? g[i].m.used : g[i].m.total);
	}
}

void metrics_render_gpus(struct mtext *t)
{
	unsigned int n = 0;
	struct gpu_sample g[64];

	if (!nv.tried)
		open_nvml();
	if (!nv.ok || nv.count(&n)) {
		/* the reason, as a comment: no made-up figures */
		mtext_printf(t, "# mearas: no GPU utilization: %s\n", nv.why[0] ? nv.why : "NVML cannot count the GPUs");
		return;
	}
	if (n > 64)
		n = 64;
	for (unsigned int i = 0; i < n; i++) {
		nvml_device d;
		struct nvml_pci pci;

		memset(&g[i], 0, sizeof(g[i]));
		if (nv.handle(i, &d) || nv.util(d, &g[i].u) || nv.mem(d, &g[i].m))
			continue;
		if (nv.name(d, g[i].name, sizeof(g[i].name)))
			snprintf(g[i].name, sizeof(g[i].name), "?");
		if (nv.pci(d, &pci) == 0)
			snprintf(g[i].bus, sizeof(g[i].bus), "%.31s", pci.bus_id);
		g[i].name[sizeof(g[i].name) - 1] = 0;
		g[i].ok = true;
	}
	render_gauge(t, GAUGE_UTILIZATION, g, n);
	render_gauge(t, GAUGE_MEMORY_USED, g, n);
	render_gauge(t, GAUGE_MEMORY_TOTAL, g, n);
}
