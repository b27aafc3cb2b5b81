// SPDX-License-Identifier: MIT
/* host-backend/core/vaheap.c: allocation patterns, alignment, quota, frees of
 * bad pointers, find() bounds, chunk reuse and release, window exhaustion,
 * map failures, virtual memory management (reservations, mappings, spans over
 * adjacent mappings, unmaps, physical memory against the quota), and a
 * randomized run against a simple reference model.
 * usage: test_vaheap [--steps=N] [CASE...] */
#include <string.h>

#include "check.h"
#include "core/vaheap.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define BASE 0x100000000000ull

/* ---- a fake device that records every map/unmap and checks their sanity ---- */

#define MAX_MAPS 4096

struct fake_map {
	uint64_t va, size;
	uintptr_t cookie;
	int live;
};

struct fake_dev {
	struct fake_map maps[MAX_MAPS];
	int nmaps, nlive, map_calls, unmap_calls;
	int fail_next_map;
	uint64_t base, size;
};

static int fake_map(void *ctx, uint64_t va, uint64_t size, void **cookie)
{
	struct fake_dev *d = ctx;

	d->map_calls++;
	if (d->fail_next_map) {
		d->fail_next_map = 0;
		return 2;
	}
	REQUIRE(d->nmaps < MAX_MAPS);
	CHECK(va >= d->base && size <= d->base + d->size - va);
	CHECK(size % (2 * MiB) == 0 && va % (2 * MiB) == 0);
	for (int i = 0; i < d->nmaps; i++)
		if (d->maps[i].live)
			CHECK(va + size <= d->maps[i].va || d->maps[i].va + d->maps[i].size <= va);
	d->maps[d->nmaps] = (struct fake_map){ va, size, (uintptr_t)(d->nmaps + 1), 1 };
	*cookie = (void *)d->maps[d->nmaps].cookie;
	d->nmaps++;
	d->nlive++;
	return 0;
}

static void fake_unmap(void *ctx, uint64_t va, uint64_t size, void *cookie)
{
	struct fake_dev *d = ctx;
	uintptr_t c = (uintptr_t)cookie;

	d->unmap_calls++;
	REQUIRE(c >= 1 && c <= (uintptr_t)d->nmaps);
	CHECK(d->maps[c - 1].live);
	CHECK_EQ(d->maps[c - 1].va, va);
	CHECK_EQ(d->maps[c - 1].size, size);
	d->maps[c - 1].live = 0;
	d->nlive--;
}

static const struct vaheap_ops fake_ops = { .map = fake_map, .unmap = fake_unmap };

static void setup(struct vaheap *h, struct fake_dev *d, uint64_t size, uint64_t quota)
{
	memset(d, 0, sizeof(*d));
	d->base = BASE;
	d->size = size;
	vaheap_init(h, BASE, size, 2 * MiB, quota, &fake_ops, d);
}

/* the mapped chunk holding [va, va+len), or NULL */
static const struct fake_map *mapped(const struct fake_dev *d, uint64_t va, uint64_t len)
{
	for (int i = 0; i < d->nmaps; i++) {
		const struct fake_map *m = &d->maps[i];

		if (m->live && va >= m->va && len <= m->size - (va - m->va) && va - m->va < m->size)
			return m;
	}
	return NULL;
}

static void test_basic_and_alignment(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t va[64];
	static const uint64_t sizes[] = { 1, 7, 255, 256, 257, 4096, 1000, 3 * MiB, 12345, 64 };

	setup(&h, &d, 1ull << 40, 16 * GiB);
	for (int i = 0; i < 64; i++) {
		uint64_t sz = sizes[i % 10];

		CHECK_EQ(vaheap_alloc(&h, sz, &va[i]), 0);
		CHECK_EQ(va[i] % 256, 0);
		CHECK(va[i] >= BASE && va[i] + sz <= BASE + (1ull << 40));
		CHECK(mapped(&d, va[i], sz));
		CHECK(vaheap_find(&h, va[i], sz) != NULL);
		CHECK(vaheap_chunk_of(&h, va[i]) != NULL);
		for (int j = 0; j < i; j++) {
			const struct vaheap_range *a = vaheap_find(&h, va[j], 1);

			CHECK(a && a->va == va[j]);
			CHECK(va[i] + sz <= a->va || a->va + a->size <= va[i]);
		}
	}
	/* many small allocations share one chunk */
	CHECK_EQ(d.map_calls, 1);
	CHECK_EQ(vaheap_alloc(&h, 0, &va[0]), 2);
	CHECK_EQ(vaheap_alloc(&h, (1ull << 40) + 1, &va[0]), 2);
	CHECK_EQ(vaheap_alloc(&h, UINT64_MAX, &va[0]), 2);
	vaheap_destroy(&h);
	CHECK_EQ(d.nlive, 0);
}

