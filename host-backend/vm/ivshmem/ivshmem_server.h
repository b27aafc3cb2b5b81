/*
 * Host side of QEMU's ivshmem-doorbell server protocol
 * (QEMU docs/specs/ivshmem-spec.rst, protocol version 0).
 *
 * The server listens on a UNIX socket that QEMU's ivshmem-doorbell device
 * connects to (-chardev socket,path=SOCK or libvirt <server path=SOCK/>),
 * hands each guest the shared memory fd (its BAR2) and eventfds, and takes
 * part as a peer of its own, the host, with id IVSHMEM_HOST_PEER_ID: a guest
 * doorbell write of (IVSHMEM_HOST_PEER_ID << 16 | v) makes host eventfd v
 * readable, and ivshmem_server_notify(peer, v) raises MSI-X vector v in the
 * guest with that peer id. Guests get ids 1..65535.
 *
 * Single event loop: put ivshmem_server_poll_fd() in the caller's poll/epoll
 * set and call ivshmem_server_process() when it is readable. notify() and
 * peer_ids() may be called from other threads. Errors are negative errno.
 */
#ifndef MEARAS_IVSHMEM_SERVER_H
#define MEARAS_IVSHMEM_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define IVSHMEM_HOST_PEER_ID 0u
#define IVSHMEM_MAX_PEER_ID 0xffffu
#define IVSHMEM_SERVER_MAX_VECTORS 64u

struct ivshmem_server;

struct ivshmem_server_callbacks {
	/* Called from ivshmem_server_process(), without internal locks held. */
	void (*peer_connected)(void *opaque, unsigned int peer_id);
	void (*peer_disconnected)(void *opaque, unsigned int peer_id);
	/*
	 * Optional: asked for every new connection before anything is sent to
	 * it (no shared memory fd, no eventfds), with the connecting process's
	 * credentials (SO_PEERCRED) and how many guests are attached. Non-zero
	 * refuses: the connection is closed. NULL admits everyone.
	 */
	int (*admit)(void *opaque, pid_t pid, uid_t uid, gid_t gid, size_t npeers);
	void *opaque;
};

/*
 * Listens on socket_path (a stale socket there is replaced; any other file
 * is an error, EEXIST). shm_fd is duplicated; the caller keeps its own.
 * nvectors (1..IVSHMEM_SERVER_MAX_VECTORS) must equal the QEMU device's
 * "vectors" (libvirt <msi vectors=N/>), else QEMU rejects the extra fds.
 * cb may be NULL. Returns NULL with errno set on failure.
 */
struct ivshmem_server *ivshmem_server_new(const char *socket_path, int shm_fd,
					  unsigned int nvectors,
					  const struct ivshmem_server_callbacks *cb);

/* Disconnects every peer, removes the socket file, frees everything. */
void ivshmem_server_free(struct ivshmem_server *srv);

/* An fd that becomes readable when ivshmem_server_process() has work. */
int ivshmem_server_poll_fd(const struct ivshmem_server *srv);

/*
 * Handles pending connections and disconnections without blocking.
 * Returns the number of events handled (>= 0) or a negative errno.
 */
int ivshmem_server_process(struct ivshmem_server *srv);

/*
 * Host eventfd (non-blocking) that a guest's doorbell on vector makes
 * readable; -EINVAL for a bad vector. Owned by the server.
 */
int ivshmem_server_host_eventfd(const struct ivshmem_server *srv,
				unsigned int vector);

/*
 * Reads and clears the host eventfd of vector: *count gets the number of
 * doorbells since the last call. 0, -EAGAIN if none, -EINVAL bad vector.
 */
int ivshmem_server_host_consume(struct ivshmem_server *srv, unsigned int vector,
				uint64_t *count);

/*
 * Raises MSI-X vector in guest peer_id. -ENOENT: no such guest connected;
 * -EINVAL: vector >= nvectors or peer_id is the host's.
 */
int ivshmem_server_notify(struct ivshmem_server *srv, unsigned int peer_id,
			  unsigned int vector);

/*
 * A duplicate (close-on-exec) of the eventfd that raises vector in guest
 * peer_id, for a process of the caller's that notifies that guest on its
 * own (ivshmem_server_notify without the server). The caller closes it.
 * -ENOENT: no such guest; -EINVAL: bad vector or peer.
 */
int ivshmem_server_peer_eventfd(struct ivshmem_server *srv, unsigned int peer_id,
				unsigned int vector);

/* Writes up to max connected guest ids; returns how many are connected. */
size_t ivshmem_server_peer_ids(struct ivshmem_server *srv, unsigned int *ids,
			       size_t max);

#endif /* MEARAS_IVSHMEM_SERVER_H */
