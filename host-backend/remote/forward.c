// SPDX-License-Identifier: MIT
/*
 * The forwarder (forward.h): opening a remote vGPU's link, and its thread,
 * which drains the vGPU's submission ring in order and posts each record on
 * the link with its arena payload and the data-area bytes it reads (less
 * those that device-to-host copies in flight write: forward_d2h.c), large
 * copies as pieces. Its batches go when the ring is drained, or with
 * --link-batch-us when a record is waited for.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/vgpustats.h"
#include "core/engine.h"
#include "core/exec.h"
#include "core/poller.h"
#include "core/ranges.h"
#include "core/worker.h"
#include "forward.h"
#include "mapped.h"
#include "mearas/clock.h"
#include "mearas/hoptrace.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "messages.h"
#include "remote_link.h"

#define TOKENS_CAP (1u << 16)
#define OPEN_TIMEOUT_MS 60000u

/* remote-link: where a chunk of device-to-host bytes the serving node sent
 * over the link's data connections lands (tag: the data-area offset of its
 * transfer), or NULL outside the data area (the link fails) */
static void *forward_bulk_dest(void *ctx, uint64_t tag, uint64_t offset, uint64_t total, size_t len)
{
	struct vgpu *v = ctx;
	uint64_t size = v->w->data_size;

	(void)total;
	if (tag > size || offset > size - tag || len > size - tag - offset) {
		log_warn("vGPU %u: remote bulk data out of the data area refused", v->index);
		return NULL;
	}
	return v->w->data + tag + offset;
}

static int forward_open(struct vgpu *v, int phys, uint64_t va_base, uint64_t va_size, struct mearas_devinfo *info,
			uint64_t *granularity, char *err, size_t errlen)
{
	const struct backend_config *cfg = v->w->cfg;
	const struct remote_target *t = &cfg->remote.target[v->index];
	struct mearas_link_config lc;
	struct remote_vgpu *rv = calloc(1, sizeof(*rv));
	struct remote_open_req req = { .magic = REMOTE_MAGIC, .version = REMOTE_VERSION,
				       .kind = REMOTE_MSG_OPEN, .gpu = t->gpu,
				       /* VM slots: their own windows, as on this node */
				       .va_window = v->w->va_index0 + v->index,
				       .nthreads = v->w->nthreads, .data_size = v->w->data_size,
				       .quota = cfg->quota[v->index],
				       .data_va = (uint64_t)(uintptr_t)v->w->data };
	struct remote_open_reply rep;
	size_t len = 0;
	int rc;

	if (!rv || remote_tokens_init(&rv->tokens, TOKENS_CAP) || !(rv->mapped = remote_mapped_new())) {
		snprintf(err, errlen, "vGPU %u: out of memory", v->index);
		return cudaErrorMemoryAllocation;
	}
	pthread_mutex_init(&rv->reap_lock, NULL);
	pthread_cond_init(&rv->reap_cond, NULL);
	pthread_mutex_init(&rv->d2h_lock, NULL);
	pthread_mutex_init(&rv->fwd_lock, NULL);
	rv->v = v;
	rv->d2h_lo = UINT64_MAX;
	for (unsigned i = 0; i < REAP_OUTSTANDING; i++) {
		rv->slot[i] = (struct reap_slot){ .v = v, .next_free = rv->free_slots };
		rv->free_slots = &rv->slot[i];
	}
	rv->nfree = REAP_OUTSTANDING;
	snprintf(rv->peer, sizeof(rv->peer), "%s:%u", t->host, t->port);
	rv->mapped_budget = (struct remote_budget){
		.limit = cfg->remote.link_mem ? cfg->remote.link_mem : v->w->data_size + REMOTE_LINK_MEM_EXTRA,
		.who = rv->peer };
	remote_mapped_set_budget(rv->mapped, &rv->mapped_budget);
	gethostname(req.node, sizeof(req.node) - 1);
	remote_link_config(&cfg->remote, &lc);
	lc.rx_spin_us = remote_spin_us(&cfg->remote, cfg->spin_us);
	lc.bulk_dest = forward_bulk_dest;
	lc.bulk_ctx = v;
	lc.rx_idle = forward_rx_idle;
	lc.rx_idle_ctx = rv;
	rc = mearas_link_connect(t->host, t->port, &lc, &rv->link);
	if (rc) {
		rv->link = NULL;
		snprintf(err, errlen, "remote vGPU %u: link to %s failed: %s%s", v->index, rv->peer, mearas_link_strerror(rc),
			 rc == MEARAS_LINK_E_AUTH ? " (cluster key refused: check --cluster-key-file on both nodes)" : "");
		return cudaErrorDevicesUnavailable;
	}
	rc = mearas_link_call(rv->link, &req, sizeof(req), &rep, sizeof(rep), &len, OPEN_TIMEOUT_MS);
	if (!rc && (len != sizeof(rep) || rep.magic != REMOTE_MAGIC))
		rc = MEARAS_LINK_E_PROTO;
	if (rc) {
		snprintf(err, errlen, "remote vGPU %u: opening it on %s failed: %s", v->index, rv->peer, mearas_link_strerror(rc));
		mearas_link_close(rv->link);
		rv->link = NULL;
		return cudaErrorDevicesUnavailable;
	}
	if (rep.status) {
		rep.message[sizeof(rep.message) - 1] = 0;
		snprintf(err, errlen, "remote vGPU %u on %s: %s", v->index, rv->peer, rep.message);
		mearas_link_close(rv->link);
		rv->link = NULL;
		return rep.status;
	}
	*info = rep.info;
	info->is_remote = 1;
	/* kernels on the other node reach its copy of the data area: mapped
	 * memory works when that copy is where this node's is (kept coherent
	 * by HOST_MAPPED ranges), else not at all */
	rv->can_map = rep.data_va == (uint64_t)(uintptr_t)v->w->data;
	if (!rv->can_map) {
		info->attrs[cudaDevAttrCanMapHostMemory] = 0;
		log_warn("vGPU %u: the remote node's data area is at %#llx, not %p: no mapped host memory", v->index,
			 (unsigned long long)rep.data_va, (void *)v->w->data);
	}
	v->engine_data = rv;
	log_info("vGPU %u -> remote %s GPU %d (%s), bulk copies over %u TCP stream%s, %s", v->index, rv->peer, t->gpu,
		 info->name, mearas_link_streams(rv->link) ? mearas_link_streams(rv->link) : 1,
		 mearas_link_streams(rv->link) > 1 ? "s" : "", remote_spin_said(&cfg->remote, cfg->spin_us));
	return 0;
}

