/* Loopback tests of striped bulk transfers (src/stripe.h): a link's bulk
 * chunks spread over data connections, each with the link's handshake. One
 * case per behaviour (`test_stripe NAME` runs one); no timed assertions: the
 * waits below are bounds on something that happens at once. */
#include "link_internal.h"
#include "remote_link.h"
#include "test_server.h"

#define CHECK_RC_NAME(code) mearas_link_strerror(code)
#include "check.h"

#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const uint8_t KEY[] = "test-cluster-key-0123456789";
static const uint8_t WRONG_KEY[] = "test-cluster-key-9876543210";

#include "log_capture.h"
#include "case_link.h"

static void base_cfg(struct mearas_link_config *c, const uint8_t *key, enum mearas_link_encryption enc)
{
	mearas_link_config_init(c);
	c->key = key;
	c->key_len = strlen((const char *)key);
	c->encryption = enc;
	c->log = capture_log;
}

static void serve(enum mearas_link_encryption enc)
{
	struct mearas_link_config cfg;

	base_cfg(&cfg, KEY, enc);
	REQUIRE_RC(ts_local_start(&srv, "127.0.0.1", 0, &cfg), MEARAS_LINK_OK);
	srv.st.check_pattern = true;
	srv.st.unordered = true;
}

static void link_up(enum mearas_link_encryption enc, uint32_t streams)
{
	struct mearas_link_config cfg;

	base_cfg(&cfg, KEY, enc);
	cfg.streams = streams;
	REQUIRE_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
}

/* the test server's figures, read under its lock (its threads write them) */
static uint64_t server_bulk_bytes(void)
{
	pthread_mutex_lock(&srv.st.lock);
	uint64_t n = srv.st.bulk_bytes;
	pthread_mutex_unlock(&srv.st.lock);
	return n;
}

static int server_chunk_errors(void)
{
	pthread_mutex_lock(&srv.st.lock);
	int n = srv.st.chunk_errors;
	pthread_mutex_unlock(&srv.st.lock);
	return n;
}

static int server_closed(int *last_status)
{
	pthread_mutex_lock(&srv.st.lock);
	int n = srv.st.closed;
	if (last_status)
		*last_status = srv.st.last_close_status;
	pthread_mutex_unlock(&srv.st.lock);
	return n;
}

/* ts_wait_closed, then the status of the last link closed */
static bool closed_with(int n, int *status)
{
	return ts_wait_closed(&srv.st, n, 5.0) && server_closed(status) >= n;
}

/* A bulk transfer of the tests' pattern, then a call that asks the server
 * how many bulk bytes it has: exactly all of them (the call went after the
 * transfer, and may not overtake its bytes). */
static int bulk_then_sync(uint64_t tag, size_t len, uint64_t want_total)
{
	uint8_t *data = malloc(len);
	uint64_t got = 0;
	int rc;

	if (!data)
		return MEARAS_LINK_E_NOMEM;
	for (size_t i = 0; i < len; i++)
		data[i] = ts_pattern(tag, i);
	rc = mearas_link_bulk(lnk, tag, data, len);
	if (!rc)
		rc = mearas_link_call(lnk, "S", 1, &got, sizeof(got), NULL, 10000);
	free(data);
	return rc ? rc : got == want_total ? MEARAS_LINK_OK : MEARAS_LINK_E_PROTO;
}

