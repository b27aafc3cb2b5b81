/* Link admission: version check and HMAC-SHA256 challenge-response in both
 * directions, over length-prefixed protobuf-c messages (proto/link.proto). */
#include "link_internal.h"
#include "link.pb-c.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
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

/* The server's handshake has one deadline, not one per message: a peer that
 * trickles its messages is dropped at handshake_ms all the same. */
static int server_recv(int fd, const struct mearas_link_config *cfg, const char *peer, uint8_t *buf, size_t cap,
		       size_t *len, uint64_t deadline, const char *what)
{
	int rc = recv_blob_until(fd, buf, cap, len, deadline);

	if (rc == MEARAS_LINK_E_CONNECT)
		link_log(cfg, MEARAS_LINK_LOG_WARN, "link from %s dropped: handshake not done within %u ms", peer,
			 cfg->handshake_ms);
	else if (rc)
		link_log(cfg, MEARAS_LINK_LOG_WARN, "link from %s: no valid %s (%s)", peer, what,
			 mearas_link_strerror(rc));
	return rc;
}

/* Packs a protobuf-c message into a blob and sends it. */
static int send_msg(int fd, const ProtobufCMessage *m)
{
	uint8_t buf[BLOB_MAX];
	size_t n = protobuf_c_message_get_packed_size(m);
	if (n > sizeof(buf))
		return MEARAS_LINK_E_PROTO;
	protobuf_c_message_pack(m, buf);
	return link_send_blob(fd, buf, n);
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

int link_handshake_client(int fd, const struct mearas_link_config *cfg)
{
	uint8_t cnonce[NONCE_BYTES], buf[BLOB_MAX];
	size_t n;
	int rc;
	if (RAND_bytes(cnonce, sizeof(cnonce)) != 1)
		return MEARAS_LINK_E_SYS;

	Mearas__Version ver = MEARAS__VERSION__INIT;
	ver.major = cfg->version_major;
	ver.minor = cfg->version_minor;
	Mearas__LinkHello hello = MEARAS__LINK_HELLO__INIT;
	hello.version = &ver;
	hello.client_nonce.data = cnonce;
	hello.client_nonce.len = sizeof(cnonce);
	hello.transport = cfg->transport == MEARAS_LINK_TRANSPORT_VERBS ?
		MEARAS__LINK_TRANSPORT__LINK_TRANSPORT_VERBS : MEARAS__LINK_TRANSPORT__LINK_TRANSPORT_TCP;
	hello.node_name = (char *)cfg->node_name;
	hello.heartbeat_ms = cfg->heartbeat_ms;
	rc = send_msg(fd, &hello.base);
	if (rc)
		return rc;

	rc = link_recv_blob(fd, buf, sizeof(buf), &n, cfg->connect_timeout_ms);
	if (rc)
		return rc;
	Mearas__LinkChallenge *ch = mearas__link_challenge__unpack(NULL, n, buf);
	if (!ch)
		return MEARAS_LINK_E_PROTO;
	uint8_t snonce[NONCE_BYTES];
	if (ch->status == MEARAS__LINK_STATUS__LINK_STATUS_VERSION_MISMATCH) {
		link_log(cfg, MEARAS_LINK_LOG_ERR,
			 "link refused: peer runs protocol %u.%u, this node %u.%u",
			 ch->version ? ch->version->major : 0, ch->version ? ch->version->minor : 0,
			 cfg->version_major, cfg->version_minor);
		rc = MEARAS_LINK_E_VERSION;
	} else if (ch->status != MEARAS__LINK_STATUS__LINK_STATUS_OK ||
		   ch->server_nonce.len != NONCE_BYTES) {
		rc = MEARAS_LINK_E_PROTO;
	} else {
		memcpy(snonce, ch->server_nonce.data, NONCE_BYTES);
	}
	mearas__link_challenge__free_unpacked(ch, NULL);
	if (rc)
		return rc;

	uint8_t mac[MAC_BYTES];
	Mearas__LinkAuth auth = MEARAS__LINK_AUTH__INIT;
	if (has_key(cfg)) {
		compute_mac(cfg, CLIENT_LABEL, cnonce, snonce, mac);
		auth.mac.data = mac;
		auth.mac.len = MAC_BYTES;
	}
	rc = send_msg(fd, &auth.base);
	if (rc)
		return rc;

	rc = link_recv_blob(fd, buf, sizeof(buf), &n, cfg->connect_timeout_ms);
	if (rc)
		return rc == MEARAS_LINK_E_BROKEN ? MEARAS_LINK_E_AUTH : rc;
	Mearas__LinkAccept *acc = mearas__link_accept__unpack(NULL, n, buf);
	if (!acc)
		return MEARAS_LINK_E_PROTO;
	switch (acc->status) {
	case MEARAS__LINK_STATUS__LINK_STATUS_OK:
		if (!has_key(cfg)) {
			rc = MEARAS_LINK_E_AUTH;
			break;
		}
		compute_mac(cfg, SERVER_LABEL, snonce, cnonce, mac);
		rc = mac_ok(&acc->server_mac, mac) ? MEARAS_LINK_OK : MEARAS_LINK_E_AUTH;
		if (rc)
			link_log(cfg, MEARAS_LINK_LOG_ERR, "link refused: server proved a different key");
		break;
	case MEARAS__LINK_STATUS__LINK_STATUS_AUTH_FAILED:
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link refused by server: %s", acc->detail);
		rc = MEARAS_LINK_E_AUTH;
		break;
	case MEARAS__LINK_STATUS__LINK_STATUS_TRANSPORT_UNAVAILABLE:
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link refused by server: %s", acc->detail);
		rc = MEARAS_LINK_E_NODEV;
		break;
	default:
		rc = MEARAS_LINK_E_PROTO;
	}
	mearas__link_accept__free_unpacked(acc, NULL);
	return rc;
}

static int refuse_challenge(int fd, const struct mearas_link_config *cfg, Mearas__LinkStatus st,
			    const char *detail)
{
	Mearas__Version ver = MEARAS__VERSION__INIT;
	ver.major = cfg->version_major;
	ver.minor = cfg->version_minor;
	Mearas__LinkChallenge ch = MEARAS__LINK_CHALLENGE__INIT;
	ch.version = &ver;
	ch.status = st;
	ch.detail = (char *)detail;
	return send_msg(fd, &ch.base);
}

static int send_accept(int fd, Mearas__LinkStatus st, const uint8_t *mac, const char *detail)
{
	Mearas__LinkAccept acc = MEARAS__LINK_ACCEPT__INIT;
	acc.status = st;
	if (mac) {
		acc.server_mac.data = (uint8_t *)mac;
		acc.server_mac.len = MAC_BYTES;
	}
	acc.detail = (char *)detail;
	return send_msg(fd, &acc.base);
}

int link_handshake_server(int fd, const struct mearas_link_config *cfg, const char *peer,
			  bool verbs_available, struct link_handshake_result *res)
{
	uint8_t buf[BLOB_MAX], cnonce[NONCE_BYTES], snonce[NONCE_BYTES];
	size_t n;
	uint64_t deadline = link_now_ns() + (uint64_t)cfg->handshake_ms * 1000000ull;
	int rc = server_recv(fd, cfg, peer, buf, sizeof(buf), &n, deadline, "hello");
	if (rc)
		return rc;
	Mearas__LinkHello *hello = mearas__link_hello__unpack(NULL, n, buf);
	if (!hello || !hello->version || hello->client_nonce.len != NONCE_BYTES) {
		link_log(cfg, MEARAS_LINK_LOG_WARN, "link from %s refused: malformed hello", peer);
		if (hello)
			mearas__link_hello__free_unpacked(hello, NULL);
		refuse_challenge(fd, cfg, MEARAS__LINK_STATUS__LINK_STATUS_BAD_REQUEST, "bad hello");
		return MEARAS_LINK_E_PROTO;
	}
	uint32_t pmaj = hello->version->major, pmin = hello->version->minor;
	memcpy(cnonce, hello->client_nonce.data, NONCE_BYTES);
	res->transport = hello->transport == MEARAS__LINK_TRANSPORT__LINK_TRANSPORT_VERBS ?
		MEARAS_LINK_TRANSPORT_VERBS : MEARAS_LINK_TRANSPORT_TCP;
	res->peer_heartbeat_ms = hello->heartbeat_ms;
	snprintf(res->peer_name, sizeof(res->peer_name), "%s", hello->node_name ? hello->node_name : "");
	mearas__link_hello__free_unpacked(hello, NULL);

	if (pmaj != cfg->version_major) {
		link_log(cfg, MEARAS_LINK_LOG_ERR,
			 "link from %s refused: protocol version %u.%u, this node runs %u.%u", peer,
			 pmaj, pmin, cfg->version_major, cfg->version_minor);
		refuse_challenge(fd, cfg, MEARAS__LINK_STATUS__LINK_STATUS_VERSION_MISMATCH,
				 "protocol version mismatch");
		return MEARAS_LINK_E_VERSION;
	}

	if (RAND_bytes(snonce, sizeof(snonce)) != 1)
		return MEARAS_LINK_E_SYS;
	Mearas__Version ver = MEARAS__VERSION__INIT;
	ver.major = cfg->version_major;
	ver.minor = cfg->version_minor;
	Mearas__LinkChallenge ch = MEARAS__LINK_CHALLENGE__INIT;
	ch.version = &ver;
	ch.status = MEARAS__LINK_STATUS__LINK_STATUS_OK;
	ch.server_nonce.data = snonce;
	ch.server_nonce.len = NONCE_BYTES;
	rc = send_msg(fd, &ch.base);
	if (rc)
		return rc;

	rc = server_recv(fd, cfg, peer, buf, sizeof(buf), &n, deadline, "auth reply");
	if (rc)
		return rc;
	Mearas__LinkAuth *auth = mearas__link_auth__unpack(NULL, n, buf);
	if (!auth) {
		link_log(cfg, MEARAS_LINK_LOG_WARN, "link from %s refused: malformed auth", peer);
		return MEARAS_LINK_E_PROTO;
	}
	uint8_t mac[MAC_BYTES];
	const char *why = NULL;
	if (!has_key(cfg)) {
		why = "this node has no cluster key configured";
	} else if (auth->mac.len == 0) {
		why = "peer sent no key";
	} else {
		compute_mac(cfg, CLIENT_LABEL, cnonce, snonce, mac);
		if (!mac_ok(&auth->mac, mac))
			why = "wrong cluster key";
	}
	mearas__link_auth__free_unpacked(auth, NULL);
	if (why) {
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link from %s refused: %s", peer, why);
		send_accept(fd, MEARAS__LINK_STATUS__LINK_STATUS_AUTH_FAILED, NULL, why);
		return MEARAS_LINK_E_AUTH;
	}
	if (res->transport == MEARAS_LINK_TRANSPORT_VERBS && !verbs_available) {
		link_log(cfg, MEARAS_LINK_LOG_ERR, "link from %s refused: verbs requested, no RDMA device",
			 peer);
		send_accept(fd, MEARAS__LINK_STATUS__LINK_STATUS_TRANSPORT_UNAVAILABLE, NULL,
			    "no RDMA device on the server");
		return MEARAS_LINK_E_NODEV;
	}
	compute_mac(cfg, SERVER_LABEL, snonce, cnonce, mac);
	return send_accept(fd, MEARAS__LINK_STATUS__LINK_STATUS_OK, mac, "");
}