int remote_probe(const struct remote_config *rc, unsigned vgpu, char *err, size_t errlen)
{
	const struct remote_target *t = &rc->target[vgpu];
	struct mearas_link_config lc;
	struct mearas_link *link;
	int r;

	remote_link_config(rc, &lc);
	r = mearas_link_connect(t->host, t->port, &lc, &link);
	if (r)
		return snprintf(err, errlen, "remote vGPU %u: link to %s:%u failed: %s%s", vgpu, t->host, t->port,
				mearas_link_strerror(r),
				r == MEARAS_LINK_E_AUTH ? " (cluster key refused: check --cluster-key-file on both nodes)"
							: ""), -1;
	mearas_link_close(link);
	return 0;
}

void forward_post(struct vgpu *v, uint16_t cq, const struct mearas_cqe *c)
{
	/* the serving node's device output reached our stdout (reap.c) before
	 * this completion: a VM slot moves it to the guest with it, as exec.c's
	 * complete() does for a local vGPU */
	if ((c->flags & MEARAS_CQE_OUTPUT) && v->w->take_output)
		v->w->take_output(v->w);
	if (!post_cqe(v, cq, c)) {
		log_err("vGPU %u: completion slot %u overflows: the client is misbehaving", v->index, cq);
		v->w->broken = true;
	}
}

static void fail_one(void *ctx, const struct remote_token *e)
{
	struct mearas_cqe c = { .user_data = e->user_data, .status = cudaErrorDevicesUnavailable };
	struct vgpu *v = ctx;

	if (v->stats)
		vstat_add(&v->stats->errors, 1);
	forward_post(ctx, e->cq, &c);
}

