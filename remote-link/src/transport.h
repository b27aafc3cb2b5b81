/* The small interface every data-plane transport implements (TCP, verbs).
 * send_iov writes everything or fails; recv returns >0 bytes, 0 on timeout,
 * or a negative mearas_link_status (E_BROKEN on EOF/reset). shutdown wakes
 * blocked callers and makes later calls fail; destroy frees. */
#ifndef MEARAS_LINK_TRANSPORT_H
#define MEARAS_LINK_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct mearas_link_config;
struct link_transport;
typedef struct ssl_st SSL;

struct link_transport_ops {
	const char *name;
	int (*send_iov)(struct link_transport *t, const struct iovec *iov, int iovcnt);
	int (*recv)(struct link_transport *t, void *buf, size_t len, uint32_t timeout_ms);
	void (*shutdown)(struct link_transport *t);
	void (*destroy)(struct link_transport *t);
	/* true when all this end sent has been taken by the peer (nothing
	 * unsent or unacknowledged): a small send now does not block */
	bool (*tx_clear)(struct link_transport *t);
};

/* PREFIX_ops: the ops of the transport whose functions are PREFIX_send_iov,
 * PREFIX_recv and PREFIX_destroy, and shutdown_fn and tx_clear_fn; label
 * names it in log lines. A macro: a function cannot define the table. */
#define LINK_TRANSPORT_OPS(prefix, label, shutdown_fn, tx_clear_fn) \
	static const struct link_transport_ops prefix##_ops = {      \
		.name = label,                                       \
		.send_iov = prefix##_send_iov,                       \
		.recv = prefix##_recv,                               \
		.shutdown = shutdown_fn,                             \
		.destroy = prefix##_destroy,                         \
		.tx_clear = tx_clear_fn,                             \
	}

/* Receive buffer of a transport: small reads (frame and item headers, small
 * messages) are served from it, so a reply of several small pieces costs one
 * receive call, not one per piece; large reads bypass it. One reader per
 * transport (the link's receive thread), so it needs no lock. */
#define LINK_RX_BUF (64u << 10)

struct link_transport {
	const struct link_transport_ops *ops;
	char security[160];     /* for the link's log line: how (or whether) it is encrypted */
	uint64_t rx_spin_ns;    /* readers poll without sleeping this long after data (cfg rx_spin_us) */
	/* The reader's idle hook (or NULL): called with true between receives
	 * that found nothing while it spins, with false before it blocks (the
	 * link's on_idle / rx_idle); set before the reader starts */
	void (*idle)(void *ctx, bool spinning);
	void *idle_ctx;
	uint32_t rx_pos, rx_have; /* rx_buf[rx_pos, rx_have) is received, not yet read */
	uint8_t rx_buf[LINK_RX_BUF];
};

/* A transport over a TCP socket: the TCP transport, and the start of the
 * encrypted one (transport_sealed.c). */
struct link_tcp_transport {
	struct link_transport base;
	int fd;
	int down; /* atomic: set by shutdown; senders and readers check it */
	/* tx_clear's answer without a system call: the send queue only grows
	 * by a write, so a reading of "empty" taken while no write was under
	 * way holds until the next write begins. begun and ended count writes
	 * begun and ended; clear_at is begun + 1 as it was at such a reading (0:
	 * none); the spinning reader looks again, off a call's path, after a
	 * receive (which may bring the peer's acknowledgement) since its last
	 * look (looked_at: reads then); looks counts the readings taken. All
	 * atomic. */
	uint64_t begun, ended, clear_at, reads, looked_at, looks;
};

/* Takes ownership of the connected socket fd. */
int link_tcp_transport_create(int fd, const struct mearas_link_config *cfg,
			      struct link_transport **out);
/* The same for an encrypted link whose TLS handshake is done (ssl, taken
 * over and freed, on failure too; server: which end this is): the link's own
 * AEAD records (records.h) keyed from the TLS session. peer names the other
 * end in log lines. */
int link_sealed_transport_create(int fd, SSL *ssl, bool server, const struct mearas_link_config *cfg,
				 const char *peer, struct link_transport **out);
/* The same from keys made already (tx and rx of records.h, taken over and
 * freed on failure too); security is the link's log text. What
 * link_sealed_transport_create does after the export; the fuzz target
 * keys its transport this way. */
struct link_rec_dir;
int link_sealed_transport_open(int fd, struct link_rec_dir *tx, struct link_rec_dir *rx, const char *security,
			       const struct mearas_link_config *cfg, const char *peer, struct link_transport **out);
/* Sets up an RC queue pair with the peer over the connected side-channel fd
 * (ownership taken); is_server picks who sends its endpoint first. */
int link_verbs_transport_create(int fd, const struct mearas_link_config *cfg, int is_server,
				struct link_transport **out);
/* MEARAS_LINK_OK when an RDMA device usable by the verbs transport exists. */
int link_verbs_available(const struct mearas_link_config *cfg);

/* TCP helpers shared by client and server. */
int link_tcp_set_options(int fd, uint32_t send_timeout_ms);
/* The socket I/O of a link_tcp_transport, shared by the clear-text and the
 * encrypted one: write sends all of iov (at most 64 pieces; blocking, bounded
 * by SO_SNDTIMEO); read returns >0 bytes, 0 when nothing came within
 * timeout_ms, E_BROKEN on EOF, reset or a shut transport. */
int link_tcp_write(struct link_tcp_transport *tt, const struct iovec *iov, int iovcnt);
int link_tcp_read(struct link_tcp_transport *tt, void *buf, size_t len, uint32_t timeout_ms);
/* The shutdown of a link_tcp_transport (clear text, encrypted): down set, the
 * socket shut, which wakes whoever is blocked on it. */
void link_tcp_transport_shutdown(struct link_transport *t);
/* The tx_clear of a link_tcp_transport: its socket's send queue is empty
 * (SIOCOUTQ), or was at a reading taken with no write under way and none
 * begun since. */
bool link_tcp_transport_tx_clear(struct link_transport *t);
int link_tcp_connect(const char *host, uint16_t port, uint32_t timeout_ms, int *out_fd);

#endif
