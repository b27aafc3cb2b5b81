// Raw TCP round trip over loopback, the yardstick for a remote vGPU's
// synchronous call, which is two messages on a link: a 256-byte message to an
// echoing peer and back, receivers spinning (recv with MSG_DONTWAIT, then a
// poll that does not wait: as remote-link's receive threads while they spin),
// TCP_NODELAY. Two shapes, each the median of ROUNDS round trips:
//   one thread per end sends and receives on its socket
//     "METRIC raw_tcp_rtt_us us X"
//   a receive thread and a sending thread per end, as remote-link's links
//     "METRIC raw_tcp_rtt_2threads_us us X"
//   the same with a connection each way (each socket read or written by one
//   thread per end)
//     "METRIC raw_tcp_rtt_2threads_split_us us X"
// The spinning threads want a core each (up to 4): on a machine with fewer,
// the figures say more about the scheduler than about TCP.
//   tcp_rtt [ROUNDS [READ]]   (default 20000, dontwait)
// READ says how a receiver waits: dontwait (recv first, as above), poll
// (a poll that does not wait until data is there, then recv: a spinning
// reader takes the socket's lock only to read) or block (a blocking recv).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 256

static long rounds = 20000;

enum read_mode { READ_DONTWAIT, READ_POLL, READ_BLOCK };
static enum read_mode read_mode = READ_DONTWAIT;

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

// reads len bytes as read_mode says; false at EOF or an error
static int read_spin(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n;

		if (read_mode == READ_POLL) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			while (poll(&p, 1, 0) == 0)
				;
		}
		n = recv(fd, buf + got, len - got, read_mode == READ_BLOCK ? 0 : MSG_DONTWAIT);
		if (n > 0) {
			got += (size_t)n;
		} else if (n == 0) {
			return 0;
		} else if (read_mode == READ_DONTWAIT) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			poll(&p, 1, 0);
		}
	}
	return 1;
}

static int send_all(int fd, const char *buf, size_t len)
{
	return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len;
}

// a connected pair over loopback, TCP_NODELAY on both; 0 or -1
static int pair(int fd[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		return -1;
	fd[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&a, sizeof(a)))
		return -1;
	fd[1] = accept(l, NULL, NULL);
	close(l);
	if (fd[1] < 0)
		return -1;
	setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static double median(double *v)
{
	qsort(v, (size_t)rounds, sizeof(*v), cmp);
	return v[rounds / 2];
}

// ---- one thread per end ----

static void *echo_main(void *arg)
{
	int fd = *(int *)arg;
	char buf[MSG];

	while (read_spin(fd, buf, MSG) && send_all(fd, buf, MSG))
		;
	return NULL;
}

static int one_thread(double *rtt)
{
	int fd[2];
	char buf[MSG] = { 0 };
	pthread_t echo;

	if (pair(fd) || pthread_create(&echo, NULL, echo_main, &fd[1]))
		return -1;
	for (long i = 0; i < rounds; i++) {
		double t0 = now_us();

		if (!send_all(fd[0], buf, MSG) || !read_spin(fd[0], buf, MSG))
			return -1;
		rtt[i] = now_us() - t0;
	}
	shutdown(fd[0], SHUT_WR);
	pthread_join(echo, NULL);
	close(fd[0]);
	close(fd[1]);
	return 0;
}

// ---- a receive thread and a sending thread per end ----
// split: a connection each way, so that each socket has one thread per end

struct end {
	int rfd, wfd;
	long received; // atomic: whole messages the receive thread has read
};

static void *receiver_main(void *arg)
{
	struct end *e = arg;
	char buf[MSG];
	long n = 0;

	while (read_spin(e->rfd, buf, MSG))
		__atomic_store_n(&e->received, ++n, __ATOMIC_RELEASE);
	__atomic_store_n(&e->received, -1, __ATOMIC_RELEASE); // EOF
	return NULL;
}

// waits until e has received n messages; false if its peer went away
static int wait_received(struct end *e, long n)
{
	long got;

	while ((got = __atomic_load_n(&e->received, __ATOMIC_ACQUIRE)) >= 0 && got < n)
		;
	return got >= n;
}

static void *echo2_main(void *arg)
{
	struct end *e = arg;
	char buf[MSG] = { 0 };

	for (long i = 1; wait_received(e, i); i++)
		if (!send_all(e->wfd, buf, MSG))
			break;
	return NULL;
}

static int two_threads(double *rtt, int split)
{
	int fd[2], back[2];
	struct end c = { 0 }, s = { 0 };
	char buf[MSG] = { 0 };
	pthread_t rc, rs, es;

	if (pair(fd) || (split && pair(back)))
		return -1;
	if (!split) {
		back[0] = fd[0];
		back[1] = fd[1];
	}
	c.wfd = fd[0];
	c.rfd = back[0];
	s.rfd = fd[1];
	s.wfd = back[1];
	if (pthread_create(&rc, NULL, receiver_main, &c) || pthread_create(&rs, NULL, receiver_main, &s) ||
	    pthread_create(&es, NULL, echo2_main, &s))
		return -1;
	for (long i = 0; i < rounds; i++) {
		double t0 = now_us();

		if (!send_all(c.wfd, buf, MSG) || !wait_received(&c, i + 1))
			return -1;
		rtt[i] = now_us() - t0;
	}
	shutdown(c.wfd, SHUT_WR); // the serving end's receiver sees EOF, its sender stops
	pthread_join(rs, NULL);
	pthread_join(es, NULL);
	shutdown(s.wfd, SHUT_WR);
	pthread_join(rc, NULL);
	close(fd[0]);
	close(fd[1]);
	if (split) {
		close(back[0]);
		close(back[1]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	double *rtt;

	if (argc == 3 && !strcmp(argv[2], "poll"))
		read_mode = READ_POLL;
	else if (argc == 3 && !strcmp(argv[2], "block"))
		read_mode = READ_BLOCK;
	else if (argc == 3 && strcmp(argv[2], "dontwait"))
		argc = 99;
	if (argc > 3 || (argc >= 2 && (rounds = atol(argv[1])) < 1) || rounds > 10000000) {
		fprintf(stderr, "usage: tcp_rtt [ROUNDS (1..10000000, default 20000) [dontwait|poll|block]]\n");
		return 2;
	}
	rtt = malloc((size_t)rounds * sizeof(*rtt));
	if (!rtt)
		return 1;
	if (one_thread(rtt)) {
		perror("tcp_rtt: one thread per end");
		return 1;
	}
	printf("METRIC raw_tcp_rtt_us us %.3f\n", median(rtt));
	fflush(stdout);
	if (two_threads(rtt, 0)) {
		perror("tcp_rtt: two threads per end");
		return 1;
	}
	printf("METRIC raw_tcp_rtt_2threads_us us %.3f\n", median(rtt));
	fflush(stdout);
	if (two_threads(rtt, 1)) {
		perror("tcp_rtt: two threads per end, a connection each way");
		return 1;
	}
	printf("METRIC raw_tcp_rtt_2threads_split_us us %.3f\n", median(rtt));
	free(rtt);
	return 0;
}