void forward_fail_link(struct vgpu *v, int rc, const char *why)
{
	struct remote_vgpu *rv = rv_of(v);
	int expected = 0;

	if (v->stats)
		__atomic_store_n(&v->stats->link_state, VSTAT_LINK_BROKEN, __ATOMIC_RELAXED);
	if (__atomic_compare_exchange_n(&rv->failed, &expected, rc ? rc : -1, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		log_err("vGPU %u: remote %s lost (%s): its calls fail from now on", v->index, rv->peer, why);
	remote_tokens_fail(&rv->tokens, fail_one, v);
}

/* extra: REMOTE_REC_* flags the caller adds (REMOTE_REC_REFUSED) */
static void forward_one(struct vgpu *v, const struct mearas_sqe *e, uint32_t extra)
{
	struct remote_vgpu *rv = rv_of(v);
	struct remote_record_hdr h = { .kind = REMOTE_MSG_RECORD, .flags = extra, .sqe = *e };
	struct iovec iov[3] = { { &h, sizeof(h) } };
	int n = 1, rc = 0;
	uint64_t len;
	struct mearas_span r;

	if (__atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE)) {
		if (e->flags & MEARAS_SQE_WANT_CQE) {
			struct remote_token t = { .user_data = e->user_data, .cq = e->cq };

			fail_one(v, &t);
		}
		return;
	}
	if (e->flags & MEARAS_SQE_PAYLOAD_ARENA) {
		if (e->payload_off > MEARAS_ARENA_SIZE || e->payload_len > MEARAS_ARENA_SIZE - e->payload_off) {
			h.flags |= REMOTE_REC_BAD_PAYLOAD;
		} else {
			h.payload_len = e->payload_len;
			iov[n++] = (struct iovec){ v->rings.arena + e->payload_off, e->payload_len };
		}
	}
	/* rows that could not be a valid 2D copy, or leave the data area, go
	 * without bytes (the serving node refuses the record) */
	if (record_reads_data(e, v->w->data_size, &r, &len)) {
		uint64_t off = r.off;
		struct span *part;
		size_t nparts;

		if (d2h_uncovered(rv, off, len, &part, &nparts)) {
			/* device-to-host copies in flight write some of it: the rest
			 * goes ahead as bulk transfers, the record carries none */
			for (size_t i = 0; !rc && i < nparts; i++)
				rc = mearas_link_bulk(rv->link, part[i].a, v->w->data + part[i].a, part[i].b - part[i].a);
			free(part);
		} else if (len <= REMOTE_INLINE_DATA_MAX) {
			h.data_off = off;
			h.data_len = len;
			h.flags |= REMOTE_REC_DATA_INLINE;
			iov[n++] = (struct iovec){ v->w->data + off, len };
		} else {
			h.data_off = off;
			h.data_len = len;
			h.flags |= REMOTE_REC_DATA_BULK;
			rc = mearas_link_bulk(rv->link, off, v->w->data + off, len);
		}
	}
	if (e->flags & MEARAS_SQE_WANT_CQE) {
		struct remote_token t = { .user_data = e->user_data, .cq = e->cq, .op = e->op, .want_cqe = 1,
					  .taken_ns = v->stats ? mearas_mono_ns() : 0 };
		uint64_t tok;

		while (!(tok = remote_tokens_add(&rv->tokens, &t))) {
			if (__atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE) || v->w->stop) {
				fail_one(v, &t);
				return;
			}
			/* 64 Ki completions in flight: send what is queued, wait for the reaper */
			(void)mearas_link_flush(rv->link); /* a broken link shows in rv->failed */
			usleep(100);
		}
		h.sqe.user_data = tok;
	}
	if (!rc && record_writes_data(e, v->w->data_size, &r, &len)) {
		/* in flight from now until its DONE item has been applied */
		if (d2h_track(rv, &r, len, &h.done_id)) {
			h.flags |= REMOTE_REC_WANT_DONE;
		} else {
			static bool said;

			if (!said) {
				said = true;
				log_warn("vGPU %u: out of memory: a device-to-host copy is not followed", v->index);
			}
		}
	}
	if (!rc && v->w->cfg->remote.batch_us)
		rc = mearas_link_postv(rv->link, iov, n); /* the link's timer bounds the batch */
	else if (!rc)
		rc = mearas_link_postv_burst(rv->link, iov, n); /* the batch goes when drain() is done */
	if (rc)
		forward_fail_link(v, rc, mearas_link_strerror(rc));
}

