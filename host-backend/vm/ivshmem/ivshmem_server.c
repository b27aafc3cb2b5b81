#define _GNU_SOURCE
#include "ivshmem_server.h"
#include "ivshmem_msg.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define IVSHMEM_PROTOCOL_VERSION 0
#define LISTEN_TAG UINT64_MAX
#define SEND_TIMEOUT_S 2

struct ivshmem_peer {
	unsigned int id;
	int sock;			/* -1 for the host peer */
	int eventfds[IVSHMEM_SERVER_MAX_VECTORS];
};

struct ivshmem_server {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int listen_fd;
	int epoll_fd;
	int shm_fd;
	unsigned int nvectors;
	struct ivshmem_server_callbacks cb;
	struct ivshmem_peer host;
	pthread_mutex_t lock;		/* guards peers, npeers */
	struct ivshmem_peer **peers;	/* connected guests */
	size_t npeers, cap;
	unsigned int next_id;
};

static void close_eventfds(struct ivshmem_peer *p, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		if (p->eventfds[i] >= 0)
			close(p->eventfds[i]);
		p->eventfds[i] = -1;
	}
}

static int open_eventfds(struct ivshmem_peer *p, unsigned int n)
{
	for (unsigned int i = 0; i < IVSHMEM_SERVER_MAX_VECTORS; i++)
		p->eventfds[i] = -1;
	for (unsigned int i = 0; i < n; i++) {
		p->eventfds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (p->eventfds[i] < 0) {
			int err = -errno;

			close_eventfds(p, i);
			return err;
		}
	}
	return 0;
}

/* Tells sock about peer p: its id once per vector, each with one eventfd. */
static int announce_peer(int sock, const struct ivshmem_peer *p, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		int err = ivshmem_msg_send(sock, p->id, p->eventfds[i]);

		if (err)
			return err;
	}
	return 0;
}

static struct ivshmem_peer *find_peer(struct ivshmem_server *srv, unsigned int id,
				      size_t *index)
{
	for (size_t i = 0; i < srv->npeers; i++) {
		if (srv->peers[i]->id == id) {
			if (index)
				*index = i;
			return srv->peers[i];
		}
	}
	return NULL;
}

static int alloc_id(struct ivshmem_server *srv, unsigned int *id)
{
	for (unsigned int tries = 0; tries < IVSHMEM_MAX_PEER_ID; tries++) {
		unsigned int cand = srv->next_id;

		srv->next_id = cand == IVSHMEM_MAX_PEER_ID ? 1 : cand + 1;
		if (!find_peer(srv, cand, NULL)) {
			*id = cand;
			return 0;
		}
	}
	return -EUSERS;
}

static void free_peer(struct ivshmem_peer *p, unsigned int nvectors)
{
	close_eventfds(p, nvectors);
	if (p->sock >= 0)
		close(p->sock);
	free(p);
}

/* Unlinks peer at index, tells the others. Caller holds lock. */
static void drop_peer_locked(struct ivshmem_server *srv, size_t index)
{
	struct ivshmem_peer *p = srv->peers[index];

	srv->peers[index] = srv->peers[--srv->npeers];
	epoll_ctl(srv->epoll_fd, EPOLL_CTL_DEL, p->sock, NULL);
	for (size_t i = 0; i < srv->npeers; i++)
		ivshmem_msg_send(srv->peers[i]->sock, p->id, -1);
	free_peer(p, srv->nvectors);
}

/* Sends the whole setup sequence of the protocol to a new client. */
static int send_setup(struct ivshmem_server *srv, struct ivshmem_peer *np)
{
	int err;

	err = ivshmem_msg_send(np->sock, IVSHMEM_PROTOCOL_VERSION, -1);
	if (!err)
		err = ivshmem_msg_send(np->sock, np->id, -1);
	if (!err)
		err = ivshmem_msg_send(np->sock, -1, srv->shm_fd);
	if (!err)
		err = announce_peer(np->sock, &srv->host, srv->nvectors);
	for (size_t i = 0; !err && i < srv->npeers; i++)
		err = announce_peer(np->sock, srv->peers[i], srv->nvectors);
	if (!err)
		err = announce_peer(np->sock, np, srv->nvectors);
	return err;
}

/*
 * Accepts one client: 0, 1 when the admit callback refused it (closed), or
 * a negative errno. Existing guests that cannot be told about it are
 * dropped; their ids go to dropped (*ndropped of them, caller frees).
 */