static void striped_copies(enum mearas_link_encryption enc)
{
	uint64_t total = 0;

	serve(enc);
	link_up(enc, 4);
	CHECK(mearas_link_streams(lnk) == 4);
	CHECK(log_has("link to 127.0.0.1", "bulk striped over 4 data connections"));
	CHECK(log_wait("link from 127.0.0.1", "bulk striped over 4 data connections", 2.0));
	/* sizes: less than a chunk, not a multiple of it, many chunks */
	size_t sizes[] = { 1, 1000, (1u << 20) + 1, (4u << 20), (24u << 20) + 12345, 3 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		total += sizes[i];
		CHECK_RC(bulk_then_sync(i + 1, sizes[i], total), MEARAS_LINK_OK);
	}
	CHECK(server_chunk_errors() == 0);
	/* many transfers back to back, one sync at the end */
	for (int i = 0; i < 40; i++) {
		uint8_t b[3000];
		for (size_t k = 0; k < sizeof(b); k++)
			b[k] = ts_pattern(9, k);
		CHECK_RC(mearas_link_bulk(lnk, 9, b, sizeof(b)), MEARAS_LINK_OK);
		total += sizeof(b);
	}
	uint64_t got = 0;
	CHECK_RC(mearas_link_call(lnk, "S", 1, &got, sizeof(got), NULL, 10000), MEARAS_LINK_OK);
	CHECK(got == total);
	CHECK(server_chunk_errors() == 0);
	mearas_link_close(lnk);
	lnk = NULL;
	int st = -1;
	CHECK(closed_with(1, &st) && st == MEARAS_LINK_OK);
}

/* A copy striped over 4 data connections arrives byte-exact, and a call
 * sent after it finds all of it there: with TLS... */
static void t_striped_bulk_tls(void)
{
	striped_copies(MEARAS_LINK_ENCRYPTION_TLS);
}

/* ... and in clear text */
static void t_striped_bulk_plain(void)
{
	striped_copies(MEARAS_LINK_ENCRYPTION_OFF);
}

/* streams 1 (and 0): no data connection, bulk on the link's own connection
 * in order, as before striping */
static void t_one_stream_is_the_link_itself(void)
{
	serve(MEARAS_LINK_ENCRYPTION_TLS);
	srv.st.unordered = false;
	link_up(MEARAS_LINK_ENCRYPTION_TLS, 1);
	CHECK(mearas_link_streams(lnk) == 0);
	CHECK(!log_has("striped", NULL));
	CHECK_RC(bulk_then_sync(3, (5u << 20) + 7, (5u << 20) + 7), MEARAS_LINK_OK);
	CHECK(server_chunk_errors() == 0);
}

/* A data connection cut by the network fails the whole link: the server
 * says which one dropped and closes the link, the client's calls fail. */
static void t_cut_data_connection_fails_link(void)
{
	serve(MEARAS_LINK_ENCRYPTION_TLS);
	link_up(MEARAS_LINK_ENCRYPTION_TLS, 4);
	CHECK_RC(bulk_then_sync(1, 3u << 20, 3u << 20), MEARAS_LINK_OK);
	link_client_stream_cut(lnk, 2);
	CHECK(log_wait("data connection 2", "dropped", 5.0));
	CHECK(log_has("link from 127.0.0.1", "data connection 2"));
	int st = MEARAS_LINK_OK;
	CHECK(closed_with(1, &st) && st != MEARAS_LINK_OK);
	/* the client learns it (within its dead bound at most) */
	int rc = MEARAS_LINK_OK;
	for (double t0 = check_now(); !rc && check_now() - t0 < 10.0; usleep(1000))
		rc = mearas_link_health(lnk);
	CHECK_RC(rc, MEARAS_LINK_E_BROKEN);
	uint8_t b[100] = { 0 };
	CHECK(mearas_link_bulk(lnk, 1, b, sizeof(b)) != MEARAS_LINK_OK);
	CHECK(mearas_link_call(lnk, "S", 1, NULL, 0, NULL, 1000) != MEARAS_LINK_OK);
}

/* chunk_dest of a server that has no home for any chunk */
static void *no_home(void *ctx, struct mearas_link_conn *c, uint64_t tag, uint64_t offset, uint64_t total, size_t len)
{
	(void)ctx, (void)c, (void)tag, (void)offset, (void)total, (void)len;
	return NULL;
}

/* Chunks the server's chunk_dest has no home for are read and dropped (in
 * small pieces: no chunk-sized buffer), not handed on; the link goes on. */
