/*
 * Protocol test of the ivshmem server library without QEMU: raw clients
 * check every message of QEMU's ivshmem-spec.rst sequence.
 *   ivshmem_proto_test WORK_DIR
 */
#define _GNU_SOURCE
#include "check.h"
#include "ivshmem_msg.h"
#include "ivshmem_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define NVEC 3u
#define SHM_SIZE 65536u

struct client {
	int sock;
	int64_t id;
	int own[NVEC];			/* eventfds that interrupt this client */
	int64_t peer_ids[4];
	int peer_fds[4][NVEC];		/* eventfds to interrupt other peers */
	int npeers;
};

static struct { unsigned int conn, disc, last_conn, last_disc; } events;

static void on_conn(void *o, unsigned int id) { (void)o; events.conn++; events.last_conn = id; }
static void on_disc(void *o, unsigned int id) { (void)o; events.disc++; events.last_disc = id; }

static int recv_msg(int sock, int64_t *v, int *fd)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };

	if (poll(&p, 1, 2000) != 1)
		return -ETIMEDOUT;
	return ivshmem_msg_recv(sock, v, fd);
}

static int connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, path, strlen(path) + 1);
	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(s);
		return -1;
	}
	return s;
}

static bool fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 1000) == 1;
}

static bool kick(int fd)
{
	uint64_t one = 1;

	return write(fd, &one, sizeof(one)) == sizeof(one);
}

static bool drain_is(int fd, uint64_t want)
{
	uint64_t v = 0;

	return fd_readable(fd) && read(fd, &v, sizeof(v)) == sizeof(v) && v == want;
}

/* Receives NVEC messages "id + fd" for one peer into c. */
static bool recv_peer(struct client *c, int64_t want_id, int *fds)
{
	for (unsigned int i = 0; i < NVEC; i++) {
		int64_t v;

		if (recv_msg(c->sock, &v, &fds[i]) || v != want_id || fds[i] < 0)
			return false;
	}
	return true;
}

/* Connects and checks the setup sequence; others lists earlier peer ids. */
static bool client_join(struct ivshmem_server *srv, const char *path, struct client *c,
			const int64_t *others, int nothers, uint8_t *host_shm)
{
	int64_t v;
	int fd;
	struct stat st;

	memset(c, 0, sizeof(*c));
	c->sock = connect_to(path);
	if (c->sock < 0 || ivshmem_server_process(srv) < 1)
		return false;
	if (recv_msg(c->sock, &v, &fd) || v != 0 || fd != -1)
		return false;
	if (recv_msg(c->sock, &c->id, &fd) || fd != -1 || c->id < 1 || c->id > 0xffff)
		return false;
	if (recv_msg(c->sock, &v, &fd) || v != -1 || fd < 0)
		return false;
	/* The fd is the host's shared memory: same size, same bytes. */
	bool same = fstat(fd, &st) == 0 && st.st_size == SHM_SIZE;
	uint8_t *m = mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	close(fd);
	if (!same || m == MAP_FAILED)
		return false;
	m[100] = (uint8_t)(0x40 + c->id);
	same = host_shm[100] == (uint8_t)(0x40 + c->id);
	munmap(m, SHM_SIZE);
	if (!same)
		return false;

	c->peer_ids[0] = IVSHMEM_HOST_PEER_ID;
	if (!recv_peer(c, IVSHMEM_HOST_PEER_ID, c->peer_fds[0]))
		return false;
	c->npeers = 1;
	for (int i = 0; i < nothers; i++) {
		c->peer_ids[c->npeers] = others[i];
		if (!recv_peer(c, others[i], c->peer_fds[c->npeers++]))
			return false;
	}
	return recv_peer(c, c->id, c->own);
}

static void client_close(struct client *c)
{
	close(c->sock);
	for (unsigned int v = 0; v < NVEC; v++) {
		close(c->own[v]);
		for (int p = 0; p < c->npeers; p++)
			close(c->peer_fds[p][v]);
	}
}

static void check_bad_args(const char *work, int shm)
{
	char path[512], longpath[200];
	struct ivshmem_server *s;
	int fd;

	snprintf(path, sizeof(path), "%s/proto-bad.sock", work);
	s = ivshmem_server_new(path, shm, 0, NULL);
	CHECK_NAMED(!s && errno == EINVAL, "proto/new-zero-vectors-einval", "errno=%d", errno);
	s = ivshmem_server_new(path, shm, IVSHMEM_SERVER_MAX_VECTORS + 1, NULL);
	CHECK_NAMED(!s && errno == EINVAL, "proto/new-too-many-vectors-einval", "errno=%d", errno);
	s = ivshmem_server_new(path, -1, 1, NULL);
	CHECK_NAMED(!s && errno == EINVAL, "proto/new-bad-shm-fd-einval", "errno=%d", errno);
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	s = ivshmem_server_new(longpath, shm, 1, NULL);
	CHECK_NAMED(!s && errno == ENAMETOOLONG, "proto/new-long-path", "errno=%d", errno);
	snprintf(path, sizeof(path), "%s/proto-regular-file", work);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	close(fd);
	s = ivshmem_server_new(path, shm, 1, NULL);
	CHECK_NAMED(!s && errno == EEXIST, "proto/new-refuses-regular-file", "errno=%d", errno);
	CHECK_NAMED(access(path, F_OK) == 0, "proto/regular-file-kept", "file removed");
	unlink(path);
}

