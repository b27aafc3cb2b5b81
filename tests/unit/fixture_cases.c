// SPDX-License-Identifier: MIT
#include "fixture_cases.h"

struct fixture fx;
static unsigned main_nvgpus;
static uint64_t main_quota;
static void (*main_then)(void);

static void case_setup(void)
{
	REQUIRE(fixture_init(&fx, main_nvgpus, main_quota) == 0);
	if (main_then)
		main_then();
}

static void case_teardown(void)
{
	if (fx.w)
		CHECK(!fx.w->broken);
	fixture_destroy(&fx);
}

int fixture_main(const struct check_case *cases, size_t n, unsigned nvgpus, uint64_t quota,
		 void (*then)(void), int argc, char **argv)
{
	main_nvgpus = nvgpus;
	main_quota = quota;
	main_then = then;
	return check_run(cases, n, case_setup, case_teardown, argc, argv);
}
