// SPDX-License-Identifier: MIT
/*
 * A remote vGPU's session on the serving node, records in (session.h): the
 * link thread acts as the worker's guest. A RECORD message's payload goes
 * into the worker's arena, its data into the data area, its user_data is
 * replaced by a token (device-to-host copies, graph launches and captures
 * are followed so that their bytes go back), and the record into the
 * worker's submission ring. A record that cannot run is answered here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "core/ranges.h"
#include "mapped.h"
#include "mearas/clock.h"
#include "mearas/hoptrace.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "session_internal.h"

#define SPACE_WAIT_NS (2ull * 1000 * 1000 * 1000)

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
	uint64_t len;

	if (!record_writes_data(e, s->data_size, &r, &len))
		return false;
	t->off = r.off;
	t->width = r.width;
	t->pitch = r.pitch;
	t->rows = r.rows;
	return true;
}

void session_feed_record(struct remote_session *s, const uint8_t *msg, size_t len)
{
	struct remote_record_hdr h;
	struct mearas_sqe sqe;
	const uint8_t *payload, *data, *arena_payload = NULL;
	struct remote_token t = { 0 };
	bool d2h, done_owed, wake;

	if (len < sizeof(h))
		return;
	memcpy(&h, msg, sizeof(h));
	if (h.sqe.flags & MEARAS_SQE_WANT_CQE)
		mearas_hop(MEARAS_HOP_srv_feed);
	payload = msg + sizeof(h);
	data = payload + h.payload_len;
	/* a device-to-host copy the client follows: one DONE, whatever becomes of it */
	done_owed = (h.flags & REMOTE_REC_WANT_DONE) != 0;
	if (h.payload_len > len - sizeof(h) ||
	    ((h.flags & REMOTE_REC_DATA_INLINE) && h.data_len > len - sizeof(h) - h.payload_len)) {
		log_warn("remote session %s: malformed record dropped", mearas_link_conn_peer(s->conn));
		session_drop_record(s, &h.sqe, cudaErrorInvalidValue, done_owed, h.done_id);
		return;
	}
	sqe = h.sqe;
	if (h.flags & REMOTE_REC_REFUSED) {
		/* over the forwarding node's budget (it logged it): the same error here,
		 * and the range at that offset is no longer followed, as there */
		if (sqe.op == MEARAS_OP_HOST_MAPPED && host_mapped_valid(&sqe, s->data_size))
			remote_mapped_set(s->mapped, s->data, sqe.args.HOST_MAPPED.off, sqe.args.HOST_MAPPED.size, false);
		if (!(sqe.flags & MEARAS_SQE_WANT_CQE))
			session_defer_error(s, cudaErrorMemoryAllocation);
		session_drop_record(s, &sqe, cudaErrorMemoryAllocation, done_owed, h.done_id);
		return;
	}
	if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) != 1) {
		session_drop_record(s, &sqe, cudaErrorDevicesUnavailable, done_owed, h.done_id);
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
			session_push_error(s, &sqe, cudaErrorMemoryAllocation);
		else
			session_defer_error(s, cudaErrorMemoryAllocation);
		if (done_owed)
			session_push_done(s, h.done_id);
		return;
	}
	if (!remote_captures_note(s->caps, &sqe)) {
		session_drop_record(s, &sqe, cudaErrorMemoryAllocation, done_owed, h.done_id);
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
				session_drop_record(s, &sqe, cudaErrorMemoryAllocation, done_owed, h.done_id);
				return;
			}
		}
	}
	if (done_owed && !d2h) {
		/* nothing to send back now: captured (the bytes come with the graph's
		 * launches), or rows outside the data area (the worker refuses it) */
		session_push_done(s, h.done_id);
		done_owed = false;
	}
	if (!remote_captures_launch_ranges(s->caps, &sqe, &t.ranges, &t.nranges)) {
		session_drop_record(s, &sqe, cudaErrorMemoryAllocation, done_owed, h.done_id);
		return;
	}
	if (t.ranges && !remote_budget_take(&s->budget, (uint64_t)t.nranges * sizeof(*t.ranges), "a graph launch's ranges")) {
		free(t.ranges);
		session_drop_record(s, &sqe, cudaErrorMemoryAllocation, done_owed, h.done_id);
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
			session_ranges_free(s, t.ranges, t.nranges);
			session_drop_record(s, &sqe, cudaErrorLaunchOutOfResources, done_owed, h.done_id);
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

			session_push_cqe(s, dropped.cq, &c);
			session_notify_if_sleeping(s);
		}
		if (dropped.want_done)
			session_push_done(s, dropped.done_id);
		session_ranges_free(s, dropped.ranges, dropped.nranges);
		return;
	}
	wake = arena_payload ? mearas_sqp_push(&s->sq, &sqe, arena_payload, h.payload_len)
			     : mearas_sqp_push_record(&s->sq, &sqe);
	__atomic_store_n(&s->last_active_ns, mearas_mono_ns(), __ATOMIC_RELAXED);
	mearas_hop(MEARAS_HOP_srv_fed);
	if (wake) {
		uint64_t one = 1;

		if (write(s->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("remote session: kick: %s", strerror(errno));
	}
}
