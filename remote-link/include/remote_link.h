/* remote-link: authenticated, encrypted, batched node-to-node message link.
 *
 * After a plaintext hello and challenge, a TCP link runs TLS 1.3 (OpenSSL)
 * keyed by a PSK derived from the cluster key: every later byte is encrypted
 * and authenticated, and a peer without the key fails the TLS handshake.
 * encryption = MEARAS_LINK_ENCRYPTION_OFF leaves the link in clear text (a
 * trusted fabric only); both ends must have the same setting.
 *
 * Moves opaque messages and bulk byte ranges between two mearasd instances.
 * Client side: mearas_link_connect(), then post (no reply, batched), call
 * (wants a reply, flushes the batch), bulk (chunked, pipelined).
 * Server side: mearas_link_server_start() runs an admission thread on one
 * port and one thread per accepted link that invokes the caller's callbacks.
 *
 * Every function returns MEARAS_LINK_OK (0) or a negative mearas_link_status.
 * A broken link (peer died, link cut, heartbeats lost for dead_ms) fails all
 * pending and later calls with MEARAS_LINK_E_BROKEN within about dead_ms.
 */
#ifndef MEARAS_REMOTE_LINK_H
#define MEARAS_REMOTE_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1.1: link encryption (TLS 1.3); 2.0: AES-256-GCM link records where the
 * handshake chose AES (1.x nodes seal with AES-128: they cannot link) */
#define MEARAS_LINK_VERSION_MAJOR 2
#define MEARAS_LINK_VERSION_MINOR 0

/* Largest single message (post/call/reply); larger data goes through bulk. */
#define MEARAS_LINK_MAX_MSG (16u << 20)

enum mearas_link_status {
	MEARAS_LINK_OK = 0,
	MEARAS_LINK_E_INVAL = -1,     /* bad argument */
	MEARAS_LINK_E_NOMEM = -2,     /* allocation failed */
	MEARAS_LINK_E_CONNECT = -3,   /* peer unreachable / connect timed out */
	MEARAS_LINK_E_AUTH = -4,      /* cluster key missing or wrong */
	MEARAS_LINK_E_VERSION = -5,   /* peers run incompatible protocol versions */
	MEARAS_LINK_E_PROTO = -6,     /* malformed data from the peer */
	MEARAS_LINK_E_BROKEN = -7,    /* link failed: peer died, cut, heartbeat lost */
	MEARAS_LINK_E_TIMEOUT = -8,   /* the call's own deadline passed (link still up) */
	MEARAS_LINK_E_TOOBIG = -9,    /* reply larger than the caller's buffer */
	MEARAS_LINK_E_NODEV = -10,    /* transport unavailable (e.g. no RDMA device) */
	MEARAS_LINK_E_CLOSED = -11,   /* link closed locally */
	MEARAS_LINK_E_SYS = -12,      /* system call failed (see log) */
	MEARAS_LINK_E_ENCRYPTION = -13, /* the ends disagree on link encryption */
};

const char *mearas_link_strerror(int status);

enum mearas_link_transport {
	MEARAS_LINK_TRANSPORT_TCP = 0,
	MEARAS_LINK_TRANSPORT_VERBS = 1, /* RDMA RC queue pair, TCP side channel */
	/* client only: verbs where this node has the RDMA device, link encryption
	 * is off and the peer accepts verbs, else TCP, with a log line saying why */
	MEARAS_LINK_TRANSPORT_AUTO = 2,
};

enum mearas_link_encryption {
	MEARAS_LINK_ENCRYPTION_TLS = 0, /* default: TLS 1.3 with a PSK from the cluster key (TCP only) */
	MEARAS_LINK_ENCRYPTION_OFF = 1, /* clear text after the handshake: a trusted fabric only */
};

enum mearas_link_log_level { MEARAS_LINK_LOG_ERR, MEARAS_LINK_LOG_WARN, MEARAS_LINK_LOG_INFO };

