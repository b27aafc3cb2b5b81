/* SPDX-License-Identifier: MIT */
/* CPU lists as taskset -c and cpuset files write them ("0-3,8,10-11"):
 * mearasd --cpus keeps the daemon, its threads and its workers on them. */
#ifndef MEARAS_CORE_CPUS_H
#define MEARAS_CORE_CPUS_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

/* The set s names; false with the reason in why (nothing named, a CPU past
 * CPU_SETSIZE, a range backwards, anything but digits, '-' and ','). */
bool cpus_parse(const char *s, cpu_set_t *set, char *why, size_t whylen);
/* set as a list again, ranges joined ("0-3,8"); cut short with "..." when
 * out is too small */
void cpus_format(const cpu_set_t *set, char *out, size_t len);
/* This process (and every thread and worker it starts from now on) runs on
 * set only; false with the reason when the system will not (CPUs outside
 * the ones this process may use, offline ones). */
bool cpus_confine(const cpu_set_t *set, char *why, size_t whylen);

#endif
