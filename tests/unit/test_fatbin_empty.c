// SPDX-License-Identifier: MIT
/* Regression (found by fuzz_fatbin): a well-formed fat binary without any
 * kernel must give an empty index. merge() in common/fatbin.c passed a NULL
 * array to qsort() then, undefined behaviour that UBSan (asan variant)
 * reports as a failure. */
#include <string.h>

#include "check.h"
#include "mearas/fatbin.h"

int main(void)
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
	if (!idx) {
		fprintf(stderr, "refused: %s\n", err);
		return 1;
	}
	CHECK_EQ(mearas_fatbin_kernel_count(idx), 0);
	CHECK(mearas_fatbin_kernel_at(idx, 0) == NULL);
	CHECK(mearas_fatbin_find_kernel(idx, "k") == NULL);
	mearas_fatbin_index_free(idx);
	printf("fatbin without kernels: empty index\n");
	return 0;
}