static int accept_one(struct ivshmem_server *srv, unsigned int *new_id,
		      unsigned int **dropped, size_t *ndropped)
{
	struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
	struct ivshmem_peer *np;
	int sock, err;

	sock = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (sock < 0)
		return -errno;
	if (srv->cb.admit) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		size_t npeers;

		pthread_mutex_lock(&srv->lock);
		npeers = srv->npeers;
		pthread_mutex_unlock(&srv->lock);
		/* without credentials nobody is admitted */
		if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred) ||
		    srv->cb.admit(srv->cb.opaque, cred.pid, cred.uid, cred.gid, npeers)) {
			close(sock);
			return 1;
		}
	}
	/* A client that stops reading must not stall the host's loop. */
	setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

	np = calloc(1, sizeof(*np));
	if (!np) {
		close(sock);
		return -ENOMEM;
	}
	np->sock = sock;
	err = open_eventfds(np, srv->nvectors);
	if (err) {
		np->sock = -1;
		close(sock);
		free(np);
		return err;
	}

	pthread_mutex_lock(&srv->lock);
	err = alloc_id(srv, &np->id);
	if (!err && srv->npeers == srv->cap) {
		size_t cap = srv->cap ? srv->cap * 2 : 8;
		struct ivshmem_peer **grown = realloc(srv->peers, cap * sizeof(*grown));

		if (grown) {
			srv->peers = grown;
			srv->cap = cap;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err)
		err = send_setup(srv, np);
	if (!err) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP,
					  .data.u64 = np->id };

		if (epoll_ctl(srv->epoll_fd, EPOLL_CTL_ADD, sock, &ev) < 0)
			err = -errno;
	}
	if (err) {
		pthread_mutex_unlock(&srv->lock);
		free_peer(np, srv->nvectors);
		return err;
	}
	/* Existing guests learn the newcomer's eventfds; drop broken ones. */
	*dropped = NULL;
	*ndropped = 0;
	for (size_t i = 0; i < srv->npeers;) {
		if (!announce_peer(srv->peers[i]->sock, np, srv->nvectors)) {
			i++;
			continue;
		}
		if (!*dropped)
			*dropped = calloc(srv->npeers, sizeof(**dropped));
		if (*dropped)
			(*dropped)[(*ndropped)++] = srv->peers[i]->id;
		drop_peer_locked(srv, i);
	}
	srv->peers[srv->npeers++] = np;
	*new_id = np->id;
	pthread_mutex_unlock(&srv->lock);
	return 0;
}

/* The protocol is one-way: any readable event is EOF, an error or noise. */
static bool client_gone(int sock, uint32_t events)
{
	char buf[256];
	ssize_t n;

	if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))
		return true;
	n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

int ivshmem_server_process(struct ivshmem_server *srv)
{
	struct epoll_event evs[16];
	int handled = 0;
	int n;

	n = epoll_wait(srv->epoll_fd, evs, 16, 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;

	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 == LISTEN_TAG) {
			unsigned int id = 0, *dropped = NULL;
			size_t ndropped = 0;
			int r;

			while ((r = accept_one(srv, &id, &dropped, &ndropped)) >= 0) {
				handled++;
				if (r == 1)
					continue;
				for (size_t d = 0; d < ndropped; d++) {
					if (srv->cb.peer_disconnected)
						srv->cb.peer_disconnected(srv->cb.opaque,
									  dropped[d]);
				}
				free(dropped);
				if (srv->cb.peer_connected)
					srv->cb.peer_connected(srv->cb.opaque, id);
			}
			continue;
		}

		unsigned int id = (unsigned int)evs[i].data.u64;
		struct ivshmem_peer *p;
		size_t index;
		bool gone = false;

		pthread_mutex_lock(&srv->lock);
		p = find_peer(srv, id, &index);
		if (p && client_gone(p->sock, evs[i].events)) {
			drop_peer_locked(srv, index);
			gone = true;
		}
		pthread_mutex_unlock(&srv->lock);
		if (gone) {
			handled++;
			if (srv->cb.peer_disconnected)
				srv->cb.peer_disconnected(srv->cb.opaque, id);
		}
	}
	return handled;
}

static int listen_on(const char *path, size_t len)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (unlink(path) < 0)
			return -errno;
	}
	memcpy(addr.sun_path, path, len + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fd, 16) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

