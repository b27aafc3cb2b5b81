// SPDX-License-Identifier: MIT
/*
 * A remote vGPU's session on the serving node (session.h): the link thread
 * turns the forwarder's RECORD messages into records of the worker's
 * submission ring (session_feed.c: payloads into its arena, data into its
 * data area, user_data replaced by a token), follows HOST_MAPPED ranges and
 * bulk chunks (here); the session thread reads the worker's completions back
 * (session_reply.c: tokens, device-to-host data, DONE marks, device output)
 * into a queue that REAP replies drain, oldest first (the queue is here).
 * The forwarding node is not trusted: every length, offset and range it
 * sends is checked against the session's own view of the data area and
 * rings.
 *
 * What a link makes this process allocate (mapped-range shadows, queued
 * reply bytes, the ranges of graph launches in flight) comes out of the
 * link's budget (--link-mem-mb); past it, that link's calls fail with
 * cudaErrorMemoryAllocation and other links go on. The reply queue is also
 * flow-controlled: completions stay in the worker's rings while it holds
 * REMOTE_QUEUE_SOFT bytes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "capture.h"
#include "mapped.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "session_internal.h"

#define TOKENS_CAP (1u << 16)

void remote_session_notify(struct remote_session *s)
{
	uint64_t one = 1;

	if (s->notify_fd >= 0 && write(s->notify_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("remote session: notify: %s", strerror(errno));
}

/* After queueing work for the session thread: wake it only if it sleeps
 * (pairs with the fence in harvest before it rechecks and sleeps) and the
 * link's receive thread does not serve the session meanwhile (it does the
 * work between its receives, and wakes the session thread when it stops). */
void session_notify_if_sleeping(struct remote_session *s)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&s->sleeping, __ATOMIC_RELAXED) && !rx_serve_now(&s->rx))
		remote_session_notify(s);
}

/* A refusal that no completion of its own reports: the next synchronizing
 * call of the link does (as CUDA reports asynchronous errors). */
