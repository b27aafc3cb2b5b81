// SPDX-License-Identifier: MIT
/* guest/libcuda/procaddr.c with the generated table (procaddr.gen.c) and
 * stubs (cu_unsupported.gen.c): cuGetProcAddress_v2 and cuGetProcAddress
 * against every answer the real driver gave (580.159.04 on an H100,
 * experiments/drvapi-probe/results/h100-580.159.04-proctable.tsv.gz), the
 * arguments it refuses, and the stubs it hands out for what mearas does not
 * implement. Linked with -rdynamic, so that dlsym finds the exports in it.
 * usage: test_cu_procaddr [--table=TSV[.gz]] [CASE...] (run from tests/unit) */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* both ABIs of cuGetProcAddress under their exported names */
#define __CUDA_API_VERSION_INTERNAL
#include <cuda.h>

#include "check.h"
#include "mearas/log.h"
#include "procaddr.h"
#include "version.h"

#define TABLE_DEFAULT "../../experiments/drvapi-probe/results/h100-580.159.04-proctable.tsv.gz"
#define UNTOUCHED     (-1)      /* the status the probe started with */
#define SHOWN         10        /* differing rows printed per case */

struct row {
	unsigned line;
	char name[128];         /* "" for the table's "(empty)" */
	int version;
	unsigned long long flags;
	int rc, status;
	char symbol[128];       /* "NULL": no pointer */
};

static int parse_row(char *text, struct row *r)
{
	char *f[6], *save = NULL;
	int n = 0;

	text[strcspn(text, "\r\n")] = 0;
	for (char *t = strtok_r(text, "\t", &save); t && n < 6; t = strtok_r(NULL, "\t", &save))
		f[n++] = t;
	if (n != 6 || strlen(f[0]) >= sizeof(r->name) || strlen(f[5]) >= sizeof(r->symbol))
		return -1;
	strcpy(r->name, strcmp(f[0], "(empty)") ? f[0] : "");
	r->version = atoi(f[1]);
	r->flags = strtoull(f[2], NULL, 10);
	r->rc = atoi(f[3]);
	r->status = atoi(f[4]);
	strcpy(r->symbol, f[5]);
	return 0;
}

/* Calls fn for every row of the measured table (gzipped or not); the number
 * of rows. The table must come from a driver reporting CU_DRIVER_VERSION. */
static unsigned for_each_row(void (*fn)(const struct row *))
{
	const char *path = check_opt("table") ? check_opt("table") : TABLE_DEFAULT;
	gzFile z = gzopen(path, "rb");
	char buf[512];
	struct row r;
	unsigned rows = 0, line = 0;
	int driver = 0;

	REQUIRE_MSG(z, "%s: cannot open (run from tests/unit or give --table=PATH)", path);
	while (gzgets(z, buf, sizeof(buf))) {
		line++;
		if (sscanf(buf, "# driver %d", &driver) == 1 || buf[0] == '#')
			continue;
		if (parse_row(buf, &r)) {
			CHECK_FAIL("%s:%u: not a row", path, line);
			continue;
		}
		r.line = line;
		fn(&r);
		rows++;
	}
	gzclose(z);
	CHECK_MSG(driver == CU_DRIVER_VERSION, "%s: measured on driver %d, we report %d", path, driver,
		  CU_DRIVER_VERSION);
	CHECK_MSG(rows > 0, "%s: no rows", path);
	return rows;
}

static unsigned differing;

static void differs(const struct row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void differs(const struct row *r, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (++differing > SHOWN)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	CHECK_FAIL("line %u: '%s' %d %llu: %s, the driver: rc %d status %d %s", r->line, r->name, r->version,
		   r->flags, what, r->rc, r->status, r->symbol);
}

/* Whether fn is what the row names: NULL for "NULL", else the export of
 * that name in this process, which the table names the same. */
static int is_row_symbol(const struct row *r, void *fn)
{
	int idx;

	if (!strcmp(r->symbol, "NULL"))
		return fn == NULL;
	idx = cu_proc_find(r->name, r->version, (unsigned)r->flags);
	return fn && idx >= 0 && !strcmp(cu_proc_symbol(idx), r->symbol) && fn == (void *)cu_proc_address(idx) &&
	       fn == dlsym(RTLD_DEFAULT, r->symbol);
}

/* each measured row through check (which calls differs() for a row that
 * differs); fails the case when any did */
static void check_rows(void (*check)(const struct row *))
{
	unsigned rows;

	differing = 0;
	rows = for_each_row(check);
	CHECK_MSG(!differing, "%u of %u rows differ", differing, rows);
}

static void check_row_v2(const struct row *r)
{
	void *fn = NULL;
	CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)UNTOUCHED;
	CUresult rc = cuGetProcAddress_v2(r->name, &fn, r->version, r->flags, &st);

	if ((int)rc != r->rc || (int)st != r->status || !is_row_symbol(r, fn))
		differs(r, "we: rc %d status %d %p", (int)rc, (int)st, fn);
}

