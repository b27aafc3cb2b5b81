/* SPDX-License-Identifier: MIT */
/*
 * Records in flight on a remote vGPU, by a token that replaces their
 * user_data (tokens.c): the forwarder's (until the completion comes back)
 * and the session's on the serving node (until the worker completes them).
 */
#ifndef MEARAS_REMOTE_TOKENS_H
#define MEARAS_REMOTE_TOKENS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mearas/region.h"

struct remote_token {
	uint64_t user_data;     /* the original */
	uint16_t cq, op;
	uint8_t want_cqe, used;
	uint64_t off, width, pitch, rows; /* device-to-host destination rows */
	struct mearas_span *ranges; /* a graph launch: more of them (malloc'd) */
	uint32_t nranges;
	uint8_t capture_begin;  /* a CAPTURE_BEGIN on the stream of key stream_key */
	uint8_t want_done;      /* send a DONE item with done_id after its data */
	uint32_t done_id;
	uint64_t stream_key;
	uint64_t taken_ns;       /* when the record was taken from the ring (metrics) */
};

struct remote_tokens {
	pthread_mutex_t lock;
	struct remote_token *e;
	uint64_t *tok;
	uint32_t cap, used;
	uint64_t next;
	int failed;             /* set once: no more tokens */
};

int remote_tokens_init(struct remote_tokens *t, uint32_t cap);
/* 0 when the table is full or failed */
uint64_t remote_tokens_add(struct remote_tokens *t, const struct remote_token *in);
/* n more tokens can be added now */
bool remote_tokens_room(struct remote_tokens *t, uint32_t n);
bool remote_tokens_take(struct remote_tokens *t, uint64_t token, struct remote_token *out);
/* Marks the table failed and hands every entry still in flight to fn. */
void remote_tokens_fail(struct remote_tokens *t, void (*fn)(void *ctx, const struct remote_token *e),
			void *ctx);

#endif
