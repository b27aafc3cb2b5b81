/* An on-path attacker for the tests: a TCP proxy between a link's client and
 * server that forwards every byte until armed, then alters the stream once:
 * flips one byte of what passes next in one direction, injects bytes of its
 * own towards the server, or sends what the client sends next twice. */
#ifndef REMOTE_LINK_TAMPER_PROXY_H
#define REMOTE_LINK_TAMPER_PROXY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

enum tamper_mode {
	TAMPER_FLIP_TO_SERVER, /* flip a byte of the next bytes the client sends */
	TAMPER_FLIP_TO_CLIENT, /* flip a byte of the next bytes the server sends */
	TAMPER_INJECT,         /* send inject[] to the server as if from the client */
	TAMPER_REPLAY_TO_SERVER, /* send the next bytes the client sends twice */
};

struct tamper_proxy {
	uint16_t port;            /* where the client connects */
	uint16_t target_port;     /* the server on 127.0.0.1 */
	enum tamper_mode mode;
	uint8_t inject[256];
	size_t inject_len;
	int armed;                /* atomic: set by the test after the handshake */
	int done;                 /* atomic: the change was made */
	int listen_fd, cfd, sfd;
	int stop;                 /* atomic */
	pthread_t thread;
};

/* Listens on an ephemeral loopback port, serves one connection in a thread. */
int tamper_start(struct tamper_proxy *p, uint16_t target_port, enum tamper_mode mode);
void tamper_arm(struct tamper_proxy *p);
/* 1 once the change was made (wait up to timeout_s), else 0. */
int tamper_wait_done(struct tamper_proxy *p, double timeout_s);
void tamper_stop(struct tamper_proxy *p);

#endif
