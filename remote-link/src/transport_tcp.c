#include "link_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mearas/hoptrace.h"

int link_tcp_set_options(int fd, uint32_t send_timeout_ms)
{
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return MEARAS_LINK_E_SYS;
	/* A writer blocked on a dead peer gives up after the dead bound. */
	struct timeval tv = { .tv_sec = send_timeout_ms / 1000,
			      .tv_usec = (suseconds_t)(send_timeout_ms % 1000) * 1000 };
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return MEARAS_LINK_E_SYS;
	unsigned int user_timeout = send_timeout_ms;
	if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout)) < 0)
		return MEARAS_LINK_E_SYS;
	return MEARAS_LINK_OK;
}

static int connect_one(const struct addrinfo *ai, uint32_t timeout_ms)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			ai->ai_protocol);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
		goto fail;
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	if (poll(&pfd, 1, (int)timeout_ms) != 1)
		goto fail;
	int err = 0;
	socklen_t elen = sizeof(err);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err)
		goto fail;
	/* Back to blocking: reads go through poll, writes are bounded by SO_SNDTIMEO. */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

int link_tcp_connect(const char *host, uint16_t port, uint32_t timeout_ms, int *out_fd)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char service[8];
	snprintf(service, sizeof(service), "%u", (unsigned)port);
	if (getaddrinfo(host, service, &hints, &res) != 0 || !res)
		return MEARAS_LINK_E_CONNECT;
	int fd = -1;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
		fd = connect_one(ai, timeout_ms);
	freeaddrinfo(res);
	if (fd < 0)
		return MEARAS_LINK_E_CONNECT;
	*out_fd = fd;
	return MEARAS_LINK_OK;
}

int link_tcp_write(struct link_tcp_transport *tt, const struct iovec *iov_in, int iovcnt)
{
	struct iovec local[64];
	if (iovcnt > 64)
		return MEARAS_LINK_E_INVAL;
	memcpy(local, iov_in, sizeof(*local) * (size_t)iovcnt);
	struct iovec *iov = local;
	/* before any byte is queued: no reading of "empty" is kept from now on */
	__atomic_add_fetch(&tt->begun, 1, __ATOMIC_SEQ_CST);
	int rc = MEARAS_LINK_OK;
	while (iovcnt > 0) {
		if (__atomic_load_n(&tt->down, __ATOMIC_ACQUIRE)) {
			rc = MEARAS_LINK_E_BROKEN;
			break;
		}
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)iovcnt };
		ssize_t n = sendmsg(tt->fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = MEARAS_LINK_E_BROKEN; /* includes EAGAIN from SO_SNDTIMEO */
			break;
		}
		size_t left = (size_t)n;
		while (iovcnt > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	__atomic_add_fetch(&tt->ended, 1, __ATOMIC_RELEASE);
	return rc;
}

static int tcp_send_iov(struct link_transport *t, const struct iovec *iov, int iovcnt)
{
	mearas_hop(MEARAS_HOP_send_start);
	int rc = link_tcp_write((struct link_tcp_transport *)t, iov, iovcnt);
	if (!rc)
		mearas_hop(MEARAS_HOP_send_end);
	return rc;
}

bool link_tcp_transport_tx_clear(struct link_transport *t)
{
	struct link_tcp_transport *tt = (struct link_tcp_transport *)t;
	/* begun, then ended, both before the reading: the reading is kept only
	 * if every write begun had ended, and any write begun after the load
	 * of b (before or after the reading) makes it stale */
	uint64_t b = __atomic_load_n(&tt->begun, __ATOMIC_SEQ_CST);
	uint64_t e = __atomic_load_n(&tt->ended, __ATOMIC_ACQUIRE);
	int queued = 0;

	if (__atomic_load_n(&tt->down, __ATOMIC_ACQUIRE))
		return false;
	if (__atomic_load_n(&tt->clear_at, __ATOMIC_ACQUIRE) == b + 1)
		return true;
	__atomic_add_fetch(&tt->looks, 1, __ATOMIC_RELAXED);
	if (ioctl(tt->fd, SIOCOUTQ, &queued) != 0 || queued != 0)
		return false;
	if (e == b)
		__atomic_store_n(&tt->clear_at, b + 1, __ATOMIC_RELEASE);
	return true;
}

