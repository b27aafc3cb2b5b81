// SPDX-License-Identifier: MIT
/* nvmlInit*, nvmlShutdown: a count of initializations, as NVML keeps one
 * (each successful nvmlInit* needs its nvmlShutdown). The connection to
 * mearasd is the guest core's, made on the first nvmlInit (or CUDA call) and
 * kept until the process exits: nvmlShutdown only ends NVML's answers. */
#include <pthread.h>

#include "mearas/log.h"
#include "nvml_int.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned init_count;             /* successful inits not yet shut down */
static unsigned ndevices;               /* the vGPUs answered for */

nvmlReturn_t nvml_ready(void)
{
	return __atomic_load_n(&init_count, __ATOMIC_ACQUIRE) ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

unsigned nvml_count(void)
{
	return __atomic_load_n(&ndevices, __ATOMIC_ACQUIRE);
}

static const char *cuda_name(cudaError_t e)
{
	const char *name = rt_error_name(e);

	return name ? name : "an unknown CUDA error";
}

/* what a failed connection means to an NVML caller */
static nvmlReturn_t init_error(cudaError_t e)
{
	switch (e) {
	case cudaErrorNoDevice:                 /* no socket, refused connection, failed handshake */
	case cudaErrorInsufficientDriver:       /* another protocol version */
	case cudaErrorInitializationError:
		log_err("nvmlInit: mearasd could not be reached (%s; the line above says why): "
			"returning NVML_ERROR_DRIVER_NOT_LOADED", cuda_name(e));
		return NVML_ERROR_DRIVER_NOT_LOADED;
	default:                                /* mearasd refused us (caps) or went away */
		log_err("nvmlInit: mearasd did not serve this process (%s): returning NVML_ERROR_UNKNOWN",
			cuda_name(e));
		return NVML_ERROR_UNKNOWN;
	}
}

static nvmlReturn_t init(unsigned int flags)
{
	cudaError_t e = rt_ensure();
	nvmlReturn_t r = NVML_SUCCESS;

	pthread_mutex_lock(&init_lock);
	if (!e) {
		__atomic_store_n(&ndevices, rt.nvgpus, __ATOMIC_RELEASE);
	} else if (flags & NVML_INIT_FLAG_NO_GPUS) {
		/* documented: do not fail when there are no GPUs */
		log_info("nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS): mearasd could not be reached (%s): "
			 "no devices", cuda_name(e));
		__atomic_store_n(&ndevices, 0, __ATOMIC_RELEASE);
	} else {
		r = init_error(e);
	}
	if (r == NVML_SUCCESS)
		__atomic_add_fetch(&init_count, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&init_lock);
	return r;
}

/* NVML_INIT_FLAG_NO_ATTACH (do not attach GPUs) changes nothing here: the
 * vGPUs are known once the core is connected. Other bits are ignored. */
NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	return init(flags);
}

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	return init(0);
}

/* the name before NVML 4.304 (the header's nvmlInit maps to _v2) */
NVML_EXPORT nvmlReturn_t nvmlInit(void)
{
	return init(0);
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t r = NVML_SUCCESS;

	pthread_mutex_lock(&init_lock);
	if (init_count)
		__atomic_sub_fetch(&init_count, 1, __ATOMIC_ACQ_REL);
	else
		r = NVML_ERROR_UNINITIALIZED;
	pthread_mutex_unlock(&init_lock);
	return r;
}
