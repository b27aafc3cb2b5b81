/* Server side: an admission thread accepts TCP connections on one port; each
 * gets its own thread that authenticates it, then reads frames and hands
 * messages and bulk chunks to the caller's callbacks.
 *
 * Admission is bounded before a peer has proven the key: at most max_pending
 * connections are in the handshake at once (a quarter of them from one
 * address, so that one host cannot keep the others out), each for
 * handshake_ms at most (the admission thread shuts down the ones stuck past
 * it), a connection whose fd leaves fewer than fd_reserve free is refused,
 * at most max_links links are open, and running out of fds or threads
 * refuses new connections without touching the open links. Refusals a flood repeats are logged once a second. */
#include "link_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

struct mearas_link_conn {
	struct mearas_link_server *srv;
	struct mearas_link_conn *next;
	int fd; /* until the transport owns it */
	struct link_transport *t;
	pthread_t thread;
	pthread_mutex_t send_lock;
	char peer[80];
	void *user;
	int broken;   /* atomic */
	int stop;     /* atomic */
	int finished; /* atomic: thread done, ready to join */
	uint64_t last_rx_ns;
	uint32_t dead_ms;
	uint8_t *buf;
	size_t cap;
	uint64_t accept_ns;
	bool admitted;     /* send_lock: the handshake is over, no deadline any more */
	bool deadline_hit; /* send_lock: shut down by the admission thread */
	bool counted_link; /* counts in srv->nlinks */
	bool pending;      /* srv->lock: counts in srv->npending */
	struct sockaddr_storage addr;
	/* striping (stripe.h): a main connection's data connections attach to
	 * stripe by link_id (both set under srv->lock); a data connection's
	 * main is the link it carries chunks of (set by its handshake) */
	struct link_stripe_rx *stripe;
	uint8_t link_id[LINK_ID_BYTES];
	struct mearas_link_conn *main;
	uint32_t stream_index;
	/* bulk to the client (main connection): the data connections'
	 * transports, which the main connection owns once they are in dt
	 * (srv->lock) and destroys when it is freed; tx sends over them */
	bool bulk_in;           /* the client reads bulk data on them */
	struct link_transport *dt[LINK_STREAMS_MAX];
	pthread_mutex_t bulk_lock;
	struct link_stripe_tx *tx;
	uint64_t bulk_out;
	bool adopted;           /* data connection: its transport is in main->dt */
};

/* One line a second at most for a refusal a flood repeats. */
struct ratelimit {
	uint64_t last_ns;
	unsigned suppressed;
};

struct mearas_link_server {
	struct mearas_link_config cfg;
	uint8_t *key;
	struct mearas_link_server_ops ops;
	int listen_fd;
	uint16_t port;
	bool verbs_available;
	int stop; /* atomic */
	pthread_t admit_thread;
	pthread_mutex_t lock;
	struct mearas_link_conn *conns;
	unsigned npending, nlinks; /* lock */
	int spare_fd;              /* given up to shed a connection when fds run out */
	pthread_mutex_t rl_lock;
	struct ratelimit rl_pending, rl_host, rl_links, rl_fds, rl_accept, rl_thread, rl_deadline, rl_attach;
};

static void log_limited(struct mearas_link_server *s, struct ratelimit *rl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void log_limited(struct mearas_link_server *s, struct ratelimit *rl, const char *fmt, ...)
{
	uint64_t now = link_now_ns();
	unsigned more;
	char msg[400];
	va_list ap;

	pthread_mutex_lock(&s->rl_lock);
	if (rl->last_ns && now - rl->last_ns < 1000000000ull) {
		rl->suppressed++;
		pthread_mutex_unlock(&s->rl_lock);
		return;
	}
	more = rl->suppressed;
	rl->suppressed = 0;
	rl->last_ns = now;
	pthread_mutex_unlock(&s->rl_lock);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (more)
		link_log(&s->cfg, MEARAS_LINK_LOG_WARN, "%s (and %u more like it since the last such line)", msg,
			 more);
	else
		link_log(&s->cfg, MEARAS_LINK_LOG_WARN, "%s", msg);
}

int mearas_link_replyv(struct mearas_link_conn *c, uint64_t seq, const struct iovec *data, int n)
{
	size_t len = 0;
	if (!c || link_iov_total(data, n, MEARAS_LINK_REPLY_IOV_MAX, &len))
		return MEARAS_LINK_E_INVAL;
	uint8_t fhdr[LINK_FRAME_HDR], rhdr[LINK_MSG_HDR];
	struct link_frame_hdr fh = { .type = LINK_FRAME_REPLY, .count = 1,
				     .body_len = (uint32_t)(LINK_MSG_HDR + len) };
	wire_encode_frame(fhdr, &fh);
	wire_encode_msg(rhdr, seq, (uint32_t)len, 0);
	struct iovec iov[2 + MEARAS_LINK_REPLY_IOV_MAX] = { { fhdr, sizeof(fhdr) }, { rhdr, sizeof(rhdr) } };
	int k = 2;
	for (int i = 0; i < n; i++)
		if (data[i].iov_len)
			iov[k++] = data[i];
	pthread_mutex_lock(&c->send_lock);
	int rc = __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE);
	if (!rc && c->t) {
		rc = c->t->ops->send_iov(c->t, iov, k);
		if (rc) {
			rc = MEARAS_LINK_E_BROKEN;
			__atomic_store_n(&c->broken, rc, __ATOMIC_RELEASE);
			c->t->ops->shutdown(c->t);
		}
	} else if (!rc) {
		rc = MEARAS_LINK_E_BROKEN;
	}
	pthread_mutex_unlock(&c->send_lock);
	return rc;
}