void session_defer_error(struct remote_session *s, int status)
{
	int none = 0;

	__atomic_compare_exchange_n(&s->budget_error, &none, status, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Bytes an item holds in the queue (its own, and what it owns). */
uint64_t session_item_cost(const struct out_item *it)
{
	return sizeof(*it) + (it->bytes ? it->nbytes : 0);
}

/* An item's bytes (taken from the budget by whoever made them) are gone. */
void session_item_free(struct remote_session *s, struct out_item *it)
{
	if (it->bytes) {
		free(it->bytes);
		remote_budget_give(&s->budget, it->nbytes);
		it->bytes = NULL;
	}
}

/* queue lock held */
void session_queue_push(struct remote_session *s, const struct out_item *it)
{
	/* Bytes an item carries were taken from the link's budget, which bounds
	 * them; the items themselves are bounded here, not by the budget: a link
	 * whose budget went to shadows must still get the completions that
	 * report it. Scans stop at REMOTE_QUEUE_SOFT; only records' own errors
	 * come on top. */
	bool lost = (s->qlen + 1) * sizeof(*it) > REMOTE_QUEUE_MAX;

	if (!lost && s->qhead + s->qlen == s->qcap) {
		if (s->qhead) {
			memmove(s->q, s->q + s->qhead, s->qlen * sizeof(*s->q));
			s->qhead = 0;
		} else {
			size_t ncap = s->qcap ? s->qcap * 2 : 256;
			struct out_item *n = realloc(s->q, ncap * sizeof(*n));

			lost = !n;
			if (n) {
				s->q = n;
				s->qcap = ncap;
			}
		}
	}
	if (lost) {
		struct out_item gone = *it;

		log_err("remote session %s: reply queue full or out of memory: a reply item is lost",
			mearas_link_conn_peer(s->conn));
		session_item_free(s, &gone);
		session_defer_error(s, cudaErrorMemoryAllocation);
		return;
	}
	s->q[s->qhead + s->qlen++] = *it;
	__atomic_store_n(&s->qbytes, s->qbytes + session_item_cost(it), __ATOMIC_RELAXED);
}

bool remote_session_queue_over(struct remote_session *s)
{
	return __atomic_load_n(&s->qbytes, __ATOMIC_RELAXED) >= REMOTE_QUEUE_SOFT;
}

/* The ranges of a graph launch in flight, taken from the budget. */
void session_ranges_free(struct remote_session *s, struct mearas_span *r, uint32_t n)
{
	if (r) {
		free(r);
		remote_budget_give(&s->budget, (uint64_t)n * sizeof(*r));
	}
}

void session_push(struct remote_session *s, const struct out_item *it)
{
	pthread_mutex_lock(&s->qlock);
	session_queue_push(s, it);
	pthread_mutex_unlock(&s->qlock);
}

void session_push_cqe(struct remote_session *s, uint32_t cq, const struct mearas_cqe *c)
{
	struct out_item it = { .type = OUT_CQE, .cq = cq, .cqe = *c };

	session_push(s, &it);
}

void session_push_error(struct remote_session *s, const struct mearas_sqe *e, int status)
{
	struct mearas_cqe c = { .user_data = e->user_data, .status = status };

	if (e->flags & MEARAS_SQE_WANT_CQE) {
		session_push_cqe(s, e->cq, &c);
		session_notify_if_sleeping(s);
	}
}

/* A record sent with REMOTE_REC_WANT_DONE has written all it will write. */
void session_push_done(struct remote_session *s, uint32_t id)
{
	struct out_item it = { .type = OUT_DONE, .done_id = id };

	session_push(s, &it);
}

/* A record not run: its error, and its DONE if one is owed. */
void session_drop_record(struct remote_session *s, const struct mearas_sqe *e, int status, bool done_owed, uint32_t id)
{
	session_push_error(s, e, status);
	if (done_owed)
		session_push_done(s, id);
}

/* ---- the session's life ---- */

struct remote_session *remote_session_new(struct mearas_link_conn *c, bool graphs)
{
	struct remote_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->conn = c;
	s->sock = s->kick_fd = s->out_fd = s->err_fd = -1;
	s->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&s->qlock, NULL);
	pthread_mutex_init(&s->harvest_lock, NULL);
	s->reply = malloc(REMOTE_REPLY_MAX);
	/* only a device with graphs captures: elsewhere nothing is followed */
	s->caps = graphs ? remote_captures_new() : NULL;
	s->mapped = remote_mapped_new();
	s->budget.who = mearas_link_conn_peer(c);
	if (s->mapped)
		remote_mapped_set_budget(s->mapped, &s->budget);
	remote_captures_set_budget(s->caps, &s->budget);
	if (remote_tokens_init(&s->tokens, TOKENS_CAP) || !s->reply || !s->mapped || (graphs && !s->caps) ||
	    s->notify_fd < 0)
		__atomic_store_n(&s->ready, -1, __ATOMIC_RELEASE);
	return s;
}

void remote_session_free(struct remote_session *s)
{
	if (s->notify_fd >= 0)
		close(s->notify_fd);
	for (size_t i = 0; i < s->qlen; i++)
		session_item_free(s, &s->q[s->qhead + i]);
	free(s->q);
	/* the graph launches in flight hold ranges; the scan ends at the last token in use */
	for (uint32_t i = 0, left = s->tokens.used; s->tokens.e && left && i < s->tokens.cap; i++) {
		if (s->tokens.e[i].used) {
			session_ranges_free(s, s->tokens.e[i].ranges, s->tokens.e[i].nranges);
			left--;
		}
	}
	remote_captures_free(s->caps);
	remote_mapped_free(s->mapped);
	free(s->tokens.e);
	free(s->tokens.tok);
	free(s->reply);
	free(s->held.v);
	free(s->fresh.v);
	pthread_mutex_destroy(&s->qlock);
	pthread_mutex_destroy(&s->harvest_lock);
	free(s);
}

void remote_session_map(struct remote_session *s, uint8_t *region, uint64_t region_addr)
{
	struct mearas_region_hdr *hdr = (struct mearas_region_hdr *)region;
	struct mearas_vgpu_layout l = mearas_vgpu_layout(hdr->sq_entries, hdr->cq_entries, hdr->arena_size,
							 hdr->nthreads);
	uint8_t *blk = region + hdr->vgpu_off[0];

	mearas_vgpu_rings_at(&s->rings, blk, &l, MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES, MEARAS_ARENA_SIZE);
	mearas_sqp_init(&s->sq, &s->rings);
	for (unsigned t = 0; t < hdr->nthreads && t < MEARAS_MAX_THREADS; t++)
		mearas_cqc_init(&s->cq[t], &s->rings, t);
	s->data = region + hdr->data_off;
	s->worker_data_va = region_addr + hdr->data_off;
	s->data_size = hdr->data_size;
	/* wakeups are asked for when the session thread sleeps (cq_prepare_sleep) */
}

void remote_session_start(struct remote_session *s, uint64_t link_mem)
{
	/* published with ready: nothing is taken from the budget before */
	s->budget.limit = link_mem ? link_mem : s->data_size + REMOTE_LINK_MEM_EXTRA;
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
}

/* ---- what the link brings ---- */

static void mapped_message(struct remote_session *s, const uint8_t *data, size_t len)
{
	struct remote_mapped_msg m;

	memcpy(&m, data, sizeof(m));
	if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) == 1 && m.len == len - sizeof(m) &&
	    m.off <= s->data_size && m.len <= s->data_size - m.off)
		remote_mapped_write(s->mapped, s->data, m.off, data + sizeof(m), m.len);
	else
		log_warn("remote link %s: mapped bytes out of bounds dropped", mearas_link_conn_peer(s->conn));
}