struct mearas_link_config {
	const uint8_t *key;             /* cluster key; NULL or key_len 0: none */
	size_t key_len;
	enum mearas_link_transport transport;  /* client: chosen per link */
	enum mearas_link_encryption encryption; /* TLS (default) or OFF; both ends must agree */
	size_t batch_max_bytes;         /* flush when the batch reaches this (64 KiB) */
	uint32_t batch_max_msgs;        /* ... or this many messages (256); 1 = no batching */
	uint32_t batch_delay_us;        /* ... or this long after its first message (50) */
	size_t chunk_bytes;             /* bulk chunk size (TCP 1 MiB, verbs 64 KiB) */
	uint32_t streams;               /* client, TCP: bulk chunks go round-robin over this many data
					 * connections of the link, each sent by a thread of its own (and
					 * encrypted by a TLS session of its own); 0 or 1: none, bulk goes on
					 * the link's one connection. At most 16; the server may grant none */
	/* client, with streams: where bulk chunks the server sends over the data
	 * connections (mearas_link_conn_bulk) land, or NULL (refused: the link
	 * fails); NULL bulk_dest: the server sends none. Runs on the data
	 * connections' reader threads; the link's receive thread waits for each
	 * transfer with mearas_link_bulk_wait. */
	void *(*bulk_dest)(void *ctx, uint64_t tag, uint64_t offset, uint64_t total, size_t len);
	void *bulk_ctx;
	uint32_t heartbeat_ms;          /* heartbeat when nothing received this long (500) */
	uint32_t dead_ms;               /* declare the link broken after this silence (3000) */
	uint32_t connect_timeout_ms;    /* connect + handshake bound (3000) */
	/* Server admission (0 = the default): nothing a peer does before it has
	 * proven the key may cost more than a bounded share of fds and threads. */
	uint32_t handshake_ms;          /* accept to authenticated link, at most (3000) */
	uint32_t max_pending;           /* connections still in the handshake (16) */
	uint32_t max_links;             /* authenticated links at once (64) */
	uint32_t fd_reserve;            /* refuse a connection that leaves fewer free fds (64) */
	uint32_t rx_spin_us;            /* receive threads poll without sleeping this long after data (0):
					 * saves a wakeup per message on request/reply traffic, costs a core */
	/* client, optional: the link's receive thread calls rx_idle(rx_idle_ctx,
	 * true) between receives that found nothing while it spins and (..., false)
	 * before it waits for data without spinning (as the server's on_idle) */
	void (*rx_idle)(void *ctx, bool spinning);
	void *rx_idle_ctx;
	uint32_t version_major;         /* advertised version; 0 = this build's */
	uint32_t version_minor;
	const char *verbs_device;       /* RDMA device name; NULL = first found */
	uint32_t verbs_gid_index;       /* GID table index (0) */
	const char *node_name;          /* sent in the handshake, for logs */
	void (*log)(void *ctx, enum mearas_link_log_level level, const char *msg);
	void *log_ctx;                  /* log NULL: messages go to stderr */
};

/* Fills defaults; call before setting fields. */
void mearas_link_config_init(struct mearas_link_config *cfg);

/* MEARAS_LINK_OK when cfg's RDMA device (verbs_device, or the first one)
 * opens and has GID verbs_gid_index on its port 1; else MEARAS_LINK_E_NODEV
 * with why (if not NULL) saying what is missing. */
int mearas_link_verbs_probe(const struct mearas_link_config *cfg, char *why, size_t why_len);

/* ---- client side ---- */
struct mearas_link;

int mearas_link_connect(const char *host, uint16_t port, const struct mearas_link_config *cfg,
			struct mearas_link **out);
/* Queue a message that needs no reply; payload is copied once into the batch. */
int mearas_link_post(struct mearas_link *l, const void *data, size_t len);
int mearas_link_postv(struct mearas_link *l, const struct iovec *iov, int iovcnt);
/* The same for a caller that posts a burst and then calls mearas_link_flush
 * itself: the batch timer (batch_delay_us) is not woken for it, which saves
 * a thread wakeup per burst on the caller's path. */
