// SPDX-License-Identifier: MIT
/*
 * Seed corpora of the remote-link targets (fuzz_link.h), made with the
 * library itself: data-plane frames from its own encoders, and handshake
 * transcripts recorded between a real client and a real server (both
 * directions, for each setting and each refusal).
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "fuzz_link.h"
#include "fuzz_seeds.h"

/* ---- fuzz_link_msg ---- */

static void put_frame(struct seedbuf *b, uint8_t type, uint32_t count, uint32_t body_len)
{
	uint8_t h[LINK_FRAME_HDR];
	struct link_frame_hdr fh = { .type = type, .count = count, .body_len = body_len };

	wire_encode_frame(h, &fh);
	sb_put(b, h, sizeof(h));
}

static void put_bytes(struct seedbuf *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		sb_u8(b, (uint8_t)(seed + i * 13));
}

static void put_msg(struct seedbuf *b, uint64_t seq, uint32_t len, uint32_t flags)
{
	uint8_t h[LINK_MSG_HDR];

	wire_encode_msg(h, seq, len, flags);
	sb_put(b, h, sizeof(h));
	put_bytes(b, len, (uint8_t)seq);
}

static void put_chunk(struct seedbuf *b, uint64_t tag, uint64_t id, uint64_t off, uint64_t total, uint32_t len)
{
	uint8_t h[LINK_CHUNK_HDR];

	put_frame(b, LINK_FRAME_CHUNK, 1, LINK_CHUNK_HDR + len);
	wire_put_u64(h, tag);
	wire_put_u64(h + 8, id);
	wire_put_u64(h + 16, off);
	wire_put_u64(h + 24, total);
	sb_put(b, h, sizeof(h));
	put_bytes(b, len, (uint8_t)tag);
}

static void put_stamp_frame(struct seedbuf *b, uint8_t type)
{
	uint8_t stamp[8];

	put_frame(b, type, 0, sizeof(stamp));
	wire_put_u64(stamp, 0x1122334455667788ull);
	sb_put(b, stamp, sizeof(stamp));
}

/* What a client sends: a batch, heartbeats, bulk chunks in and out of the sink, close. */
static void client_traffic(struct seedbuf *b)
{
	put_frame(b, LINK_FRAME_BATCH, 3, 3 * LINK_MSG_HDR + 5 + 0 + 300);
	put_msg(b, 1, 5, 0);
	put_msg(b, 2, 0, LINK_MSG_WANTS_REPLY);
	put_msg(b, 3, 300, LINK_MSG_WANTS_REPLY);
	put_stamp_frame(b, LINK_FRAME_HEARTBEAT);
	put_chunk(b, 0, 1, 0, 200, 100);
	put_chunk(b, 0, 1, 100, 200, 100);
	put_chunk(b, 1, 2, LINK_FUZZ_SINK - 64, LINK_FUZZ_SINK, 64);
	put_chunk(b, 7, 3, 0, 50, 50);
	put_frame(b, LINK_FRAME_BATCH, 1, LINK_MSG_HDR + 40);
	put_msg(b, 4, 40, 0);
	put_frame(b, LINK_FRAME_CLOSE, 0, 0);
}

static void put_call(struct seedbuf *b, uint8_t kind, uint16_t cap, uint8_t step)
{
	sb_u8(b, kind);
	sb_u8(b, (uint8_t)cap);
	sb_u8(b, (uint8_t)(cap >> 8));
	sb_u8(b, step);
}

static void put_reply(struct seedbuf *b, uint64_t seq, uint32_t len)
{
	put_frame(b, LINK_FRAME_REPLY, 1, LINK_MSG_HDR + len);
	put_msg(b, seq, len, 0);
}

/* Calls 1-4 and what a server answers: fitting, too long, streamed, an
 * unknown seq, a heartbeat ack, close. */
static void server_traffic(struct seedbuf *b)
{
	sb_u8(b, 4);
	put_call(b, 0, 64, 0);
	put_call(b, 0, 4, 0);
	put_call(b, LINK_CALL_STREAM, 1000, 9);
	put_call(b, LINK_CALL_STREAM, 3, 0);
	put_reply(b, 1, 20);
	put_reply(b, 2, 10);
	put_stamp_frame(b, LINK_FRAME_HEARTBEAT_ACK);
	put_reply(b, 3, 100);
	put_reply(b, 99, 5);
	put_reply(b, 4, 50);
	put_frame(b, LINK_FRAME_CLOSE, 0, 0);
}