static void t_chunks_without_a_home_dropped(void)
{
	struct mearas_link_config cfg;
	struct mearas_link_server_ops ops;
	uint8_t *b = calloc(1, 8u << 20);
	uint64_t got = 1;

	base_cfg(&cfg, KEY, MEARAS_LINK_ENCRYPTION_TLS);
	ts_init(&srv.st);
	ts_ops(&srv.st, &ops);
	ops.chunk_dest = no_home;
	REQUIRE_RC(mearas_link_server_start("127.0.0.1", 0, &cfg, &ops, &srv.srv), MEARAS_LINK_OK);
	srv.port = mearas_link_server_port(srv.srv);
	link_up(MEARAS_LINK_ENCRYPTION_TLS, 4);
	REQUIRE(b != NULL);
	CHECK_RC(mearas_link_bulk(lnk, 1, b, 8u << 20), MEARAS_LINK_OK);
	CHECK_RC(mearas_link_call(lnk, "S", 1, &got, sizeof(got), NULL, 10000), MEARAS_LINK_OK);
	CHECK(got == 0);
	char echo[8];
	CHECK_RC(mearas_link_call(lnk, "Eon", 3, echo, sizeof(echo), NULL, 10000), MEARAS_LINK_OK);
	free(b);
}

/* ---- bulk from the server to the client ---- */

static uint8_t down_buf[32u << 20];

static void *down_dest(void *ctx, uint64_t tag, uint64_t offset, uint64_t total, size_t len)
{
	(void)ctx;
	(void)tag;
	if (total > sizeof(down_buf) || offset > total || len > total - offset)
		return NULL;
	return down_buf + offset;
}

/* 'D': the server sends n bytes (pattern tag) over the data connections;
 * the client waits for them: byte-exact */
static int down(uint8_t tag, uint32_t n)
{
	uint8_t req[6] = { 'D' };
	int32_t st = -1;
	int rc;

	memcpy(req + 1, &n, 4);
	req[5] = tag;
	memset(down_buf, 0, n);
	rc = mearas_link_call(lnk, req, sizeof(req), &st, sizeof(st), NULL, 10000);
	if (!rc)
		rc = st;
	if (!rc)
		rc = mearas_link_bulk_wait(lnk, n);
	for (uint32_t i = 0; !rc && i < n; i++)
		if (down_buf[i] != ts_pattern(tag, i))
			rc = MEARAS_LINK_E_PROTO;
	return rc;
}