static void test_quota(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t a, b, c;

	setup(&h, &d, 1ull << 40, 1 * MiB);
	CHECK_EQ(vaheap_alloc(&h, 1 * MiB + 1, &a), 2);
	CHECK_EQ(vaheap_alloc(&h, 512 * 1024, &a), 0);
	CHECK_EQ(vaheap_alloc(&h, 512 * 1024 - 255, &b), 0); /* rounds up to exactly the quota */
	CHECK_EQ(h.used, 1 * MiB);
	CHECK_EQ(vaheap_alloc(&h, 1, &c), 2);
	CHECK_EQ(vaheap_free(&h, b), 0);
	CHECK_EQ(h.used, 512 * 1024);
	CHECK_EQ(vaheap_alloc(&h, 1, &c), 0);
	CHECK_EQ(h.used, 512 * 1024 + 256);
	/* a size whose rounding overflows is refused, not wrapped */
	CHECK_EQ(vaheap_alloc(&h, UINT64_MAX - 10, &c), 2);
	vaheap_destroy(&h);
}

static void test_bad_frees(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t a, b;

	setup(&h, &d, 1ull << 40, 16 * GiB);
	CHECK_EQ(vaheap_free(&h, BASE), 1);     /* nothing allocated yet */
	CHECK_EQ(vaheap_alloc(&h, 4096, &a), 0);
	CHECK_EQ(vaheap_alloc(&h, 4096, &b), 0);
	CHECK_EQ(vaheap_free(&h, a + 256), 1);  /* inside, not the start */
	CHECK_EQ(vaheap_free(&h, a + 1), 1);
	CHECK_EQ(vaheap_free(&h, 0), 1);
	CHECK_EQ(vaheap_free(&h, UINT64_MAX), 1);
	CHECK_EQ(vaheap_free(&h, b + 4096), 1); /* just past the last one */
	CHECK_EQ(h.used, 8192);
	CHECK_EQ(vaheap_free(&h, a), 0);
	CHECK_EQ(vaheap_free(&h, a), 1);        /* double free */
	CHECK(vaheap_find(&h, a, 1) == NULL);
	CHECK(vaheap_find(&h, b, 4096) != NULL);
	vaheap_destroy(&h);
}

static void test_find_bounds(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t a, b;
	const struct vaheap_range *r;

	setup(&h, &d, 1ull << 40, 16 * GiB);
	CHECK_EQ(vaheap_alloc(&h, 1000, &a), 0);   /* occupies 1024 */
	CHECK_EQ(vaheap_alloc(&h, 1024, &b), 0);
	CHECK_EQ(b, a + 1024);                      /* adjacent: a range must not span both */
	r = vaheap_find(&h, a, 1024);
	CHECK(r && r->va == a && r->size == 1024);
	CHECK(vaheap_find(&h, a + 1023, 1) == r);
	CHECK(vaheap_find(&h, a, 1025) == NULL);    /* crosses into b */
	CHECK(vaheap_find(&h, a + 1000, 100) == NULL);
	CHECK(vaheap_find(&h, a - 1, 2) == NULL);   /* starts before */
	CHECK(vaheap_find(&h, a + 512, UINT64_MAX) == NULL);
	CHECK(vaheap_find(&h, a + 512, UINT64_MAX - 511) == NULL); /* va + len wraps */
	CHECK(vaheap_find(&h, b + 1024, 1) == NULL);
	CHECK(vaheap_find(&h, b + 1023, 1) != NULL);
	CHECK(vaheap_find(&h, b + 1023, 2) == NULL);
	CHECK(vaheap_find(&h, 0, 1) == NULL);
	CHECK(vaheap_find(&h, UINT64_MAX, 1) == NULL);
	CHECK_EQ(vaheap_free(&h, a), 0);
	CHECK(vaheap_find(&h, a, 1) == NULL);       /* freed memory is not reachable */
	vaheap_destroy(&h);
}

