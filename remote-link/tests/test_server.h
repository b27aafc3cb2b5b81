/* The server behaviour the tests run against (loopback and namespaces).
 * Message kinds, by first byte:
 *   'E' echo: reply with the same bytes      'H' hang: never replied
 *   'O' ordered: [u8 'O'][u8 thread][u32 counter], checked to arrive in order
 *   'B' big: reply with u32 (bytes 1..4) bytes
 *   'S' sync: reply with u64 bulk bytes received so far
 *   'D' down: [u32 len][u8 tag]: len bytes of the pattern sent to the client over the
 *       link's data connections (mearas_link_conn_bulk); reply: i32 status */
#ifndef REMOTE_LINK_TEST_SERVER_H
#define REMOTE_LINK_TEST_SERVER_H

#include "remote_link.h"
#include <pthread.h>
#include <stdbool.h>

#define TS_MAX_THREADS 64

struct ts_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t msgs, last_seq;
	int order_errors;
	uint32_t next_counter[TS_MAX_THREADS];
	uint64_t bulk_bytes, chunks, next_offset;
	int chunk_errors;
	bool check_pattern;
	bool unordered;    /* chunks may come in any order (striped links): bounds checked only */
	double first_chunk_at, last_chunk_at; /* check_now() of the current bulk */
	int opened, closed, last_close_status;
	double closed_at;
	bool print_events; /* link_node: one line per open/close on stdout */
};

void ts_init(struct ts_state *s);
void ts_ops(struct ts_state *s, struct mearas_link_server_ops *ops);
/* Waits until s->closed >= n or timeout; returns true if reached. */
bool ts_wait_closed(struct ts_state *s, int n, double timeout_s);
/* A test server, its state and its port. */
struct ts_local {
	struct ts_state st;
	struct mearas_link_server *srv;
	uint16_t port;
};

/* Starts ls on addr:port (0: any free one) with cfg; the link status. */
int ts_local_start(struct ts_local *ls, const char *addr, uint16_t port, const struct mearas_link_config *cfg);

/* Byte i of a bulk transfer with this tag (the tests' pattern). */
static inline uint8_t ts_pattern(uint64_t tag, uint64_t i)
{
	return (uint8_t)(i * 7u + (i >> 12) + tag);
}

#endif
