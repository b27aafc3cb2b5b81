/* SPDX-License-Identifier: MIT */
/*
 * The checks and the case runner of every native test program (C11, also
 * usable from C++/CUDA sources). Header only: include it, nothing to link.
 * POSIX: under -std=c11 build with -D_DEFAULT_SOURCE (or _GNU_SOURCE).
 *
 * Checks record a failure (where, what, the values) and let the case go on:
 *   CHECK(cond)                 CHECK_MSG(cond, fmt, ...)
 *   CHECK_EQ(got, want)         integers, compared as 64-bit, both printed
 *   CHECK_RC(got, want)         int status codes, printed through
 *                               CHECK_RC_NAME(code) when it is defined
 *   CHECK_STR_EQ(got, want)     C strings
 *   CHECK_FAIL(fmt, ...)        an unconditional failure with a message
 * From any thread. A failure inside a case fails that case; one outside
 * any case (a static constructor, main before the runner) fails the run.
 *   REQUIRE(cond), REQUIRE_MSG(cond, fmt, ...), REQUIRE_RC(got, want)
 *                               as CHECK..., and a failure ends the case (not
 *                               the program); on the case's own thread only
 *   CHECK_SKIP(fmt, ...)        ends the case as skipped, with the reason
 * Outside any case a failed REQUIRE ends the program (the summary, exit 1).
 * check_xorshift(&state): a PRNG for randomized runs.
 *
 * Cases: a table of named functions, one behaviour each, run in order:
 *   static const struct check_case cases[] = { { "quota", test_quota }, ... };
 *   CHECK_MAIN(cases)            or CHECK_MAIN_FIXTURE(cases, setup, teardown)
 * The program runs every case, or those named on its command line (a name
 * matches a case of that name, else every case whose name contains it);
 * `--list` prints the names; `--KEY=VALUE` (or `--KEY`) arguments are options
 * the cases read with check_opt("KEY") / check_opt_u64("KEY", default). Setup and
 * teardown (may be NULL) run around every case; teardown runs also after a
 * REQUIRE ended the case. Per case one line:
 *   PASS name (0.01 s)   FAIL name (0.01 s)   SKIP name: why
 * (the failed checks' lines come before their FAIL line), and last
 *   N passed, M failed, K skipped
 * Exit status 1 when anything failed (2 for a bad command line), else 0.
 * Cases decided at run time (one per input file, per parameter set):
 * check_init(argc, argv), then check_run_one(name, fn, arg) for each, then
 * return check_done() (the summary line and the exit status).
 *
 * Named checks, for programs whose output other scripts read line by line
 * (the VM tests): CHECK_NAMED(cond, name, fmt, ...) prints
 *   PASS name            or   FAIL name: <fmt, ...>
 * and counts as one passed or failed item (inside a case it counts toward
 * the case instead); it returns whether cond held. Define CHECK_PREFIX before including to prefix the
 * PASS/FAIL/SKIP lines (the guest programs use "GUEST-").
 */
#ifndef MEARAS_TESTS_CHECK_H
#define MEARAS_TESTS_CHECK_H

#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef CHECK_PREFIX
#define CHECK_PREFIX ""
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct check_case {
	const char *name;
	void (*fn)(void);
};

struct check_state {
	int fails;              /* failed checks of the current case (or outside cases) */
	unsigned passed, failed, skipped;
	const char *current;    /* the running case, NULL outside one */
	double started;
	bool skip;
	char skip_why[256];
	jmp_buf *end_case;      /* REQUIRE/CHECK_SKIP jump here (runner's cases) */
	pthread_t case_thread;
	int argc;
	char **argv;
};

/* One object for the whole program, whichever of its files include this. */
extern struct check_state check_state;
__attribute__((weak)) struct check_state check_state;

static inline double check_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void check_vfail_(const char *file, int line, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	__atomic_fetch_add(&check_state.fails, 1, __ATOMIC_RELAXED);
	printf("  %s:%d: check failed: %s\n", file, line, msg);
	fflush(stdout);
}

__attribute__((format(printf, 3, 4)))
static inline void check_fail_(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_vfail_(file, line, fmt, ap);
	va_end(ap);
}

static inline void check_eq_(const char *file, int line, const char *a, const char *b, uint64_t x,
			     uint64_t y)
{
	if (x == y)
		return;
	if ((int64_t)x < 0 || (int64_t)y < 0)
		check_fail_(file, line, "%s == %s (%" PRIu64 " [%" PRId64 "] != %" PRIu64 " [%" PRId64 "])",
			    a, b, x, (int64_t)x, y, (int64_t)y);
	else
		check_fail_(file, line, "%s == %s (%" PRIu64 " != %" PRIu64 ")", a, b, x, y);
}

