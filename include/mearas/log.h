/* SPDX-License-Identifier: MIT */
#ifndef MEARAS_LOG_H
#define MEARAS_LOG_H

/* Messages go to stderr, prefixed with the component name set by
 * mearas_log_init(). MEARAS_LOG=debug enables debug messages. */
void mearas_log_init(const char *component);
/* write messages to fd instead of stderr */
void mearas_log_set_fd(int fd);
void mearas_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int mearas_log_debug_enabled(void);

#define MEARAS_LOG_ERR   0
#define MEARAS_LOG_WARN  1
#define MEARAS_LOG_INFO  2
#define MEARAS_LOG_DEBUG 3

#define log_err(...)   mearas_log(MEARAS_LOG_ERR, __VA_ARGS__)
#define log_warn(...)  mearas_log(MEARAS_LOG_WARN, __VA_ARGS__)
#define log_info(...)  mearas_log(MEARAS_LOG_INFO, __VA_ARGS__)
#define log_debug(...) do { if (mearas_log_debug_enabled()) mearas_log(MEARAS_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
