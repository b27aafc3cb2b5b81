/* SPDX-License-Identifier: MIT */
/*
 * A mearasd worker process that dies of a fault (SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE, SIGABRT) says so in the log before it goes: mearasd reaps its
 * workers automatically and cannot see how they ended, and a worker's own
 * stderr may carry device output to its client.
 */
#ifndef MEARAS_FATAL_H
#define MEARAS_FATAL_H

/* From now on, a fatal signal writes one log line (the log_line.h format,
 * level error) where mearas_log writes, naming who ("worker of client uid
 * 1000 pid 42") and the signal, then the process dies of that signal as it
 * would have. Called again, it only changes who. */
void fatal_log_install(const char *who);

#endif
