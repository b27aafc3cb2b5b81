// SPDX-License-Identifier: MIT
/* What the generated stubs of unimplemented entry points do (unsupported.h). */
#include <cuda.h>

#include "mearas/log.h"
#include "unsupported.h"

int cu_unsupported_call(const char *name, int *said)
{
	/* once per entry point, also when threads race to it */
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		log_warn("%s is not supported by mearas yet: returning CUDA_ERROR_NOT_SUPPORTED", name);
	return CUDA_ERROR_NOT_SUPPORTED;
}
