/* SPDX-License-Identifier: MIT */
/*
 * mearasd's configuration as its workers see it: set from the options
 * (mearasd.c), copied per client and changed by the client's assembly
 * (control/assembly.c), per remote vGPU by the serving node (remote/serve*.c).
 */
#ifndef MEARAS_CONFIG_H
#define MEARAS_CONFIG_H

#include <stdint.h>

#include "mearas/region.h"
#include "remote/config.h"

struct mdev_ops;
struct vgpu_engine;

struct backend_config {
	const struct mdev_ops *dev;
	uint64_t data_default, data_max;
	unsigned vgpus_default;
	int gpu_map[MEARAS_MAX_VGPUS];  /* vGPU -> physical ordinal, -1 = round robin */
	uint64_t quota[MEARAS_MAX_VGPUS]; /* 0 = the GPU's memory */
	unsigned spin_us;               /* poller busy-polls this long before sleeping */
	unsigned va_window_first;       /* VA window of vGPU 0 (remote sessions: the client's ordinal) */
	uint64_t data_va;               /* remote sessions: where the client's data area is, so where
					 * this worker's copy goes if it can (worker_build_region) */
	bool serves_remote;             /* a remote session's worker (remote/serve_worker.c) */
	unsigned kernel_timeout_ms;     /* GPU time limit of one kernel (watchdog.c); 0 = none */
	struct remote_config remote;    /* remote vGPUs and the link server */
	/* what runs the vGPUs remote.target names (the forwarder, set by
	 * mearasd.c); the others run on this node's device (poller.c) */
	const struct vgpu_engine *remote_engine;
};

#endif
