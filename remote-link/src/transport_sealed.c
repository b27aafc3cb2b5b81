/* The TCP transport of an encrypted link after its TLS 1.3 handshake: the
 * link's own AEAD records (records.h) on the socket.
 *
 * Sending and receiving share nothing but the socket: senders (serialized by
 * send_lock) seal into a write buffer of OUT_BUF bytes (large pieces straight
 * from the caller's memory, small ones copied there first; a short record is
 * gathered whole and sealed in one call, records.h), written with one
 * system call per OUT_BUF; the one reader reads what the socket holds into
 * its buffer, opens each whole record in place and copies out only plaintext
 * that authenticated. A record that does not open (altered, forged, replayed,
 * out of order) or announces a length out of bounds ends the link with a log
 * line: no byte of it reaches the caller. The socket I/O is the clear-text
 * TCP transport's (link_tcp_write, link_tcp_read). */
#include "link_internal.h"
#include "records.h"

#include <fcntl.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mearas/hoptrace.h"

#define OUT_BUF (128u << 10)
#define IN_BUF (4u * LINK_REC_WIRE_MAX)

struct sealed_transport {
	struct link_tcp_transport tcp; /* the socket, its shutdown */
	pthread_mutex_t send_lock;     /* tx and out */
	struct link_rec_dir tx, rx;
	int logged; /* atomic: a refusal of peer data was logged */
	const struct mearas_link_config *cfg;
	char peer[80];
	uint32_t in_pos, in_have; /* in[in_pos, in_have): received, not opened yet */
	uint32_t pt_pos, pt_end;  /* in[pt_pos, pt_end): opened, not handed out yet */
	uint8_t out[OUT_BUF];
	uint8_t in[IN_BUF];
};

static int write_out(struct sealed_transport *st, size_t len)
{
	return link_tcp_write(&st->tcp, &(struct iovec){ st->out, len }, 1);
}

/* Pieces of a record shorter than this are copied into place and encrypted
 * there with the run of small pieces around them: one AEAD update per run
 * instead of one per piece (frame and message headers come as pieces of
 * their own, and each update costs more than copying a small piece). */
#define SEAL_COPY_MAX 1024u

/* Seals total bytes of iov into records and writes them; send_lock held. */
static int seal_and_send(struct sealed_transport *st, const struct iovec *iov, size_t total)
{
	size_t used = 0, off = 0;
	int i = 0, rc = MEARAS_LINK_OK;
	while (total && !rc) {
		uint32_t n = total < LINK_REC_MAX ? (uint32_t)total : LINK_REC_MAX;
		if (used + LINK_REC_HDR + n + LINK_REC_TAG > OUT_BUF) {
			rc = write_out(st, used);
			used = 0;
			if (rc)
				break;
		}
		uint8_t *rec = st->out + used, *ct = rec + LINK_REC_HDR, *run = ct;
		/* a short record is gathered whole and sealed in one call */
		bool whole = n <= LINK_REC_SMALL;
		if (!whole)
			rc = link_rec_seal_begin(&st->tx, rec, n);
		for (uint32_t left = n; left && !rc;) {
			if (off == iov[i].iov_len) {
				i++;
				off = 0;
				continue;
			}
			size_t k = iov[i].iov_len - off < left ? iov[i].iov_len - off : left;
			const uint8_t *src = (const uint8_t *)iov[i].iov_base + off;
			if (whole || k < SEAL_COPY_MAX) {
				memcpy(ct, src, k); /* joins the run [run, ct) */
			} else {
				if (run < ct)
					rc = link_rec_seal_part(&st->tx, run, (size_t)(ct - run), run);
				if (!rc)
					rc = link_rec_seal_part(&st->tx, src, k, ct);
				run = ct + k;
			}
			ct += k;
			off += k;
			left -= (uint32_t)k;
		}
		if (!rc && whole)
			rc = link_rec_seal(&st->tx, rec, n);
		if (!rc && !whole && run < ct)
			rc = link_rec_seal_part(&st->tx, run, (size_t)(ct - run), run);
		if (!rc && !whole)
			rc = link_rec_seal_end(&st->tx, ct);
		used += LINK_REC_HDR + n + LINK_REC_TAG;
		total -= n;
	}
	mearas_hop(MEARAS_HOP_send_sealed);
	return rc ? rc : write_out(st, used);
}

