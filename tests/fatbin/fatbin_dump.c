/* SPDX-License-Identifier: MIT */
/* Prints every kernel layout of a raw fat binary file (e.g. an objcopy'd .nv_fatbin). */
#include <stdio.h>
#include <stdlib.h>

#include "mearas/fatbin.h"
#include "test_util.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s FATBIN\n", argv[0]);
		return 2;
	}
	size_t size;
	unsigned char *data = read_file(argv[1], &size);
	if (!data)
		return 1;
	char err[256];
	struct mearas_fatbin_index *idx = mearas_fatbin_index_new(data, size, err, sizeof(err));
	if (!idx) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		free(data);
		return 1;
	}
	for (size_t i = 0; i < mearas_fatbin_kernel_count(idx); i++) {
		const struct mearas_kernel_info *k = mearas_fatbin_kernel_at(idx, i);
		printf("%s nparams=%u bytes=%u", k->name, k->nparams, k->param_bytes);
		for (uint32_t j = 0; j < k->nparams; j++)
			printf(" %u:%u", k->params[j].offset, k->params[j].size);
		printf("\n");
	}
	mearas_fatbin_index_free(idx);
	free(data);
	return 0;
}
