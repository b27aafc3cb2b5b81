// SPDX-License-Identifier: MIT
/*
 * Client node side of a remote vGPU: the forwarding poller drains the vGPU's
 * submission ring in order and posts each record on the vGPU's link (with
 * its arena payload and the data-area bytes it reads); a reaper thread keeps
 * REAP_OUTSTANDING asynchronous REAP calls outstanding, whose replies carry
 * device-to-host bytes, device output and completions; the link's receive
 * thread reads each straight into the client's region (no extra thread hop
 * on a synchronous call, no staging copy), and the next reply is already on
 * its way. A broken
 * link fails every record in flight, and every later one, with
 * cudaErrorDevicesUnavailable.
 *
 * Device-to-host copies in flight: their bytes reach this node's data area
 * only when a reply brings them, but a record forwarded before then may read
 * them (a host-to-device copy from the same pinned buffer, later on the same
 * stream). The forwarder keeps the rows of every device-to-host copy it sent
 * until the remote node's DONE item for it has been applied, and sends such
 * a record without the bytes those rows cover: the remote node's copy of the
 * data area has them by the time the record runs (stream order), and the
 * client's copy may still hold the old ones. The forwarder never waits.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mearas/clock.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "remote_link.h"
#include "core/worker.h"

#define TOKENS_CAP (1u << 16)
#define OPEN_TIMEOUT_MS 60000u
#define REAP_OUTSTANDING 3u

struct reap_slot {
	struct vgpu *v;
	struct reap_slot *next_free;
};

/* A device-to-host copy forwarded and not done yet (REMOTE_ITEM_DONE). */
struct d2h_flight {
	uint32_t id;
	struct mearas_span r;
	uint64_t end;           /* r.off + the span of its rows */
};

/* A byte range of the data area, [a, b). */
struct span {
	uint64_t a, b;
};

struct remote_vgpu {
	struct mearas_link *link;
	struct remote_tokens tokens;
	pthread_t reaper;
	int failed;             /* atomic: first link error */
	struct reap_slot slot[REAP_OUTSTANDING];
	pthread_mutex_t reap_lock;
	pthread_cond_t reap_cond;
	struct reap_slot *free_slots; /* replies applied: to be sent again */
	char peer[REMOTE_HOST_MAX + 8];
	/* device-to-host copies in flight: added by the forwarder, taken off by
	 * the receive thread; nd2h is also read without the lock (the forwarder
	 * alone adds, so a 0 it reads means none of its copies is in flight) */
	pthread_mutex_t d2h_lock;
	struct d2h_flight *d2h;
	uint32_t nd2h, cap_d2h;
	uint64_t d2h_lo, d2h_hi; /* every range in flight lies within [lo, hi) */
	uint32_t next_done_id;   /* forwarder only */
	/* mapped host memory (remote_mapped.c); can_map: the remote node's data
	 * area sits at this node's address, so pointers into it agree */
	struct remote_mapped *mapped;
	bool can_map;
	/* what the shadows may take in this process (the tenant's worker): the
	 * same bound as the remote node's default (--link-mem-mb) */
	struct remote_budget mapped_budget;
};

static const char *link_err(int rc)
{
	return mearas_link_strerror(rc);
}

