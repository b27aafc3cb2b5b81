/* SPDX-License-Identifier: MIT */
/* Unit tests on hand-built fat binaries: PTX layout rules, compression, merging, errors. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "check.h"
#include "mearas/fatbin.h"

enum comp { RAW, LZ4, ZSTD };

struct ent {
	uint16_t kind;		/* 1 PTX, 2 ELF, other: skipped by the parser */
	const char *text;	/* payload (text, without its NUL) */
	enum comp comp;
	int64_t usize_delta;	/* corrupts the declared decompressed size */
};

static void put16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v); put16(p + 2, v >> 16); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, v >> 32); }

/* Lays out one fat binary at out; returns its size. */
static size_t build(uint8_t *out, size_t cap, const struct ent *e, size_t n)
{
	size_t off = 16;
	memset(out, 0, cap);
	for (size_t i = 0; i < n; i++) {
		uint8_t *h = out + off;
		size_t len = strlen(e[i].text), plen = len;
		uint8_t *payload = h + 0x40;
		uint64_t flags = 0x11;
		if (e[i].comp == LZ4) {
			int r = LZ4_compress_default(e[i].text, (char *)payload, (int)len,
						     (int)(cap - off - 0x40));
			if (r <= 0)
				abort();
			plen = (size_t)r;
			flags |= 0x2000;
		} else if (e[i].comp == ZSTD) {
			size_t r = ZSTD_compress(payload, cap - off - 0x40, e[i].text, len, 3);
			if (ZSTD_isError(r))
				abort();
			plen = r;
			flags |= 0x8000;
		} else {
			memcpy(payload, e[i].text, len);
		}
		size_t padded = (plen + 8) & ~(size_t)7;	/* room for a NUL too */
		put16(h, e[i].kind);
		put16(h + 2, 0x0101);
		put32(h + 4, 0x40);
		put64(h + 8, padded);
		put32(h + 0x10, e[i].comp == RAW ? 0 : (uint32_t)plen);
		put32(h + 0x1c, 90);
		put64(h + 0x28, flags);
		put64(h + 0x38, e[i].comp == RAW ? 0 : len + e[i].usize_delta);
		off += 0x40 + padded;
	}
	put32(out, MEARAS_FATBIN_MAGIC);
	put16(out + 4, 1);
	put16(out + 6, 16);
	put64(out + 8, off - 16);
	return off;
}

static const char ptx_a[] =
	".version 9.0\n.target sm_90\n.address_size 64\n"
	"// .entry commented_out ( .param .u64 x )\n"
	".visible .entry k_a(\n"
	"\t.param .u8 k_a_param_0,\n"
	"\t.param .align 4 .b8 k_a_param_1[12], /* a struct, .entry fake( */\n"
	"\t.param .u64 .ptr .global .align 16 k_a_param_2,\n"
	"\t.param .f16 k_a_param_3,\n"
	"\t.param .align 16 .b8 k_a_param_4[32],\n"
	"\t.param .u32 k_a_param_5[3]\n"
	")\n.maxntid 128, 1, 1\n{\n\tret;\n}\n"
	".visible .entry k_b()\n{\n\tret;\n}\n"
	".weak .entry k_c(.param .b128 x, .param .s8 y) { ret; }\n"
	".func f_notakernel(.param .b64 p) { ret; }\n";

static const struct mearas_kparam want_a[] = { { 0, 1 },   { 4, 12 }, { 16, 8 },
					       { 24, 2 },  { 32, 32 }, { 64, 12 } };
static const struct mearas_kparam want_c[] = { { 0, 16 }, { 16, 1 } };

static int same(const struct mearas_kernel_info *k, const struct mearas_kparam *want, uint32_t n,
		uint32_t bytes)
{
	return k && k->nparams == n && k->param_bytes == bytes &&
	       (n == 0 || memcmp(k->params, want, n * sizeof(*want)) == 0);
}

