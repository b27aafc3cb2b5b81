/* TLS 1.3 of an encrypted link (OpenSSL): the PSK derived from the cluster
 * key, the handshake on the connected socket and the handshake messages that
 * follow it inside TLS (handshake.c). After them the link's own records
 * (records.h), keyed from this session, carry the link.
 *
 * The PSK is HKDF-SHA256(key = cluster key, salt = SHA-256(hello || challenge),
 * info = PSK_INFO): each connection gets its own, bound to both nonces and to
 * every plaintext byte the two ends exchanged before TLS (a changed heartbeat,
 * transport or encryption field makes the TLS handshake fail). The client
 * offers it as an external PSK (psk_dhe_ke: an ECDHE share too, so recorded
 * traffic stays secret if the cluster key leaks later); a peer without the key
 * cannot produce the PSK binder, the server refuses it and says so. */
#include "link_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define PSK_BYTES 32
static const char PSK_IDENTITY[] = "mearas-link-psk-v1";
static const char PSK_INFO[] = "mearas-link tls13 external psk v1";
/* TLS_AES_128_GCM_SHA256 (the PSK's hash is SHA-256: the suites below use it) */
static const unsigned char PSK_CIPHER[2] = { 0x13, 0x01 };
static const char SUITES[] = "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256";
struct link_psk {
	uint8_t psk[PSK_BYTES];
	bool identity_unknown; /* server: the client offered another identity */
};

static int derive_psk(const struct mearas_link_config *cfg, const void *hello, size_t hello_len,
		      const void *challenge, size_t challenge_len, uint8_t out[PSK_BYTES])
{
	uint8_t salt[32];
	unsigned int salt_len = 0;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) &&
		 EVP_DigestUpdate(md, hello, hello_len) && EVP_DigestUpdate(md, challenge, challenge_len) &&
		 EVP_DigestFinal_ex(md, salt, &salt_len);
	EVP_MD_CTX_free(md);
	if (!ok)
		return MEARAS_LINK_E_SYS;
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)cfg->key, cfg->key_len),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt, salt_len),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)PSK_INFO, strlen(PSK_INFO)),
		OSSL_PARAM_construct_end(),
	};
	ok = kctx && EVP_KDF_derive(kctx, out, PSK_BYTES, params) == 1;
	EVP_KDF_CTX_free(kctx);
	OPENSSL_cleanse(salt, sizeof(salt));
	return ok ? MEARAS_LINK_OK : MEARAS_LINK_E_SYS;
}

static SSL_SESSION *psk_session(SSL *ssl, const uint8_t *psk)
{
	const SSL_CIPHER *cipher = SSL_CIPHER_find(ssl, PSK_CIPHER);
	SSL_SESSION *s = SSL_SESSION_new();
	if (!s || !cipher || !SSL_SESSION_set1_master_key(s, psk, PSK_BYTES) ||
	    !SSL_SESSION_set_cipher(s, cipher) || !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
		SSL_SESSION_free(s);
		return NULL;
	}
	return s;
}

static int client_psk_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
			 SSL_SESSION **sess)
{
	struct link_psk *p = SSL_get_app_data(ssl);
	SSL_SESSION *s = p ? psk_session(ssl, p->psk) : NULL;
	if (!s)
		return 0;
	/* after a HelloRetryRequest: only a PSK of the suite's hash may be offered */
	if (md && EVP_MD_get_type(md) !=
		  EVP_MD_get_type(SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(s)))) {
		SSL_SESSION_free(s);
		*sess = NULL;
		*id = NULL;
		*idlen = 0;
		return 1;
	}
	*sess = s;
	*id = (const unsigned char *)PSK_IDENTITY;
	*idlen = strlen(PSK_IDENTITY);
	return 1;
}

static int server_psk_cb(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
	struct link_psk *p = SSL_get_app_data(ssl);
	*sess = NULL;
	if (!p)
		return 0;
	if (idlen != strlen(PSK_IDENTITY) || memcmp(id, PSK_IDENTITY, idlen) != 0) {
		p->identity_unknown = true;
		return 1; /* no PSK: without a certificate the handshake then fails */
	}
	*sess = psk_session(ssl, p->psk);
	return *sess ? 1 : 0;
}