int mearas_link_reply(struct mearas_link_conn *c, uint64_t seq, const void *data, size_t len)
{
	struct iovec iov = { (void *)data, len };
	if (!c || (len && !data) || len > MEARAS_LINK_MAX_MSG)
		return MEARAS_LINK_E_INVAL;
	return mearas_link_replyv(c, seq, &iov, len ? 1 : 0);
}

const char *mearas_link_conn_peer(const struct mearas_link_conn *c)
{
	return c ? c->peer : "";
}

void mearas_link_conn_set_user(struct mearas_link_conn *c, void *user)
{
	if (c)
		c->user = user;
}

void *mearas_link_conn_user(const struct mearas_link_conn *c)
{
	return c ? c->user : NULL;
}

uint16_t mearas_link_server_port(const struct mearas_link_server *s)
{
	return s ? s->port : 0;
}

static int conn_read(struct mearas_link_conn *c, void *buf, size_t len)
{
	return link_read_exact(c->t, buf, len, 100, c->dead_ms, &c->last_rx_ns, &c->stop);
}

/* c->buf holds len bytes at least */
static int conn_reserve(struct mearas_link_conn *c, size_t len)
{
	return link_buf_reserve(&c->buf, &c->cap, len, len);
}

static int conn_read_body(struct mearas_link_conn *c, size_t len)
{
	int rc = conn_reserve(c, len);

	return rc ? rc : conn_read(c, c->buf, len);
}

static int dispatch_batch(struct mearas_link_conn *c, const struct link_frame_hdr *fh)
{
	const struct mearas_link_server_ops *ops = &c->srv->ops;
	size_t off = 0;
	for (uint32_t i = 0; i < fh->count; i++) {
		struct link_msg m;
		int rc = wire_next_msg(c->buf, fh->body_len, &off, &m);
		if (rc)
			return rc;
		if (ops->on_message)
			ops->on_message(ops->ctx, c, m.seq, m.flags & LINK_MSG_WANTS_REPLY, m.data, m.len);
	}
	return off == fh->body_len ? MEARAS_LINK_OK : MEARAS_LINK_E_PROTO;
}

/* A chunk whose bytes the caller places (ops->chunk_dest). */
static int read_chunk_in_place(struct mearas_link_conn *c, const struct link_frame_hdr *fh)
{
	const struct mearas_link_server_ops *ops = &c->srv->ops;
	size_t n = fh->body_len - LINK_CHUNK_HDR;
	struct link_chunk ch;
	int rc = conn_read_body(c, LINK_CHUNK_HDR);
	if (rc)
		return rc;
	wire_decode_chunk(c->buf, &ch);
	uint8_t *dst = ops->chunk_dest(ops->ctx, c, ch.tag, ch.offset, ch.total, n);
	if (!dst) {
		if (LINK_CHUNK_HDR + n > c->cap) {
			uint8_t *nb = realloc(c->buf, LINK_CHUNK_HDR + n);
			if (!nb)
				return MEARAS_LINK_E_NOMEM;
			c->buf = nb;
			c->cap = LINK_CHUNK_HDR + n;
		}
		dst = c->buf + LINK_CHUNK_HDR;
	}
	rc = conn_read(c, dst, n);
	if (!rc && ops->on_chunk)
		ops->on_chunk(ops->ctx, c, ch.tag, ch.bulk_id, ch.offset, ch.total, dst, n);
	return rc;
}

/* BULK_END of a striped transfer: nothing after it is read until all of
 * its bytes have landed through the data connections. */
static int bulk_end(struct mearas_link_conn *c, const struct link_frame_hdr *fh)
{
	uint64_t id, total;
	int rc;

	if (!c->stripe || fh->body_len != LINK_BULK_END_BODY) {
		link_log(&c->srv->cfg, MEARAS_LINK_LOG_WARN, "link from %s: unexpected bulk end (%s)", c->peer,
			 c->stripe ? "malformed" : "the link has no data connections");
		return MEARAS_LINK_E_PROTO;
	}
	id = wire_get_u64(c->buf);
	total = wire_get_u64(c->buf + 8);
	rc = stripe_rx_end(c->stripe, id, total, &c->stop, c->dead_ms);
	if (rc == MEARAS_LINK_E_PROTO)
		link_log(&c->srv->cfg, MEARAS_LINK_LOG_WARN,
			 "link from %s: bulk end of transfer %llu (%llu bytes) does not match its chunks", c->peer,
			 (unsigned long long)id, (unsigned long long)total);
	else if (rc == MEARAS_LINK_E_BROKEN)
		link_log(&c->srv->cfg, MEARAS_LINK_LOG_WARN,
			 "link from %s: bulk transfer %llu: no chunk of it landed for %u ms", c->peer,
			 (unsigned long long)id, c->dead_ms);
	__atomic_store_n(&c->last_rx_ns, link_now_ns(), __ATOMIC_RELAXED);
	return rc;
}

