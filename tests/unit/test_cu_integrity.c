// SPDX-License-Identifier: MIT
/* guest/libcuda/integrity.c: MD2 against RFC 1319's test suite, and the
 * integrity check's answer against what the real driver (580.159.04 on an
 * H100) answered for recorded inputs
 * (experiments/drvapi-probe/results/h100-580.159.04-integrity-vectors.json).
 * usage: test_cu_integrity [CASE...] */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "integrity.h"

static void hex(const uint8_t *b, char out[33])
{
	for (unsigned i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void check_md2(const char *msg, const char *want)
{
	uint8_t d[16];
	char got[33];

	cu_md2(msg, strlen(msg), d);
	hex(d, got);
	CHECK_MSG(!strcmp(got, want), "MD2(\"%s\") = %s, want %s", msg, got, want);
}

static void test_md2_rfc1319(void)
{
	check_md2("", "8350e5a3e24c153df2275c9f80692773");
	check_md2("a", "32ec01ec4a6dac72c0ab96fb34c0b5d1");
	check_md2("abc", "da853b0d3f88d99b30283a69e6ded6bb");
	check_md2("message digest", "ab4f496bfb2a530b219ff33031fe06b0");
	check_md2("abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b");
	check_md2("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		  "da33def2a42df13975352846c30338cd");
	check_md2("12345678901234567890123456789012345678901234567890123456789012345678901234567890",
		  "d5976f79d83d3a0dc9806c3c66f3efd8");
}

/* the recorded process: one H100, driver 13000 */
static const struct cu_integrity_device recorded_dev = {
	.uuid = { 0xe6, 0x22, 0xc4, 0x2d, 0xce, 0xe0, 0xce, 0xf4, 0xaf, 0x9e, 0xe8, 0x18, 0xce, 0x48, 0xac, 0x7a },
	.pci_domain = 0, .pci_bus = 0, .pci_device = 6,
};

static struct cu_integrity_input recorded(uint32_t version, uint64_t seconds)
{
	return (struct cu_integrity_input){
		.driver_version = 13000, .version = version, .pid = 2833,
		.thread = (uint32_t)0x7f06e2780740ull,
		.cudart_table = 0x7f06e224c680ull, .integrity_table = 0x7f06e224c660ull,
		.slot_fn = 0x7f06dcbab350ull, .unix_seconds = seconds,
		.ndevices = 1, .devices = &recorded_dev,
	};
}

static void check_answer(const struct cu_integrity_input *in, const char *want)
{
	uint8_t d[16];
	char got[33];

	cu_integrity_answer(in, d);
	hex(d, got);
	CHECK_MSG(!strcmp(got, want), "version %u time %llu: %s, the driver said %s", in->version,
		  (unsigned long long)in->unix_seconds, got, want);
}

static void test_fixed_answers(void)
{
	struct cu_integrity_input in = recorded(13000, 1764000000);

	check_answer(&in, "5c67cb031c184133e8d14c1faa83d38e");
	in = recorded(12080, 0);
	check_answer(&in, "5c67cb031c184133e8d14c1faa83d38e");
	in = recorded(13001, 1764086400);
	check_answer(&in, "5c67cb031c184118e8d14c1faa83d38e");
}

static void test_hashed_answers(void)
{
	static const struct { uint32_t version; uint64_t seconds; const char *want; } v[] = {
		{ 13002, 0, "89e27be2b90d0e82dbb30a621df9c622" },
		{ 13002, 1764000000, "7058587cd630e42d4717821669e9891f" },
		{ 13002, 1764086400, "64a3d53f7b468692e24a41bd3669a853" },
		{ 12082, 0, "b97a73d738451e2fb74a8205c0afcead" },
		{ 12082, 1764000000, "ac5314c57053da8b3b219e8b97e16a88" },
		{ 12082, 1764086400, "60f84d01a1c3a048e95b72449b750f51" },
	};

	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct cu_integrity_input in = recorded(v[i].version, v[i].seconds);

		check_answer(&in, v[i].want);
	}
}

/* every input is hashed: changing any one changes the answer */
static void test_every_input_counts(void)
{
	struct cu_integrity_input base = recorded(13002, 1764000000), in;
	struct cu_integrity_device dev = recorded_dev;
	uint8_t want[16], got[16];

	cu_integrity_answer(&base, want);
	for (unsigned field = 0; field < 10; field++) {
		in = base;
		dev = recorded_dev;
		in.devices = &dev;
		switch (field) {
		case 0: in.driver_version++; break;
		case 1: in.pid++; break;
		case 2: in.thread++; break;
		case 3: in.cudart_table += 8; break;
		case 4: in.integrity_table += 8; break;
		case 5: in.slot_fn += 16; break;
		case 6: dev.uuid[15] ^= 1; break;
		case 7: dev.pci_domain = 1; break;
		case 8: dev.pci_bus = 1; break;
		case 9: dev.pci_device = 7; break;
		}
		cu_integrity_answer(&in, got);
		CHECK_MSG(memcmp(got, want, 16), "input %u changed, the answer did not", field);
	}
	in = base;
	in.ndevices = 0;
	cu_integrity_answer(&in, got);
	CHECK_MSG(memcmp(got, want, 16), "without devices the answer stayed the same");
}

static const struct check_case cases[] = {
	{ "md2-rfc1319", test_md2_rfc1319 },
	{ "fixed-answers", test_fixed_answers },
	{ "hashed-answers", test_hashed_answers },
	{ "every-input-counts", test_every_input_counts },
};

CHECK_MAIN(cases)