/* The spinning reader, after an empty receive: if it received since its
 * last look (the peer's data carries its acknowledgement of ours), it
 * reads the send queue now, so that the next tx_clear (the reply or the
 * next call about to go out on this thread) is answered without a system
 * call on the call's path. Not after a write: the peer acknowledges it
 * with its answer, and a stream of writes (launches) would pay a second
 * reading per write. */
static void tx_look_ahead(struct link_tcp_transport *tt)
{
	uint64_t reads = __atomic_load_n(&tt->reads, __ATOMIC_RELAXED);

	if (reads == __atomic_load_n(&tt->looked_at, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&tt->looked_at, reads, __ATOMIC_RELAXED);
	(void)link_tcp_transport_tx_clear(&tt->base);
}

int link_tcp_read(struct link_tcp_transport *tt, void *buf, size_t len, uint32_t timeout_ms)
{
	if (__atomic_load_n(&tt->down, __ATOMIC_ACQUIRE))
		return MEARAS_LINK_E_BROKEN;
	if (len > (1u << 30))
		len = 1u << 30;
	/* data usually waits already (a frame body after its header): poll only when not */
	ssize_t n = recv(tt->fd, buf, len, MSG_DONTWAIT);
	if (n > 0) {
		__atomic_add_fetch(&tt->reads, 1, __ATOMIC_RELAXED);
		return (int)n;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		return MEARAS_LINK_E_BROKEN;
	/* a spinning reader (no wait) looks again with its next recv: a poll
	 * between would double the system calls of each empty look */
	if (!timeout_ms) {
		tx_look_ahead(tt);
		return 0;
	}
	struct pollfd pfd = { .fd = tt->fd, .events = POLLIN };
	int pr = poll(&pfd, 1, (int)timeout_ms);
	if (pr < 0)
		return errno == EINTR ? 0 : MEARAS_LINK_E_BROKEN;
	if (pr == 0)
		return 0;
	n = recv(tt->fd, buf, len, MSG_DONTWAIT);
	if (n > 0) {
		__atomic_add_fetch(&tt->reads, 1, __ATOMIC_RELAXED);
		return (int)n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return MEARAS_LINK_E_BROKEN; /* EOF or reset */
}

static int tcp_recv(struct link_transport *t, void *buf, size_t len, uint32_t timeout_ms)
{
	return link_tcp_read((struct link_tcp_transport *)t, buf, len, timeout_ms);
}

void link_tcp_transport_shutdown(struct link_transport *t)
{
	struct link_tcp_transport *tt = (struct link_tcp_transport *)t;
	__atomic_store_n(&tt->down, 1, __ATOMIC_RELEASE);
	shutdown(tt->fd, SHUT_RDWR);
}

static void tcp_destroy(struct link_transport *t)
{
	struct link_tcp_transport *tt = (struct link_tcp_transport *)t;
	close(tt->fd);
	free(tt);
}

LINK_TRANSPORT_OPS(tcp, "tcp", link_tcp_transport_shutdown, link_tcp_transport_tx_clear);

int link_tcp_transport_create(int fd, const struct mearas_link_config *cfg,
			      struct link_transport **out)
{
	int rc = link_tcp_set_options(fd, cfg->dead_ms);
	if (rc)
		return rc;
	struct link_tcp_transport *tt = calloc(1, sizeof(*tt));
	if (!tt)
		return MEARAS_LINK_E_NOMEM;
	tt->base.ops = &tcp_ops;
	tt->base.rx_spin_ns = (uint64_t)cfg->rx_spin_us * 1000ull;
	snprintf(tt->base.security, sizeof(tt->base.security),
		 "UNENCRYPTED (link encryption off: clear text, no integrity)");
	tt->fd = fd;
	*out = &tt->base;
	return MEARAS_LINK_OK;
}
