// SPDX-License-Identifier: MIT
/*
 * nvmlInternalGetExportTable: NVML's private table, which nvidia-smi asks
 * for before it lists devices (nvml.h does not declare it). What is known of
 * it (observed on nvidia-smi 580, published with NVIDIA's own NVML mock):
 * the table asked for by id 6c3efec4-8fc9-4e6c-a327-ee696e12f7c4 is an
 * array of words whose first is the table's size in bytes, then function
 * pointers; slot 81 looks a device up by index, as
 * nvmlDeviceGetHandleByIndex_v2 does (index, out, then arguments mearas
 * does not use). Every other slot is a stub that logs its number once and
 * returns NVML_ERROR_NOT_SUPPORTED, so that a tool that needs more names
 * what it asked for. Other table ids: NVML_ERROR_NOT_SUPPORTED, logged.
 */
#include <pthread.h>
#include <string.h>

#include "mearas/log.h"
#include "nvml_int.h"

#define SLOTS 256u
#define SLOT_DEVICE_BY_INDEX 81u

NVML_EXPORT nvmlReturn_t nvmlInternalGetExportTable(const void **out, const void *id);

/* the id as the 16 bytes callers pass (a GUID in its memory layout) */
static const uint8_t SMI_TABLE[16] = { 0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
				       0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4 };

static int said[SLOTS];

static nvmlReturn_t unserved(unsigned slot)
{
	if (!__atomic_exchange_n(&said[slot], 1, __ATOMIC_RELAXED))
		log_warn("NVML's internal table: slot %u is not served by mearas (NVML_ERROR_NOT_SUPPORTED)", slot);
	return NVML_ERROR_NOT_SUPPORTED;
}

static nvmlReturn_t device_by_index(unsigned index, nvmlDevice_t *out)
{
	return nvmlDeviceGetHandleByIndex_v2(index, out);
}

/* One stub per slot, so that each knows its number: STUB(h, l) defines
 * the stub of slot 16h+l; ROW(M, h) applies M to row h's 16 slots. */
#define STUB(h, l)                                       \
	static nvmlReturn_t slot_##h##_##l(void)         \
	{                                                \
		return unserved(16u * (h) + (l));        \
	}
#define ADDR(h, l) (uintptr_t)slot_##h##_##l,
#define ROW(M, h)                                                                               \
	M(h, 0) M(h, 1) M(h, 2) M(h, 3) M(h, 4) M(h, 5) M(h, 6) M(h, 7) M(h, 8) M(h, 9) M(h, 10) \
	M(h, 11) M(h, 12) M(h, 13) M(h, 14) M(h, 15)
#define ALL(M)                                                                                     \
	ROW(M, 0) ROW(M, 1) ROW(M, 2) ROW(M, 3) ROW(M, 4) ROW(M, 5) ROW(M, 6) ROW(M, 7) ROW(M, 8) \
	ROW(M, 9) ROW(M, 10) ROW(M, 11) ROW(M, 12) ROW(M, 13) ROW(M, 14) ROW(M, 15)

ALL(STUB)

static uintptr_t table[SLOTS] = { ALL(ADDR) };

static void fill_table(void)
{
	table[0] = sizeof(table);
	table[SLOT_DEVICE_BY_INDEX] = (uintptr_t)device_by_index;
}

NVML_EXPORT nvmlReturn_t nvmlInternalGetExportTable(const void **out, const void *id)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (!out || !id)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (memcmp(id, SMI_TABLE, sizeof(SMI_TABLE))) {
		const uint8_t *b = id;

		log_warn("NVML's internal table %02x%02x%02x%02x-...: not served by mearas (NVML_ERROR_NOT_SUPPORTED)",
			 b[3], b[2], b[1], b[0]);
		return NVML_ERROR_NOT_SUPPORTED;
	}
	pthread_once(&once, fill_table);
	*out = table;
	return NVML_SUCCESS;
}
