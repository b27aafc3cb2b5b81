// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: remote-link's data plane after the handshake (format in
 * fuzz_link.h). Server side: the fuzzer is a client whose frames (batches,
 * chunks, heartbeats, close) an accepted link's frame loop reads
 * (link_server_serve_transport: run_link, serve_frames, dispatch_batch,
 * read_chunk_in_place). Client side: the fuzzer is a server answering the
 * calls a link made (link_client_open_transport: rx_main, handle_reply,
 * the stream reader). The transport hands the bytes over in fragments of a
 * fuzzer-chosen size. Checks beyond the sanitizers: each call completes
 * exactly once, an asynchronous reply fits its buffer, a placed chunk lands
 * where chunk_dest said, the server opens and closes the link once.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz_die.h"
#include "fuzz_link.h"
#include "mearas/clock.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink_sum;

/* Reads every byte (the sanitizers check they are there). */
static void touch(const void *p, size_t n)
{
	uint8_t s = 0;

	for (size_t i = 0; i < n; i++)
		s ^= ((const uint8_t *)p)[i];
	sink_sum ^= s;
}

static void base_cfg(struct mearas_link_config *cfg)
{
	mearas_link_config_init(cfg);
	cfg->encryption = MEARAS_LINK_ENCRYPTION_OFF;
	cfg->heartbeat_ms = 100;
	cfg->dead_ms = 2000;
	cfg->log = fuzz_link_log;
}

/* ---- server side ---- */

struct srv {
	uint8_t flags;
	unsigned opened, closed;
	uint8_t *sink;
};

static bool in_sink(uint64_t tag, uint64_t off, size_t len)
{
	return tag < 2 && off <= LINK_FUZZ_SINK && len <= LINK_FUZZ_SINK - off;
}

static void srv_open(void *ctx, struct mearas_link_conn *c)
{
	struct srv *s = ctx;

	s->opened++;
	mearas_link_conn_set_user(c, s);
}

static void srv_message(void *ctx, struct mearas_link_conn *c, uint64_t seq, bool wants_reply, const void *data,
			size_t len)
{
	struct srv *s = ctx;

	if (mearas_link_conn_user(c) != s)
		die("message on a link that was not opened");
	touch(data, len);
	if (wants_reply && (s->flags & LINKF_REPLY))
		mearas_link_reply(c, seq, data, len);
}

static void *srv_chunk_dest(void *ctx, struct mearas_link_conn *c, uint64_t tag, uint64_t offset, uint64_t total,
			    size_t len)
{
	struct srv *s = ctx;

	(void)c, (void)total;
	return in_sink(tag, offset, len) ? s->sink + offset : NULL;
}

static void srv_chunk(void *ctx, struct mearas_link_conn *c, uint64_t tag, uint64_t bulk_id, uint64_t offset,
		      uint64_t total, const void *data, size_t len)
{
	struct srv *s = ctx;

	(void)c, (void)bulk_id, (void)total;
	touch(data, len);
	if ((s->flags & LINKF_CHUNK_DEST) && in_sink(tag, offset, len) && data != s->sink + offset)
		die("a placed chunk is not where chunk_dest put it");
}

static void srv_closed(void *ctx, struct mearas_link_conn *c, int status)
{
	struct srv *s = ctx;

	(void)c, (void)status;
	s->closed++;
}

static void run_server(uint8_t flags, uint8_t frag, const uint8_t *data, size_t size)
{
	static uint8_t *sink;
	struct srv s = { .flags = flags };
	struct mearas_link_server_ops ops = { .on_message = srv_message, .on_chunk = srv_chunk, .on_open = srv_open,
					      .on_closed = srv_closed, .ctx = &s };
	struct mearas_link_config cfg;

	if (!sink)
		sink = malloc(LINK_FUZZ_SINK); /* exactly: a chunk placed past it is an overflow */
	s.sink = sink;
	if (flags & LINKF_CHUNK_DEST)
		ops.chunk_dest = srv_chunk_dest;
	base_cfg(&cfg);
	link_server_serve_transport(&cfg, &ops, mem_transport_new(data, size, frag, false), 500);
	if (s.opened != 1 || s.closed != 1)
		die("the link was not opened and closed exactly once");
}

/* ---- client side ---- */

struct call {
	uint8_t kind, step;
	uint32_t cap;
	uint8_t *buf;
	unsigned expected, done;
	int status;
	size_t len;
};

