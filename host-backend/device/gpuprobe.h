/* SPDX-License-Identifier: MIT */
/*
 * What this node's GPUs are and how much memory they have free, asked of
 * the device layer in a short-lived child process: mearasd itself must
 * never initialize CUDA, since its workers are forked from it.
 */
#ifndef MEARAS_GPUPROBE_H
#define MEARAS_GPUPROBE_H

#include <stdint.h>

#include "device.h"

#define PROBE_MAX_GPUS 64

struct probe_gpu {
	char name[256];
	uint32_t cc_major, cc_minor, sm_count;
	uint64_t memory_bytes;
	uint64_t free_bytes;
	int32_t free_known;
};

struct probe_result {
	int32_t status;         /* 0, or a cudaError_t */
	char error[256];
	uint32_t count;
	struct probe_gpu gpus[PROBE_MAX_GPUS];
};

/* Forks, probes, waits at most timeout_ms; fills *out (status != 0 on failure). */
void gpu_probe(const struct mdev_ops *ops, int timeout_ms, struct probe_result *out);

#endif
