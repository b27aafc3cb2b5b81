#include "bench_raw.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int raw_sink_listen(const char *bind_addr, uint16_t port, uint16_t *port_out)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	if (inet_pton(AF_INET, bind_addr, &a.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	socklen_t sl = sizeof(a);
	getsockname(fd, (struct sockaddr *)&a, &sl);
	if (port_out)
		*port_out = ntohs(a.sin_port);
	return fd;
}

int raw_sink_serve(int listen_fd, int sessions)
{
	const size_t bufsz = 1u << 20;
	uint8_t *buf = malloc(bufsz);
	if (!buf)
		return -1;
	for (int s = 0; s < sessions; s++) {
		int fd = accept(listen_fd, NULL, NULL);
		if (fd < 0)
			continue;
		uint64_t want = 0;
		size_t got = 0;
		uint8_t hdr[8];
		while (got < 8) {
			ssize_t n = recv(fd, hdr + got, 8 - got, 0);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		memcpy(&want, hdr, 8);
		uint64_t total = 0;
		while (got == 8 && total < want) {
			ssize_t n = recv(fd, buf, bufsz, 0);
			if (n <= 0)
				break;
			total += (uint64_t)n;
		}
		uint8_t ack = total == want;
		if (send(fd, &ack, 1, MSG_NOSIGNAL) != 1)
			ack = 0;
		close(fd);
	}
	free(buf);
	return 0;
}

double raw_send(const char *host, uint16_t port, size_t bytes, size_t chunk)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	uint8_t *data = malloc(chunk);
	if (!data) {
		close(fd);
		return -1;
	}
	memset(data, 0x5a, chunk);
	uint64_t want = bytes;
	double t0 = now_s();
	int ok = send(fd, &want, 8, MSG_NOSIGNAL) == 8;
	for (size_t off = 0; ok && off < bytes; off += chunk) {
		size_t n = bytes - off < chunk ? bytes - off : chunk;
		for (size_t done = 0; ok && done < n;) {
			ssize_t w = send(fd, data + done, n - done, MSG_NOSIGNAL);
			ok = w > 0;
			if (ok)
				done += (size_t)w;
		}
	}
	uint8_t ack = 0;
	ok = ok && recv(fd, &ack, 1, 0) == 1 && ack == 1;
	double dt = now_s() - t0;
	free(data);
	close(fd);
	return ok ? (double)bytes / dt / 1e6 : -1;
}
