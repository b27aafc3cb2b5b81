/* The TCP transport of an encrypted link: every byte goes through TLS 1.3
 * (OpenSSL; the kernel's kTLS where OpenSSL could hand the keys to it).
 *
 * One SSL object may not be used by two threads at once, and a link reads on
 * its receive thread while its senders write. The socket is non-blocking and
 * every SSL call runs under the transport's lock, which is never held while
 * waiting: a reader or writer that must wait releases it and polls the socket.
 * So reading and writing interleave record by record, and neither direction
 * can block the other (a blocked writer holding the lock would stop the reads
 * that drain the peer's writes: two bulk streams in opposite directions could
 * then deadlock).
 *
 * Small pieces of a send (frame and item headers) are gathered into whole
 * records of TLS_REC bytes with the head of the piece that follows; large
 * pieces go to SSL_write straight from the caller's memory, a record at a
 * time; in user space the records gather in a 256 KiB write buffer, flushed
 * before send_iov returns. Anything TLS refuses on receive (a record altered
 * or forged on the way, bytes that are not TLS) ends the link with a log
 * line: no byte of it reaches the caller. */
#include "link_internal.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mearas/hoptrace.h"

#define TLS_REC 16384u /* the largest TLS record's plaintext */
#define TLS_WBUF (256u << 10) /* records written to the socket at once (TLS in user space) */

struct tls_transport {
	struct link_tcp_transport tcp; /* the socket, its shutdown */
	SSL *ssl;
	pthread_mutex_t lock; /* every SSL call */
	int logged;           /* atomic: the refusal of peer data was logged */
	bool guard_sigpipe;   /* SIGPIPE was not ignored when the link opened (link_sigpipe_block) */
	bool rx_pending;      /* the reader's: TLS held received bytes after its last read */
	bool wbuf;            /* records gather in a write buffer (BIO_f_buffer) before the socket */
	uint32_t send_timeout_ms;
	const struct mearas_link_config *cfg;
	char peer[80];
};

/* A TLS step failed. A read that TLS refused (altered or forged bytes) is
 * logged once, even when the link is already going down: refusing a record
 * sends the peer an alert, and the peer's reaction (it drops the link's other
 * connections) can close this link before this thread gets here. Our own
 * shutdown never makes a read fail this way (the socket then reads EOF). */
static int step_failed(struct tls_transport *tt, int rc, bool reading)
{
	if (rc == MEARAS_LINK_E_PROTO && reading && !__atomic_exchange_n(&tt->logged, 1, __ATOMIC_ACQ_REL)) {
		char why[160];
		/* reasons from SSL_AD_REASON_OFFSET on are alerts the peer sent */
		bool alert = ERR_GET_REASON(ERR_peek_last_error()) >= SSL_AD_REASON_OFFSET;

		link_tls_error_text(why, sizeof(why));
		link_log(tt->cfg, MEARAS_LINK_LOG_ERR,
			 "link with %s: %s (%s): altered or forged on the way; dropping the link", tt->peer,
			 alert ? "the peer's TLS refused data this node sent" : "TLS refused data from the peer", why);
	}
	__atomic_store_n(&tt->tcp.down, 1, __ATOMIC_RELEASE);
	return rc;
}

/* Writes all len bytes; gives up when the socket takes nothing for the send timeout. */
static int write_all(struct tls_transport *tt, const uint8_t *p, size_t len)
{
	uint64_t limit = (uint64_t)tt->send_timeout_ms * 1000000ull, since = link_now_ns();
	while (len) {
		if (__atomic_load_n(&tt->tcp.down, __ATOMIC_ACQUIRE))
			return MEARAS_LINK_E_BROKEN;
		size_t n = 0;
		short ev = 0;
		int rc = link_tls_step(tt->ssl, &tt->lock, true, (void *)p, len, &n, &ev, NULL);
		if (rc < 0)
			return step_failed(tt, rc, false);
		if (rc > 0) {
			p += n;
			len -= n;
			since = link_now_ns();
			continue;
		}
		uint64_t now = link_now_ns();
		if (now - since >= limit)
			return MEARAS_LINK_E_BROKEN; /* as SO_SNDTIMEO on a plain link */
		struct pollfd pfd = { .fd = tt->tcp.fd, .events = ev };
		int left_ms = (int)((limit - (now - since)) / 1000000u) + 1;
		if (poll(&pfd, 1, left_ms) < 0 && errno != EINTR)
			return MEARAS_LINK_E_BROKEN;
	}
	return MEARAS_LINK_OK;
}

