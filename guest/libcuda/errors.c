// SPDX-License-Identifier: MIT
/* The driver API's errors: names, texts, and the back end's codes mapped. */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <string.h>

#include "cu.h"
#include "mearas/log.h"

static bool is_driver_code(int v)
{
	switch (v) {
#define X(name, value, text) case value:
#include "cu_errors.gen.h"
#undef X
		return true;
	default:
		return false;
	}
}

static const char *code_name(CUresult r)
{
	switch ((int)r) {
#define X(name, value, text) case value: return #name;
#include "cu_errors.gen.h"
#undef X
	default:
		return NULL;
	}
}

/*
 * The driver-API entry point the program called: the outermost frame of this
 * library whose pc lies inside an exported cu* function (hidden helpers have
 * no dynamic symbol, and a pc past a symbol's size is not in it; the library
 * is built without sibling calls, so entry points keep their frames). NULL
 * when none is on the stack: an export-table slot, called by pointer.
 */
static const char *entry_point(void)
{
	void *pcs[64];
	int n = backtrace(pcs, 64);
	const char *name = NULL;
	Dl_info self;

	if (!dladdr((void *)entry_point, &self))
		return NULL;
	for (int i = 1; i < n; i++) {
		const ElfW(Sym) *sym = NULL;
		uintptr_t pc = (uintptr_t)pcs[i] - 1; /* inside the call, not after it */
		Dl_info at;

		if (!dladdr1((void *)pc, &at, (void **)&sym, RTLD_DL_SYMENT) || at.dli_fbase != self.dli_fbase)
			break; /* out of this library: the program's frame */
		if (sym && at.dli_sname && !strncmp(at.dli_sname, "cu", 2) &&
		    pc - (uintptr_t)at.dli_saddr < sym->st_size)
			name = at.dli_sname;
	}
	return name;
}

CUresult cu_refused(CUresult r, const char *fn, const char *file, int line)
{
	const char *code = code_name(r);

	if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY || !mearas_log_debug_enabled())
		return r;
	const char *entry = entry_point();

	if (code)
		log_debug("%s: %s (%s:%d %s)", entry ? entry : fn, code, file, line, fn);
	else
		log_debug("%s: error %d (%s:%d %s)", entry ? entry : fn, (int)r, file, line, fn);
	return r;
}

static CUresult driver_code(cudaError_t e)
{
	/* most runtime codes are the driver's own numbers */
	if (is_driver_code((int)e))
		return (CUresult)e;
	switch (e) {
	case cudaErrorInvalidConfiguration:
	case cudaErrorInvalidPitchValue:
	case cudaErrorInvalidMemcpyDirection:
	case cudaErrorInvalidHostPointer:
	case cudaErrorInvalidDevicePointer:
	case cudaErrorInvalidChannelDescriptor:
	case cudaErrorInvalidFilterSetting:
	case cudaErrorInvalidNormSetting:
	case cudaErrorMissingConfiguration:
		return CUDA_ERROR_INVALID_VALUE;
	case cudaErrorInvalidSymbol:
		return CUDA_ERROR_NOT_FOUND;
	case cudaErrorInvalidDeviceFunction:
		return CUDA_ERROR_INVALID_HANDLE;
	case cudaErrorInsufficientDriver:
		return CUDA_ERROR_NOT_INITIALIZED;
	default:
		return CUDA_ERROR_UNKNOWN;
	}
}

CUresult cu_result_at(cudaError_t e, const char *fn, const char *file, int line)
{
	return cu_refused(driver_code(e), fn, file, line);
}

/* cuGetErrorName (name: the enumerator's name) and cuGetErrorString (its text) */
static CUresult error_text(CUresult error, const char **pStr, bool name)
{
	if (!pStr)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	switch ((int)error) {
#define X(name_, value, text) case value: *pStr = name ? #name_ : text; return CUDA_SUCCESS;
#include "cu_errors.gen.h"
#undef X
	default:
		*pStr = NULL;
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
}

CU_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) { return error_text(error, pStr, true); }

CU_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
	return error_text(error, pStr, false);
}