static void check_abc(const struct mearas_fatbin_index *idx, const char *what)
{
	CHECK_MSG(idx != NULL, "%s: index", what);
	if (!idx)
		return;
	CHECK_MSG(mearas_fatbin_kernel_count(idx) == 3, "%s: %zu kernels", what,
	      mearas_fatbin_kernel_count(idx));
	CHECK_MSG(same(mearas_fatbin_find_kernel(idx, "k_a"), want_a, 6, 76), "%s: k_a layout", what);
	CHECK_MSG(same(mearas_fatbin_find_kernel(idx, "k_b"), NULL, 0, 0), "%s: k_b layout", what);
	CHECK_MSG(same(mearas_fatbin_find_kernel(idx, "k_c"), want_c, 2, 17), "%s: k_c layout", what);
	CHECK_MSG(mearas_fatbin_find_kernel(idx, "f_notakernel") == NULL, "%s: .func indexed", what);
	CHECK_MSG(mearas_fatbin_find_kernel(idx, "commented_out") == NULL, "%s: comment indexed",
	      what);
	const struct mearas_kernel_info *k0 = mearas_fatbin_kernel_at(idx, 0);
	CHECK_MSG(k0 && strcmp(k0->name, "k_a") == 0, "%s: kernel_at(0)", what);
	CHECK_MSG(mearas_fatbin_kernel_at(idx, 3) == NULL, "%s: kernel_at past the end", what);
}

static uint8_t buf[1 << 16], buf2[1 << 16];
static char err[256];

static struct mearas_fatbin_index *parse(const struct ent *e, size_t n)
{
	size_t len = build(buf, sizeof(buf), e, n);
	return mearas_fatbin_index_new(buf, len, err, sizeof(err));
}

/* The index must be refused, with a reason mentioning needle. */
static void expect_error(const struct ent *e, size_t n, const char *needle, const char *what)
{
	struct mearas_fatbin_index *idx = parse(e, n);
	CHECK_MSG(idx == NULL, "%s: accepted", what);
	CHECK_MSG(strstr(err, needle) != NULL, "%s: error '%s' lacks '%s'", what, err, needle);
	mearas_fatbin_index_free(idx);
}

static void test_locate(void)
{
	struct ent e = { 1, ptx_a, RAW, 0 };
	size_t len = build(buf, sizeof(buf), &e, 1);
	struct {
		int magic, version;
		const void *data;
		void *extra;
	} wrap = { (int)MEARAS_FATBINC_MAGIC, 1, buf, NULL };
	const void *fb = NULL;
	size_t size = 0;
	CHECK_MSG(mearas_fatbin_locate(&wrap, &fb, &size) == 0 && fb == buf && size == len,
	      "locate through a version 1 wrapper");
	wrap.version = 2;
	CHECK_MSG(mearas_fatbin_locate(&wrap, &fb, &size) == 0 && fb == buf && size == len,
	      "locate through a version 2 wrapper");
	wrap.version = 7;
	CHECK_MSG(mearas_fatbin_locate(&wrap, &fb, &size) == -EINVAL, "unknown wrapper version");
	wrap.version = 1;
	wrap.data = NULL;
	CHECK_MSG(mearas_fatbin_locate(&wrap, &fb, &size) == -EINVAL, "wrapper without data");
	CHECK_MSG(mearas_fatbin_locate(buf, &fb, &size) == 0 && fb == buf && size == len,
	      "locate a bare fat binary");
	CHECK_MSG(mearas_fatbin_locate(NULL, &fb, &size) == -EINVAL, "locate(NULL)");
	uint8_t junk[16] = { 1, 2, 3, 4 };
	CHECK_MSG(mearas_fatbin_locate(junk, &fb, &size) == -EINVAL, "locate junk");
	memcpy(buf2, buf, 16);
	put16(buf2 + 6, 8);
	CHECK_MSG(mearas_fatbin_locate(buf2, &fb, &size) == -EINVAL, "header size below 16");
	put16(buf2 + 6, 16);
	put64(buf2 + 8, UINT64_MAX - 4);
	CHECK_MSG(mearas_fatbin_locate(buf2, &fb, &size) == -EOVERFLOW, "absurd size");
}