/*
 * A large host-to-device or device-to-host copy goes as pieces on the same
 * stream, only the last one completing: the serving node starts copying the
 * first piece while later ones are still on the wire (host to device), and
 * sends a piece's bytes back as soon as it has landed (device to host). An
 * error in an earlier piece is reported by the last one (deferred errors).
 */
static bool forward_split(struct vgpu *v, const struct mearas_sqe *e)
{
	const struct mearas_args_MEMCPY *a = &e->args.MEMCPY;
	uint64_t host, size = a->size;

	if (e->op != MEARAS_OP_MEMCPY || (a->dir != MEARAS_COPY_HTOD && a->dir != MEARAS_COPY_DTOH) ||
	    size < 2 * REMOTE_SPLIT_BYTES)
		return false;
	host = a->dir == MEARAS_COPY_HTOD ? a->src : a->dst;
	if (host > v->w->data_size || size > v->w->data_size - host)
		return false; /* out of bounds: the serving node reports it, as one record */
	for (uint64_t done = 0; done < size; done += REMOTE_SPLIT_BYTES) {
		struct mearas_sqe piece = *e;
		uint64_t n = size - done < REMOTE_SPLIT_BYTES ? size - done : REMOTE_SPLIT_BYTES;

		piece.args.MEMCPY.dst += done;
		piece.args.MEMCPY.src += done;
		piece.args.MEMCPY.size = n;
		if (done + n < size)
			piece.flags &= (uint16_t)~MEARAS_SQE_WANT_CQE;
		forward_one(v, &piece, 0);
	}
	return true;
}

static void forward(struct vgpu *v, const struct mearas_sqe *e)
{
	uint32_t extra = forward_mapped_before(v, e);

	if (extra || !forward_split(v, e))
		forward_one(v, e, extra);
}

/* A drain of the ring: urgent, a record is waited for (the client waits for
 * its completion, or the remote stream for a host function's end), so the
 * batch must go now; rx, the link's receive thread drains, which takes only
 * records that cannot make it wait (bytes, its budget for this drain). */
struct drain {
	bool urgent, rx;
	bool left;      /* rx: it left a record to the forwarder thread */
	bool full;      /* rx: this drain has taken its bytes */
	uint64_t bytes;
};

/* The receive thread must not wait on what only it can bring (free tokens,
 * replies), nor send much at once: large copies, bulk, mapped memory and a
 * full token table are the forwarder thread's (false); it takes at most
 * RX_DRAIN_BYTES a drain (d->full: the rest at its next pass). */
#define RX_DRAIN_BYTES (16u << 10)

static bool rx_may_take(struct vgpu *v, const struct mearas_sqe *e, struct drain *d)
{
	struct remote_vgpu *rv = rv_of(v);
	struct mearas_span r;
	uint64_t len = 0, bytes;

	if (e->op == MEARAS_OP_HOST_MAPPED || remote_mapped_any(rv->mapped) ||
	    (e->op == MEARAS_OP_MEMCPY && e->args.MEMCPY.size >= REMOTE_SPLIT_BYTES))
		return false;
	if (record_reads_data(e, v->w->data_size, &r, &len) && len > RX_DRAIN_BYTES)
		return false;
	/* its token, and one spare: forward_one must never wait for a free one here */
	if ((e->flags & MEARAS_SQE_WANT_CQE) && !remote_tokens_room(&rv->tokens, 2))
		return false;
	bytes = sizeof(struct remote_record_hdr) + len + ((e->flags & MEARAS_SQE_PAYLOAD_ARENA) ? e->payload_len : 0);
	d->full = d->bytes && d->bytes + bytes > RX_DRAIN_BYTES;
	d->bytes += bytes;
	return true;
}

static enum sq_step forward_record(struct vgpu *v, const struct mearas_sqe *e, void *ctx)
{
	struct drain *d = ctx;

