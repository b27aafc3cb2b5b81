/* Loopback tests of remote-link: one process, plus forked peers for the
 * fault tests (a killed or stopped server or client process). One case per
 * behaviour, run by tests/check.h's runner (`test_unit NAME` runs one).
 * Throughput figures are experiments/linkbench's, not checks here. */
#include "link_internal.h"
#include "link.pb-c.h"
#include "records.h"
#include "remote_link.h"
#include "tamper_proxy.h"
#include "test_server.h"

#define CHECK_RC_NAME(code) mearas_link_strerror(code)
#include "check.h"

#include <infiniband/verbs.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

static const uint8_t KEY[] = "test-cluster-key-0123456789";
static const uint8_t WRONG_KEY[] = "test-cluster-key-9876543210";

#include "log_capture.h"
#include "case_link.h"

static void base_cfg(struct mearas_link_config *c, const uint8_t *key)
{
	mearas_link_config_init(c);
	if (key) {
		c->key = key;
		c->key_len = strlen((const char *)key);
	}
	c->log = capture_log;
}

static int local_start_cfg(struct ts_local *ls, const struct mearas_link_config *cfg)
{
	return ts_local_start(ls, "127.0.0.1", 0, cfg);
}

static int local_start_enc(struct ts_local *ls, const uint8_t *key, enum mearas_link_encryption enc)
{
	struct mearas_link_config cfg;
	base_cfg(&cfg, key);
	cfg.encryption = enc;
	return local_start_cfg(ls, &cfg);
}

static int echo_call(struct mearas_link *l, const char *text)
{
	char req[128], rep[128];
	size_t n = (size_t)snprintf(req, sizeof(req), "E%s", text), got = 0;
	int rc = mearas_link_call(l, req, n, rep, sizeof(rep), &got, 5000);
	if (rc)
		return rc;
	return got == n && memcmp(req, rep, n) == 0 ? MEARAS_LINK_OK : MEARAS_LINK_E_PROTO;
}

static int connect_local(uint16_t port, const uint8_t *key, struct mearas_link **l)
{
	struct mearas_link_config cfg;
	base_cfg(&cfg, key);
	return mearas_link_connect("127.0.0.1", port, &cfg, l);
}

/* ---- each case's server (srv, case_link.h) and link (lnk) ---- */

/* srv: a server with the cluster key and link encryption enc */
static void serve_enc(enum mearas_link_encryption enc)
{
	server_stop();
	REQUIRE_RC(local_start_enc(&srv, KEY, enc), MEARAS_LINK_OK);
}

static void serve(void)
{
	serve_enc(MEARAS_LINK_ENCRYPTION_TLS);
}

static void serve_cfg(const struct mearas_link_config *cfg)
{
	server_stop();
	REQUIRE_RC(local_start_cfg(&srv, cfg), MEARAS_LINK_OK);
}

/* lnk: a link to srv with the cluster key */
static void link_up(void)
{
	link_close();
	REQUIRE_RC(connect_local(srv.port, KEY, &lnk), MEARAS_LINK_OK);
}

/* A new link to port still gets echoes (a server that goes on admitting). */
static void link_and_echo(uint16_t port, const char *text)
{
	struct mearas_link *l = NULL;
	CHECK_RC(connect_local(port, KEY, &l), MEARAS_LINK_OK);
	if (l) {
		CHECK_RC(echo_call(l, text), MEARAS_LINK_OK);
		mearas_link_close(l);
	}
}

static uint64_t server_msgs(struct ts_local *ls)
{
	pthread_mutex_lock(&ls->st.lock);
	uint64_t n = ls->st.msgs;
	pthread_mutex_unlock(&ls->st.lock);
	return n;
}

/* ---- calls, posts, bulk ---- */

static void t_echo_and_orderly_close(void)
{
	serve();
	link_up();
	CHECK_RC(echo_call(lnk, "hello"), MEARAS_LINK_OK);
	CHECK_RC(mearas_link_health(lnk), MEARAS_LINK_OK);
	link_close();
	CHECK(ts_wait_closed(&srv.st, 1, 2.0));
	CHECK(srv.st.last_close_status == MEARAS_LINK_OK);
	CHECK(srv.st.opened == 1);
}

/* A quiet link's heartbeats measure its round trip (stats.rtt_ns). */
static void t_heartbeat_round_trip(void)
{
	struct mearas_link_config cfg;
	struct mearas_link_stats st;

	serve();
	base_cfg(&cfg, KEY);
	cfg.heartbeat_ms = 50;
	link_close();
	REQUIRE_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
	mearas_link_get_stats(lnk, &st);
	CHECK(st.rtt_ns == 0); /* none answered yet */
	for (int i = 0; i < 100 && (!st.rtt_ns || st.heartbeats_sent < 2); i++) {
		usleep(20000);
		mearas_link_get_stats(lnk, &st);
	}
	printf("  heartbeat round trip %.1f us after %llu heartbeats\n", st.rtt_ns / 1e3,
	       (unsigned long long)st.heartbeats_sent);
	CHECK(st.heartbeats_sent >= 2);
	CHECK(st.rtt_ns > 0 && st.rtt_ns < 1000000000ull);
}

static int post_ordered(struct mearas_link *l, uint8_t thread, uint32_t counter)
{
	uint8_t m[24] = { 'O', thread };
	memcpy(m + 2, &counter, 4);
	return mearas_link_post(l, m, sizeof(m));
}

static void t_order_across_batches(void)
{
	serve();
	link_up();
	const uint32_t n = 200000;
	int calls = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (post_ordered(lnk, 0, i))
			break;
		if (i % 5000 == 4999) {
			CHECK_RC(echo_call(lnk, "mid"), MEARAS_LINK_OK);
			calls++;
		}
	}
	CHECK_RC(echo_call(lnk, "end"), MEARAS_LINK_OK);
	calls++;
	struct mearas_link_stats st;
	mearas_link_get_stats(lnk, &st);
	printf("  %u messages in %llu batches\n", n, (unsigned long long)st.batches_sent);
	CHECK(st.msgs_posted == n);
	CHECK(st.batches_sent > 10 && st.batches_sent < n / 4);
	CHECK(srv.st.msgs == n + (uint64_t)calls);
	CHECK(srv.st.order_errors == 0);
	CHECK(srv.st.next_counter[0] == n);
}

struct thread_arg {
	struct mearas_link *l;
	uint8_t id;
	int errors;
};

static void *client_thread(void *p)
{
	struct thread_arg *a = p;
	for (uint32_t i = 0; i < 20000; i++) {
		if (post_ordered(a->l, a->id, i)) {
			a->errors++;
			break;
		}
		if (i % 1000 == 999) {
			char text[32];
			snprintf(text, sizeof(text), "t%u-%u", a->id, i);
			if (echo_call(a->l, text))
				a->errors++;
		}
	}
	return NULL;
}

