// SPDX-License-Identifier: MIT
/* worker.c's region placement for a remote session: the data area goes at
 * the address the OPEN request names (cfg.data_va, chosen by a peer holding
 * the cluster key) only when it is page aligned, inside the region zone
 * (0x5ff000000000 to 0x700000000000) with the whole region, and free: an
 * unaligned, out-of-zone or wrapping address is not used, and an address
 * over a range already mapped leaves that range as it was (the region then
 * goes elsewhere, and its mapped memory is refused by the session). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "core/worker.h"

#define DATA_SIZE (8ull << 20)
/* inside the zone, far from where regions land by default (0x600000000000) */
#define GOOD_VA 0x650000000000ull

static struct backend_config cfg;
static struct worker *w;

/* builds a region for a session that asked for data_va; the data area's address */
static uint64_t build(uint64_t data_va)
{
	char err[256] = "";

	memset(&cfg, 0, sizeof(cfg));
	cfg.data_va = data_va;
	w = calloc(1, sizeof(*w));
	REQUIRE(w);
	w->cfg = &cfg;
	w->memfd = -1;
	w->nvgpus = 1;
	w->nthreads = MEARAS_MAX_THREADS;
	w->data_size = DATA_SIZE;
	REQUIRE_MSG(worker_build_region(w, err, sizeof(err)) == 0, "worker_build_region: %s", err);
	return (uint64_t)(uintptr_t)w->region + ((struct mearas_region_hdr *)w->region)->data_off;
}

static void teardown(void)
{
	if (w && w->region)
		munmap(w->region, w->region_size);
	if (w && w->memfd >= 0)
		close(w->memfd);
	free(w);
	w = NULL;
}

static void good_address_taken(void)
{
	CHECK_EQ(build(GOOD_VA), GOOD_VA);
}

static void unaligned_address_not_taken(void)
{
	uint64_t got = build(GOOD_VA + 0x123);

	CHECK(got != GOOD_VA + 0x123);
	CHECK_EQ(got & 4095, 0);
}

static void address_below_zone_not_taken(void)
{
	CHECK(build(0x100000000000ull) != 0x100000000000ull);
}

static void address_above_zone_not_taken(void)
{
	CHECK(build(0x7f0000000000ull) != 0x7f0000000000ull);
}

static void wrapping_address_not_taken(void)
{
	/* region start = data_va - data_off, and start + size, wrap or leave the zone */
	uint64_t got = build(~0ull & ~4095ull);

	CHECK(got != (~0ull & ~4095ull));
	CHECK(got < 0x7fffffffffffull);
}

static void taken_range_left_alone(void)
{
	/* a mapping of our own exactly where the wanted region would start */
	uint64_t probe_data = build(GOOD_VA);
	uint64_t start = (uint64_t)(uintptr_t)w->region;
	char *mine;

	(void)probe_data;
	teardown();
	mine = mmap((void *)(uintptr_t)start, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	REQUIRE(mine != MAP_FAILED && (uint64_t)(uintptr_t)mine == start);
	memset(mine, 0x5a, 4096);
	CHECK(build(GOOD_VA) != GOOD_VA);
	for (int i = 0; i < 4096; i++)
		if (mine[i] != 0x5a) {
			CHECK_FAIL("byte %d of the range mapped before was overwritten", i);
			break;
		}
	munmap(mine, 4096);
}

static const struct check_case cases[] = {
	{ "good_address_taken", good_address_taken },
	{ "unaligned_address_not_taken", unaligned_address_not_taken },
	{ "address_below_zone_not_taken", address_below_zone_not_taken },
	{ "address_above_zone_not_taken", address_above_zone_not_taken },
	{ "wrapping_address_not_taken", wrapping_address_not_taken },
	{ "taken_range_left_alone", taken_range_left_alone },
};
CHECK_MAIN_FIXTURE(cases, NULL, teardown)
