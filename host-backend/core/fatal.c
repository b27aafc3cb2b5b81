// SPDX-License-Identifier: MIT
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fatal.h"
#include "mearas/log.h"

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

static int installed;
static char fatal_who[160];

/* What follows is called in a signal handler: only arithmetic, memcpy and
 * write(2), no stdio, no locks (gmtime and snprintf are not async-signal-safe). */
struct line {
	char buf[320];
	size_t n;
};

static void put_str(struct line *l, const char *s)
{
	size_t k = strlen(s);

	if (k > sizeof(l->buf) - 1 - l->n)
		k = sizeof(l->buf) - 1 - l->n;
	memcpy(l->buf + l->n, s, k);
	l->n += k;
}

/* v in decimal, at least width digits */
static void put_uint(struct line *l, uint64_t v, int width)
{
	char d[24];
	int k = 0;

	do {
		d[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && k < (int)sizeof(d));
	while (k < width && k < (int)sizeof(d))
		d[k++] = '0';
	while (k > 0 && l->n < sizeof(l->buf) - 1)
		l->buf[l->n++] = d[--k];
}

/* 2026-11-25T23:32:32.123Z: the civil date of a day count since 1970-01-01
 * (the usual era arithmetic of the proleptic Gregorian calendar) */
static void put_time(struct line *l, const struct timespec *ts)
{
	int64_t days = ts->tv_sec / 86400, secs = ts->tv_sec % 86400;
	int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int64_t day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
	int64_t year = yoe + era * 400 + (month <= 2);

	put_uint(l, (uint64_t)year, 4);
	put_str(l, "-");
	put_uint(l, (uint64_t)month, 2);
	put_str(l, "-");
	put_uint(l, (uint64_t)day, 2);
	put_str(l, "T");
	put_uint(l, (uint64_t)(secs / 3600), 2);
	put_str(l, ":");
	put_uint(l, (uint64_t)(secs / 60 % 60), 2);
	put_str(l, ":");
	put_uint(l, (uint64_t)(secs % 60), 2);
	put_str(l, ".");
	put_uint(l, (uint64_t)(ts->tv_nsec / 1000000), 3);
	put_str(l, "Z");
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGABRT: return "SIGABRT";
	default: return "a fatal signal";
	}
}

static void on_fatal(int sig)
{
	struct line l = { .n = 0 };
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	put_time(&l, &ts);
	put_str(&l, " ");
	put_str(&l, mearas_log_component());
	put_str(&l, "[");
	put_uint(&l, (uint64_t)getpid(), 1);
	put_str(&l, "]: error: ");
	put_str(&l, fatal_who);
	put_str(&l, " died of signal ");
	put_uint(&l, (uint64_t)sig, 1);
	put_str(&l, " (");
	put_str(&l, signal_name(sig));
	put_str(&l, "): a mearasd bug; its client's calls fail from now on; please report it with this log");
	l.buf[l.n++] = '\n';
	if (write(mearas_log_fd(), l.buf, l.n) < 0)
		l.n = 0;
	/* SA_RESETHAND gave the signal its default action back: the fault
	 * comes again on return (or the raise, for one that was sent) and ends
	 * the process as it would have ended */
	raise(sig);
}

void fatal_log_install(const char *who)
{
	struct sigaction sa;
	size_t k = strlen(who);

	if (k >= sizeof(fatal_who))
		k = sizeof(fatal_who) - 1;
	memcpy(fatal_who, who, k);
	fatal_who[k] = 0;
	if (installed)
		return;
	installed = 1;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return; /* the sanitizer's own handler reports faults, with more to say */
#endif
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		sigaction(fatal_signals[i], &sa, NULL);
}