int main(int argc, char **argv)
{
	struct ivshmem_server_callbacks cb = { .peer_connected = on_conn, .peer_disconnected = on_disc };
	struct ivshmem_server *srv;
	struct client a, b;
	char path[100];
	unsigned int ids[4];
	uint64_t count;
	int64_t v;
	int shm, fd, stale;
	uint8_t *host_shm;

	if (argc != 2) {
		fprintf(stderr, "usage: %s WORK_DIR\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	shm = memfd_create("proto-shm", MFD_CLOEXEC);
	if (!CHECK_NAMED(shm >= 0 && ftruncate(shm, SHM_SIZE) == 0, "proto/shared-memory", "%s", strerror(errno)))
		return check_done();
	host_shm = mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
	check_bad_args(argv[1], shm);

	/* A stale socket file (bound, never unlinked) is replaced. */
	snprintf(path, sizeof(path), "%s/proto.sock", argv[1]);
	unlink(path);
	stale = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	bind(stale, (struct sockaddr *)&sa, sizeof(sa));
	close(stale);
	srv = ivshmem_server_new(path, shm, NVEC, &cb);
	if (!CHECK_NAMED(srv != NULL, "proto/new-replaces-stale-socket", "errno=%d", errno))
		return check_done();

	CHECK_NAMED(client_join(srv, path, &a, NULL, 0, host_shm) && a.id == 1 &&
	       events.conn == 1 && events.last_conn == 1,
	       "proto/first-client-setup-sequence", "id=%lld", (long long)a.id);
	CHECK_NAMED(ivshmem_server_host_consume(srv, 2, &count) == -EAGAIN &&
	       kick(a.peer_fds[0][2]) &&
	       fd_readable(ivshmem_server_host_eventfd(srv, 2)) &&
	       ivshmem_server_host_consume(srv, 2, &count) == 0 && count == 1,
	       "proto/guest-doorbell-reaches-host-eventfd", "no event");
	CHECK_NAMED(ivshmem_server_notify(srv, (unsigned int)a.id, 1) == 0 &&
	       drain_is(a.own[1], 1), "proto/notify-reaches-guest-eventfd", "no event");
	CHECK_NAMED(ivshmem_server_notify(srv, 77, 0) == -ENOENT &&
	       ivshmem_server_notify(srv, (unsigned int)a.id, NVEC) == -EINVAL &&
	       ivshmem_server_notify(srv, IVSHMEM_HOST_PEER_ID, 0) == -EINVAL &&
	       ivshmem_server_host_consume(srv, NVEC, &count) == -EINVAL &&
	       ivshmem_server_host_eventfd(srv, NVEC) == -EINVAL,
	       "proto/bad-vector-or-peer-refused", "accepted");

	int64_t earlier[1] = { a.id };
	CHECK_NAMED(client_join(srv, path, &b, earlier, 1, host_shm) && b.id == 2 &&
	       events.conn == 2, "proto/second-client-setup-sequence",
	       "id=%lld", (long long)b.id);
	bool announced = true;
	for (unsigned int i = 0; i < NVEC && announced; i++) {
		announced = recv_msg(a.sock, &v, &fd) == 0 && v == b.id && fd >= 0;
		a.peer_fds[a.npeers][i] = fd;
	}
	a.peer_ids[a.npeers++] = b.id;
	CHECK_NAMED(announced, "proto/existing-client-told-of-new-peer", "missing");
	CHECK_NAMED(kick(b.peer_fds[1][0]) && drain_is(a.own[0], 1) &&
	       kick(a.peer_fds[1][2]) && drain_is(b.own[2], 1),
	       "proto/peer-to-peer-eventfds", "no event");
	CHECK_NAMED(ivshmem_server_peer_ids(srv, ids, 4) == 2, "proto/two-peers-listed", "wrong count");

	client_close(&b);
	CHECK_NAMED(ivshmem_server_process(srv) >= 1 && events.disc == 1 &&
	       events.last_disc == (unsigned int)b.id, "proto/disconnect-callback",
	       "disc=%u", events.disc);
	CHECK_NAMED(recv_msg(a.sock, &v, &fd) == 0 && v == b.id && fd == -1,
	       "proto/disconnect-announced-without-fd", "v=%lld fd=%d", (long long)v, fd);
	CHECK_NAMED(ivshmem_server_peer_ids(srv, ids, 4) == 1 && ids[0] == a.id,
	       "proto/one-peer-left", "wrong list");
	CHECK_NAMED(ivshmem_server_notify(srv, (unsigned int)b.id, 0) == -ENOENT,
	       "proto/notify-departed-peer-enoent", "accepted");

	ivshmem_server_free(srv);
	CHECK_NAMED(recv_msg(a.sock, &v, &fd) == -ECONNRESET && access(path, F_OK) != 0,
	       "proto/free-closes-clients-and-socket", "still open");
	client_close(&a);
	munmap(host_shm, SHM_SIZE);
	close(shm);
	return check_done();
}