	if (d->rx && (!rx_may_take(v, e, d) ? (d->left = true) : d->full))
		return SQ_LEAVE;
	v->records++;
	if (e->flags & MEARAS_SQE_WANT_CQE)
		mearas_hop(MEARAS_HOP_fwd_pick);
	vstat_record(v->stats, e, v->w->data_size, true);
	if ((e->flags & MEARAS_SQE_WANT_CQE) || mearas_op_props(e->op)->urgent)
		d->urgent = true;
	forward(v, e);
	return SQ_NEXT;
}

/* fwd_lock held: forwards what the ring holds (each record's slot given
 * back at once) and sends it when it is waited for, or without a time bound
 * (--link-batch-us) at once. The records taken, or -1: the ring is broken. */
static int drain(struct vgpu *v, struct drain *d)
{
	struct remote_vgpu *rv = rv_of(v);
	int n = sq_each(v, forward_record, d, 1);

	if (n > 0) {
		mearas_hop(MEARAS_HOP_fwd_posted);
		/* with a time bound only what is waited for goes at once; the link's timer sends the rest */
		if ((d->urgent || !v->w->cfg->remote.batch_us) && !__atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE)) {
			int rc = reap_flush(v);

			if (rc)
				forward_fail_link(v, rc, mearas_link_strerror(rc));
		}
		if (d->rx)
			rv->drains_rx++;
		else
			rv->drains_thread++;
	}
	return n;
}