int seeds_link_msg(const char *dir)
{
	static const struct {
		const char *name;
		uint8_t flags, frag;
	} v[] = {
		{ "server", 0, 0 },
		{ "server-dest-reply", LINKF_CHUNK_DEST | LINKF_REPLY, 0 },
		{ "server-dest-frag7", LINKF_CHUNK_DEST, 7 },
		{ "client", LINKF_CLIENT, 0 },
		{ "client-frag3", LINKF_CLIENT, 3 },
	};
	struct seedbuf b = { 0 };
	int rc = 0;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sb_u8(&b, v[i].flags);
		sb_u8(&b, v[i].frag);
		if (v[i].flags & LINKF_CLIENT)
			server_traffic(&b);
		else
			client_traffic(&b);
		rc |= sb_write(&b, dir, v[i].name);
	}
	free(b.p);
	return rc;
}

/* ---- fuzz_link_handshake: recorded transcripts ---- */

struct hs_end {
	int fd;
	bool server, verbs_available;
	struct mearas_link_config cfg;
	int rc;
	int done; /* atomic */
};

static void *hs_main(void *arg)
{
	struct hs_end *e = arg;
	struct mearas_link_config in = e->cfg;

	link_config_effective(&in, &e->cfg); /* as the library's own callers do */
	if (e->server) {
		struct link_handshake_result res;

		memset(&res, 0, sizeof(res));
		e->rc = link_handshake_server(e->fd, &e->cfg, "seed-client", e->verbs_available, &res);
		SSL_free(res.ssl);
	} else {
		SSL *ssl = NULL;

		e->rc = link_handshake_client(e->fd, &e->cfg, "seed-server", &ssl, NULL);
		SSL_free(ssl);
	}
	shutdown(e->fd, SHUT_WR);
	__atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Moves what arrived on from to to, recording it; false at EOF. */
static bool relay_one(int from, int to, struct seedbuf *rec)
{
	uint8_t buf[16384];
	ssize_t n = recv(from, buf, sizeof(buf), MSG_DONTWAIT);

	if (n <= 0)
		return n < 0;
	sb_put(rec, buf, (size_t)n);
	return send(to, buf, (size_t)n, MSG_NOSIGNAL) == n;
}

/* Runs a client and a server handshake through a relay; c2s and s2c get
 * what each sent. */
static void record(struct hs_end *cl, struct hs_end *sv, struct seedbuf *c2s, struct seedbuf *s2c)
{
	int a[2], b[2];
	pthread_t tc, ts;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, a) || socketpair(AF_UNIX, SOCK_STREAM, 0, b))
		abort();
	cl->fd = a[0];
	sv->fd = b[0];
	cl->server = false;
	sv->server = true;
	cl->done = sv->done = 0;
	pthread_create(&tc, NULL, hs_main, cl);
	pthread_create(&ts, NULL, hs_main, sv);
	/* until both ends are done and nothing moved for a while, or both sent EOF */
	struct pollfd p[2] = { { .fd = a[1], .events = POLLIN }, { .fd = b[1], .events = POLLIN } };
	for (int quiet = 0; quiet < 20 && (p[0].fd >= 0 || p[1].fd >= 0);) {
		bool both = __atomic_load_n(&cl->done, __ATOMIC_ACQUIRE) && __atomic_load_n(&sv->done, __ATOMIC_ACQUIRE);

		if (poll(p, 2, 10) <= 0) {
			quiet += both;
			continue;
		}
		if (p[0].revents && !relay_one(a[1], b[1], c2s))
			p[0].fd = -1;
		if (p[1].revents && !relay_one(b[1], a[1], s2c))
			p[1].fd = -1;
	}
	pthread_join(tc, NULL);
	pthread_join(ts, NULL);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
}