static void down_copies(enum mearas_link_encryption enc)
{
	struct mearas_link_config cfg;

	serve(enc);
	base_cfg(&cfg, KEY, enc);
	cfg.streams = 4;
	cfg.bulk_dest = down_dest;
	REQUIRE_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
	/* the server's end of the last data connection may still be starting */
	int rc = MEARAS_LINK_E_INVAL;
	for (double t0 = check_now(); rc == MEARAS_LINK_E_INVAL && check_now() - t0 < 5.0; usleep(1000))
		rc = down(9, 10);
	CHECK_RC(rc, MEARAS_LINK_OK);
	uint32_t sizes[] = { 1, 5000, (1u << 20) + 3, (24u << 20) + 12345, 77 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		CHECK_RC(down(i + 1, sizes[i]), MEARAS_LINK_OK);
	/* still both ways after */
	CHECK_RC(bulk_then_sync(3, 2u << 20, 2u << 20), MEARAS_LINK_OK);
}

/* The server's bulk to the client, striped over 4 data connections,
 * arrives byte-exact: with TLS... */
static void t_striped_bulk_to_client_tls(void)
{
	down_copies(MEARAS_LINK_ENCRYPTION_TLS);
}

/* ... and in clear text */
static void t_striped_bulk_to_client_plain(void)
{
	down_copies(MEARAS_LINK_ENCRYPTION_OFF);
}

/* A client that reads no bulk (no bulk_dest) gets none: the server's
 * send is refused, the link goes on. */
static void t_no_bulk_to_a_client_that_reads_none(void)
{
	uint8_t req[6] = { 'D', 100, 0, 0, 0, 1 };
	int32_t st = 0;

	serve(MEARAS_LINK_ENCRYPTION_TLS);
	link_up(MEARAS_LINK_ENCRYPTION_TLS, 4);
	CHECK_RC(mearas_link_call(lnk, req, sizeof(req), &st, sizeof(st), NULL, 10000), MEARAS_LINK_OK);
	CHECK_RC(st, MEARAS_LINK_E_INVAL);
	CHECK_RC(mearas_link_bulk_wait(lnk, 100), MEARAS_LINK_E_INVAL);
	CHECK_RC(bulk_then_sync(3, 100, 100), MEARAS_LINK_OK);
}

/* A transfer from the server that is not what the client waits for (its
 * total differs) fails the link. */
static void t_bulk_to_client_wrong_total_fails_link(void)
{
	struct mearas_link_config cfg;
	uint8_t req[6] = { 'D', 100, 0, 0, 0, 1 };
	int32_t st = MEARAS_LINK_E_INVAL;

	serve(MEARAS_LINK_ENCRYPTION_TLS);
	base_cfg(&cfg, KEY, MEARAS_LINK_ENCRYPTION_TLS);
	cfg.streams = 2;
	cfg.bulk_dest = down_dest;
	REQUIRE_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
	for (double t0 = check_now(); st == MEARAS_LINK_E_INVAL && check_now() - t0 < 5.0; usleep(1000))
		CHECK_RC(mearas_link_call(lnk, req, sizeof(req), &st, sizeof(st), NULL, 10000), MEARAS_LINK_OK);
	CHECK_RC(st, MEARAS_LINK_OK);
	CHECK_RC(mearas_link_bulk_wait(lnk, 99), MEARAS_LINK_E_PROTO);
	CHECK(log_has("bulk transfer 1 from the peer", "not 99 bytes"));
	CHECK(mearas_link_health(lnk) != MEARAS_LINK_OK);
}

/* ---- connections made by hand, for what the library never sends ---- */

/* A connection with the link handshake (st: striping) and its transport. */
static int hand_conn(const uint8_t *key, enum mearas_link_encryption enc, struct link_hs_stripe *st,
		     struct link_transport **t)
{
	struct mearas_link_config in, cfg;
	SSL *ssl = NULL;
	int fd = -1;
	int rc;

	*t = NULL;
	base_cfg(&in, key, enc);
	link_config_effective(&in, &cfg);
	rc = link_tcp_connect("127.0.0.1", srv.port, 2000, &fd);
	if (!rc)
		rc = link_handshake_client_stripe(fd, &cfg, "test", &ssl, NULL, st);
	if (!rc && ssl)
		rc = link_sealed_transport_create(fd, ssl, false, &cfg, "test", t);
	else if (!rc)
		rc = link_tcp_transport_create(fd, &cfg, t);
	else
		SSL_free(ssl);
	if (rc && !*t && fd >= 0)
		close(fd);
	return rc;
}

static void hand_close(struct link_transport *t)
{
	if (t)
		t->ops->destroy(t);
}

static int send_chunk(struct link_transport *t, uint64_t id, uint64_t off, uint64_t total, const void *data,
		      size_t n)
{
	uint8_t hdr[LINK_FRAME_HDR + LINK_CHUNK_HDR];
	struct link_frame_hdr fh = { .type = LINK_FRAME_CHUNK, .count = 1, .body_len = (uint32_t)(LINK_CHUNK_HDR + n) };

	wire_encode_frame(hdr, &fh);
	wire_put_u64(hdr + LINK_FRAME_HDR, 5); /* tag */
	wire_put_u64(hdr + LINK_FRAME_HDR + 8, id);
	wire_put_u64(hdr + LINK_FRAME_HDR + 16, off);
	wire_put_u64(hdr + LINK_FRAME_HDR + 24, total);
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)data, n } };
	return t->ops->send_iov(t, iov, n ? 2 : 1);
}

static int send_bulk_end(struct link_transport *t, uint64_t id, uint64_t total)
{
	uint8_t f[LINK_FRAME_HDR + LINK_BULK_END_BODY];
	struct link_frame_hdr fh = { .type = LINK_FRAME_BULK_END, .body_len = LINK_BULK_END_BODY };

	wire_encode_frame(f, &fh);
	wire_put_u64(f + LINK_FRAME_HDR, id);
	wire_put_u64(f + LINK_FRAME_HDR + 8, total);
	return t->ops->send_iov(t, &(struct iovec){ f, sizeof(f) }, 1);
}

