/* SPDX-License-Identifier: MIT */
/* Prints every kernel layout of a raw fat binary file (e.g. an objcopy'd
 * .nv_fatbin), or with --footprint the device memory a module image (fat
 * binary, cubin or PTX text) holds once loaded (mearas_module_footprint),
 * or with --managed its __managed__ variables, "NAME SIZE" a line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/fatbin.h"
#include "test_util.h"

int main(int argc, char **argv)
{
	int footprint = argc == 3 && !strcmp(argv[1], "--footprint");
	int managed = argc == 3 && !strcmp(argv[1], "--managed");

	if (argc != 2 && !footprint && !managed) {
		fprintf(stderr, "usage: %s [--footprint|--managed] FATBIN\n", argv[0]);
		return 2;
	}
	size_t size;
	unsigned char *data = read_file(argv[argc - 1], &size);
	if (!data)
		return 1;
	char err[256];
	if (footprint) {
		uint64_t bytes;
		int rc = mearas_module_footprint(data, size, &bytes, err, sizeof(err));

		if (rc)
			fprintf(stderr, "%s: %s\n", argv[2], err);
		else
			printf("%llu\n", (unsigned long long)bytes);
		free(data);
		return rc ? 1 : 0;
	}
	struct mearas_fatbin_index *idx = mearas_fatbin_index_new(data, size, err, sizeof(err));
	if (!idx) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		free(data);
		return 1;
	}
	if (managed) {
		const char *name;
		uint64_t bytes;

		for (size_t i = 0; (name = mearas_fatbin_managed_at(idx, i, &bytes)); i++)
			printf("%s %llu\n", name, (unsigned long long)bytes);
	}
	for (size_t i = 0; !managed && i < mearas_fatbin_kernel_count(idx); i++) {
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
