/* SPDX-License-Identifier: MIT */
/*
 * A local user outside the control socket's group asks mearasd's control
 * socket for the node's assemblies (ListAssemblies: every tenant's
 * bookings and the processes using them; the same socket instantiates,
 * releases and attaches VMs). With the socket's mode as mearasd set it,
 * connect() must fail (EACCES); with the socket made world-writable by
 * someone, mearasd must still refuse the caller from its credentials
 * (SO_PEERCRED): an Error reply, never the list. A member of the socket's
 * group gets the list.
 *   control_socket_foreign_user SOCKET denied|refused|ok
 * Exit 0 when the outcome is the expected one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* ControlRequest{list: ListAssembliesRequest{}}: field 5, empty */
static const uint8_t list_req[] = { 2, 0, 0, 0, 0x2a, 0x00 };
#define TAG_ASSEMBLIES 0x2a /* ControlReply field 5, length-delimited */
#define TAG_ERROR 0x7a      /* ControlReply field 15 */

static size_t recv_upto(int fd, uint8_t *buf, size_t want)
{
	size_t got = 0;

	while (got < want) {
		ssize_t n = recv(fd, buf + got, want - got, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

int main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	uint8_t hdr[4], body[4096];
	size_t len, got;
	int fd, r, err;

	if (argc < 3 || strlen(argv[1]) >= sizeof(a.sun_path)) {
		printf("usage: %s SOCKET denied|refused|ok\n", argv[0]);
		return 2;
	}
	strcpy(a.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return 2;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	err = errno;
	printf("uid %u gid %u: connect -> %s\n", getuid(), getgid(), r ? strerror(err) : "ok");
	if (!strcmp(argv[2], "denied")) {
		if (r && err == EACCES)
			return 0;
		printf("FAIL: want connect() refused with EACCES\n");
		return 1;
	}
	if (r) {
		printf("FAIL: connect: %s\n", strerror(err));
		return 1;
	}
	/* a refused peer may be closed before this arrives: its answer is read anyway */
	send(fd, list_req, sizeof(list_req), MSG_NOSIGNAL);
	if (recv_upto(fd, hdr, 4) < 4) {
		printf("FAIL: no reply (connection closed without an answer)\n");
		return 1;
	}
	len = (size_t)hdr[0] | (size_t)hdr[1] << 8 | (size_t)hdr[2] << 16 | (size_t)hdr[3] << 24;
	got = recv_upto(fd, body, len < sizeof(body) - 1 ? len : sizeof(body) - 1);
	body[got] = 0;
	if (!got) {
		printf("FAIL: an empty reply\n");
		return 1;
	}
	printf("reply: %zu bytes, body field %u\n", len, body[0] >> 3);
	if (!strcmp(argv[2], "refused")) {
		if (body[0] == TAG_ERROR && memmem(body, got, "not in the control socket's group", 33))
			return 0;
		printf("FAIL: want an Error reply saying 'not in the control socket's group'%s\n",
		       body[0] == TAG_ASSEMBLIES ? ": got the node's assemblies" : "");
		return 1;
	}
	if (body[0] == TAG_ASSEMBLIES)
		return 0;
	printf("FAIL: a member of the group must get the list\n");
	return 1;
}
