/* SPDX-License-Identifier: MIT */
/*
 * Robustness: truncated and byte-flipped copies of real fat binaries must be
 * refused with a reason or give a self-consistent index, never crash (run the
 * asan build to catch out-of-bounds reads). Usage: test_fuzz ITERATIONS FATBIN...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/fatbin.h"
#include "test_util.h"

static unsigned passed, failed;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (cond) {                                                 \
			passed++;                                           \
		} else {                                                    \
			failed++;                                           \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
		}                                                           \
	} while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
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
	free(copy);
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

static void fuzz_file(const char *path, unsigned iters)
{
	size_t size;
	uint8_t *orig = read_file(path, &size);
	CHECK(orig != NULL, "%s: unreadable", path);
	if (!orig)
		return;
	char err[256];
	struct mearas_fatbin_index *idx = mearas_fatbin_index_new(orig, size, err, sizeof(err));
	CHECK(idx && mearas_fatbin_kernel_count(idx) > 0, "%s: original refused: %s", path,
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
	CHECK(trunc.bad == 0 && flips.bad == 0, "%s: %u inconsistent results", path,
	      trunc.bad + flips.bad);
	printf("%s: truncations %u refused / %u accepted; %u mutants %u refused / %u accepted\n",
	       path, trunc.refused, trunc.accepted, iters, flips.refused, flips.accepted);
	free(m);
	free(orig);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s ITERATIONS FATBIN...\n", argv[0]);
		return 2;
	}
	unsigned iters = (unsigned)strtoul(argv[1], NULL, 10);
	for (int i = 2; i < argc; i++)
		fuzz_file(argv[i], iters);
	printf("test_fuzz: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