struct ivshmem_server *ivshmem_server_new(const char *socket_path, int shm_fd,
					  unsigned int nvectors,
					  const struct ivshmem_server_callbacks *cb)
{
	struct ivshmem_server *srv;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = LISTEN_TAG };
	size_t len;
	int err;

	if (!socket_path || shm_fd < 0 || nvectors == 0 ||
	    nvectors > IVSHMEM_SERVER_MAX_VECTORS) {
		errno = EINVAL;
		return NULL;
	}
	len = strlen(socket_path);
	if (len == 0 || len >= sizeof(srv->path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return NULL;
	memcpy(srv->path, socket_path, len + 1);
	srv->listen_fd = srv->epoll_fd = -1;
	srv->nvectors = nvectors;
	srv->next_id = 1;
	srv->host.id = IVSHMEM_HOST_PEER_ID;
	srv->host.sock = -1;
	if (cb)
		srv->cb = *cb;
	pthread_mutex_init(&srv->lock, NULL);

	srv->shm_fd = fcntl(shm_fd, F_DUPFD_CLOEXEC, 0);
	if (srv->shm_fd < 0) {
		err = -errno;
		goto fail_nofds;
	}
	err = open_eventfds(&srv->host, nvectors);
	if (err)
		goto fail_shm;
	srv->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (srv->epoll_fd < 0) {
		err = -errno;
		goto fail_host;
	}
	srv->listen_fd = listen_on(socket_path, len);
	if (srv->listen_fd < 0) {
		err = srv->listen_fd;
		goto fail_epoll;
	}
	if (epoll_ctl(srv->epoll_fd, EPOLL_CTL_ADD, srv->listen_fd, &ev) < 0) {
		err = -errno;
		close(srv->listen_fd);
		unlink(srv->path);
		goto fail_epoll;
	}
	return srv;

fail_epoll:
	close(srv->epoll_fd);
fail_host:
	close_eventfds(&srv->host, nvectors);
fail_shm:
	close(srv->shm_fd);
fail_nofds:
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	errno = -err;
	return NULL;
}

void ivshmem_server_free(struct ivshmem_server *srv)
{
	if (!srv)
		return;
	for (size_t i = 0; i < srv->npeers; i++)
		free_peer(srv->peers[i], srv->nvectors);
	free(srv->peers);
	close(srv->listen_fd);
	unlink(srv->path);
	close(srv->epoll_fd);
	close_eventfds(&srv->host, srv->nvectors);
	close(srv->shm_fd);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}

int ivshmem_server_poll_fd(const struct ivshmem_server *srv)
{
	return srv->epoll_fd;
}

int ivshmem_server_host_eventfd(const struct ivshmem_server *srv,
				unsigned int vector)
{
	return vector < srv->nvectors ? srv->host.eventfds[vector] : -EINVAL;
}

int ivshmem_server_host_consume(struct ivshmem_server *srv, unsigned int vector,
				uint64_t *count)
{
	uint64_t v;

	if (vector >= srv->nvectors)
		return -EINVAL;
	if (read(srv->host.eventfds[vector], &v, sizeof(v)) != (ssize_t)sizeof(v))
		return errno == EAGAIN ? -EAGAIN : -errno;
	if (count)
		*count = v;
	return 0;
}

int ivshmem_server_notify(struct ivshmem_server *srv, unsigned int peer_id,
			  unsigned int vector)
{
	const uint64_t one = 1;
	struct ivshmem_peer *p;
	int err = 0;

	if (vector >= srv->nvectors || peer_id == IVSHMEM_HOST_PEER_ID ||
	    peer_id > IVSHMEM_MAX_PEER_ID)
		return -EINVAL;
	pthread_mutex_lock(&srv->lock);
	p = find_peer(srv, peer_id, NULL);
	if (!p)
		err = -ENOENT;
	else if (write(p->eventfds[vector], &one, sizeof(one)) != (ssize_t)sizeof(one))
		err = errno == EAGAIN ? 0 : -errno; /* counter full: already pending */
	pthread_mutex_unlock(&srv->lock);
	return err;
}

int ivshmem_server_peer_eventfd(struct ivshmem_server *srv, unsigned int peer_id,
				unsigned int vector)
{
	struct ivshmem_peer *p;
	int fd;

	if (vector >= srv->nvectors || peer_id == IVSHMEM_HOST_PEER_ID ||
	    peer_id > IVSHMEM_MAX_PEER_ID)
		return -EINVAL;
	pthread_mutex_lock(&srv->lock);
	p = find_peer(srv, peer_id, NULL);
	fd = !p ? -ENOENT : fcntl(p->eventfds[vector], F_DUPFD_CLOEXEC, 3);
	if (fd == -1)
		fd = -errno;
	pthread_mutex_unlock(&srv->lock);
	return fd;
}

size_t ivshmem_server_peer_ids(struct ivshmem_server *srv, unsigned int *ids,
			       size_t max)
{
	size_t n;

	pthread_mutex_lock(&srv->lock);
	n = srv->npeers;
	for (size_t i = 0; i < n && i < max; i++)
		ids[i] = srv->peers[i]->id;
	pthread_mutex_unlock(&srv->lock);
	return n;
}