static int sealed_send_iov(struct link_transport *t, const struct iovec *iov, int iovcnt)
{
	struct sealed_transport *st = (struct sealed_transport *)t;
	size_t total = 0;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	mearas_hop(MEARAS_HOP_send_start);
	pthread_mutex_lock(&st->send_lock);
	int rc = __atomic_load_n(&st->tcp.down, __ATOMIC_ACQUIRE) ? MEARAS_LINK_E_BROKEN :
								    seal_and_send(st, iov, total);
	pthread_mutex_unlock(&st->send_lock);
	if (rc) {
		/* a record half written cannot be taken back: nothing more may follow it */
		__atomic_store_n(&st->tcp.down, 1, __ATOMIC_RELEASE);
		rc = MEARAS_LINK_E_BROKEN;
	}
	mearas_hop(MEARAS_HOP_send_end);
	return rc;
}

/* What the peer sent is refused: logged once, the link goes down. */
static int refuse(struct sealed_transport *st, const char *what)
{
	if (!__atomic_exchange_n(&st->logged, 1, __ATOMIC_ACQ_REL))
		link_log(st->cfg, MEARAS_LINK_LOG_ERR,
			 "link with %s: the link's encryption refused data from the peer (%s): altered or forged on "
			 "the way; dropping the link",
			 st->peer, what);
	__atomic_store_n(&st->tcp.down, 1, __ATOMIC_RELEASE);
	return MEARAS_LINK_E_PROTO;
}

/* Opens the next record if the buffer holds all of it: 1 opened, 0 not
 * there yet, E_PROTO refused. */
static int open_next(struct sealed_transport *st)
{
	uint32_t have = st->in_have - st->in_pos;
	if (have < LINK_REC_HDR)
		return 0;
	uint8_t *rec = st->in + st->in_pos;
	uint32_t n = link_rec_len(rec);
	if (!n)
		return refuse(st, "a record length out of bounds");
	if (have < LINK_REC_HDR + n + LINK_REC_TAG)
		return 0;
	if (!link_rec_open(&st->rx, rec, n))
		return refuse(st, "a record that does not authenticate");
	st->pt_pos = st->in_pos + LINK_REC_HDR;
	st->pt_end = st->pt_pos + n;
	st->in_pos += LINK_REC_HDR + n + LINK_REC_TAG;
	return 1;
}

/* Reads what the socket holds: >0, 0 nothing (after waiting timeout_ms),
 * E_BROKEN on EOF or reset. */
static int fill(struct sealed_transport *st, uint32_t timeout_ms)
{
	/* nothing opened is left to hand out: the buffer's front is free */
	if (st->in_pos == st->in_have) {
		st->in_pos = st->in_have = 0;
	} else if (IN_BUF - st->in_have < LINK_REC_WIRE_MAX) {
		/* a partial record (never more than one) to the front, rarely */
		memmove(st->in, st->in + st->in_pos, st->in_have - st->in_pos);
		st->in_have -= st->in_pos;
		st->in_pos = 0;
	}
	st->pt_pos = st->pt_end = 0;
	int n = link_tcp_read(&st->tcp, st->in + st->in_have, IN_BUF - st->in_have, timeout_ms);
	if (n > 0)
		st->in_have += (uint32_t)n;
	return n;
}