static SSL *new_ssl(bool server)
{
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (!ctx)
		return NULL;
	SSL *ssl = NULL;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) &&
	    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) && SSL_CTX_set_ciphersuites(ctx, SUITES)) {
		SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
		SSL_CTX_set_num_tickets(ctx, 0);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
		/* a write is retried from the same bytes after EAGAIN */
		SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
		/* no read-ahead: TLS reads one record at a time, so the bytes after
		 * the handshake's last message (the link's own records,
		 * transport_sealed.c) stay in the socket for the transport */
		SSL_CTX_set_read_ahead(ctx, 0);
		if (server) {
			SSL_CTX_set_psk_find_session_callback(ctx, server_psk_cb);
		} else {
			SSL_CTX_set_psk_use_session_callback(ctx, client_psk_cb);
			/* no trust store: a server that answers with a certificate instead
			 * of the PSK fails verification */
			SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		}
		ssl = SSL_new(ctx);
	}
	SSL_CTX_free(ctx); /* the SSL holds its own reference */
	return ssl;
}

/* OpenSSL writes to the socket with write(), which raises SIGPIPE on a
 * connection the peer closed: a peer could kill a process that does not
 * ignore SIGPIPE (mearasd does). Unless it is ignored, SIGPIPE is blocked on
 * this thread while TLS writes, and one they raised is taken off. */
static bool link_sigpipe_ignored(void)
{
	struct sigaction sa;
	return sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
}

static bool link_sigpipe_block(sigset_t *old)
{
	if (link_sigpipe_ignored())
		return false;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	return pthread_sigmask(SIG_BLOCK, &set, old) == 0;
}

