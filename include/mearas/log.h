/* SPDX-License-Identifier: MIT */
#ifndef MEARAS_LOG_H
#define MEARAS_LOG_H

#include <stdint.h>

/* Messages go to stderr, one line each in the format of mearas/log_line.h
 * (timestamp, component[pid], level), or to syslog after
 * mearas_log_to_syslog(). The level comes from MEARAS_LOG (debug, info,
 * the default, warn, error) unless mearas_log_set_level() sets it. */
void mearas_log_init(const char *component);
/* write messages to fd instead of stderr */
void mearas_log_set_fd(int fd);
/* where messages go (stderr or the fd of mearas_log_set_fd), and the
 * component named in them: plain reads, fit for a signal handler */
int mearas_log_fd(void);
const char *mearas_log_component(void);
void mearas_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int mearas_log_debug_enabled(void);
/* MEARAS_LOG_* of "error", "warn" (or "warning"), "info", "debug"; -1 for anything else */
int mearas_log_level_of(const char *name);
void mearas_log_set_level(int level);
/* From now on to syslog(3) (LOG_PID, the component as ident) instead of the fd */
void mearas_log_to_syslog(int facility);
/* 1 when stderr is the journal stream systemd gave this process (JOURNAL_STREAM) */
int mearas_log_journal_stderr(void);

/* A budget of log lines for what an untrusted party can cause at will
 * (refused records, refused connections): at most `burst` lines a second.
 * Not locked: one per thread, or under the caller's lock. */
struct mearas_log_burst {
	uint64_t window_ns; /* start of the current second */
	uint32_t lines;     /* admitted in it */
	uint32_t dropped;   /* over the budget in it */
};
/* 1: log the line (counted), 0: over this second's budget (counted as
 * dropped). A call that opens a new second first logs the lines the last
 * one dropped, "<prefix><N> more <what> not logged", so the count is never
 * lost. */
int mearas_log_burst(struct mearas_log_burst *b, uint32_t burst, const char *prefix, const char *what);

#define MEARAS_LOG_ERR   0
#define MEARAS_LOG_WARN  1
#define MEARAS_LOG_INFO  2
#define MEARAS_LOG_DEBUG 3

#define log_err(...)   mearas_log(MEARAS_LOG_ERR, __VA_ARGS__)
#define log_warn(...)  mearas_log(MEARAS_LOG_WARN, __VA_ARGS__)
#define log_info(...)  mearas_log(MEARAS_LOG_INFO, __VA_ARGS__)
#define log_debug(...) do { if (mearas_log_debug_enabled()) mearas_log(MEARAS_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
