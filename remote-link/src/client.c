/* Client side of a link: batching of posted messages, synchronous calls with
 * replies matched by sequence number, chunked bulk transfers, heartbeats and
 * failure detection. Lock order: send_lock -> batch_lock -> pend_lock. */
#include "link_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pending {
	struct pending *next;
	uint64_t seq;
	void *buf;
	size_t cap;
	size_t len;
	int status;
	int done;
	/* asynchronous call: heap-owned, completed through one of these callbacks */
	mearas_link_reply_fn fn;
	mearas_link_stream_fn sfn;
	void *ctx;
};

struct mearas_link_reader {
	struct mearas_link *l;
	size_t left;
	uint32_t poll_ms;
	int status;
};

/* Completes an asynchronous call that got no reply (no lock held) and frees it. */
static void finish_async(struct pending *p)
{
	if (p->sfn)
		p->sfn(p->ctx, p->status, 0, NULL);
	else
		p->fn(p->ctx, p->status, p->status ? 0 : p->len);
	free(p);
}

static bool is_async(const struct pending *p)
{
	return p->fn || p->sfn;
}

struct batch {
	uint8_t *buf;
	size_t len, cap;
	uint32_t count;
	uint64_t first_ns;
};

struct mearas_link {
	struct mearas_link_config cfg;
	uint8_t *key;
	struct link_transport *t;

	pthread_mutex_t send_lock;
	pthread_mutex_t batch_lock;
	pthread_cond_t batch_cond;
	struct batch cur, spare; /* spare is touched only under send_lock */
	uint64_t next_seq;
	uint64_t next_bulk;

	pthread_mutex_t pend_lock;
	pthread_cond_t pend_cond;
	struct pending *pending;
	int rx_exited;

	int broken; /* 0 or the status that broke the link; atomic */
	int stop;   /* atomic */
	int closing; /* atomic */
	uint64_t last_rx_ns, last_hb_ns;
	pthread_t rx_thread, flush_thread;
	struct mearas_link_stats stats;
	/* striping (stripe.h): the data connections; bulk_lock makes one
	 * striped transfer at a time, and their ids 1, 2, ... in order */
	struct link_stripe_tx *stripe;
	pthread_mutex_t bulk_lock;
	uint64_t stripe_bulk;
	struct link_stripe_rx *bulk_rx; /* bulk from the server (cfg.bulk_dest) */
	uint64_t bulk_in;               /* the last one waited for (receive thread) */
	char peer[300];
};

#define STAT_ADD(l, field, v) __atomic_fetch_add(&(l)->stats.field, (v), __ATOMIC_RELAXED)

static int link_broken(struct mearas_link *l)
{
	return __atomic_load_n(&l->broken, __ATOMIC_ACQUIRE);
}