int mearas_link_postv_burst(struct mearas_link *l, const struct iovec *iov, int iovcnt);
/* Send the batch plus this request (one framed write) and wait for its reply.
 * timeout_ms 0 = wait until the reply or the link breaks. */
int mearas_link_call(struct mearas_link *l, const void *req, size_t req_len, void *reply,
		     size_t reply_cap, size_t *reply_len, uint32_t timeout_ms);
/* The same without waiting: fn(ctx, status, reply_len) runs exactly once, on
 * the link's receive thread when the reply has been read into reply (which
 * must stay valid until then), or with the error that broke the link (on the
 * thread that saw it, possibly the caller's). fn must be quick and must not
 * call link functions that send. */
typedef void (*mearas_link_reply_fn)(void *ctx, int status, size_t reply_len);
int mearas_link_call_async(struct mearas_link *l, const void *req, size_t req_len, void *reply,
			   size_t reply_cap, mearas_link_reply_fn fn, void *ctx);
/* The same, but the reply is not buffered: fn(ctx, OK, len, reader) runs on
 * the receive thread when it starts, and reads its bytes in order with
 * mearas_link_read (straight where they belong); bytes it leaves unread are
 * skipped. On a broken link fn(ctx, error, 0, NULL). A reader is valid during
 * fn only; fn must not call link functions that send. */
struct mearas_link_reader;
typedef void (*mearas_link_stream_fn)(void *ctx, int status, size_t len, struct mearas_link_reader *r);
int mearas_link_call_stream(struct mearas_link *l, const void *req, size_t req_len, mearas_link_stream_fn fn,
			    void *ctx);
/* Next n bytes of the reply into dst: 0, E_INVAL past its end, or the link's error. */
int mearas_link_read(struct mearas_link_reader *r, void *dst, size_t n);
size_t mearas_link_read_left(const struct mearas_link_reader *r);
int mearas_link_flush(struct mearas_link *l);
/* Send len bytes as chunks of chunk_bytes (sent from data without copy on TCP);
 * the receiver gets on_chunk per chunk. Earlier posts are flushed first.
 * On a link with data connections (streams) the chunks go over those, in
 * parallel, and what is posted or called after this returns reaches the
 * receiver after every chunk of it (it returns once all are sent). */
int mearas_link_bulk(struct mearas_link *l, uint64_t tag, const void *data, size_t len);
/* The data connections bulk transfers go over (0: none, the link's own). */
uint32_t mearas_link_streams(const struct mearas_link *l);
/* As mearas_link_conn_tx_clear, for the link's connection (rx_idle's sends). */
bool mearas_link_tx_clear(struct mearas_link *l);
/* The next bulk transfer the server sends (mearas_link_conn_bulk), of total
 * bytes: waits until all of it has landed where bulk_dest said. OK, or the
 * error that fails the link (total not what the server sent, bytes missing
 * for dead_ms, the link broken). */
int mearas_link_bulk_wait(struct mearas_link *l, uint64_t total);
/* MEARAS_LINK_OK while usable, else the error that broke the link. */
int mearas_link_health(struct mearas_link *l);

struct mearas_link_stats {
	uint64_t msgs_posted, batches_sent, calls, bulk_chunks, heartbeats_sent;
	uint64_t bytes_sent, bytes_received;
	uint64_t rtt_ns;        /* round trip of the last heartbeat answered (0: none yet); heartbeats
				 * go on a link quiet for heartbeat_ms, so a busy link keeps an older one */
};
void mearas_link_get_stats(struct mearas_link *l, struct mearas_link_stats *out);
/* Flushes queued messages (best effort), closes, frees. */
void mearas_link_close(struct mearas_link *l);

/* ---- server side ---- */
struct mearas_link_server;
struct mearas_link_conn; /* one accepted link; valid until on_closed returns */