static const struct ent raw = { 1, ptx_a, RAW, 0 }, lz = { 1, ptx_a, LZ4, 0 }, zs = { 1, ptx_a, ZSTD, 0 };

static void parse_and_check_abc(const struct ent *e, size_t n, const char *what)
{
	struct mearas_fatbin_index *idx = parse(e, n);

	check_abc(idx, what);
	mearas_fatbin_index_free(idx);
}

static void test_layouts_raw_ptx(void)
{
	parse_and_check_abc(&raw, 1, "raw PTX");
}

static void test_layouts_lz4_ptx(void)
{
	parse_and_check_abc(&lz, 1, "LZ4 PTX");
}

static void test_layouts_zstd_ptx(void)
{
	parse_and_check_abc(&zs, 1, "zstd PTX");
}

static void test_layouts_several_entries(void)
{
	struct ent three[] = { raw, lz, zs, { 8, "not code, skipped", RAW, 0 } };

	parse_and_check_abc(three, 4, "same kernels in several entries, plus an unknown kind");
}

/* Two fat binaries end to end with padding, as in an executable's section. */
static void test_concatenated(void)
{
	static const char ptx_d[] = ".version 9.0\n.entry k_d(.param .u16 a, .param .f64 b) {}\n";
	struct ent d = { 1, ptx_d, ZSTD, 0 };
	struct mearas_fatbin_index *idx;
	size_t l1 = build(buf, sizeof(buf), &raw, 1);
	size_t l2 = build(buf2, sizeof(buf2), &d, 1);

	memset(buf + l1, 0, 8);
	memcpy(buf + l1 + 8, buf2, l2);
	idx = mearas_fatbin_index_new(buf, l1 + 8 + l2, err, sizeof(err));
	CHECK_MSG(idx && mearas_fatbin_kernel_count(idx) == 4, "concatenated fat binaries: %s",
	      idx ? "wrong count" : err);
	static const struct mearas_kparam want_d[] = { { 0, 2 }, { 8, 8 } };
	CHECK_MSG(idx && same(mearas_fatbin_find_kernel(idx, "k_d"), want_d, 2, 16),
	      "second fat binary's kernel");
	CHECK_MSG(mearas_fatbin_find_kernel(idx, "nope") == NULL, "unknown name");
	mearas_fatbin_index_free(idx);
}

static void test_null_index(void)
{
	CHECK_MSG(mearas_fatbin_find_kernel(NULL, "k_a") == NULL && mearas_fatbin_kernel_count(NULL) == 0 &&
		      mearas_fatbin_kernel_at(NULL, 0) == NULL,
	      "NULL index");
	mearas_fatbin_index_free(NULL);
}

static void test_conflicting_layouts(void)
{
	struct ent conflict[] = {
		{ 1, ".version 9.0\n.entry k_x(.param .u32 a) {}\n", RAW, 0 },
		{ 1, ".version 9.0\n.entry k_x(.param .u64 a) {}\n", ZSTD, 0 },
	};
	expect_error(conflict, 2, "k_x", "conflicting layouts of one kernel");
}

static void test_decompressed_size_mismatch(void)
{
	struct ent e;

	e = (struct ent){ 1, ptx_a, LZ4, 5 };
	expect_error(&e, 1, "LZ4", "LZ4 decompressed size mismatch");
	e = (struct ent){ 1, ptx_a, ZSTD, -3 };
	expect_error(&e, 1, "zstd", "zstd decompressed size mismatch");
}

