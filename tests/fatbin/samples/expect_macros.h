/* SPDX-License-Identifier: MIT */
/* Helpers for sample .cu files: expected layouts from mirror structs. */
#ifndef MEARAS_TEST_EXPECT_MACROS_H
#define MEARAS_TEST_EXPECT_MACROS_H

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "../expect.h"

#define EXPECT_FIELD(P, m) { (unsigned)offsetof(P, m), (unsigned)sizeof(((P *)0)->m) }

/*
 * Fill a mirror struct (leaf members only, so padding keeps the background)
 * on a zero and on a 0xff background: the bytes that differ are padding.
 * Announces the launch with that mask; out gets the zero-background mirror,
 * whose members are then passed as the kernel's arguments.
 */
template <typename P, typename Fill>
static inline void expect_fields(const void *fun, P &out, size_t used, Fill fill)
{
	P *ones = static_cast<P *>(std::malloc(sizeof(P)));
	unsigned char *mask = static_cast<unsigned char *>(std::malloc(used ? used : 1));
	if (!ones || !mask)
		std::abort();
	std::memset(static_cast<void *>(&out), 0, sizeof(P));
	std::memset(static_cast<void *>(ones), 0xff, sizeof(P));
	fill(out);
	fill(*ones);
	const unsigned char *a = reinterpret_cast<const unsigned char *>(&out);
	const unsigned char *b = reinterpret_cast<const unsigned char *>(ones);
	for (size_t i = 0; i < used; i++)
		mask[i] = a[i] == b[i];
	expect_next_launch(fun, &out, mask, used);
	std::free(mask);
	std::free(ones);
}

#endif
