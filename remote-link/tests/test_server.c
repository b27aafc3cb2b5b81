#include "test_server.h"
#include "check.h"

#include <string.h>
#include <time.h>

void ts_init(struct ts_state *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &a);
	pthread_condattr_destroy(&a);
}

static void on_message(void *ctx, struct mearas_link_conn *c, uint64_t seq, bool wants_reply,
		       const void *data, size_t len)
{
	struct ts_state *s = ctx;
	const uint8_t *d = data;
	pthread_mutex_lock(&s->lock);
	s->msgs++;
	if (seq <= s->last_seq)
		s->order_errors++;
	s->last_seq = seq;
	if (len >= 6 && d[0] == 'O' && d[1] < TS_MAX_THREADS) {
		uint32_t counter;
		memcpy(&counter, d + 2, 4);
		if (counter != s->next_counter[d[1]])
			s->order_errors++;
		s->next_counter[d[1]] = counter + 1;
	}
	uint64_t bulk = s->bulk_bytes;
	pthread_mutex_unlock(&s->lock);
	if (!wants_reply || len == 0)
		return;
	switch (d[0]) {
	case 'E':
	case 'O':
		mearas_link_reply(c, seq, data, len);
		break;
	case 'B': {
		uint32_t n = 0;
		if (len >= 5)
			memcpy(&n, d + 1, 4);
		static uint8_t big[1 << 20];
		mearas_link_reply(c, seq, big, n > sizeof(big) ? sizeof(big) : n);
		break;
	}
	case 'S':
		mearas_link_reply(c, seq, &bulk, sizeof(bulk));
		break;
	case 'D': { /* [u32 len][u8 tag]: len bytes of the pattern to the client over the data
		     * connections; the reply: i32 status of the send */
		uint32_t n = 0;
		int32_t rc = MEARAS_LINK_E_INVAL;
		if (len >= 6)
			memcpy(&n, d + 1, 4);
		uint8_t *b = n ? malloc(n) : NULL;
		if (b) {
			for (uint32_t i = 0; i < n; i++)
				b[i] = ts_pattern(d[5], i);
			rc = mearas_link_conn_streams(c) ? mearas_link_conn_bulk(c, d[5], b, n) : MEARAS_LINK_E_INVAL;
			free(b);
		}
		mearas_link_reply(c, seq, &rc, sizeof(rc));
		break;
	}
	default: /* 'H' and unknown kinds: no reply */
		break;
	}
}

static void on_chunk(void *ctx, struct mearas_link_conn *c, uint64_t tag, uint64_t bulk_id,
		     uint64_t offset, uint64_t total, const void *data, size_t len)
{
	(void)c;
	(void)bulk_id;
	struct ts_state *s = ctx;
	const uint8_t *d = data;
	int bad = 0;
	if (s->check_pattern)
		for (size_t i = 0; i < len; i++)
			if (d[i] != ts_pattern(tag, offset + i)) {
				bad = 1;
				break;
			}
	double now = check_now();
	pthread_mutex_lock(&s->lock);
	if (offset == 0) {
		s->first_chunk_at = now;
		s->next_offset = 0;
	}
	if ((!s->unordered && offset != s->next_offset) || offset + len > total)
		bad = 1;
	s->next_offset = offset + len;
	s->chunk_errors += bad;
	s->chunks++;
	s->bulk_bytes += len;
	s->last_chunk_at = now;
	pthread_mutex_unlock(&s->lock);
}

static void on_open(void *ctx, struct mearas_link_conn *c)
{
	struct ts_state *s = ctx;
	pthread_mutex_lock(&s->lock);
	s->opened++;
	pthread_mutex_unlock(&s->lock);
	if (s->print_events) {
		printf("OPEN %s\n", mearas_link_conn_peer(c));
		fflush(stdout);
	}
}

static void on_closed(void *ctx, struct mearas_link_conn *c, int status)
{
	struct ts_state *s = ctx;
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	pthread_mutex_lock(&s->lock);
	s->closed++;
	s->last_close_status = status;
	s->closed_at = check_now();
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->print_events) {
		printf("CLOSED %s status=%d (%s) at_ms=%lld\n", mearas_link_conn_peer(c), status,
		       mearas_link_strerror(status),
		       (long long)rt.tv_sec * 1000 + rt.tv_nsec / 1000000);
		fflush(stdout);
	}
}

void ts_ops(struct ts_state *s, struct mearas_link_server_ops *ops)
{
	memset(ops, 0, sizeof(*ops));
	ops->on_message = on_message;
	ops->on_chunk = on_chunk;
	ops->on_open = on_open;
	ops->on_closed = on_closed;
	ops->ctx = s;
}

bool ts_wait_closed(struct ts_state *s, int n, double timeout_s)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double until = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 + timeout_s;
	struct timespec ts = { .tv_sec = (time_t)until,
			       .tv_nsec = (long)((until - (double)(time_t)until) * 1e9) };
	pthread_mutex_lock(&s->lock);
	while (s->closed < n)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &ts))
			break;
	bool ok = s->closed >= n;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

int ts_local_start(struct ts_local *ls, const char *addr, uint16_t port, const struct mearas_link_config *cfg)
{
	struct mearas_link_server_ops ops;
	ts_init(&ls->st);
	ts_ops(&ls->st, &ops);
	ls->srv = NULL;
	int rc = mearas_link_server_start(addr, port, cfg, &ops, &ls->srv);
	ls->port = rc ? 0 : mearas_link_server_port(ls->srv);
	return rc;
}
