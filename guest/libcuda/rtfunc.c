// SPDX-License-Identifier: MIT
/*
 * cudaGetFuncBySymbol of mearas's runtime: a kernel the program registered
 * with the runtime, as a CUfunction of this library, so that the driver
 * calls programs make with it (cuFuncGetAttribute, cuLaunchKernel(Ex),
 * cuFuncGetModule and cuModuleGetGlobal, graph kernel nodes) work as on
 * CUDA. The runtime has loaded the kernel's module on the vGPU already
 * (its id on the back end); here that module gets a CUmodule of its own per
 * vGPU, flagged as the runtime's (not unloaded, nor its index freed, from
 * here), and each kernel one function, handed out again on later calls.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/fatbin.h"
#include "mearas/log.h"
#include "cu.h"

struct runtime_fn {
	struct cu_function *f;
	struct runtime_fn *next;
};

struct runtime_module {
	struct cu_module *m;
	struct runtime_fn *fns;
	struct runtime_module *next;
};

static struct runtime_module *modules;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* the CUmodule standing for the runtime's module id on vgpu (lock held) */
static struct runtime_module *module_for(int vgpu, uint32_t id, struct mearas_fatbin_index *index)
{
	struct runtime_module *rm;

	for (rm = modules; rm; rm = rm->next)
		if (rm->m->vgpu == vgpu && rm->m->id == id)
			return rm;
	rm = calloc(1, sizeof(*rm));
	if (!rm || !(rm->m = calloc(1, sizeof(*rm->m)))) {
		free(rm);
		return NULL;
	}
	rm->m->id = id;
	rm->m->vgpu = vgpu;
	rm->m->index = index;
	rm->m->runtime = true;
	rm->m->magic = MODULE_MAGIC;
	rm->next = modules;
	modules = rm;
	return rm;
}

cudaError_t mearas_cu_runtime_function(int vgpu, uint32_t module_id, struct mearas_fatbin_index *index,
				       const char *name, void **out)
{
	struct runtime_module *rm;
	struct runtime_fn *fn;
	CUresult r = CUDA_SUCCESS;

	if (!name || !out)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&lock);
	rm = module_for(vgpu, module_id, index);
	if (!rm) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (fn = rm->fns; fn; fn = fn->next)
		if (!strcmp(fn->f->name, name))
			break;
	if (!fn) {
		fn = calloc(1, sizeof(*fn));
		r = fn ? cu_function_get(rm->m, name, &fn->f) : CUDA_ERROR_OUT_OF_MEMORY;
		if (r) {
			free(fn);
			goto out;
		}
		fn->next = rm->fns;
		rm->fns = fn;
	}
	*out = fn->f;
out:
	pthread_mutex_unlock(&lock);
	return r == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : r ? cudaErrorInvalidDeviceFunction : cudaSuccess;
}

/* A reset vGPU: the runtime loads its modules again, and a later call
 * makes new handles; those handed out stay readable, and fail as a gone
 * module's do. */
void cu_runtime_modules_forget_vgpu(int vgpu)
{
	pthread_mutex_lock(&lock);
	for (struct runtime_module **pp = &modules; *pp;) {
		struct runtime_module *rm = *pp;

		if (rm->m->vgpu != vgpu) {
			pp = &rm->next;
			continue;
		}
		rm->m->gone = true;
		*pp = rm->next;
		while (rm->fns) {
			struct runtime_fn *fn = rm->fns;

			rm->fns = fn->next;
			free(fn);
		}
		free(rm);
	}
	pthread_mutex_unlock(&lock);
}
