// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: what a forwarding node sends to a remote node's session
 * (host-backend/remote/session*.c; format in fuzz_remote.h). The messages and
 * chunks go through the shipped remote_session_message / _chunk_dest /
 * _chunk exactly as the link thread calls them; the session's worker is an
 * in-process sim-backed worker (tests/unit/vgpu_fixture.c) whose ring is
 * run by the poller's own sq_drain after every item, and the session then
 * reads its completions (remote_session_collect) and builds the replies of
 * outstanding REAP calls (remote_session_next_reply), which are parsed and
 * checked: every item well formed, data items inside the data area, at
 * most one completion per record and only for records that asked for one,
 * at most one DONE per device-to-host copy; and, once nothing is left in
 * flight, exactly one of each.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/poller.h"
#include "fuzz_die.h"
#include "fuzz_remote.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "remote/session.h"
#include "vgpu_fixture.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BUDGET_SMALL (1ull << 20)

struct rec {
	bool want_cqe, want_done;
	bool after_death;       /* sent after the worker exited: refused, answered at once */
	unsigned cqes, dones;
};

struct run {
	struct fixture fx;
	struct remote_session *s;
	uint64_t tags[256];
	struct rec *recs;
	uint32_t nrecs, cap;
	struct held held, fresh;
	size_t placed;      /* bytes of the "batch" so far: where the next message lands */
	bool dead;          /* the worker exited */
	bool fatal_seen;    /* a reply said so */
	uint8_t *reply;     /* a reply's bytes, gathered */
};

static void setup(struct run *r, uint8_t flags)
{
	struct mearas_sqe e;
	struct worker *w;

	memset(r, 0, sizeof(*r));
	must(fixture_init(&r->fx, 1, REMOTE_FUZZ_QUOTA) == 0, "fixture_init");
	w = r->fx.w;
	r->tags[FUZZ_TAG_A] = fixture_alloc(&r->fx, 0, 64 << 10);
	r->tags[FUZZ_TAG_B] = fixture_alloc(&r->fx, 0, 1 << 20);
	must(r->tags[FUZZ_TAG_A] && r->tags[FUZZ_TAG_B], "alloc");
	e = sqe_of(MEARAS_OP_STREAM_CREATE);
	e.args.a[0] = FUZZ_STREAM;
	must(fixture_run(&r->fx, 0, &e, NULL) == 0, "stream");
	e = sqe_of(MEARAS_OP_EVENT_CREATE);
	e.args.a[0] = FUZZ_EVENT;
	must(fixture_run(&r->fx, 0, &e, NULL) == 0, "event");
	r->s = remote_session_new(NULL, (flags & REMF_GRAPHS) != 0);
	must(r->s && r->s->ready == 0, "remote_session_new");
	remote_session_map(r->s, w->region, (uint64_t)(uintptr_t)w->region);
	r->s->nthreads = w->nthreads;
	r->s->kick_fd = w->vgpus[0].kick_fd;
	/* the fixture's own completions were read already */
	for (unsigned t = 0; t < w->nthreads; t++)
		r->s->cq[t].head = mearas_load_acquire(&r->s->cq[t].ctl->tail);
	if (!(flags & REMF_NO_START))
		remote_session_start(r->s, flags & REMF_BUDGET ? BUDGET_SMALL : 0);
}

static void teardown(struct run *r)
{
	remote_session_free(r->s);
	fixture_destroy(&r->fx);
	free(r->held.v);
	free(r->fresh.v);
	free(r->recs);
}

/* ---- the replies ---- */

static struct rec *rec_of(struct run *r, uint64_t id)
{
	return id >= 1 && id <= r->nrecs ? &r->recs[id - 1] : NULL;
}

static void check_cqe(struct run *r, const uint8_t *p, uint32_t len)
{
	struct remote_item_cqe ic;
	struct rec *k;

	must(len == sizeof(ic), "a completion item of the wrong size");
	memcpy(&ic, p, sizeof(ic));
	/* ic.cq echoes the record's own (the forwarding node posts by its token's) */
	if (ic.cqe.flags & MEARAS_CQE_HOST_FUNC)
		return; /* a host function's request, not a record's completion */
	k = rec_of(r, ic.cqe.user_data);
	must(k != NULL, "a completion for a record never sent");
	must(k->want_cqe, "a completion for a record that did not ask for one");
	must(++k->cqes == 1, "two completions for one record");
}