static void t_eight_threads_one_link(void)
{
	serve();
	link_up();
	pthread_t th[8];
	struct thread_arg args[8];
	for (int i = 0; i < 8; i++) {
		args[i] = (struct thread_arg){ .l = lnk, .id = (uint8_t)(i + 1) };
		pthread_create(&th[i], NULL, client_thread, &args[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		CHECK(args[i].errors == 0);
	}
	CHECK_RC(echo_call(lnk, "done"), MEARAS_LINK_OK);
	CHECK(srv.st.order_errors == 0);
	for (int i = 1; i <= 8; i++)
		CHECK(srv.st.next_counter[i] == 20000);
	CHECK(srv.st.msgs == 8 * (20000 + 20) + 1);
}

/* Both batch sizes deliver every message (the rates are experiments/linkbench's). */
static void t_batching_on_and_off_deliver_all(void)
{
	serve();
	uint32_t batch[2] = { 256, 1 }, n[2] = { 30000, 10000 };
	uint64_t want = 0;
	for (int k = 0; k < 2; k++) {
		struct mearas_link_config cfg;
		base_cfg(&cfg, KEY);
		cfg.batch_max_msgs = batch[k];
		REQUIRE_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
		uint8_t m[64] = { 'X' };
		uint32_t i = 0;
		while (i < n[k] && !mearas_link_post(lnk, m, sizeof(m)))
			i++;
		CHECK_EQ(i, n[k]);
		uint64_t bulk;
		CHECK_RC(mearas_link_call(lnk, "S", 1, &bulk, sizeof(bulk), NULL, 30000), MEARAS_LINK_OK);
		want += n[k] + 1;
		CHECK_EQ(server_msgs(&srv), want);
		link_close();
	}
}

static void t_bulk_pipelined_chunks(void)
{
	serve();
	srv.st.check_pattern = true;
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	cfg.chunk_bytes = 1000000; /* deliberately not a power of two */
	REQUIRE_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
	size_t len = 64u << 20;
	uint8_t *data = malloc(len);
	REQUIRE(data);
	for (size_t i = 0; i < len; i++)
		data[i] = ts_pattern(3, i);
	CHECK_RC(mearas_link_bulk(lnk, 3, data, len), MEARAS_LINK_OK);
	double returned = check_now();
	uint64_t got = 0;
	size_t rl = 0;
	CHECK_RC(mearas_link_call(lnk, "S", 1, &got, sizeof(got), &rl, 10000), MEARAS_LINK_OK);
	CHECK(rl == 8 && got == len);
	CHECK(srv.st.chunks == (len + 999999) / 1000000);
	CHECK(srv.st.chunk_errors == 0);
	printf("  first chunk used %.1f ms before the sender finished; last chunk %.1f ms after\n",
	       (returned - srv.st.first_chunk_at) * 1e3, (srv.st.last_chunk_at - returned) * 1e3);
	/* pipelining: an order of events, not a duration */
	CHECK(srv.st.first_chunk_at < returned);
	free(data);
}

static void t_reply_sizes(void)
{
	serve();
	link_up();
	uint8_t req[5] = { 'B' }, rep[1000];
	uint32_t want = 100000;
	memcpy(req + 1, &want, 4);
	size_t rl = 0;
	CHECK_RC(mearas_link_call(lnk, req, 5, rep, sizeof(rep), &rl, 2000), MEARAS_LINK_E_TOOBIG);
	want = 0;
	memcpy(req + 1, &want, 4);
	rl = 99;
	CHECK_RC(mearas_link_call(lnk, req, 5, NULL, 0, &rl, 2000), MEARAS_LINK_OK);
	CHECK(rl == 0);
	CHECK_RC(echo_call(lnk, "still fine"), MEARAS_LINK_OK);
	CHECK(srv.st.msgs == 3);
}

static void t_call_timeout(void)
{
	serve();
	link_up();
	uint8_t rep[16];
	size_t rl = 0;
	double t0 = check_now();
	CHECK_RC(mearas_link_call(lnk, "H", 1, rep, sizeof(rep), &rl, 200), MEARAS_LINK_E_TIMEOUT);
	double dt = check_now() - t0;
	printf("  a 200 ms call timeout fired after %.0f ms\n", dt * 1e3);
	/* not before its time; the upper bound is a generous liveness deadline
	 * (a call left waiting), not a measure of precision on a loaded machine */
	CHECK(dt >= 0.19 && dt < 3.0);
	CHECK_RC(mearas_link_health(lnk), MEARAS_LINK_OK);
	CHECK_RC(echo_call(lnk, "after the timeout"), MEARAS_LINK_OK);
}

/* A message larger than a batch goes out alone, straight from caller memory. */
static void t_message_larger_than_batch(void)
{
	serve();
	link_up();
	size_t big = 300000;
	uint8_t *bigmsg = calloc(1, big);
	REQUIRE(bigmsg);
	bigmsg[0] = 'X';
	CHECK_RC(mearas_link_post(lnk, bigmsg, big), MEARAS_LINK_OK);
	free(bigmsg);
	CHECK_RC(echo_call(lnk, "still fine"), MEARAS_LINK_OK);
	CHECK(srv.st.msgs == 2);
}

static void t_invalid_arguments(void)
{
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	CHECK_RC(mearas_link_connect(NULL, 1, &cfg, &lnk), MEARAS_LINK_E_INVAL);
	CHECK_RC(mearas_link_connect("127.0.0.1", 0, &cfg, &lnk), MEARAS_LINK_E_INVAL);
	CHECK_RC(mearas_link_post(NULL, "x", 1), MEARAS_LINK_E_INVAL);
	CHECK_RC(mearas_link_bulk(NULL, 0, "x", 1), MEARAS_LINK_E_INVAL);
	serve();
	link_up();
	struct iovec huge = { .iov_base = (void *)"x", .iov_len = MEARAS_LINK_MAX_MSG + 1 };
	CHECK_RC(mearas_link_postv(lnk, &huge, 1), MEARAS_LINK_E_INVAL);
	CHECK_RC(mearas_link_call(lnk, "E", 1, NULL, 10, NULL, 100), MEARAS_LINK_E_INVAL);
	CHECK_RC(mearas_link_bulk(lnk, 0, "x", 0), MEARAS_LINK_E_INVAL);
	CHECK_RC(echo_call(lnk, "ok"), MEARAS_LINK_OK);
}

static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(a);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &sl);
	close(fd);
	return ntohs(a.sin_port);
}

/* Nothing listens on the port: a clear error at once (well within the 3 s
 * connect timeout it would otherwise wait for), and for an unknown host. */
static void t_connect_refused_at_once(void)
{
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	double t0 = check_now();
	CHECK_RC(mearas_link_connect("127.0.0.1", free_port(), &cfg, &lnk), MEARAS_LINK_E_CONNECT);
	CHECK(check_now() - t0 < 2.0);
	CHECK_RC(mearas_link_connect("no-such-host.invalid", 7000, &cfg, &lnk), MEARAS_LINK_E_CONNECT);
}

/* ---- admission ---- */

static void t_wrong_key_refused(void)
{
	serve();
	CHECK_RC(connect_local(srv.port, WRONG_KEY, &lnk), MEARAS_LINK_E_AUTH);
	CHECK(lnk == NULL);
	/* encrypted (the default): the TLS handshake refuses it, both ends say why */
	CHECK(log_wait("127.0.0.1", "refused: wrong cluster key (its TLS PSK binder does not verify)", 2.0));
	CHECK(log_has("127.0.0.1", "refused: the peer holds another cluster key"));
	/* The server keeps admitting good links after refusals. */
	link_and_echo(srv.port, "after refusals");
	CHECK(srv.st.opened == 1);
}

/* a node without a key does not even try */
static void t_no_key_not_tried(void)
{
	serve();
	CHECK_RC(connect_local(srv.port, NULL, &lnk), MEARAS_LINK_E_AUTH);
	CHECK(log_has("127.0.0.1", "not tried: this node has no cluster key"));
	CHECK(srv.st.opened == 0);
}

/* A server without a key refuses everyone. */
static void t_server_without_key_refuses(void)
{
	REQUIRE_RC(local_start_enc(&srv, NULL, MEARAS_LINK_ENCRYPTION_TLS), MEARAS_LINK_OK);
	CHECK_RC(connect_local(srv.port, KEY, &lnk), MEARAS_LINK_E_AUTH);
	CHECK(log_has("127.0.0.1", "no cluster key"));
	CHECK(srv.st.opened == 0);
}

static void t_version_mismatch(void)
{
	serve();
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	cfg.version_major = MEARAS_LINK_VERSION_MAJOR + 1;
	CHECK_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_E_VERSION);
	char theirs[64], ours[64];
	snprintf(theirs, sizeof(theirs), "protocol version %d.0, this node runs %d.%d", MEARAS_LINK_VERSION_MAJOR + 1,
		 MEARAS_LINK_VERSION_MAJOR, MEARAS_LINK_VERSION_MINOR);
	snprintf(ours, sizeof(ours), "peer runs protocol %d.%d", MEARAS_LINK_VERSION_MAJOR, MEARAS_LINK_VERSION_MINOR);
	CHECK(log_has("127.0.0.1", theirs));
	CHECK(log_has(ours, NULL));
	CHECK(srv.st.opened == 0);
}