static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t calls_cond = PTHREAD_COND_INITIALIZER;

static void call_done(struct call *k, int status, size_t len)
{
	pthread_mutex_lock(&calls_lock);
	k->done++;
	k->status = status;
	k->len = len;
	pthread_cond_broadcast(&calls_cond);
	pthread_mutex_unlock(&calls_lock);
}

static void async_done(void *ctx, int status, size_t reply_len)
{
	struct call *k = ctx;

	if (status == MEARAS_LINK_OK) {
		if (reply_len > k->cap)
			die("a reply longer than its buffer reported done");
		touch(k->buf, reply_len);
	}
	call_done(k, status, reply_len);
}

/* Reads the reply in pieces of step + 1, cap bytes in all; the rest is the link's to skip. */
static void stream_done(void *ctx, int status, size_t len, struct mearas_link_reader *r)
{
	struct call *k = ctx;
	uint8_t tmp[256];
	size_t got = 0;

	if (status == MEARAS_LINK_OK) {
		if (!r || mearas_link_read_left(r) != len)
			die("a stream reply's reader does not hold its length");
		while (mearas_link_read_left(r) && got < k->cap) {
			size_t n = (size_t)k->step + 1 < mearas_link_read_left(r) ? (size_t)k->step + 1 : mearas_link_read_left(r);

			if (mearas_link_read(r, tmp, n))
				break;
			touch(tmp, n);
			got += n;
		}
		if (mearas_link_read_left(r) < sizeof(tmp) &&
		    mearas_link_read(r, tmp, mearas_link_read_left(r) + 1) == MEARAS_LINK_OK)
			die("a stream reader read past its reply");
	} else if (r) {
		die("a failed stream call got a reader");
	}
	call_done(k, status, len);
}

static bool all_done(struct call *calls, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (calls[i].done < calls[i].expected)
			return false;
	return true;
}

/* Until every call completed and the link has read all it will read. */
static void wait_calls(struct mearas_link *l, struct call *calls, unsigned n)
{
	pthread_mutex_lock(&calls_lock);
	while (!all_done(calls, n) || mearas_link_health(l) == MEARAS_LINK_OK) {
		struct timespec ts = mearas_realtime_after_ms(1);

		pthread_cond_timedwait(&calls_cond, &calls_lock, &ts);
	}
	pthread_mutex_unlock(&calls_lock);
}

static void start_call(struct mearas_link *l, struct call *k, unsigned i)
{
	uint64_t req = i;
	int rc;

	if (k->kind & LINK_CALL_STREAM) {
		rc = mearas_link_call_stream(l, &req, sizeof(req), stream_done, k);
	} else {
		k->buf = k->cap ? malloc(k->cap) : NULL;
		rc = mearas_link_call_async(l, &req, sizeof(req), k->buf, k->cap, async_done, k);
	}
	k->expected = rc == MEARAS_LINK_OK; /* a call refused at once gets no callback */
}

static void run_client(uint8_t frag, const uint8_t *data, size_t size)
{
	struct call calls[LINK_FUZZ_MAX_CALLS];
	struct mearas_link_config cfg;
	struct link_transport *t;
	struct mearas_link *l;
	unsigned n;

	if (size < 1)
		return;
	n = data[0] % LINK_FUZZ_MAX_CALLS;
	data++, size--;
	if (size < 4 * (size_t)n)
		return;
	memset(calls, 0, sizeof(calls));
	for (unsigned i = 0; i < n; i++, data += 4, size -= 4) {
		calls[i].kind = data[0];
		calls[i].cap = data[1] | (uint32_t)data[2] << 8;
		calls[i].step = data[3];
	}
	base_cfg(&cfg);
	t = mem_transport_new(data, size, frag, true);
	if (link_client_open_transport(&cfg, t, &l))
		die("link_client_open_transport failed");
	for (unsigned i = 0; i < n; i++)
		start_call(l, &calls[i], i + 1);
	mem_transport_open(t);
	wait_calls(l, calls, n);
	mearas_link_close(l);
	for (unsigned i = 0; i < n; i++) {
		if (calls[i].done != calls[i].expected)
			die("a call completed more than once");
		free(calls[i].buf);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_link_init(seeds_link_msg);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	if (data[0] & LINKF_CLIENT)
		run_client(data[1], data + 2, size - 2);
	else
		run_server(data[0], data[1], data + 2, size - 2);
	return 0;
}
