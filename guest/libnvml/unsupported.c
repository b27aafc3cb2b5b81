// SPDX-License-Identifier: MIT
/* What the generated stubs of unimplemented NVML entry points do
 * (gen_unsupported.sh). */
#include "mearas/log.h"
#include "nvml_int.h"

int nvml_unsupported_call(const char *name, int *said)
{
	/* once per entry point, also when threads race to it */
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		log_warn("%s is not supported by mearas: returning NVML_ERROR_NOT_SUPPORTED", name);
	return NVML_ERROR_NOT_SUPPORTED;
}