/* Callbacks run on the link's server thread, which also answers heartbeats:
 * one that blocks longer than dead_ms makes the peer declare the link broken,
 * so hand long work to other threads and reply from there. */
struct mearas_link_server_ops {
	/* Each message of a batch, in send order; data valid during the call only.
	 * If wants_reply, answer with mearas_link_reply (now or from any thread). */
	void (*on_message)(void *ctx, struct mearas_link_conn *c, uint64_t seq, bool wants_reply,
			   const void *data, size_t len);
	/* One bulk chunk; offset/total in bytes of the whole transfer. On a link
	 * with data connections, on_chunk and chunk_dest run on their threads
	 * (several at once, chunks in any order); a message sent after a
	 * transfer still comes after all of its chunks. */
	void (*on_chunk)(void *ctx, struct mearas_link_conn *c, uint64_t tag, uint64_t bulk_id,
			 uint64_t offset, uint64_t total, const void *data, size_t len);
	/* Optional: where a chunk's len bytes should be read (then on_chunk gets
	 * that pointer as data), or NULL for the link's own buffer. Saves a copy
	 * when the bytes have a final home. */
	void *(*chunk_dest)(void *ctx, struct mearas_link_conn *c, uint64_t tag, uint64_t offset,
			    uint64_t total, size_t len);
	void (*on_open)(void *ctx, struct mearas_link_conn *c);      /* optional */
	/* Optional, on the link's receive thread: spinning true between receives
	 * that found nothing while it spins (rx_spin_us), so that the caller can
	 * answer from this thread (one thread both reads and sends: no handoff);
	 * false before it waits for data without spinning. Keep it short. */
	void (*on_idle)(void *ctx, struct mearas_link_conn *c, bool spinning);
	/* The link ended (status: OK for an orderly close, else why); free what it held. */
	void (*on_closed)(void *ctx, struct mearas_link_conn *c, int status);
	void *ctx;
};

int mearas_link_server_start(const char *bind_addr, uint16_t port,
			     const struct mearas_link_config *cfg,
			     const struct mearas_link_server_ops *ops,
			     struct mearas_link_server **out);
uint16_t mearas_link_server_port(const struct mearas_link_server *s);
/* Closes every link (on_closed fires for each), joins all threads, frees. */
void mearas_link_server_stop(struct mearas_link_server *s);

int mearas_link_reply(struct mearas_link_conn *c, uint64_t seq, const void *data, size_t len);
/* The same gathered from up to MEARAS_LINK_REPLY_IOV_MAX pieces, sent without copying them. */
#define MEARAS_LINK_REPLY_IOV_MAX 60
int mearas_link_replyv(struct mearas_link_conn *c, uint64_t seq, const struct iovec *data, int n);
const char *mearas_link_conn_peer(const struct mearas_link_conn *c); /* "addr:port" */
/* Data connections of c that bulk transfers to the client can use now: 0
 * when the client has none or reads none (no bulk_dest), or while not all
 * of them are up yet. */
uint32_t mearas_link_conn_streams(struct mearas_link_conn *c);
/* true when everything sent on c's connection has been taken by the peer's
 * end (TCP: nothing unsent or unacknowledged, so the peer's window is open;
 * verbs: never said): a small send now does not block. For a receive thread
 * that sends between its receives (on_idle), which must not wait on a peer
 * that may be waiting on it. */
bool mearas_link_conn_tx_clear(struct mearas_link_conn *c);
/* len bytes of data to the client as a bulk transfer (tag), striped over
 * the data connections, sent from data without a copy; returns when all is
 * sent (the client waits for it with mearas_link_bulk_wait, in the order
 * sent). E_INVAL while mearas_link_conn_streams is 0. One caller at a time. */
int mearas_link_conn_bulk(struct mearas_link_conn *c, uint64_t tag, const void *data, size_t len);
void mearas_link_conn_set_user(struct mearas_link_conn *c, void *user);
void *mearas_link_conn_user(const struct mearas_link_conn *c);

#ifdef __cplusplus
}
#endif
#endif