static void check_data(struct run *r, const uint8_t *p, uint32_t len)
{
	uint64_t off;

	must(len >= sizeof(off), "a data item without its offset");
	memcpy(&off, p, sizeof(off));
	must(off <= r->s->data_size && len - sizeof(off) <= r->s->data_size - off, "data item outside the data area");
}

static void check_done(struct run *r, const uint8_t *p, uint32_t len)
{
	struct remote_item_done d;
	struct rec *k;

	must(len == sizeof(d), "a DONE item of the wrong size");
	memcpy(&d, p, sizeof(d));
	k = rec_of(r, d.id);
	must(k && k->want_done, "a DONE for a record that did not ask for one");
	must(++k->dones == 1, "two DONEs for one record");
}

static void check_reply(struct run *r, const struct reply_build *rb)
{
	size_t len = 0, off = 0;

	for (int i = 0; i < rb->n; i++) {
		must(len + rb->iov[i].iov_len <= REMOTE_REPLY_MAX, "a reply over REMOTE_REPLY_MAX");
		memcpy(r->reply + len, rb->iov[i].iov_base, rb->iov[i].iov_len);
		len += rb->iov[i].iov_len;
	}
	must(len == rb->len && len > 0, "a reply's length is not its pieces'");
	while (off < len) {
		struct remote_item_hdr ih;
		const uint8_t *p;

		must(len - off >= sizeof(ih), "a reply ends inside an item header");
		memcpy(&ih, r->reply + off, sizeof(ih));
		off += sizeof(ih);
		must(ih.len <= len - off, "an item runs past its reply");
		p = r->reply + off;
		off += ih.len;
		switch (ih.type) {
		case REMOTE_ITEM_CQE: check_cqe(r, p, ih.len); break;
		case REMOTE_ITEM_DATA:
		case REMOTE_ITEM_MAPPED: check_data(r, p, ih.len); break;
		case REMOTE_ITEM_DONE: check_done(r, p, ih.len); break;
		case REMOTE_ITEM_OUTPUT: must(ih.len >= sizeof(struct remote_item_output), "a short output item"); break;
		case REMOTE_ITEM_FATAL: r->fatal_seen = true; break;
		default: die("an item of an unknown type");
		}
	}
}

/* The replies the session has for its outstanding REAP calls. */
static void take_replies(struct run *r)
{
	struct reply_build rb;
	uint64_t seq;

	pthread_mutex_lock(&r->s->qlock);
	while (remote_session_next_reply(r->s, &seq, &rb)) {
		pthread_mutex_unlock(&r->s->qlock);
		check_reply(r, &rb);
		pthread_mutex_lock(&r->s->qlock);
	}
	pthread_mutex_unlock(&r->s->qlock);
}

/* ---- the worker and the session thread, one round ---- */

static void step(struct run *r)
{
	struct vgpu *v = &r->fx.w->vgpus[0];

	if (!r->fx.w->broken && !r->dead)
		sq_drain(v);
	while (!r->dead && v->npend && exec_poll_pending(v) > 0)
		;
	if (!remote_session_queue_over(r->s))
		remote_session_collect(r->s, &r->held, &r->fresh);
	take_replies(r);
}

/* ---- what the forwarding node sends ---- */

/* A message lands where it would in a batch: after the ones before it and
 * its 16-byte header (so at any alignment), ending where its buffer ends. */
static void deliver(struct run *r, bool wants_reply, const uint8_t *msg, size_t len)
{
	size_t pad = (r->placed + 16) % 64;
	uint8_t *buf = malloc(pad + len + 1);

	memcpy(buf + pad, msg, len);
	r->placed += 16 + len;
	remote_session_message(r->s, r->placed, wants_reply, buf + pad, len);
	free(buf);
}

/* Numbers a RECORD so its completion and DONE can be told apart, and
 * resolves tagged arguments. */
static void number_record(struct run *r, uint8_t *msg, size_t len)
{
	struct remote_record_hdr h;

	if (len < sizeof(h))
		return;
	memcpy(&h, msg, sizeof(h));
	if (r->nrecs == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->recs = realloc(r->recs, r->cap * sizeof(*r->recs));
		must(r->recs != NULL, "out of memory");
	}
	r->recs[r->nrecs++] = (struct rec){ .want_cqe = (h.sqe.flags & MEARAS_SQE_WANT_CQE) != 0,
					    .want_done = (h.flags & REMOTE_REC_WANT_DONE) != 0,
					    .after_death = r->dead };
	h.sqe.user_data = r->nrecs;
	h.done_id = r->nrecs;
	for (int i = 0; i < 7; i++) {
		uint64_t base = r->tags[h.sqe.args.a[i] >> FUZZ_TAG_SHIFT];

		if (base)
			h.sqe.args.a[i] = base + (h.sqe.args.a[i] & 0xffffffffull);
	}
	memcpy(msg, &h, sizeof(h));
}

