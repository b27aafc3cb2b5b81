// SPDX-License-Identifier: MIT
/* exec_record(): LINK records (exec_link.c) on the sim's linker model. A
 * hostile client controls the whole layout; every malformed one is refused
 * before the device sees it:
 *   links_ptx            one PTX input: status 0, the image at `out` (a fat binary)
 *   room_asked_again     out_cap too small: the size comes back, nothing written
 *   malformed_refused    short header, magic, counts, options, types, sizes,
 *                        trailing bytes, spans outside the data area
 *   linker_error_logged  an unresolved function: status 0, link_error and its log
 *   many_externs_in_time 55000 extern declarations the input's last function
 *                        resolves: linked in a moment, not a scan of the whole
 *                        input per declaration
 *   inputs_end_in_nul    PTX whose size holds no NUL, its next input's
 *                        header right after it: the device still finds a NUL
 *                        right after each input (a GPU's linker reads PTX to
 *                        its NUL, whatever size it is given)
 * (`test_exec_link NAME` runs one) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "check.h"
#include "fixture_cases.h"
#include "mearas/clock.h"
#include "mearas/fatbin.h"
#include "mearas/link.h"

#define IN_OFF (1u << 20)
#define OUT_OFF (2u << 20)

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			  ".visible .entry k_linked(.param .u32 n)\n{\n\tret;\n}\n";
static const char ptx_extern[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				 ".extern .func nowhere(.param .b32 x);\n.visible .entry k_calls()\n{\n\tret;\n}\n";

/* one input laid out at the data area's IN_OFF; its length */
static uint64_t lay_out(const char *text, size_t size)
{
	struct mearas_link_header h = { .magic = MEARAS_LINK_MAGIC, .count = 1, .nopts = 1, .opt = { 7 },
					.val = { 3 } };
	struct mearas_link_input in = { .type = CU_JIT_INPUT_PTX, .size = size };
	uint8_t *p = fx.w->data + IN_OFF;

	memset(p, 0, sizeof(h) + sizeof(in) + mearas_link_pad8(size));
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), &in, sizeof(in));
	memcpy(p + sizeof(h) + sizeof(in), text, size);
	return sizeof(h) + sizeof(in) + mearas_link_pad8(size);
}

static int link(uint64_t in, uint64_t len, uint64_t out, uint64_t cap, uint64_t val[2])
{
	struct mearas_sqe e = sqe_of(MEARAS_OP_LINK);

	e.args.a[0] = in;
	e.args.a[1] = len;
	e.args.a[2] = out;
	e.args.a[3] = cap;
	return fixture_run(&fx, 0, &e, val);
}

static void test_links_ptx(void)
{
	uint64_t len = lay_out(ptx, sizeof(ptx)), val[2];
	uint32_t magic;

	CHECK_EQ(link(IN_OFF, len, OUT_OFF, 1 << 20, val), 0);
	CHECK_EQ(val[1], 0);
	CHECK(val[0] > sizeof(ptx));
	memcpy(&magic, fx.w->data + OUT_OFF, 4);
	CHECK_EQ(magic, MEARAS_FATBIN_MAGIC);
	CHECK(memmem(fx.w->data + OUT_OFF, val[0], "k_linked", 8) != NULL);
}

static void test_room_asked_again(void)
{
	uint64_t len = lay_out(ptx, sizeof(ptx)), val[2];

	memset(fx.w->data + OUT_OFF, 0x5a, 64);
	CHECK_EQ(link(IN_OFF, len, OUT_OFF, 16, val), 0);
	CHECK(val[0] > 16);
	CHECK_EQ(val[1], 0);
	CHECK_EQ(fx.w->data[OUT_OFF], 0x5a);
}

/* the layout with `at` (an offset into it) overwritten by `bytes`, refused */
static void refused_with(uint64_t len, size_t at, const void *bytes, size_t n, const char *what)
{
	uint64_t val[2];

	lay_out(ptx, sizeof(ptx));
	memcpy(fx.w->data + IN_OFF + at, bytes, n);
	CHECK_MSG(link(IN_OFF, len, OUT_OFF, 1 << 20, val) == cudaErrorInvalidValue, "%s: taken", what);
}

static void test_malformed_refused(void)
{
	uint64_t len = lay_out(ptx, sizeof(ptx)), val[2], huge = 1ull << 40;
	uint32_t zero = 0, big = MEARAS_LINK_MAX_INPUTS + 1, bad_opt = 3, bad_type = 5, many_opts = 17, two = 2;
	const size_t hs = sizeof(struct mearas_link_header);

	CHECK_EQ(link(IN_OFF, 8, OUT_OFF, 1 << 20, val), cudaErrorInvalidValue);            /* short */
	refused_with(len, 0, &zero, 4, "magic");
	refused_with(len, 4, &zero, 4, "no inputs");
	refused_with(len, 4, &big, 4, "too many inputs");
	refused_with(len, 4, &two, 4, "an input header past the end");
	refused_with(len, 8, &many_opts, 4, "too many options");
	refused_with(len, 12, &two, 4, "a reserved word set");
	refused_with(len, 16, &bad_opt, 4, "a log buffer option (a pointer)");
	refused_with(len, hs, &bad_type, 4, "NVVM input");
	refused_with(len, hs + 8, &huge, 8, "an input's size past the end");
	refused_with(len, hs + 8, &zero, 4, "an empty input");
	refused_with(len + 8, 0, "", 0, "bytes after the last input");
	lay_out(ptx, sizeof(ptx));
	CHECK_EQ(link(FIXTURE_DATA_SIZE - 8, len, OUT_OFF, 1 << 20, val), cudaErrorInvalidValue);
	CHECK_EQ(link(IN_OFF, len, FIXTURE_DATA_SIZE - 8, 1 << 20, val), cudaErrorInvalidValue);
	CHECK_EQ(link(IN_OFF, len, OUT_OFF, 0, val), cudaErrorInvalidValue);
	CHECK_EQ(link(IN_OFF, len, OUT_OFF, 1 << 20, val), 0);                              /* still served */
}

