// SPDX-License-Identifier: MIT
/* Regression (found by fuzz_fatbin): a well-formed fat binary without any
 * kernel must give an empty index. merge() in common/fatbin.c passed a NULL
 * array to qsort() then, undefined behaviour that UBSan (asan variant)
 * reports as a failure. */
#include <string.h>

#include "check.h"
#include "mearas/fatbin.h"

static void no_kernels_empty_index(void)
{
	/* header only: magic, version 1, header size 16, body size 0 */
	uint8_t fb[16] = { 0 };
	uint32_t magic = MEARAS_FATBIN_MAGIC;
	uint16_t version = 1, hsize = 16;
	char err[256];
	struct mearas_fatbin_index *idx;

	memcpy(fb, &magic, 4);
	memcpy(fb + 4, &version, 2);
	memcpy(fb + 6, &hsize, 2);
	idx = mearas_fatbin_index_new(fb, sizeof(fb), err, sizeof(err));
	REQUIRE_MSG(idx, "refused: %s", err);
	CHECK_EQ(mearas_fatbin_kernel_count(idx), 0);
	CHECK(mearas_fatbin_kernel_at(idx, 0) == NULL);
	CHECK(mearas_fatbin_find_kernel(idx, "k") == NULL);
	mearas_fatbin_index_free(idx);
}

static const struct check_case cases[] = {
	{ "no_kernels_empty_index", no_kernels_empty_index },
};
CHECK_MAIN(cases)