/* Marks the link failed, wakes everything, completes all pending calls. */
static void fail_link(struct mearas_link *l, int status)
{
	int expected = 0;
	if (!__atomic_compare_exchange_n(&l->broken, &expected, status, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	if (!__atomic_load_n(&l->closing, __ATOMIC_ACQUIRE))
		link_log(&l->cfg, MEARAS_LINK_LOG_ERR, "link broken: %s", mearas_link_strerror(status));
	l->t->ops->shutdown(l->t);
	stripe_tx_shutdown(l->stripe);
	if (l->bulk_rx)
		stripe_rx_close(l->bulk_rx); /* a wait for bulk from the server ends */
	struct pending *async = NULL, *next;
	pthread_mutex_lock(&l->pend_lock);
	for (struct pending *p = l->pending; p; p = next) {
		next = p->next;
		p->status = status;
		p->done = 1;
		if (is_async(p)) {
			p->next = async;
			async = p;
		}
	}
	l->pending = NULL;
	pthread_cond_broadcast(&l->pend_cond);
	pthread_mutex_unlock(&l->pend_lock);
	for (struct pending *p = async; p; p = next) {
		next = p->next;
		finish_async(p);
	}
	pthread_mutex_lock(&l->batch_lock);
	pthread_cond_broadcast(&l->batch_cond);
	pthread_mutex_unlock(&l->batch_lock);
}

/* Caller holds send_lock. */
static int send_locked(struct mearas_link *l, const struct iovec *iov, int n)
{
	int rc = link_broken(l);
	if (rc)
		return rc;
	size_t bytes = 0;
	for (int i = 0; i < n; i++)
		bytes += iov[i].iov_len;
	rc = l->t->ops->send_iov(l->t, iov, n);
	if (rc) {
		fail_link(l, MEARAS_LINK_E_BROKEN);
		return MEARAS_LINK_E_BROKEN;
	}
	STAT_ADD(l, bytes_sent, bytes);
	return MEARAS_LINK_OK;
}

static int batch_reserve(struct batch *b, size_t extra)
{
	size_t need = b->len + extra, cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap *= 2; /* batches grow by doubling: a few reallocations for a link's life */
	return link_buf_reserve(&b->buf, &b->cap, need, cap);
}

/* Sends the queued batch, plus one trailing message given by iov (may be NULL)
 * sent straight from the caller's memory. A non-NULL p is registered to get
 * the reply of that trailing message. Caller holds send_lock. */
static int flush_locked(struct mearas_link *l, const struct iovec *iov, int iovcnt,
			size_t msg_len, struct pending *p)
{
	uint8_t fhdr[LINK_FRAME_HDR], mhdr[LINK_MSG_HDR];
	pthread_mutex_lock(&l->batch_lock);
	struct batch tmp = l->cur;
	l->cur = l->spare;
	l->spare = tmp;
	uint64_t seq = 0;
	bool failed_async = false;
	if (iov) {
		seq = l->next_seq++;
		if (p) {
			p->seq = seq;
			pthread_mutex_lock(&l->pend_lock);
			int broken = link_broken(l);
			if (broken) { /* fail_link already swept the list */
				p->status = broken;
				p->done = 1;
				failed_async = is_async(p);
			} else {
				p->next = l->pending;
				l->pending = p;
			}
			pthread_mutex_unlock(&l->pend_lock);
		}
	}
	pthread_mutex_unlock(&l->batch_lock);
	if (failed_async) {
		finish_async(p);
		p = NULL;
	}

	struct batch *b = &l->spare;
	uint32_t count = b->count + (iov ? 1 : 0);
	if (count == 0)
		return link_broken(l);
	struct iovec out[64];
	int n = 0;
	struct link_frame_hdr fh = { .type = LINK_FRAME_BATCH, .count = count,
				     .body_len = (uint32_t)(b->len + (iov ? LINK_MSG_HDR + msg_len : 0)) };
	wire_encode_frame(fhdr, &fh);
	out[n++] = (struct iovec){ fhdr, sizeof(fhdr) };
	if (b->len)
		out[n++] = (struct iovec){ b->buf, b->len };
	if (iov) {
		wire_encode_msg(mhdr, seq, (uint32_t)msg_len, p ? LINK_MSG_WANTS_REPLY : 0);
		out[n++] = (struct iovec){ mhdr, sizeof(mhdr) };
		for (int i = 0; i < iovcnt; i++)
			if (iov[i].iov_len)
				out[n++] = iov[i];
	}
	int rc = send_locked(l, out, n);
	b->len = 0;
	b->count = 0;
	if (rc == MEARAS_LINK_OK)
		STAT_ADD(l, batches_sent, 1);
	return rc;
}

static int postv(struct mearas_link *l, const struct iovec *iov, int iovcnt, bool wake_timer)
{
	size_t total;
	if (!l)
		return MEARAS_LINK_E_INVAL;
	int rc = link_iov_total(iov, iovcnt, 32, &total);
	if (rc)
		return rc;
	if (total + LINK_MSG_HDR > l->cfg.batch_max_bytes) {
		/* Too big to batch: send after the queue, straight from caller memory. */
		pthread_mutex_lock(&l->send_lock);
		rc = flush_locked(l, iov, iovcnt, total, NULL);
		pthread_mutex_unlock(&l->send_lock);
		if (!rc)
			STAT_ADD(l, msgs_posted, 1);
		return rc;
	}
	pthread_mutex_lock(&l->batch_lock);
	rc = link_broken(l);
	if (!rc)
		rc = batch_reserve(&l->cur, LINK_MSG_HDR + total);
	if (rc) {
		pthread_mutex_unlock(&l->batch_lock);
		return rc;
	}
	struct batch *b = &l->cur;
	wire_encode_msg(b->buf + b->len, l->next_seq++, (uint32_t)total, 0);
	b->len += LINK_MSG_HDR;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len)
			memcpy(b->buf + b->len, iov[i].iov_base, iov[i].iov_len);
		b->len += iov[i].iov_len;
	}
	if (b->count++ == 0) {
		b->first_ns = link_now_ns();
		if (wake_timer)
			pthread_cond_signal(&l->batch_cond);
	}
	bool full = b->len >= l->cfg.batch_max_bytes || b->count >= l->cfg.batch_max_msgs;
	pthread_mutex_unlock(&l->batch_lock);
	STAT_ADD(l, msgs_posted, 1);
	if (full) {
		pthread_mutex_lock(&l->send_lock);
		rc = flush_locked(l, NULL, 0, 0, NULL);
		pthread_mutex_unlock(&l->send_lock);
	}
	return rc;
}

int mearas_link_postv(struct mearas_link *l, const struct iovec *iov, int iovcnt)
{
	return postv(l, iov, iovcnt, true);
}

int mearas_link_postv_burst(struct mearas_link *l, const struct iovec *iov, int iovcnt)
{
	return postv(l, iov, iovcnt, false);
}

int mearas_link_post(struct mearas_link *l, const void *data, size_t len)
{
	struct iovec iov = { (void *)data, len };
	return mearas_link_postv(l, &iov, 1);
}

int mearas_link_flush(struct mearas_link *l)
{
	if (!l)
		return MEARAS_LINK_E_INVAL;
	pthread_mutex_lock(&l->send_lock);
	int rc = flush_locked(l, NULL, 0, 0, NULL);
	pthread_mutex_unlock(&l->send_lock);
	return rc;
}

