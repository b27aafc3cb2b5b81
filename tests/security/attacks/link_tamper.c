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
#include "sock_io.h"
#include "wire.h"

/* A link BATCH frame with one RECORD message, framed by the link's own
 * encoder (remote-link/src/wire.c): a memset of the remote vGPU's memory, as a
 * clear-text link would deliver it. */
static size_t forge(uint8_t *out)
{
	struct remote_record_hdr rec;
	memset(&rec, 0, sizeof(rec));
	rec.kind = REMOTE_MSG_RECORD;
	rec.sqe.op = MEARAS_OP_MEMSET;
	rec.sqe.user_data = 0x666;
	struct link_frame_hdr h = { .type = LINK_FRAME_BATCH, .count = 1,
				    .body_len = LINK_MSG_HDR + sizeof(rec) };
	wire_encode_frame(out, &h);
	wire_encode_msg(out + LINK_FRAME_HDR, 1u << 30 /* seq */, sizeof(rec), 0);
	memcpy(out + LINK_FRAME_HDR + LINK_MSG_HDR, &rec, sizeof(rec));
	return LINK_FRAME_HDR + h.body_len;
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
			uint8_t f[LINK_FRAME_HDR + LINK_MSG_HDR + sizeof(struct remote_record_hdr)];
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