static inline void check_rc_(const char *file, int line, const char *a, int got, int want,
			     const char *got_name, const char *want_name)
{
	if (got == want)
		return;
	check_fail_(file, line, "%s = %d (%s), want %d (%s)", a, got, got_name ? got_name : "-", want,
		    want_name ? want_name : "-");
}

static inline void check_str_eq_(const char *file, int line, const char *a, const char *x, const char *y)
{
	if (x && y && !strcmp(x, y))
		return;
	check_fail_(file, line, "%s is \"%s\", want \"%s\"", a, x ? x : "(null)", y ? y : "(null)");
}

static inline void check_summary_(void)
{
	printf("%u passed, %u failed, %u skipped\n", check_state.passed, check_state.failed,
	       check_state.skipped);
	fflush(stdout);
}

/* The failures recorded outside any case so far, reported as one failed item. */
static inline void check_flush_outside_(void)
{
	int n = __atomic_exchange_n(&check_state.fails, 0, __ATOMIC_RELAXED);

	if (n) {
		check_state.failed++;
		printf(CHECK_PREFIX "FAIL (outside any case): %d failed check(s)\n", n);
		fflush(stdout);
	}
}

/* REQUIRE and CHECK_SKIP: back to the runner, which closes the case; off
 * the case's thread, or outside any case, they end the program (exit 1). */
static inline void check_leave_case_(void)
{
	if (check_state.end_case && pthread_equal(pthread_self(), check_state.case_thread))
		longjmp(*check_state.end_case, 1);
	if (check_state.current)
		printf("  REQUIRE/CHECK_SKIP off the case's thread: the program stops\n");
	check_flush_outside_();
	check_summary_();
	exit(1);
}

/* A small PRNG for the tests' randomized runs (xorshift64, state != 0). */
static inline uint64_t check_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#define CHECK_MSG(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			check_fail_(__FILE__, __LINE__, __VA_ARGS__);          \
	} while (0)
#define CHECK(cond) CHECK_MSG(cond, "%s", #cond)
#define CHECK_FAIL(...) check_fail_(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK_EQ(got, want) check_eq_(__FILE__, __LINE__, #got, #want, (uint64_t)(got), (uint64_t)(want))
#define CHECK_STR_EQ(got, want) check_str_eq_(__FILE__, __LINE__, #got, (got), (want))
#ifndef CHECK_RC_NAME
#define CHECK_RC_NAME(code) ((const char *)0)
#endif
#define CHECK_RC(got, want)                                                    \
	do {                                                                   \
		int got_ = (got), want_ = (want);                              \
		check_rc_(__FILE__, __LINE__, #got, got_, want_, CHECK_RC_NAME(got_), \
			  CHECK_RC_NAME(want_));                               \
	} while (0)
#define REQUIRE_MSG(cond, ...)                                                 \
	do {                                                                   \
		if (!(cond)) {                                                 \
			check_fail_(__FILE__, __LINE__, __VA_ARGS__);          \
			check_leave_case_();                                   \
		}                                                              \
	} while (0)
#define REQUIRE(cond) REQUIRE_MSG(cond, "%s (required: the case ends here)", #cond)
#define REQUIRE_RC(got, want)                                                  \
	do {                                                                   \
		int rgot_ = (got), rwant_ = (want);                            \
		check_rc_(__FILE__, __LINE__, #got, rgot_, rwant_, CHECK_RC_NAME(rgot_), \
			  CHECK_RC_NAME(rwant_));                              \
		if (rgot_ != rwant_)                                           \
			check_leave_case_();                                   \
	} while (0)
#define CHECK_SKIP(...)                                                        \
	do {                                                                   \
		check_state.skip = true;                                       \
		snprintf(check_state.skip_why, sizeof(check_state.skip_why), __VA_ARGS__); \
		check_leave_case_();                                           \
	} while (0)

/* ---- options and case names from the command line ---- */

static inline void check_init(int argc, char **argv)
{
	check_state.argc = argc;
	check_state.argv = argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* The value of --key=value ("" for a bare --key), or NULL. */
static inline const char *check_opt(const char *key)
{
	size_t n = strlen(key);

	for (int i = 1; i < check_state.argc; i++) {
		const char *a = check_state.argv[i];

		if (a[0] == '-' && a[1] == '-' && !strncmp(a + 2, key, n) && (a[2 + n] == '=' || !a[2 + n]))
			return a[2 + n] ? a + 3 + n : a + 2 + n;
	}
	return NULL;
}

static inline uint64_t check_opt_u64(const char *key, uint64_t def)
{
	const char *v = check_opt(key);

	return v ? strtoull(v, NULL, 0) : def;
}

/* Does command line argument arg select case name? An argument that is the
 * name of a case (of cases[0..n), when given) selects that case alone, any
 * other one every case whose name contains it. */
static inline bool check_selects_(const char *arg, const char *name, const struct check_case *cases,
				  size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!strcmp(arg, cases[k].name))
			return !strcmp(arg, name);
	return strstr(name, arg) != NULL;
}

