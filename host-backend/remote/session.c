// SPDX-License-Identifier: MIT
/*
 * A remote vGPU's session on the remote node (remote_session.h): the link
 * thread turns the client node's RECORD messages into records of the
 * worker's submission ring (payloads into its arena, data into its data
 * area, user_data replaced by a token), follows HOST_MAPPED ranges and bulk
 * chunks; the session thread reads the worker's completions back (tokens,
 * device-to-host data, DONE marks, device output) into a queue that REAP
 * replies drain, oldest first. The client node is not trusted: every length,
 * offset and range it sends is checked against the session's own view of
 * the data area and rings.
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
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mearas/clock.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "session.h"
#include "core/worker.h"

#define TOKENS_CAP (1u << 16)
#define SPACE_WAIT_NS (2ull * 1000 * 1000 * 1000)

void remote_session_notify(struct remote_session *s)
{
	uint64_t one = 1;

	if (s->notify_fd >= 0 && write(s->notify_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("remote session: notify: %s", strerror(errno));
}

/* After queueing work for the session thread: wake it only if it sleeps
 * (pairs with the fence in harvest before it rechecks and sleeps). */
static void notify_if_sleeping(struct remote_session *s)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&s->sleeping, __ATOMIC_RELAXED))
		remote_session_notify(s);
}

/* A refusal that no completion of its own reports: the next synchronizing
 * call of the link does (as CUDA reports asynchronous errors). */