static void t_garbage_peer(void)
{
	serve();
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(srv.port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	uint8_t junk[200];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	junk[0] = 100; /* a length prefix that fits, followed by non-protobuf bytes */
	junk[1] = junk[2] = junk[3] = 0;
	CHECK(send(fd, junk, sizeof(junk), MSG_NOSIGNAL) == (ssize_t)sizeof(junk));
	char c;
	CHECK(recv(fd, &c, 1, 0) >= 0); /* refusal or close, never a hang */
	close(fd);
	link_and_echo(srv.port, "after junk");
	CHECK(log_has("127.0.0.1", "refused"));
	CHECK(srv.st.opened == 1);
}

/* The client's effective configuration with the cluster key. */
static void effective_cfg(struct mearas_link_config *cfg)
{
	struct mearas_link_config in;
	base_cfg(&in, KEY);
	link_config_effective(&in, cfg);
}

/* A link to srv made by hand (the client's handshake, then the link's records: encrypted by
 * default, so what the test sends goes inside it), for frames the library
 * would never send. *fd, *t for hand_link_close; the first failing status. */
static int hand_link(const struct mearas_link_config *cfg, int *fd, struct link_transport **t)
{
	SSL *ssl = NULL;
	*fd = -1;
	*t = NULL;
	int rc = link_tcp_connect("127.0.0.1", srv.port, 2000, fd);
	if (!rc)
		rc = link_handshake_client(*fd, cfg, "test", &ssl, NULL);
	if (!rc && !ssl)
		rc = MEARAS_LINK_E_ENCRYPTION;
	if (!rc)
		rc = link_sealed_transport_create(*fd, ssl, false, cfg, "test", t);
	return rc;
}

static void hand_link_close(int fd, struct link_transport *t)
{
	if (t)
		t->ops->destroy(t);
	else if (fd >= 0)
		close(fd);
}

/* An authenticated peer that then sends malformed frames: the server closes
 * that link with E_PROTO (closed callback fires) and keeps serving others. */
static void malformed_after_auth(const uint8_t *frame, size_t len, int nth)
{
	struct mearas_link_config cfg;
	struct link_transport *t;
	int fd;
	effective_cfg(&cfg);
	CHECK_RC(hand_link(&cfg, &fd, &t), MEARAS_LINK_OK);
	if (t)
		CHECK_RC(t->ops->send_iov(t, &(struct iovec){ (void *)frame, len }, 1), MEARAS_LINK_OK);
	CHECK(ts_wait_closed(&srv.st, nth, 2.0));
	CHECK_RC(srv.st.last_close_status, MEARAS_LINK_E_PROTO);
	hand_link_close(fd, t);
}

static void t_malformed_frames_after_auth(void)
{
	serve();
	uint8_t f[64];
	struct link_frame_hdr h = { .type = LINK_FRAME_BATCH, .count = 1, .body_len = 8 };
	memset(f, 0, sizeof(f));
	wire_encode_frame(f, &h);
	f[0] ^= 0xff; /* bad magic */
	malformed_after_auth(f, LINK_FRAME_HDR, 1);
	h.type = 99; /* unknown frame type */
	wire_encode_frame(f, &h);
	malformed_after_auth(f, LINK_FRAME_HDR, 2);
	h = (struct link_frame_hdr){ .type = LINK_FRAME_BATCH, .count = 1, .body_len = 0xffffffffu };
	wire_encode_frame(f, &h); /* body larger than allowed */
	malformed_after_auth(f, LINK_FRAME_HDR, 3);
	h = (struct link_frame_hdr){ .type = LINK_FRAME_BATCH, .count = 2, .body_len = 24 };
	wire_encode_frame(f, &h); /* inner message claims more bytes than the body holds */
	wire_encode_msg(f + LINK_FRAME_HDR, 1, 1000, 0);
	malformed_after_auth(f, LINK_FRAME_HDR + 24, 4);
	h = (struct link_frame_hdr){ .type = LINK_FRAME_CHUNK, .count = 1, .body_len = 8 };
	wire_encode_frame(f, &h); /* chunk shorter than its header */
	malformed_after_auth(f, LINK_FRAME_HDR + 8, 5);
	CHECK(srv.st.msgs == 0 && srv.st.chunks == 0);
	link_and_echo(srv.port, "still serving");
}

/* The server's stop closes its links at once (not after the 3 s heartbeat
 * bound: the bound below is that liveness deadline's, with room to spare). */
static void t_server_stop_closes_links(void)
{
	serve();
	link_up();
	CHECK_RC(echo_call(lnk, "x"), MEARAS_LINK_OK);
	server_stop();
	CHECK(srv.st.closed == 1 && srv.st.last_close_status == MEARAS_LINK_E_CLOSED);
	double t0 = check_now();
	CHECK_RC(mearas_link_call(lnk, "H", 1, NULL, 0, NULL, 0), MEARAS_LINK_E_BROKEN);
	CHECK(check_now() - t0 < 2.0);
}

/* callbacks so far, under a lock (first member of what the callbacks fill) */
struct callbacks_seen {
	pthread_mutex_t lock;
	int n;
};

static int seen_count(void *arg)
{
	struct callbacks_seen *c = arg;
	pthread_mutex_lock(&c->lock);
	int n = c->n;
	pthread_mutex_unlock(&c->lock);
	return n;
}

struct async_log {
	struct callbacks_seen seen;
	int status[8];
	size_t len[8];
	int order[8];
};

struct async_call {
	struct async_log *log;
	int index;
	char rep[16];
};

static void async_done(void *ctx, int status, size_t len)
{
	struct async_call *c = ctx;
	pthread_mutex_lock(&c->log->seen.lock);
	c->log->order[c->log->seen.n++] = c->index;
	c->log->status[c->index] = status;
	c->log->len[c->index] = len;
	pthread_mutex_unlock(&c->log->seen.lock);
}

static int async_count(struct async_log *g)
{
	return seen_count(&g->seen);
}

/* until count(arg) reaches n or 5 s (a liveness bound: replies come in ms) */
static void wait_count(int (*count)(void *), void *arg, int n)
{
	for (double t0 = check_now(); count(arg) < n && check_now() - t0 < 5.0;)
		usleep(1000);
}

/* Asynchronous calls: replies land in order; one never answered fails when the link breaks. */
static void t_call_async(void)
{
	struct async_log g = { .seen.lock = PTHREAD_MUTEX_INITIALIZER };
	struct async_call c[4];
	serve();
	link_up();
	for (int i = 0; i < 3; i++) {
		char req[8];
		int n = snprintf(req, sizeof(req), "Ea%d", i);
		c[i] = (struct async_call){ .log = &g, .index = i };
		CHECK_RC(mearas_link_call_async(lnk, req, (size_t)n, c[i].rep, sizeof(c[i].rep), async_done, &c[i]),
			 MEARAS_LINK_OK);
	}
	c[3] = (struct async_call){ .log = &g, .index = 3 };
	CHECK_RC(mearas_link_call_async(lnk, "H", 1, c[3].rep, sizeof(c[3].rep), async_done, &c[3]), MEARAS_LINK_OK);
	CHECK_RC(mearas_link_call_async(lnk, "E", 1, NULL, 0, NULL, NULL), MEARAS_LINK_E_INVAL);
	wait_count(seen_count, &g.seen, 3);
	CHECK(async_count(&g) == 3);
	for (int i = 0; i < 3; i++) {
		CHECK(g.order[i] == i && g.status[i] == MEARAS_LINK_OK && g.len[i] == 3);
		CHECK(c[i].rep[0] == 'E' && c[i].rep[1] == 'a' && c[i].rep[2] == '0' + i);
	}
	server_stop();
	wait_count(seen_count, &g.seen, 4);
	CHECK(async_count(&g) == 4 && g.order[3] == 3 && g.status[3] == MEARAS_LINK_E_BROKEN);
	link_close();
	CHECK(async_count(&g) == 4);
}

struct stream_seen {
	struct callbacks_seen seen;
	int status;
	size_t len, left_after;
	char head[4];
};

/* reads 2 bytes of the reply, leaves the rest to be skipped */
static void stream_done(void *ctx, int status, size_t len, struct mearas_link_reader *r)
{
	struct stream_seen *s = ctx;
	char head[4] = { 0 };
	int rc = r ? mearas_link_read(r, head, 2) : status;
	if (r)
		CHECK_RC(mearas_link_read(r, head, len + 1), MEARAS_LINK_E_INVAL); /* past the end */
	pthread_mutex_lock(&s->seen.lock);
	s->seen.n++;
	s->status = rc;
	s->len = len;
	s->left_after = r ? mearas_link_read_left(r) : 0;
	memcpy(s->head, head, sizeof(head));
	pthread_mutex_unlock(&s->seen.lock);
}

static int stream_calls(struct stream_seen *s)
{
	return seen_count(&s->seen);
}

/* Streamed replies: read in place, the unread rest skipped without breaking the framing. */
static void t_call_stream(void)
{
	struct stream_seen s = { .seen.lock = PTHREAD_MUTEX_INITIALIZER };
	serve();
	link_up();
	CHECK_RC(mearas_link_call_stream(lnk, "Exyz-long-tail", 14, stream_done, &s), MEARAS_LINK_OK);
	wait_count(seen_count, &s.seen, 1);
	CHECK(stream_calls(&s) == 1 && s.status == MEARAS_LINK_OK && s.len == 14 && s.left_after == 12);
	CHECK(s.head[0] == 'E' && s.head[1] == 'x');
	CHECK_RC(echo_call(lnk, "after"), MEARAS_LINK_OK);
	CHECK_RC(mearas_link_call_stream(lnk, "H", 1, stream_done, &s), MEARAS_LINK_OK);
	server_stop();
	wait_count(seen_count, &s.seen, 2);
	CHECK(stream_calls(&s) == 2 && s.status == MEARAS_LINK_E_BROKEN);
}

/* Receive threads that spin after data (rx_spin_us) still answer and still notice a dead peer. */
static void t_rx_spin(void)
{
	struct mearas_link_config cfg;
	serve();
	base_cfg(&cfg, KEY);
	cfg.rx_spin_us = 200;
	REQUIRE_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
	for (int i = 0; i < 200; i++)
		CHECK_RC(echo_call(lnk, "spin"), MEARAS_LINK_OK);
	server_stop();
	CHECK_RC(mearas_link_call(lnk, "H", 1, NULL, 0, NULL, 0), MEARAS_LINK_E_BROKEN);
}

/* ---- the receive threads' idle hooks (on_idle, rx_idle) and tx_clear ---- */

/* A server that answers each call from its receive thread's on_idle, and
 * whose receive thread sleeps a second in a 'Z' message (reads nothing). */
static struct {
	pthread_mutex_t lock;
	uint64_t seq; /* the call to answer; 0: none */
	char msg[64];
	size_t len;
	int from_idle, waits; /* calls answered from on_idle; on_idle(false) calls */
} isrv = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void isrv_message(void *ctx, struct mearas_link_conn *c, uint64_t seq, bool wants_reply, const void *data,
			 size_t len)
{
	(void)ctx, (void)c;
	if (len && ((const char *)data)[0] == 'Z')
		usleep(1000000);
	if (!wants_reply)
		return;
	pthread_mutex_lock(&isrv.lock);
	isrv.seq = seq;
	isrv.len = len < sizeof(isrv.msg) ? len : sizeof(isrv.msg);
	memcpy(isrv.msg, data, isrv.len);
	pthread_mutex_unlock(&isrv.lock);
}

static void isrv_idle(void *ctx, struct mearas_link_conn *c, bool spinning)
{
	(void)ctx;
	pthread_mutex_lock(&isrv.lock);
	if (!spinning) {
		isrv.waits++;
	} else if (isrv.seq && mearas_link_conn_tx_clear(c)) {
		mearas_link_reply(c, isrv.seq, isrv.msg, isrv.len);
		isrv.seq = 0;
		isrv.from_idle++;
	}
	pthread_mutex_unlock(&isrv.lock);
}

static void isrv_closed(void *ctx, struct mearas_link_conn *c, int status)
{
	(void)ctx, (void)c, (void)status;
}

static void isrv_start(uint32_t rx_spin_us)
{
	struct mearas_link_config cfg;
	struct mearas_link_server_ops ops = { .on_message = isrv_message, .on_idle = isrv_idle,
					      .on_closed = isrv_closed };

	pthread_mutex_lock(&isrv.lock);
	isrv.seq = 0;
	isrv.from_idle = isrv.waits = 0;
	pthread_mutex_unlock(&isrv.lock);
	base_cfg(&cfg, KEY);
	cfg.rx_spin_us = rx_spin_us;
	server_stop();
	REQUIRE_RC(mearas_link_server_start("127.0.0.1", 0, &cfg, &ops, &srv.srv), MEARAS_LINK_OK);
	srv.port = mearas_link_server_port(srv.srv);
}

static int isrv_get(int *field)
{
	pthread_mutex_lock(&isrv.lock);
	int v = *field;
	pthread_mutex_unlock(&isrv.lock);
	return v;
}

/* A server's receive thread that spins calls on_idle between receives,
 * which may reply from there; and on_idle(false) once it waits again. */
static void t_server_on_idle_replies(void)
{
	isrv_start(200);
	link_up();
	for (int i = 0; i < 100; i++)
		CHECK_RC(echo_call(lnk, "from idle"), MEARAS_LINK_OK);
	CHECK(isrv_get(&isrv.from_idle) == 100);
	usleep(300000);
	CHECK(isrv_get(&isrv.waits) > 0);
}

/* Without rx_spin_us the receive thread does not spin: no on_idle(true),
 * only on_idle(false) before each wait (the call is never answered). */
static void t_server_on_idle_needs_spin(void)
{
	isrv_start(0);
	link_up();
	CHECK_RC(mearas_link_call(lnk, "Eno", 3, NULL, 0, NULL, 300), MEARAS_LINK_E_TIMEOUT);
	CHECK(isrv_get(&isrv.from_idle) == 0 && isrv_get(&isrv.waits) > 0);
}

static struct {
	pthread_mutex_t lock;
	int spins, waits;
} crx = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void client_idle(void *ctx, bool spinning)
{
	(void)ctx;
	pthread_mutex_lock(&crx.lock);
	if (spinning)
		crx.spins++;
	else
		crx.waits++;
	pthread_mutex_unlock(&crx.lock);
}

/* The client's rx_idle: called while its receive thread spins after a reply,
 * and before it waits again. */
static void t_client_rx_idle(void)
{
	struct mearas_link_config cfg;
	int spins, waits;

	serve();
	base_cfg(&cfg, KEY);
	cfg.rx_spin_us = 200;
	cfg.rx_idle = client_idle;
	REQUIRE_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
	for (int i = 0; i < 20; i++)
		CHECK_RC(echo_call(lnk, "rx idle"), MEARAS_LINK_OK);
	usleep(300000);
	pthread_mutex_lock(&crx.lock);
	spins = crx.spins;
	waits = crx.waits;
	pthread_mutex_unlock(&crx.lock);
	CHECK(spins > 0 && waits > 0);
}

static void *post_lots(void *arg)
{
	static uint8_t chunk[60000];
	struct mearas_link *l = arg;
	int rc = 0;

	for (int i = 0; i < 600 && !rc; i++) /* about 34 MiB */
		rc = mearas_link_post(l, chunk, sizeof(chunk));
	if (!rc)
		rc = mearas_link_flush(l);
	return (void *)(intptr_t)rc;
}

/* tx_clear: true on a quiet link; false while the peer reads nothing and
 * what was sent fills the way; true again once the peer has read it all. */
static void t_tx_clear(void)
{
	pthread_t t;
	void *ret = NULL;
	bool full = false, clear = false;

	isrv_start(0);
	link_up();
	CHECK(mearas_link_tx_clear(lnk));
	CHECK_RC(mearas_link_post(lnk, "Z", 1), MEARAS_LINK_OK);
	CHECK_RC(mearas_link_flush(lnk), MEARAS_LINK_OK);
	REQUIRE(pthread_create(&t, NULL, post_lots, lnk) == 0);
	for (int i = 0; i < 80 && !full; i++) {
		usleep(10000);
		full = !mearas_link_tx_clear(lnk);
	}
	pthread_join(t, &ret);
	CHECK_RC((int)(intptr_t)ret, MEARAS_LINK_OK);
	for (int i = 0; i < 300 && !clear; i++) {
		clear = mearas_link_tx_clear(lnk);
		if (!clear)
			usleep(10000);
	}
	CHECK(full && clear);
}

/* A TCP transport over a loopback connection whose other end (*peer) reads
 * nothing unless told; peer_rcvbuf bounds what it takes in. */
static struct link_transport *tcp_pair(int *peer, int peer_rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct mearas_link_config cfg;
	struct link_transport *t = NULL;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c = -1, big = 4 << 20;

	base_cfg(&cfg, NULL);
	*peer = -1;
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_RCVBUF, &peer_rcvbuf, sizeof(peer_rcvbuf)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &alen))
		goto out;
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)) ||
	    connect(c, (struct sockaddr *)&a, sizeof(a)))
		goto out;
	*peer = accept(l, NULL, NULL);
	/* a test that fails must not hang in the peer's reads */
	struct timeval tv = { .tv_sec = 10 };
	if (*peer >= 0 && !setsockopt(*peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) &&
	    link_tcp_transport_create(c, &cfg, &t) == MEARAS_LINK_OK)
		c = -1; /* the transport's now */
