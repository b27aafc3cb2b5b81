/* SPDX-License-Identifier: MIT */
/*
 * mearas's libnvidia-ml.so.1: NVML for the vGPUs this process sees. It
 * answers from the guest core inside mearas's libcuda.so.1 (the connection to
 * mearasd, the vGPUs' published device info, MEM_GET_INFO), which it links
 * against (MEARAS_CORE_1), so a process that uses NVML and CUDA has one
 * connection. Compiled against NVIDIA's nvml.h with
 * NVML_NO_UNVERSIONED_FUNC_DEFS, so that every entry point, the unversioned
 * names of older NVML versions too, is checked against NVIDIA's prototype.
 * Entry points not implemented here are generated stubs that return
 * NVML_ERROR_NOT_SUPPORTED (gen_unsupported.sh, nvml.symbols).
 */
#ifndef MEARAS_NVML_INT_H
#define MEARAS_NVML_INT_H

#include <nvml.h>

#include "core.h"

/* an NVML entry point (everything else in the library is hidden) */
#define NVML_EXPORT __attribute__((visibility("default")))

/* the devices are the vGPUs: a handle points at one of these */
struct nvmlDevice_st {
	unsigned index;
};

/* init.c: NVML_SUCCESS while nvmlInit* has succeeded more often than
 * nvmlShutdown was called, else NVML_ERROR_UNINITIALIZED */
nvmlReturn_t nvml_ready(void);
/* the number of devices NVML answers for (0 when nvmlInitWithFlags with
 * NVML_INIT_FLAG_NO_GPUS found no mearasd) */
unsigned nvml_count(void);

/* device.c: checks that NVML is ready and that dev is a handle of one of
 * this process's vGPUs (NVML_ERROR_INVALID_ARGUMENT if not), and that
 * mearasd still serves us (NVML_ERROR_GPU_IS_LOST if not); sets *info */
nvmlReturn_t nvml_device(nvmlDevice_t dev, unsigned *index, const struct mearas_devinfo **info);
/* the handle of vGPU index (index < nvml_count()) */
nvmlDevice_t nvml_handle(unsigned index);
/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the 16 UUID bytes (41 bytes) */
#define NVML_UUID_LEN 41
void nvml_uuid_string(const uint8_t uuid[16], char out[NVML_UUID_LEN]);

/* copy s to out (length bytes): NVML_ERROR_INVALID_ARGUMENT when out is
 * NULL, NVML_ERROR_INSUFFICIENT_SIZE when s and its NUL do not fit */
nvmlReturn_t nvml_put_string(char *out, unsigned length, const char *s);

/* unsupported.c: logs "NAME is not supported by mearas" the first time
 * (*said was 0) and returns NVML_ERROR_NOT_SUPPORTED */
__attribute__((visibility("hidden"))) int nvml_unsupported_call(const char *name, int *said);

#endif