static void test_linker_error_logged(void)
{
	uint64_t len = lay_out(ptx_extern, sizeof(ptx_extern)), val[2];

	CHECK_EQ(link(IN_OFF, len, OUT_OFF, 1 << 20, val), 0);
	CHECK_EQ(val[1], CUDA_ERROR_INVALID_PTX);
	CHECK(val[0] > 0 && memmem(fx.w->data + OUT_OFF, val[0], "nowhere", 7) != NULL);
}

/* Every extern declared is defined, last: the sim's linker model used to
 * search the whole input for each declaration's definition (quadratic: a
 * client's LINK record held its worker's poller for minutes). */
static void test_many_externs_in_time(void)
{
	static const char decl[] = ".extern .func f;\n", def[] = ".visible .func f()\n{\n\tret;\n}\n";
	const unsigned n = 55000;
	size_t size = n * (sizeof(decl) - 1) + sizeof(def);
	char *text = malloc(size);
	uint64_t len, val[2], t0, ms;

	REQUIRE(text);
	for (unsigned i = 0; i < n; i++)
		memcpy(text + i * (sizeof(decl) - 1), decl, sizeof(decl) - 1);
	memcpy(text + n * (sizeof(decl) - 1), def, sizeof(def));
	len = lay_out(text, size);
	free(text);
	REQUIRE(IN_OFF + len <= OUT_OFF);
	t0 = mearas_mono_ns();
	CHECK_EQ(link(IN_OFF, len, OUT_OFF, 4u << 20, val), 0);
	ms = (mearas_mono_ns() - t0) / 1000000;
	printf("  %u declarations of %zu bytes linked in %llu ms\n", n, size, (unsigned long long)ms);
	CHECK_EQ(val[1], 0);
	CHECK(ms < 2000);
}

/* the sim's linker, behind a spy that notes the byte after each input */
static struct mdev_ops spy_ops;
static int bytes_after[2];

static int spy_link(struct mdev *d, const struct mdev_link_input *in, unsigned n, const uint32_t *opt,
		    const uint32_t *val, unsigned nopt, void *out, uint64_t cap, uint64_t *size, int *link_error)
{
	for (unsigned i = 0; i < n && i < 2; i++)
		bytes_after[i] = ((const uint8_t *)in[i].data)[in[i].size];
	return mdev_sim_ops.link(d, in, n, opt, val, nopt, out, cap, size, link_error);
}

static void test_inputs_end_in_nul(void)
{
	struct mearas_link_header h = { .magic = MEARAS_LINK_MAGIC, .count = 2 };
	struct mearas_link_input a = { .type = CU_JIT_INPUT_PTX, .size = 64 };
	struct mearas_link_input b = { .type = CU_JIT_INPUT_PTX, .size = sizeof(ptx) - 1 };
	uint8_t *p = fx.w->data + IN_OFF;
	uint64_t len = 0, val[2];
	char text[64];

	/* a PTX comment line of exactly 64 bytes, no NUL in it */
	memset(text, ' ', sizeof(text));
	memcpy(text, "//", 2);
	text[63] = '\n';
	memcpy(p, &h, sizeof(h));
	len += sizeof(h);
	memcpy(p + len, &a, sizeof(a));
	len += sizeof(a);
	memcpy(p + len, text, sizeof(text));
	len += sizeof(text);
	memcpy(p + len, &b, sizeof(b)); /* right after the first input: no padding, no NUL */
	len += sizeof(b);
	memset(p + len, 0x7a, mearas_link_pad8(b.size)); /* padding that is not zeros */
	memcpy(p + len, ptx, b.size);
	len += mearas_link_pad8(b.size);
	const struct mdev_ops *was = fx.w->vgpus[0].ops;

	spy_ops = *was;
	spy_ops.link = spy_link;
	fx.w->vgpus[0].ops = &spy_ops;
	bytes_after[0] = bytes_after[1] = -1;
	CHECK_EQ(link(IN_OFF, len, OUT_OFF, 1 << 20, val), 0);
	fx.w->vgpus[0].ops = was;
	CHECK_EQ(bytes_after[0], 0);
	CHECK_EQ(bytes_after[1], 0);
	CHECK_EQ(val[1], 0);
}

static const struct check_case cases[] = {
	{ "links_ptx", test_links_ptx },
	{ "room_asked_again", test_room_asked_again },
	{ "malformed_refused", test_malformed_refused },
	{ "linker_error_logged", test_linker_error_logged },
	{ "many_externs_in_time", test_many_externs_in_time },
	{ "inputs_end_in_nul", test_inputs_end_in_nul },
};
FIXTURE_MAIN(cases, 1, 0, NULL)