static void test_ptx_errors(void)
{
	struct ent e;

	e = (struct ent){ 1, ".entry k(.param .u32 a) {}\n", RAW, 0 };
	expect_error(&e, 1, ".version", "PTX without .version");
	e = (struct ent){ 1, ".version 9.0\n.entry k(.param .u32 a, \n", RAW, 0 };
	expect_error(&e, 1, "k", "unterminated parameter list");
	e = (struct ent){ 1, ".version 9.0\n.entry k(.param .align 3 .b8 a[4]) {}\n", RAW, 0 };
	expect_error(&e, 1, "align", "alignment not a power of two");
	e = (struct ent){ 1, ".version 9.0\n.entry k(.param a) {}\n", RAW, 0 };
	expect_error(&e, 1, "without a type", "parameter without a type");
	e = (struct ent){ 1, ".version 9.0\n.entry k(.param .b8 a[99999999]) {}\n", RAW, 0 };
	expect_error(&e, 1, "array", "huge array");
}

static void test_elf_entry_without_image(void)
{
	struct ent e = { 2, "this is not an ELF image", RAW, 0 };

	expect_error(&e, 1, "ELF", "ELF entry without an ELF image");
}

static void test_bad_compressed_payload(void)
{
	struct ent e = { 1, ptx_a, RAW, 0 };
	size_t len = build(buf, sizeof(buf), &e, 1);

	/* Zstd flag on a payload that is not zstd. */
	put64(buf + 16 + 0x28, 0x8011);
	put32(buf + 16 + 0x10, 64);
	put64(buf + 16 + 0x38, 100);
	CHECK_MSG(mearas_fatbin_index_new(buf, len, err, sizeof(err)) == NULL && strstr(err, "zstd"),
	      "garbage zstd payload: %s", err);
	/* Compressed size larger than the payload. */
	put32(buf + 16 + 0x10, 1u << 30);
	CHECK_MSG(mearas_fatbin_index_new(buf, len, err, sizeof(err)) == NULL &&
		      strstr(err, "compressed size"),
	      "compressed size past the payload: %s", err);
}

static void test_bad_input(void)
{
	struct ent e = { 1, ptx_a, RAW, 0 };
	size_t len = build(buf, sizeof(buf), &e, 1);

	CHECK_MSG(mearas_fatbin_index_new(buf, len - 1, err, sizeof(err)) == NULL, "one byte short");
	CHECK_MSG(mearas_fatbin_index_new(buf, 0, err, sizeof(err)) == NULL && strstr(err, "empty"),
	      "empty input: %s", err);
	CHECK_MSG(mearas_fatbin_index_new(NULL, 10, err, sizeof(err)) == NULL, "NULL input");
	CHECK_MSG(mearas_fatbin_index_new(buf, 7, NULL, 0) == NULL, "no error buffer");
	buf[0] ^= 0xff;
	CHECK_MSG(mearas_fatbin_index_new(buf, len, err, sizeof(err)) == NULL && strstr(err, "magic"),
	      "bad magic: %s", err);
	char tiny[4];
	CHECK_MSG(mearas_fatbin_index_new(buf, len, tiny, sizeof(tiny)) == NULL && tiny[3] == '\0',
	      "error text truncated to its buffer");
}

/* ---- mearas_image_may_print ---- */

static const char ptx_prints[] =
	".version 9.0\n.target sm_90\n.address_size 64\n"
	".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n"
	".visible .entry k_p() { ret; }\n";

static const char ptx_asserts[] =
	".version 9.0\n.target sm_90\n.address_size 64\n"
	".extern .func __assertfail(.param .b64 m, .param .b64 f, .param .b32 l, .param .b64 fn, "
	".param .b64 s);\n.visible .entry k_q() { ret; }\n";

static int may_print(const struct ent *e, size_t n)
{
	return mearas_image_may_print(buf, build(buf, sizeof(buf), e, n));
}