/* every measured answer, through cuGetProcAddress_v2 */
static void test_measured_rows_v2(void)
{
	check_rows(check_row_v2);
}

static void check_row_v1(const struct row *r)
{
	void *fn = NULL;
	CUresult rc = cuGetProcAddress(r->name, &fn, r->version, r->flags);

	if ((int)rc != r->rc || !is_row_symbol(r, fn))
		differs(r, "we (v1): rc %d %p", (int)rc, fn);
}

/* the 4-argument ABI gives the same rc and pointer for every row */
static void test_measured_rows_v1(void)
{
	check_rows(check_row_v1);
}

static void check_row_between(const struct row *r)
{
	void *fn = NULL;
	CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)UNTOUCHED;
	struct row mid = *r;
	CUresult rc;

	if (r->version + 5 > CU_DRIVER_VERSION)
		return;
	/* measured versions are multiples of 10: version + 5 was not asked */
	CHECK_EQ(r->version % 10, 0);
	mid.version = r->version + 5;
	rc = cuGetProcAddress_v2(r->name, &fn, mid.version, r->flags, &st);
	if ((int)rc != r->rc || (int)st != r->status || !is_row_symbol(&mid, fn))
		differs(r, "we at %d: rc %d status %d %p", mid.version, (int)rc, (int)st, fn);
}

/* a version between two measured ones answers as the lower one (the
 * measured versions are those where some entry point changed its ABI) */
static void test_between_measured_versions(void)
{
	check_rows(check_row_between);
}

/* a NULL name or pointer: CUDA_ERROR_INVALID_VALUE, nothing found; the
 * status is optional */