static void test_chunks(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t a, b, big;

	setup(&h, &d, 1ull << 40, 64 * GiB);
	/* small chunks are kept and reused */
	CHECK_EQ(vaheap_alloc(&h, 1 * MiB, &a), 0);
	CHECK_EQ(d.map_calls, 1);
	CHECK_EQ(vaheap_free(&h, a), 0);
	CHECK_EQ(d.unmap_calls, 0);
	CHECK_EQ(vaheap_alloc(&h, 2 * MiB, &b), 0);
	CHECK_EQ(d.map_calls, 1);
	CHECK_EQ(b, a);                             /* lowest free extent first */
	/* a large allocation gets its own chunk, unmapped once idle */
	CHECK_EQ(vaheap_alloc(&h, 100 * MiB + 3, &big), 0);
	CHECK_EQ(d.map_calls, 2);
	CHECK(mapped(&d, big, 100 * MiB + 3));
	CHECK(d.maps[1].size >= 100 * MiB + 3 && d.maps[1].size % (2 * MiB) == 0);
	CHECK_EQ(vaheap_free(&h, big), 0);
	CHECK_EQ(d.unmap_calls, 1);
	CHECK(!d.maps[1].live);
	CHECK(vaheap_chunk_of(&h, big) == NULL);
	CHECK_EQ(d.nlive, 1);
	/* the freed window stretch is usable again */
	CHECK_EQ(vaheap_alloc(&h, 100 * MiB, &big), 0);
	CHECK(mapped(&d, big, 100 * MiB));
	CHECK_EQ(vaheap_free(&h, b), 0);
	vaheap_destroy(&h);
	CHECK_EQ(d.nlive, 0);
	CHECK_EQ(d.map_calls, d.unmap_calls);
}

static void test_map_failure_and_window(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t a, b;

	setup(&h, &d, 96 * MiB, 64 * GiB);
	d.fail_next_map = 1;
	CHECK_EQ(vaheap_alloc(&h, 4096, &a), 2);
	CHECK_EQ(h.used, 0);
	CHECK_EQ(h.nchunks, 0);
	CHECK_EQ(vaheap_alloc(&h, 40 * MiB, &a), 0);
	CHECK_EQ(vaheap_alloc(&h, 60 * MiB, &b), 2);   /* 56 MiB of window left */
	CHECK_EQ(h.used, 40 * MiB);
	CHECK_EQ(vaheap_alloc(&h, 20 * MiB, &b), 0);   /* a 32 MiB chunk still fits */
	CHECK(b >= a + 40 * MiB && b + 20 * MiB <= BASE + 96 * MiB);
	vaheap_destroy(&h);
	CHECK_EQ(d.nlive, 0);
}

/* memory shared with other heaps (an identity's quota across workers):
 * every byte charged is uncharged, by a free, a failed allocation or destroy */
static uint64_t shared_left;
static uint64_t charged;

static int shared_charge(void *ctx, uint64_t bytes)
{
	if (bytes > shared_left)
		return -1;
	shared_left -= bytes;
	charged += bytes;
	return 0;
}

static void shared_uncharge(void *ctx, uint64_t bytes)
{
	CHECK(bytes <= charged);
	charged -= bytes;
	shared_left += bytes;
}

static const struct vaheap_ops shared_ops = {
	.map = fake_map, .unmap = fake_unmap, .charge = shared_charge, .uncharge = shared_uncharge,
};

