/* SPDX-License-Identifier: MIT */
/*
 * A fat binary made at run time, with no nvcc: one uncompressed PTX entry
 * declaring one kernel, `name`, of `nparams` .u32 parameters (an empty
 * body). mearasd --device=sim resolves kernels by name from it, so tests
 * and attacks can load the model's special kernels (mearas_sim_spin) or
 * kernels of any parameter count. Header-only; used by tests/security
 * attacks and tests/unit.
 */
#ifndef MEARAS_TESTS_PTX_FATBIN_H
#define MEARAS_TESTS_PTX_FATBIN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes the fat binary to out (cap bytes); its size, or 0 when it does not
 * fit. `decls` (PTX, may be "") goes before the kernel: an .extern of
 * vprintf makes a module that may print, as nvcc's code with printf is. */
static inline size_t ptx_fatbin_with(uint8_t *out, size_t cap, const char *decls, const char *name,
				     unsigned nparams)
{
	size_t ptx_cap = 256 + strlen(decls) + strlen(name) + 24ull * nparams, n, padded, total;
	char *ptx = malloc(ptx_cap);
	uint64_t entries;
	uint32_t u32;
	uint16_t u16;

	if (!ptx)
		return 0;
	n = (size_t)snprintf(ptx, ptx_cap, ".version 8.0\n.target sm_90\n.address_size 64\n"
			     "%s.visible .entry %s(", decls, name);
	for (unsigned i = 0; i < nparams; i++)
		n += (size_t)snprintf(ptx + n, ptx_cap - n, "%s\n.param .u32 p%u", i ? "," : "", i);
	n += (size_t)snprintf(ptx + n, ptx_cap - n, ")\n{\nret;\n}\n");
	padded = (n + 1 + 7) & ~(size_t)7;      /* NUL-terminated, 8-byte padded */
	total = 16 + 0x40 + padded;
	if (total > cap) {
		free(ptx);
		return 0;
	}
	memset(out, 0, total);
	/* fat binary header: magic, version 1, header size 16, entries' size */
	u32 = 0xba55ed50u;
	memcpy(out, &u32, 4);
	u16 = 1;
	memcpy(out + 4, &u16, 2);
	u16 = 16;
	memcpy(out + 6, &u16, 2);
	entries = 0x40 + padded;
	memcpy(out + 8, &entries, 8);
	/* entry header: kind 1 (PTX), header size 0x40, payload size, arch 90 */
	u16 = 1;
	memcpy(out + 16, &u16, 2);
	u32 = 0x40;
	memcpy(out + 16 + 0x04, &u32, 4);
	entries = padded;
	memcpy(out + 16 + 0x08, &entries, 8);
	u32 = 90;
	memcpy(out + 16 + 0x1c, &u32, 4);
	memcpy(out + 16 + 0x40, ptx, n);
	free(ptx);
	return total;
}

static inline size_t ptx_fatbin(uint8_t *out, size_t cap, const char *name, unsigned nparams)
{
	return ptx_fatbin_with(out, cap, "", name, nparams);
}

#endif
