/* SPDX-License-Identifier: MIT */
/*
 * Opens N TCP connections to a link port on loopback and sends nothing,
 * holding them HOLD seconds: what an unauthenticated peer can do for free.
 * Counts the connections the server closed at once (refused at admission)
 * and those it closed by the end of the hold, counted from the last connect
 * (the handshake deadline). Exits 0 when the server closed every one by then.
 *   link_flood_unauthenticated PORT N HOLD_S
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "link_attack.h"

/* non-blocking connect, 2 s at most: a full backlog must not stall the flood */
static int open_idle(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int err = 0;
	socklen_t el = sizeof(err);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS)
		goto fail;
	if (poll(&p, 1, 2000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* the server closed fd: end of stream or reset */
static int closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

int main(int argc, char **argv)
{
	unsigned port, n, opened = 0, at_once = 0, by_end = 0;
	double hold, t0;
	int *fds;

	link_attack_args(argc, argv, "HOLD_S", &port, &n, &hold);
	fds = calloc(n, sizeof(*fds));
	if (!fds)
		return 2;
	for (unsigned i = 0; i < n; i++) {
		fds[i] = open_idle(port);
		opened += fds[i] >= 0;
		if (i % 50 == 49)
			usleep(20000); /* bursts of 50: a listen backlog is not what is tested */
	}
	t0 = now_s();
	usleep(500000);
	for (unsigned i = 0; i < n; i++)
		at_once += fds[i] < 0 || closed(fds[i]);
	while (now_s() - t0 < hold)
		usleep(100000);
	for (unsigned i = 0; i < n; i++) {
		by_end += fds[i] < 0 || closed(fds[i]);
		if (fds[i] >= 0)
			close(fds[i]);
	}
	printf("flood: %u of %u idle connections opened; %u closed by the server at once, %u within %.1f s\n",
	       opened, n, at_once, by_end, hold);
	free(fds);
	if (opened == 0) {
		printf("flood: no connection opened: the attack did not run\n");
		return 1;
	}
	return by_end == n ? 0 : 1;
}