static void test_shared_charge(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t a, b, c;

	memset(&d, 0, sizeof(d));
	d.base = BASE;
	d.size = 1ull << 40;
	vaheap_init(&h, BASE, d.size, 2 * MiB, 64 * GiB, &shared_ops, &d);
	shared_left = 100 * MiB;
	charged = 0;
	d.fail_next_map = 1;                           /* a failed allocation gives its charge back */
	CHECK_EQ(vaheap_alloc(&h, 60 * MiB, &a), 2);
	CHECK_EQ(charged, 0);
	CHECK_EQ(vaheap_alloc(&h, 60 * MiB, &a), 0);
	CHECK_EQ(vaheap_alloc(&h, 50 * MiB, &b), 2);   /* the heap's own quota allows it; the shared one not */
	CHECK_EQ(h.used, 60 * MiB);
	CHECK_EQ(charged, 60 * MiB);
	CHECK_EQ(vaheap_alloc(&h, 40 * MiB, &b), 0);
	CHECK_EQ(vaheap_free(&h, a), 0);
	CHECK_EQ(charged, 40 * MiB);
	CHECK_EQ(vaheap_alloc(&h, 60 * MiB, &c), 0);
	vaheap_destroy(&h);
	CHECK_EQ(charged, 0);
	CHECK_EQ(shared_left, 100 * MiB);
}

/* ---- randomized run against a reference list of live allocations ---- */

struct ref {
	uint64_t va, size, rounded;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	return check_xorshift(&rng);
}

static uint64_t rand_size(void)
{
	switch (rnd() % 8) {
	case 0: return 1 + rnd() % 256;
	case 1: case 2: case 3: return 1 + rnd() % 65536;
	case 4: case 5: return 1 + rnd() % (4 * MiB);
	case 6: return 1 + rnd() % (40 * MiB);
	default: return 60 * MiB + rnd() % (100 * MiB);
	}
}

static void test_random_model(unsigned steps)
{
	struct vaheap h;
	static struct fake_dev d;
	static struct ref live[4096];
	size_t n = 0;
	uint64_t used = 0;
	const uint64_t quota = 2 * GiB;

	setup(&h, &d, 1ull << 40, quota);
	for (unsigned s = 0; s < steps; s++) {
		unsigned what = (unsigned)(rnd() % 10);

		if (what < 5 && n < 4096) {
			uint64_t sz = rand_size(), rounded = (sz + 255) / 256 * 256, va;
			int r = vaheap_alloc(&h, sz, &va);

			if (used + rounded > quota) {
				CHECK_EQ(r, 2);
				continue;
			}
			CHECK_EQ(r, 0);
			CHECK_EQ(va % 256, 0);
			CHECK(mapped(&d, va, sz));
			for (size_t i = 0; i < n; i++)
				CHECK(va + rounded <= live[i].va || live[i].va + live[i].rounded <= va);
			live[n++] = (struct ref){ va, sz, rounded };
			used += rounded;
		} else if (what < 9 && n > 0) {
			size_t i = rnd() % n;

			CHECK_EQ(vaheap_free(&h, live[i].va), 0);
			CHECK_EQ(vaheap_free(&h, live[i].va), 1);
			used -= live[i].rounded;
			live[i] = live[--n];
		} else if (n > 0) {
			/* a bogus free inside an allocation */
			struct ref *a = &live[rnd() % n];

			if (a->rounded > 256)
				CHECK_EQ(vaheap_free(&h, a->va + 256 * (1 + rnd() % (a->rounded / 256 - 1))), 1);
		}
		CHECK_EQ(h.used, used);
		CHECK_EQ(h.nallocs, n);
		CHECK_EQ((size_t)d.nlive, h.nchunks);
		/* probes: find() agrees with the reference */
		for (int k = 0; k < 8 && n > 0; k++) {
			struct ref *a = &live[rnd() % n];
			uint64_t off = rnd() % a->rounded, len = rnd() % (a->rounded - off + 1);
			const struct vaheap_range *r = vaheap_find(&h, a->va + off, len);

			CHECK(r && r->va == a->va);
			/* one byte past the allocation's end: refused */
			CHECK(vaheap_find(&h, a->va + off, a->rounded - off + 1) == NULL);
		}
	}
	while (n > 0) {
		CHECK_EQ(vaheap_free(&h, live[n - 1].va), 0);
		n--;
	}
	CHECK_EQ(h.used, 0);
	/* every large chunk was released once idle; small ones may stay, 64 MiB of them at most */
	{
		uint64_t kept = 0;

		for (int i = 0; i < d.nmaps; i++) {
			if (!d.maps[i].live)
				continue;
			CHECK(d.maps[i].size < 64 * MiB);
			kept += d.maps[i].size;
		}
		CHECK(kept <= 64 * MiB);
	}
	vaheap_destroy(&h);
	CHECK_EQ(d.nlive, 0);
}

