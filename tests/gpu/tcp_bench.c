// Raw TCP throughput, the yardstick for remote vGPU copies: one connection,
// 4 MiB writes, TCP_NODELAY, like remote-link. The sender times from its first
// write until the sink has read everything (the sink closes on EOF). Prints
// "METRIC raw_tcp_gbps GB/s X".
//   tcp_bench [--buffer-mb N] [MiB]                     sender and sink over loopback
//   tcp_bench [--buffer-mb N] --listen ADDR:PORT        sink: one connection, then exit
//   tcp_bench [--buffer-mb N] --connect ADDR:PORT [MiB] sender (retries connecting for 10 s)
// --buffer-mb: the sender writes from, and the sink reads into, a buffer of
// that size, in 4 MiB pieces, going round it (default 4: one piece, which
// stays in the CPU caches). A remote copy of 256 MiB moves bytes between two
// buffers of 256 MiB that do not fit the caches: the fair yardstick for it
// is --buffer-mb 256.
// With --listen and --connect the two ends can live in different network
// namespaces (scripts/gpu-remote.sh).
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

static size_t buf_bytes = BUF; /* --buffer-mb */

/* a buffer of buf_bytes, touched (its pages exist before timing) */
static char *buffer(int fill)
{
	char *b = malloc(buf_bytes);

	if (b)
		memset(b, fill, buf_bytes);
	return b;
}

/* the next piece of the buffer at *off, going round it */
static size_t piece(size_t *off)
{
	if (*off >= buf_bytes)
		*off = 0;
	return buf_bytes - *off < BUF ? buf_bytes - *off : BUF;
}

static int sink(int listen_fd)
{
	char *buf = buffer(0);
	int c = accept(listen_fd, NULL, NULL);
	size_t off = 0;
	ssize_t n;

	if (!buf || c < 0) {
		perror("tcp_bench: accept");
		free(buf);
		return 1;
	}
	while ((n = read(c, buf + off, piece(&off))) > 0)
		off += (size_t)n;
	free(buf);
	close(c);
	return 0;
}

static void *sink_thread(void *arg)
{
	sink(*(int *)arg);
	return NULL;
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	*a = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 && atoi(colon + 1) > 0 ? 0 : -1;
}

static int listen_on(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)a, sizeof(*a)) || listen(fd, 1) ||
	    getsockname(fd, (struct sockaddr *)a, &len)) {
		perror("tcp_bench: listen");
		return -1;
	}
	return fd;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

// sends total bytes to a, waits for the sink's EOF; GB/s or < 0
static double send_to(const struct sockaddr_in *a, size_t total, double retry_s)
{
	char *buf = buffer(1);
	size_t sent = 0, off = 0;
	double t0, deadline = now() + retry_s;
	int one = 1, s = -1;

	while (buf) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s >= 0 && connect(s, (const struct sockaddr *)a, sizeof(*a)) == 0)
			break;
		if (s >= 0)
			close(s);
		s = -1;
		if (now() > deadline)
			break;
		usleep(50000);
	}
	if (s < 0) {
		perror("tcp_bench: connect");
		free(buf);
		return -1;
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	t0 = now();
	while (sent < total) {
		ssize_t n = write(s, buf + off, piece(&off));

		if (n <= 0) {
			perror("tcp_bench: write");
			free(buf);
			return -1;
		}
		sent += (size_t)n;
		off += (size_t)n;
	}
	shutdown(s, SHUT_WR);
	while (read(s, buf, BUF) > 0) // the sink closes once it has read everything
		;
	t0 = now() - t0;
	close(s);
	free(buf);
	return (double)sent / t0 / 1e9;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const char *mib;
	double gbps;
	int fd;

	if (argc > 2 && !strcmp(argv[1], "--buffer-mb")) {
		if (atoi(argv[2]) <= 0 || atoi(argv[2]) > 65536) {
			fprintf(stderr, "tcp_bench: --buffer-mb 1..65536\n");
			return 2;
		}
		buf_bytes = (size_t)atoi(argv[2]) << 20;
		argv += 2;
		argc -= 2;
	}
	mib = argc > 1 ? argv[1] : NULL;

	if (argc > 1 && !strcmp(argv[1], "--listen")) {
		if (argc != 3 || parse_addr(argv[2], &a)) {
			fprintf(stderr, "usage: tcp_bench --listen ADDR:PORT\n");
			return 2;
		}
		fd = listen_on(&a);
		return fd < 0 ? 1 : sink(fd);
	}
	if (argc > 1 && !strcmp(argv[1], "--connect")) {
		if (argc < 3 || argc > 4 || parse_addr(argv[2], &a) || (argc > 3 && atoi(argv[3]) <= 0)) {
			fprintf(stderr, "usage: tcp_bench --connect ADDR:PORT [MiB]\n");
			return 2;
		}
		mib = argc > 3 ? argv[3] : NULL;
		gbps = send_to(&a, (size_t)(mib ? atoi(mib) : 2048) << 20, 10);
	} else {
		pthread_t t;

		if (argc > 2 || (mib && atoi(mib) <= 0)) {
			fprintf(stderr, "usage: tcp_bench [MiB]\n");
			return 2;
		}
		fd = listen_on(&a); // port 0: the kernel picks one
		if (fd < 0)
			return 1;
		pthread_create(&t, NULL, sink_thread, &fd);
		gbps = send_to(&a, (size_t)(mib ? atoi(mib) : 2048) << 20, 0);
		if (gbps >= 0) // else the sink may still wait in accept
			pthread_join(t, NULL);
	}
	if (gbps < 0)
		return 1;
	printf("METRIC raw_tcp_gbps GB/s %.6f\n", gbps);
	return 0;
}
