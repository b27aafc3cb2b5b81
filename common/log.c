// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mearas/log.h"

static const char *log_component = "mearas";
static int log_level = -1;
static int log_fd = STDERR_FILENO;

void mearas_log_set_fd(int fd)
{
	if (fd >= 0)
		log_fd = fd;
}

void mearas_log_init(const char *component)
{
	log_component = component;
}

static int level_from_env(void)
{
	const char *e = getenv("MEARAS_LOG");

	if (!e)
		return MEARAS_LOG_INFO;
	if (!strcmp(e, "debug"))
		return MEARAS_LOG_DEBUG;
	if (!strcmp(e, "warn"))
		return MEARAS_LOG_WARN;
	if (!strcmp(e, "error") || !strcmp(e, "quiet"))
		return MEARAS_LOG_ERR;
	return MEARAS_LOG_INFO;
}

int mearas_log_debug_enabled(void)
{
	if (log_level < 0)
		log_level = level_from_env();
	return log_level >= MEARAS_LOG_DEBUG;
}

void mearas_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char buf[1024];
	int n;
	va_list ap;

	if (log_level < 0)
		log_level = level_from_env();
	if (level > log_level)
		return;
	n = snprintf(buf, sizeof(buf), "%s[%d]: %s: ", log_component, (int)getpid(), names[level]);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(buf))
		n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf) - 1)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* one write per message so lines of several processes do not interleave */
	if (write(log_fd, buf, (size_t)n) < 0)
		return;
}
