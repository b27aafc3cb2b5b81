// SPDX-License-Identifier: MIT
/*
 * A remote vGPU's session on the serving node, completions out (session.h):
 * the session thread reads the worker's completions (tokens back to the
 * forwarder's user_data, device-to-host rows, DONE marks, device output,
 * the device's changes to mapped memory) into the reply queue, in an order
 * that never lets a completion overtake bytes the client may read, and
 * builds each REAP reply from the head of the queue.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capture.h"
#include "core/deferred.h"
#include "mapped.h"
#include "mearas/hoptrace.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "session_internal.h"

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
			session_defer_error(s, cudaErrorMemoryAllocation);
			continue; /* read and dropped: the worker must not block on its pipe */
		}
		it.bytes = malloc((size_t)n);
		if (!it.bytes) {
			remote_budget_give(&s->budget, (uint64_t)n);
			return;
		}
		memcpy(it.bytes, buf, (size_t)n);
		it.nbytes = (size_t)n;
		session_push(s, &it);
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
			session_defer_error(s, cudaErrorMemoryAllocation);
			return -1;
		}
		memcpy(it.bytes, bytes + done, n);
		session_push(s, &it);
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
				session_push(s, &d);
			}
			if (t.capture_begin && c.status)
				remote_captures_begin_failed(s->caps, t.stream_key);
			for (uint32_t i = 0; c.status == 0 && i < t.nranges; i++) {
				const struct mearas_span *r = &t.ranges[i];
				struct out_item d = { .type = OUT_DATA, .off = r->off, .width = r->width,
						      .pitch = r->pitch, .rows = r->rows };

				absorb_rows(s, r->off, r->width, r->pitch, r->rows);
				session_push(s, &d);
			}
			session_ranges_free(s, t.ranges, t.nranges);
			if (t.want_done)
				session_push_done(s, t.done_id); /* after its data */
			if (!t.want_cqe) {
				/* an asynchronous copy: its error is reported by a later sync, as in CUDA */
				deferred_keep(&s->held_error, c.status);
				continue;
			}
			c.status = deferred_report(&s->held_error, t.op, c.status);
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

	session_ranges_free(s, t->ranges, t->nranges);
	if (t->want_cqe) {
		struct out_item it = { .type = OUT_CQE, .cq = t->cq, .cqe = c };

		session_queue_push(s, &it);
	}
	if (t->want_done) {
		struct out_item it = { .type = OUT_DONE, .done_id = t->done_id };

		session_queue_push(s, &it);
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
	session_queue_push(s, &it);
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
	bool striped;

	*r = (struct reply_build){ .buf = s->reply };
	/* the link's data connections, once they are all up (then for good) */
	if (!__atomic_load_n(&s->streams, __ATOMIC_RELAXED) && s->conn)
		__atomic_store_n(&s->streams, mearas_link_conn_streams(s->conn), __ATOMIC_RELAXED);
	striped = __atomic_load_n(&s->streams, __ATOMIC_RELAXED) > 0;
	while (s->qlen) {
		struct out_item *it = &s->q[s->qhead];
		uint64_t cost = session_item_cost(it);

		if (it->type == OUT_CQE) {
			struct remote_item_cqe ic = { .cq = it->cq, .cqe = it->cqe };

			if (!put_item(r, REMOTE_ITEM_CQE, &ic, sizeof(ic), NULL, 0, false))
				break;
		} else if (it->type == OUT_DATA) {
			bool full = false;

			while (it->row < it->rows) {
				size_t room = REMOTE_REPLY_MAX - r->len - r->bulk_bytes, n;
				struct remote_item_data d = { .off = it->off + it->row * it->pitch + it->col };

				/* the larger of the two items where either may come */
				size_t ilen = striped ? sizeof(struct remote_item_data_bulk) : sizeof(d);

				if (room <= sizeof(struct remote_item_hdr) + ilen) {
					full = true;
					break;
				}
				n = room - sizeof(struct remote_item_hdr) - ilen;
				if (n > it->width - it->col)
					n = it->width - it->col;
				if (striped && n >= REMOTE_STRIPE_MIN) {
					/* over the data connections, before the reply */
					struct remote_item_data_bulk b = { .off = d.off, .len = n };

					if (r->nbulk == REMOTE_REPLY_BULK_MAX ||
					    !put_item(r, REMOTE_ITEM_DATA_BULK, &b, sizeof(b), NULL, 0, false)) {
						full = true;
						break;
					}
					r->bulk[r->nbulk++] = (struct span_out){ d.off, n };
					r->bulk_bytes += n;
				} else if (!put_item(r, REMOTE_ITEM_DATA, &d, sizeof(d), s->data + d.off, n,
						     n >= REMOTE_REF_MIN)) {
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
			session_item_free(s, it); /* copied into the reply buffer */
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
			session_item_free(s, it); /* copied into the reply buffer */
		}
		s->qhead++;
		s->qlen--;
		__atomic_store_n(&s->qbytes, s->qbytes - cost, __ATOMIC_RELAXED);
	}
	if (!s->qlen)
		s->qhead = 0;
}

bool remote_session_reply_small(const struct remote_session *s)
{
	uint64_t bytes = 0;

	if (!s->nreap)
		return true; /* nothing goes out */
	for (size_t i = 0; i < s->qlen && bytes <= REMOTE_REPLY_SMALL; i++) {
		const struct out_item *it = &s->q[s->qhead + i];

		bytes += sizeof(struct remote_item_hdr) + sizeof(struct remote_item_cqe) + it->nbytes;
		if (it->type == OUT_DATA)
			bytes += (it->rows - it->row) * it->width - it->col;
	}
	return bytes <= REMOTE_REPLY_SMALL;
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
			session_push(s, &held->v[i]);
			mearas_hop(MEARAS_HOP_srv_collected);
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