static void test_may_print_quiet_code(void)
{
	struct ent three[] = { raw, lz, zs };

	CHECK_MSG(may_print(three, 3) == 0, "kernels naming neither vprintf nor __assertfail");
}

static void test_may_print_printf_compressed(void)
{
	struct ent lz4[] = { raw, { 1, ptx_prints, LZ4, 0 } }, zstd[] = { zs, { 1, ptx_prints, ZSTD, 0 } };

	CHECK_MSG(may_print(lz4, 2) == 1, "vprintf in an LZ4 entry after a quiet one");
	CHECK_MSG(may_print(zstd, 2) == 1, "vprintf in a zstd entry after a quiet one");
}

static void test_may_print_assert(void)
{
	struct ent e = { 1, ptx_asserts, RAW, 0 };

	CHECK_MSG(may_print(&e, 1) == 1, "__assertfail");
}

static void test_may_print_bare_ptx(void)
{
	CHECK_MSG(mearas_image_may_print(ptx_prints, sizeof(ptx_prints)) == 1, "PTX text naming vprintf");
	CHECK_MSG(mearas_image_may_print(ptx_a, sizeof(ptx_a)) == 0, "quiet PTX text");
}

static void test_may_print_unreadable(void)
{
	struct ent bad = { 1, ptx_a, ZSTD, 5 };

	CHECK_MSG(may_print(&bad, 1) == 1, "an entry that does not decompress is taken to print");
	CHECK_MSG(mearas_image_may_print(NULL, 64) == 1, "no image");
}

/* ---- mearas_module_footprint ---- */

static uint64_t footprint_of(const void *image, size_t size, int *rc)
{
	uint64_t bytes = 0;

	*rc = mearas_module_footprint(image, size, &bytes, err, sizeof(err));
	return bytes;
}

/* every kind of declaration PTX gives a variable: aligned, vectors, arrays of
 * several dimensions (decimal and hex), lists, initialised and sized by their
 * initialiser, managed, constant, opaque handles */
static const char ptx_vars[] =
	".version 9.0\n.target sm_90\n.address_size 64\n"
	".global .align 4 .b8 big[4096];\n"                   /* 4096 */
	".visible .global .u32 a, b[4];\n"                    /* 4 + 16 */
	".global .v4 .f32 v[2];\n"                            /* 32 */
	".global .u8 grid[3][5];\n"                           /* 15 */
	".global .b16 hex[0x10] = {1, 2};\n"                  /* 32 */
	".const .f32 c[] = {1.0, -2.0, 3.0};\n"               /* 12 */
	".global .s32 rows[][2] = {{1, 2}, {3, 4}, {5, 6}};\n" /* 24 */
	".global .attribute(.managed) .align 8 .u64 m;\n"     /* 8 */
	".global .attribute(.unified(0x12, 0x34)) .u32 u;\n" /* 4 */
	".global .texref t;\n";                               /* 8 */
#define PTX_VARS_BYTES (4096 + 20 + 32 + 15 + 32 + 12 + 24 + 8 + 4 + 8)

static void test_footprint_ptx_declarations(void)
{
	int rc;
	uint64_t n = footprint_of(ptx_vars, sizeof(ptx_vars), &rc);

	CHECK_MSG(rc == 0, "%s", err);
	CHECK_MSG(n == PTX_VARS_BYTES, "%llu bytes", (unsigned long long)n);
}

/* no storage of the module's own: declarations of other modules' variables,
 * the space a pointer parameter points into, shared and local memory */
static const char ptx_no_vars[] =
	".version 9.0\n.target sm_90\n.address_size 64\n"
	".extern .global .align 4 .b8 elsewhere[1048576];\n"
	".shared .align 4 .b8 tile[1024];\n"
	".visible .entry k(.param .u64 .ptr .global .align 8 p)\n"
	"{\n\t.local .align 8 .b8 stack[64];\n\tld.global.u32 %r1, [p];\n\tret;\n}\n";

