/* SPDX-License-Identifier: MIT */
/*
 * One user opens connection after connection, each one a worker process of
 * mearasd holding a region. Past the per-user cap every hello must be
 * refused with a clear reason; when one of the user's workers ends (its
 * connection closed, or the worker killed: the script does that after
 * MARK_FULL appears), a new connection is served again.
 *   client_connection_flood SOCKET N CAP MARK_FULL GO
 * Exit 0 when exactly CAP of N were served, the rest refused, and a slot
 * freed by a closed and by a killed worker was served again.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "hostile.h"

#define CUDA_ERROR_DEVICES_UNAVAILABLE 46
#define MAXN 512

static struct hostile conns[MAXN];

/* a new connection, retried for up to 5 s while the freed slot is not seen yet */
static int connect_again(const char *sock, struct hostile *h)
{
	int r = -1;

	for (int i = 0; i < 50; i++) {
		r = hostile_connect(h, sock, 1, 8ull << 20, NULL);
		if (r == 0)
			return 0;
		if (r > 0)
			close(h->sock);
		usleep(100000);
	}
	printf("FAIL: no connection served after a worker ended (%d: %s)\n", r, h->refusal);
	return 1;
}

int main(int argc, char **argv)
{
	unsigned n, cap, served = 0, refused = 0, other = 0;
	struct hostile extra;
	struct stat st;
	int fd, bad = 0;

	if (argc < 6 || (n = (unsigned)atoi(argv[2])) > MAXN || (cap = (unsigned)atoi(argv[3])) >= n) {
		printf("usage: %s SOCKET N CAP MARK_FULL GO (CAP < N <= %d)\n", argv[0], MAXN);
		return 2;
	}
	for (unsigned i = 0; i < n; i++) {
		int r = hostile_connect(&conns[i], argv[1], 1, 8ull << 20, NULL);

		if (r == 0) {
			served++;
		} else if (r == CUDA_ERROR_DEVICES_UNAVAILABLE && strstr(conns[i].refusal, "clients connected already")) {
			if (!refused)
				printf("refused: %s\n", conns[i].refusal);
			refused++;
			close(conns[i].sock);
		} else {
			printf("connection %u: %d %s\n", i, r, conns[i].refusal);
			other++;
		}
	}
	printf("%u connections: %u served, %u refused, %u other\n", n, served, refused, other);
	if (served != cap || refused != n - cap) {
		printf("FAIL: want %u served and %u refused\n", cap, n - cap);
		return 1;
	}
	/* a closed connection's worker ends and gives its slot back */
	close(conns[0].sock);
	bad |= connect_again(argv[1], &conns[0]);
	/* and so does a killed one (the script kills one of ours) */
	fd = open(argv[4], O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 300 && stat(argv[5], &st); i++)
		usleep(100000);
	bad |= connect_again(argv[1], &extra);
	if (!bad)
		printf("slots of a closed and of a killed worker were served again\n");
	return bad;
}
