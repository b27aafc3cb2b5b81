// SPDX-License-Identifier: MIT
/* guest/core/dataheap.c: the client's allocator of the data area
 * (pinned memory, staging buffers): alignment, containment, sizes that do
 * not fit or overflow when rounded, bad frees, dh_block lookups,
 * coalescing, and a randomized run against a reference. */
#include <string.h>

#include "check.h"
#include "core.h"

struct rt rt;

#define DATA (1u << 20)

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	return check_xorshift(&rng);
}

/* the data area, once for all cases; each case leaves it empty */
static void data_area(void)
{
	if (!rt.data) {
		rt.data = aligned_alloc(4096, DATA);
		rt.data_size = DATA;
	}
	REQUIRE(rt.data);
}

static void test_basics(void)
{
	void *a = dh_alloc(1), *b = dh_alloc(300), *c = dh_alloc(0), *base;
	uint64_t size;

	CHECK(a && b && c);
	CHECK_EQ(dh_offset(a) % 256, 0);
	CHECK_EQ(dh_offset(b) % 256, 0);
	CHECK(dh_contains(b, 512));
	CHECK(!dh_contains(b, DATA));
	CHECK(!dh_contains(rt.data + DATA, 1));
	CHECK(!dh_contains(rt.data - 1, 1));
	CHECK(dh_block((uint8_t *)b + 511, &base, &size) && base == b && size == 512);
	CHECK(!dh_block((uint8_t *)c + 256, &base, &size));
	/* sizes that do not fit, or wrap when rounded up to 256 */
	CHECK(dh_alloc(DATA) == NULL);
	CHECK(dh_alloc(UINT64_MAX) == NULL);
	CHECK(dh_alloc(UINT64_MAX - 10) == NULL);
	CHECK(dh_alloc(UINT64_MAX - 255) == NULL);
	/* bad frees */
	CHECK_EQ(dh_free((uint8_t *)b + 256), -1);
	CHECK_EQ(dh_free((uint8_t *)b + 1), -1);
	CHECK_EQ(dh_free(rt.data + DATA), -1);
	CHECK_EQ(dh_free(&rng), -1);
	CHECK_EQ(dh_free(NULL), -1);
	CHECK_EQ(dh_free(b), 0);
	CHECK_EQ(dh_free(b), -1);
	CHECK_EQ(dh_free(a), 0);
	CHECK_EQ(dh_free(c), 0);
	/* everything coalesced back: the whole area is one block again */
	a = dh_alloc(DATA);
	CHECK(a == rt.data);
	CHECK_EQ(dh_free(a), 0);
}

struct ref {
	uint8_t *p;
	uint64_t size;
};

static void test_random(void)
{
	const unsigned steps = 20000;
	static struct ref live[4096];
	size_t n = 0;

	for (unsigned s = 0; s < steps; s++) {
		if (rnd() % 2 && n < 4096) {
			uint64_t size = 1 + rnd() % (rnd() % 4 ? 2048 : 65536);
			uint8_t *p = dh_alloc(size);

			if (!p)
				continue;       /* full: fine, checked below by the overlap rules */
			CHECK(dh_contains(p, size));
			CHECK_EQ(dh_offset(p) % 256, 0);
			for (size_t i = 0; i < n; i++)
				CHECK(p + size <= live[i].p || live[i].p + live[i].size <= p);
			memset(p, (int)(n & 0xff), size);
			live[n++] = (struct ref){ p, size };
		} else if (n) {
			size_t i = rnd() % n;

			for (uint64_t k = 0; k < live[i].size; k++)
				CHECK_EQ(live[i].p[k], (uint8_t)(live[i].p[0]));
			CHECK_EQ(dh_free(live[i].p), 0);
			live[i] = live[--n];
		}
	}
	while (n)
		CHECK_EQ(dh_free(live[--n].p), 0);
	/* everything coalesced back: the whole area is one block again */
	void *all = dh_alloc(DATA);

	CHECK(all == rt.data);
	CHECK_EQ(dh_free(all), 0);
}

static const struct check_case cases[] = {
	{ "basics", test_basics },
	{ "random_vs_reference", test_random },
};
CHECK_MAIN_FIXTURE(cases, data_area, NULL)
