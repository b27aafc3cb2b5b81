/* SPDX-License-Identifier: MIT */
/*
 * Robustness: truncated and byte-flipped copies of real fat binaries must be
 * refused with a reason or give a self-consistent index, never crash (run the
 * asan build to catch out-of-bounds reads). Usage: test_fuzz ITERATIONS FATBIN...
 * (one case per file, named after it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mearas/fatbin.h"
#include "test_util.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return check_xorshift(&rng_state);
}

struct tally {
	unsigned accepted, refused, bad;
};

/* Parse a mutant (copied to a buffer of exactly its size so ASan sees overreads). */
static void try_one(const uint8_t *data, size_t len, struct tally *t)
{
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy)
		abort();
	memcpy(copy, data, len);
	char err[256];
	err[0] = '\0';
	struct mearas_fatbin_index *idx = mearas_fatbin_index_new(copy, len, err, sizeof(err));
	int prints = mearas_image_may_print(copy, len); /* the daemon's search of the same bytes */
	char why[256] = "";
	uint64_t bytes;
	/* and its account of the memory the module would hold */
	int measured = mearas_module_footprint(copy, len, &bytes, why, sizeof(why));
	free(copy);
	if (prints != 0 && prints != 1)
		t->bad++;
	if (measured && (measured >= 0 || why[0] == '\0'))
		t->bad++;	/* refused without a reason, or an odd result */
	if (!idx) {
		if (err[0] == '\0')
			t->bad++;	/* refused without a reason */
		else
			t->refused++;
		return;
	}
	t->accepted++;
	const char *prev = NULL;
	for (size_t i = 0; i < mearas_fatbin_kernel_count(idx); i++) {
		const struct mearas_kernel_info *k = mearas_fatbin_kernel_at(idx, i);
		int ok = k && k->name[0] && (!prev || strcmp(prev, k->name) < 0) &&
			 mearas_fatbin_find_kernel(idx, k->name) == k;
		for (uint32_t j = 0; ok && j < k->nparams; j++)
			ok = k->params[j].size > 0 &&
			     k->params[j].offset + k->params[j].size <= k->param_bytes;
		if (!ok)
			t->bad++;
		prev = k ? k->name : prev;
	}
	mearas_fatbin_index_free(idx);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* An uncompressed ELF or PTX entry of a (trusted, unmodified) input. */
struct raw_entry {
	size_t hdr, hsize, payload, len;
	int elf;
};

/* Finds the uncompressed code entries of the fat binaries in data. */
static size_t raw_entries(const uint8_t *d, size_t size, struct raw_entry *out, size_t max)
{
	size_t n = 0, off = 0;
	while (off + 16 <= size && n < max) {
		if (rd32(d + off) != 0xba55ed50u) {
			off += 8;	/* padding between fat binaries */
			continue;
		}
		size_t hs = d[off + 6] | (size_t)d[off + 7] << 8;
		size_t end = off + hs + (size_t)rd64(d + off + 8), e = off + hs;
		while (e + 0x40 <= end && n < max) {
			size_t ehs = rd32(d + e + 4), psz = (size_t)rd64(d + e + 8);
			uint16_t kind = d[e] | d[e + 1] << 8;
			if ((kind == 1 || kind == 2) && !(rd64(d + e + 0x28) & 0xa000))
				out[n++] = (struct raw_entry){ e, ehs, e + ehs, psz, kind == 2 };
			e += ehs + psz;
		}
		off = end;
	}
	return n;
}

/* A one-entry fat binary holding entry r with its payload cut to len bytes. */
static size_t single_entry(const uint8_t *d, const struct raw_entry *r, size_t len, uint8_t *out)
{
	static const uint8_t hdr[8] = { 0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0 };
	memcpy(out, hdr, 8);
	put64(out + 8, r->hsize + len);
	memcpy(out + 16, d + r->hdr, r->hsize);
	put64(out + 16 + 8, len);
	memcpy(out + 16 + r->hsize, d + r->payload, len);
	return 16 + r->hsize + len;
}

/*
 * Mutations aimed at the ELF and PTX parsers: each uncompressed entry alone,
 * cut short, or with bytes changed in its ELF header, section table or anywhere.
 */
