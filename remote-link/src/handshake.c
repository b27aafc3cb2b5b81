/* Link admission over length-prefixed protobuf-c messages (proto/link.proto):
 * version and encryption-setting check in the plaintext hello and challenge;
 * then, on an encrypted link, TLS 1.3 keyed by the cluster key (tls.c); then
 * HMAC-SHA256 challenge-response in both directions (inside TLS when there is
 * TLS: there it repeats what the PSK already proved, on one code path for
 * both settings). */
#include "link_internal.h"
#include "link.pb-c.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#define NONCE_BYTES 32
#define MAC_BYTES 32
#define BLOB_MAX 4096

static const char CLIENT_LABEL[] = "mearas-link client";
static const char SERVER_LABEL[] = "mearas-link server";

int link_send_blob(int fd, const void *buf, size_t len)
{
	uint8_t hdr[4];
	wire_put_u32(hdr, (uint32_t)len);
	struct iovec iov[2] = { { hdr, 4 }, { (void *)buf, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t want = 4 + len;
	ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	return n == (ssize_t)want ? MEARAS_LINK_OK : MEARAS_LINK_E_BROKEN;
}

static int recv_full(int fd, uint8_t *p, size_t len, uint64_t deadline_ns)
{
	while (len) {
		uint64_t now = link_now_ns();
		if (now >= deadline_ns)
			return MEARAS_LINK_E_CONNECT;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int pr = poll(&pfd, 1, (int)((deadline_ns - now) / 1000000u) + 1);
		if (pr < 0 && errno != EINTR)
			return MEARAS_LINK_E_BROKEN;
		if (pr <= 0)
			continue;
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		if (n == 0)
			return MEARAS_LINK_E_BROKEN;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return MEARAS_LINK_E_BROKEN;
		}
		p += n;
		len -= (size_t)n;
	}
	return MEARAS_LINK_OK;
}

static int recv_blob_until(int fd, void *buf, size_t cap, size_t *len, uint64_t deadline)
{
	uint8_t hdr[4];
	int rc = recv_full(fd, hdr, 4, deadline);
	if (rc)
		return rc;
	uint32_t n = wire_get_u32(hdr);
	if (n > cap)
		return MEARAS_LINK_E_PROTO;
	rc = recv_full(fd, buf, n, deadline);
	if (rc)
		return rc;
	*len = n;
	return MEARAS_LINK_OK;
}

int link_recv_blob(int fd, void *buf, size_t cap, size_t *len, uint32_t timeout_ms)
{
	return recv_blob_until(fd, buf, cap, len, link_now_ns() + (uint64_t)timeout_ms * 1000000ull);
}

/* The handshake's channel: the plain socket, or TLS once it is up. */
struct hs_chan {
	int fd;
	SSL *ssl;
	uint32_t timeout_ms;
	uint64_t deadline;      /* one deadline for the whole handshake (server), or 0 */
};

/* The server's handshake has one deadline, not one per message: a peer that
 * trickles its messages is dropped at handshake_ms all the same. */
static uint64_t chan_deadline(const struct hs_chan *ch)
{
	return ch->deadline ? ch->deadline : link_now_ns() + (uint64_t)ch->timeout_ms * 1000000ull;
}

static int chan_send_blob(struct hs_chan *ch, const uint8_t *buf, size_t len)
{
	if (!ch->ssl)
		return link_send_blob(ch->fd, buf, len);
	uint8_t msg[4 + BLOB_MAX];
	if (len > BLOB_MAX)
		return MEARAS_LINK_E_PROTO;
	wire_put_u32(msg, (uint32_t)len);
	memcpy(msg + 4, buf, len);
	return link_tls_io_all(ch->ssl, ch->fd, true, msg, 4 + len, chan_deadline(ch));
}

static int chan_recv_blob(struct hs_chan *ch, uint8_t *buf, size_t cap, size_t *len)
{
	uint64_t deadline = chan_deadline(ch);

	if (!ch->ssl)
		return recv_blob_until(ch->fd, buf, cap, len, deadline);
	uint8_t hdr[4];
	int rc = link_tls_io_all(ch->ssl, ch->fd, false, hdr, 4, deadline);
	if (rc)
		return rc;
	uint32_t n = wire_get_u32(hdr);
	if (n > cap)
		return MEARAS_LINK_E_PROTO;
	rc = link_tls_io_all(ch->ssl, ch->fd, false, buf, n, deadline);
	if (!rc)
		*len = n;
	return rc;
}

static void log_recv_failure(const struct mearas_link_config *cfg, const char *peer, int rc, const char *what)
{
	if (rc == MEARAS_LINK_E_CONNECT)
		link_log(cfg, MEARAS_LINK_LOG_WARN, "link from %s dropped: handshake not done within %u ms", peer,
			 cfg->handshake_ms);
	else
		link_log(cfg, MEARAS_LINK_LOG_WARN, "link from %s: no valid %s (%s)", peer, what,
			 mearas_link_strerror(rc));
}

/* Packs a protobuf-c message into buf (BLOB_MAX; its bytes stay there for
 * the TLS transcript) and sends it; *len gets its size when len is not NULL. */
static int send_msg(struct hs_chan *ch, const ProtobufCMessage *m, uint8_t *buf, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	if (n > BLOB_MAX)
		return MEARAS_LINK_E_PROTO;
	protobuf_c_message_pack(m, buf);
	if (len)
		*len = n;
	return chan_send_blob(ch, buf, n);
}

static int send_msg_tmp(struct hs_chan *ch, const ProtobufCMessage *m)
{
	uint8_t buf[BLOB_MAX];
	return send_msg(ch, m, buf, NULL);
}

static void compute_mac(const struct mearas_link_config *cfg, const char *label,
			const uint8_t *first, const uint8_t *second, uint8_t out[MAC_BYTES])
{
	uint8_t data[sizeof(SERVER_LABEL) + 2 * NONCE_BYTES];
	size_t ll = strlen(label);
	memcpy(data, label, ll);
	memcpy(data + ll, first, NONCE_BYTES);
	memcpy(data + ll + NONCE_BYTES, second, NONCE_BYTES);
	unsigned int outlen = MAC_BYTES;
	HMAC(EVP_sha256(), cfg->key, (int)cfg->key_len, data, ll + 2 * NONCE_BYTES, out, &outlen);
}

static bool mac_ok(const ProtobufCBinaryData *got, const uint8_t want[MAC_BYTES])
{
	return got->len == MAC_BYTES && CRYPTO_memcmp(got->data, want, MAC_BYTES) == 0;
}

static bool has_key(const struct mearas_link_config *cfg)
{
	return cfg->key && cfg->key_len > 0;
}

static bool encrypts(const struct mearas_link_config *cfg)
{
	return cfg->encryption != MEARAS_LINK_ENCRYPTION_OFF;
}

static Mearas__LinkEncryption wire_encryption(const struct mearas_link_config *cfg)
{
	return encrypts(cfg) ? MEARAS__LINK_ENCRYPTION__LINK_ENCRYPTION_TLS13
			     : MEARAS__LINK_ENCRYPTION__LINK_ENCRYPTION_NONE;
}

static const char *encryption_name(Mearas__LinkEncryption e)
{
	return e == MEARAS__LINK_ENCRYPTION__LINK_ENCRYPTION_TLS13 ? "on (TLS 1.3)" : "off";
}

/* the protocol version this node speaks, as sent */
static Mearas__Version version_of(const struct mearas_link_config *cfg)
{
	Mearas__Version v = MEARAS__VERSION__INIT;

	v.major = cfg->version_major;
	v.minor = cfg->version_minor;
	return v;
}

/* Reads the challenge; fills snonce. Logs and maps the server's refusals. */
static int client_challenge(struct hs_chan *ch, const struct mearas_link_config *cfg, const char *peer,
			    uint8_t *buf, size_t *n, uint8_t snonce[NONCE_BYTES])
{
	int rc = chan_recv_blob(ch, buf, BLOB_MAX, n);
	if (rc)
		return rc;
	Mearas__LinkChallenge *c = mearas__link_challenge__unpack(NULL, *n, buf);
	if (!c)
		return MEARAS_LINK_E_PROTO;
	const char *detail = c->detail && c->detail[0] ? c->detail : "no reason given";
	switch (c->status) {
	case MEARAS__LINK_STATUS__LINK_STATUS_VERSION_MISMATCH:
		link_log(cfg, MEARAS_LINK_LOG_ERR,
			 "link refused: peer runs protocol %u.%u, this node %u.%u",
			 c->version ? c->version->major : 0, c->version ? c->version->minor : 0,
			 cfg->version_major, cfg->version_minor);
		rc = MEARAS_LINK_E_VERSION;
		break;
	case MEARAS__LINK_STATUS__LINK_STATUS_ENCRYPTION_MISMATCH:
		link_log(cfg, MEARAS_LINK_LOG_ERR,
			 "link to %s refused: link encryption is %s on this node, %s on the peer "
			 "(both nodes need the same --link-encryption)",
			 peer, encryption_name(wire_encryption(cfg)), encryption_name(c->encryption));
		rc = MEARAS_LINK_E_ENCRYPTION;
		break;
	case MEARAS__LINK_STATUS__LINK_STATUS_AUTH_FAILED:
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link to %s refused by the peer: %s", peer, detail);
		rc = MEARAS_LINK_E_AUTH;
		break;
	case MEARAS__LINK_STATUS__LINK_STATUS_TRANSPORT_UNAVAILABLE:
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link to %s refused by the peer: %s", peer, detail);
		rc = MEARAS_LINK_E_NODEV;
		break;
	case MEARAS__LINK_STATUS__LINK_STATUS_OK:
		if (c->server_nonce.len != NONCE_BYTES) {
			rc = MEARAS_LINK_E_PROTO;
		} else if (c->encryption != wire_encryption(cfg)) {
			/* a server from before encryption, or one that claims another setting */
			link_log(cfg, MEARAS_LINK_LOG_ERR,
				 "link to %s refused: link encryption is %s on this node, %s on the peer "
				 "(both nodes need the same --link-encryption)",
				 peer, encryption_name(wire_encryption(cfg)), encryption_name(c->encryption));
			rc = MEARAS_LINK_E_ENCRYPTION;
		} else {
			memcpy(snonce, c->server_nonce.data, NONCE_BYTES);
		}
		break;
	default:
		rc = MEARAS_LINK_E_PROTO;
	}
	mearas__link_challenge__free_unpacked(c, NULL);
	return rc;
}

/* The data connections a main connection's accept grants: no more than
 * asked for, with a link id of the right size. */
static int accept_stripe(const Mearas__LinkAccept *acc, struct link_hs_stripe *st)
{
	st->granted = 0;
	if (!acc->streams || st->want < 2)
		return MEARAS_LINK_OK;
	if (acc->streams > st->want || acc->streams > LINK_STREAMS_MAX || acc->link_id.len != LINK_ID_BYTES)
		return MEARAS_LINK_E_PROTO;
	st->granted = acc->streams;
	memcpy(st->link_id, acc->link_id.data, LINK_ID_BYTES);
	return MEARAS_LINK_OK;
}

static int client_accept(struct hs_chan *ch, const struct mearas_link_config *cfg, const char *peer,
			 const uint8_t cnonce[NONCE_BYTES], const uint8_t snonce[NONCE_BYTES], struct link_hs_stripe *st)
{
	uint8_t buf[BLOB_MAX], mac[MAC_BYTES];
	size_t n;
	int rc = chan_recv_blob(ch, buf, sizeof(buf), &n);
	if (rc)
		return rc == MEARAS_LINK_E_BROKEN ? MEARAS_LINK_E_AUTH : rc;
	Mearas__LinkAccept *acc = mearas__link_accept__unpack(NULL, n, buf);
	if (!acc)
		return MEARAS_LINK_E_PROTO;
	switch (acc->status) {
	case MEARAS__LINK_STATUS__LINK_STATUS_OK:
		compute_mac(cfg, SERVER_LABEL, snonce, cnonce, mac);
		rc = mac_ok(&acc->server_mac, mac) ? MEARAS_LINK_OK : MEARAS_LINK_E_AUTH;
		if (rc)
			link_log(cfg, MEARAS_LINK_LOG_ERR, "link to %s refused: server proved a different key", peer);
		else if (st && !st->attach)
			rc = accept_stripe(acc, st);
		break;
	case MEARAS__LINK_STATUS__LINK_STATUS_AUTH_FAILED:
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link to %s refused by the peer: %s", peer, acc->detail);
		rc = MEARAS_LINK_E_AUTH;
		break;
	case MEARAS__LINK_STATUS__LINK_STATUS_TRANSPORT_UNAVAILABLE:
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link to %s refused by the peer: %s", peer, acc->detail);
		rc = MEARAS_LINK_E_NODEV;
		break;
	default:
		rc = MEARAS_LINK_E_PROTO;
	}
	mearas__link_accept__free_unpacked(acc, NULL);
	return rc;
}

int link_client_precheck(const struct mearas_link_config *cfg, const char *peer)
{
	if (!has_key(cfg)) {
		link_log(cfg, MEARAS_LINK_LOG_ERR,
			 "link to %s not tried: this node has no cluster key (a link needs the same key on both nodes)",
			 peer);
		return MEARAS_LINK_E_AUTH;
	}
	if (encrypts(cfg) && cfg->transport == MEARAS_LINK_TRANSPORT_VERBS) {
		link_log(cfg, MEARAS_LINK_LOG_ERR,
			 "link to %s not tried: link encryption covers TCP links only (verbs needs encryption off)",
			 peer);
		return MEARAS_LINK_E_ENCRYPTION;
	}
	return MEARAS_LINK_OK;
}

int link_handshake_client(int fd, const struct mearas_link_config *cfg, const char *peer, SSL **ssl_out,
			  bool *turned_away)
{
	return link_handshake_client_stripe(fd, cfg, peer, ssl_out, turned_away, NULL);
}

int link_handshake_client_stripe(int fd, const struct mearas_link_config *cfg, const char *peer, SSL **ssl_out,
				 bool *turned_away, struct link_hs_stripe *st)
{
	uint8_t cnonce[NONCE_BYTES], snonce[NONCE_BYTES], hello_buf[BLOB_MAX], ch_buf[BLOB_MAX];
	size_t hello_len = 0, ch_len = 0;
	struct hs_chan ch = { .fd = fd, .timeout_ms = cfg->connect_timeout_ms };
	int rc;
	if (ssl_out)
		*ssl_out = NULL;
	if (turned_away)
		*turned_away = false;
	rc = link_client_precheck(cfg, peer);
	if (rc)
		return rc;
	if (RAND_bytes(cnonce, sizeof(cnonce)) != 1)
		return MEARAS_LINK_E_SYS;

	Mearas__Version ver = version_of(cfg);
	Mearas__LinkHello hello = MEARAS__LINK_HELLO__INIT;
	hello.version = &ver;
	hello.client_nonce.data = cnonce;
	hello.client_nonce.len = sizeof(cnonce);
	hello.transport = cfg->transport == MEARAS_LINK_TRANSPORT_VERBS ?
		MEARAS__LINK_TRANSPORT__LINK_TRANSPORT_VERBS : MEARAS__LINK_TRANSPORT__LINK_TRANSPORT_TCP;
	hello.node_name = (char *)cfg->node_name;
	hello.heartbeat_ms = cfg->heartbeat_ms;
	hello.encryption = wire_encryption(cfg);
	rc = send_msg(&ch, &hello.base, hello_buf, &hello_len);
	if (!rc)
		rc = client_challenge(&ch, cfg, peer, ch_buf, &ch_len, snonce);
	/* closed before any challenge: the server's admission turned it away */
	if (rc == MEARAS_LINK_E_BROKEN && turned_away)
		*turned_away = true;
	if (!rc && encrypts(cfg))
		rc = link_tls_handshake(fd, cfg, false, peer, hello_buf, hello_len, ch_buf, ch_len, &ch.ssl);
	if (rc)
		return rc;

	uint8_t mac[MAC_BYTES];
	Mearas__LinkAuth auth = MEARAS__LINK_AUTH__INIT;
	compute_mac(cfg, CLIENT_LABEL, cnonce, snonce, mac);
	auth.mac.data = mac;
	auth.mac.len = MAC_BYTES;
	if (st && st->attach) {
		auth.attach.data = st->link_id;
		auth.attach.len = LINK_ID_BYTES;
		auth.stream_index = st->index;
	} else if (st && st->want > 1) {
		auth.streams = st->want;
		auth.bulk_in = st->bulk_in;
	}
	rc = send_msg_tmp(&ch, &auth.base);
	if (!rc)
		rc = client_accept(&ch, cfg, peer, cnonce, snonce, st);
	if (rc || !ssl_out)
		SSL_free(ch.ssl);
	else
		*ssl_out = ch.ssl;
	return rc;
}

/* The challenge: st, with detail (a refusal's) or with the server's nonce
 * snonce (NULL: none); sent from buf, which keeps it (*len bytes), or from a
 * buffer of its own when buf is NULL. */
static int challenge(struct hs_chan *ch, const struct mearas_link_config *cfg, Mearas__LinkStatus st,
		     const char *detail, const uint8_t *snonce, uint8_t *buf, size_t *len)
{
	Mearas__Version ver = version_of(cfg);
	Mearas__LinkChallenge c = MEARAS__LINK_CHALLENGE__INIT;
	c.version = &ver;
	c.status = st;
	c.detail = (char *)detail;
	if (snonce) {
		c.server_nonce.data = (uint8_t *)snonce;
		c.server_nonce.len = NONCE_BYTES;
	}
	c.encryption = wire_encryption(cfg);
	return buf ? send_msg(ch, &c.base, buf, len) : send_msg_tmp(ch, &c.base);
}

/* a challenge that refuses the hello with st, saying why (detail) */
static int refuse_challenge(struct hs_chan *ch, const struct mearas_link_config *cfg, Mearas__LinkStatus st,
			    const char *detail)
{
	return challenge(ch, cfg, st, detail, NULL, NULL, NULL);
}

static int send_accept(struct hs_chan *ch, Mearas__LinkStatus st, const uint8_t *mac, const char *detail,
		       const struct link_handshake_result *res)
{
	Mearas__LinkAccept acc = MEARAS__LINK_ACCEPT__INIT;
	acc.status = st;
	if (res && res->streams_granted) {
		acc.streams = res->streams_granted;
		acc.link_id.data = (uint8_t *)res->link_id;
		acc.link_id.len = LINK_ID_BYTES;
	}
	if (mac) {
		acc.server_mac.data = (uint8_t *)mac;
		acc.server_mac.len = MAC_BYTES;
	}
	acc.detail = (char *)detail;
	return send_msg_tmp(ch, &acc.base);
}

/* Checks the hello before a challenge is sent: version, encryption setting,
 * a key to check it with. Refuses (logged) with a challenge saying why. */
static int server_check_hello(struct hs_chan *ch, const struct mearas_link_config *cfg, const char *peer,
			      uint32_t pmaj, uint32_t pmin, Mearas__LinkEncryption penc,
			      const struct link_handshake_result *res)
{
	char detail[160];
	if (pmaj != cfg->version_major) {
		link_log(cfg, MEARAS_LINK_LOG_ERR,
			 "link from %s refused: protocol version %u.%u, this node runs %u.%u", peer,
			 pmaj, pmin, cfg->version_major, cfg->version_minor);
		refuse_challenge(ch, cfg, MEARAS__LINK_STATUS__LINK_STATUS_VERSION_MISMATCH,
				 "protocol version mismatch");
		return MEARAS_LINK_E_VERSION;
	}
	if (penc != wire_encryption(cfg)) {
		snprintf(detail, sizeof(detail), "link encryption is %s on the server, %s on the client",
			 encryption_name(wire_encryption(cfg)), encryption_name(penc));
		link_log(cfg, MEARAS_LINK_LOG_ERR,
			 "link from %s refused: link encryption is %s on the peer, %s on this node "
			 "(both nodes need the same --link-encryption)",
			 peer, encryption_name(penc), encryption_name(wire_encryption(cfg)));
		refuse_challenge(ch, cfg, MEARAS__LINK_STATUS__LINK_STATUS_ENCRYPTION_MISMATCH, detail);
		return MEARAS_LINK_E_ENCRYPTION;
	}
	if (!has_key(cfg)) {
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link from %s refused: this node has no cluster key configured",
			 peer);
		refuse_challenge(ch, cfg, MEARAS__LINK_STATUS__LINK_STATUS_AUTH_FAILED,
				 "the server has no cluster key configured");
		return MEARAS_LINK_E_AUTH;
	}
	if (encrypts(cfg) && res->transport == MEARAS_LINK_TRANSPORT_VERBS) {
		link_log(cfg, MEARAS_LINK_LOG_ERR,
			 "link from %s refused: verbs requested, link encryption covers TCP links only", peer);
		refuse_challenge(ch, cfg, MEARAS__LINK_STATUS__LINK_STATUS_TRANSPORT_UNAVAILABLE,
				 "link encryption covers TCP links only: verbs needs --link-encryption=off");
		return MEARAS_LINK_E_NODEV;
	}
	return MEARAS_LINK_OK;
}

