// SPDX-License-Identifier: MIT
/* Helpers of the entry points. */
#include <stdio.h>
#include <string.h>

#include "nvml_int.h"

nvmlReturn_t nvml_put_string(char *out, unsigned length, const char *s)
{
	size_t n = strlen(s);

	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (n + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(out, s, n + 1);
	return NVML_SUCCESS;
}

void nvml_uuid_string(const uint8_t u[16], char out[NVML_UUID_LEN])
{
	snprintf(out, NVML_UUID_LEN,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}
