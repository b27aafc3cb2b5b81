/* The link library's log, captured for the remote-link tests: every line the
 * library logs through capture_log (set as a config's log) goes into one
 * buffer that log_has/log_wait search and log_clear empties. */
#ifndef REMOTE_LINK_TESTS_LOG_CAPTURE_H
#define REMOTE_LINK_TESTS_LOG_CAPTURE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[1 << 16];
static size_t log_len;

static void capture_log(void *ctx, enum mearas_link_log_level level, const char *msg)
{
	(void)ctx;
	(void)level;
	pthread_mutex_lock(&log_lock);
	int n = snprintf(log_buf + log_len, sizeof(log_buf) - log_len, "%s\n", msg);
	if (n > 0 && log_len + (size_t)n < sizeof(log_buf))
		log_len += (size_t)n;
	pthread_mutex_unlock(&log_lock);
}

/* a captured line holding a (and b, where given) */
static bool log_has(const char *a, const char *b)
{
	pthread_mutex_lock(&log_lock);
	bool found = false;
	for (char *line = log_buf; line && *line;) {
		char *end = strchr(line, '\n');
		if (end)
			*end = 0;
		if (strstr(line, a) && (!b || strstr(line, b)))
			found = true;
		if (end)
			*end = '\n';
		line = end ? end + 1 : NULL;
	}
	pthread_mutex_unlock(&log_lock);
	return found;
}

/* log_has within timeout_s: a line the other end logs while this one returns */
static bool log_wait(const char *a, const char *b, double timeout_s)
{
	for (double t0 = check_now(); check_now() - t0 < timeout_s; usleep(1000))
		if (log_has(a, b))
			return true;
	return false;
}

static void log_clear(void)
{
	pthread_mutex_lock(&log_lock);
	log_len = 0;
	log_buf[0] = 0;
	pthread_mutex_unlock(&log_lock);
}

#endif
