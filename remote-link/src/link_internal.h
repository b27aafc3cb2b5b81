/* Internal pieces shared by the client, the server and the transports. */
#ifndef MEARAS_LINK_INTERNAL_H
#define MEARAS_LINK_INTERNAL_H

#include "remote_link.h"
#include "stripe.h"
#include "transport.h"
#include "wire.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

typedef struct ssl_st SSL;

uint64_t link_now_ns(void);
void link_log(const struct mearas_link_config *cfg, enum mearas_link_log_level level,
	      const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Copy of cfg with zero fields replaced by defaults; key is not copied. */
void link_config_effective(const struct mearas_link_config *in, struct mearas_link_config *out);
/* in's cluster key (none when key_len is 0: nothing done) copied into memory
 * of its own (*key, which the caller frees), which out then names: false
 * when out of memory */
bool link_key_copy(const struct mearas_link_config *in, struct mearas_link_config *out, uint8_t **key);
/* the bytes of iovcnt (0..max) iovecs, none NULL with a length, at most
 * MEARAS_LINK_MAX_MSG in all: MEARAS_LINK_OK, else MEARAS_LINK_E_INVAL */
int link_iov_total(const struct iovec *iov, int iovcnt, int max, size_t *total);
/* *buf (of *cap bytes) holds need bytes at least: when it must grow, to
 * grow_to bytes (at least need). MEARAS_LINK_OK, else MEARAS_LINK_E_NOMEM
 * with *buf as it was. */
int link_buf_reserve(uint8_t **buf, size_t *cap, size_t need, size_t grow_to);

/* Longest dead bound a link takes (the --link-dead-ms range of mearasd). */
#define LINK_DEAD_MS_MAX 600000u
/* Dead bound of a server link whose peer heartbeats every peer_heartbeat_ms
 * (a value the peer sends): a few of its periods, at least dead_ms, at most
 * LINK_DEAD_MS_MAX. */
uint32_t link_peer_dead_ms(uint32_t dead_ms, uint32_t peer_heartbeat_ms);

/* Reads exactly len bytes; fails with E_BROKEN when nothing arrives for dead_ms,
 * E_CLOSED when *stop becomes nonzero. *last_rx_ns is updated on progress.
 * t->idle, if set, runs between receives that found nothing while spinning
 * and before each receive that may block. */
int link_read_exact(struct link_transport *t, void *buf, size_t len, uint32_t poll_ms,
		    uint32_t dead_ms, uint64_t *last_rx_ns, const int *stop);

/* ---- links without a socket of their own (tests, tests/fuzz) ---- */
/* Serves one link on transport t (taken over, destroyed before returning) on
 * the calling thread as an accepted link is served after its handshake:
 * on_open, each frame until the peer closes or t fails, on_closed. The peer
 * announced heartbeats every peer_heartbeat_ms. Returns how the link ended. */
int link_server_serve_transport(const struct mearas_link_config *cfg, const struct mearas_link_server_ops *ops,
				struct link_transport *t, uint32_t peer_heartbeat_ms);
/* A client link over transport t (taken over; destroyed on failure too), as
 * mearas_link_connect makes one after its handshake. */
int link_client_open_transport(const struct mearas_link_config *cfg, struct link_transport *t,
			       struct mearas_link **out);

/* Tests: cuts data connection index of a striped link, as the network
 * would (the client does not fail the link itself until it sends on it). */
void link_client_stream_cut(struct mearas_link *l, uint32_t index);

/* ---- handshake (handshake.c) ---- */
struct link_handshake_result {
	enum mearas_link_transport transport;
	uint32_t peer_heartbeat_ms;
	char peer_name[64];
	SSL *ssl; /* the link's TLS session when it is encrypted, else NULL */
	/* striping (stripe.h), from the client's auth: a main connection wants
	 * streams_wanted data connections; a data connection (attach) names
	 * link_id and its stream_index. The hook sets streams_granted and
	 * link_id of a main connection it grants them to. */
	uint32_t streams_wanted, stream_index, streams_granted;
	bool attach, bulk_in;
	uint8_t link_id[LINK_ID_BYTES];
};
/* Runs after the client proved the key, before the accept: 0 admits the
 * connection (res as filled by the hook), else a refusal with *why said to
 * the client (and logged by the hook). */
struct link_hs_hook {
	int (*check)(void *ctx, struct link_handshake_result *res, const char **why);
	void *ctx;
};
/* Client side; peer ("host:port") names the server in log lines. On success
 * *ssl is the TLS session of an encrypted link (NULL when encryption is off);
 * ssl NULL: an encrypted link's session is freed (tests of the handshake).
 * *turned_away (when not NULL) tells an E_BROKEN that came before the
 * server's challenge: its admission closed the connection (caps, fds), which
 * a later attempt may pass. */
int link_handshake_client(int fd, const struct mearas_link_config *cfg, const char *peer, SSL **ssl,
			  bool *turned_away);
/* The same with striping: st->want data connections asked for (main), or
 * st->attach: a data connection of st->link_id; st->granted and
 * st->link_id come back for a main connection. */
int link_handshake_client_stripe(int fd, const struct mearas_link_config *cfg, const char *peer, SSL **ssl,
				 bool *turned_away, struct link_hs_stripe *st);
/* What the client can tell before connecting: it has a key, and encryption is
 * off for verbs. Logs the reason and returns E_AUTH / E_ENCRYPTION. */
int link_client_precheck(const struct mearas_link_config *cfg, const char *peer);
/* Server side; logs refusals with peer (an "addr:port" string); the whole
 * handshake takes cfg->handshake_ms at most; res->ssl as above. */
int link_handshake_server(int fd, const struct mearas_link_config *cfg, const char *peer,
			  bool verbs_available, struct link_handshake_result *res);
/* The same with hook (NULL: none; a client that asks for data connections
 * gets none, one that attaches is refused). */
int link_handshake_server_hook(int fd, const struct mearas_link_config *cfg, const char *peer,
			       bool verbs_available, const struct link_hs_hook *hook,
			       struct link_handshake_result *res);
/* Length-prefixed blob on the side channel (handshake and verbs setup). */
int link_send_blob(int fd, const void *buf, size_t len);
int link_recv_blob(int fd, void *buf, size_t cap, size_t *len, uint32_t timeout_ms);

/* ---- TLS 1.3 of encrypted links (tls.c) ---- */
/* Runs the TLS handshake on fd (made non-blocking for good) with the PSK of
 * this connection (from the cluster key and the plaintext hello and challenge
 * bytes), within connect_timeout_ms. Logs a refusal with its reason; E_AUTH
 * when the peer does not prove the key. */
int link_tls_handshake(int fd, const struct mearas_link_config *cfg, bool server, const char *peer,
		       const void *hello, size_t hello_len, const void *challenge, size_t challenge_len,
		       SSL **out);
/* All len bytes through TLS on fd, waiting until deadline_ns (handshake messages). */
int link_tls_io_all(SSL *ssl, int fd, bool write, void *buf, size_t len, uint64_t deadline_ns);

#endif