int mearas_link_call(struct mearas_link *l, const void *req, size_t req_len, void *reply,
		     size_t reply_cap, size_t *reply_len, uint32_t timeout_ms)
{
	if (!l || (req_len && !req) || (reply_cap && !reply) || req_len > MEARAS_LINK_MAX_MSG)
		return MEARAS_LINK_E_INVAL;
	struct pending p = { .buf = reply, .cap = reply_cap };
	struct iovec iov = { (void *)req, req_len };
	uint64_t deadline = link_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	int rc = link_broken(l);
	if (rc)
		return rc;
	STAT_ADD(l, calls, 1);
	pthread_mutex_lock(&l->send_lock);
	rc = flush_locked(l, &iov, 1, req_len, &p);
	pthread_mutex_unlock(&l->send_lock);
	(void)rc; /* a failed send completes p through fail_link */

	pthread_mutex_lock(&l->pend_lock);
	while (!p.done) {
		if (!timeout_ms) {
			pthread_cond_wait(&l->pend_cond, &l->pend_lock);
			continue;
		}
		uint64_t now = link_now_ns();
		struct pending **pp = &l->pending;
		while (*pp && *pp != &p)
			pp = &(*pp)->next;
		if (now >= deadline && *pp) {
			*pp = p.next; /* the receiver has not claimed it: give up */
			p.status = MEARAS_LINK_E_TIMEOUT;
			p.done = 1;
			break;
		}
		/* Claimed by the receiver (reply being read): wait for it; that read is
		 * itself bounded by dead_ms. */
		uint64_t until = now >= deadline ? now + 10000000ull : deadline;
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
				       .tv_nsec = (long)(until % 1000000000ull) };
		pthread_cond_timedwait(&l->pend_cond, &l->pend_lock, &ts);
	}
	pthread_mutex_unlock(&l->pend_lock);
	if (p.status == MEARAS_LINK_OK && reply_len)
		*reply_len = p.len;
	return p.status;
}

/* Send a call that completes through a callback (*tmpl says which): the
 * pending entry is heap-owned and freed when the reply or a failure comes. */
static int send_async_call(struct mearas_link *l, const void *req, size_t req_len, const struct pending *tmpl)
{
	int rc = link_broken(l);
	if (rc)
		return rc;
	struct pending *p = calloc(1, sizeof(*p));
	if (!p)
		return MEARAS_LINK_E_NOMEM;
	*p = *tmpl;
	struct iovec iov = { (void *)req, req_len };
	STAT_ADD(l, calls, 1);
	pthread_mutex_lock(&l->send_lock);
	flush_locked(l, &iov, 1, req_len, p); /* a failed send completes p through fail_link */
	pthread_mutex_unlock(&l->send_lock);
	return MEARAS_LINK_OK;
}

int mearas_link_call_async(struct mearas_link *l, const void *req, size_t req_len, void *reply,
			   size_t reply_cap, mearas_link_reply_fn fn, void *ctx)
{
	if (!l || !fn || (req_len && !req) || (reply_cap && !reply) || req_len > MEARAS_LINK_MAX_MSG)
		return MEARAS_LINK_E_INVAL;
	return send_async_call(l, req, req_len,
			       &(struct pending){ .buf = reply, .cap = reply_cap, .fn = fn, .ctx = ctx });
}

int mearas_link_call_stream(struct mearas_link *l, const void *req, size_t req_len, mearas_link_stream_fn fn,
			    void *ctx)
{
	if (!l || !fn || (req_len && !req) || req_len > MEARAS_LINK_MAX_MSG)
		return MEARAS_LINK_E_INVAL;
	return send_async_call(l, req, req_len, &(struct pending){ .sfn = fn, .ctx = ctx });
}

int mearas_link_read(struct mearas_link_reader *r, void *dst, size_t n)
{
	if (!r || (n && !dst))
		return MEARAS_LINK_E_INVAL;
	if (r->status)
		return r->status;
	if (n > r->left)
		return MEARAS_LINK_E_INVAL;
	int rc = link_read_exact(r->l->t, dst, n, r->poll_ms, r->l->cfg.dead_ms, &r->l->last_rx_ns, &r->l->stop);
	if (rc)
		r->status = rc;
	else
		r->left -= n;
	return rc;
}

size_t mearas_link_read_left(const struct mearas_link_reader *r)
{
	return r ? r->left : 0;
}

/* A bulk transfer over the data connections, then its BULK_END on the
 * link's own connection: whatever is sent after it reaches the peer after
 * the transfer's bytes. */
static int bulk_striped(struct mearas_link *l, uint64_t tag, const void *data, size_t len)
{
	uint8_t fhdr[LINK_FRAME_HDR], body[LINK_BULK_END_BODY];
	struct link_frame_hdr fh = { .type = LINK_FRAME_BULK_END, .body_len = LINK_BULK_END_BODY };
	struct iovec iov[2] = { { fhdr, sizeof(fhdr) }, { body, sizeof(body) } };
	uint64_t chunks = 0, bytes = 0;
	int rc = mearas_link_flush(l);

	if (rc)
		return rc;
	pthread_mutex_lock(&l->bulk_lock);
	uint64_t id = ++l->stripe_bulk;
	rc = stripe_tx_send(l->stripe, tag, id, data, len, &chunks, &bytes);
	STAT_ADD(l, bulk_chunks, chunks);
	STAT_ADD(l, bytes_sent, bytes);
	if (!rc) {
		wire_encode_frame(fhdr, &fh);
		wire_put_u64(body, id);
		wire_put_u64(body + 8, len);
		pthread_mutex_lock(&l->send_lock);
		rc = send_locked(l, iov, 2);
		pthread_mutex_unlock(&l->send_lock);
	} else if (!link_broken(l)) {
		fail_link(l, rc);
	}
	pthread_mutex_unlock(&l->bulk_lock);
	return rc ? (link_broken(l) ? link_broken(l) : rc) : MEARAS_LINK_OK;
}