static int serve_frames(struct mearas_link_conn *c)
{
	const struct mearas_link_server_ops *ops = &c->srv->ops;
	for (;;) {
		uint8_t hdr[LINK_FRAME_HDR];
		struct link_frame_hdr fh;
		int rc = conn_read(c, hdr, sizeof(hdr));
		if (!rc)
			rc = wire_decode_frame(hdr, &fh);
		if (!rc && fh.type == LINK_FRAME_CHUNK && ops->chunk_dest && fh.body_len >= LINK_CHUNK_HDR) {
			rc = read_chunk_in_place(c, &fh);
			if (rc)
				return rc;
			continue;
		}
		if (!rc && fh.type != LINK_FRAME_CLOSE)
			rc = conn_read_body(c, fh.body_len);
		if (rc)
			return rc;
		switch (fh.type) {
		case LINK_FRAME_BATCH:
			rc = dispatch_batch(c, &fh);
			break;
		case LINK_FRAME_CHUNK:
			if (fh.body_len < LINK_CHUNK_HDR) {
				rc = MEARAS_LINK_E_PROTO;
				break;
			}
			if (ops->on_chunk) {
				struct link_chunk ch;
				wire_decode_chunk(c->buf, &ch);
				ops->on_chunk(ops->ctx, c, ch.tag, ch.bulk_id, ch.offset, ch.total, c->buf + LINK_CHUNK_HDR,
					      fh.body_len - LINK_CHUNK_HDR);
			}
			break;
		case LINK_FRAME_HEARTBEAT: {
			uint8_t ack[LINK_FRAME_HDR + 8];
			struct link_frame_hdr ah = { .type = LINK_FRAME_HEARTBEAT_ACK, .body_len = 8 };
			wire_encode_frame(ack, &ah);
			memset(ack + LINK_FRAME_HDR, 0, 8);
			if (fh.body_len >= 8)
				memcpy(ack + LINK_FRAME_HDR, c->buf, 8);
			struct iovec iov = { ack, sizeof(ack) };
			pthread_mutex_lock(&c->send_lock);
			rc = c->t->ops->send_iov(c->t, &iov, 1) ? MEARAS_LINK_E_BROKEN : MEARAS_LINK_OK;
			pthread_mutex_unlock(&c->send_lock);
			break;
		}
		case LINK_FRAME_BULK_END:
			rc = bulk_end(c, &fh);
			break;
		case LINK_FRAME_CLOSE:
			return MEARAS_LINK_OK;
		default:
			rc = MEARAS_LINK_E_PROTO;
		}
		if (rc)
			return rc;
	}
}

/* The handshake ended with rc: the connection leaves the pending count and,
 * authenticated and in time, becomes a link if there is room for one. */
static int end_pending(struct mearas_link_server *s, struct mearas_link_conn *c, int rc)
{
	pthread_mutex_lock(&c->send_lock);
	c->admitted = true;
	if (!rc && c->deadline_hit)
		rc = MEARAS_LINK_E_CONNECT; /* its socket is shut down already */
	pthread_mutex_unlock(&c->send_lock);
	pthread_mutex_lock(&s->lock);
	s->npending--;
	c->pending = false;
	bool full = !rc && !c->main && s->nlinks >= s->cfg.max_links;
	if (!rc && !full && !c->main) {
		s->nlinks++;
		c->counted_link = true;
	}
	pthread_mutex_unlock(&s->lock);
	if (full) {
		log_limited(s, &s->rl_links, "link from %s refused: %u links open, the most this node takes",
			    c->peer, s->cfg.max_links);
		rc = MEARAS_LINK_E_CLOSED;
	}
	return rc;
}

/* The connection's thread is done: its link slot is free, it can be joined. */
static void link_done(struct mearas_link_server *s, struct mearas_link_conn *c)
{
	if (c->counted_link) {
		pthread_mutex_lock(&s->lock);
		s->nlinks--;
		pthread_mutex_unlock(&s->lock);
	}
	__atomic_store_n(&c->finished, 1, __ATOMIC_RELEASE);
}

/* ---- striping (stripe.h): data connections of a link ---- */

/* The handshake hook: a main connection asking for data connections gets
 * them (TCP only) with a fresh random link id; a data connection must name
 * the id of an open link and a free place in it. */
