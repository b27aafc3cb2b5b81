// SPDX-License-Identifier: MIT
/* fatal.c: a worker that dies of a fault leaves one log line in the common
 * format (timestamp, component[pid], error, who, the signal) and still dies
 * of that signal. Each case runs the dying process as a child whose log goes
 * to a pipe. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/fatal.h"
#include "mearas/log.h"

enum how { BY_FAULT, BY_ABORT };

/* the child's log line in line; its wait status in *status */
static void die_in_child(enum how how, char *line, size_t len, int *status)
{
	int p[2];
	pid_t pid;
	ssize_t n, got = 0;

	REQUIRE(pipe(p) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		mearas_log_init("mearasd");
		mearas_log_set_fd(p[1]);
		fatal_log_install("worker of client uid 7 pid 8");
		fatal_log_install("worker of client uid 1000 pid 42"); /* the second names who */
		if (how == BY_ABORT)
			abort();
		raise(SIGSEGV); /* as a fault delivers it */
		_exit(0);
	}
	close(p[1]);
	while ((n = read(p[0], line + got, len - 1 - (size_t)got)) > 0)
		got += n;
	line[got > 0 ? got : 0] = 0;
	close(p[0]);
	REQUIRE(waitpid(pid, status, 0) == pid);
}

static void check_line(const char *line, int sig, const char *name)
{
	char want[200];
	struct tm tm;
	struct timespec ts;
	time_t now, t;
	int y, mo, d, h, mi, s, ms, pid;

	/* the clock the line was stamped with: time() reads the kernel's coarse
	 * clock, which can still show the last second just after the line's */
	clock_gettime(CLOCK_REALTIME, &ts);
	now = ts.tv_sec;

	printf("  %s", line);
	CHECK_EQ(sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ mearasd[%d]: error: ", &y, &mo, &d, &h, &mi, &s, &ms,
			&pid), 8);
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	t = timegm(&tm);
	CHECK_MSG(t <= now && now - t <= 5, "timestamp %lld, now %lld", (long long)t, (long long)now);
	snprintf(want, sizeof(want), "]: error: worker of client uid 1000 pid 42 died of signal %d (%s): ", sig, name);
	CHECK_MSG(strstr(line, want) != NULL, "no '%s'", want);
	CHECK_EQ(strchr(line, '\n') - line + 1, (long)strlen(line)); /* one line */
}

/* a child dying HOW is killed by SIG and logs its one line naming it */
static void dies_logged(enum how how, int sig, const char *name)
{
	char line[512];
	int status;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	CHECK_SKIP("the sanitizer's own handler reports faults in this build");
#endif
	die_in_child(how, line, sizeof(line), &status);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig);
	check_line(line, sig, name);
}

static void fault_is_logged_and_kills(void)
{
	dies_logged(BY_FAULT, SIGSEGV, "SIGSEGV");
}

static void abort_is_logged_and_kills(void)
{
	dies_logged(BY_ABORT, SIGABRT, "SIGABRT");
}

static const struct check_case cases[] = {
	{ "fault_is_logged_and_kills", fault_is_logged_and_kills },
	{ "abort_is_logged_and_kills", abort_is_logged_and_kills },
};
CHECK_MAIN(cases)