out:
	if (c >= 0)
		close(c);
	if (l >= 0)
		close(l);
	return t;
}

/* the readings of the send queue t has taken so far */
static uint64_t looks_of(struct link_transport *t)
{
	return __atomic_load_n(&((struct link_tcp_transport *)t)->looks, __ATOMIC_RELAXED);
}

/* tx_clear answers from its last reading of an empty send queue until
 * something is written: no system call per question then. */
static void t_tx_clear_reading_kept(void)
{
	int peer;
	struct link_transport *t = tcp_pair(&peer, 1 << 20);

	REQUIRE(t && peer >= 0);
	CHECK(t->ops->tx_clear(t));
	uint64_t looks = looks_of(t);
	for (int i = 0; i < 10; i++)
		CHECK(t->ops->tx_clear(t));
	CHECK(looks_of(t) == looks);
	CHECK_RC(t->ops->send_iov(t, &(struct iovec){ "x", 1 }, 1), MEARAS_LINK_OK);
	(void)t->ops->tx_clear(t);
	CHECK(looks_of(t) == looks + 1);
	t->ops->destroy(t);
	close(peer);
}

/* A reading taken while a write is under way (begun, its bytes maybe not
 * queued yet) answers that question only: it is not kept, since the write
 * may still fill the queue. */
static void t_tx_clear_write_under_way(void)
{
	int peer;
	struct link_transport *t = tcp_pair(&peer, 1 << 20);
	struct link_tcp_transport *tt = (struct link_tcp_transport *)t;

	REQUIRE(t && peer >= 0);
	uint64_t looks = looks_of(t);
	__atomic_add_fetch(&tt->begun, 1, __ATOMIC_SEQ_CST); /* as link_tcp_write does first */
	CHECK(t->ops->tx_clear(t) && t->ops->tx_clear(t));
	CHECK(looks_of(t) == looks + 2); /* each one read again */
	__atomic_add_fetch(&tt->ended, 1, __ATOMIC_RELEASE); /* the write ends */
	CHECK(t->ops->tx_clear(t) && t->ops->tx_clear(t));
	CHECK(looks_of(t) == looks + 3); /* now kept */
	t->ops->destroy(t);
	close(peer);
}

/* More than the window of a peer of tcp_pair(..., 4096) that reads nothing:
 * the sender's queue stays full. */
static uint8_t window_fill[64 << 10];

static int fill_window(struct link_transport *t)
{
	return t->ops->send_iov(t, &(struct iovec){ window_fill, sizeof(window_fill) }, 1);
}