/* stripe_tx: a data connection could not send: the link fails */
static void stream_failed(void *ctx, uint32_t index, int status)
{
	struct mearas_link *l = ctx;

	if (!link_broken(l) && !__atomic_load_n(&l->closing, __ATOMIC_ACQUIRE))
		link_log(&l->cfg, MEARAS_LINK_LOG_ERR, "link to %s: data connection %u failed (%s%s): the link fails",
			 l->peer, index & ~STRIPE_FAIL_READ, index & STRIPE_FAIL_READ ? "receiving: " : "",
			 mearas_link_strerror(status));
	fail_link(l, MEARAS_LINK_E_BROKEN);
}

int mearas_link_bulk_wait(struct mearas_link *l, uint64_t total)
{
	int rc;

	if (!l || !l->bulk_rx || !total)
		return MEARAS_LINK_E_INVAL;
	rc = stripe_rx_end(l->bulk_rx, ++l->bulk_in, total, &l->stop, l->cfg.dead_ms);
	if (rc == MEARAS_LINK_E_PROTO)
		link_log(&l->cfg, MEARAS_LINK_LOG_ERR, "link to %s: bulk transfer %llu from the peer: not %llu bytes",
			 l->peer, (unsigned long long)l->bulk_in, (unsigned long long)total);
	if (rc) {
		fail_link(l, rc == MEARAS_LINK_E_CLOSED ? MEARAS_LINK_E_BROKEN : rc);
		rc = link_broken(l);
	}
	return rc;
}

uint32_t mearas_link_streams(const struct mearas_link *l)
{
	return l ? stripe_tx_streams(l->stripe) : 0;
}

bool mearas_link_tx_clear(struct mearas_link *l)
{
	return l && l->t && l->t->ops->tx_clear(l->t);
}

void link_client_stream_cut(struct mearas_link *l, uint32_t index)
{
	stripe_tx_cut(l->stripe, index);
}

int mearas_link_bulk(struct mearas_link *l, uint64_t tag, const void *data, size_t len)
{
	if (!l || !data || !len)
		return MEARAS_LINK_E_INVAL;
	if (l->stripe)
		return bulk_striped(l, tag, data, len);
	uint64_t id = __atomic_fetch_add(&l->next_bulk, 1, __ATOMIC_RELAXED);
	int rc = mearas_link_flush(l);
	for (size_t off = 0; !rc && off < len; off += l->cfg.chunk_bytes) {
		size_t n = len - off < l->cfg.chunk_bytes ? len - off : l->cfg.chunk_bytes;
		uint8_t fhdr[LINK_FRAME_HDR], chdr[LINK_CHUNK_HDR];
		struct link_frame_hdr fh = { .type = LINK_FRAME_CHUNK, .count = 1,
					     .body_len = (uint32_t)(LINK_CHUNK_HDR + n) };
		wire_encode_frame(fhdr, &fh);
		wire_put_u64(chdr, tag);
		wire_put_u64(chdr + 8, id);
		wire_put_u64(chdr + 16, off);
		wire_put_u64(chdr + 24, len);
		struct iovec iov[3] = { { fhdr, sizeof(fhdr) }, { chdr, sizeof(chdr) },
					{ (uint8_t *)data + off, n } };
		pthread_mutex_lock(&l->send_lock);
		rc = send_locked(l, iov, 3);
		pthread_mutex_unlock(&l->send_lock);
		if (!rc)
			STAT_ADD(l, bulk_chunks, 1);
	}
	return rc;
}

int mearas_link_health(struct mearas_link *l)
{
	return l ? link_broken(l) : MEARAS_LINK_E_INVAL;
}

void mearas_link_get_stats(struct mearas_link *l, struct mearas_link_stats *out)
{
	out->msgs_posted = __atomic_load_n(&l->stats.msgs_posted, __ATOMIC_RELAXED);
	out->batches_sent = __atomic_load_n(&l->stats.batches_sent, __ATOMIC_RELAXED);
	out->calls = __atomic_load_n(&l->stats.calls, __ATOMIC_RELAXED);
	out->bulk_chunks = __atomic_load_n(&l->stats.bulk_chunks, __ATOMIC_RELAXED);
	out->heartbeats_sent = __atomic_load_n(&l->stats.heartbeats_sent, __ATOMIC_RELAXED);
	out->bytes_sent = __atomic_load_n(&l->stats.bytes_sent, __ATOMIC_RELAXED);
	out->bytes_received = __atomic_load_n(&l->stats.bytes_received, __ATOMIC_RELAXED);
	out->rtt_ns = __atomic_load_n(&l->stats.rtt_ns, __ATOMIC_RELAXED);
}

static int send_simple_frame(struct mearas_link *l, uint8_t type)
{
	uint8_t fhdr[LINK_FRAME_HDR], stamp[8];
	uint32_t body = type == LINK_FRAME_HEARTBEAT ? 8 : 0;
	struct link_frame_hdr fh = { .type = type, .body_len = body };
	wire_encode_frame(fhdr, &fh);
	wire_put_u64(stamp, link_now_ns());
	struct iovec iov[2] = { { fhdr, sizeof(fhdr) }, { stamp, body } };
	pthread_mutex_lock(&l->send_lock);
	int rc = send_locked(l, iov, body ? 2 : 1);
	pthread_mutex_unlock(&l->send_lock);
	return rc;
}

static struct timespec ns_to_ts(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}