static void link_sigpipe_restore(bool blocked, const sigset_t *old)
{
	if (!blocked)
		return;
	sigset_t pending, set;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	if (!sigismember(old, SIGPIPE) && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static void link_tls_error_text(char *out, size_t cap)
{
	unsigned long e = ERR_peek_last_error();
	if (!e) {
		snprintf(out, cap, "%s", errno ? strerror(errno) : "connection closed by the peer");
		return;
	}
	const char *reason = ERR_reason_error_string(e);
	if (reason)
		snprintf(out, cap, "%s", reason);
	else
		ERR_error_string_n(e, out, cap);
}

/* One SSL_write_ex/SSL_read_ex: 1 with *done bytes, 0 when it must wait for
 * *wait_events on the socket, E_PROTO when TLS refused what the peer sent,
 * E_BROKEN on EOF. */
static int tls_step(SSL *ssl, bool write, void *buf, size_t len, size_t *done, short *wait_events)
{
	ERR_clear_error();
	errno = 0;
	int ok = write ? SSL_write_ex(ssl, buf, len, done) : SSL_read_ex(ssl, buf, len, done);
	int err = ok ? SSL_ERROR_NONE : SSL_get_error(ssl, 0);
	switch (err) {
	case SSL_ERROR_NONE:
		return 1;
	case SSL_ERROR_WANT_READ:
		*wait_events = POLLIN;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		*wait_events = POLLOUT;
		return 0;
	case SSL_ERROR_SSL:
		/* OpenSSL 3 reports a connection that ends without close_notify here */
		if (ERR_GET_LIB(ERR_peek_last_error()) == ERR_LIB_SSL &&
		    ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
			return MEARAS_LINK_E_BROKEN;
		return MEARAS_LINK_E_PROTO; /* record refused: altered, forged, or a protocol error */
	default:
		return MEARAS_LINK_E_BROKEN; /* close_notify, EOF, reset */
	}
}

/* Waits for events on fd until deadline_ns: 0 ready, E_CONNECT past it. */
static int wait_fd(int fd, short events, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = link_now_ns();
		if (now >= deadline_ns)
			return MEARAS_LINK_E_CONNECT;
		struct pollfd pfd = { .fd = fd, .events = events };
		int pr = poll(&pfd, 1, (int)((deadline_ns - now) / 1000000u) + 1);
		if (pr > 0)
			return MEARAS_LINK_OK;
		if (pr < 0 && errno != EINTR)
			return MEARAS_LINK_E_BROKEN;
	}
}

/* One step of link_tls_io_all: moves bytes, or waits for the socket. */
static int io_step(SSL *ssl, int fd, bool write, uint8_t **p, size_t *len, uint64_t deadline_ns)
{
	size_t n = 0;
	short ev = 0;
	int rc = tls_step(ssl, write, *p, *len, &n, &ev);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return wait_fd(fd, ev, deadline_ns);
	*p += n;
	*len -= n;
	return MEARAS_LINK_OK;
}

int link_tls_io_all(SSL *ssl, int fd, bool write, void *buf, size_t len, uint64_t deadline_ns)
{
	sigset_t oldmask;
	bool blocked = link_sigpipe_block(&oldmask);
	int rc = MEARAS_LINK_OK;
	uint8_t *p = buf;
	while (len && !rc)
		rc = io_step(ssl, fd, write, &p, &len, deadline_ns);
	link_sigpipe_restore(blocked, &oldmask);
	return rc;
}

int link_tls_handshake(int fd, const struct mearas_link_config *cfg, bool server, const char *peer,
		       const void *hello, size_t hello_len, const void *challenge, size_t challenge_len,
		       SSL **out)
{
	struct link_psk psk = { .identity_unknown = false };
	uint64_t deadline = link_now_ns() + (uint64_t)cfg->connect_timeout_ms * 1000000ull;
	int fl = fcntl(fd, F_GETFL);
	/* non-blocking from here on: the handshake and the transport wait in poll */
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return MEARAS_LINK_E_SYS;
	int rc = derive_psk(cfg, hello, hello_len, challenge, challenge_len, psk.psk);
	SSL *ssl = rc ? NULL : new_ssl(server);
	if (!ssl || !SSL_set_fd(ssl, fd)) {
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link %s %s: cannot set up TLS (OpenSSL)", server ? "from" : "to",
			 peer);
		SSL_free(ssl);
		OPENSSL_cleanse(&psk, sizeof(psk));
		return MEARAS_LINK_E_SYS;
	}
	SSL_set_app_data(ssl, &psk);
	sigset_t oldmask;
	bool blocked = link_sigpipe_block(&oldmask);
	for (;;) {
		ERR_clear_error();
		errno = 0;
		int r = server ? SSL_accept(ssl) : SSL_connect(ssl);
		if (r == 1 && !SSL_session_reused(ssl)) {
			/* keyed by something other than the cluster-key PSK: never a link */
			link_log(cfg, MEARAS_LINK_LOG_ERR, "link %s %s refused: TLS handshake did not use the cluster-key PSK",
				 server ? "from" : "to", peer);
			rc = MEARAS_LINK_E_AUTH;
			break;
		}
		if (r == 1) {
			rc = MEARAS_LINK_OK;
			break;
		}
		int err = SSL_get_error(ssl, r);
		if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
			rc = wait_fd(fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
			if (rc) {
				link_log(cfg, MEARAS_LINK_LOG_ERR, "link %s %s refused: TLS handshake not done within %u ms",
					 server ? "from" : "to", peer, cfg->connect_timeout_ms);
				break;
			}
			continue;
		}
		char why[160];
		unsigned long e = ERR_peek_last_error();
		int reason = ERR_GET_LIB(e) == ERR_LIB_SSL ? ERR_GET_REASON(e) : 0;
		link_tls_error_text(why, sizeof(why));
		if (server && reason == SSL_R_BINDER_DOES_NOT_VERIFY)
			link_log(cfg, MEARAS_LINK_LOG_ERR,
				 "link from %s refused: wrong cluster key (its TLS PSK binder does not verify)", peer);
		else if (server && psk.identity_unknown)
			link_log(cfg, MEARAS_LINK_LOG_ERR,
				 "link from %s refused: TLS handshake without the cluster-key PSK (%s)", peer, why);
		else if (server)
			link_log(cfg, MEARAS_LINK_LOG_ERR, "link from %s refused: TLS handshake failed (%s)", peer, why);
		else if (reason == SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER || reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR)
			/* what OpenSSL's server answers a PSK binder that does not verify */
			link_log(cfg, MEARAS_LINK_LOG_ERR,
				 "link to %s refused: the peer holds another cluster key (TLS: %s)", peer, why);
		else
			link_log(cfg, MEARAS_LINK_LOG_ERR,
				 "link to %s refused: TLS handshake failed (%s): is the cluster key the same on both nodes?",
				 peer, why);
		rc = MEARAS_LINK_E_AUTH;
		break;
	}
	link_sigpipe_restore(blocked, &oldmask);
	SSL_set_app_data(ssl, NULL);
	OPENSSL_cleanse(&psk, sizeof(psk));
	if (rc) {
		SSL_free(ssl);
		return rc;
	}
	*out = ssl;
	return MEARAS_LINK_OK;
}