static int send_iov_unguarded(struct tls_transport *tt, const struct iovec *iov, int iovcnt);

/* Sends what the write buffer still holds; gives up as write_all does. */
static int flush_out(struct tls_transport *tt)
{
	uint64_t limit = (uint64_t)tt->send_timeout_ms * 1000000ull, since = link_now_ns();
	for (;;) {
		if (__atomic_load_n(&tt->tcp.down, __ATOMIC_ACQUIRE))
			return MEARAS_LINK_E_BROKEN;
		pthread_mutex_lock(&tt->lock);
		BIO *wbio = SSL_get_wbio(tt->ssl);
		size_t before = BIO_wpending(wbio);
		int r = before ? BIO_flush(wbio) : 1;
		bool retry = r <= 0 && BIO_should_retry(wbio);
		size_t after = BIO_wpending(wbio);
		pthread_mutex_unlock(&tt->lock);
		if (r > 0)
			return MEARAS_LINK_OK;
		if (!retry)
			return MEARAS_LINK_E_BROKEN;
		uint64_t now = link_now_ns();
		if (after < before)
			since = now;
		else if (now - since >= limit)
			return MEARAS_LINK_E_BROKEN;
		struct pollfd pfd = { .fd = tt->tcp.fd, .events = POLLOUT };
		int left_ms = (int)((limit - (now - since)) / 1000000u) + 1;
		if (poll(&pfd, 1, left_ms) < 0 && errno != EINTR)
			return MEARAS_LINK_E_BROKEN;
	}
}

static int tls_send_iov(struct link_transport *t, const struct iovec *iov, int iovcnt)
{
	struct tls_transport *tt = (struct tls_transport *)t;
	sigset_t oldmask;
	mearas_hop(MEARAS_HOP_send_start);
	bool blocked = tt->guard_sigpipe && link_sigpipe_block(&oldmask);
	int rc = send_iov_unguarded(tt, iov, iovcnt);
	mearas_hop(MEARAS_HOP_send_sealed);
	if (!rc && tt->wbuf)
		rc = flush_out(tt); /* nothing of this send may wait in the buffer */
	link_sigpipe_restore(blocked, &oldmask);
	mearas_hop(MEARAS_HOP_send_end);
	return rc;
}

static int send_iov_unguarded(struct tls_transport *tt, const struct iovec *iov, int iovcnt)
{
	uint8_t stage[TLS_REC];
	size_t staged = 0;
	for (int i = 0; i < iovcnt; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t len = iov[i].iov_len;
		while (len) {
			int rc;
			if (staged == 0 && len >= TLS_REC) {
				/* whole records straight from the caller's memory */
				size_t whole = len - len % TLS_REC;
				rc = write_all(tt, p, whole);
				p += whole;
				len -= whole;
			} else {
				size_t k = TLS_REC - staged < len ? TLS_REC - staged : len;
				memcpy(stage + staged, p, k);
				staged += k;
				p += k;
				len -= k;
				if (staged < TLS_REC)
					continue;
				rc = write_all(tt, stage, staged);
				staged = 0;
			}
			if (rc)
				return rc;
		}
	}
	return staged ? write_all(tt, stage, staged) : MEARAS_LINK_OK;
}