static int stripe_check(void *ctx, struct link_handshake_result *res, const char **why)
{
	struct mearas_link_conn *c = ctx, *m;
	struct mearas_link_server *s = c->srv;
	struct link_stripe_rx *rx;
	uint32_t n = res->streams_wanted < LINK_STREAMS_MAX ? res->streams_wanted : LINK_STREAMS_MAX;
	bool found = false, placed = false;

	if (!res->attach) {
		res->streams_granted = 0;
		if (res->transport != MEARAS_LINK_TRANSPORT_TCP || n < 2)
			return MEARAS_LINK_OK;
		if (RAND_bytes(res->link_id, LINK_ID_BYTES) != 1 || !(rx = stripe_rx_new(n)))
			return MEARAS_LINK_OK; /* no striping: the link works without */
		pthread_mutex_lock(&s->lock);
		c->stripe = rx;
		c->bulk_in = res->bulk_in;
		memcpy(c->link_id, res->link_id, LINK_ID_BYTES);
		pthread_mutex_unlock(&s->lock);
		res->streams_granted = n;
		return MEARAS_LINK_OK;
	}
	pthread_mutex_lock(&s->lock);
	for (m = s->conns; m && !found; m = m->next) {
		if (m == c || !m->stripe || CRYPTO_memcmp(m->link_id, res->link_id, LINK_ID_BYTES))
			continue;
		found = true;
		placed = stripe_rx_attach(m->stripe, res->stream_index);
		if (placed) {
			c->main = m;
			c->stream_index = res->stream_index;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (placed)
		return MEARAS_LINK_OK;
	*why = found ? "data connection: its place in the link is taken or out of range, or the link is ending"
		     : "data connection: it names no open link";
	log_limited(s, &s->rl_attach, "link from %s refused: %s", c->peer, *why);
	return MEARAS_LINK_E_AUTH;
}

/* Tells a connection's thread to stop and wakes it from its transport */
static void stop_conn(struct mearas_link_conn *c)
{
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&c->send_lock);
	if (c->t)
		c->t->ops->shutdown(c->t);
	else if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&c->send_lock);
}

/* A main connection ends: no data connection attaches any more, those
 * attached are shut down, and it waits until none of them touches it. */
static void end_stripe(struct mearas_link_conn *c)
{
	struct mearas_link_server *s = c->srv;

	if (!c->stripe)
		return;
	stripe_rx_close(c->stripe);
	pthread_mutex_lock(&s->lock);
	for (struct mearas_link_conn *d = s->conns; d; d = d->next) {
		if (d->main == c)
			stop_conn(d);
	}
	for (uint32_t i = 0; i < LINK_STREAMS_MAX; i++)
		if (c->dt[i])
			c->dt[i]->ops->shutdown(c->dt[i]);
	pthread_mutex_unlock(&s->lock);
	/* a bulk transfer to the client under way fails now (its streams are shut) */
	pthread_mutex_lock(&c->bulk_lock);
	stripe_tx_free(c->tx);
	c->tx = NULL;
	pthread_mutex_unlock(&c->bulk_lock);
	stripe_rx_wait_detached(c->stripe);
}

/* The link of main connection m fails as a whole (a data connection failed). */
static void fail_main(struct mearas_link_conn *m)
{
	pthread_mutex_lock(&m->send_lock);
	__atomic_store_n(&m->broken, MEARAS_LINK_E_BROKEN, __ATOMIC_RELEASE);
	if (m->t)
		m->t->ops->shutdown(m->t);
	else if (m->fd >= 0)
		shutdown(m->fd, SHUT_RDWR);
	pthread_mutex_unlock(&m->send_lock);
	stripe_rx_close(m->stripe);
}

/* stripe_tx: a data connection could not send a bulk transfer to the client */
static void bulk_out_failed(void *ctx, uint32_t index, int status)
{
	struct mearas_link_conn *m = ctx;

	if (!stripe_rx_closed(m->stripe))
		link_log(&m->srv->cfg, MEARAS_LINK_LOG_WARN,
			 "link from %s: data connection %u: bulk to the client failed (%s): the link fails", m->peer,
			 index & ~STRIPE_FAIL_READ, mearas_link_strerror(status));
	fail_main(m);
}

bool mearas_link_conn_tx_clear(struct mearas_link_conn *c)
{
	/* c->t is set before the link's callbacks run and stays until on_closed */
	return c && c->t && c->t->ops->tx_clear(c->t);
}

uint32_t mearas_link_conn_streams(struct mearas_link_conn *c)
{
	struct mearas_link_server *s;
	uint32_t n = 0;

	if (!c || !c->stripe || !c->bulk_in || !c->srv)
		return 0;
	s = c->srv;
	pthread_mutex_lock(&c->bulk_lock);
	if (!c->tx && !stripe_rx_closed(c->stripe)) {
		/* once every data connection is up: a sender thread for each */
		uint32_t want = stripe_rx_streams(c->stripe), have = 0;

		pthread_mutex_lock(&s->lock);
		while (have < want && c->dt[have])
			have++;
		if (have == want)
			stripe_tx_new_ex(c->dt, want, s->cfg.chunk_bytes, true, bulk_out_failed, c, &c->tx);
		pthread_mutex_unlock(&s->lock);
	}
	n = stripe_tx_streams(c->tx);
	pthread_mutex_unlock(&c->bulk_lock);
	return n;
}

int mearas_link_conn_bulk(struct mearas_link_conn *c, uint64_t tag, const void *data, size_t len)
{
	uint64_t chunks, bytes;
	int rc;

	if (!c || !data || !len || !c->stripe)
		return MEARAS_LINK_E_INVAL;
	pthread_mutex_lock(&c->bulk_lock);
	if (!c->tx) {
		rc = stripe_rx_closed(c->stripe) ? MEARAS_LINK_E_BROKEN : MEARAS_LINK_E_INVAL;
	} else {
		rc = stripe_tx_send(c->tx, tag, ++c->bulk_out, data, len, &chunks, &bytes);
		if (rc)
			rc = MEARAS_LINK_E_BROKEN;
	}
	pthread_mutex_unlock(&c->bulk_lock);
	return rc;
}