/* Wakes the forwarder thread where it sleeps (on the client's doorbell). */
static void wake_forwarder(struct vgpu *v)
{
	uint64_t one = 1;

	if (write(v->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("vGPU %u: waking the forwarder: %s", v->index, strerror(errno));
}

/*
 * The link's receive thread (rx_idle), between receives while it spins: it
 * has just applied a reply, and the client's next call is likely close
 * behind, so it takes the ring's records itself and sends them (the thread
 * that reads a reply sends the next call: no handoff between threads, the
 * socket stays on one core). Records that could make it wait, or a socket
 * whose peer has not taken all sent so far, it leaves to the forwarder
 * thread (handoff). Before it waits without spinning, the forwarder thread
 * takes over again.
 */
void forward_rx_idle(void *ctx, bool spinning)
{
	struct remote_vgpu *rv = ctx;
	struct vgpu *v = rv->v;
	struct drain d = { .rx = true };

	if (!spinning) {
		if (rx_serve_stop(&rv->rx) && __atomic_load_n(&rv->rx_may, __ATOMIC_ACQUIRE))
			wake_forwarder(v);
		return;
	}
	if (!__atomic_load_n(&rv->rx_may, __ATOMIC_ACQUIRE) || __atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE) ||
	    !rx_serve_pass(&rv->rx) || pthread_mutex_trylock(&rv->fwd_lock))
		return;
	/* the ring's consumer side is the lock holder's */
	if (!__atomic_load_n(&rv->rx_may, __ATOMIC_RELAXED) || mearas_sqc_available(&v->sq) <= 0) {
		pthread_mutex_unlock(&rv->fwd_lock);
		return;
	}
	if (!mearas_link_tx_clear(rv->link))
		d.left = true;
	else if (drain(v, &d) < 0)
		v->w->broken = true;
	pthread_mutex_unlock(&rv->fwd_lock);
	if (d.left && rx_serve_hand_over(&rv->rx))
		wake_forwarder(v);
}

/* The receive thread serves: sleep until it stops or hands records over,
 * looking every RX_SERVE_CHECK_MS whether it still passes over the ring. */
static void wait_rx(struct vgpu *v)
{
	struct pollfd p = { .fd = v->kick_fd, .events = POLLIN };
	uint64_t cnt;

	if (rx_serve_now(&rv_of(v)->rx) && poll(&p, 1, RX_SERVE_CHECK_MS) > 0 && (p.revents & POLLIN) &&
	    read(v->kick_fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		log_warn("vGPU %u: kick read: %s", v->index, strerror(errno));
}

static void *forward_main(void *arg)
{
	struct vgpu *v = arg;
	struct remote_vgpu *rv = rv_of(v);
	const unsigned spin_us = remote_spin_us(&v->w->cfg->remote, v->w->cfg->spin_us);
	const uint64_t spin_ns = (uint64_t)(spin_us ? spin_us : v->w->cfg->spin_us) * 1000ull;
	uint64_t idle_since = 0;

	if (reap_start(v))
		forward_fail_link(v, MEARAS_LINK_E_SYS, "cannot start the reaper thread");
	__atomic_store_n(&rv->rx_may, 1, __ATOMIC_RELEASE);
	while (!v->w->stop && !v->w->broken) {
		struct drain d = { 0 };
		int n;

		if (rx_serve_now(&rv->rx)) {
			wait_rx(v);
			idle_since = 0;
			continue;
		}
		rx_serve_taken(&rv->rx);
		pthread_mutex_lock(&rv->fwd_lock);
		n = drain(v, &d);
		pthread_mutex_unlock(&rv->fwd_lock);
		if (n < 0) {
			v->w->broken = true;
			break;
		}
		if (n > 0) {
			idle_since = 0;
			continue;
		}
		if (!idle_since)
			idle_since = mearas_mono_ns();
		if (mearas_mono_ns() - idle_since < spin_ns) {
			mearas_cpu_relax();
			continue;
		}
		if (mearas_ring_prepare_sleep(v->sq.ctl) && !rx_serve_now(&rv->rx))
			sleep_on_kick(v, 200);
		mearas_ring_end_sleep(v->sq.ctl);
		idle_since = 0;
	}
	/* the receive thread drains no more */
	pthread_mutex_lock(&rv->fwd_lock);
	__atomic_store_n(&rv->rx_may, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rv->fwd_lock);
	if (!__atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE))
		mearas_link_flush(rv->link);
	{
		struct mearas_link_stats st;

		mearas_link_get_stats(rv->link, &st);
		/* calls: the OPEN, then REAP calls */
		log_info("vGPU %u: remote %s: %llu frames sent, %llu REAP calls, %llu of them with a batch of records; "
			 "%llu batches of records sent by the link's receive thread, %llu by the forwarder thread",
			 v->index, rv->peer, (unsigned long long)st.batches_sent,
			 (unsigned long long)(st.calls ? st.calls - 1 : 0), (unsigned long long)rv->reaps_piggybacked,
			 (unsigned long long)rv->drains_rx, (unsigned long long)rv->drains_thread);
		if (mearas_link_streams(rv->link))
			log_info("vGPU %u: remote %s: %llu host-to-device chunks and %llu device-to-host bytes over %u data "
				 "connections", v->index, rv->peer, (unsigned long long)st.bulk_chunks,
				 (unsigned long long)__atomic_load_n(&rv->d2h_bulk_bytes, __ATOMIC_RELAXED),
				 mearas_link_streams(rv->link));
	}
	/* the link closes with the process: the serving node then frees the session */
	return NULL;
}

/* The client is done: the link ends with a goodbye (a close frame, a
 * second at most for the serving node to take it), so that node frees the
 * session as a link closed, not as a broken one. Without it the link would
 * end with the process all the same. */
static void forward_close(struct vgpu *v)
{
	struct remote_vgpu *rv = rv_of(v);

	if (!rv || !rv->link)
		return;
	mearas_link_close(rv->link);
	rv->link = NULL;
}

/* The link's figures into the vGPU's shared counters (the worker's main thread). */
static void forward_publish(struct vgpu *v, struct vstat_vgpu *s)
{
	struct remote_vgpu *rv = rv_of(v);
	struct mearas_link_stats st;

	if (!rv || !rv->link)
		return;
	mearas_link_get_stats(rv->link, &st);
	vstat_set(&s->link_bytes_sent, st.bytes_sent);
	vstat_set(&s->link_bytes_received, st.bytes_received);
	vstat_set(&s->link_batches, st.batches_sent);
	vstat_set(&s->link_msgs, st.msgs_posted + st.calls);
	vstat_set(&s->link_rtt_ns, st.rtt_ns);
	__atomic_store_n(&s->link_state, __atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE) ? VSTAT_LINK_BROKEN : VSTAT_LINK_UP,
			 __ATOMIC_RELAXED);
}

const struct vgpu_engine remote_forward_engine = {
	.name = "remote", .open = forward_open, .thread_main = forward_main, .close = forward_close,
	.publish = forward_publish, .local = false,
};
