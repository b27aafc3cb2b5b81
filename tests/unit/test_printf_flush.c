// SPDX-License-Identifier: MIT
/* exec_record(): device printf output is flushed at a synchronization once
 * loaded code may print, and only then (the flush is a driver call per
 * synchronization: a third of a launch and synchronize on an H200). The
 * model's mearas_sim_printf(v) prints by name; what the daemon goes by is
 * whether the module's code names vprintf (or __assertfail), as nvcc's does.
 *   printing_module_flushed  a module declaring vprintf: its line is out
 *                            when CTX_SYNC completes
 *   quiet_module_not_flushed a module naming neither: CTX_SYNC makes no flush
 * (`test_printf_flush NAME` runs one) */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../security/ptx_fatbin.h"
#include "check.h"
#include "sqe_build.h"
#include "fixture_cases.h"

#define PRINTF_FN 700

static const char vprintf_decl[] =
	".extern .func (.param .b32 func_retval0) vprintf(.param .b64 fmt, .param .b64 args);\n";

/* loads mearas_sim_printf as module 70 (decls before it) and looks it up */
static void load_printf(const char *decls)
{
	size_t n = ptx_fatbin_with(fx.w->data + (1 << 20), 4u << 20, decls, "mearas_sim_printf", 1);
	struct mearas_sqe e = sqe_of(MEARAS_OP_FUNC_GET);

	REQUIRE(n > 0);
	REQUIRE(FIXTURE_OP(MEARAS_OP_MODULE_LOAD, 0, 70, 1 << 20, n) == 0);
	e.args.a[0] = 70;
	e.args.a[1] = PRINTF_FN;
	e.payload_len = (uint32_t)strlen("mearas_sim_printf") + 1;
	memcpy(e.inline_payload, "mearas_sim_printf", e.payload_len);
	REQUIRE(fixture_run(&fx, 0, &e, NULL) == 0);
}

/* launches mearas_sim_printf(v), synchronizes, and returns what reached
 * stdout meanwhile (in out, NUL-terminated) */
static void print_and_sync(unsigned v, char *out, size_t cap)
{
	char path[] = "/tmp/mearas-printf-XXXXXX";
	int fd = mkstemp(path), saved = dup(STDOUT_FILENO);
	struct mearas_sqe e = sqe_launch_u32(PRINTF_FN, 0, v);
	ssize_t got;

	REQUIRE(fd >= 0 && saved >= 0);
	unlink(path);
	fflush(stdout);
	REQUIRE(dup2(fd, STDOUT_FILENO) == STDOUT_FILENO);
	exec_record(&fx.w->vgpus[0], &e);
	CHECK_EQ(FIXTURE_OP(MEARAS_OP_CTX_SYNC, 0, 0), 0);
	REQUIRE(dup2(saved, STDOUT_FILENO) == STDOUT_FILENO);
	close(saved);
	got = pread(fd, out, cap - 1, 0);
	out[got > 0 ? got : 0] = '\0';
	close(fd);
}

static void test_printing_module_flushed(void)
{
	char out[256];

	load_printf(vprintf_decl);
	print_and_sync(7, out, sizeof(out));
	CHECK_MSG(strstr(out, "mearas-sim device printf: 7") != NULL, "stdout after CTX_SYNC: '%s'", out);
}

static void test_quiet_module_not_flushed(void)
{
	char out[256];

	load_printf("");
	print_and_sync(8, out, sizeof(out));
	CHECK_MSG(out[0] == '\0', "flushed for code that cannot print: '%s'", out);
}

static const struct check_case cases[] = {
	{ "printing_module_flushed", test_printing_module_flushed },
	{ "quiet_module_not_flushed", test_quiet_module_not_flushed },
};
FIXTURE_MAIN(cases, 1, 0, NULL)