static void end_cfg(struct mearas_link_config *cfg, bool key, bool tls)
{
	mearas_link_config_init(cfg);
	if (key) {
		cfg->key = (const uint8_t *)FUZZ_LINK_KEY;
		cfg->key_len = strlen(FUZZ_LINK_KEY);
	}
	cfg->encryption = tls ? MEARAS_LINK_ENCRYPTION_TLS : MEARAS_LINK_ENCRYPTION_OFF;
	cfg->connect_timeout_ms = 1000;
	cfg->handshake_ms = 1000;
	cfg->node_name = "seed";
	cfg->log = fuzz_link_log;
}

/* One recorded exchange, kept twice: as a client's bytes for the server
 * side (flags sflags) and as a server's bytes for the client side. */
static int transcript(const char *dir, const char *name, struct hs_end *cl, struct hs_end *sv, uint8_t sflags,
		      uint8_t cflags)
{
	struct seedbuf c2s = { 0 }, s2c = { 0 }, out = { 0 };
	char fname[128];
	int rc;

	record(cl, sv, &c2s, &s2c);
	sb_u8(&out, sflags);
	sb_put(&out, c2s.p, c2s.len);
	snprintf(fname, sizeof(fname), "server-%s", name);
	rc = sb_write(&out, dir, fname);
	sb_u8(&out, cflags | HSF_CLIENT);
	sb_put(&out, s2c.p, s2c.len);
	snprintf(fname, sizeof(fname), "client-%s", name);
	rc |= sb_write(&out, dir, fname);
	free(c2s.p), free(s2c.p), free(out.p);
	return rc;
}

int seeds_link_handshake(const char *dir)
{
	struct hs_end cl, sv;
	int rc = 0;

	/* accepted, clear text and TLS */
	for (int tls = 0; tls < 2; tls++) {
		memset(&cl, 0, sizeof(cl)), memset(&sv, 0, sizeof(sv));
		end_cfg(&cl.cfg, true, tls), end_cfg(&sv.cfg, true, tls);
		rc |= transcript(dir, tls ? "tls" : "clear", &cl, &sv, tls ? HSF_TLS : 0, tls ? HSF_TLS : 0);
	}
	/* verbs asked for: accepted, and refused by a server without a device */
	for (int dev = 0; dev < 2; dev++) {
		memset(&cl, 0, sizeof(cl)), memset(&sv, 0, sizeof(sv));
		end_cfg(&cl.cfg, true, false), end_cfg(&sv.cfg, true, false);
		cl.cfg.transport = MEARAS_LINK_TRANSPORT_VERBS;
		sv.verbs_available = dev;
		rc |= transcript(dir, dev ? "verbs" : "verbs-nodev", &cl, &sv, dev ? HSF_VERBS : 0, HSF_VERBS);
	}
	/* refusals: no key on the server, a wrong key, encryption and version mismatches */
	memset(&cl, 0, sizeof(cl)), memset(&sv, 0, sizeof(sv));
	end_cfg(&cl.cfg, true, false), end_cfg(&sv.cfg, false, false);
	rc |= transcript(dir, "nokey", &cl, &sv, HSF_NOKEY, 0);
	memset(&cl, 0, sizeof(cl)), memset(&sv, 0, sizeof(sv));
	end_cfg(&cl.cfg, true, false), end_cfg(&sv.cfg, true, false);
	cl.cfg.key = (const uint8_t *)"another key";
	cl.cfg.key_len = strlen("another key");
	rc |= transcript(dir, "wrongkey", &cl, &sv, 0, 0);
	memset(&cl, 0, sizeof(cl)), memset(&sv, 0, sizeof(sv));
	end_cfg(&cl.cfg, true, true), end_cfg(&sv.cfg, true, false);
	rc |= transcript(dir, "encryption-mismatch", &cl, &sv, 0, HSF_TLS);
	memset(&cl, 0, sizeof(cl)), memset(&sv, 0, sizeof(sv));
	end_cfg(&cl.cfg, true, false), end_cfg(&sv.cfg, true, false);
	cl.cfg.version_major = MEARAS_LINK_VERSION_MAJOR + 1;
	rc |= transcript(dir, "version-mismatch", &cl, &sv, 0, 0);
	return rc;
}
