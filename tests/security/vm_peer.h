/* SPDX-License-Identifier: MIT */
/*
 * A peer of a VM's ivshmem socket (mearasd --vm), as QEMU would be: reads
 * the server's setup messages (version, own id, the shared memory fd, then
 * (peer id, eventfd) per vector for the host and itself). Header-only, for
 * the VM attacks; links host-backend/vm/ivshmem/ivshmem_msg.c.
 */
#ifndef MEARAS_TESTS_VM_PEER_H
#define MEARAS_TESTS_VM_PEER_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "mearas/vm_region.h"
#include "vm/ivshmem/ivshmem_msg.h"

struct vm_peer {
	int sock;
	int shm_fd;                             /* -1 until the server sent it */
	int64_t id;
	int host_fd[MEARAS_VM_VECTORS];         /* doorbells to the host (peer 0) */
	int own_fd[MEARAS_VM_VECTORS];          /* the host's notifications to us */
};

/* Connects and reads the setup. 0 with shm_fd set; 1 when the server closed
 * the connection before handing out the memory (refused); -1 on a socket
 * error (errno). */
static inline int vm_peer_connect(struct vm_peer *p, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	int64_t v;
	int fd, r, nhost = 0, nown = 0;

	memset(p, 0, sizeof(*p));
	p->shm_fd = -1;
	for (unsigned i = 0; i < MEARAS_VM_VECTORS; i++)
		p->host_fd[i] = p->own_fd[i] = -1;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	p->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->sock < 0 || connect(p->sock, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	setsockopt(p->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* version, own id, memory */
	for (int step = 0; step < 3; step++) {
		r = ivshmem_msg_recv(p->sock, &v, &fd);
		if (r == -ECONNRESET)
			return 1;
		if (r)
			return errno = -r, -1;
		if (step == 1)
			p->id = v;
		if (step == 2)
			p->shm_fd = fd;
		else if (fd >= 0)
			close(fd);
	}
	/* the host's eventfds, then ours */
	while (nhost < (int)MEARAS_VM_VECTORS || nown < (int)MEARAS_VM_VECTORS) {
		r = ivshmem_msg_recv(p->sock, &v, &fd);
		if (r)
			return errno = -r, -1;
		if (v == 0 && nhost < (int)MEARAS_VM_VECTORS)
			p->host_fd[nhost++] = fd;
		else if (v == p->id && nown < (int)MEARAS_VM_VECTORS)
			p->own_fd[nown++] = fd;
		else if (fd >= 0)
			close(fd);
	}
	return 0;
}

/* Ring the host's doorbell (vector MEARAS_VM_VEC_HOST). */
static inline void vm_peer_ring(struct vm_peer *p)
{
	uint64_t one = 1;

	if (write(p->host_fd[MEARAS_VM_VEC_HOST], &one, sizeof(one)) < 0)
		perror("vm_peer: doorbell");
}

#endif
