/* SPDX-License-Identifier: MIT */
/*
 * vm_socket_foreign_user SOCKET: connect to a VM's ivshmem socket as
 * whoever runs this (the script: an unprivileged user, with the socket's
 * mode loosened to 0666) and try to get the VM's shared memory.
 * Exit 0: refused (closed before any memory fd); 2: got the memory; 1: error.
 */
#include "vm_peer.h"

int main(int argc, char **argv)
{
	struct vm_peer p;
	int r;

	if (argc != 2)
		return fprintf(stderr, "usage: %s SOCKET\n", argv[0]), 1;
	r = vm_peer_connect(&p, argv[1]);
	if (r < 0) {
		fprintf(stderr, "connect %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (p.shm_fd >= 0) {
		printf("uid %u got the VM's shared memory (fd %d, peer id %lld)\n", (unsigned)getuid(), p.shm_fd,
		       (long long)p.id);
		return 2;
	}
	printf("uid %u: refused, no shared memory fd\n", (unsigned)getuid());
	return 0;
}