static void test_footprint_ptx_not_variables(void)
{
	int rc;
	uint64_t n = footprint_of(ptx_no_vars, sizeof(ptx_no_vars), &rc);

	CHECK_MSG(rc == 0, "%s", err);
	CHECK_MSG(n == 0, "%llu bytes", (unsigned long long)n);
}

/* sizes past 64 bits stay at UINT64_MAX: a quota refuses them */
static void test_footprint_saturates(void)
{
	static const char huge[] = ".version 9.0\n.global .b64 h[18446744073709551615][4];\n.global .u8 x;\n";
	int rc;

	CHECK_MSG(footprint_of(huge, sizeof(huge), &rc) == UINT64_MAX && rc == 0, "rc %d", rc);
}

/* a fat binary holds its largest entry, compressed or not */
static void test_footprint_largest_entry(void)
{
	static const char small[] = ".version 9.0\n.global .u32 s[10];\n";
	const struct ent e[] = { { 1, small, RAW, 0 }, { 1, ptx_vars, ZSTD, 0 }, { 1, small, LZ4, 0 } };
	size_t n = build(buf, sizeof(buf), e, 3);
	int rc;

	CHECK_MSG(footprint_of(buf, n, &rc) == PTX_VARS_BYTES && rc == 0, "rc %d: %s", rc, err);
}

static void test_footprint_errors(void)
{
	static const char unterminated[] = ".version 9.0\n.global .u32 x";
	static const char bad_size[] = ".version 9.0\n.global .u32 x[abc];\n";
	static const char bad_init[] = ".version 9.0\n.global .u32 x[2] = {1, 2;\n";
	int rc;

	footprint_of(unterminated, sizeof(unterminated), &rc);
	CHECK_MSG(rc == -EINVAL && strstr(err, "after a variable"), "unterminated: %d %s", rc, err);
	footprint_of(bad_size, sizeof(bad_size), &rc);
	CHECK_MSG(rc == -EINVAL && strstr(err, "array size"), "bad size: %d %s", rc, err);
	footprint_of(bad_init, sizeof(bad_init), &rc);
	CHECK_MSG(rc == -EINVAL && strstr(err, "initializer"), "bad initializer: %d %s", rc, err);
	footprint_of(NULL, 64, &rc);
	CHECK_MSG(rc == -EINVAL, "no image: %d", rc);
}

static const struct check_case cases[] = {
	{ "locate", test_locate },
	{ "layouts_raw_ptx", test_layouts_raw_ptx },
	{ "layouts_lz4_ptx", test_layouts_lz4_ptx },
	{ "layouts_zstd_ptx", test_layouts_zstd_ptx },
	{ "layouts_several_entries", test_layouts_several_entries },
	{ "concatenated_fat_binaries", test_concatenated },
	{ "null_index", test_null_index },
	{ "conflicting_layouts", test_conflicting_layouts },
	{ "decompressed_size_mismatch", test_decompressed_size_mismatch },
	{ "ptx_errors", test_ptx_errors },
	{ "elf_entry_without_image", test_elf_entry_without_image },
	{ "bad_compressed_payload", test_bad_compressed_payload },
	{ "bad_input", test_bad_input },
	{ "may_print_quiet_code", test_may_print_quiet_code },
	{ "may_print_printf_compressed", test_may_print_printf_compressed },
	{ "may_print_assert", test_may_print_assert },
	{ "may_print_bare_ptx", test_may_print_bare_ptx },
	{ "may_print_unreadable", test_may_print_unreadable },
	{ "footprint_ptx_declarations", test_footprint_ptx_declarations },
	{ "footprint_ptx_not_variables", test_footprint_ptx_not_variables },
	{ "footprint_saturates", test_footprint_saturates },
	{ "footprint_largest_entry", test_footprint_largest_entry },
	{ "footprint_errors", test_footprint_errors },
};
CHECK_MAIN(cases)
