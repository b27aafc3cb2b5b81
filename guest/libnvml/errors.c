// SPDX-License-Identifier: MIT
/* nvmlErrorString: the texts are nvml.h's descriptions of the codes (NVIDIA's
 * library words them its own way; no program should compare them). Works
 * before nvmlInit, as NVIDIA documents. */
#include "nvml_int.h"

NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS:
		return "The operation was successful";
	case NVML_ERROR_UNINITIALIZED:
		return "NVML was not first initialized with nvmlInit()";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "A supplied argument is invalid";
	case NVML_ERROR_NOT_SUPPORTED:
		return "The requested operation is not available on target device";
	case NVML_ERROR_NO_PERMISSION:
		return "The current user does not have permission for operation";
	case NVML_ERROR_ALREADY_INITIALIZED:
		return "Already initialized (deprecated: multiple initializations are counted)";
	case NVML_ERROR_NOT_FOUND:
		return "A query to find an object was unsuccessful";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "An input argument is not large enough";
	case NVML_ERROR_INSUFFICIENT_POWER:
		return "A device's external power cables are not properly attached";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "NVIDIA driver is not loaded";
	case NVML_ERROR_TIMEOUT:
		return "User provided timeout passed";
	case NVML_ERROR_IRQ_ISSUE:
		return "NVIDIA Kernel detected an interrupt issue with a GPU";
	case NVML_ERROR_LIBRARY_NOT_FOUND:
		return "NVML Shared Library couldn't be found or loaded";
	case NVML_ERROR_FUNCTION_NOT_FOUND:
		return "Local version of NVML doesn't implement this function";
	case NVML_ERROR_CORRUPTED_INFOROM:
		return "infoROM is corrupted";
	case NVML_ERROR_GPU_IS_LOST:
		return "The GPU has fallen off the bus or has otherwise become inaccessible";
	case NVML_ERROR_RESET_REQUIRED:
		return "The GPU requires a reset before it can be used again";
	case NVML_ERROR_OPERATING_SYSTEM:
		return "The GPU control device has been blocked by the operating system/cgroups";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		return "RM detects a driver/library version mismatch";
	case NVML_ERROR_IN_USE:
		return "An operation cannot be performed because the GPU is currently in use";
	case NVML_ERROR_MEMORY:
		return "Insufficient memory";
	case NVML_ERROR_NO_DATA:
		return "No data";
	case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
		return "The requested vgpu operation is not available on target device, because ECC is enabled";
	case NVML_ERROR_INSUFFICIENT_RESOURCES:
		return "Ran out of critical resources, other than memory";
	case NVML_ERROR_FREQ_NOT_SUPPORTED:
		return "The requested frequency is not supported";
	case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
		return "The provided version is invalid/unsupported";
	case NVML_ERROR_DEPRECATED:
		return "The requested functionality has been deprecated";
	case NVML_ERROR_NOT_READY:
		return "The system is not ready for the request";
	case NVML_ERROR_GPU_NOT_FOUND:
		return "No GPUs were found";
	case NVML_ERROR_INVALID_STATE:
		return "Resource not in correct state to perform requested operation";
	case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED:
		return "Reset not supported for given device/parameters";
	case NVML_ERROR_UNKNOWN:
		return "An internal driver error occurred";
	default:
		return "Unknown NVML error code";
	}
}
