// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: remote-link's handshake (remote-link/src/handshake.c,
 * tls.c) against a peer that does not hold the cluster key (format in
 * fuzz_link.h). The peer's bytes wait in a socket pair, followed by its end
 * of the connection; this end runs the shipped link_handshake_server (the
 * peer is a client: hello, TLS ClientHello, auth) or link_handshake_client
 * (the peer is a server: challenge, TLS server flight, accept), on one
 * thread. Deadlines are short (config fields), though the end of the bytes
 * ends every wait before them. A handshake that succeeds is a bug: the peer
 * cannot answer a fresh random nonce without the key.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "fuzz_die.h"
#include "fuzz_link.h"
#include "mearas/fdpass.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void hs_cfg(struct mearas_link_config *cfg, uint8_t flags)
{
	struct mearas_link_config in;

	mearas_link_config_init(&in);
	if (!(flags & HSF_NOKEY) || (flags & HSF_CLIENT)) {
		in.key = (const uint8_t *)FUZZ_LINK_KEY;
		in.key_len = strlen(FUZZ_LINK_KEY);
	}
	in.encryption = flags & HSF_TLS ? MEARAS_LINK_ENCRYPTION_TLS : MEARAS_LINK_ENCRYPTION_OFF;
	if ((flags & HSF_CLIENT) && (flags & HSF_VERBS))
		in.transport = MEARAS_LINK_TRANSPORT_VERBS;
	in.connect_timeout_ms = 300;
	in.handshake_ms = 300;
	in.node_name = "fuzz";
	in.log = fuzz_link_log;
	link_config_effective(&in, cfg);
}

/* The peer's bytes, then its half-close: every read past them ends at once. */
static void feed(int fd, const uint8_t *data, size_t size)
{
	if (mearas_send_all(fd, data, size))
		die("cannot queue the peer's bytes");
	shutdown(fd, SHUT_WR);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_link_init(seeds_link_handshake);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mearas_link_config cfg;
	int sv[2], rc, bufsz = 1 << 20;
	uint8_t flags;

	if (size < 1 || size > (512u << 10))
		return 0;
	flags = data[0];
	hs_cfg(&cfg, flags);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		die("socketpair");
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	feed(sv[1], data + 1, size - 1);
	if (flags & HSF_CLIENT) {
		SSL *ssl = NULL;

		rc = link_handshake_client(sv[0], &cfg, "fuzz-peer", &ssl, NULL);
		SSL_free(ssl);
	} else {
		struct link_handshake_result res;

		memset(&res, 0, sizeof(res));
		rc = link_handshake_server(sv[0], &cfg, "fuzz-peer", (flags & HSF_VERBS) != 0, &res);
		SSL_free(res.ssl);
		if (strnlen(res.peer_name, sizeof(res.peer_name)) == sizeof(res.peer_name))
			die("the peer's name is not terminated");
	}
	if (rc == MEARAS_LINK_OK)
		die("a peer without the cluster key completed the handshake");
	close(sv[0]);
	close(sv[1]);
	return 0;
}
