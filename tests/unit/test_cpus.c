// SPDX-License-Identifier: MIT
/* host-backend/core/cpus.c: CPU lists as taskset -c writes them, read into a
 * set and written back; what is refused, and why. */
#include <string.h>

#include "check.h"
#include "core/cpus.h"

static void roundtrip(const char *in, const char *want)
{
	cpu_set_t set;
	char why[128] = "", out[256];

	CHECK_MSG(cpus_parse(in, &set, why, sizeof(why)), "'%s': %s", in, why);
	cpus_format(&set, out, sizeof(out));
	CHECK_STR_EQ(out, want);
}

static void refused(const char *in, const char *reason)
{
	cpu_set_t set;
	char why[128] = "";

	CHECK_MSG(!cpus_parse(in, &set, why, sizeof(why)), "'%s' was taken", in);
	CHECK_MSG(strstr(why, reason) != NULL, "'%s': '%s' does not say '%s'", in, why, reason);
}

static void single_cpus_and_ranges(void)
{
	roundtrip("0", "0");
	roundtrip("0-3", "0-3");
	roundtrip("0-3,8,10-11", "0-3,8,10-11");
	roundtrip("5-5", "5");
}

static void overlaps_and_order_joined(void)
{
	roundtrip("8,0-3,2-4", "0-4,8");
	roundtrip("3,2,1,0", "0-3");
}

static void largest_cpu_taken(void)
{
	char in[16], want[16];

	snprintf(in, sizeof(in), "%d", CPU_SETSIZE - 1);
	snprintf(want, sizeof(want), "%d", CPU_SETSIZE - 1);
	roundtrip(in, want);
}

static void empty_is_refused(void)
{
	refused("", "no CPU named");
}

static void junk_is_refused(void)
{
	refused("a", "a CPU number expected");
	refused("0-", "a CPU number expected");
	refused("-1", "a CPU number expected");
	refused("0,", "a CPU number expected");
	refused("0;1", "unexpected ';'");
	refused("1 ", "unexpected ' '");
	refused("+1", "a CPU number expected");
}

static void backwards_range_is_refused(void)
{
	refused("3-1", "runs backwards");
}

static void past_the_set_is_refused(void)
{
	char in[16];

	snprintf(in, sizeof(in), "%d", CPU_SETSIZE);
	refused(in, "past the largest");
	refused("0-99999999999999999999", "past the largest");
}

static void short_output_is_cut(void)
{
	cpu_set_t set;
	char why[64], out[8];

	CHECK(cpus_parse("0,2,4,6,8,10,12", &set, why, sizeof(why)));
	cpus_format(&set, out, sizeof(out));
	CHECK(strlen(out) < sizeof(out));
	CHECK_MSG(strstr(out, "...") != NULL, "'%s'", out);
}

static const struct check_case cases[] = {
	{ "single_cpus_and_ranges", single_cpus_and_ranges },
	{ "overlaps_and_order_joined", overlaps_and_order_joined },
	{ "largest_cpu_taken", largest_cpu_taken },
	{ "empty_is_refused", empty_is_refused },
	{ "junk_is_refused", junk_is_refused },
	{ "backwards_range_is_refused", backwards_range_is_refused },
	{ "past_the_set_is_refused", past_the_set_is_refused },
	{ "short_output_is_cut", short_output_is_cut },
};
CHECK_MAIN(cases)
