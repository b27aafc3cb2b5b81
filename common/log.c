// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "mearas/clock.h"
#include "mearas/log.h"
#include "mearas/log_line.h"

static const char *log_component = "mearas";
static int log_level = -1;
static int log_fd = STDERR_FILENO;
static int log_syslog;

void mearas_log_set_fd(int fd)
{
	if (fd >= 0)
		log_fd = fd;
}

int mearas_log_fd(void)
{
	return log_fd;
}

const char *mearas_log_component(void)
{
	return log_component;
}

void mearas_log_init(const char *component)
{
	log_component = component;
}

int mearas_log_level_of(const char *name)
{
	if (!strcmp(name, "debug"))
		return MEARAS_LOG_DEBUG;
	if (!strcmp(name, "info"))
		return MEARAS_LOG_INFO;
	if (!strcmp(name, "warn") || !strcmp(name, "warning"))
		return MEARAS_LOG_WARN;
	if (!strcmp(name, "error"))
		return MEARAS_LOG_ERR;
	return -1;
}

void mearas_log_set_level(int level)
{
	if (level >= MEARAS_LOG_ERR && level <= MEARAS_LOG_DEBUG)
		log_level = level;
}

static int level_from_env(void)
{
	const char *e = getenv("MEARAS_LOG");
	int l;

	if (!e)
		return MEARAS_LOG_INFO;
	if (!strcmp(e, "quiet"))
		return MEARAS_LOG_ERR;
	l = mearas_log_level_of(e);
	return l < 0 ? MEARAS_LOG_INFO : l;
}

int mearas_log_journal_stderr(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	/* systemd.exec(5): "DEVICE:INODE" of the stream it gave as stdout/stderr */
	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st))
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void mearas_log_to_syslog(int facility)
{
	openlog(log_component, LOG_PID | LOG_NDELAY, facility);
	log_syslog = 1;
}

int mearas_log_debug_enabled(void)
{
	if (log_level < 0)
		log_level = level_from_env();
	return log_level >= MEARAS_LOG_DEBUG;
}

static void log_line(int level, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char buf[1024];
	int n;

	if (log_syslog) {
		vsnprintf(buf, sizeof(buf), fmt, ap);
		syslog(prio[level], "%s", buf);
		return;
	}
	n = mearas_log_line_prefix(buf, sizeof(buf), log_component, level);
	if (n > 0 && (size_t)n < sizeof(buf))
		n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf) - 1)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* one write per message so lines of several processes do not interleave */
	if (write(log_fd, buf, (size_t)n) < 0)
		return;
}

void mearas_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level < MEARAS_LOG_ERR || level > MEARAS_LOG_DEBUG)
		level = MEARAS_LOG_ERR;
	if (log_level < 0)
		log_level = level_from_env();
	if (level > log_level)
		return;
	va_start(ap, fmt);
	log_line(level, fmt, ap);
	va_end(ap);
}

int mearas_log_burst(struct mearas_log_burst *b, uint32_t burst, const char *prefix, const char *what)
{
	uint64_t now_ns = mearas_mono_ns();

	if (!b->window_ns || now_ns - b->window_ns >= 1000000000ull) {
		if (b->dropped)
			mearas_log(MEARAS_LOG_WARN, "%s%u more %s not logged", prefix, b->dropped, what);
		b->window_ns = now_ns ? now_ns : 1;
		b->lines = 0;
		b->dropped = 0;
	}
	if (b->lines >= burst) {
		b->dropped++;
		return 0;
	}
	b->lines++;
	return 1;
}