int link_handshake_server(int fd, const struct mearas_link_config *cfg, const char *peer,
			  bool verbs_available, struct link_handshake_result *res)
{
	return link_handshake_server_hook(fd, cfg, peer, verbs_available, NULL, res);
}

int link_handshake_server_hook(int fd, const struct mearas_link_config *cfg, const char *peer,
			       bool verbs_available, const struct link_hs_hook *hook,
			       struct link_handshake_result *res)
{
	uint8_t buf[BLOB_MAX], hello_buf[BLOB_MAX], ch_buf[BLOB_MAX], cnonce[NONCE_BYTES], snonce[NONCE_BYTES];
	size_t n, hello_len, ch_len = 0;
	struct hs_chan ch = { .fd = fd, .timeout_ms = cfg->handshake_ms,
			      .deadline = link_now_ns() + (uint64_t)cfg->handshake_ms * 1000000ull };
	res->ssl = NULL;
	res->streams_wanted = res->stream_index = res->streams_granted = 0;
	res->attach = res->bulk_in = false;
	int rc = chan_recv_blob(&ch, hello_buf, sizeof(hello_buf), &hello_len);
	if (rc) {
		log_recv_failure(cfg, peer, rc, "hello");
		return rc;
	}
	Mearas__LinkHello *hello = mearas__link_hello__unpack(NULL, hello_len, hello_buf);
	if (!hello || !hello->version || hello->client_nonce.len != NONCE_BYTES) {
		link_log(cfg, MEARAS_LINK_LOG_WARN, "link from %s refused: malformed hello", peer);
		if (hello)
			mearas__link_hello__free_unpacked(hello, NULL);
		refuse_challenge(&ch, cfg, MEARAS__LINK_STATUS__LINK_STATUS_BAD_REQUEST, "bad hello");
		return MEARAS_LINK_E_PROTO;
	}
	uint32_t pmaj = hello->version->major, pmin = hello->version->minor;
	Mearas__LinkEncryption penc = hello->encryption;
	memcpy(cnonce, hello->client_nonce.data, NONCE_BYTES);
	res->transport = hello->transport == MEARAS__LINK_TRANSPORT__LINK_TRANSPORT_VERBS ?
		MEARAS_LINK_TRANSPORT_VERBS : MEARAS_LINK_TRANSPORT_TCP;
	res->peer_heartbeat_ms = hello->heartbeat_ms;
	snprintf(res->peer_name, sizeof(res->peer_name), "%s", hello->node_name ? hello->node_name : "");
	mearas__link_hello__free_unpacked(hello, NULL);
	rc = server_check_hello(&ch, cfg, peer, pmaj, pmin, penc, res);
	if (rc)
		return rc;