/* A main connection with 2 data connections granted (*main), its id in *st. */
static void hand_main(struct link_hs_stripe *st, struct link_transport **main)
{
	*st = (struct link_hs_stripe){ .want = 2 };
	CHECK_RC(hand_conn(KEY, MEARAS_LINK_ENCRYPTION_TLS, st, main), MEARAS_LINK_OK);
	CHECK(st->granted == 2);
}

static int hand_data(const uint8_t *key, const uint8_t *id, uint32_t index, struct link_transport **t)
{
	struct link_hs_stripe d = { .attach = true, .index = index };

	memcpy(d.link_id, id, LINK_ID_BYTES);
	return hand_conn(key, MEARAS_LINK_ENCRYPTION_TLS, &d, t);
}

/* A data connection is refused unless it proves the key and names an open
 * link and a free place in it. */
static void t_forged_data_connection_refused(void)
{
	struct link_hs_stripe st;
	struct link_transport *main = NULL, *d = NULL;
	uint8_t made_up[LINK_ID_BYTES];

	serve(MEARAS_LINK_ENCRYPTION_TLS);
	hand_main(&st, &main);
	/* the link's own id, without the key */
	CHECK_RC(hand_data(WRONG_KEY, st.link_id, 0, &d), MEARAS_LINK_E_AUTH);
	hand_close(d);
	/* the key, with an id no link has */
	RAND_bytes(made_up, sizeof(made_up));
	CHECK_RC(hand_data(KEY, made_up, 0, &d), MEARAS_LINK_E_AUTH);
	CHECK(log_wait("refused", "names no open link", 2.0));
	hand_close(d);
	/* a place past the granted ones */
	CHECK_RC(hand_data(KEY, st.link_id, 2, &d), MEARAS_LINK_E_AUTH);
	hand_close(d);
	/* the right one is taken, once */
	CHECK_RC(hand_data(KEY, st.link_id, 0, &d), MEARAS_LINK_OK);
	struct link_transport *again = NULL;
	CHECK_RC(hand_data(KEY, st.link_id, 0, &again), MEARAS_LINK_E_AUTH);
	hand_close(again);
	CHECK(log_has("refused", "taken or out of range"));
	/* the refusals did not touch the link */
	CHECK(server_closed(NULL) == 0);
	hand_close(d);
	hand_close(main);
	CHECK(ts_wait_closed(&srv.st, 1, 5.0));
}

/* A chunk that does not fit its transfer (range past its total, a total
 * that changes, bytes past the total) fails the link, nothing of it handed on. */
static void bad_chunk(uint64_t id, uint64_t off, uint64_t total, size_t n, int nth)
{
	struct link_hs_stripe st;
	struct link_transport *main = NULL, *d = NULL;
	static uint8_t b[1 << 16];

	hand_main(&st, &main);
	CHECK_RC(hand_data(KEY, st.link_id, 1, &d), MEARAS_LINK_OK);
	if (d) {
		/* a good one first, then the bad one */
		CHECK_RC(send_chunk(d, 1, 0, 1000, b, 10), MEARAS_LINK_OK);
		(void)send_chunk(d, id, off, total, b, n);
	}
	CHECK(ts_wait_closed(&srv.st, nth, 5.0));
	CHECK(log_wait("does not fit the transfer", NULL, 2.0));
	hand_close(d);
	hand_close(main);
}

static void t_chunk_out_of_range_refused(void)
{
	serve(MEARAS_LINK_ENCRYPTION_TLS);
	bad_chunk(1, 995, 1000, 10, 1);         /* past the total */
	bad_chunk(1, UINT64_MAX - 4, 1000, 10, 2); /* offset wraps */
	bad_chunk(1, 10, 2000, 10, 3);          /* the total changes */
	bad_chunk(1, 0, 1000, 995, 4);          /* more bytes than the total */
	bad_chunk(0, 0, 1000, 10, 5);           /* no transfer has id 0 */
	CHECK(server_bulk_bytes() == 5 * 10);   /* the good chunks only */
}

