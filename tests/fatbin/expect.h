/* SPDX-License-Identifier: MIT */
/*
 * Contract between the sample CUDA translation units and the fake runtime
 * harness: each sample registers, from a static constructor, the layouts the
 * host compiler gives to mirror structs of its kernels' parameter lists
 * (offsetof/sizeof), and a function that launches each kernel once.
 */
#ifndef MEARAS_TEST_EXPECT_H
#define MEARAS_TEST_EXPECT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EXPECT_MAX_PARAMS 16

struct expect_kernel {
	const void *host_fun;	/* the kernel's host stub, as registered */
	const char *label;
	unsigned nparams;
	struct {
		unsigned offset, size;
	} params[EXPECT_MAX_PARAMS];
	unsigned param_bytes;
};

void expect_register(const struct expect_kernel *table, size_t n, void (*launch_all)(void));

/*
 * The parameter buffer the next launch must produce from its args: len bytes,
 * compared where mask[i] is nonzero (mask NULL: everywhere). Struct padding is
 * masked out since copies of struct arguments need not preserve it. Both
 * buffers are copied.
 */
void expect_next_launch(const void *host_fun, const void *bytes, const unsigned char *mask,
			size_t len);

#ifdef __cplusplus
}
#endif

#endif