static int tls_recv(struct link_transport *t, void *buf, size_t len, uint32_t timeout_ms)
{
	struct tls_transport *tt = (struct tls_transport *)t;
	if (__atomic_load_n(&tt->tcp.down, __ATOMIC_ACQUIRE))
		return MEARAS_LINK_E_BROKEN;
	if (len > (1u << 30))
		len = 1u << 30;
	/* Ask TLS first only when it holds received bytes (decrypted, or read
	 * ahead from the socket); else wait on the socket without the lock. An
	 * SSL_read that can only fail with "want read" would take the lock
	 * (which the link's senders need) and cost a read() for nothing: on
	 * every message, and on every turn of a receive thread that spins
	 * (rx_spin_us) waiting for the next one. */
	short ev = POLLIN;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (attempt || !tt->rx_pending) {
			struct pollfd pfd = { .fd = tt->tcp.fd, .events = ev };
			int pr = poll(&pfd, 1, (int)timeout_ms);
			if (pr < 0)
				return errno == EINTR ? 0 : MEARAS_LINK_E_BROKEN;
			if (pr == 0)
				return 0;
			attempt = 1;
		}
		size_t n = 0;
		sigset_t oldmask;
		/* a read writes too: an alert when it refuses what the peer sent */
		bool blocked = tt->guard_sigpipe && link_sigpipe_block(&oldmask);
		int rc = link_tls_step(tt->ssl, &tt->lock, false, buf, len, &n, &ev, &tt->rx_pending);
		link_sigpipe_restore(blocked, &oldmask);
		if (rc > 0)
			return (int)n;
		if (rc < 0)
			return step_failed(tt, rc, true);
		/* only part of a record so far: the socket has the rest */
	}
	return 0;
}

static void tls_destroy(struct link_transport *t)
{
	struct tls_transport *tt = (struct tls_transport *)t;
	SSL_free(tt->ssl);
	close(tt->tcp.fd);
	pthread_mutex_destroy(&tt->lock);
	free(tt);
}

LINK_TRANSPORT_OPS(tls, "tcp", link_tcp_transport_shutdown); /* log lines name it tcp; its security text says TLS */

int link_tls_transport_create(int fd, SSL *ssl, const struct mearas_link_config *cfg, const char *peer,
			      struct link_transport **out)
{
	int rc = link_tcp_set_options(fd, cfg->dead_ms);
	struct tls_transport *tt = rc ? NULL : calloc(1, sizeof(*tt));
	if (!tt) {
		SSL_free(ssl);
		return rc ? rc : MEARAS_LINK_E_NOMEM;
	}
	tt->tcp.base.ops = &tls_ops;
	tt->tcp.base.rx_spin_ns = (uint64_t)cfg->rx_spin_us * 1000ull;
	link_tls_describe(ssl, cfg->no_ktls, tt->tcp.base.security, sizeof(tt->tcp.base.security));
	/* TLS in user space writes each record (16 KiB of plaintext at most) with
	 * a write() of its own: each a TCP push and, on loopback or veth, the
	 * receiving stack's work and a wakeup of the reader. Gathered in a buffer
	 * of TLS_WBUF bytes, a large send leaves in fewer, larger writes;
	 * send_iov flushes before it returns. Not with kTLS: there OpenSSL hands
	 * each record's plaintext to the socket itself. */
	BIO *sock = SSL_get_wbio(ssl), *wbuf = NULL;
	if (!BIO_get_ktls_send(sock) && (wbuf = BIO_new(BIO_f_buffer())) &&
	    BIO_set_write_buffer_size(wbuf, TLS_WBUF) > 0 && BIO_up_ref(sock)) {
		BIO_push(wbuf, sock);
		SSL_set0_wbio(ssl, wbuf); /* the SSL's reference to sock as its wbio goes to wbuf */
		tt->wbuf = true;
	} else {
		BIO_free(wbuf); /* unbuffered: one write() per record, as with kTLS */
	}
	tt->tcp.fd = fd;
	tt->ssl = ssl;
	pthread_mutex_init(&tt->lock, NULL);
	tt->send_timeout_ms = cfg->dead_ms;
	tt->guard_sigpipe = !link_sigpipe_ignored();
	tt->rx_pending = true; /* the handshake may have read application data ahead */
	tt->cfg = cfg;
	snprintf(tt->peer, sizeof(tt->peer), "%s", peer);
	*out = &tt->tcp.base;
	return MEARAS_LINK_OK;
}