/* the peer takes all of fill_window's bytes */
static void peer_drains(int peer)
{
	uint8_t buf[16 << 10];

	for (size_t got = 0; got < sizeof(window_fill);) {
		ssize_t n = recv(peer, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
}

/* A write after a reading of an empty queue is not answered from that
 * reading: with the peer's window full, tx_clear is false at once. */
static void t_tx_clear_after_write(void)
{
	int peer;
	struct link_transport *t = tcp_pair(&peer, 4096);
	bool clear = false;

	REQUIRE(t && peer >= 0);
	CHECK(t->ops->tx_clear(t));
	CHECK_RC(fill_window(t), MEARAS_LINK_OK);
	CHECK(!t->ops->tx_clear(t));
	peer_drains(peer); /* clear again */
	for (int i = 0; i < 300 && !clear; i++) {
		clear = t->ops->tx_clear(t);
		if (!clear)
			usleep(10000);
	}
	CHECK(clear);
	t->ops->destroy(t);
	close(peer);
}

/* A spinning reader's empty receive reads the send queue once after a
 * receive, not on every empty receive and not after a write; a receive that
 * brings the peer's acknowledgement leaves tx_clear answered without
 * another reading. */
static void t_tx_clear_look_ahead(void)
{
	int peer;
	struct link_transport *t = tcp_pair(&peer, 4096);
	uint8_t buf[16];

	REQUIRE(t && peer >= 0);
	uint64_t looks = looks_of(t);
	CHECK_RC(t->ops->recv(t, buf, sizeof(buf), 0), 0);
	CHECK(looks_of(t) == looks); /* nothing happened yet */
	/* more than the peer's window: the queue stays full */
	CHECK_RC(fill_window(t), MEARAS_LINK_OK);
	for (int i = 0; i < 5; i++)
		CHECK_RC(t->ops->recv(t, buf, sizeof(buf), 0), 0);
	CHECK(looks_of(t) == looks); /* a write alone: no look */
	CHECK(!t->ops->tx_clear(t));
	looks++;
	/* the peer takes it all and answers (its answer acknowledges it) */
	peer_drains(peer);
	CHECK(send(peer, "y", 1, 0) == 1);
	for (int i = 0; i < 1000 && t->ops->recv(t, buf, sizeof(buf), 0) == 0; i++)
		usleep(1000);
	CHECK_RC(t->ops->recv(t, buf, sizeof(buf), 0), 0);
	CHECK(looks_of(t) == looks + 1);
	for (int i = 0; i < 5; i++)
		CHECK_RC(t->ops->recv(t, buf, sizeof(buf), 0), 0);
	CHECK(t->ops->tx_clear(t));
	CHECK(looks_of(t) == looks + 1);
	t->ops->destroy(t);
	close(peer);
}

/* ---- link encryption ---- */

/* A bulk transfer of the tests' pattern, then the server's count of it. */
static int bulk_and_sync(struct mearas_link *l, uint64_t tag, size_t len)
{
	uint8_t *data = malloc(len);
	if (!data)
		return MEARAS_LINK_E_NOMEM;
	for (size_t i = 0; i < len; i++)
		data[i] = ts_pattern(tag, i);
	int rc = mearas_link_bulk(l, tag, data, len);
	uint64_t got = 0;
	if (!rc)
		rc = mearas_link_call(l, "S", 1, &got, sizeof(got), NULL, 10000);
	free(data);
	return rc ? rc : got >= len ? MEARAS_LINK_OK : MEARAS_LINK_E_PROTO;
}

/* Encrypted by default: calls and bulk data arrive intact; both ends log the
 * TLS handshake and the link's records. */
static void t_encrypted_calls_and_bulk(void)
{
	serve();
	srv.st.check_pattern = true;
	link_up();
	CHECK(log_wait("link from 127.0.0.1",
		       "encrypted: TLSv1.3 TLS_AES_128_GCM_SHA256 handshake, AES-256-GCM link records", 2.0));
	CHECK(log_has("link to 127.0.0.1", "encrypted: TLSv1.3 TLS_AES_128_GCM_SHA256 handshake, AES-256-GCM link records"));
	for (int i = 0; i < 100; i++)
		CHECK_RC(echo_call(lnk, "through TLS"), MEARAS_LINK_OK);
	CHECK_RC(bulk_and_sync(lnk, 7, (24u << 20) + 12345), MEARAS_LINK_OK);
	CHECK(srv.st.chunk_errors == 0);
	/* a reply larger than a TLS record, in pieces */
	static uint8_t rep[300000];
	uint8_t req[5] = { 'B' };
	uint32_t want = sizeof(rep);
	size_t rl = 0;
	memcpy(req + 1, &want, 4);
	CHECK_RC(mearas_link_call(lnk, req, 5, rep, sizeof(rep), &rl, 5000), MEARAS_LINK_OK);
	CHECK(rl == sizeof(rep));
	link_close();
	CHECK(ts_wait_closed(&srv.st, 1, 2.0) && srv.st.last_close_status == MEARAS_LINK_OK);
}

/* Synchronous calls, a record each way, cross the point where each direction
 * moves to its next key (records.h) twice: every one arrives intact. */
static void t_records_next_key(void)
{
	serve();
	link_up();
	for (unsigned i = 0; i < 2 * LINK_REC_REKEY + 100; i++)
		if (echo_call(lnk, "past the rekey") != MEARAS_LINK_OK) {
			CHECK(!"a call failed");
			break;
		}
	CHECK(mearas_link_health(lnk) == MEARAS_LINK_OK);
	link_close();
	CHECK(ts_wait_closed(&srv.st, 1, 2.0) && srv.st.last_close_status == MEARAS_LINK_OK);
}

/* Both ends off: the link works in clear text, and both ends say so loudly. */
static void t_encryption_off_both_ends(void)
{
	serve_enc(MEARAS_LINK_ENCRYPTION_OFF);
	CHECK(log_has("LINK ENCRYPTION IS OFF", "clear text"));
	srv.st.check_pattern = true;
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	cfg.encryption = MEARAS_LINK_ENCRYPTION_OFF;
	CHECK_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
	if (lnk) {
		CHECK(log_wait("link from 127.0.0.1", "UNENCRYPTED (link encryption off", 2.0));
		CHECK(log_has("link to 127.0.0.1", "UNENCRYPTED (link encryption off"));
		CHECK_RC(echo_call(lnk, "in clear text"), MEARAS_LINK_OK);
		CHECK_RC(bulk_and_sync(lnk, 9, 5u << 20), MEARAS_LINK_OK);
		CHECK(srv.st.chunk_errors == 0);
		link_close();
	}
	/* the key still admits nodes */
	log_clear();
	base_cfg(&cfg, WRONG_KEY);
	cfg.encryption = MEARAS_LINK_ENCRYPTION_OFF;
	CHECK_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_E_AUTH);
	CHECK(log_wait("127.0.0.1", "refused: wrong cluster key", 2.0));
	CHECK(srv.st.opened == 1);
}

/* The client's encryption is off, the server's on: refused on both ends with the reason. */
static void t_encryption_off_on_client_only(void)
{
	struct mearas_link_config cfg;
	serve();
	base_cfg(&cfg, KEY);
	cfg.encryption = MEARAS_LINK_ENCRYPTION_OFF;
	CHECK_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_E_ENCRYPTION);
	CHECK(log_wait("link from 127.0.0.1", "refused: link encryption is off on the peer, on (TLS 1.3) on this node", 2.0));
	CHECK(log_has("link to 127.0.0.1", "refused: link encryption is off on this node, on (TLS 1.3) on the peer"));
	CHECK(srv.st.opened == 0);
	link_and_echo(srv.port, "matching"); /* a matching node still links */
}

/* The server's encryption is off, the client's on: the same. */
static void t_encryption_off_on_server_only(void)
{
	serve_enc(MEARAS_LINK_ENCRYPTION_OFF);
	CHECK_RC(connect_local(srv.port, KEY, &lnk), MEARAS_LINK_E_ENCRYPTION);
	CHECK(log_wait("link from 127.0.0.1", "refused: link encryption is on (TLS 1.3) on the peer, off on this node", 2.0));
	CHECK(log_has("link to 127.0.0.1", "refused: link encryption is on (TLS 1.3) on this node, off on the peer"));
	CHECK(srv.st.opened == 0);
}

/* the link protocol version of this build, as a hello or challenge carries it */
static Mearas__Version this_version(void)
{
	Mearas__Version v = MEARAS__VERSION__INIT;
	v.major = MEARAS_LINK_VERSION_MAJOR;
	v.minor = MEARAS_LINK_VERSION_MINOR;
	return v;
}

/* A server that does not hold the key answers the hello properly, then runs
 * TLS with a certificate of its own (ignoring the PSK the client offers): the
 * client refuses it in the TLS handshake and says why. */
struct cert_server {
	int lfd;
	uint16_t port;
	int accept_rc;
};

static SSL_CTX *self_signed_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	EVP_PKEY *pk = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	if (!ctx || !pk || !x)
		return NULL;
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, pk);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC, (const unsigned char *)"mitm", -1,
				   -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	X509_sign(x, pk, EVP_sha256());
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_use_certificate(ctx, x);
	SSL_CTX_use_PrivateKey(ctx, pk);
	X509_free(x);
	EVP_PKEY_free(pk);
	return ctx;
}

static void *cert_server_main(void *arg)
{
	struct cert_server *cs = arg;
	int c = accept(cs->lfd, NULL, NULL);
	uint8_t buf[4096], nonce[32] = { 1 };
	size_t n = 0;
	cs->accept_rc = -1;
	if (c < 0 || link_recv_blob(c, buf, sizeof(buf), &n, 3000)) {
		if (c >= 0)
			close(c);
		return NULL;
	}
	Mearas__Version ver = this_version();
	Mearas__LinkChallenge ch = MEARAS__LINK_CHALLENGE__INIT;
	ch.version = &ver;
	ch.server_nonce.data = nonce;
	ch.server_nonce.len = sizeof(nonce);
	ch.encryption = MEARAS__LINK_ENCRYPTION__LINK_ENCRYPTION_TLS13;
	n = mearas__link_challenge__pack(&ch, buf);
	SSL_CTX *ctx = self_signed_ctx();
	SSL *ssl = ctx ? SSL_new(ctx) : NULL;
	if (ssl && link_send_blob(c, buf, n) == MEARAS_LINK_OK && SSL_set_fd(ssl, c))
		cs->accept_rc = SSL_accept(ssl);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(c);
	return NULL;
}

