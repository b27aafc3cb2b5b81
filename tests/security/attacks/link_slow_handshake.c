/* SPDX-License-Identifier: MIT */
/*
 * Link connections that keep their handshake going as slowly as the server
 * lets them: a valid LinkHello (protobuf, encoded here by hand, asking for
 * TLS 1.3 as the server does) sent a few bytes at a time over 2 s, then, once
 * the challenge came, the header of a TLS record holding a ClientHello whose
 * bytes come one every 200 ms and never end. Measures how long the server
 * keeps each connection; exits 0 when it closed all of them within LIMIT_S.
 *   link_slow_handshake PORT N LIMIT_S
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "link_attack.h"
#include "remote_link.h"

static unsigned port;

/* A 4-byte little-endian length and a LinkHello: version {major}, a 32-byte
 * nonce, node name "slow", heartbeat 500 ms, encryption TLS 1.3. */
static size_t hello_blob(uint8_t *out)
{
	uint8_t *p = out + 4;
	uint32_t len;

	*p++ = 0x0a; /* 1: version */
	*p++ = 2;
	*p++ = 0x08; /* major */
	*p++ = MEARAS_LINK_VERSION_MAJOR;
	*p++ = 0x12; /* 2: client_nonce */
	*p++ = 32;
	for (int i = 0; i < 32; i++)
		*p++ = (uint8_t)(rand() & 0xff);
	*p++ = 0x22; /* 4: node_name */
	*p++ = 4;
	memcpy(p, "slow", 4);
	p += 4;
	*p++ = 0x28; /* 5: heartbeat_ms = 500 */
	*p++ = 0xf4;
	*p++ = 0x03;
	*p++ = 0x30; /* 6: encryption = LINK_ENCRYPTION_TLS13 */
	*p++ = 1;
	len = (uint32_t)(p - out - 4);
	memcpy(out, &len, 4); /* little-endian host */
	return (size_t)(p - out);
}

/* true while the server keeps fd open (waits up to ms for it to close) */
static int still_open(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint8_t buf[512];
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return 1;
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
}

struct conn {
	double lived;           /* seconds from connect to the server's close */
	int got_challenge;
};

static void *slow_peer(void *arg)
{
	struct conn *c = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	/* a TLS 1.3 handshake record of 200 bytes (type 22, legacy version 3.1):
	 * the server's TLS library waits for the whole record */
	uint8_t hello[128], record_hdr[5] = { 0x16, 0x03, 0x01, 0x00, 0xc8 }, byte = 0x01;
	size_t n = hello_blob(hello), sent = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	double t0 = now_s();

	c->lived = -1;
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return NULL;
	t0 = now_s();
	/* the hello, in 10 pieces 200 ms apart */
	while (sent < n) {
		size_t k = n - sent < (n + 9) / 10 ? n - sent : (n + 9) / 10;

		if (send(fd, hello + sent, k, MSG_NOSIGNAL) != (ssize_t)k)
			goto out;
		sent += k;
		if (sent < n && !still_open(fd, 200))
			goto out;
	}
	/* the challenge: a length and a message (read, not parsed) */
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint8_t buf[512];

		if (poll(&p, 1, 5000) != 1 || recv(fd, buf, sizeof(buf), 0) <= 0)
			goto out;
		c->got_challenge = 1;
	}
	/* the record's bytes one every 200 ms, never all of them */
	if (send(fd, record_hdr, sizeof(record_hdr), MSG_NOSIGNAL) != sizeof(record_hdr))
		goto out;
	for (int i = 0; i < 199 && still_open(fd, 200); i++)
		if (send(fd, &byte, 1, MSG_NOSIGNAL) != 1)
			goto out;
	while (still_open(fd, 200) && now_s() - t0 < 30)
		;
out:
	c->lived = now_s() - t0;
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned n, challenged = 0;
	double limit, worst = 0;
	struct conn *c;
	pthread_t *th;
	int ok = 1;

	link_attack_args(argc, argv, "LIMIT_S", &port, &n, &limit);
	c = calloc(n, sizeof(*c));
	th = calloc(n, sizeof(*th));
	if (!c || !th)
		return 2;
	srand((unsigned)time(NULL));
	for (unsigned i = 0; i < n; i++)
		pthread_create(&th[i], NULL, slow_peer, &c[i]);
	for (unsigned i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		if (c[i].lived < 0)
			ok = 0; /* could not even connect */
		if (c[i].lived > worst)
			worst = c[i].lived;
		challenged += (unsigned)c[i].got_challenge;
	}
	printf("slow handshake: %u connections, %u got a challenge, the longest was kept %.2f s (limit %.1f s)\n", n,
	       challenged, worst, limit);
	if (!challenged)
		printf("slow handshake: no hello was answered: the attack did not reach the second message\n");
	return ok && challenged && worst <= limit ? 0 : 1;
}
