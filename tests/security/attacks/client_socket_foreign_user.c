/* SPDX-License-Identifier: MIT */
/*
 * A local user outside the client socket's group tries to become a client.
 * With the socket's mode as mearasd set it, connect() itself must fail
 * (EACCES); with the socket made world-writable by someone, the connection
 * is accepted by the kernel but mearasd must still refuse the hello from
 * the caller's credentials (SO_PEERCRED). A member of the group (primary or
 * supplementary) must get in.
 *   client_socket_foreign_user SOCKET denied|refused|ok
 * Exit 0 when the outcome is the expected one.
 */
#include "hostile.h"

#define CUDA_ERROR_NOT_PERMITTED 800

int main(int argc, char **argv)
{
	struct hostile h;
	int r, err;

	if (argc < 3) {
		printf("usage: %s SOCKET denied|refused|ok\n", argv[0]);
		return 2;
	}
	r = hostile_connect(&h, argv[1], 1, 8ull << 20, NULL);
	err = errno;
	printf("uid %u gid %u: connect+hello -> %d (%s)%s%s\n", getuid(), getgid(), r,
	       r == -1 ? strerror(err) : "status", h.refusal[0] ? ": " : "", h.refusal);
	if (!strcmp(argv[2], "denied")) {
		if (r == -1 && err == EACCES)
			return 0;
		printf("FAIL: want connect() refused with EACCES\n");
		return 1;
	}
	if (!strcmp(argv[2], "refused")) {
		if (r == CUDA_ERROR_NOT_PERMITTED && strstr(h.refusal, "not in the group"))
			return 0;
		printf("FAIL: want the hello refused with cudaErrorNotPermitted (800), 'not in the group'\n");
		return 1;
	}
	if (r == 0 && h.hdr->nvgpus == 1 && hostile_devinfo(&h, 0)->total_mem) {
		int st;

		if (hostile_alloc(&h, 0, 1 << 20, &st))
			return 0;
		printf("FAIL: a member's allocation failed: %d\n", st);
		return 1;
	}
	printf("FAIL: a member of the group must be served\n");
	return 1;
}
