/* One ivshmem protocol message: an int64 little-endian, maybe with an fd. */
#ifndef MEARAS_IVSHMEM_MSG_H
#define MEARAS_IVSHMEM_MSG_H

#include <stdint.h>

/* Sends value (and fd via SCM_RIGHTS when fd >= 0). 0 or -errno. */
int ivshmem_msg_send(int sock, int64_t value, int fd);

/*
 * Receives one message; *fd gets the passed fd or -1. 0, -ECONNRESET on
 * EOF, or -errno. Used by clients (tests) of the protocol.
 */
int ivshmem_msg_recv(int sock, int64_t *value, int *fd);

#endif
