/* Client side of striped bulk transfers (stripe.h): one sender thread per
 * data connection. A transfer is one job: stream i sends chunks i, i + n,
 * i + 2n, ... straight from the caller's memory (through its own TLS
 * session on an encrypted link), and the caller waits until every stream is
 * through with it. */
#include "link_internal.h"
#include "stripe.h"

#include <stdlib.h>
#include <string.h>

struct stream {
	struct link_stripe_tx *tx;
	struct link_transport *t;
	uint32_t index;
	pthread_t thread, reader;
	bool started, reading;
	uint64_t gen;           /* the last job it took */
	uint64_t last_rx_ns;
	uint8_t hdr[LINK_CHUNK_HDR];
};

struct link_stripe_tx {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t n;
	size_t chunk;
	stripe_fail_fn fail;
	void *ctx;
	bool borrowed;          /* the transports stay the caller's */
	int stop;               /* atomic: readers stop */
	/* readers (stripe_tx_read): chunks the peer sends over the streams */
	struct link_stripe_rx *rx;
	stripe_dest_fn dest;
	void *dest_ctx;
	int down;               /* lock: set by shutdown */
	int error;              /* lock: the first stream failure */
	/* the job (lock) */
	uint64_t gen;
	uint64_t tag, id;
	const uint8_t *data;
	size_t len;
	uint32_t left;          /* streams not through with it yet */
	uint64_t chunks, bytes;
	struct stream s[];
};

static int send_chunk(struct stream *st, uint64_t tag, uint64_t id, const uint8_t *data, uint64_t off, size_t n,
		      uint64_t total)
{
	uint8_t fhdr[LINK_FRAME_HDR], chdr[LINK_CHUNK_HDR];
	struct link_frame_hdr fh = { .type = LINK_FRAME_CHUNK, .count = 1, .body_len = (uint32_t)(LINK_CHUNK_HDR + n) };
	struct iovec iov[3] = { { fhdr, sizeof(fhdr) }, { chdr, sizeof(chdr) }, { (uint8_t *)data + off, n } };

	wire_encode_frame(fhdr, &fh);
	wire_put_u64(chdr, tag);
	wire_put_u64(chdr + 8, id);
	wire_put_u64(chdr + 16, off);
	wire_put_u64(chdr + 24, total);
	return st->t->ops->send_iov(st->t, iov, 3);
}

static void *stream_main(void *arg)
{
	struct stream *st = arg;
	struct link_stripe_tx *tx = st->tx;

	pthread_mutex_lock(&tx->lock);
	for (;;) {
		while (!tx->down && tx->gen == st->gen)
			pthread_cond_wait(&tx->cond, &tx->lock);
		if (tx->down && tx->gen == st->gen)
			break;
		st->gen = tx->gen;
		uint64_t tag = tx->tag, id = tx->id;
		const uint8_t *data = tx->data;
		size_t len = tx->len, chunk = tx->chunk;
		uint64_t chunks = 0, bytes = 0;
		int rc = tx->down ? MEARAS_LINK_E_BROKEN : MEARAS_LINK_OK;

		pthread_mutex_unlock(&tx->lock);
		for (uint64_t off = (uint64_t)st->index * chunk; !rc && off < len; off += (uint64_t)tx->n * chunk) {
			size_t n = len - off < chunk ? len - off : chunk;

			rc = send_chunk(st, tag, id, data, off, n, len) ? MEARAS_LINK_E_BROKEN : MEARAS_LINK_OK;
			if (!rc) {
				chunks++;
				bytes += LINK_FRAME_HDR + LINK_CHUNK_HDR + n;
			}
		}
		if (rc)
			tx->fail(tx->ctx, st->index, rc);
		pthread_mutex_lock(&tx->lock);
		if (rc && !tx->error)
			tx->error = rc;
		tx->chunks += chunks;
		tx->bytes += bytes;
		if (!--tx->left)
			pthread_cond_broadcast(&tx->cond);
	}
	pthread_mutex_unlock(&tx->lock);
	return NULL;
}

int stripe_tx_new(struct link_transport **t, uint32_t n, size_t chunk_bytes, stripe_fail_fn fail, void *ctx,
		  struct link_stripe_tx **out)
{
	return stripe_tx_new_ex(t, n, chunk_bytes, false, fail, ctx, out);
}

int stripe_tx_new_ex(struct link_transport **t, uint32_t n, size_t chunk_bytes, bool borrowed, stripe_fail_fn fail,
		     void *ctx, struct link_stripe_tx **out)
{
	struct link_stripe_tx *tx = NULL;

	*out = NULL;
	if (n && n <= LINK_STREAMS_MAX && chunk_bytes)
		tx = calloc(1, sizeof(*tx) + n * sizeof(tx->s[0]));
	if (!tx) {
		for (uint32_t i = 0; i < n && !borrowed; i++)
			t[i]->ops->destroy(t[i]);
		return n && n <= LINK_STREAMS_MAX ? MEARAS_LINK_E_NOMEM : MEARAS_LINK_E_INVAL;
	}
	tx->n = n;
	tx->chunk = chunk_bytes;
	tx->fail = fail;
	tx->ctx = ctx;
	tx->borrowed = borrowed;
	pthread_mutex_init(&tx->lock, NULL);
	pthread_cond_init(&tx->cond, NULL);
	for (uint32_t i = 0; i < n; i++)
		tx->s[i] = (struct stream){ .tx = tx, .t = t[i], .index = i };
	for (uint32_t i = 0; i < n; i++) {
		if (pthread_create(&tx->s[i].thread, NULL, stream_main, &tx->s[i])) {
			stripe_tx_free(tx);
			return MEARAS_LINK_E_SYS;
		}
		tx->s[i].started = true;
	}
	*out = tx;
	return MEARAS_LINK_OK;
}