#define DISCARD_PIECE (64u << 10)

/* One chunk on a data connection, for its link: checked against its
 * transfer, read where the caller places it, counted. */
static int data_chunk(struct mearas_link_conn *d, const struct link_frame_hdr *fh)
{
	struct mearas_link_conn *m = d->main;
	const struct mearas_link_server_ops *ops = &d->srv->ops;
	size_t n = fh->body_len - LINK_CHUNK_HDR;
	struct link_chunk ch;
	uint8_t *dst = NULL;
	int rc = conn_read_body(d, LINK_CHUNK_HDR);

	if (rc)
		return rc;
	wire_decode_chunk(d->buf, &ch);
	rc = stripe_rx_chunk_begin(m->stripe, ch.bulk_id, ch.offset, n, ch.total);
	if (rc == MEARAS_LINK_E_PROTO)
		link_log(&d->srv->cfg, MEARAS_LINK_LOG_WARN,
			 "link from %s: data connection %u: chunk of transfer %llu (%zu bytes at %llu of %llu) does "
			 "not fit the transfer", m->peer, d->stream_index, (unsigned long long)ch.bulk_id, n,
			 (unsigned long long)ch.offset, (unsigned long long)ch.total);
	if (rc)
		return rc;
	if (ops->chunk_dest) {
		/* bytes with no home are read and dropped in small pieces: a data
		 * connection holds no chunk-sized buffer for them */
		dst = ops->chunk_dest(ops->ctx, m, ch.tag, ch.offset, ch.total, n);
		if (!dst) {
			rc = conn_reserve(d, DISCARD_PIECE);
			for (size_t left = n; !rc && left; left -= left < DISCARD_PIECE ? left : DISCARD_PIECE)
				rc = conn_read(d, d->buf, left < DISCARD_PIECE ? left : DISCARD_PIECE);
			if (!rc)
				stripe_rx_chunk_end(m->stripe, ch.bulk_id, n);
			return rc;
		}
	} else {
		rc = conn_reserve(d, LINK_CHUNK_HDR + n);
		if (rc)
			return rc;
		dst = d->buf + LINK_CHUNK_HDR;
	}
	rc = conn_read(d, dst, n);
	if (!rc && ops->on_chunk)
		ops->on_chunk(ops->ctx, m, ch.tag, ch.bulk_id, ch.offset, ch.total, dst, n);
	if (!rc)
		stripe_rx_chunk_end(m->stripe, ch.bulk_id, n);
	return rc;
}

/* A data connection's frames: chunks only, until its link ends (or it
 * drops, which fails the link). */
static void run_data(struct mearas_link_conn *d)
{
	struct mearas_link_conn *m = d->main;
	struct mearas_link_server *s = d->srv;
	int rc;

	d->dead_ms = UINT32_MAX; /* idle between transfers: the main connection watches the peer */
	d->last_rx_ns = link_now_ns();
	/* its transport becomes the link's (bulk to the client goes over it) */
	pthread_mutex_lock(&s->lock);
	if (!stripe_rx_closed(m->stripe) && !m->dt[d->stream_index]) {
		m->dt[d->stream_index] = d->t;
		d->adopted = true;
	}
	pthread_mutex_unlock(&s->lock);
	link_log(&s->cfg, MEARAS_LINK_LOG_INFO, "link from %s: data connection %u of %u open (from %s)", m->peer,
		 d->stream_index, stripe_rx_streams(m->stripe), d->peer);
	for (;;) {
		uint8_t hdr[LINK_FRAME_HDR];
		struct link_frame_hdr fh;

		rc = conn_read(d, hdr, sizeof(hdr));
		if (!rc)
			rc = wire_decode_frame(hdr, &fh);
		if (rc)
			break;
		if (fh.type == LINK_FRAME_CHUNK && fh.body_len >= LINK_CHUNK_HDR)
			rc = data_chunk(d, &fh);
		else
			rc = fh.type == LINK_FRAME_CLOSE ? MEARAS_LINK_E_BROKEN : MEARAS_LINK_E_PROTO;
		if (rc)
			break;
	}
	pthread_mutex_lock(&d->send_lock);
	d->t->ops->shutdown(d->t);
	if (d->adopted) { /* the link's to destroy now */
		d->t = NULL;
		d->fd = -1;
	}
	pthread_mutex_unlock(&d->send_lock);
	if (!stripe_rx_closed(m->stripe) && !__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		/* the link is still up: it fails as a whole */
		link_log(&s->cfg, MEARAS_LINK_LOG_WARN, "link from %s: data connection %u (%s) dropped: %s: the link fails",
			 m->peer, d->stream_index, d->peer, mearas_link_strerror(rc));
		fail_main(m);
	}
	stripe_rx_detach(m->stripe);
}

static void conn_idle(void *ctx, bool spinning)
{
	struct mearas_link_conn *c = ctx;

	c->srv->ops.on_idle(c->srv->ops.ctx, c, spinning);
}

