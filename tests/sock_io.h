/* SPDX-License-Identifier: MIT */
/* Socket I/O for the test programs that stand in for a peer (proxies,
 * attackers): what a short send leaves is sent on. */
#ifndef MEARAS_TESTS_SOCK_IO_H
#define MEARAS_TESTS_SOCK_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* all n bytes to fd (no SIGPIPE): 0, or -1 when the peer is gone */
static inline int send_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

#endif