static void fuzz_entries(const uint8_t *orig, size_t size, unsigned n_iters, struct tally *t)
{
	struct raw_entry ents[64];
	size_t n = raw_entries(orig, size, ents, 64);
	for (size_t i = 0; i < n; i++) {
		const struct raw_entry *r = &ents[i];
		uint8_t *m = malloc(16 + r->hsize + r->len);
		if (!m)
			abort();
		for (size_t cut = 0; cut <= r->len; cut += 1 + rnd() % 61)
			try_one(m, single_entry(orig, r, cut, m), t);
		size_t full = single_entry(orig, r, r->len, m);
		size_t base = 16 + r->hsize;
		size_t shoff = r->elf && r->len >= 64 ? (size_t)rd64(orig + r->payload + 0x28) : 0;
		for (unsigned it = 0; it < n_iters; it++) {
			single_entry(orig, r, r->len, m);
			unsigned nflips = 1 + rnd() % 4;
			for (unsigned f = 0; f < nflips; f++) {
				size_t pos;
				unsigned where = rnd() % 3;
				if (where == 0 && r->len >= 64)
					pos = rnd() % 64;
				else if (where == 1 && shoff && shoff < r->len)
					pos = shoff + rnd() % (r->len - shoff);
				else
					pos = rnd() % (r->len ? r->len : 1);
				if (pos < r->len)
					m[base + pos] = (rnd() & 1) ? (uint8_t)rnd()
								    : m[base + pos] ^ (uint8_t)(1u << (rnd() % 8));
			}
			try_one(m, full, t);
		}
		free(m);
	}
	printf("  %zu uncompressed entries fuzzed one by one\n", n);
}

static unsigned iters;

static void fuzz_file(void *arg)
{
	const char *path = arg;
	size_t size;
	uint8_t *orig = read_file(path, &size);
	REQUIRE_MSG(orig != NULL, "%s: unreadable", path);
	char err[256];
	struct mearas_fatbin_index *idx = mearas_fatbin_index_new(orig, size, err, sizeof(err));
	CHECK_MSG(idx && mearas_fatbin_kernel_count(idx) > 0, "%s: original refused: %s", path,
	      idx ? "no kernels" : err);
	mearas_fatbin_index_free(idx);

	uint8_t *m = malloc(size);
	if (!m)
		abort();
	struct tally trunc = { 0 }, flips = { 0 };

	/* Truncations, with the outer size left alone and with it shrunk to fit. */
	for (size_t cut = 0; cut < size; cut += cut < 512 ? 1 : 1 + rnd() % 997) {
		try_one(orig, cut, &trunc);
		if (cut >= 16) {
			memcpy(m, orig, cut);
			put64(m + 8, cut - 16);
			try_one(m, cut, &trunc);
		}
	}
	/* Random byte changes: anywhere, or clustered in the first KiB (headers). */
	for (unsigned it = 0; it < iters; it++) {
		memcpy(m, orig, size);
		unsigned nflips = 1 + rnd() % 8;
		size_t span = (it & 1) && size > 1024 ? 1024 : size;
		for (unsigned f = 0; f < nflips; f++) {
			size_t pos = rnd() % span;
			m[pos] = (rnd() & 1) ? (uint8_t)rnd() : m[pos] ^ (uint8_t)(1u << (rnd() % 8));
		}
		try_one(m, size, &flips);
	}
	struct tally ent = { 0 };
	fuzz_entries(orig, size, iters / 10, &ent);
	CHECK_MSG(trunc.bad == 0 && flips.bad == 0 && ent.bad == 0, "%s: %u inconsistent results",
	      path, trunc.bad + flips.bad + ent.bad);
	printf("  %s: truncations %u refused / %u accepted; %u mutants %u refused / %u accepted; "
	       "entry mutants %u refused / %u accepted\n",
	       path, trunc.refused, trunc.accepted, iters, flips.refused, flips.accepted,
	       ent.refused, ent.accepted);
	free(m);
	free(orig);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s ITERATIONS FATBIN...\n", argv[0]);
		return 2;
	}
	iters = (unsigned)strtoul(argv[1], NULL, 10);
	check_init(1, argv); /* the arguments are inputs, not case names */
	for (int i = 2; i < argc; i++) {
		const char *base = strrchr(argv[i], '/');

		check_run_one(base ? base + 1 : argv[i], fuzz_file, argv[i]);
	}
	return check_done();
}