/* An authenticated link with its transport up: its frames, from on_open
 * to on_closed. Returns how it ended. */
static int run_link(struct mearas_link_conn *c, const struct link_handshake_result *hs)
{
	struct mearas_link_server *s = c->srv;
	int rc;

	/* The peer heartbeats every peer_heartbeat_ms; give it a few periods. */
	c->dead_ms = link_peer_dead_ms(s->cfg.dead_ms, hs->peer_heartbeat_ms);
	c->last_rx_ns = link_now_ns();
	char streams[64] = "";
	if (c->stripe)
		snprintf(streams, sizeof(streams), ", bulk striped over %u data connections",
			 stripe_rx_streams(c->stripe));
	link_log(&s->cfg, hs->ssl ? MEARAS_LINK_LOG_INFO : MEARAS_LINK_LOG_WARN, "link from %s (%s) open over %s, %s%s",
		 c->peer, hs->peer_name, c->t->ops->name, c->t->security, streams);
	if (s->ops.on_open)
		s->ops.on_open(s->ops.ctx, c);
	if (s->ops.on_idle) {
		c->t->idle = conn_idle;
		c->t->idle_ctx = c;
	}
	rc = serve_frames(c);
	if (rc && __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		rc = MEARAS_LINK_E_CLOSED; /* closed by mearas_link_server_stop */
	pthread_mutex_lock(&c->send_lock);
	__atomic_store_n(&c->broken, rc ? rc : MEARAS_LINK_E_CLOSED, __ATOMIC_RELEASE);
	c->t->ops->shutdown(c->t);
	pthread_mutex_unlock(&c->send_lock);
	end_stripe(c);
	if (rc)
		link_log(&s->cfg, MEARAS_LINK_LOG_WARN, "link from %s closed: %s", c->peer,
			 mearas_link_strerror(rc));
	if (s->ops.on_closed)
		s->ops.on_closed(s->ops.ctx, c, rc);
	return rc;
}

static void *conn_main(void *arg)
{
	struct mearas_link_conn *c = arg;
	struct mearas_link_server *s = c->srv;
	struct link_handshake_result hs;
	memset(&hs, 0, sizeof(hs));
	struct link_hs_hook hook = { .check = stripe_check, .ctx = c };
	int rc = link_handshake_server_hook(c->fd, &s->cfg, c->peer, s->verbs_available, &hook, &hs);
	rc = end_pending(s, c, rc);
	if (rc && hs.ssl) {
		/* authenticated, but refused (no room, or past the deadline): the
		 * TLS state was never handed to a transport */
		SSL_free(hs.ssl);
		hs.ssl = NULL;
	}
	if (!rc) {
		struct link_transport *t = NULL;
		if (hs.ssl)
			rc = link_sealed_transport_create(c->fd, hs.ssl, true, &s->cfg, c->peer, &t);
		else if (hs.transport == MEARAS_LINK_TRANSPORT_VERBS)
			rc = link_verbs_transport_create(c->fd, &s->cfg, 1, &t);
		else
			rc = link_tcp_transport_create(c->fd, &s->cfg, &t);
		pthread_mutex_lock(&c->send_lock);
		c->t = t;
		if (!rc && __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
			rc = MEARAS_LINK_E_CLOSED;
		pthread_mutex_unlock(&c->send_lock);
		if (rc)
			link_log(&s->cfg, MEARAS_LINK_LOG_ERR, "link from %s: %s transport setup failed: %s",
				 c->peer, hs.transport == MEARAS_LINK_TRANSPORT_VERBS ? "verbs" : "tcp",
				 mearas_link_strerror(rc));
	}
	if (rc) {
		pthread_mutex_lock(&c->send_lock);
		if (!c->t)
			close(c->fd);
		c->fd = -1;
		pthread_mutex_unlock(&c->send_lock);
		end_stripe(c);
		if (c->main)
			stripe_rx_detach(c->main->stripe);
		link_done(s, c);
		return NULL;
	}
	if (c->main)
		run_data(c);
	else
		run_link(c, &hs);
	link_done(s, c);
	return NULL;
}

static void free_conn(struct mearas_link_conn *c)
{
	if (c->t)
		c->t->ops->destroy(c->t);
	else if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_destroy(&c->send_lock);
	pthread_mutex_destroy(&c->bulk_lock);
	for (uint32_t i = 0; i < LINK_STREAMS_MAX; i++)
		if (c->dt[i])
			c->dt[i]->ops->destroy(c->dt[i]);
	stripe_rx_free(c->stripe);
	free(c->buf);
	free(c);
}

/* The handshake keeps its own deadline; a connection still in it half a
 * second past handshake_ms (its thread stuck in a write, say) has its socket
 * shut down, which ends whatever read or write its thread is in. */
#define DEADLINE_BACKSTOP_MS 500u

static void check_deadline(struct mearas_link_server *s, struct mearas_link_conn *c, uint64_t now)
{
	bool hit = false;

	if (c->deadline_hit ||
	    now - c->accept_ns < (uint64_t)(s->cfg.handshake_ms + DEADLINE_BACKSTOP_MS) * 1000000ull)
		return;
	pthread_mutex_lock(&c->send_lock);
	if (!c->admitted && !c->deadline_hit && c->fd >= 0 && !c->t) {
		shutdown(c->fd, SHUT_RDWR);
		c->deadline_hit = hit = true;
	}
	pthread_mutex_unlock(&c->send_lock);
	if (hit)
		log_limited(s, &s->rl_deadline, "link from %s dropped: handshake not done within %u ms", c->peer,
			    s->cfg.handshake_ms);
}

/* Joins and frees finished links, and drops connections past the handshake
 * deadline; with all set, stops and reaps every link. */
static void reap_conns(struct mearas_link_server *s, bool all)
{
	uint64_t now = link_now_ns();
	pthread_mutex_lock(&s->lock);
	struct mearas_link_conn **pp = &s->conns;
	while (*pp) {
		struct mearas_link_conn *c = *pp;
		if (all) {
			stop_conn(c);
		} else if (!__atomic_load_n(&c->finished, __ATOMIC_ACQUIRE)) {
			check_deadline(s, c, now);
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		pthread_mutex_unlock(&s->lock);
		pthread_join(c->thread, NULL);
		free_conn(c);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
}

static void format_peer(const struct sockaddr_storage *ss, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	}
	snprintf(out, cap, "%s:%u", host, port);
}

/* accept failed for want of fds or memory: the connection waiting in the
 * backlog is taken with the spare fd and closed at once, so that poll does
 * not spin on it and its peer learns now; the open links are not touched. */
static void shed_one(struct mearas_link_server *s, int err)
{
	log_limited(s, &s->rl_accept, "cannot accept a link connection: %s: new links are refused, open links go on",
		    strerror(err));
	if (s->spare_fd >= 0) {
		close(s->spare_fd);
		s->spare_fd = -1;
	}
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		usleep(10000); /* nothing shed: do not spin on the listener */
}

/* accept hands out the lowest free fd: fds 0..fd-1 are all in use, so an fd
 * within fd_reserve of the limit means fewer than fd_reserve are left for the
 * rest of the process (its clients, its open links' sessions). */
static bool fds_short(const struct mearas_link_server *s, int fd, unsigned long *limit)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return false;
	*limit = (unsigned long)rl.rlim_cur;
	return (rlim_t)fd + s->cfg.fd_reserve >= rl.rlim_cur;
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return true;
}

/* lock held: connections from the host of ss in the handshake */
static unsigned pending_from(const struct mearas_link_server *s, const struct sockaddr_storage *ss)
{
	unsigned n = 0;

	for (const struct mearas_link_conn *c = s->conns; c; c = c->next)
		n += c->pending && same_host(&c->addr, ss);
	return n;
}

/* A new connection: a pending slot, a conn and a thread, or refused. Runs
 * on the admission thread only, so the list it counts is complete. */
static void admit_one(struct mearas_link_server *s, int fd, const struct sockaddr_storage *ss)
{
	char peer[80];
	unsigned long limit = 0;
	unsigned per_host = s->cfg.max_pending > 4 ? s->cfg.max_pending / 4 : 1;
	bool full, host_full = false;
	int err;

	format_peer(ss, peer, sizeof(peer));
	if (fds_short(s, fd, &limit)) {
		log_limited(s, &s->rl_fds,
			    "link from %s refused: file descriptors run short (fd %d of %lu, %u kept in reserve)",
			    peer, fd, limit, s->cfg.fd_reserve);
		close(fd);
		return;
	}
	pthread_mutex_lock(&s->lock);
	full = s->npending >= s->cfg.max_pending;
	if (!full)
		host_full = pending_from(s, ss) >= per_host;
	if (!full && !host_full)
		s->npending++;
	pthread_mutex_unlock(&s->lock);
	if (full) {
		log_limited(s, &s->rl_pending,
			    "link from %s refused: %u connections already in the handshake, the most this node takes",
			    peer, s->cfg.max_pending);
		close(fd);
		return;
	}
	if (host_full) {
		log_limited(s, &s->rl_host,
			    "link from %s refused: %u connections from that host already in the handshake, the most "
			    "one host may have", peer, per_host);
		close(fd);
		return;
	}
	struct mearas_link_conn *c = calloc(1, sizeof(*c));
	err = ENOMEM;
	if (c) {
		c->srv = s;
		c->fd = fd;
		c->accept_ns = link_now_ns();
		pthread_mutex_init(&c->send_lock, NULL);
		pthread_mutex_init(&c->bulk_lock, NULL);
		memcpy(c->peer, peer, sizeof(peer));
		c->addr = *ss;
		c->pending = true; /* before its thread: end_pending clears it */
		err = link_tcp_set_options(fd, s->cfg.dead_ms) ? errno : 0;
		if (!err)
			err = pthread_create(&c->thread, NULL, conn_main, c);
	}
	if (err) {
		log_limited(s, &s->rl_thread, "link from %s refused: cannot start its thread: %s", peer,
			    strerror(err));
		pthread_mutex_lock(&s->lock);
		s->npending--;
		pthread_mutex_unlock(&s->lock);
		if (c)
			free_conn(c);
		else
			close(fd);
		return;
	}
	pthread_mutex_lock(&s->lock);
	c->next = s->conns;
	s->conns = c;
	pthread_mutex_unlock(&s->lock);
}

static void *admit_main(void *arg)
{
	struct mearas_link_server *s = arg;
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		reap_conns(s, false);
		struct pollfd pfd = { .fd = s->listen_fd, .events = POLLIN };
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				shed_one(s, errno);
			continue;
		}
		admit_one(s, fd, &ss);
	}
	return NULL;
}