static void test_null_arguments(void)
{
	void *fn = &fn;
	CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)UNTOUCHED;

	CHECK_RC(cuGetProcAddress_v2(NULL, &fn, CU_DRIVER_VERSION, 0, &st), CUDA_ERROR_INVALID_VALUE);
	CHECK(fn == NULL);
	CHECK_EQ((int)st, UNTOUCHED);
	CHECK_RC(cuGetProcAddress_v2("cuMemAlloc", NULL, CU_DRIVER_VERSION, 0, &st), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ((int)st, UNTOUCHED);
	fn = &fn;
	CHECK_RC(cuGetProcAddress(NULL, &fn, CU_DRIVER_VERSION, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK(fn == NULL);
	CHECK_RC(cuGetProcAddress("cuMemAlloc", NULL, CU_DRIVER_VERSION, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuGetProcAddress_v2("cuMemAlloc", &fn, CU_DRIVER_VERSION, 0, NULL), CUDA_SUCCESS);
	CHECK(fn && fn == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
}

/* above our driver version (measured: 13010 for cuMemAlloc), any name:
 * CUDA_ERROR_INVALID_VALUE, NULL, the status left alone; at it, answers */
static void test_version_above_driver(void)
{
	static const int above[] = { CU_DRIVER_VERSION + 1, CU_DRIVER_VERSION + 10, INT_MAX };
	static const char *const names[] = { "cuMemAlloc", "cuGetProcAddress", "cuNoSuchFunction", "" };
	void *fn = NULL;
	CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)UNTOUCHED;

	for (unsigned i = 0; i < CHECK_COUNT(above); i++) {
		for (unsigned j = 0; j < CHECK_COUNT(names); j++) {
			fn = &fn;
			st = (CUdriverProcAddressQueryResult)UNTOUCHED;
			CHECK_RC(cuGetProcAddress_v2(names[j], &fn, above[i], 0, &st), CUDA_ERROR_INVALID_VALUE);
			CHECK(fn == NULL);
			CHECK_EQ((int)st, UNTOUCHED);
			fn = &fn;
			CHECK_RC(cuGetProcAddress(names[j], &fn, above[i], 0), CUDA_ERROR_INVALID_VALUE);
			CHECK(fn == NULL);
		}
	}
	CHECK_RC(cuGetProcAddress_v2("cuMemAlloc", &fn, CU_DRIVER_VERSION, 0, &st), CUDA_SUCCESS);
	CHECK_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
	CHECK(fn && fn == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
}

/* flags other than 0, 1, 2 (never measured): CUDA_ERROR_INVALID_VALUE */
static void test_unmeasured_flags(void)
{
	static const cuuint64_t flags[] = { 3, 4, 8, 1ull << 32, ~0ull };

	for (unsigned i = 0; i < CHECK_COUNT(flags); i++) {
		void *fn = &fn;
		CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)UNTOUCHED;

		CHECK_RC(cuGetProcAddress_v2("cuMemcpyHtoD", &fn, CU_DRIVER_VERSION, flags[i], &st),
			 CUDA_ERROR_INVALID_VALUE);
		CHECK(fn == NULL);
		CHECK_EQ((int)st, UNTOUCHED);
	}
}

/* "cuGetProcAddress" itself: our 4-argument ABI below 12000, _v2 from 12000 */
static void test_own_entry_points(void)
{
	void *fn = NULL;
	CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)UNTOUCHED;

	CHECK_RC(cuGetProcAddress_v2("cuGetProcAddress", &fn, 11080, 0, &st), CUDA_SUCCESS);
	CHECK(fn == (void *)cuGetProcAddress);
	CHECK_RC(cuGetProcAddress_v2("cuGetProcAddress", &fn, 12000, 0, &st), CUDA_SUCCESS);
	CHECK(fn == (void *)cuGetProcAddress_v2);
	CHECK_RC(cuGetProcAddress("cuGetProcAddress", &fn, CU_DRIVER_VERSION, 2), CUDA_SUCCESS);
	CHECK(fn == (void *)cuGetProcAddress_v2);
}

/* what mearas does not implement is handed out as a stub: it returns
 * CUDA_ERROR_NOT_SUPPORTED every time and names itself in one warning */
static void test_unsupported_stub_warns_once(void)
{
	const char *want = "cuArrayCreate_v2 is not supported by mearas yet: returning CUDA_ERROR_NOT_SUPPORTED";
	const char *lvl = getenv("MEARAS_LOG");
	char out[1024] = "";
	int p[2], rc1, rc2;
	ssize_t n;
	void *fn = NULL;

	if (lvl && (!strcmp(lvl, "error") || !strcmp(lvl, "quiet")))
		CHECK_SKIP("MEARAS_LOG=%s hides warnings", lvl);
	REQUIRE_RC(cuGetProcAddress("cuArrayCreate", &fn, CU_DRIVER_VERSION, 0), CUDA_SUCCESS);
	REQUIRE(fn && fn == dlsym(RTLD_DEFAULT, "cuArrayCreate_v2"));
	REQUIRE(pipe(p) == 0);
	mearas_log_set_fd(p[1]);
	/* the stub ignores its arguments: called without any */
	rc1 = ((int (*)(void))fn)();
	rc2 = ((int (*)(void))fn)();
	mearas_log_set_fd(STDERR_FILENO);
	close(p[1]);
	n = read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = 0;
	CHECK_RC(rc1, CUDA_ERROR_NOT_SUPPORTED);
	CHECK_RC(rc2, CUDA_ERROR_NOT_SUPPORTED);
	CHECK_MSG(strstr(out, want) && !strstr(strstr(out, want) + 1, want), "log: '%s'", out);
	CHECK_MSG(strstr(out, "warning"), "log: '%s'", out);
}

static const struct check_case cases[] = {
	{ "measured_rows_v2", test_measured_rows_v2 },
	{ "measured_rows_v1", test_measured_rows_v1 },
	{ "between_measured_versions", test_between_measured_versions },
	{ "null_arguments", test_null_arguments },
	{ "version_above_driver", test_version_above_driver },
	{ "unmeasured_flags", test_unmeasured_flags },
	{ "own_entry_points", test_own_entry_points },
	{ "unsupported_stub_warns_once", test_unsupported_stub_warns_once },
};

CHECK_MAIN(cases)