uint32_t stripe_tx_streams(const struct link_stripe_tx *tx)
{
	return tx ? tx->n : 0;
}

int stripe_tx_send(struct link_stripe_tx *tx, uint64_t tag, uint64_t id, const void *data, size_t len,
		   uint64_t *chunks, uint64_t *bytes)
{
	int rc;

	pthread_mutex_lock(&tx->lock);
	if (tx->down || tx->error) {
		rc = tx->error ? tx->error : MEARAS_LINK_E_BROKEN;
		pthread_mutex_unlock(&tx->lock);
		return rc;
	}
	tx->gen++;
	tx->tag = tag;
	tx->id = id;
	tx->data = data;
	tx->len = len;
	tx->left = tx->n;
	tx->chunks = tx->bytes = 0;
	pthread_cond_broadcast(&tx->cond);
	while (tx->left)
		pthread_cond_wait(&tx->cond, &tx->lock);
	rc = tx->error;
	*chunks = tx->chunks;
	*bytes = tx->bytes;
	pthread_mutex_unlock(&tx->lock);
	return rc;
}

void stripe_tx_shutdown(struct link_stripe_tx *tx)
{
	if (!tx)
		return;
	pthread_mutex_lock(&tx->lock);
	tx->down = 1;
	pthread_cond_broadcast(&tx->cond);
	pthread_mutex_unlock(&tx->lock);
	for (uint32_t i = 0; i < tx->n; i++)
		tx->s[i].t->ops->shutdown(tx->s[i].t);
}

void stripe_tx_cut(struct link_stripe_tx *tx, uint32_t index)
{
	if (tx && index < tx->n)
		tx->s[index].t->ops->shutdown(tx->s[index].t);
}

/* One chunk the peer sent on stream st: checked against its transfer, read
 * where dest puts it (a refused one fails the link), counted. */
static int read_chunk(struct stream *st, const struct link_frame_hdr *fh)
{
	struct link_stripe_tx *tx = st->tx;
	size_t n = fh->body_len - LINK_CHUNK_HDR;
	struct link_chunk ch;
	uint8_t *dst;
	int rc = link_read_exact(st->t, st->hdr, LINK_CHUNK_HDR, 100, UINT32_MAX, &st->last_rx_ns, &tx->stop);

	if (rc)
		return rc;
	wire_decode_chunk(st->hdr, &ch);
	rc = stripe_rx_chunk_begin(tx->rx, ch.bulk_id, ch.offset, n, ch.total);
	if (rc)
		return rc;
	dst = tx->dest(tx->dest_ctx, ch.tag, ch.offset, ch.total, n);
	if (!dst)
		return MEARAS_LINK_E_PROTO;
	rc = link_read_exact(st->t, dst, n, 100, UINT32_MAX, &st->last_rx_ns, &tx->stop);
	if (!rc)
		stripe_rx_chunk_end(tx->rx, ch.bulk_id, n);
	return rc;
}

static void *reader_main(void *arg)
{
	struct stream *st = arg;
	struct link_stripe_tx *tx = st->tx;
	int rc;

	st->last_rx_ns = link_now_ns();
	for (;;) {
		uint8_t hdr[LINK_FRAME_HDR];
		struct link_frame_hdr fh;

		rc = link_read_exact(st->t, hdr, sizeof(hdr), 100, UINT32_MAX, &st->last_rx_ns, &tx->stop);
		if (!rc)
			rc = wire_decode_frame(hdr, &fh);
		if (!rc)
			rc = fh.type == LINK_FRAME_CHUNK && fh.body_len >= LINK_CHUNK_HDR ? read_chunk(st, &fh)
										: MEARAS_LINK_E_PROTO;
		if (rc)
			break;
	}
	if (!__atomic_load_n(&tx->stop, __ATOMIC_ACQUIRE))
		tx->fail(tx->ctx, st->index | STRIPE_FAIL_READ, rc);
	return NULL;
}

int stripe_tx_read(struct link_stripe_tx *tx, struct link_stripe_rx *rx, stripe_dest_fn dest, void *ctx)
{
	tx->rx = rx;
	tx->dest = dest;
	tx->dest_ctx = ctx;
	for (uint32_t i = 0; i < tx->n; i++) {
		if (pthread_create(&tx->s[i].reader, NULL, reader_main, &tx->s[i]))
			return MEARAS_LINK_E_SYS;
		tx->s[i].reading = true;
	}
	return MEARAS_LINK_OK;
}

void stripe_tx_free(struct link_stripe_tx *tx)
{
	if (!tx)
		return;
	__atomic_store_n(&tx->stop, 1, __ATOMIC_RELEASE);
	stripe_tx_shutdown(tx);
	if (tx->rx)
		stripe_rx_close(tx->rx);
	for (uint32_t i = 0; i < tx->n; i++) {
		if (tx->s[i].started)
			pthread_join(tx->s[i].thread, NULL);
		if (tx->s[i].reading)
			pthread_join(tx->s[i].reader, NULL);
		if (!tx->borrowed)
			tx->s[i].t->ops->destroy(tx->s[i].t);
	}
	pthread_mutex_destroy(&tx->lock);
	pthread_cond_destroy(&tx->cond);
	free(tx);
}