static void t_tls_server_without_key_refused(void)
{
	struct cert_server cs = { .lfd = socket(AF_INET, SOCK_STREAM, 0) };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(a);
	CHECK(bind(cs.lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(cs.lfd, 1) == 0 &&
	      getsockname(cs.lfd, (struct sockaddr *)&a, &sl) == 0);
	pthread_t th;
	pthread_create(&th, NULL, cert_server_main, &cs);
	CHECK_RC(connect_local(ntohs(a.sin_port), KEY, &lnk), MEARAS_LINK_E_AUTH);
	CHECK(lnk == NULL);
	CHECK(log_has("link to 127.0.0.1", "refused: TLS handshake failed (certificate verify failed)"));
	pthread_join(th, NULL);
	CHECK(cs.accept_rc != 1);
	close(cs.lfd);
}

/* A peer that sends a proper hello, then hostile bytes where the TLS
 * ClientHello belongs: refused with a log line, nothing allocated beyond
 * TLS's bounded buffers, the server keeps admitting links. */
static void t_tls_handshake_garbage(void)
{
	serve();
	static const uint8_t junk_a[] = { 0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0x00, 0xff, 0xfb }; /* oversized record */
	uint8_t junk_b[300];
	for (size_t i = 0; i < sizeof(junk_b); i++)
		junk_b[i] = (uint8_t)(i * 91 + 5);
	const struct { const uint8_t *p; size_t n; } junk[] = { { junk_a, sizeof(junk_a) }, { junk_b, sizeof(junk_b) } };
	for (size_t k = 0; k < 2; k++) {
		int fd = -1;
		CHECK_RC(link_tcp_connect("127.0.0.1", srv.port, 2000, &fd), MEARAS_LINK_OK);
		if (fd < 0)
			break;
		uint8_t nonce[32] = { 9 }, buf[4096];
		Mearas__Version ver = this_version();
		Mearas__LinkHello h = MEARAS__LINK_HELLO__INIT;
		h.version = &ver;
		h.client_nonce = (ProtobufCBinaryData){ .len = sizeof(nonce), .data = nonce };
		h.encryption = MEARAS__LINK_ENCRYPTION__LINK_ENCRYPTION_TLS13;
		size_t n = mearas__link_hello__pack(&h, buf);
		CHECK_RC(link_send_blob(fd, buf, n), MEARAS_LINK_OK);
		CHECK_RC(link_recv_blob(fd, buf, sizeof(buf), &n, 2000), MEARAS_LINK_OK);
		CHECK(send(fd, junk[k].p, junk[k].n, MSG_NOSIGNAL) == (ssize_t)junk[k].n);
		struct timeval tv = { .tv_sec = 3 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while (recv(fd, buf, sizeof(buf), 0) > 0) /* an alert, then the close: never a hang */
			;
		close(fd);
	}
	CHECK(log_wait("link from 127.0.0.1", "refused: TLS handshake failed", 2.0));
	CHECK(srv.st.opened == 0);
	link_and_echo(srv.port, "after TLS garbage");
}

/* A process that does not ignore SIGPIPE survives a write on an encrypted
 * link whose socket can no longer send (OpenSSL writes with write(), which
 * raises SIGPIPE there: a peer that resets the connection could kill it). */
static void t_tls_write_no_sigpipe(void)
{
	serve();
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		struct mearas_link_config cfg;
		struct link_transport *t;
		int fd;
		effective_cfg(&cfg);
		if (hand_link(&cfg, &fd, &t))
			_exit(3);
		shutdown(fd, SHUT_WR); /* as after a reset: the next write() fails with EPIPE */
		uint8_t msg[100] = { 0 };
		int rc = t->ops->send_iov(t, &(struct iovec){ msg, sizeof(msg) }, 1);
		_exit(rc == MEARAS_LINK_E_BROKEN ? 0 : 4);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		printf("  the process died of signal %d\n", WTERMSIG(st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* An on-path proxy alters an authenticated link's stream once: the receiver
 * drops the link with a log line and hands no altered byte to its caller;
 * the server goes on admitting links. */
static void tamper_case(enum tamper_mode mode, const uint8_t *inject, size_t inject_len)
{
	struct tamper_proxy p;
	serve();
	REQUIRE(tamper_start(&p, srv.port, mode) == 0);
	if (inject_len)
		memcpy(p.inject, inject, inject_len);
	p.inject_len = inject_len;
	CHECK_RC(connect_local(p.port, KEY, &lnk), MEARAS_LINK_OK);
	if (!lnk)
		goto out;
	CHECK_RC(echo_call(lnk, "before"), MEARAS_LINK_OK);
	uint64_t before = server_msgs(&srv);
	tamper_arm(&p);
	if (mode == TAMPER_INJECT) {
		CHECK(tamper_wait_done(&p, 2.0));
		CHECK(ts_wait_closed(&srv.st, 1, 2.0));
		CHECK_RC(srv.st.last_close_status, MEARAS_LINK_E_PROTO);
		CHECK(server_msgs(&srv) == before); /* the forged message was not delivered */
		CHECK(log_has("link with 127.0.0.1", "refused data from the peer"));
	} else if (mode == TAMPER_REPLAY_TO_SERVER) {
		char req[] = "Eonce, then again", rep[64];
		size_t got = 0;
		(void)mearas_link_call(lnk, req, sizeof(req), rep, sizeof(rep), &got, 3000); /* answered or not */
		CHECK(tamper_wait_done(&p, 1.0));
		CHECK(ts_wait_closed(&srv.st, 1, 2.0));
		CHECK_RC(srv.st.last_close_status, MEARAS_LINK_E_PROTO);
		CHECK(server_msgs(&srv) == before + 1); /* the first copy only */
		CHECK(log_has("link with 127.0.0.1", "a record that does not authenticate"));
	} else {
		char req[] = "Eechoed back unchanged", rep[64];
		size_t got = 0;
		int rc = mearas_link_call(lnk, req, sizeof(req), rep, sizeof(rep), &got, 3000);
		CHECK(tamper_wait_done(&p, 1.0));
		CHECK(rc != MEARAS_LINK_OK); /* never the altered bytes */
		if (mode == TAMPER_FLIP_TO_SERVER) {
			CHECK(ts_wait_closed(&srv.st, 1, 2.0));
			CHECK_RC(srv.st.last_close_status, MEARAS_LINK_E_PROTO);
			CHECK(server_msgs(&srv) == before);
		} else {
			CHECK_RC(rc, MEARAS_LINK_E_PROTO);
		}
		CHECK(log_has("link with 127.0.0.1", "refused data from the peer"));
	}
	CHECK(mearas_link_health(lnk) != MEARAS_LINK_OK || mearas_link_call(lnk, "E", 1, NULL, 0, NULL, 3000) != 0);
	link_close();
	link_and_echo(srv.port, "clean link after tampering");
out:
	tamper_stop(&p);
}

static void t_tamper_flip_byte_to_server(void)
{
	tamper_case(TAMPER_FLIP_TO_SERVER, NULL, 0);
}

static void t_tamper_flip_byte_to_client(void)
{
	tamper_case(TAMPER_FLIP_TO_CLIENT, NULL, 0);
}

/* A forged link message as a clear-text link would carry it (accepted there). */
static void t_tamper_inject_forged_message(void)
{
	uint8_t f[LINK_FRAME_HDR + LINK_MSG_HDR + 7];
	struct link_frame_hdr h = { .type = LINK_FRAME_BATCH, .count = 1, .body_len = LINK_MSG_HDR + 7 };
	wire_encode_frame(f, &h);
	wire_encode_msg(f + LINK_FRAME_HDR, 1000, 7, 0);
	memcpy(f + LINK_FRAME_HDR + LINK_MSG_HDR, "Eforged", 7);
	tamper_case(TAMPER_INJECT, f, sizeof(f));
}

/* A forged record of the link's own format: right shape, no key behind it. */
static void t_tamper_inject_forged_record(void)
{
	uint8_t r[LINK_REC_HDR + 80 + LINK_REC_TAG] = { 0, 0, 0, 80 };
	for (size_t i = LINK_REC_HDR; i < sizeof(r); i++)
		r[i] = (uint8_t)(i * 131 + 7);
	tamper_case(TAMPER_INJECT, r, sizeof(r));
}

/* A record header announcing more than a record may hold: refused at once,
 * not waited for. */
static void t_tamper_inject_oversized_record(void)
{
	uint8_t r[LINK_REC_HDR] = { 0, 1, 0, 1 };
	tamper_case(TAMPER_INJECT, r, sizeof(r));
	CHECK(log_has("link with 127.0.0.1", "a record length out of bounds"));
}

/* What the client sent, sent again on the way: the server takes the first
 * copy, refuses the second (its sequence number is spent) and drops the link. */
static void t_tamper_replay_record(void)
{
	tamper_case(TAMPER_REPLAY_TO_SERVER, NULL, 0);
}

/* ---- forked peers ---- */

/* Forks a process running a server on port; returns its pid once it listens. */
static pid_t fork_server(uint16_t port)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		struct ts_local ls;
		struct mearas_link_config cfg;
		base_cfg(&cfg, KEY);
		cfg.log = NULL;
		char ok = ts_local_start(&ls, "127.0.0.1", port, &cfg) == 0;
		if (write(p[1], &ok, 1) != 1 || !ok)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	char ok = 0;
	if (read(p[0], &ok, 1) != 1 || !ok) {
		close(p[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	close(p[0]);
	return pid;
}

struct delayed_signal {
	pid_t pid;
	int sig;
	double delay_s, sent_at;
};

static void *send_signal_later(void *p)
{
	struct delayed_signal *d = p;
	usleep((useconds_t)(d->delay_s * 1e6));
	d->sent_at = check_now();
	kill(d->pid, d->sig);
	return NULL;
}

/* A pending call fails soon after the server dies (sig SIGKILL) or hangs
 * (SIGSTOP): within max_s of it, not before min_s. */
static void server_fault(int sig, double max_s, double min_s)
{
	uint16_t port = free_port();
	pid_t pid = fork_server(port);
	REQUIRE(pid > 0);
	CHECK_RC(connect_local(port, KEY, &lnk), MEARAS_LINK_OK);
	if (lnk) {
		CHECK_RC(echo_call(lnk, "before"), MEARAS_LINK_OK);
		struct delayed_signal d = { .pid = pid, .sig = sig, .delay_s = 0.3 };
		pthread_t th;
		pthread_create(&th, NULL, send_signal_later, &d);
		CHECK_RC(mearas_link_call(lnk, "H", 1, NULL, 0, NULL, 0), MEARAS_LINK_E_BROKEN);
		double failed_at = check_now();
		pthread_join(th, NULL);
		printf("  pending call failed %.0f ms after the server was %s\n",
		       (failed_at - d.sent_at) * 1e3, sig == SIGKILL ? "killed" : "stopped");
		CHECK(failed_at - d.sent_at <= max_s && failed_at - d.sent_at >= min_s);
		/* a broken link answers at once: no call waits on it (1 s: liveness) */
		double t0 = check_now();
		CHECK_RC(mearas_link_post(lnk, "X", 1), MEARAS_LINK_E_BROKEN);
		CHECK_RC(mearas_link_call(lnk, "E", 1, NULL, 0, NULL, 0), MEARAS_LINK_E_BROKEN);
		CHECK(check_now() - t0 < 1.0);
		link_close();
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A dead server's socket closes: the call fails at once, well within the
 * 3 s heartbeat bound (2 s: a liveness deadline, not a precision). */
static void t_server_killed_pending_call_fails(void)
{
	server_fault(SIGKILL, 2.0, 0.0);
}

static void t_server_hung_heartbeat_timeout(void)
{
	/* Default dead_ms is 3000: the error must come after ~3 s, not before;
	 * the upper bound leaves a loaded machine 3 s of slack */
	server_fault(SIGSTOP, 3.0 + 3.0, 2.0);
}

static void t_server_restart_accepts_new_link(void)
{
	uint16_t port = free_port();
	pid_t pid = fork_server(port);
	CHECK(pid > 0);
	CHECK_RC(connect_local(port, KEY, &lnk), MEARAS_LINK_OK);
	if (lnk)
		CHECK_RC(echo_call(lnk, "first life"), MEARAS_LINK_OK);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (lnk) {
		CHECK_RC(mearas_link_call(lnk, "E", 1, NULL, 0, NULL, 0), MEARAS_LINK_E_BROKEN);
		link_close();
	}
	pid = fork_server(port);
	CHECK(pid > 0);
	link_and_echo(port, "second life");
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* A client process that links, posts, then waits to be killed or stopped. */
static void client_fault(int sig, double max_s)
{
	int p[2], q[2];
	if (pipe(p) || pipe(q))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		close(q[0]);
		uint16_t port = 0;
		if (read(p[0], &port, 2) != 2)
			_exit(1);
		struct mearas_link *l = NULL;
		char ok = connect_local(port, KEY, &l) == 0 && mearas_link_post(l, "X", 1) == 0 &&
			  echo_call(l, "child") == 0;
		if (write(q[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[0]);
	close(q[1]);
	serve();
	CHECK(write(p[1], &srv.port, 2) == 2);
	char ok = 0;
	CHECK(read(q[0], &ok, 1) == 1 && ok);
	double t0 = check_now();
	kill(pid, sig);
	CHECK(ts_wait_closed(&srv.st, 1, max_s + 1.0));
	double dt = srv.st.closed_at - t0;
	printf("  server closed callback %.0f ms after the client was %s (status %s)\n", dt * 1e3,
	       sig == SIGKILL ? "killed" : "stopped", mearas_link_strerror(srv.st.last_close_status));
	CHECK(srv.st.closed == 1 && dt <= max_s);
	CHECK(srv.st.last_close_status == MEARAS_LINK_E_BROKEN);
	CHECK(srv.st.msgs == 2);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[1]);
	close(q[0]);
}

/* the bounds: the closed socket at once, the 3 s heartbeat bound; both with
 * slack for a loaded machine (liveness deadlines, not precisions) */
static void t_client_killed_server_closed_callback(void)
{
	client_fault(SIGKILL, 2.0);
}

static void t_client_hung_server_closed_callback(void)
{
	client_fault(SIGSTOP, 3.0 + 3.0);
}

static void t_verbs_transport_choice(void)
{
	int ndev = 0;
	struct ibv_device **devs = ibv_get_device_list(&ndev);
	if (devs)
		ibv_free_device_list(devs);
	serve();
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	cfg.transport = MEARAS_LINK_TRANSPORT_VERBS;
	/* TLS covers TCP links only: an encrypted verbs link is refused before connecting */
	CHECK_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_E_ENCRYPTION);
	CHECK(log_has("127.0.0.1", "link encryption covers TCP links only"));
	serve_enc(MEARAS_LINK_ENCRYPTION_OFF);
	cfg.encryption = MEARAS_LINK_ENCRYPTION_OFF;
	int rc = mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk);
	if (ndev == 0) {
		printf("  no RDMA device here: verbs link refused with \"%s\"\n", mearas_link_strerror(rc));
		CHECK_RC(rc, MEARAS_LINK_E_NODEV);
		CHECK(lnk == NULL);
	} else {
		CHECK_RC(rc, MEARAS_LINK_OK);
		if (lnk)
			CHECK_RC(echo_call(lnk, "over verbs"), MEARAS_LINK_OK);
	}
	link_close();
	/* TCP still chosen per link on the same server. */
	cfg.transport = MEARAS_LINK_TRANSPORT_TCP;
	CHECK_RC(mearas_link_connect("127.0.0.1", srv.port, &cfg, &lnk), MEARAS_LINK_OK);
	if (lnk)
		CHECK_RC(echo_call(lnk, "over tcp"), MEARAS_LINK_OK);
}

/* Transport auto on cfg: the link opens over TCP, the log saying why verbs
 * was not tried and how the link is, and it echoes text. */
static void auto_opens_tcp(struct mearas_link_config *cfg, const char *why, const char *how, const char *text)
{
	cfg->transport = MEARAS_LINK_TRANSPORT_AUTO;
	CHECK_RC(mearas_link_connect("127.0.0.1", srv.port, cfg, &lnk), MEARAS_LINK_OK);
	CHECK(log_has("transport auto: TCP (verbs not tried:", why));
	CHECK(log_has("link to 127.0.0.1", how));
	if (lnk)
		CHECK_RC(echo_call(lnk, text), MEARAS_LINK_OK);
}

/* Auto with link encryption on: TCP at once, and the log says why. */
static void t_auto_encrypted_uses_tcp(void)
{
	serve();
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	auto_opens_tcp(&cfg, "link encryption is on", "open over tcp, encrypted", "auto, encrypted");
}

/* Auto where this node lacks the RDMA device named: TCP, saying which is missing. */
static void t_auto_without_device_uses_tcp(void)
{
	serve_enc(MEARAS_LINK_ENCRYPTION_OFF);
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	cfg.encryption = MEARAS_LINK_ENCRYPTION_OFF;
	cfg.verbs_device = "no-such-rdma-device";
	/* "RDMA device": none here, or not that one */
	auto_opens_tcp(&cfg, "RDMA device", "open over tcp, UNENCRYPTED", "auto, no device");
}

/* The probe names what is missing; a bad transport value is refused. */
static void t_verbs_probe_and_bad_transport(void)
{
	struct mearas_link_config cfg;
	char why[256] = "";
	base_cfg(&cfg, KEY);
	cfg.verbs_device = "no-such-rdma-device";
	CHECK_RC(mearas_link_verbs_probe(&cfg, why, sizeof(why)), MEARAS_LINK_E_NODEV);
	CHECK(strstr(why, "no RDMA device") || strstr(why, "RDMA device no-such-rdma-device not found"));
	CHECK_RC(mearas_link_verbs_probe(&cfg, NULL, 0), MEARAS_LINK_E_NODEV);
	cfg.transport = (enum mearas_link_transport)7;
	CHECK_RC(mearas_link_connect("127.0.0.1", 9, &cfg, &lnk), MEARAS_LINK_E_INVAL);
	CHECK(lnk == NULL);
}

/* ---- admission: what a peer gets before it has proven the key ---- */

static int raw_connect(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Has the server closed fd (end of stream or reset)? Waits up to wait_ms. */
static bool closed_by_server(int fd, int wait_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;
	if (poll(&p, 1, wait_ms) <= 0)
		return false;
	return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* Seconds until the server closes fd, while fd announces a 200-byte hello
 * and sends one byte of it every trickle_ms (0: nothing at all); max_s if
 * it stays open that long. */
static double seconds_to_close(int fd, unsigned trickle_ms, double max_s)
{
	double t0 = check_now();
	static const uint8_t hdr[4] = { 200, 0, 0, 0 };
	if (trickle_ms && send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL) != (ssize_t)sizeof(hdr))
		return 0;
	while (check_now() - t0 < max_s) {
		if (closed_by_server(fd, trickle_ms ? (int)trickle_ms : 20))
			return check_now() - t0;
		if (trickle_ms && send(fd, "\x0a", 1, MSG_NOSIGNAL) != 1)
			return check_now() - t0;
	}
	return max_s;
}

/* A silent connection and one that trickles its hello are both dropped at
 * handshake_ms (the handshake's own per-message bound, connect_timeout_ms,
 * is 3 s); an authenticated link has no such deadline. */
static void t_handshake_deadline(void)
{
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	cfg.handshake_ms = 600;
	serve_cfg(&cfg);
	int silent = raw_connect(srv.port), slow = raw_connect(srv.port);
	CHECK(silent >= 0 && slow >= 0);
	double t_slow = seconds_to_close(slow, 100, 5.0);
	double t_silent = seconds_to_close(silent, 0, 5.0);
	printf("  trickling connection closed after %.2f s, silent one after %.2f s\n", t_slow, t_silent);
	/* not before the 600 ms deadline for the trickling one; the upper bounds
	 * are liveness deadlines with slack for a loaded machine, below the 3 s
	 * per-message bound that would close them otherwise */
	CHECK(t_slow > 0.4 && t_slow < 2.5);
	CHECK(t_silent < 2.5);
	CHECK(log_has("127.0.0.1", "handshake not done within 600 ms"));
	close(silent);
	close(slow);
	link_up();
	usleep(900000); /* past the deadline: a link is not cut by it */
	CHECK_RC(echo_call(lnk, "after the deadline"), MEARAS_LINK_OK);
}

/* A connection from 127.0.0.src (all of 127/8 is loopback) */
static int raw_connect_from(uint16_t port, unsigned src)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000000u | src) };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
			connect(fd, (struct sockaddr *)&a, sizeof(a)))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* n connections from 127.0.0.src into fds; how many the server closed at once */
static int flood_from(uint16_t port, unsigned src, int *fds, int n)
{
	int quick = 0;
	for (int i = 0; i < n; i++)
		fds[i] = raw_connect_from(port, src);
	usleep(300000);
	for (int i = 0; i < n; i++)
		if (fds[i] < 0 || closed_by_server(fds[i], 0))
			quick++;
	return quick;
}

/* At most max_pending connections wait in the handshake, a quarter of them
 * from one host: the rest are closed at once, and an open link keeps
 * working through the flood. */
static void t_pending_cap(void)
{
	enum { CAP = 8, PER_HOST = CAP / 4, N = 10 };
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	cfg.max_pending = CAP;
	cfg.handshake_ms = 2000;
	serve_cfg(&cfg);
	link_up();
	int fds[5][N], quick[5];
	/* hosts .2 to .5: PER_HOST each stay in the handshake, which fills CAP */
	for (unsigned h = 0; h < 4; h++)
		quick[h] = flood_from(srv.port, 2 + h, fds[h], N);
	/* host .6: nothing left for it */
	quick[4] = flood_from(srv.port, 6, fds[4], N);
	printf("  idle connections closed at once, per host: %d %d %d %d, then %d (of %d each)\n", quick[0], quick[1],
	       quick[2], quick[3], quick[4], N);
	for (unsigned h = 0; h < 4; h++)
		CHECK(quick[h] == N - PER_HOST);
	CHECK(quick[4] == N);
	CHECK(log_has("127.0.0.2", "connections from that host already in the handshake"));
	CHECK(log_has("127.0.0", "8 connections already in the handshake"));
	CHECK_RC(echo_call(lnk, "during the flood"), MEARAS_LINK_OK);
	link_close();
	for (unsigned h = 0; h < 5; h++)
		for (int i = 0; i < N; i++)
			if (fds[h][i] >= 0)
				close(fds[h][i]);
	/* their slots come free: a new link is admitted */
	usleep(300000);
	link_and_echo(srv.port, "after the flood");
}

/* A node whose clients open links all at once (MPI ranks starting together)
 * goes past the per-host handshake cap of the server: the connections the
 * server turns away before its challenge are tried again, and every link
 * comes up (the admission caps still hold: t_pending_cap). */
enum { BURST = 16 };
static uint16_t burst_port;

static void *burst_one(void *arg)
{
	struct mearas_link *l = NULL;
	int *rc = arg;

	*rc = connect_local(burst_port, KEY, &l);
	if (!*rc)
		*rc = echo_call(l, "burst");
	if (l)
		mearas_link_close(l);
	return NULL;
}

static void t_burst_from_one_host_past_the_cap(void)
{
	struct mearas_link_config cfg;
	pthread_t th[BURST];
	int rc[BURST], up = 0;

	base_cfg(&cfg, KEY);
	cfg.max_pending = 4; /* one handshake at a time from one host */
	serve_cfg(&cfg);
	burst_port = srv.port;
	for (int i = 0; i < BURST; i++)
		REQUIRE(pthread_create(&th[i], NULL, burst_one, &rc[i]) == 0);
	for (int i = 0; i < BURST; i++) {
		pthread_join(th[i], NULL);
		up += rc[i] == MEARAS_LINK_OK;
	}
	printf("  %d of %d links opened at once came up\n", up, BURST);
	CHECK(up == BURST);
}

/* At most max_links authenticated links; a closed one frees its slot. */
static void t_link_cap(void)
{
	struct mearas_link_config cfg;
	base_cfg(&cfg, KEY);
	cfg.max_links = 2;
	serve_cfg(&cfg);
	struct mearas_link *a = NULL, *b = NULL, *c = NULL;
	CHECK_RC(connect_local(srv.port, KEY, &a), MEARAS_LINK_OK);
	CHECK_RC(connect_local(srv.port, KEY, &b), MEARAS_LINK_OK);
	if (connect_local(srv.port, KEY, &c) == MEARAS_LINK_OK) {
		CHECK(echo_call(c, "third") != MEARAS_LINK_OK);
		mearas_link_close(c);
		c = NULL;
	}
	CHECK(log_has("127.0.0.1", "2 links open, the most this node takes"));
	if (a)
		CHECK_RC(echo_call(a, "first"), MEARAS_LINK_OK);
	if (b) {
		mearas_link_close(b);
		CHECK(ts_wait_closed(&srv.st, 1, 2.0));
		usleep(200000);
	}
	link_and_echo(srv.port, "in the freed slot");
	if (a)
		mearas_link_close(a);
}

/* A server process with 64 fds and no pending cap to speak of: a flood of
 * 150 idle connections is refused as fds run short (the fd reserve), the
 * process lives on, its open link keeps working, and a new link is admitted
 * once the flood is gone. */
static void t_fd_budget(void)
{
	enum { N = 150 };
	int p[2];
	if (pipe(p)) {
		CHECK(0);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		struct rlimit rl = { 64, 64 };
		struct ts_local ls = { 0 };
		struct mearas_link_config cfg;
		base_cfg(&cfg, KEY);
		cfg.log = NULL;
		cfg.max_pending = 1000;
		cfg.fd_reserve = 16;
		uint16_t port = 0;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0 && local_start_cfg(&ls, &cfg) == 0)
			port = ls.port;
		if (write(p[1], &port, sizeof(port)) != sizeof(port) || !port)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	uint16_t port = 0;
	CHECK(read(p[0], &port, sizeof(port)) == sizeof(port) && port);
	close(p[0]);
	if (port)
		CHECK_RC(connect_local(port, KEY, &lnk), MEARAS_LINK_OK);
	int fds[N], quick = 0;
	for (int i = 0; i < N && port; i++)
		fds[i] = raw_connect(port);
	usleep(500000);
	for (int i = 0; i < N && port; i++)
		if (fds[i] < 0 || closed_by_server(fds[i], 0))
			quick++;
	printf("  %d of %d idle connections refused at once by a 64-fd server\n", quick, N);
	CHECK(quick >= N - 64);
	CHECK(waitpid(pid, NULL, WNOHANG) == 0); /* alive */
	if (lnk)
		CHECK_RC(echo_call(lnk, "open link during the flood"), MEARAS_LINK_OK);
	link_close();
	for (int i = 0; i < N && port; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	usleep(300000);
	if (port)
		link_and_echo(port, "after the flood");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The heartbeat interval is the peer's to say: three of its periods must
 * not wrap (0x55555556 * 3 is 2 in 32 bits, which cut a quiet link at the
 * server's own bound) nor run past LINK_DEAD_MS_MAX. */
static void t_peer_dead_bound_arithmetic(void)
{
	CHECK(link_peer_dead_ms(3000, 0) == 3000);
	CHECK(link_peer_dead_ms(3000, 2000) == 6000);
	CHECK(link_peer_dead_ms(3000, 0x55555556u) == LINK_DEAD_MS_MAX);
	CHECK(link_peer_dead_ms(3000, UINT32_MAX) == LINK_DEAD_MS_MAX);
	CHECK(link_peer_dead_ms(LINK_DEAD_MS_MAX, UINT32_MAX) == LINK_DEAD_MS_MAX);
}

/* end to end: a server with a 600 ms dead bound, a peer announcing
 * 0x55555556 ms and then quiet for 1.2 s: the link is still up */
static void t_peer_heartbeat_huge(void)
{
	struct mearas_link_config scfg, cfg;
	base_cfg(&scfg, KEY);
	scfg.heartbeat_ms = 200;
	scfg.dead_ms = 600;
	serve_cfg(&scfg);
	effective_cfg(&cfg);
	cfg.heartbeat_ms = 0x55555556u; /* straight into the hello, past any clamp */
	struct link_transport *t;
	int fd;
	CHECK_RC(hand_link(&cfg, &fd, &t), MEARAS_LINK_OK);
	if (t) {
		usleep(1200000);
		uint8_t hb[LINK_FRAME_HDR + 8] = { 0 }, ack[LINK_FRAME_HDR + 8];
		struct link_frame_hdr h = { .type = LINK_FRAME_HEARTBEAT, .body_len = 8 };
		wire_encode_frame(hb, &h);
		CHECK_RC(t->ops->send_iov(t, &(struct iovec){ hb, sizeof(hb) }, 1), MEARAS_LINK_OK);
		uint64_t last_rx = 0;
		int stop = 0;
		CHECK_RC(link_read_exact(t, ack, sizeof(ack), 100, 2000, &last_rx, &stop), MEARAS_LINK_OK);
		struct link_frame_hdr ah;
		CHECK(wire_decode_frame(ack, &ah) == 0 && ah.type == LINK_FRAME_HEARTBEAT_ACK);
	}
	hand_link_close(fd, t);
}

#define T(fn) { #fn + 2, fn }
static const struct check_case cases[] = {
	T(t_echo_and_orderly_close),
	T(t_heartbeat_round_trip),
	T(t_order_across_batches),
	T(t_eight_threads_one_link),
	T(t_batching_on_and_off_deliver_all),
	T(t_wrong_key_refused),
	T(t_no_key_not_tried),
	T(t_server_without_key_refuses),
	T(t_version_mismatch),
	T(t_bulk_pipelined_chunks),
	T(t_reply_sizes),
	T(t_call_timeout),
	T(t_message_larger_than_batch),
	T(t_invalid_arguments),
	T(t_connect_refused_at_once),
	T(t_garbage_peer),
	T(t_handshake_deadline),
	T(t_pending_cap),
	T(t_burst_from_one_host_past_the_cap),
	T(t_link_cap),
	T(t_fd_budget),
	T(t_peer_dead_bound_arithmetic),
	T(t_peer_heartbeat_huge),
	T(t_malformed_frames_after_auth),
	T(t_server_stop_closes_links),
	T(t_call_async),
	T(t_rx_spin),
	T(t_server_on_idle_replies),
	T(t_server_on_idle_needs_spin),
	T(t_tx_clear_reading_kept),
	T(t_tx_clear_write_under_way),
	T(t_tx_clear_after_write),
	T(t_tx_clear_look_ahead),
	T(t_client_rx_idle),
	T(t_tx_clear),
	T(t_call_stream),
	T(t_encrypted_calls_and_bulk),
	T(t_records_next_key),
	T(t_encryption_off_both_ends),
	T(t_encryption_off_on_client_only),
	T(t_encryption_off_on_server_only),
	T(t_tls_server_without_key_refused),
	T(t_tls_handshake_garbage),
	T(t_tls_write_no_sigpipe),
	T(t_tamper_flip_byte_to_server),
	T(t_tamper_flip_byte_to_client),
	T(t_tamper_inject_forged_message),
	T(t_tamper_inject_forged_record),
	T(t_tamper_inject_oversized_record),
	T(t_tamper_replay_record),
	T(t_server_killed_pending_call_fails),
	T(t_server_hung_heartbeat_timeout),
	T(t_server_restart_accepts_new_link),
	T(t_client_killed_server_closed_callback),
	T(t_client_hung_server_closed_callback),
	T(t_verbs_transport_choice),
	T(t_auto_encrypted_uses_tcp),
	T(t_auto_without_device_uses_tcp),
	T(t_verbs_probe_and_bad_transport),
};
CHECK_MAIN_FIXTURE(cases, case_setup, case_teardown)