static int sealed_recv(struct link_transport *t, void *buf, size_t len, uint32_t timeout_ms)
{
	struct sealed_transport *st = (struct sealed_transport *)t;
	uint8_t *p = buf;
	size_t got = 0;
	if (__atomic_load_n(&st->tcp.down, __ATOMIC_ACQUIRE))
		return MEARAS_LINK_E_BROKEN;
	if (len > (1u << 30))
		len = 1u << 30;
	while (got < len) {
		if (st->pt_pos < st->pt_end) {
			size_t k = st->pt_end - st->pt_pos < len - got ? st->pt_end - st->pt_pos : len - got;
			memcpy(p + got, st->in + st->pt_pos, k);
			st->pt_pos += (uint32_t)k;
			got += k;
			continue;
		}
		int rc = open_next(st);
		if (rc < 0)
			return rc;
		if (rc > 0)
			continue;
		if (got)
			break; /* hand out what there is; the rest of a record comes later */
		rc = fill(st, timeout_ms);
		if (rc <= 0)
			return rc;
	}
	return (int)got;
}

static void sealed_destroy(struct link_transport *t)
{
	struct sealed_transport *st = (struct sealed_transport *)t;
	close(st->tcp.fd);
	link_rec_free(&st->tx);
	link_rec_free(&st->rx);
	pthread_mutex_destroy(&st->send_lock);
	OPENSSL_cleanse(st->in, sizeof(st->in)); /* plaintext of the peer's records */
	free(st);
}

LINK_TRANSPORT_OPS(sealed, "tcp", link_tcp_transport_shutdown, link_tcp_transport_tx_clear); /* log lines name it tcp; its security text says how it is sealed */

int link_sealed_transport_open(int fd, struct link_rec_dir *tx, struct link_rec_dir *rx, const char *security,
			       const struct mearas_link_config *cfg, const char *peer, struct link_transport **out)
{
	int rc = link_tcp_set_options(fd, cfg->dead_ms);
	struct sealed_transport *st = rc ? NULL : calloc(1, sizeof(*st));
	int fl = st ? fcntl(fd, F_GETFL) : -1;
	/* blocking sends from here on, as on a clear-text link */
	if (st && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0))
		rc = MEARAS_LINK_E_SYS;
	if (!st || rc) {
		free(st);
		link_rec_free(tx);
		link_rec_free(rx);
		return rc ? rc : MEARAS_LINK_E_NOMEM;
	}
	st->tx = *tx;
	st->rx = *rx;
	memset(tx, 0, sizeof(*tx));
	memset(rx, 0, sizeof(*rx));
	snprintf(st->tcp.base.security, sizeof(st->tcp.base.security), "%s", security);
	st->tcp.base.ops = &sealed_ops;
	st->tcp.base.rx_spin_ns = (uint64_t)cfg->rx_spin_us * 1000ull;
	st->tcp.fd = fd;
	pthread_mutex_init(&st->send_lock, NULL);
	st->cfg = cfg;
	snprintf(st->peer, sizeof(st->peer), "%s", peer);
	*out = &st->tcp.base;
	return MEARAS_LINK_OK;
}

int link_sealed_transport_create(int fd, SSL *ssl, bool server, const struct mearas_link_config *cfg,
				 const char *peer, struct link_transport **out)
{
	struct link_rec_dir tx, rx;
	char security[160];
	int rc;

	/* the handshake reads records one at a time: a byte TLS still holds
	 * would be a record sent before the switch, which the protocol has none of */
	if (SSL_has_pending(ssl)) {
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link with %s: TLS data after the link's handshake; dropping the link",
			 peer);
		rc = MEARAS_LINK_E_PROTO;
	} else {
		rc = link_rec_init(ssl, server, &tx, &rx);
	}
	if (!rc)
		snprintf(security, sizeof(security),
			 "encrypted: %s %s handshake, %s link records (keys exported from the TLS session)",
			 SSL_get_version(ssl), SSL_CIPHER_get_name(SSL_get_current_cipher(ssl)),
			 link_rec_cipher_name(&tx));
	SSL_free(ssl); /* its secrets are no longer needed: the records have keys of their own */
	return rc ? rc : link_sealed_transport_open(fd, &tx, &rx, security, cfg, peer, out);
}
