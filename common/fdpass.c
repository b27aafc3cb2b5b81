// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mearas/fdpass.h"

int mearas_send_all(int sock, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(sock, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int mearas_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MEARAS_FDPASS_MAX)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds < 0 || nfds > MEARAS_FDPASS_MAX)
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

int mearas_recv_fds(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MEARAS_FDPASS_MAX)];
		struct cmsghdr align;
	} ctl;
	size_t got = 0;

	*nfds = 0;
	while (got < len) {
		struct iovec iov = { .iov_base = (char *)buf + got, .iov_len = len - got };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
		struct cmsghdr *c;
		ssize_t n;

		if (timeout_ms >= 0) {
			struct pollfd p = { .fd = sock, .events = POLLIN };
			int r = poll(&p, 1, timeout_ms);

			if (r == 0)
				return -ETIMEDOUT;
			if (r < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
		}
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
				int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				const int *in = (const int *)CMSG_DATA(c);

				for (int i = 0; i < k; i++) {
					if (*nfds < maxfds)
						fds[(*nfds)++] = in[i];
					else
						close(in[i]);
				}
			}
		}
		if (msg.msg_flags & MSG_CTRUNC)
			return -EMSGSIZE;
		got += (size_t)n;
	}
	return 0;
}
