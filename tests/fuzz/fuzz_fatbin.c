// SPDX-License-Identifier: MIT
/* libFuzzer target: the fat binary parser (common/fatbin*.c) on hostile
 * bytes. An index that is built must be self-consistent: every kernel is
 * found by its name, and its parameters lie inside its parameter bytes. The
 * daemon's search for printing code (mearas_image_may_print) answers 0 or 1;
 * its check that a module image ends inside the bytes it was given
 * (mearas_module_image_extent) reads no further and never says more. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct mearas_fatbin_index *idx = mearas_fatbin_index_new(data, size, err, sizeof(err));
	size_t n;
	int prints = mearas_image_may_print(data, size);

	size_t extent = 0;
	char why[160] = "";

	if (prints != 0 && prints != 1)
		abort();
	if (mearas_module_image_extent(data, size, &extent, why, sizeof(why)) == 0) {
		if (extent == 0 || extent > size)
			abort();
	} else if (why[0] == 0) {
		abort(); /* a refusal must come with a reason */
	}
	if (!idx) {
		if (strnlen(err, sizeof(err)) == sizeof(err) || err[0] == 0)
			abort(); /* a failure must come with a reason */
		return 0;
	}
	n = mearas_fatbin_kernel_count(idx);
	for (size_t i = 0; i < n; i++) {
		const struct mearas_kernel_info *k = mearas_fatbin_kernel_at(idx, i);

		if (!k || !k->name || mearas_fatbin_find_kernel(idx, k->name) != k)
			abort();
		for (uint32_t p = 0; p < k->nparams; p++)
			if ((uint64_t)k->params[p].offset + k->params[p].size > k->param_bytes)
				abort();
	}
	if (mearas_fatbin_kernel_at(idx, n) != NULL)
		abort();
	mearas_fatbin_index_free(idx);
	return 0;
}