	if (RAND_bytes(snonce, sizeof(snonce)) != 1)
		return MEARAS_LINK_E_SYS;
	rc = challenge(&ch, cfg, MEARAS__LINK_STATUS__LINK_STATUS_OK, NULL, snonce, ch_buf, &ch_len);
	if (rc)
		return rc;
	if (encrypts(cfg)) {
		rc = link_tls_handshake(fd, cfg, true, peer, hello_buf, hello_len, ch_buf, ch_len, &ch.ssl);
		if (rc)
			return rc;
	}

	rc = chan_recv_blob(&ch, buf, sizeof(buf), &n);
	if (rc) {
		log_recv_failure(cfg, peer, rc, "auth reply");
		goto fail;
	}
	Mearas__LinkAuth *auth = mearas__link_auth__unpack(NULL, n, buf);
	if (!auth) {
		link_log(cfg, MEARAS_LINK_LOG_WARN, "link from %s refused: malformed auth", peer);
		rc = MEARAS_LINK_E_PROTO;
		goto fail;
	}
	uint8_t mac[MAC_BYTES];
	const char *why = NULL;
	if (auth->mac.len == 0) {
		why = "peer sent no key";
	} else {
		compute_mac(cfg, CLIENT_LABEL, cnonce, snonce, mac);
		if (!mac_ok(&auth->mac, mac))
			why = "wrong cluster key";
	}
	res->streams_wanted = auth->streams;
	res->bulk_in = auth->bulk_in;
	res->attach = auth->attach.len > 0;
	res->stream_index = auth->stream_index;
	if (res->attach && auth->attach.len == LINK_ID_BYTES)
		memcpy(res->link_id, auth->attach.data, LINK_ID_BYTES);
	else if (res->attach && !why)
		why = "malformed link id";
	mearas__link_auth__free_unpacked(auth, NULL);
	if (why) {
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link from %s refused: %s", peer, why);
		send_accept(&ch, MEARAS__LINK_STATUS__LINK_STATUS_AUTH_FAILED, NULL, why, NULL);
		rc = MEARAS_LINK_E_AUTH;
		goto fail;
	}
	if (res->transport == MEARAS_LINK_TRANSPORT_VERBS && !verbs_available) {
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link from %s refused: verbs requested, no RDMA device",
			 peer);
		send_accept(&ch, MEARAS__LINK_STATUS__LINK_STATUS_TRANSPORT_UNAVAILABLE, NULL,
			    "no RDMA device on the server", NULL);
		rc = MEARAS_LINK_E_NODEV;
		goto fail;
	}
	/* striping: a data connection must name an open link (the hook looks) */
	if (res->attach && res->transport != MEARAS_LINK_TRANSPORT_TCP)
		why = "a data connection must be TCP";
	else if (hook && (res->attach || res->streams_wanted > 1))
		rc = hook->check(hook->ctx, res, &why); /* logs its refusals */
	else if (res->attach)
		why = "this node takes no data connections";
	if (why && !rc)
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link from %s refused: %s", peer, why);
	if (rc || why) {
		send_accept(&ch, MEARAS__LINK_STATUS__LINK_STATUS_AUTH_FAILED, NULL, why ? why : "refused", NULL);
		rc = rc ? rc : MEARAS_LINK_E_AUTH;
		goto fail;
	}
	compute_mac(cfg, SERVER_LABEL, snonce, cnonce, mac);
	rc = send_accept(&ch, MEARAS__LINK_STATUS__LINK_STATUS_OK, mac, "", res);
	if (rc)
		goto fail;
	res->ssl = ch.ssl;
	return MEARAS_LINK_OK;
fail:
	SSL_free(ch.ssl);
	return rc;
}