/* ---- virtual memory management ---- */

static int nreserve, nrelease;

static int count_reserve(void *ctx, uint64_t va, uint64_t size, void **cookie)
{
	(void)ctx;
	CHECK(va % (2 * MiB) == 0 && size % (2 * MiB) == 0);
	nreserve++;
	*cookie = (void *)(uintptr_t)va;
	return 0;
}

static void count_release(void *ctx, uint64_t va, uint64_t size, void *cookie)
{
	(void)ctx, (void)size;
	CHECK_EQ((uint64_t)(uintptr_t)cookie, va);
	nrelease++;
}

static const struct vaheap_ops vmm_ops = {
	.map = fake_map, .unmap = fake_unmap, .reserve = count_reserve, .release = count_release,
};

static void setup_vmm(struct vaheap *h, struct fake_dev *d, uint64_t size, uint64_t quota)
{
	setup(h, d, size, quota);
	h->ops = &vmm_ops;
	nreserve = nrelease = 0;
}

static void test_vmm_reserve(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t r1, r2, r3, a;

	setup_vmm(&h, &d, 1 * GiB, 64 * MiB);
	CHECK_EQ(vaheap_reserve(&h, 0, 0, 0, &r1), 1);
	CHECK_EQ(vaheap_reserve(&h, 3 * MiB, 0, 0, &r1), 1);          /* not a multiple of 2 MiB */
	CHECK_EQ(vaheap_reserve(&h, 4 * MiB, 3 * MiB, 0, &r1), 1);    /* alignment not a power of two */
	CHECK_EQ(vaheap_reserve(&h, 2 * GiB, 0, 0, &r1), 2);          /* more than the window */
	CHECK_EQ(nreserve, 0);
	CHECK_EQ(vaheap_reserve(&h, 16 * MiB, 0, 0, &r1), 0);
	CHECK_EQ(r1, BASE);
	CHECK_EQ(nreserve, 1);
	CHECK_EQ(d.nlive, 0);                                          /* nothing mapped for it */
	CHECK_EQ(h.used, 0);                                           /* nor charged */
	/* allocations never come from a reservation */
	CHECK_EQ(vaheap_alloc(&h, 4096, &a), 0);
	CHECK(a >= r1 + 16 * MiB);
	CHECK(vaheap_reservation(&h, a, 1) == NULL);
	CHECK(vaheap_reservation(&h, r1 + 2 * MiB, 14 * MiB) != NULL);
	CHECK(vaheap_reservation(&h, r1 + 2 * MiB, 14 * MiB + 1) == NULL);
	/* a free, aligned hint is taken; one over a chunk or misaligned is not */
	CHECK_EQ(vaheap_reserve(&h, 4 * MiB, 0, BASE + 512 * MiB, &r2), 0);
	CHECK_EQ(r2, BASE + 512 * MiB);
	CHECK_EQ(vaheap_reserve(&h, 4 * MiB, 0, r1 + 2 * MiB, &r3), 0);
	CHECK(r3 + 4 * MiB <= r1 || r3 >= r1 + 16 * MiB);
	CHECK(r3 + 4 * MiB <= a || r3 > a);
	CHECK_EQ(vaheap_reserve_free(&h, r3, 4 * MiB), 0);
	CHECK_EQ(vaheap_reserve(&h, 4 * MiB, 0, BASE + 700 * MiB + 4096, &r3), 0);
	CHECK(r3 % (2 * MiB) == 0 && r3 != BASE + 700 * MiB + 4096);
	CHECK_EQ(vaheap_reserve_free(&h, r3, 4 * MiB), 0);
	/* alignment */
	CHECK_EQ(vaheap_reserve(&h, 2 * MiB, 64 * MiB, 0, &r3), 0);
	CHECK_EQ(r3 % (64 * MiB), 0);
	/* frees: the whole reservation only, never an allocation's chunk */
	CHECK_EQ(vaheap_reserve_free(&h, r3, 4 * MiB), 1);
	CHECK_EQ(vaheap_reserve_free(&h, r3 + 2 * MiB, 2 * MiB), 1);
	CHECK_EQ(vaheap_reserve_free(&h, vaheap_chunk_of(&h, a)->va, vaheap_chunk_of(&h, a)->size), 1);
	CHECK_EQ(vaheap_reserve_free(&h, r3, 2 * MiB), 0);
	CHECK_EQ(nrelease, 3);
	/* the window fills: a reservation that fits nowhere is refused */
	CHECK_EQ(vaheap_reserve(&h, 512 * MiB, 0, 0, &r3), 2);
	CHECK_EQ(vaheap_free(&h, a), 0);
	vaheap_destroy(&h);
	CHECK_EQ(nrelease, 5);                                         /* r1 and r2 given back */
	CHECK_EQ(d.nlive, 0);
}

