/* SPDX-License-Identifier: MIT */
#ifndef MEARAS_FDPASS_H
#define MEARAS_FDPASS_H

#include <stddef.h>

#define MEARAS_FDPASS_MAX 200

/* Send all len bytes on a stream socket, however many sends it takes (EINTR
 * retried, no SIGPIPE). Returns 0, or -errno (-EPIPE when a send takes none). */
int mearas_send_all(int sock, const void *buf, size_t len);
/* Send len bytes and nfds descriptors in one message on a unix stream socket. */
int mearas_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);
/* Receive exactly len bytes; up to maxfds descriptors arriving with them are
 * stored in fds (count in *nfds). Returns 0, or -errno (-EPIPE on EOF,
 * -ETIMEDOUT after timeout_ms when timeout_ms >= 0). */
int mearas_recv_fds(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds, int timeout_ms);

#endif