static int open_listener(const char *bind_addr, uint16_t port, int *out_fd, uint16_t *out_port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char service[8];
	snprintf(service, sizeof(service), "%u", (unsigned)port);
	if (getaddrinfo(bind_addr, service, &hints, &res) != 0 || !res)
		return MEARAS_LINK_E_INVAL;
	int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
	int one = 1;
	int rc = MEARAS_LINK_E_SYS;
	/* a long backlog: a burst waits there to be refused at once, rather than
	 * having its SYNs dropped, which delays a good peer by seconds */
	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
	    bind(fd, res->ai_addr, res->ai_addrlen) == 0 && listen(fd, 512) == 0) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		getsockname(fd, (struct sockaddr *)&ss, &sl);
		*out_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							   : ((struct sockaddr_in *)&ss)->sin_port);
		*out_fd = fd;
		rc = MEARAS_LINK_OK;
	} else if (fd >= 0) {
		close(fd);
	}
	freeaddrinfo(res);
	return rc;
}

static void free_server(struct mearas_link_server *s)
{
	if (s->key) {
		memset(s->key, 0, s->cfg.key_len);
		free(s->key);
	}
	if (s->spare_fd >= 0)
		close(s->spare_fd);
	pthread_mutex_destroy(&s->rl_lock);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int mearas_link_server_start(const char *bind_addr, uint16_t port,
			     const struct mearas_link_config *cfg,
			     const struct mearas_link_server_ops *ops,
			     struct mearas_link_server **out)
{
	if (!cfg || !ops || !out || (cfg->key_len && !cfg->key))
		return MEARAS_LINK_E_INVAL;
	*out = NULL;
	struct mearas_link_server *s = calloc(1, sizeof(*s));
	if (!s)
		return MEARAS_LINK_E_NOMEM;
	link_config_effective(cfg, &s->cfg);
	s->ops = *ops;
	s->listen_fd = -1;
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->rl_lock, NULL);
	s->cfg.key = NULL;
	if (!link_key_copy(cfg, &s->cfg, &s->key)) {
		free_server(s);
		return MEARAS_LINK_E_NOMEM;
	}
	if (!cfg->key_len)
		link_log(&s->cfg, MEARAS_LINK_LOG_WARN, "no cluster key configured: every link is refused");
	if (s->cfg.encryption == MEARAS_LINK_ENCRYPTION_OFF)
		link_log(&s->cfg, MEARAS_LINK_LOG_WARN,
			 "LINK ENCRYPTION IS OFF: after the handshake, link messages travel in clear text with no "
			 "integrity check: anyone on the network path can read them, alter them or take over a "
			 "link (use on a trusted fabric only; both nodes need the same --link-encryption)");
	s->verbs_available = link_verbs_available(&s->cfg) == MEARAS_LINK_OK;
	int rc = open_listener(bind_addr, port, &s->listen_fd, &s->port);
	if (rc) {
		link_log(&s->cfg, MEARAS_LINK_LOG_ERR, "cannot listen on %s:%u", bind_addr ? bind_addr : "*",
			 (unsigned)port);
		free_server(s);
		return rc;
	}
	if (pthread_create(&s->admit_thread, NULL, admit_main, s)) {
		close(s->listen_fd);
		free_server(s);
		return MEARAS_LINK_E_SYS;
	}
	*out = s;
	return MEARAS_LINK_OK;
}

