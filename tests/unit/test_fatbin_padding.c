// SPDX-License-Identifier: MIT
/* A fat binary holding a cubin and PTX of a kernel whose CUtensorMap
 * parameter the cubin pads (--fatbin=PATH, built by nvcc from
 * kernels_tmap.cu): the index takes the cubin's layout, the one the driver
 * launches with, instead of refusing the two entries as disagreeing (the
 * GPU lane's tma_tiled got cudaErrorInvalidKernelImage). */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "mearas/fatbin.h"

static void cubin_layout_kept(void)
{
	const char *path = check_opt("fatbin");
	static uint8_t buf[1 << 20];
	const struct mearas_kernel_info *k;
	struct mearas_fatbin_index *idx;
	char err[256];
	size_t n;
	FILE *f;

	REQUIRE_MSG(path, "no --fatbin=PATH given");
	f = fopen(path, "rb");
	REQUIRE_MSG(f, "%s: cannot open", path);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	idx = mearas_fatbin_index_new(buf, n, err, sizeof(err));
	REQUIRE_MSG(idx, "refused: %s", err);
	k = mearas_fatbin_find_kernel(idx, "_Z6k_tmap14CUtensorMap_stPy");
	REQUIRE(k);
	CHECK_EQ(k->nparams, 2);
	CHECK_EQ(k->params[0].size, 128);
	CHECK_EQ(k->params[1].size, 8);
	/* padded (PTX would say 0), the pointer right after the map */
	CHECK(k->params[0].offset > 0 && k->params[0].offset % 16 == 0);
	CHECK_EQ(k->params[1].offset, k->params[0].offset + 128);
	CHECK_EQ(k->param_bytes, k->params[1].offset + 8);
	mearas_fatbin_index_free(idx);
}

static const struct check_case cases[] = {
	{ "cubin_layout_kept", cubin_layout_kept },
};
CHECK_MAIN(cases)