static int unmapped_calls;
static uint64_t unmapped_bytes;

static void on_unmap(void *arg, const struct vaheap_range *r)
{
	CHECK(arg == &unmapped_calls);
	CHECK(r->vmm);
	unmapped_calls++;
	unmapped_bytes += r->size;
}

static void test_vmm_map(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t r, r2, r3, a;
	int tag;
	const struct vaheap_range *f;

	setup_vmm(&h, &d, 1 * GiB, 64 * MiB);
	CHECK_EQ(vaheap_reserve(&h, 16 * MiB, 0, 0, &r), 0);
	CHECK_EQ(vaheap_alloc(&h, 4096, &a), 0);
	CHECK_EQ(vaheap_map(&h, r, 4 * MiB, &tag), 0);
	CHECK_EQ(vaheap_map(&h, r + 2 * MiB, 4 * MiB, &tag), 1);      /* over the first */
	CHECK_EQ(vaheap_map(&h, r - 2 * MiB, 4 * MiB, &tag), 1);      /* starts before the reservation */
	CHECK_EQ(vaheap_map(&h, r + 4 * MiB, 4 * MiB, &tag), 0);      /* adjacent */
	CHECK_EQ(vaheap_map(&h, r + 8 * MiB + 4096, 2 * MiB, &tag), 1); /* misaligned address */
	CHECK_EQ(vaheap_map(&h, r + 8 * MiB, 3 * MiB, &tag), 1);      /* misaligned size */
	CHECK_EQ(vaheap_map(&h, r + 8 * MiB, 0, &tag), 1);
	CHECK_EQ(vaheap_map(&h, r + 14 * MiB, 4 * MiB, &tag), 1);     /* past its end */
	CHECK_EQ(vaheap_map(&h, vaheap_chunk_of(&h, a)->va, 2 * MiB, &tag), 1); /* not a reservation */
	CHECK_EQ(vaheap_map(&h, r + 14 * MiB, UINT64_MAX - 2 * MiB + 1, &tag), 1); /* wraps */
	CHECK_EQ(h.used, 4096);                                         /* mappings charge nothing */
	/* the two mappings are one stretch; the unmapped rest is not memory */
	f = vaheap_find(&h, r + 3 * MiB, 2 * MiB);
	CHECK(f && f->va == r && f->vmm && f->tag == &tag);
	CHECK(vaheap_find(&h, r, 8 * MiB) != NULL);
	CHECK(vaheap_find(&h, r + 3 * MiB, 6 * MiB) == NULL);
	CHECK(vaheap_find(&h, r + 10 * MiB, 1) == NULL);
	/* cudaFree's and the pools' calls do not touch mappings */
	CHECK_EQ(vaheap_free(&h, r), 1);
	CHECK_EQ(vaheap_set_tag(&h, r, NULL), 1);
	CHECK(vaheap_find(&h, r, 1) != NULL);
	/* unmaps take whole mappings, end to end */
	CHECK_EQ(vaheap_reserve_free(&h, r, 16 * MiB), 1);
	CHECK_EQ(vaheap_unmap(&h, r + 2 * MiB, 2 * MiB, on_unmap, &unmapped_calls), 1);
	CHECK_EQ(vaheap_unmap(&h, r, 2 * MiB, on_unmap, &unmapped_calls), 1);
	CHECK_EQ(vaheap_unmap(&h, r, 10 * MiB, on_unmap, &unmapped_calls), 1);
	CHECK_EQ(unmapped_calls, 0);
	CHECK_EQ(vaheap_unmap(&h, r, 8 * MiB, on_unmap, &unmapped_calls), 0);
	CHECK_EQ(unmapped_calls, 2);
	CHECK_EQ(unmapped_bytes, 8 * MiB);
	CHECK(vaheap_find(&h, r, 1) == NULL);
	CHECK(vaheap_find(&h, a, 4096) != NULL);
	CHECK_EQ(vaheap_reserve_free(&h, r, 16 * MiB), 0);
	/* mappings of two reservations side by side are not one stretch */
	CHECK_EQ(vaheap_reserve(&h, 4 * MiB, 0, BASE + 256 * MiB, &r2), 0);
	CHECK_EQ(vaheap_reserve(&h, 4 * MiB, 0, BASE + 260 * MiB, &r3), 0);
	CHECK_EQ(r3, r2 + 4 * MiB);
	CHECK_EQ(vaheap_map(&h, r2, 4 * MiB, &tag), 0);
	CHECK_EQ(vaheap_map(&h, r3, 4 * MiB, &tag), 0);
	CHECK(vaheap_find(&h, r2 + 3 * MiB, 1 * MiB) != NULL);
	CHECK(vaheap_find(&h, r2 + 3 * MiB, 2 * MiB) == NULL);
	CHECK_EQ(vaheap_unmap(&h, r2, 8 * MiB, NULL, NULL), 1);
	CHECK_EQ(vaheap_unmap(&h, r3, 4 * MiB, NULL, NULL), 0);
	CHECK_EQ(vaheap_unmap(&h, r2, 4 * MiB, NULL, NULL), 0);
	CHECK_EQ(vaheap_free(&h, a), 0);
	vaheap_destroy(&h);
	CHECK_EQ(nrelease, 3);
	CHECK_EQ(d.nlive, 0);
}

