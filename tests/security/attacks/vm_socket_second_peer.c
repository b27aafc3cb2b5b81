/* SPDX-License-Identifier: MIT */
/*
 * vm_socket_second_peer SOCKET hold SECS: attach as the VM's QEMU would,
 *   print "attached", stay attached SECS seconds (or until killed).
 * vm_socket_second_peer SOCKET probe: a second peer; exit 0 when refused
 *   (no memory fd), 2 when it got the VM's memory, 1 on error.
 * vm_socket_second_peer SOCKET attach: exit 0 when it got the memory.
 */
#include <stdlib.h>

#include "vm_peer.h"

int main(int argc, char **argv)
{
	struct vm_peer p;
	int r;

	if (argc < 3)
		return fprintf(stderr, "usage: %s SOCKET hold SECS | probe | attach\n", argv[0]), 1;
	r = vm_peer_connect(&p, argv[1]);
	if (r < 0) {
		fprintf(stderr, "connect %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (!strcmp(argv[2], "probe")) {
		if (p.shm_fd >= 0) {
			printf("second peer got the VM's shared memory (peer id %lld)\n", (long long)p.id);
			return 2;
		}
		printf("second peer refused: no shared memory fd\n");
		return 0;
	}
	if (p.shm_fd < 0) {
		printf("refused\n");
		return 1;
	}
	printf("attached (peer id %lld)\n", (long long)p.id);
	fflush(stdout);
	if (!strcmp(argv[2], "hold"))
		sleep(argc > 3 ? (unsigned)atoi(argv[3]) : 60);
	return 0;
}