int remote_client_open(struct vgpu *v, const struct remote_target *t, struct mearas_devinfo *info,
		       char *err, size_t errlen)
{
	const struct backend_config *cfg = v->w->cfg;
	struct mearas_link_config lc;
	struct remote_vgpu *rv = calloc(1, sizeof(*rv));
	struct remote_open_req req = { .magic = REMOTE_MAGIC, .version = REMOTE_VERSION,
				       .kind = REMOTE_MSG_OPEN, .gpu = t->gpu, .va_window = v->index,
				       .nthreads = v->w->nthreads, .data_size = v->w->data_size,
				       .quota = cfg->quota[v->index] };
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
	rv->d2h_lo = UINT64_MAX;
	for (unsigned i = 0; i < REAP_OUTSTANDING; i++) {
		rv->slot[i] = (struct reap_slot){ .v = v, .next_free = rv->free_slots };
		rv->free_slots = &rv->slot[i];
	}
	snprintf(rv->peer, sizeof(rv->peer), "%s:%u", t->host, t->port);
	rv->mapped_budget = (struct remote_budget){
		.limit = cfg->remote.link_mem ? cfg->remote.link_mem : v->w->data_size + REMOTE_LINK_MEM_EXTRA,
		.who = rv->peer };
	remote_mapped_set_budget(rv->mapped, &rv->mapped_budget);
	gethostname(req.node, sizeof(req.node) - 1);
	remote_link_config(&cfg->remote, &lc);
	lc.rx_spin_us = remote_spin_us(cfg->spin_us);
	rc = mearas_link_connect(t->host, t->port, &lc, &rv->link);
	if (rc) {
		snprintf(err, errlen, "remote vGPU %u: link to %s failed: %s%s", v->index, rv->peer, link_err(rc),
			 rc == MEARAS_LINK_E_AUTH ? " (cluster key refused: check --cluster-key-file on both nodes)" : "");
		return cudaErrorDevicesUnavailable;
	}
	rc = mearas_link_call(rv->link, &req, sizeof(req), &rep, sizeof(rep), &len, OPEN_TIMEOUT_MS);
	if (!rc && (len != sizeof(rep) || rep.magic != REMOTE_MAGIC))
		rc = MEARAS_LINK_E_PROTO;
	if (rc) {
		snprintf(err, errlen, "remote vGPU %u: opening it on %s failed: %s", v->index, rv->peer, link_err(rc));
		mearas_link_close(rv->link);
		return cudaErrorDevicesUnavailable;
	}
	if (rep.status) {
		rep.message[sizeof(rep.message) - 1] = 0;
		snprintf(err, errlen, "remote vGPU %u on %s: %s", v->index, rv->peer, rep.message);
		mearas_link_close(rv->link);
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
	v->remote = rv;
	log_info("vGPU %u -> remote %s GPU %d (%s)", v->index, rv->peer, t->gpu, info->name);
	return 0;
}

static void post_or_break(struct vgpu *v, uint16_t cq, const struct mearas_cqe *c)
{
	if (!post_cqe(v, cq, c)) {
		log_err("vGPU %u: completion slot %u overflows: the client is misbehaving", v->index, cq);
		v->w->broken = true;
	}
}

static void fail_one(void *ctx, const struct remote_token *e)
{
	struct mearas_cqe c = { .user_data = e->user_data, .status = cudaErrorDevicesUnavailable };

	post_or_break(ctx, e->cq, &c);
}

/* The link is gone: everything in flight and everything later fails. */
static void fail_link(struct vgpu *v, int rc, const char *why)
{
	struct remote_vgpu *rv = v->remote;
	int expected = 0;

	if (__atomic_compare_exchange_n(&rv->failed, &expected, rc ? rc : -1, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		log_err("vGPU %u: remote %s lost (%s): its calls fail from now on", v->index, rv->peer, why);
	remote_tokens_fail(&rv->tokens, fail_one, v);
}

/* The data-area bytes a record reads, if any, as one range: rows that
 * could not be a valid 2D copy read nothing here (the remote node refuses
 * the record). */
static bool data_read_range(const struct mearas_sqe *e, uint64_t *off, uint64_t *len)
{
	struct mearas_span s;

	if (!mearas_op_reads(e, &s) || s.rows > (1ull << 32) || s.pitch > (1ull << 40) ||
	    !range_2d_span(s.width, s.pitch, s.rows, len))
		return false;
	*off = s.off;
	return true;
}

/* A device-to-host copy goes out: its rows are in flight until its DONE. */
static bool d2h_track(struct remote_vgpu *rv, const struct mearas_span *r, uint32_t *id)
{
	struct d2h_flight f = { .r = *r, .end = r->off + r->pitch * (r->rows - 1) + r->width };

	/* ids repeat after 2^32 copies: a copy in flight that long is not expected */
	f.id = ++rv->next_done_id;
	pthread_mutex_lock(&rv->d2h_lock);
	if (rv->nd2h == rv->cap_d2h) {
		uint32_t ncap = rv->cap_d2h ? rv->cap_d2h * 2 : 16;
		struct d2h_flight *n = realloc(rv->d2h, ncap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&rv->d2h_lock);
			return false;
		}
		rv->d2h = n;
		rv->cap_d2h = ncap;
	}
	rv->d2h[rv->nd2h] = f;
	__atomic_store_n(&rv->nd2h, rv->nd2h + 1, __ATOMIC_RELEASE);
	if (f.r.off < rv->d2h_lo)
		rv->d2h_lo = f.r.off;
	if (f.end > rv->d2h_hi)
		rv->d2h_hi = f.end;
	pthread_mutex_unlock(&rv->d2h_lock);
	*id = f.id;
	return true;
}

/* On the receive thread: the copy's bytes have landed (or will never come). */
static void d2h_done(struct remote_vgpu *rv, uint32_t id)
{
	pthread_mutex_lock(&rv->d2h_lock);
	for (uint32_t i = 0; i < rv->nd2h; i++) {
		if (rv->d2h[i].id != id)
			continue;
		rv->d2h[i] = rv->d2h[rv->nd2h - 1];
		__atomic_store_n(&rv->nd2h, rv->nd2h - 1, __ATOMIC_RELEASE);
		break;
	}
	if (!rv->nd2h) {
		rv->d2h_lo = UINT64_MAX;
		rv->d2h_hi = 0;
	}
	pthread_mutex_unlock(&rv->d2h_lock);
}

static bool spans_add(struct span **v, size_t *n, size_t *cap, uint64_t a, uint64_t b)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct span *nv = realloc(*v, ncap * sizeof(*nv));

		if (!nv)
			return false;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = (struct span){ a, b };
	return true;
}

static int span_cmp(const void *x, const void *y)
{
	const struct span *a = x, *b = y;

	return a->a < b->a ? -1 : a->a > b->a;
}

/* Under the lock: the parts of [a, b) that the rows of f write, into the list. */
static bool d2h_cover(const struct d2h_flight *f, uint64_t a, uint64_t b, struct span **v, size_t *n, size_t *cap)
{
	const struct mearas_span *r = &f->r;
	uint64_t k, k_end;

	if (f->end <= a || r->off >= b)
		return true;
	if (r->rows == 1 || r->width == r->pitch)
		return spans_add(v, n, cap, r->off > a ? r->off : a, f->end < b ? f->end : b);
	/* rows k with off + k * pitch < b and off + k * pitch + width > a */
	k = a < r->off + r->width ? 0 : (a - r->off - r->width) / r->pitch + 1;
	k_end = (b - r->off + r->pitch - 1) / r->pitch;
	if (k_end > r->rows)
		k_end = r->rows;
	for (; k < k_end; k++) {
		uint64_t x = r->off + k * r->pitch, y = x + r->width;

		if (!spans_add(v, n, cap, x > a ? x : a, y < b ? y : b))
			return false;
	}
	return true;
}

/*
 * The parts of [off, off + len) of the data area that no device-to-host copy
 * in flight writes: *out (malloc'd, *n of them). false when the whole range
 * is free of them (the common case, *out untouched), or when out of memory
 * (then the whole range goes, as before this check existed).
 */
static bool d2h_uncovered(struct remote_vgpu *rv, uint64_t off, uint64_t len, struct span **out, size_t *n)
{
	struct span *c = NULL, *u = NULL;
	size_t nc = 0, cap = 0, nu = 0, ucap = 0;
	uint64_t end = off + len, at = off;
	bool ok = true;

	if (!__atomic_load_n(&rv->nd2h, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&rv->d2h_lock);
	if (end > rv->d2h_lo && off < rv->d2h_hi)
		for (uint32_t i = 0; ok && i < rv->nd2h; i++)
			ok = d2h_cover(&rv->d2h[i], off, end, &c, &nc, &cap);
	pthread_mutex_unlock(&rv->d2h_lock);
	if (!ok || !nc) {
		free(c);
		return false;
	}
	qsort(c, nc, sizeof(*c), span_cmp);
	for (size_t i = 0; ok && i < nc; i++) {
		if (c[i].a > at)
			ok = spans_add(&u, &nu, &ucap, at, c[i].a);
		if (c[i].b > at)
			at = c[i].b;
	}
	if (ok && at < end)
		ok = spans_add(&u, &nu, &ucap, at, end);
	free(c);
	if (!ok) {
		free(u);
		return false;
	}
	*out = u;
	*n = nu;
	return true;
}

/* extra: REMOTE_REC_* flags the caller adds (REMOTE_REC_REFUSED) */
static void forward_one(struct vgpu *v, const struct mearas_sqe *e, uint32_t extra)
{
	struct remote_vgpu *rv = v->remote;
	struct remote_record_hdr h = { .kind = REMOTE_MSG_RECORD, .flags = extra, .sqe = *e };
	struct iovec iov[3] = { { &h, sizeof(h) } };
	int n = 1, rc = 0;
	uint64_t off, len;
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
	if (data_read_range(e, &off, &len) && len && off <= v->w->data_size && len <= v->w->data_size - off) {
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
		struct remote_token t = { .user_data = e->user_data, .cq = e->cq, .op = e->op, .want_cqe = 1 };
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
	if (!rc && remote_d2h_range(e, v->w->data_size, &r)) {
		/* in flight from now until its DONE item has been applied */
		if (d2h_track(rv, &r, &h.done_id)) {
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
		fail_link(v, rc, link_err(rc));
}

/*
 * A large host-to-device or device-to-host copy goes as pieces on the same
 * stream, only the last one completing: the remote node starts copying the
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
		return false; /* out of bounds: the remote node reports it, as one record */
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

/* remote_mapped emit: bytes of a mapped range go to the remote node, in
 * pieces, ahead of the records that follow */
static int push_mapped(void *ctx, uint64_t off, const uint8_t *bytes, uint64_t len)
{
	struct vgpu *v = ctx;
	struct remote_vgpu *rv = v->remote;
	int rc = 0;

	for (uint64_t done = 0; !rc && done < len; done += REMOTE_MAPPED_PIECE) {
		uint64_t n = len - done < REMOTE_MAPPED_PIECE ? len - done : REMOTE_MAPPED_PIECE;
		struct remote_mapped_msg m = { .kind = REMOTE_MSG_MAPPED, .off = off + done, .len = n };
		struct iovec iov[2] = { { &m, sizeof(m) }, { (void *)(bytes + done), n } };

		rc = mearas_link_postv_burst(rv->link, iov, 2);
	}
	if (rc)
		fail_link(v, rc, link_err(rc));
	return rc;
}

/*
 * Mapped host memory: a range becomes mapped with its bytes sent whole; each
 * kernel launch first sends what the host changed in the mapped ranges since
 * (the remote node sends the device's changes with its completions).
 */
/* Returns REMOTE_REC_REFUSED for a HOST_MAPPED this node cannot shadow
 * (its budget, or memory): the remote node then fails it the same way, so
 * that neither node follows the range and the program gets the error. */
static uint32_t mapped_before(struct vgpu *v, const struct mearas_sqe *e)
{
	struct remote_vgpu *rv = v->remote;
	const struct mearas_args_HOST_MAPPED *a = &e->args.HOST_MAPPED;
	bool launch = mearas_op_props(e->op)->kernel;

	/* most records are neither: nothing else is looked at for them */
	if ((!launch && e->op != MEARAS_OP_HOST_MAPPED) || !rv->can_map ||
	    __atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE))
		return 0;
	if (e->op == MEARAS_OP_HOST_MAPPED) {
		if (!host_mapped_valid(e, v->w->data_size))
			return 0; /* the remote node refuses it */
		/* the shadow first: bytes the host writes meanwhile are sent again at the next launch */
		if (!remote_mapped_set(rv->mapped, v->w->data, a->off, a->size, a->mapped != 0)) {
			log_warn("vGPU %u: a mapped range of %llu bytes is refused (memory or --link-mem-mb)", v->index,
				 (unsigned long long)a->size);
			return REMOTE_REC_REFUSED;
		}
		if (a->mapped)
			push_mapped(v, a->off, v->w->data + a->off, a->size);
	} else if (remote_mapped_any(rv->mapped)) {
		remote_mapped_diff(rv->mapped, v->w->data, push_mapped, v);
	}
	return 0;
}

static void forward(struct vgpu *v, const struct mearas_sqe *e)
{
	uint32_t extra = mapped_before(v, e);

	if (extra || !forward_split(v, e))
		forward_one(v, e, extra);
}

/* Forwards what the ring holds; *urgent: one of the records is waited for
 * (the client waits for its completion, or the remote stream for a host
 * function's end), so the batch must go now. */
static int drain(struct vgpu *v, bool *urgent)
{
	int avail = sq_available(v), n = 0;

	if (avail < 0)
		return -1;
	while (avail--) {
		struct mearas_sqe e;

		mearas_sqc_fetch(&v->sq, &e);

		v->records++;
		if ((e.flags & MEARAS_SQE_WANT_CQE) || mearas_op_props(e.op)->urgent)
			*urgent = true;
		forward(v, &e);
		mearas_sqc_advance(&v->sq, 1);
		mearas_sqc_publish(&v->sq);
		n++;
	}
	return n;
}

/* Reads and drops n bytes of the reply. */
static int skip_reply(struct mearas_link_reader *r, uint64_t n)
{
	uint8_t sink[4096];

	while (n) {
		size_t k = n < sizeof(sink) ? (size_t)n : sizeof(sink);
		int rc = mearas_link_read(r, sink, k);

		if (rc)
			return rc;
		n -= k;
	}
	return 0;
}

static void apply_cqe(struct vgpu *v, struct remote_item_cqe *ic)
{
	struct remote_vgpu *rv = v->remote;
	struct remote_token t;

	if (ic->cqe.flags & MEARAS_CQE_HOST_FUNC) {
		ic->cqe.val[1] = v->index; /* the remote knows it as its vGPU 0 */
		post_or_break(v, 0, &ic->cqe);
	} else if (remote_tokens_take(&rv->tokens, ic->cqe.user_data, &t)) {
		ic->cqe.user_data = t.user_data;
		post_or_break(v, t.cq, &ic->cqe);
	} else {
		log_warn("vGPU %u: remote completion for unknown record %llu dropped", v->index,
			 (unsigned long long)ic->cqe.user_data);
	}
}

/*
 * Apply one REAP reply as it is read, item by item, in order: device-to-host
 * bytes go straight from the socket into the data area. 0, or the link error
 * (the link then fails every call: nothing more to apply).
 */
static int apply_reply(struct vgpu *v, struct mearas_link_reader *r)
{
	struct remote_vgpu *rv = v->remote;
	static __thread uint8_t small[65536 + 64];
	int rc = 0;

	while (!rc && mearas_link_read_left(r) >= sizeof(struct remote_item_hdr)) {
		struct remote_item_hdr ih;

		rc = mearas_link_read(r, &ih, sizeof(ih));
		if (rc)
			break;
		if (ih.len > mearas_link_read_left(r)) {
			log_warn("vGPU %u: malformed item (length %u) from %s", v->index, ih.len, rv->peer);
			break;
		}
		if (ih.type == REMOTE_ITEM_CQE && ih.len == sizeof(struct remote_item_cqe)) {
			struct remote_item_cqe ic;

			rc = mearas_link_read(r, &ic, sizeof(ic));
			if (!rc)
				apply_cqe(v, &ic);
		} else if (ih.type == REMOTE_ITEM_DONE && ih.len == sizeof(struct remote_item_done)) {
			struct remote_item_done d;

			rc = mearas_link_read(r, &d, sizeof(d));
			if (!rc)
				d2h_done(rv, d.id);
		} else if (ih.type == REMOTE_ITEM_DATA && ih.len >= sizeof(struct remote_item_data)) {
			struct remote_item_data d;
			uint64_t n = ih.len - sizeof(d);

			rc = mearas_link_read(r, &d, sizeof(d));
			if (rc)
				break;
			if (d.off <= v->w->data_size && n <= v->w->data_size - d.off) {
				rc = mearas_link_read(r, v->w->data + d.off, n);
				/* a copy's bytes: the same on both nodes now */
				if (!rc)
					remote_mapped_absorb(rv->mapped, v->w->data, d.off, n);
			} else {
				log_warn("vGPU %u: remote data out of the data area dropped", v->index);
				rc = skip_reply(r, n);
			}
		} else if (ih.type == REMOTE_ITEM_MAPPED && ih.len >= sizeof(struct remote_item_data) &&
			   ih.len <= sizeof(small)) {
			struct remote_item_data d;
			uint64_t n = ih.len - sizeof(d);

			rc = mearas_link_read(r, &d, sizeof(d));
			if (!rc)
				rc = mearas_link_read(r, small, n);
			if (!rc && d.off <= v->w->data_size && n <= v->w->data_size - d.off)
				remote_mapped_write(rv->mapped, v->w->data, d.off, small, n);
			else if (!rc)
				log_warn("vGPU %u: remote mapped bytes out of the data area dropped", v->index);
		} else if ((ih.type == REMOTE_ITEM_OUTPUT || ih.type == REMOTE_ITEM_FATAL) && ih.len <= sizeof(small) &&
			   (ih.type == REMOTE_ITEM_FATAL || ih.len >= sizeof(struct remote_item_output))) {
			rc = mearas_link_read(r, small, ih.len);
			if (rc)
				break;
			if (ih.type == REMOTE_ITEM_OUTPUT) {
				struct remote_item_output o;

				memcpy(&o, small, sizeof(o));
				/* our stdout/stderr are the client's output pipes */
				if ((o.fd == 1 || o.fd == 2) &&
				    write((int)o.fd, small + sizeof(o), ih.len - sizeof(o)) < 0)
					log_warn("vGPU %u: device output: %s", v->index, strerror(errno));
			} else {
				char msg[256];
				size_t n = ih.len < sizeof(msg) - 1 ? ih.len : sizeof(msg) - 1;

				memcpy(msg, small, n);
				msg[n] = 0;
				fail_link(v, MEARAS_LINK_E_BROKEN, msg);
			}
		} else {
			log_warn("vGPU %u: malformed item (type %u) from %s", v->index, ih.type, rv->peer);
			break; /* the rest of the reply is skipped */
		}
	}
	return rc;
}

/* On the link's receive thread: one REAP reply starts (or the link broke). */
static void reap_done(void *ctx, int status, size_t len, struct mearas_link_reader *r)
{
	struct reap_slot *slot = ctx;
	struct vgpu *v = slot->v;
	struct remote_vgpu *rv = v->remote;

	(void)len;
	if (status)
		fail_link(v, status, link_err(status));
	else
		apply_reply(v, r); /* a read error breaks the link: its calls fail with it */
	pthread_mutex_lock(&rv->reap_lock);
	slot->next_free = rv->free_slots;
	rv->free_slots = slot;
	pthread_cond_signal(&rv->reap_cond);
	pthread_mutex_unlock(&rv->reap_lock);
}

/* Keeps REAP_OUTSTANDING calls outstanding: sends one again once its reply is applied. */
static void *reaper_main(void *arg)
{
	struct vgpu *v = arg;
	struct remote_vgpu *rv = v->remote;
	const uint32_t req[2] = { REMOTE_MSG_REAP, 0 };

	pthread_mutex_lock(&rv->reap_lock);
	while (!v->w->stop && !__atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE)) {
		struct reap_slot *slot = rv->free_slots;
		int rc;

		if (!slot) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 200 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&rv->reap_cond, &rv->reap_lock, &ts);
			continue;
		}
		rv->free_slots = slot->next_free;
		pthread_mutex_unlock(&rv->reap_lock);
		rc = mearas_link_call_stream(rv->link, req, sizeof(req), reap_done, slot);
		pthread_mutex_lock(&rv->reap_lock);
		if (rc) {
			fail_link(v, rc, link_err(rc));
			break;
		}
	}
	pthread_mutex_unlock(&rv->reap_lock);
	return NULL;
}

void *remote_client_main(void *arg)
{
	struct vgpu *v = arg;
	struct remote_vgpu *rv = v->remote;
	const unsigned spin_us = remote_spin_us(v->w->cfg->spin_us);
	const uint64_t spin_ns = (uint64_t)(spin_us ? spin_us : v->w->cfg->spin_us) * 1000ull;
	uint64_t idle_since = 0;

	if (pthread_create(&rv->reaper, NULL, reaper_main, v)) {
		fail_link(v, MEARAS_LINK_E_SYS, "cannot start the reaper thread");
	} else {
		/* it may sit in a call until the process exits */
		pthread_detach(rv->reaper);
	}
	while (!v->w->stop && !v->w->broken) {
		bool urgent = false;
		int n = drain(v, &urgent);

		if (n < 0) {
			v->w->broken = true;
			break;
		}
		if (n > 0) {
			/* with a time bound (--link-batch-us) only what is waited for goes at
			 * once; the link's timer sends the rest */
			bool now = urgent || !v->w->cfg->remote.batch_us;
			int rc = !now || __atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE) ? 0 : mearas_link_flush(rv->link);

			if (rc)
				fail_link(v, rc, link_err(rc));
			idle_since = 0;
			continue;
		}
		if (!idle_since)
			idle_since = mearas_mono_ns();
		if (mearas_mono_ns() - idle_since < spin_ns) {
			mearas_cpu_relax();
			continue;
		}
		if (mearas_ring_prepare_sleep(v->sq.ctl))
			sleep_on_kick(v, 200);
		mearas_ring_end_sleep(v->sq.ctl);
		idle_since = 0;
	}
	if (!__atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE))
		mearas_link_flush(rv->link);
	/* the link closes with the process: the remote node then frees the session */
	return NULL;
}