static void test_vmm_charge(void)
{
	struct vaheap h;
	struct fake_dev d;
	uint64_t a;

	setup_vmm(&h, &d, 1 * GiB, 8 * MiB);
	CHECK_EQ(vaheap_charge(&h, 6 * MiB), 0);
	CHECK_EQ(h.used, 6 * MiB);
	CHECK_EQ(vaheap_alloc(&h, 4 * MiB, &a), 2);                    /* the quota is shared */
	CHECK_EQ(vaheap_charge(&h, 4 * MiB), 2);
	CHECK_EQ(vaheap_charge(&h, UINT64_MAX - 2 * MiB), 2);          /* no wrap past the quota */
	CHECK_EQ(h.used, 6 * MiB);
	vaheap_uncharge(&h, 6 * MiB);
	CHECK_EQ(h.used, 0);
	CHECK_EQ(vaheap_alloc(&h, 4 * MiB, &a), 0);
	CHECK_EQ(vaheap_free(&h, a), 0);
	vaheap_destroy(&h);
	CHECK_EQ(d.nlive, 0);
}

static void random_model(void)
{
	unsigned steps = (unsigned)check_opt_u64("steps", 20000);

	test_random_model(steps);
	printf("  %u random steps\n", steps);
}

static const struct check_case cases[] = {
	{ "basic_and_alignment", test_basic_and_alignment },
	{ "quota", test_quota },
	{ "bad_frees", test_bad_frees },
	{ "find_bounds", test_find_bounds },
	{ "chunks", test_chunks },
	{ "map_failure_and_window", test_map_failure_and_window },
	{ "shared_charge", test_shared_charge },
	{ "vmm_reserve", test_vmm_reserve },
	{ "vmm_map", test_vmm_map },
	{ "vmm_charge", test_vmm_charge },
	{ "random_model", random_model },
};
CHECK_MAIN(cases)
