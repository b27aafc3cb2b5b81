/*
 * mearas-ivshmem-serve: standalone ivshmem-doorbell server on top of
 * libmearas_ivshmem, for starting guests by hand or from libvirt.
 *
 *   mearas-ivshmem-serve -s SOCKET -f SHM_FILE -z SIZE [-v VECTORS] [-e]
 *                        [-t SECONDS] [-m MODE]
 *
 * SHM_FILE is created (or resized) to SIZE bytes (suffix K/M/G allowed) and
 * becomes every guest's BAR2. -e answers a guest doorbell on vector v with
 * an interrupt on vector v to every connected guest (a doorbell does not
 * say who rang). -t exits after SECONDS, -m sets the
 * socket's mode (octal, e.g. 666 so that libvirt-qemu can connect).
 * Prints one line per event: "connected ID", "disconnected ID",
 * "doorbell VECTOR COUNT". Stops on SIGINT/SIGTERM.
 */
#define _GNU_SOURCE
#include "ivshmem_server.h"
#include "mearas_version.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_connect(void *o, unsigned int id)
{
	(void)o;
	printf("connected %u\n", id);
	fflush(stdout);
}

static void on_disconnect(void *o, unsigned int id)
{
	(void)o;
	printf("disconnected %u\n", id);
	fflush(stdout);
}

static bool parse_size(const char *s, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return false;
	switch (*end) {
	case 'G': v <<= 10; /* fall through */
	case 'M': v <<= 10; /* fall through */
	case 'K': v <<= 10; end++; break;
	default: break;
	}
	*out = v;
	return *end == '\0' && v > 0;
}

static int usage(const char *argv0)
{
	fprintf(stderr, "usage: %s -s SOCKET -f SHM_FILE -z SIZE [-v VECTORS] [-e] "
		"[-t SECONDS] [-m MODE]\n       %s --version\n", argv0, argv0);
	return 2;
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *file = NULL;
	unsigned long long size = 0;
	unsigned int nvec = 2, mode = 0;
	long timeout_s = 0;
	bool echo = false;
	int opt, fd;

	static const struct option longopts[] = { { "version", no_argument, NULL, 'V' }, { 0 } };

	while ((opt = getopt_long(argc, argv, "s:f:z:v:et:m:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'V':
			printf("mearas-ivshmem-serve %s\n", MEARAS_VERSION);
			return 0;
		case 's': sock = optarg; break;
		case 'f': file = optarg; break;
		case 'z':
			if (!parse_size(optarg, &size))
				return usage(argv[0]);
			break;
		case 'v': nvec = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'e': echo = true; break;
		case 't': timeout_s = strtol(optarg, NULL, 0); break;
		case 'm': mode = (unsigned int)strtoul(optarg, NULL, 8); break;
		default: return usage(argv[0]);
		}
	}
	if (!sock || !file || !size)
		return usage(argv[0]);

	fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], file, strerror(errno));
		return 1;
	}
	struct ivshmem_server_callbacks cb = { .peer_connected = on_connect, .peer_disconnected = on_disconnect };
	struct ivshmem_server *srv = ivshmem_server_new(sock, fd, nvec, &cb);

	close(fd);
	if (!srv) {
		fprintf(stderr, "%s: server on %s: %s\n", argv[0], sock, strerror(errno));
		return 1;
	}
	if (mode && chmod(sock, mode) < 0)
		fprintf(stderr, "%s: chmod %s: %s\n", argv[0], sock, strerror(errno));
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("listening %s vectors %u size %llu\n", sock, nvec, size);
	fflush(stdout);

	time_t end = timeout_s > 0 ? time(NULL) + timeout_s : 0;
	struct pollfd pfds[1 + IVSHMEM_SERVER_MAX_VECTORS];

	pfds[0] = (struct pollfd){ .fd = ivshmem_server_poll_fd(srv), .events = POLLIN };
	for (unsigned int v = 0; v < nvec; v++)
		pfds[1 + v] = (struct pollfd){ .fd = ivshmem_server_host_eventfd(srv, v),
					       .events = POLLIN };
	while (!stop && (!end || time(NULL) < end)) {
		if (poll(pfds, 1 + nvec, 200) < 0 && errno != EINTR)
			break;
		ivshmem_server_process(srv);
		for (unsigned int v = 0; v < nvec; v++) {
			uint64_t count;
			unsigned int ids[64];
			size_t n;

			if (ivshmem_server_host_consume(srv, v, &count) != 0)
				continue;
			printf("doorbell %u %llu\n", v, (unsigned long long)count);
			fflush(stdout);
			n = echo ? ivshmem_server_peer_ids(srv, ids, 64) : 0;
			for (size_t i = 0; i < n && i < 64; i++)
				ivshmem_server_notify(srv, ids[i], v);
		}
	}
	ivshmem_server_free(srv);
	return 0;
}