/* Flushes batches after batch_delay_us and sends heartbeats on a quiet link. */
static void *flush_main(void *arg)
{
	struct mearas_link *l = arg;
	uint64_t delay_ns = (uint64_t)l->cfg.batch_delay_us * 1000ull;
	uint64_t hb_ns = (uint64_t)l->cfg.heartbeat_ms * 1000000ull;
	pthread_mutex_lock(&l->batch_lock);
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE) && !link_broken(l)) {
		uint64_t now = link_now_ns();
		if (l->cur.count && now >= l->cur.first_ns + delay_ns) {
			pthread_mutex_unlock(&l->batch_lock);
			mearas_link_flush(l);
			pthread_mutex_lock(&l->batch_lock);
			continue;
		}
		uint64_t last_rx = __atomic_load_n(&l->last_rx_ns, __ATOMIC_RELAXED);
		uint64_t hb_due = (last_rx > l->last_hb_ns ? last_rx : l->last_hb_ns) + hb_ns;
		if (now >= hb_due) {
			l->last_hb_ns = now;
			pthread_mutex_unlock(&l->batch_lock);
			if (send_simple_frame(l, LINK_FRAME_HEARTBEAT) == MEARAS_LINK_OK)
				STAT_ADD(l, heartbeats_sent, 1);
			pthread_mutex_lock(&l->batch_lock);
			continue;
		}
		uint64_t until = hb_due;
		if (l->cur.count && l->cur.first_ns + delay_ns < until)
			until = l->cur.first_ns + delay_ns;
		struct timespec ts = ns_to_ts(until);
		pthread_cond_timedwait(&l->batch_cond, &l->batch_lock, &ts);
	}
	pthread_mutex_unlock(&l->batch_lock);
	return NULL;
}

/* Discards n bytes of a frame body we do not keep. */
static int skip_bytes(struct mearas_link *l, size_t n, uint32_t poll_ms)
{
	uint8_t sink[4096];
	while (n) {
		size_t k = n < sizeof(sink) ? n : sizeof(sink);
		int rc = link_read_exact(l->t, sink, k, poll_ms, l->cfg.dead_ms, &l->last_rx_ns, &l->stop);
		if (rc)
			return rc;
		n -= k;
	}
	return MEARAS_LINK_OK;
}

/* A heartbeat's answer echoes the time it was sent at: the link's round trip. */
static int heartbeat_ack(struct mearas_link *l, uint32_t body_len, uint32_t poll_ms)
{
	uint8_t stamp[8];
	uint64_t sent, now;
	int rc;

	if (body_len < sizeof(stamp))
		return skip_bytes(l, body_len, poll_ms);
	rc = link_read_exact(l->t, stamp, sizeof(stamp), poll_ms, l->cfg.dead_ms, &l->last_rx_ns, &l->stop);
	if (rc)
		return rc;
	sent = wire_get_u64(stamp);
	now = link_now_ns();
	if (sent && sent <= now)
		__atomic_store_n(&l->stats.rtt_ns, now - sent, __ATOMIC_RELAXED);
	return skip_bytes(l, body_len - sizeof(stamp), poll_ms);
}

static int handle_reply(struct mearas_link *l, const struct link_frame_hdr *fh, uint32_t poll_ms)
{
	uint8_t rh[LINK_MSG_HDR];
	uint64_t seq;
	uint32_t len;
	if (fh->body_len < LINK_MSG_HDR)
		return MEARAS_LINK_E_PROTO;
	int rc = link_read_exact(l->t, rh, sizeof(rh), poll_ms, l->cfg.dead_ms, &l->last_rx_ns, &l->stop);
	if (rc)
		return rc;
	rc = wire_decode_reply(fh, rh, &seq, &len);
	if (rc)
		return rc;

	pthread_mutex_lock(&l->pend_lock);
	struct pending **pp = &l->pending, *p;
	while (*pp && (*pp)->seq != seq)
		pp = &(*pp)->next;
	p = *pp;
	if (p)
		*pp = p->next; /* claimed: the caller now waits for us */
	pthread_mutex_unlock(&l->pend_lock);
	if (!p)
		return skip_bytes(l, len, poll_ms); /* caller timed out earlier */

	if (p->sfn) {
		struct mearas_link_reader r = { .l = l, .left = len, .poll_ms = poll_ms };
		p->sfn(p->ctx, MEARAS_LINK_OK, len, &r);
		free(p);
		rc = r.status;
		if (!rc && r.left)
			rc = skip_bytes(l, r.left, poll_ms); /* what the callback left unread */
		STAT_ADD(l, bytes_received, LINK_FRAME_HDR + fh->body_len);
		return rc;
	}
	int status;
	if (len <= p->cap) {
		status = link_read_exact(l->t, p->buf, len, poll_ms, l->cfg.dead_ms, &l->last_rx_ns,
					 &l->stop);
		rc = status;
	} else {
		rc = skip_bytes(l, len, poll_ms);
		status = rc ? rc : MEARAS_LINK_E_TOOBIG;
	}
	STAT_ADD(l, bytes_received, LINK_FRAME_HDR + fh->body_len);
	if (p->fn) {
		p->len = len;
		p->status = status;
		p->done = 1;
		finish_async(p);
		return rc;
	}
	pthread_mutex_lock(&l->pend_lock);
	p->len = len;
	p->status = status;
	p->done = 1;
	pthread_cond_broadcast(&l->pend_cond);
	pthread_mutex_unlock(&l->pend_lock);
	return rc;
}

