/* An on-path attacker between two mearasd nodes: a TCP proxy on the link
 * that forwards every byte, and once ARMFILE exists alters the stream once:
 *   flip    flips one byte of the next bytes the forwarding node sends
 *   inject  sends the remote node a forged link message (a RECORD, framed
 *           as a clear-text link carries it) as if from the forwarding node
 * It serves one connection, prints what it did ("TAMPERED ..."), and exits
 * when either side closes.
 *   link_tamper LISTEN_PORT TARGET_PORT flip|inject ARMFILE */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/messages.h"

static int send_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A link BATCH frame (remote-link/src/wire.h) with one RECORD message: a
 * memset of the remote vGPU's memory, as a clear-text link would deliver it. */
static size_t forge(uint8_t *out)
{
	struct remote_record_hdr rec;
	memset(&rec, 0, sizeof(rec));
	rec.kind = REMOTE_MSG_RECORD;
	rec.sqe.op = MEARAS_OP_MEMSET;
	rec.sqe.user_data = 0x666;
	size_t body = 16 + sizeof(rec);
	put32(out, 0x4b4e4c4du); /* "MLNK" */
	out[4] = 1;              /* BATCH */
	out[5] = out[6] = out[7] = 0;
	put32(out + 8, 1);
	put32(out + 12, (uint32_t)body);
	put64(out + 16, 1u << 30); /* seq */
	put32(out + 24, sizeof(rec));
	put32(out + 28, 0);
	memcpy(out + 32, &rec, sizeof(rec));
	return 16 + body;
}

static int listen_on(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4))
		return -1;
	return fd;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[3], "flip") && strcmp(argv[3], "inject"))) {
		fprintf(stderr, "usage: link_tamper LISTEN_PORT TARGET_PORT flip|inject ARMFILE\n");
		return 2;
	}
	bool flip = strcmp(argv[3], "flip") == 0, done = false;
	const char *armfile = argv[4];
	int lfd = listen_on((uint16_t)atoi(argv[1]));
	if (lfd < 0) {
		perror("link_tamper: listen");
		return 1;
	}
	printf("LISTENING\n");
	fflush(stdout);
	int cfd = accept(lfd, NULL, NULL);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int sfd = socket(AF_INET, SOCK_STREAM, 0);
	if (cfd < 0 || sfd < 0 || connect(sfd, (struct sockaddr *)&a, sizeof(a))) {
		perror("link_tamper: connect");
		return 1;
	}
	static uint8_t buf[1 << 16];
	for (;;) {
		struct stat st;
		bool armed = !done && stat(armfile, &st) == 0;
		if (armed && !flip) {
			uint8_t f[32 + sizeof(struct remote_record_hdr)];
			size_t n = forge(f);
			if (send_all(sfd, f, n))
				break;
			printf("TAMPERED: injected a forged %zu-byte RECORD message towards the remote node\n", n);
			fflush(stdout);
			done = true;
		}
		struct pollfd p[2] = { { .fd = cfd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
		if (poll(p, 2, 20) < 0)
			break;
		if (p[0].revents) {
			ssize_t n = recv(cfd, buf, sizeof(buf), 0);
			if (n <= 0)
				break;
			if (armed && flip) {
				buf[n / 2] ^= 0x01;
				printf("TAMPERED: flipped one bit of a %zd-byte piece towards the remote node\n", n);
				fflush(stdout);
				done = true;
			}
			if (send_all(sfd, buf, (size_t)n))
				break;
		}
		if (p[1].revents) {
			ssize_t n = recv(sfd, buf, sizeof(buf), 0);
			if (n <= 0 || send_all(cfd, buf, (size_t)n))
				break;
		}
	}
	printf("CLOSED\n");
	return 0;
}