void mearas_link_server_stop(struct mearas_link_server *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->admit_thread, NULL);
	close(s->listen_fd);
	reap_conns(s, true);
	free_server(s);
}

int link_server_serve_transport(const struct mearas_link_config *cfg, const struct mearas_link_server_ops *ops,
				struct link_transport *t, uint32_t peer_heartbeat_ms)
{
	struct link_handshake_result hs = { .transport = MEARAS_LINK_TRANSPORT_TCP,
					    .peer_heartbeat_ms = peer_heartbeat_ms };
	struct mearas_link_server *s = calloc(1, sizeof(*s));
	struct mearas_link_conn *c = calloc(1, sizeof(*c));
	int rc;

	if (!s || !c) {
		free(s);
		free(c);
		t->ops->destroy(t);
		return MEARAS_LINK_E_NOMEM;
	}
	link_config_effective(cfg, &s->cfg);
	s->cfg.key = NULL; /* a link served here has no handshake */
	s->cfg.key_len = 0;
	s->ops = *ops;
	s->listen_fd = s->spare_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->rl_lock, NULL);
	c->srv = s;
	c->fd = -1;
	c->t = t;
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_mutex_init(&c->bulk_lock, NULL);
	snprintf(c->peer, sizeof(c->peer), "%s", t->ops->name);
	rc = run_link(c, &hs);
	free_conn(c);
	free_server(s);
	return rc;
}