static void *rx_main(void *arg)
{
	struct mearas_link *l = arg;
	uint32_t poll_ms = l->cfg.heartbeat_ms < 100 ? l->cfg.heartbeat_ms : 100;
	int rc;
	for (;;) {
		uint8_t hdr[LINK_FRAME_HDR];
		struct link_frame_hdr fh;
		rc = link_read_exact(l->t, hdr, sizeof(hdr), poll_ms, l->cfg.dead_ms, &l->last_rx_ns,
				     &l->stop);
		if (rc)
			break;
		rc = wire_decode_frame(hdr, &fh);
		if (rc)
			break;
		if (fh.type == LINK_FRAME_REPLY) {
			rc = handle_reply(l, &fh, poll_ms);
		} else if (fh.type == LINK_FRAME_HEARTBEAT_ACK && fh.body_len <= 64) {
			rc = heartbeat_ack(l, fh.body_len, poll_ms);
		} else if (fh.type == LINK_FRAME_CLOSE) {
			link_log(&l->cfg, MEARAS_LINK_LOG_WARN, "server closed the link");
			rc = MEARAS_LINK_E_BROKEN;
		} else {
			rc = MEARAS_LINK_E_PROTO;
		}
		if (rc)
			break;
	}
	fail_link(l, rc == MEARAS_LINK_E_CLOSED ? MEARAS_LINK_E_CLOSED : rc);
	pthread_mutex_lock(&l->pend_lock);
	l->rx_exited = 1;
	pthread_cond_broadcast(&l->pend_cond);
	pthread_mutex_unlock(&l->pend_lock);
	return NULL;
}

static void free_link(struct mearas_link *l)
{
	stripe_tx_free(l->stripe);
	stripe_rx_free(l->bulk_rx);
	if (l->t)
		l->t->ops->destroy(l->t);
	free(l->cur.buf);
	free(l->spare.buf);
	if (l->key) {
		memset(l->key, 0, l->cfg.key_len);
		free(l->key);
	}
	pthread_mutex_destroy(&l->send_lock);
	pthread_mutex_destroy(&l->batch_lock);
	pthread_mutex_destroy(&l->pend_lock);
	pthread_mutex_destroy(&l->bulk_lock);
	pthread_cond_destroy(&l->batch_cond);
	pthread_cond_destroy(&l->pend_cond);
	free(l);
}

static void init_cond_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

/* A link with cfg's settings (its own copy of the key), no transport yet. */
static struct mearas_link *link_new(const struct mearas_link_config *cfg)
{
	struct mearas_link *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	link_config_effective(cfg, &l->cfg);
	pthread_mutex_init(&l->send_lock, NULL);
	pthread_mutex_init(&l->batch_lock, NULL);
	pthread_mutex_init(&l->pend_lock, NULL);
	pthread_mutex_init(&l->bulk_lock, NULL);
	init_cond_monotonic(&l->batch_cond);
	init_cond_monotonic(&l->pend_cond);
	if (!link_key_copy(cfg, &l->cfg, &l->key)) {
		free_link(l);
		return NULL;
	}
	return l;
}

/* The transport is up: the receive and flush threads start; l is freed on failure. */
static int link_start(struct mearas_link *l)
{
	l->last_rx_ns = link_now_ns();
	l->last_hb_ns = l->last_rx_ns;
	l->next_seq = 1;
	l->t->idle = l->cfg.rx_idle;
	l->t->idle_ctx = l->cfg.rx_idle_ctx;
	if (pthread_create(&l->rx_thread, NULL, rx_main, l)) {
		free_link(l);
		return MEARAS_LINK_E_SYS;
	}
	if (pthread_create(&l->flush_thread, NULL, flush_main, l)) {
		__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
		pthread_join(l->rx_thread, NULL);
		free_link(l);
		return MEARAS_LINK_E_SYS;
	}
	return MEARAS_LINK_OK;
}

int link_client_open_transport(const struct mearas_link_config *cfg, struct link_transport *t,
			       struct mearas_link **out)
{
	struct mearas_link *l = link_new(cfg);
	int rc;

	*out = NULL;
	if (!l) {
		t->ops->destroy(t);
		return MEARAS_LINK_E_NOMEM;
	}
	l->t = t;
	rc = link_start(l);
	if (!rc)
		*out = l;
	return rc;
}

/* One TCP connection and its handshake, within timeout_ms; on success *fd
 * and *ssl are the link's (ssl NULL when unencrypted). */