/* Is case `name` wanted? All are when the command line names none. */
static inline bool check_wanted_(const char *name, const struct check_case *cases, size_t n)
{
	bool any = false;

	for (int i = 1; i < check_state.argc; i++) {
		const char *a = check_state.argv[i];

		if (a[0] == '-')
			continue;
		any = true;
		if (check_selects_(a, name, cases, n))
			return true;
	}
	return !any;
}

/* ---- cases ---- */

static inline void check_case_end_(void)
{
	int fails = __atomic_exchange_n(&check_state.fails, 0, __ATOMIC_RELAXED);
	double t = check_now() - check_state.started;

	if (fails) {
		check_state.failed++;
		printf(CHECK_PREFIX "FAIL %s (%.2f s)\n", check_state.current, t);
	} else if (check_state.skip) {
		check_state.skipped++;
		printf(CHECK_PREFIX "SKIP %s: %s\n", check_state.current, check_state.skip_why);
	} else {
		check_state.passed++;
		printf(CHECK_PREFIX "PASS %s (%.2f s)\n", check_state.current, t);
	}
	fflush(stdout);
	check_state.current = NULL;
}

/* Runs fn(arg) as case `name` (setup and teardown around it, may be NULL),
 * unless the command line leaves it out (cases[0..n) tell which names are
 * exact). */
static inline void check_case_(const char *name, void (*fn)(void *), void *arg, void (*setup)(void),
			       void (*teardown)(void), const struct check_case *cases, size_t n)
{
	jmp_buf jb;

	if (!check_wanted_(name, cases, n))
		return;
	check_flush_outside_();
	check_state.current = name;
	check_state.skip = false;
	check_state.skip_why[0] = '\0';
	check_state.started = check_now();
	check_state.case_thread = pthread_self();
	check_state.end_case = &jb;
	if (!setjmp(jb)) {
		if (setup)
			setup();
		fn(arg);
	}
	check_state.end_case = NULL;
	if (teardown)
		teardown();
	check_case_end_();
}

/* A case made at run time: fn(arg) as case `name` (a parameter set, an input
 * file...). check_init() first, check_done() last. */
static inline void check_run_one(const char *name, void (*fn)(void *), void *arg)
{
	check_case_(name, fn, arg, NULL, NULL, NULL, 0);
}

/* The summary line; returns the exit status. */
static inline int check_done(void)
{
	check_flush_outside_();
	check_summary_();
	return check_state.failed ? 1 : 0;
}

/* Named checks (see the top): one line each, always. */
__attribute__((format(printf, 3, 4)))
static inline bool check_named_(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf(CHECK_PREFIX "PASS %s\n", name);
	} else {
		printf(CHECK_PREFIX "FAIL %s: ", name);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	fflush(stdout);
	if (check_state.current) {
		if (!ok)
			__atomic_fetch_add(&check_state.fails, 1, __ATOMIC_RELAXED);
	} else if (ok) {
		check_state.passed++;
	} else {
		check_state.failed++;
	}
	return ok;
}
#define CHECK_NAMED(cond, name, ...) check_named_((cond) ? true : false, name, __VA_ARGS__)

static inline void check_call_case_(void *fn)
{
	const struct check_case *c = (const struct check_case *)fn;

	c->fn();
}

/* Runs the cases the command line wants; returns the exit status. */
static inline int check_run(const struct check_case *cases, size_t n, void (*setup)(void),
			    void (*teardown)(void), int argc, char **argv)
{
	unsigned before;

	check_init(argc, argv);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool known = a[0] == '-' && a[1] == '-';

		if (!strcmp(a, "--list")) {
			for (size_t k = 0; k < n; k++)
				printf("%s\n", cases[k].name);
			return 0;
		}
		for (size_t k = 0; k < n && !known && a[0] != '-'; k++)
			known = check_selects_(a, cases[k].name, cases, n);
		if (!known) {
			fprintf(stderr, "%s: '%s' is no option and names no case (--list names them)\n",
				argv[0], a);
			return 2;
		}
	}
	before = check_state.passed + check_state.failed + check_state.skipped;
	for (size_t k = 0; k < n; k++)
		check_case_(cases[k].name, check_call_case_, (void *)&cases[k], setup, teardown, cases, n);
	if (check_state.passed + check_state.failed + check_state.skipped == before) {
		printf("no case ran\n");
		check_state.failed++;
	}
	return check_done();
}

#define CHECK_COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define CHECK_MAIN_FIXTURE(cases, setup, teardown)                             \
	int main(int argc, char **argv)                                        \
	{                                                                      \
		return check_run(cases, CHECK_COUNT(cases), setup, teardown, argc, argv); \
	}
#define CHECK_MAIN(cases) CHECK_MAIN_FIXTURE(cases, NULL, NULL)

#ifdef __cplusplus
}
#endif

#endif