/* BULK_END holds the main connection until the transfer's bytes are in:
 * a call sent after it (before any chunk) is answered after all of them. */
static void t_bulk_end_holds_later_messages(void)
{
	struct link_hs_stripe st;
	struct link_transport *main = NULL, *d = NULL;
	static uint8_t b[3000];
	uint8_t f[LINK_FRAME_HDR + LINK_MSG_HDR + 1], rep[LINK_FRAME_HDR + LINK_MSG_HDR + 8];
	struct link_frame_hdr fh = { .type = LINK_FRAME_BATCH, .count = 1, .body_len = LINK_MSG_HDR + 1 };

	serve(MEARAS_LINK_ENCRYPTION_TLS);
	srv.st.check_pattern = false;
	hand_main(&st, &main);
	CHECK_RC(hand_data(KEY, st.link_id, 0, &d), MEARAS_LINK_OK);
	if (!main || !d)
		goto out;
	CHECK_RC(send_bulk_end(main, 1, sizeof(b)), MEARAS_LINK_OK);
	wire_encode_frame(f, &fh);
	wire_encode_msg(f + LINK_FRAME_HDR, 1, 1, LINK_MSG_WANTS_REPLY);
	f[LINK_FRAME_HDR + LINK_MSG_HDR] = 'S';
	CHECK_RC(main->ops->send_iov(main, &(struct iovec){ f, sizeof(f) }, 1), MEARAS_LINK_OK);
	usleep(20000); /* not needed for the check: gives the call a chance to overtake */
	CHECK(server_bulk_bytes() == 0);
	CHECK_RC(send_chunk(d, 1, 1000, sizeof(b), b, 2000), MEARAS_LINK_OK);
	CHECK_RC(send_chunk(d, 1, 0, sizeof(b), b, 1000), MEARAS_LINK_OK);
	uint64_t last = 0;
	int stop = 0;
	CHECK_RC(link_read_exact(main, rep, sizeof(rep), 100, 5000, &last, &stop), MEARAS_LINK_OK);
	CHECK(wire_get_u64(rep + LINK_FRAME_HDR + LINK_MSG_HDR) == sizeof(b));
out:
	hand_close(d);
	hand_close(main);
}

/* BULK_END that does not match its transfer (another id, another total),
 * or on a link without data connections, fails the link. */
static void t_bad_bulk_end_refused(void)
{
	struct link_hs_stripe st;
	struct link_transport *main = NULL;

	serve(MEARAS_LINK_ENCRYPTION_TLS);
	hand_main(&st, &main);
	if (main)
		CHECK_RC(send_bulk_end(main, 2, 100), MEARAS_LINK_OK); /* id 1 comes first */
	int status = 0;
	CHECK(closed_with(1, &status) && status == MEARAS_LINK_E_PROTO);
	hand_close(main);
	st = (struct link_hs_stripe){ 0 };
	CHECK_RC(hand_conn(KEY, MEARAS_LINK_ENCRYPTION_TLS, &st, &main), MEARAS_LINK_OK);
	CHECK(st.granted == 0);
	if (main)
		CHECK_RC(send_bulk_end(main, 1, 100), MEARAS_LINK_OK);
	CHECK(closed_with(2, &status) && status == MEARAS_LINK_E_PROTO);
	CHECK(log_has("unexpected bulk end", "no data connections"));
	hand_close(main);
}

#define T(fn) { #fn + 2, fn }
static const struct check_case cases[] = {
	T(t_striped_bulk_tls),
	T(t_striped_bulk_plain),
	T(t_one_stream_is_the_link_itself),
	T(t_cut_data_connection_fails_link),
	T(t_chunks_without_a_home_dropped),
	T(t_striped_bulk_to_client_tls),
	T(t_striped_bulk_to_client_plain),
	T(t_no_bulk_to_a_client_that_reads_none),
	T(t_bulk_to_client_wrong_total_fails_link),
	T(t_forged_data_connection_refused),
	T(t_chunk_out_of_range_refused),
	T(t_bulk_end_holds_later_messages),
	T(t_bad_bulk_end_refused),
};
CHECK_MAIN_FIXTURE(cases, case_setup, case_teardown)
