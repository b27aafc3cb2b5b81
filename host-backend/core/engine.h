/* SPDX-License-Identifier: MIT */
/*
 * What runs a vGPU's records, chosen once when the worker sets the vGPU up
 * (worker.c): this node's device (the poller, poller.c) or a GPU of another
 * node (the forwarder, remote/forward.c, given by the configuration's
 * remote_engine). The worker only opens the vGPU, starts its thread and,
 * where it frees a vGPU before its process ends (VM slots), closes it.
 */
#ifndef MEARAS_ENGINE_H
#define MEARAS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu;
struct mearas_devinfo;
struct vstat_vgpu;

struct vgpu_engine {
	const char *name;
	/* Opens what backs v (v->w, v->index and v->ops set): the GPU phys of
	 * this node in the device address window [va_base, va_base + va_size),
	 * or the remote vGPU. Fills info (the client's devinfo; va_base 0: the
	 * window asked for) and *granularity (0: the heap's default). 0, or a
	 * cudaError_t with the reason in err. */
	int (*open)(struct vgpu *v, int phys, uint64_t va_base, uint64_t va_size, struct mearas_devinfo *info,
		    uint64_t *granularity, char *err, size_t errlen);
	/* The vGPU's thread: drains its submission ring until the worker stops. */
	void *(*thread_main)(void *vgpu);
	/* After the thread has ended: frees what the vGPU's records made. */
	void (*close)(struct vgpu *v);
	/* Optional: every 200 ms on the worker's main thread, and once after the
	 * thread has ended: what the engine knows (the link) into s. */
	void (*publish)(struct vgpu *v, struct vstat_vgpu *s);
	/* The records run on this process's device: its data area is
	 * registered with it, its kernels are under the GPU time limit. */
	bool local;
};

/* poller.c: this node's device */
extern const struct vgpu_engine vgpu_engine_local;

#endif