static void reap_message(struct remote_session *s, uint64_t seq)
{
	bool ok;

	pthread_mutex_lock(&s->qlock);
	ok = s->nreap < REMOTE_REAPS_MAX;
	if (ok)
		s->reap_seq[s->nreap++] = seq;
	pthread_mutex_unlock(&s->qlock);
	if (ok)
		session_notify_if_sleeping(s);
	else
		log_warn("remote link %s: more than %u REAP calls outstanding: one dropped",
			 mearas_link_conn_peer(s->conn), REMOTE_REAPS_MAX);
}

/* An OPEN request: its kind is its third word (the first is its magic).
 * Read with memcpy: a message lies at any alignment in the link's batch. */
static bool is_open(const uint8_t *data, size_t len, bool wants_reply)
{
	uint32_t kind;

	if (!wants_reply || len < sizeof(struct remote_open_req))
		return false;
	memcpy(&kind, data + offsetof(struct remote_open_req, kind), sizeof(kind));
	return kind == REMOTE_MSG_OPEN;
}

bool remote_session_message(struct remote_session *s, uint64_t seq, bool wants_reply, const void *data,
			    size_t len)
{
	uint32_t kind;

	if (len < sizeof(kind))
		return false;
	memcpy(&kind, data, sizeof(kind));
	if (kind == REMOTE_MSG_RECORD)
		session_feed_record(s, data, len);
	else if (kind == REMOTE_MSG_MAPPED && len >= sizeof(struct remote_mapped_msg))
		mapped_message(s, data, len);
	else if (kind == REMOTE_MSG_REAP && wants_reply)
		reap_message(s, seq);
	else if (is_open(data, len, wants_reply))
		return true;
	else
		log_warn("remote link %s: unknown message (kind %u) ignored", mearas_link_conn_peer(s->conn), kind);
	return false;
}

void remote_session_chunk(struct remote_session *s, uint64_t tag, uint64_t offset, const void *data, size_t len)
{
	if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) != 1)
		return;
	/* host-to-device bytes for the next record: tag = data-area offset */
	if (tag > s->data_size || offset > s->data_size - tag || len > s->data_size - tag - offset)
		return;
	if (data != s->data + tag + offset)
		memcpy(s->data + tag + offset, data, len);
	remote_mapped_absorb(s->mapped, s->data, tag + offset, len);
}

/* Bulk bytes are read straight into the worker's data area when in bounds. */
void *remote_session_chunk_dest(struct remote_session *s, uint64_t tag, uint64_t offset, size_t len)
{
	if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) != 1)
		return NULL;
	if (tag <= s->data_size && offset <= s->data_size - tag && len <= s->data_size - tag - offset)
		return s->data + tag + offset;
	return NULL;
}
