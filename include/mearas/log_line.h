/* SPDX-License-Identifier: MIT */
/*
 * The one line format of mearas's logs on stderr, shared by common/log.c
 * (mearasd, the guest libraries) and remote-link's default writer:
 *
 *   2026-11-25T23:32:32.123Z mearasd[1234]: warning: the message
 *
 * a UTC timestamp (RFC 3339, milliseconds), the component and its pid, the
 * level (error, warning, info, debug), the message. Header only, so that
 * remote-link stays a library of its own.
 */
#ifndef MEARAS_LOG_LINE_H
#define MEARAS_LOG_LINE_H

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static inline const char *mearas_log_level_name(int level)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	return level >= 0 && level <= 3 ? names[level] : "error";
}

/* The prefix of one line into buf (always terminated); its length, or -1. */
static inline int mearas_log_line_prefix(char *buf, size_t len, const char *component, int level)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	return snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%d]: %s: ", tm.tm_year + 1900,
			tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
			component, (int)getpid(), mearas_log_level_name(level));
}

#endif