static int connect_once(const char *host, uint16_t port, const struct mearas_link_config *cfg, const char *peer,
			uint32_t timeout_ms, int *fd, SSL **ssl, bool *turned_away, struct link_hs_stripe *st)
{
	struct mearas_link_config c = *cfg;
	int rc;

	*fd = -1;
	*turned_away = false;
	c.connect_timeout_ms = timeout_ms;
	rc = link_tcp_connect(host, port, timeout_ms, fd);
	if (!rc)
		rc = link_tcp_set_options(*fd, c.dead_ms);
	if (!rc)
		rc = link_handshake_client_stripe(*fd, &c, peer, ssl, turned_away, st);
	if (rc && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

/* A server admits a bounded number of connections into its handshake (a
 * few per host) and closes the rest at once; the clients of one node that
 * open links together (ranks of a job starting at once) go past that. A
 * connection turned away before the server's challenge is tried again after
 * a randomized, growing pause, until connect_timeout_ms is spent. */
#define RETRY_FIRST_US 1000u
#define RETRY_MAX_US 100000u

static uint32_t retry_pause_us(uint32_t *backoff_us, uint64_t *seed)
{
	uint32_t base = *backoff_us;

	*seed ^= *seed << 13;
	*seed ^= *seed >> 7;
	*seed ^= *seed << 17;
	*backoff_us = base * 2 > RETRY_MAX_US ? RETRY_MAX_US : base * 2;
	return base / 2 + (uint32_t)(*seed % (base / 2 + 1)); /* base/2 .. base */
}

/* One connection of a link and its handshake (st: striping, as in
 * link_handshake_client_stripe), tried again while the server turns it
 * away before its challenge, until deadline. */
static int connect_retry(const char *host, uint16_t port, const struct mearas_link_config *cfg, const char *peer,
			 uint64_t deadline, struct link_hs_stripe *st, int *fd, SSL **ssl, unsigned *tries,
			 bool *turned_away)
{
	uint64_t seed = link_now_ns() ^ (uint64_t)(uintptr_t)fd ^ 0x9e3779b97f4a7c15ull;
	uint32_t backoff_us = RETRY_FIRST_US;
	int rc;

	*tries = 0;
	for (;;) {
		uint64_t now = link_now_ns();
		uint32_t left_ms = now < deadline ? (uint32_t)((deadline - now + 999999u) / 1000000u) : 0;
		(*tries)++;
		rc = connect_once(host, port, cfg, peer, left_ms ? left_ms : 1, fd, ssl, turned_away, st);
		if (!rc || !*turned_away)
			return rc;
		uint32_t pause_us = retry_pause_us(&backoff_us, &seed);
		if (link_now_ns() + (uint64_t)pause_us * 1000u >= deadline)
			return rc;
		usleep(pause_us);
	}
}

/* The transport of a connection whose handshake is done (fd and ssl taken over). */
static int transport_of(const struct mearas_link_config *cfg, const char *peer, int fd, SSL *ssl,
			struct link_transport **t)
{
	int rc;

	if (ssl)
		rc = link_sealed_transport_create(fd, ssl, false, cfg, peer, t);
	else if (cfg->transport == MEARAS_LINK_TRANSPORT_VERBS)
		rc = link_verbs_transport_create(fd, cfg, 0, t);
	else
		rc = link_tcp_transport_create(fd, cfg, t);
	if (rc)
		close(fd); /* a transport that failed leaves it open */
	return rc;
}

/* The data connections the server granted (st), each with the handshake
 * of the link, naming its link id and place; all or none. */
static int open_streams(struct mearas_link *l, const char *host, uint16_t port, uint64_t deadline,
			const struct link_hs_stripe *st)
{
	struct link_transport *t[LINK_STREAMS_MAX];
	uint32_t n = 0;
	int rc = MEARAS_LINK_OK;

	for (; !rc && n < st->granted; n++) {
		struct link_hs_stripe d = { .attach = true, .index = n };
		unsigned tries;
		bool away;
		int fd = -1;
		SSL *ssl = NULL;

		memcpy(d.link_id, st->link_id, LINK_ID_BYTES);
		rc = connect_retry(host, port, &l->cfg, l->peer, deadline, &d, &fd, &ssl, &tries, &away);
		if (!rc)
			rc = transport_of(&l->cfg, l->peer, fd, ssl, &t[n]);
		if (rc) {
			link_log(&l->cfg, MEARAS_LINK_LOG_ERR, "link to %s failed: data connection %u of %u: %s", l->peer,
				 n, st->granted, mearas_link_strerror(rc));
			break;
		}
	}
	if (rc) {
		for (uint32_t i = 0; i < n; i++)
			t[i]->ops->destroy(t[i]);
		return rc;
	}
	rc = stripe_tx_new(t, n, l->cfg.chunk_bytes, stream_failed, l, &l->stripe);
	if (!rc && l->cfg.bulk_dest) {
		/* bulk from the server: a reader per data connection */
		l->bulk_rx = stripe_rx_new(n);
		rc = l->bulk_rx ? stripe_tx_read(l->stripe, l->bulk_rx, l->cfg.bulk_dest, l->cfg.bulk_ctx)
				: MEARAS_LINK_E_NOMEM;
	}
	return rc;
}

/* One link over cfg's transport (TCP or verbs). */
static int connect_with(const char *host, uint16_t port, const struct mearas_link_config *cfg,
			struct mearas_link **out)
{
	struct mearas_link *l = link_new(cfg);
	if (!l)
		return MEARAS_LINK_E_NOMEM;

	char *peer = l->peer;
	snprintf(l->peer, sizeof(l->peer), "%s:%u", host, (unsigned)port);
	int rc = link_client_precheck(&l->cfg, peer);
	if (!rc && l->cfg.transport == MEARAS_LINK_TRANSPORT_VERBS)
		rc = link_verbs_available(&l->cfg);
	int fd = -1;
	SSL *ssl = NULL;
	bool turned_away = false, encrypted;
	unsigned tries = 0;
	uint64_t deadline = link_now_ns() + (uint64_t)l->cfg.connect_timeout_ms * 1000000ull;
	struct link_hs_stripe st = { .want = l->cfg.transport == MEARAS_LINK_TRANSPORT_TCP ? l->cfg.streams : 0,
				     .bulk_in = l->cfg.bulk_dest != NULL };
	if (!rc)
		rc = connect_retry(host, port, &l->cfg, peer, deadline, &st, &fd, &ssl, &tries, &turned_away);
	encrypted = ssl != NULL;
	if (!rc)
		rc = transport_of(&l->cfg, peer, fd, ssl, &l->t);
	else if (fd >= 0)
		close(fd);
	if (!rc && st.granted > 1)
		rc = open_streams(l, host, port, deadline, &st);
	if (rc) {
		/* refusals of the handshake were logged with their reason already */
		if (turned_away)
			link_log(&l->cfg, MEARAS_LINK_LOG_ERR,
				 "link to %s failed: the peer closed all %u connections before its challenge "
				 "within %u ms (it is turning new links away: too many in the handshake, links "
				 "open or fds short; its log says which)",
				 peer, tries, l->cfg.connect_timeout_ms);
		else if (rc != MEARAS_LINK_E_VERSION && rc != MEARAS_LINK_E_AUTH && rc != MEARAS_LINK_E_ENCRYPTION)
			link_log(&l->cfg, MEARAS_LINK_LOG_ERR, "link to %s failed: %s", peer,
				 mearas_link_strerror(rc));
		free_link(l);
		return rc;
	}
	char again[48] = "", streams[96] = "";
	if (tries > 1)
		snprintf(again, sizeof(again), " (admitted at attempt %u)", tries);
	if (l->stripe)
		snprintf(streams, sizeof(streams), ", bulk striped over %u data connections", stripe_tx_streams(l->stripe));
	else if (st.want > 1)
		snprintf(streams, sizeof(streams), ", bulk on the one connection (the peer grants no data connections)");
	link_log(&l->cfg, encrypted ? MEARAS_LINK_LOG_INFO : MEARAS_LINK_LOG_WARN, "link to %s open over %s, %s%s%s",
		 peer, l->t->ops->name, l->t->security, again, streams);
	rc = link_start(l);
	if (!rc)
		*out = l;
	return rc;
}

/* Would TCP work where verbs failed with rc? Not for a refused key, version
 * or encryption setting, nor an unreachable peer: TCP meets the same. */
static bool tcp_may_help(int rc)
{
	return rc != MEARAS_LINK_E_AUTH && rc != MEARAS_LINK_E_VERSION && rc != MEARAS_LINK_E_ENCRYPTION &&
	       rc != MEARAS_LINK_E_CONNECT && rc != MEARAS_LINK_E_INVAL && rc != MEARAS_LINK_E_NOMEM;
}

/* MEARAS_LINK_TRANSPORT_AUTO: verbs where it can work, else TCP; each
 * fallback says why in the log. */
static int connect_auto(const char *host, uint16_t port, const struct mearas_link_config *cfg,
			struct mearas_link **out)
{
	struct mearas_link_config c = *cfg;
	char why[256];
	int rc;

	c.transport = MEARAS_LINK_TRANSPORT_TCP;
	if (c.encryption != MEARAS_LINK_ENCRYPTION_OFF) {
		link_log(cfg, MEARAS_LINK_LOG_INFO,
			 "link to %s:%u: transport auto: TCP (verbs not tried: link encryption is on, and it covers "
			 "TCP links only)", host, (unsigned)port);
		return connect_with(host, port, &c, out);
	}
	if (mearas_link_verbs_probe(cfg, why, sizeof(why)) != MEARAS_LINK_OK) {
		link_log(cfg, MEARAS_LINK_LOG_INFO, "link to %s:%u: transport auto: TCP (verbs not tried: %s)", host,
			 (unsigned)port, why);
		return connect_with(host, port, &c, out);
	}
	c.transport = MEARAS_LINK_TRANSPORT_VERBS;
	rc = connect_with(host, port, &c, out);
	if (!rc || !tcp_may_help(rc))
		return rc;
	link_log(cfg, MEARAS_LINK_LOG_WARN, "link to %s:%u: transport auto: verbs failed (%s%s), falling back to TCP",
		 host, (unsigned)port, mearas_link_strerror(rc),
		 rc == MEARAS_LINK_E_NODEV ? ": the peer has no RDMA device" : "");
	c.transport = MEARAS_LINK_TRANSPORT_TCP;
	return connect_with(host, port, &c, out);
}

int mearas_link_connect(const char *host, uint16_t port, const struct mearas_link_config *cfg,
			struct mearas_link **out)
{
	if (!host || !port || !cfg || !out || (cfg->key_len && !cfg->key))
		return MEARAS_LINK_E_INVAL;
	*out = NULL;
	switch (cfg->transport) {
	case MEARAS_LINK_TRANSPORT_TCP:
	case MEARAS_LINK_TRANSPORT_VERBS:
		return connect_with(host, port, cfg, out);
	case MEARAS_LINK_TRANSPORT_AUTO:
		return connect_auto(host, port, cfg, out);
	}
	return MEARAS_LINK_E_INVAL;
}

void mearas_link_close(struct mearas_link *l)
{
	if (!l)
		return;
	__atomic_store_n(&l->closing, 1, __ATOMIC_RELEASE);
	if (!link_broken(l)) {
		mearas_link_flush(l);
		if (send_simple_frame(l, LINK_FRAME_CLOSE) == MEARAS_LINK_OK) {
			/* Let the server read everything and close first, so that our close
			 * cannot reset data still in flight. */
			uint64_t until = link_now_ns() + 1000000000ull;
			struct timespec ts = ns_to_ts(until);
			pthread_mutex_lock(&l->pend_lock);
			while (!l->rx_exited && link_now_ns() < until)
				pthread_cond_timedwait(&l->pend_cond, &l->pend_lock, &ts);
			pthread_mutex_unlock(&l->pend_lock);
		}
	}
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
	fail_link(l, MEARAS_LINK_E_CLOSED);
	pthread_join(l->rx_thread, NULL);
	pthread_join(l->flush_thread, NULL);
	free_link(l);
}
