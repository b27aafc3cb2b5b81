/* An on-path attacker between two mearasd nodes: a TCP proxy on the link
 * that forwards every byte of every connection the forwarding node opens (its
 * main connection first, then the data connections that carry striped bulk,
 * --link-streams), and once ARMFILE exists alters one stream once:
 *   flip       flips one byte of the next bytes the forwarding node sends on
 *              its main connection
 *   flip-data  the same on its first data connection
 *   inject     sends the remote node a forged link message (a RECORD, framed
 *              as a clear-text link carries it) on the main connection, as if
 *              from the forwarding node
 * It prints what it did ("TAMPERED ...") and exits when the main connection
 * closes (or on SIGTERM).
 *   link_tamper LISTEN_PORT TARGET_PORT flip|flip-data|inject ARMFILE */
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

#define MAX_PAIRS 32

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
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, MAX_PAIRS))
		return -1;
	return fd;
}

static int connect_to(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* one proxied connection: the forwarding node's side and the remote node's */
struct pair {
	int from_node, to_remote;
};

enum mode { FLIP, FLIP_DATA, INJECT };

int main(int argc, char **argv)
{
	enum mode mode;
	if (argc == 5 && strcmp(argv[3], "flip") == 0)
		mode = FLIP;
	else if (argc == 5 && strcmp(argv[3], "flip-data") == 0)
		mode = FLIP_DATA;
	else if (argc == 5 && strcmp(argv[3], "inject") == 0)
		mode = INJECT;
	else {
		fprintf(stderr, "usage: link_tamper LISTEN_PORT TARGET_PORT flip|flip-data|inject ARMFILE\n");
		return 2;
	}
	const char *armfile = argv[4];
	uint16_t target = (uint16_t)atoi(argv[2]);
	int lfd = listen_on((uint16_t)atoi(argv[1]));
	if (lfd < 0) {
		perror("link_tamper: listen");
		return 1;
	}
	printf("LISTENING\n");
	fflush(stdout);
	struct pair pairs[MAX_PAIRS];
	unsigned npairs = 0;
	bool done = false;
	/* the connection tampered with: the main one (first accepted) or the
	 * first data connection (second accepted) */
	unsigned victim = mode == FLIP_DATA ? 1 : 0;
	static uint8_t buf[1 << 16];
	for (;;) {
		struct stat st;
		bool armed = !done && npairs > victim && stat(armfile, &st) == 0;
		if (armed && mode == INJECT) {
			uint8_t f[LINK_FRAME_HDR + LINK_MSG_HDR + sizeof(struct remote_record_hdr)];
			size_t n = forge(f);
			if (send_all(pairs[victim].to_remote, f, n))
				break;
			printf("TAMPERED: injected a forged %zu-byte RECORD message towards the remote node\n", n);
			fflush(stdout);
			done = true;
		}
		struct pollfd p[1 + 2 * MAX_PAIRS];
		p[0] = (struct pollfd){ .fd = npairs < MAX_PAIRS ? lfd : -1, .events = POLLIN };
		for (unsigned i = 0; i < npairs; i++) {
			p[1 + 2 * i] = (struct pollfd){ .fd = pairs[i].from_node, .events = POLLIN };
			p[2 + 2 * i] = (struct pollfd){ .fd = pairs[i].to_remote, .events = POLLIN };
		}
		unsigned polled = npairs;
		if (poll(p, 1 + 2 * polled, 20) < 0)
			break;
		if (p[0].revents) {
			int cfd = accept(lfd, NULL, NULL), sfd = cfd >= 0 ? connect_to(target) : -1;
			if (sfd < 0) {
				perror("link_tamper: accept/connect");
				return 1;
			}
			pairs[npairs++] = (struct pair){ cfd, sfd };
		}
		bool main_closed = false;
		for (unsigned i = 0; i < polled; i++) {
			struct pair *c = &pairs[i];
			if (c->from_node < 0)
				continue;
			bool closed = false;
			if (p[1 + 2 * i].revents) {
				ssize_t n = recv(c->from_node, buf, sizeof(buf), 0);
				if (n <= 0) {
					closed = true;
				} else {
					if (armed && mode != INJECT && i == victim) {
						buf[n / 2] ^= 0x01;
						printf("TAMPERED: flipped one bit of a %zd-byte piece towards the remote node (%s connection)\n",
						       n, i ? "data" : "main");
						fflush(stdout);
						done = true;
					}
					closed = send_all(c->to_remote, buf, (size_t)n) != 0;
				}
			}
			if (!closed && p[2 + 2 * i].revents) {
				ssize_t n = recv(c->to_remote, buf, sizeof(buf), 0);
				closed = n <= 0 || send_all(c->from_node, buf, (size_t)n);
			}
			if (closed) {
				close(c->from_node);
				close(c->to_remote);
				c->from_node = c->to_remote = -1;
				main_closed |= i == 0;
			}
		}
		if (main_closed)
			break;
	}
	printf("CLOSED\n");
	return 0;
}
