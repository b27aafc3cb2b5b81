// SPDX-License-Identifier: MIT
/* A vGPU's reset, and the current device, seen by every front end of the
 * process. */
#include "mearas/log.h"
#include "core.h"

#define MAX_HOOKS 4

static void (*hooks[MAX_HOOKS])(int vgpu);
static unsigned nhooks;

void rt_on_reset(void (*hook)(int vgpu))
{
	unsigned n = __atomic_load_n(&nhooks, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n; i++)
		if (hooks[i] == hook)
			return;
	n = __atomic_fetch_add(&nhooks, 1, __ATOMIC_ACQ_REL);
	if (n >= MAX_HOOKS) {
		log_err("too many reset hooks: a device reset will not reach every front end");
		return;
	}
	hooks[n] = hook;
}

cudaError_t rt_device_reset(int vgpu)
{
	cudaError_t e = rt_do_DEVICE_RESET(vgpu);
	unsigned n = __atomic_load_n(&nhooks, __ATOMIC_ACQUIRE);

	dm_forget_vgpu(vgpu);
	rt_mvars_forget_vgpu(vgpu);
	rt_pools_forget_vgpu(vgpu);
	rt_gmem_forget_vgpu(vgpu);
	rt_func_forget(vgpu, 0);
	rt_capture_forget_vgpu(vgpu);
	for (unsigned i = 0; i < n && i < MAX_HOOKS; i++)
		if (hooks[i])
			hooks[i](vgpu);
	rt.v[vgpu].flags = 0;
	return e;
}

static void (*set_device_hook)(int vgpu);

void rt_on_set_device(void (*hook)(int vgpu))
{
	__atomic_store_n(&set_device_hook, hook, __ATOMIC_RELEASE);
}

void rt_set_device(int vgpu)
{
	void (*hook)(int) = __atomic_load_n(&set_device_hook, __ATOMIC_ACQUIRE);

	rt_tls.device = vgpu;
	if (hook)
		hook(vgpu);
}
