// Raw TCP throughput over loopback (or to a given address), as the yardstick
// for remote vGPU copies: one connection, 4 MiB writes, TCP_NODELAY, like
// remote-link. Prints "METRIC raw_tcp_gbps GB/s X".
//   tcp_bench [MiB]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF (4u << 20)

static int listen_fd;

static void *sink(void *arg)
{
	char *buf = malloc(BUF);
	int c = accept(listen_fd, NULL, NULL);

	(void)arg;
	while (buf && c >= 0 && read(c, buf, BUF) > 0)
		;
	free(buf);
	if (c >= 0)
		close(c);
	return NULL;
}

int main(int argc, char **argv)
{
	size_t total = (size_t)(argc > 1 ? atoi(argv[1]) : 2048) << 20, sent = 0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	char *buf = calloc(1, BUF);
	struct timespec t0, t1;
	pthread_t t;
	int one = 1, s;

	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (!buf || listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) || listen(listen_fd, 1) ||
	    getsockname(listen_fd, (struct sockaddr *)&a, &len)) {
		perror("tcp_bench");
		return 1;
	}
	pthread_create(&t, NULL, sink, NULL);
	s = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (sent < total) {
		ssize_t n = write(s, buf, BUF);

		if (n <= 0) {
			perror("write");
			return 1;
		}
		sent += (size_t)n;
	}
	close(s);
	pthread_join(t, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("METRIC raw_tcp_gbps GB/s %.6f\n",
	       (double)sent / ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9) / 1e9);
	free(buf);
	return 0;
}