static void defer_error(struct remote_session *s, int status)
{
	int none = 0;

	__atomic_compare_exchange_n(&s->budget_error, &none, status, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Bytes an item holds in the queue (its own, and what it owns). */
static uint64_t item_cost(const struct out_item *it)
{
	return sizeof(*it) + (it->bytes ? it->nbytes : 0);
}

/* An item's bytes (taken from the budget by whoever made them) are gone. */
static void item_free(struct remote_session *s, struct out_item *it)
{
	if (it->bytes) {
		free(it->bytes);
		remote_budget_give(&s->budget, it->nbytes);
		it->bytes = NULL;
	}
}

/* queue lock held */
static void queue_push(struct remote_session *s, const struct out_item *it)
{
	/* The queue is bounded by itself, not by the budget: a link whose budget
	 * went to shadows must still get the completions that report it. Scans
	 * stop at REMOTE_QUEUE_SOFT; only records' own errors come on top. */
	bool lost = s->qbytes + item_cost(it) > REMOTE_QUEUE_MAX;

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
		item_free(s, &gone);
		defer_error(s, cudaErrorMemoryAllocation);
		return;
	}
	s->q[s->qhead + s->qlen++] = *it;
	__atomic_store_n(&s->qbytes, s->qbytes + item_cost(it), __ATOMIC_RELAXED);
}

bool remote_session_queue_over(struct remote_session *s)
{
	return __atomic_load_n(&s->qbytes, __ATOMIC_RELAXED) >= REMOTE_QUEUE_SOFT;
}

/* The ranges of a graph launch in flight, taken from the budget. */
static void ranges_free(struct remote_session *s, struct mearas_span *r, uint32_t n)
{
	if (r) {
		free(r);
		remote_budget_give(&s->budget, (uint64_t)n * sizeof(*r));
	}
}

static void push_locked(struct remote_session *s, const struct out_item *it)
{
	pthread_mutex_lock(&s->qlock);
	queue_push(s, it);
	pthread_mutex_unlock(&s->qlock);
}

static void push_cqe(struct remote_session *s, uint32_t cq, const struct mearas_cqe *c)
{
	struct out_item it = { .type = OUT_CQE, .cq = cq, .cqe = *c };

	push_locked(s, &it);
}

static void push_error(struct remote_session *s, const struct mearas_sqe *e, int status)
{
	struct mearas_cqe c = { .user_data = e->user_data, .status = status };

	if (e->flags & MEARAS_SQE_WANT_CQE) {
		push_cqe(s, e->cq, &c);
		notify_if_sleeping(s);
	}
}

/* A record sent with REMOTE_REC_WANT_DONE has written all it will write. */
static void push_done(struct remote_session *s, uint32_t id)
{
	struct out_item it = { .type = OUT_DONE, .done_id = id };

	push_locked(s, &it);
}

/* A record not run: its error, and its DONE if one is owed. */
static void drop_record(struct remote_session *s, const struct mearas_sqe *e, int status, bool done_owed, uint32_t id)
{
	push_error(s, e, status);
	if (done_owed)
		push_done(s, id);
}

/* ---- the fake guest: records into the worker's submission ring ---- */

static bool wait_until(struct remote_session *s, bool (*cond)(struct remote_session *, uint32_t), uint32_t arg)
{
	uint64_t start = mearas_mono_ns();

	while (!cond(s, arg)) {
		if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) != 1 || __atomic_load_n(&s->closing, __ATOMIC_ACQUIRE))
			return false;
		if (mearas_ring_needs_wakeup(s->sq.ctl)) {
			uint64_t one = 1;

			if (write(s->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
				return false;
		}
		if (mearas_mono_ns() - start > SPACE_WAIT_NS) {
			/* the link thread must not stall past the peer's dead bound */
			log_warn("remote session %s: worker ring stays full", mearas_link_conn_peer(s->conn));
			return false;
		}
		usleep(20);
	}
	return true;
}

static bool sq_space(struct remote_session *s, uint32_t unused)
{
	(void)unused;
	return mearas_sqp_has_slot(&s->sq);
}

static bool arena_space(struct remote_session *s, uint32_t need)
{
	return mearas_sqp_arena_has(&s->sq, need);
}

static bool d2h_rows(const struct remote_session *s, const struct mearas_sqe *e, struct remote_token *t)
{
	struct mearas_span r;

	if (!remote_d2h_range(e, s->data_size, &r))
		return false;
	t->off = r.off;
	t->width = r.width;
	t->pitch = r.pitch;
	t->rows = r.rows;
	return true;
}

static void feed_record(struct remote_session *s, const uint8_t *msg, size_t len)
{
	struct remote_record_hdr h;
	struct mearas_sqe sqe;
	const uint8_t *payload, *data, *arena_payload = NULL;
	struct remote_token t = { 0 };
	bool d2h, done_owed, wake;

	if (len < sizeof(h))
		return;
	memcpy(&h, msg, sizeof(h));
	payload = msg + sizeof(h);
	data = payload + h.payload_len;
	/* a device-to-host copy the client follows: one DONE, whatever becomes of it */
	done_owed = (h.flags & REMOTE_REC_WANT_DONE) != 0;
	if (h.payload_len > len - sizeof(h) ||
	    ((h.flags & REMOTE_REC_DATA_INLINE) && h.data_len > len - sizeof(h) - h.payload_len)) {
		log_warn("remote session %s: malformed record dropped", mearas_link_conn_peer(s->conn));
		drop_record(s, &h.sqe, cudaErrorInvalidValue, done_owed, h.done_id);
		return;
	}
	sqe = h.sqe;
	if (h.flags & REMOTE_REC_REFUSED) {
		/* over the client node's budget (it logged it): the same error here,
		 * and the range at that offset is no longer followed, as there */
		if (sqe.op == MEARAS_OP_HOST_MAPPED && host_mapped_valid(&sqe, s->data_size))
			remote_mapped_set(s->mapped, s->data, sqe.args.HOST_MAPPED.off, sqe.args.HOST_MAPPED.size, false);
		if (!(sqe.flags & MEARAS_SQE_WANT_CQE))
			defer_error(s, cudaErrorMemoryAllocation);
		drop_record(s, &sqe, cudaErrorMemoryAllocation, done_owed, h.done_id);
		return;
	}
	if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) != 1) {
		drop_record(s, &sqe, cudaErrorDevicesUnavailable, done_owed, h.done_id);
		return;
	}
	if ((h.flags & REMOTE_REC_DATA_INLINE) && h.data_off <= s->data_size &&
	    h.data_len <= s->data_size - h.data_off)
	{
		memcpy(s->data + h.data_off, data, h.data_len);
		/* host bytes a copy carried: not a device change of a mapped range */
		remote_mapped_absorb(s->mapped, s->data, h.data_off, h.data_len);
	}
	if (sqe.op == MEARAS_OP_HOST_MAPPED && host_mapped_valid(&sqe, s->data_size) &&
	    !remote_mapped_set(s->mapped, s->data, sqe.args.HOST_MAPPED.off, sqe.args.HOST_MAPPED.size,
			       sqe.args.HOST_MAPPED.mapped != 0)) {
		/* over budget (logged) or out of memory: posted without a completion,
		 * so the next synchronizing call reports it */
		if (sqe.flags & MEARAS_SQE_WANT_CQE)
			push_error(s, &sqe, cudaErrorMemoryAllocation);
		else
			defer_error(s, cudaErrorMemoryAllocation);
		return;
	}
	if (!remote_captures_note(s->caps, &sqe)) {
		drop_record(s, &sqe, cudaErrorMemoryAllocation, done_owed, h.done_id);
		return;
	}
	d2h = d2h_rows(s, &sqe, &t);
	if (d2h) {
		struct mearas_span r = { .off = t.off, .pitch = t.pitch, .width = t.width, .rows = t.rows };
		bool ok;

		/* no fence on a capturing stream: the bytes come with the graph's launches */
		if (remote_captures_take_copy(s->caps, &sqe, &r, &ok)) {
			d2h = false;
			if (!ok) {
				drop_record(s, &sqe, cudaErrorMemoryAllocation, done_owed, h.done_id);
				return;
			}
		}
	}
	if (done_owed && !d2h) {
		/* nothing to send back now: captured (the bytes come with the graph's
		 * launches), or rows outside the data area (the worker refuses it) */
		push_done(s, h.done_id);
		done_owed = false;
	}
	if (!remote_captures_launch_ranges(s->caps, &sqe, &t.ranges, &t.nranges)) {
		push_error(s, &sqe, cudaErrorMemoryAllocation);
		return;
	}
	if (t.ranges && !remote_budget_take(&s->budget, (uint64_t)t.nranges * sizeof(*t.ranges), "a graph launch's ranges")) {
		free(t.ranges);
		drop_record(s, &sqe, cudaErrorMemoryAllocation, done_owed, h.done_id);
		return;
	}
	if (s->caps && sqe.op == MEARAS_OP_CAPTURE_BEGIN) {
		/* its completion tells whether the stream really captures (errors stay deferred) */
		t.capture_begin = 1;
		t.stream_key = remote_stream_key(&sqe);
	}
	if ((sqe.flags & MEARAS_SQE_WANT_CQE) || d2h || t.nranges || t.capture_begin) {
		uint64_t tok;

		t.user_data = sqe.user_data;
		t.cq = sqe.cq;
		t.op = sqe.op;
		t.want_cqe = (sqe.flags & MEARAS_SQE_WANT_CQE) != 0;
		t.want_done = done_owed;
		t.done_id = h.done_id;
		if (!d2h)
			t.rows = 0;
		tok = remote_tokens_add(&s->tokens, &t);
		if (!tok) {
			ranges_free(s, t.ranges, t.nranges);
			drop_record(s, &sqe, cudaErrorLaunchOutOfResources, done_owed, h.done_id);
			return;
		}
		sqe.user_data = tok;
		sqe.flags |= MEARAS_SQE_WANT_CQE;
	}
	if (h.flags & REMOTE_REC_BAD_PAYLOAD) {
		/* out of bounds on the client: the worker refuses it with its own error */
		sqe.flags |= MEARAS_SQE_PAYLOAD_ARENA;
		sqe.payload_off = MEARAS_ARENA_SIZE;
		sqe.payload_len = 1;
	} else if (sqe.flags & MEARAS_SQE_PAYLOAD_ARENA) {
		/* the client's arena payload travelled with the record: into this
		 * worker's ring, inline or in its arena (placed once there is room) */
		sqe.flags &= (uint16_t)~MEARAS_SQE_PAYLOAD_ARENA;
		sqe.payload_len = h.payload_len;
		if (h.payload_len <= MEARAS_SQE_INLINE) {
			memcpy(sqe.inline_payload, payload, h.payload_len);
		} else if (h.payload_len > MEARAS_ARENA_SIZE / 2 ||
			   !wait_until(s, arena_space, mearas_sqp_arena_need(&s->sq, h.payload_len))) {
			sqe.flags |= MEARAS_SQE_PAYLOAD_ARENA;
			sqe.payload_off = MEARAS_ARENA_SIZE;
		} else {
			arena_payload = payload;
		}
	}
	if (!wait_until(s, sq_space, 0)) {
		struct remote_token dropped = { 0 };

		if (remote_tokens_take(&s->tokens, sqe.user_data, &dropped) && dropped.want_cqe) {
			struct mearas_cqe c = { .user_data = dropped.user_data, .status = cudaErrorDevicesUnavailable };

			push_cqe(s, dropped.cq, &c);
			notify_if_sleeping(s);
		}
		if (dropped.want_done)
			push_done(s, dropped.done_id);
		ranges_free(s, dropped.ranges, dropped.nranges);
		return;
	}
	wake = arena_payload ? mearas_sqp_push(&s->sq, &sqe, arena_payload, h.payload_len)
			     : mearas_sqp_push_record(&s->sq, &sqe);
	__atomic_store_n(&s->last_active_ns, mearas_mono_ns(), __ATOMIC_RELAXED);
	if (wake) {
		uint64_t one = 1;

		if (write(s->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("remote session: kick: %s", strerror(errno));
	}
}


/* ---- completions back to the client node ---- */

static void read_output(struct remote_session *s, int fd, uint32_t which)
{
	for (;;) {
		uint8_t buf[65536];
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		struct out_item it = { .type = OUT_OUTPUT, .fd = which };

		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			return;
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return;
		if (!remote_budget_take(&s->budget, (uint64_t)n, "device output")) {
			defer_error(s, cudaErrorMemoryAllocation);
			continue; /* read and dropped: the worker must not block on its pipe */
		}
		it.bytes = malloc((size_t)n);
		if (!it.bytes) {
			remote_budget_give(&s->budget, (uint64_t)n);
			return;
		}
		memcpy(it.bytes, buf, (size_t)n);
		it.nbytes = (size_t)n;
		push_locked(s, &it);
	}
}

static void held_add(struct held *h, const struct out_item *it)
{
	if (h->n == h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 64;
		struct out_item *nv = realloc(h->v, ncap * sizeof(*nv));

		if (!nv)
			return;
		h->v = nv;
		h->cap = ncap;
	}
	h->v[h->n++] = *it;
}

/* A device-to-host copy's rows go to the client as they are now: where they
 * fall in a mapped range, they are not a change to send again. */
static void absorb_rows(struct remote_session *s, uint64_t off, uint64_t width, uint64_t pitch, uint64_t rows)
{
	if (!remote_mapped_any(s->mapped))
		return;
	for (uint64_t i = 0; i < rows; i++)
		remote_mapped_absorb(s->mapped, s->data, off + i * pitch, width);
}

/* remote_mapped emit: the device's changes to a mapped range, queued (a
 * copy: the range may change again before the reply goes) */
static int queue_mapped(void *ctx, uint64_t off, const uint8_t *bytes, uint64_t len)
{
	struct remote_session *s = ctx;

	for (uint64_t done = 0; done < len; done += REMOTE_MAPPED_PIECE) {
		uint64_t n = len - done < REMOTE_MAPPED_PIECE ? len - done : REMOTE_MAPPED_PIECE;
		struct out_item it = { .type = OUT_MAPPED, .off = off + done, .nbytes = n };

		if (remote_budget_take(&s->budget, n, "changed mapped bytes")) {
			it.bytes = malloc(n);
			if (!it.bytes)
				remote_budget_give(&s->budget, n);
		}
		if (!it.bytes) {
			log_err("remote session %s: no memory or budget left: mapped memory goes stale",
				mearas_link_conn_peer(s->conn));
			defer_error(s, cudaErrorMemoryAllocation);
			return -1;
		}
		memcpy(it.bytes, bytes + done, n);
		push_locked(s, &it);
	}
	return 0;
}

/* One pass over every completion slot: device-to-host data goes out at once,
 * completions are held for one more pass (see harvest). */
static void scan(struct remote_session *s, struct held *fresh)
{
	for (unsigned slot = 0; slot < s->nthreads; slot++) {
		struct mearas_cqe c;

		while (mearas_cqc_pop(&s->cq[slot], &c)) {
			struct out_item it = { .type = OUT_CQE, .cq = slot };
			struct remote_token t;

			if (c.flags & MEARAS_CQE_HOST_FUNC) {
				it.cqe = c;
				held_add(fresh, &it);
				continue;
			}
			if (!remote_tokens_take(&s->tokens, c.user_data, &t)) {
				log_warn("remote session %s: completion for unknown token %llu",
					 mearas_link_conn_peer(s->conn), (unsigned long long)c.user_data);
				continue;
			}
			if (t.rows && c.status == 0) {
				struct out_item d = { .type = OUT_DATA, .off = t.off, .width = t.width,
						      .pitch = t.pitch, .rows = t.rows };

				absorb_rows(s, t.off, t.width, t.pitch, t.rows);
				push_locked(s, &d);
			}
			if (t.capture_begin && c.status)
				remote_captures_begin_failed(s->caps, t.stream_key);
			for (uint32_t i = 0; c.status == 0 && i < t.nranges; i++) {
				const struct mearas_span *r = &t.ranges[i];
				struct out_item d = { .type = OUT_DATA, .off = r->off, .width = r->width,
						      .pitch = r->pitch, .rows = r->rows };

				absorb_rows(s, r->off, r->width, r->pitch, r->rows);
				push_locked(s, &d);
			}
			ranges_free(s, t.ranges, t.nranges);
			if (t.want_done)
				push_done(s, t.done_id); /* after its data */
			if (!t.want_cqe) {
				/* an asynchronous copy: its error is reported by a later sync, as in CUDA */
				if (c.status && !s->held_error)
					s->held_error = c.status;
				continue;
			}
			if (c.status == 0 && s->held_error && reports_deferred(t.op)) {
				c.status = s->held_error;
				s->held_error = 0;
			}
			if (c.status == 0 && reports_deferred(t.op) && __atomic_load_n(&s->budget_error, __ATOMIC_RELAXED))
				c.status = __atomic_exchange_n(&s->budget_error, 0, __ATOMIC_RELAXED);
			c.user_data = t.user_data;
			it.cqe = c;
			it.cq = t.cq;
			held_add(fresh, &it);
		}
	}
}

static void fail_token(void *ctx, const struct remote_token *t)
{
	struct remote_session *s = ctx;
	struct mearas_cqe c = { .user_data = t->user_data, .status = cudaErrorDevicesUnavailable };

	ranges_free(s, t->ranges, t->nranges);
	if (t->want_cqe) {
		struct out_item it = { .type = OUT_CQE, .cq = t->cq, .cqe = c };

		queue_push(s, &it);
	}
	if (t->want_done) {
		struct out_item it = { .type = OUT_DONE, .done_id = t->done_id };

		queue_push(s, &it);
	}
}

static void worker_gone(struct remote_session *s)
{
	static const char why[] = "the remote worker process exited";
	struct out_item it = { .type = OUT_FATAL };

	__atomic_store_n(&s->ready, -1, __ATOMIC_RELEASE);
	log_err("remote session %s: %s", mearas_link_conn_peer(s->conn), why);
	pthread_mutex_lock(&s->qlock);
	remote_tokens_fail(&s->tokens, fail_token, s);
	it.bytes = remote_budget_take(&s->budget, sizeof(why) - 1, "the worker's last words") ? malloc(sizeof(why)) : NULL;
	if (it.bytes) {
		memcpy(it.bytes, why, sizeof(why));
		it.nbytes = sizeof(why) - 1;
	}
	queue_push(s, &it);
	pthread_mutex_unlock(&s->qlock);
}

/* a reply the link refuses would lose the items built into it */
_Static_assert(REMOTE_REPLY_MAX <= MEARAS_LINK_MAX_MSG, "REAP replies must fit a link message");

static void rb_copy(struct reply_build *r, const void *p, size_t n)
{
	if (!n)
		return;
	memcpy(r->buf + r->used, p, n);
	if (r->last_in_buf)
		r->iov[r->n - 1].iov_len += n;
	else
		r->iov[r->n++] = (struct iovec){ r->buf + r->used, n };
	r->last_in_buf = true;
	r->used += n;
	r->len += n;
}

/* Room for one item with blen bytes of b (by reference if ref: b must stay valid until sent)? */
static bool put_item(struct reply_build *r, uint32_t type, const void *a, size_t alen, const void *b, size_t blen,
		     bool ref)
{
	struct remote_item_hdr ih = { .type = type, .len = (uint32_t)(alen + blen) };

	/* a reference needs up to 3 iov slots: header segment, bytes, next segment */
	if (r->len + sizeof(ih) + alen + blen > REMOTE_REPLY_MAX || r->n + 3 > MEARAS_LINK_REPLY_IOV_MAX)
		return false;
	rb_copy(r, &ih, sizeof(ih));
	rb_copy(r, a, alen);
	if (ref) {
		r->iov[r->n++] = (struct iovec){ (void *)b, blen };
		r->len += blen;
		r->last_in_buf = false;
	} else {
		rb_copy(r, b, blen);
	}
	return true;
}

/* queue lock held: fill a reply from the head of the queue */
static void build_reply(struct remote_session *s, struct reply_build *r)
{
	*r = (struct reply_build){ .buf = s->reply };
	while (s->qlen) {
		struct out_item *it = &s->q[s->qhead];
		uint64_t cost = item_cost(it);

		if (it->type == OUT_CQE) {
			struct remote_item_cqe ic = { .cq = it->cq, .cqe = it->cqe };

			if (!put_item(r, REMOTE_ITEM_CQE, &ic, sizeof(ic), NULL, 0, false))
				break;
		} else if (it->type == OUT_DATA) {
			bool full = false;

			while (it->row < it->rows) {
				size_t room = REMOTE_REPLY_MAX - r->len, n;
				struct remote_item_data d = { .off = it->off + it->row * it->pitch + it->col };

				if (room <= sizeof(struct remote_item_hdr) + sizeof(d)) {
					full = true;
					break;
				}
				n = room - sizeof(struct remote_item_hdr) - sizeof(d);
				if (n > it->width - it->col)
					n = it->width - it->col;
				if (!put_item(r, REMOTE_ITEM_DATA, &d, sizeof(d), s->data + d.off, n, n >= REMOTE_REF_MIN)) {
					full = true;
					break;
				}
				it->col += n;
				if (it->col == it->width) {
					it->row++;
					it->col = 0;
				}
			}
			if (full)
				break;
		} else if (it->type == OUT_MAPPED) {
			struct remote_item_data d = { .off = it->off };

			if (!put_item(r, REMOTE_ITEM_MAPPED, &d, sizeof(d), it->bytes, it->nbytes, false))
				break;
			item_free(s, it); /* copied into the reply buffer */
		} else if (it->type == OUT_DONE) {
			struct remote_item_done d = { .id = it->done_id };

			if (!put_item(r, REMOTE_ITEM_DONE, &d, sizeof(d), NULL, 0, false))
				break;
		} else {
			struct remote_item_output o = { .fd = it->fd };
			bool ok = it->type == OUT_FATAL
					  ? put_item(r, REMOTE_ITEM_FATAL, it->bytes, it->nbytes, NULL, 0, false)
					  : put_item(r, REMOTE_ITEM_OUTPUT, &o, sizeof(o), it->bytes, it->nbytes, false);

			if (!ok)
				break;
			item_free(s, it); /* copied into the reply buffer */
		}
		s->qhead++;
		s->qlen--;
		__atomic_store_n(&s->qbytes, s->qbytes - cost, __ATOMIC_RELAXED);
	}
	if (!s->qlen)
		s->qhead = 0;
}

bool remote_session_next_reply(struct remote_session *s, uint64_t *seq, struct reply_build *r)
{
	if (!s->nreap || !s->qlen)
		return false;
	build_reply(s, r);
	if (!r->len)
		return false;
	*seq = s->reap_seq[0];
	memmove(s->reap_seq, s->reap_seq + 1, --s->nreap * sizeof(s->reap_seq[0]));
	return true;
}

void remote_session_worker_gone(struct remote_session *s, struct held *fresh)
{
	scan(s, fresh);
	worker_gone(s);
}

void remote_session_collect(struct remote_session *s, struct held *held, struct held *fresh)
{
	/* completions read by a pass get their second pass at once, so
	 * that they leave in the same reply as their data */
	for (int pass = 0; pass < 2 && __atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) == 1; pass++) {
		fresh->n = 0;
		scan(s, fresh);
		/* the device's changes to mapped memory go before the completions
		 * that let the client look at it */
		if (held->n)
			remote_mapped_diff(s->mapped, s->data, queue_mapped, s);
		for (size_t i = 0; i < held->n; i++) {
			if (held->v[i].cqe.flags & MEARAS_CQE_OUTPUT) {
				read_output(s, s->out_fd, 1);
				read_output(s, s->err_fd, 2);
			}
			push_locked(s, &held->v[i]);
		}
		{
			struct held tmp = *held;

			*held = *fresh;
			*fresh = tmp;
		}
		if (!held->n)
			break;
	}
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
		item_free(s, &s->q[s->qhead + i]);
	free(s->q);
	/* the graph launches in flight hold ranges; the scan ends at the last token in use */
	for (uint32_t i = 0, left = s->tokens.used; s->tokens.e && left && i < s->tokens.cap; i++) {
		if (s->tokens.e[i].used) {
			ranges_free(s, s->tokens.e[i].ranges, s->tokens.e[i].nranges);
			left--;
		}
	}
	remote_captures_free(s->caps);
	remote_mapped_free(s->mapped);
	free(s->tokens.e);
	free(s->tokens.tok);
	free(s->reply);
	pthread_mutex_destroy(&s->qlock);
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
		notify_if_sleeping(s);
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
		feed_record(s, data, len);
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
