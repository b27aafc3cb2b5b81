/* SPDX-License-Identifier: MIT */
/*
 * Shared by the pieces of a remote vGPU's session on the serving node:
 * session.c (the reply queue, the session's life, the link's messages),
 * session_feed.c (records into the worker's ring) and session_reply.c
 * (completions back, REAP replies).
 */
#ifndef MEARAS_REMOTE_SESSION_INTERNAL_H
#define MEARAS_REMOTE_SESSION_INTERNAL_H

#include <driver_types.h> /* cudaError_t values */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* session.c: the queue of reply items (session_queue_push: qlock held) */
void session_queue_push(struct remote_session *s, const struct out_item *it);
void session_push(struct remote_session *s, const struct out_item *it);
void session_push_cqe(struct remote_session *s, uint32_t cq, const struct mearas_cqe *c);
/* a record's error, if it wants a completion */
void session_push_error(struct remote_session *s, const struct mearas_sqe *e, int status);
/* a record sent with REMOTE_REC_WANT_DONE has written all it will write */
void session_push_done(struct remote_session *s, uint32_t id);
/* a record not run: its error, and its DONE if one is owed */
void session_drop_record(struct remote_session *s, const struct mearas_sqe *e, int status, bool done_owed,
			 uint32_t id);
/* bytes an item holds in the queue (its own, and what it owns), and freeing what it owns */
uint64_t session_item_cost(const struct out_item *it);
void session_item_free(struct remote_session *s, struct out_item *it);
/* the ranges of a graph launch in flight, taken from the budget */
void session_ranges_free(struct remote_session *s, struct mearas_span *r, uint32_t n);
/* a refusal that no completion of its own reports: the next synchronizing call's */
void session_defer_error(struct remote_session *s, int status);
/* wakes the session thread if it sleeps */
void session_notify_if_sleeping(struct remote_session *s);

/* session_feed.c: a RECORD message into the worker's submission ring */
void session_feed_record(struct remote_session *s, const uint8_t *msg, size_t len);

#endif