static void message(struct run *r, bool wants_reply, const uint8_t *p, size_t len)
{
	uint8_t *msg = malloc(len + 1);
	uint32_t kind = 0;

	memcpy(msg, p, len);
	if (len >= sizeof(kind))
		memcpy(&kind, msg, sizeof(kind));
	if (kind == REMOTE_MSG_RECORD)
		number_record(r, msg, len);
	deliver(r, wants_reply, msg, len);
	free(msg);
}

static void chunk(struct run *r, uint64_t tag, uint64_t offset, const uint8_t *p, size_t len)
{
	uint8_t *dst = remote_session_chunk_dest(r->s, tag, offset, len);
	uint8_t *own = NULL;

	if (dst) {
		must(dst >= r->s->data && dst + len <= r->s->data + r->s->data_size, "chunk_dest outside the data area");
	} else {
		dst = own = malloc(len + 1);
	}
	memcpy(dst, p, len);
	remote_session_chunk(r->s, tag, offset, dst, len);
	free(own);
}

/* The worker process exits: the session thread notices as harvest does. */
static void worker_dies(struct run *r)
{
	if (r->dead || __atomic_load_n(&r->s->ready, __ATOMIC_ACQUIRE) != 1)
		return;
	remote_session_worker_gone(r->s, &r->fresh);
	r->dead = true;
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/* ---- at the end: everything out, each record answered once ---- */

static void flush(struct run *r)
{
	struct vgpu *v = &r->fx.w->vgpus[0];
	static const uint32_t reap = REMOTE_MSG_REAP;

	for (int i = 0; i < 8; i++) {
		step(r);
		for (unsigned n = 0; r->s->qlen; n++) {
			must(n < 100000, "the reply queue does not drain");
			deliver(r, true, (const uint8_t *)&reap, sizeof(reap));
			step(r);
		}
	}
	if (getenv("FUZZ_VERBOSE")) {
		unsigned cqes = 0, dones = 0;

		for (uint32_t i = 0; i < r->nrecs; i++)
			cqes += r->recs[i].cqes, dones += r->recs[i].dones;
		fprintf(stderr, "fuzz_remote_records: %u records, %u completions, %u DONEs, %zu pending, %s\n", r->nrecs,
			cqes, dones, v->npend, r->fx.w->broken ? "broken" : "not broken");
	}
	if (r->s->qlen)
		return;
	must(!r->dead || r->fatal_seen, "the worker's death was not reported");
	for (uint32_t i = 0; i < r->nrecs; i++) {
		/* the worker's death fails what it had in flight; what it had
		 * completed but not yet sent goes with it (the FATAL item makes
		 * the forwarding node fail them all), so only later records count */
		if (r->dead ? !r->recs[i].after_death : r->fx.w->broken || v->npend)
			continue; /* records still in flight (a host function waits, say) */
		if (r->recs[i].want_cqe && r->recs[i].cqes != 1)
			die("a record that asked for a completion got none");
		if (r->recs[i].want_done && r->recs[i].dones != 1)
			die("a device-to-host copy got no DONE");
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_seeds_if_asked(seeds_remote);
	if (!getenv("FUZZ_VERBOSE"))
		mearas_log_set_fd(open("/dev/null", O_WRONLY | O_CLOEXEC));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *reply;
	struct run r;

	if (size < 1)
		return 0;
	if (!reply)
		reply = malloc(REMOTE_REPLY_MAX);
	setup(&r, data[0]);
	r.reply = reply;
	data++, size--;
	while (size >= 1) {
		if (data[0] == REMI_MSG && size >= 4 && (size_t)get_le(data + 2, 2) <= size - 4) {
			size_t len = (size_t)get_le(data + 2, 2);

			message(&r, data[1] & 1, data + 4, len);
			data += 4 + len, size -= 4 + len;
		} else if (data[0] == REMI_CHUNK && size >= 19 && (size_t)get_le(data + 17, 2) <= size - 19) {
			size_t len = (size_t)get_le(data + 17, 2);

			chunk(&r, get_le(data + 1, 8), get_le(data + 9, 8), data + 19, len);
			data += 19 + len, size -= 19 + len;
		} else if (data[0] == REMI_GONE) {
			worker_dies(&r);
			data++, size--;
		} else {
			break;
		}
		step(&r);
	}
	flush(&r);
	teardown(&r);
	return 0;
}
