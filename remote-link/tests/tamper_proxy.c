#include "tamper_proxy.h"
#include "check.h"
#include "sock_io.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Forwards what is readable on from to to, altering it when armed. */
static int pump(struct tamper_proxy *p, int from, int to, enum tamper_mode flip_mode)
{
	uint8_t buf[65536];
	ssize_t n = recv(from, buf, sizeof(buf), 0);
	if (n <= 0)
		return -1;
	bool now = __atomic_load_n(&p->armed, __ATOMIC_ACQUIRE) && !__atomic_load_n(&p->done, __ATOMIC_ACQUIRE);
	bool replay = now && flip_mode == TAMPER_FLIP_TO_SERVER && p->mode == TAMPER_REPLAY_TO_SERVER;
	if (now && p->mode == flip_mode) {
		buf[n / 2] ^= 0x20;
		__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	}
	if (send_all(to, buf, (size_t)n))
		return -1;
	if (replay) {
		__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
		return send_all(to, buf, (size_t)n);
	}
	return 0;
}

static void *proxy_main(void *arg)
{
	struct tamper_proxy *p = arg;
	struct pollfd lp = { .fd = p->listen_fd, .events = POLLIN };
	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE) && poll(&lp, 1, 50) <= 0)
		;
	if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
		return NULL;
	p->cfd = accept(p->listen_fd, NULL, NULL);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(p->target_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	p->sfd = socket(AF_INET, SOCK_STREAM, 0);
	if (p->cfd < 0 || connect(p->sfd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return NULL;
	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		if (p->mode == TAMPER_INJECT && __atomic_load_n(&p->armed, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) {
			if (send_all(p->sfd, p->inject, p->inject_len))
				break;
			__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
		}
		struct pollfd f[2] = { { .fd = p->cfd, .events = POLLIN }, { .fd = p->sfd, .events = POLLIN } };
		if (poll(f, 2, 20) < 0)
			break;
		if ((f[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    pump(p, p->cfd, p->sfd, TAMPER_FLIP_TO_SERVER))
			break;
		if ((f[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    pump(p, p->sfd, p->cfd, TAMPER_FLIP_TO_CLIENT))
			break;
	}
	/* one side ended: end the other, as a proxy does */
	shutdown(p->cfd, SHUT_RDWR);
	shutdown(p->sfd, SHUT_RDWR);
	return NULL;
}

int tamper_start(struct tamper_proxy *p, uint16_t target_port, enum tamper_mode mode)
{
	memset(p, 0, sizeof(*p));
	p->target_port = target_port;
	p->mode = mode;
	p->cfd = p->sfd = -1;
	p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(a);
	if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(p->listen_fd, 4) < 0 || getsockname(p->listen_fd, (struct sockaddr *)&a, &sl) < 0)
		return -1;
	p->port = ntohs(a.sin_port);
	return pthread_create(&p->thread, NULL, proxy_main, p) ? -1 : 0;
}

void tamper_arm(struct tamper_proxy *p)
{
	__atomic_store_n(&p->armed, 1, __ATOMIC_RELEASE);
}

int tamper_wait_done(struct tamper_proxy *p, double timeout_s)
{
	for (double t0 = check_now(); check_now() - t0 < timeout_s; usleep(1000))
		if (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE))
			return 1;
	return 0;
}

void tamper_stop(struct tamper_proxy *p)
{
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	pthread_join(p->thread, NULL);
	if (p->cfd >= 0)
		close(p->cfd);
	if (p->sfd >= 0)
		close(p->sfd);
	close(p->listen_fd);
}
