// SPDX-License-Identifier: MIT
/*
 * Stream capture as the serving node's session sees it (session_feed.c).
 * An asynchronous device-to-host copy normally gets a completion forced on
 * it, so that its bytes go back to the forwarding node when it lands; on a
 * capturing stream that fence would invalidate the capture (and the copy does not run then
 * anyway). So the copy's range is kept with the capture instead, moves to the
 * graph at CAPTURE_END, to its executable graphs at GRAPH_INSTANTIATE, and
 * every GRAPH_LAUNCH of one sends those ranges back when the launch is done.
 * Streams that join a capture through an event recorded in it count as
 * capturing until the capture ends. The link thread feeds records in; the
 * session thread ends a capture whose CAPTURE_BEGIN failed on the device
 * (copies fed between the two lose their bytes: a failed begin on a valid
 * stream is rare). A NULL tracker (device without graphs) follows nothing.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "capture.h"

struct cap_ranges {
	struct mearas_span *r;
	uint32_t n, cap;
};

struct cap_entry {
	uint64_t key;           /* stream key, event id, graph id or exec id */
	uint32_t capture;       /* streams and events: the capture they belong to */
	struct cap_ranges ranges; /* captures, graphs, execs */
};

struct cap_table {
	struct cap_entry *e;
	uint32_t n, cap;
};

struct remote_captures {
	pthread_mutex_t lock;
	struct cap_table captures, streams, events, graphs, execs;
	uint32_t next_capture;
	struct remote_budget *budget; /* tables and ranges are taken from it (NULL: none) */
};

struct remote_captures *remote_captures_new(void)
{
	struct remote_captures *c = calloc(1, sizeof(struct remote_captures));

	if (c)
		pthread_mutex_init(&c->lock, NULL);
	return c;
}

void remote_captures_set_budget(struct remote_captures *c, struct remote_budget *b)
{
	if (c)
		c->budget = b;
}

static void ranges_free(struct remote_budget *b, struct cap_ranges *r)
{
	free(r->r);
	remote_budget_give(b, (uint64_t)r->cap * sizeof(*r->r));
	*r = (struct cap_ranges){ 0 };
}

static void table_free(struct remote_budget *b, struct cap_table *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		ranges_free(b, &t->e[i].ranges);
	free(t->e);
	remote_budget_give(b, (uint64_t)t->cap * sizeof(*t->e));
}

void remote_captures_free(struct remote_captures *c)
{
	if (!c)
		return;
	table_free(c->budget, &c->captures);
	table_free(c->budget, &c->streams);
	table_free(c->budget, &c->events);
	table_free(c->budget, &c->graphs);
	table_free(c->budget, &c->execs);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct cap_entry *find(struct cap_table *t, uint64_t key)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->e[i].key == key)
			return &t->e[i];
	return NULL;
}

/* The entry for key, new (zeroed) if absent; NULL when out of memory or budget. */
static struct cap_entry *get(struct remote_budget *b, struct cap_table *t, uint64_t key)
{
	struct cap_entry *e = find(t, key);

	if (e)
		return e;
	if (t->n == t->cap) {
		struct cap_entry *ne = remote_budget_grow(b, t->e, &t->cap, sizeof(*t->e), 8, "a capture table");

		if (!ne)
			return NULL;
		t->e = ne;
	}
	e = &t->e[t->n++];
	*e = (struct cap_entry){ .key = key };
	return e;
}

static void drop(struct remote_budget *b, struct cap_table *t, struct cap_entry *e)
{
	ranges_free(b, &e->ranges);
	*e = t->e[--t->n];
}

static bool ranges_add(struct remote_budget *b, struct cap_ranges *r, const struct mearas_span *x)
{
	if (r->n == r->cap) {
		struct mearas_span *nr = remote_budget_grow(b, r->r, &r->cap, sizeof(*r->r), 4, "a capture's copies");

		if (!nr)
			return false;
		r->r = nr;
	}
	r->r[r->n++] = *x;
	return true;
}

static bool ranges_copy(struct remote_budget *b, struct cap_ranges *dst, const struct cap_ranges *src)
{
	ranges_free(b, dst);
	if (!src->n)
		return true;
	if (!remote_budget_take(b, (uint64_t)src->n * sizeof(*dst->r), "a graph's copies"))
		return false;
	dst->r = malloc(src->n * sizeof(*dst->r));
	if (!dst->r) {
		remote_budget_give(b, (uint64_t)src->n * sizeof(*dst->r));
		return false;
	}
	memcpy(dst->r, src->r, src->n * sizeof(*dst->r));
	dst->n = dst->cap = src->n;
	return true;
}

uint64_t remote_stream_key(const struct mearas_sqe *e)
{
	if (e->flags & MEARAS_SQE_PER_THREAD)
		return (1ull << 63) | ((uint64_t)e->cq << 32) | e->stream;
	return e->stream;
}

static struct cap_entry *capture_of(struct remote_captures *c, uint64_t stream_key)
{
	struct cap_entry *s = find(&c->streams, stream_key);

	return s ? find(&c->captures, s->capture) : NULL;
}

/* Stream membership ends with the capture: drop every stream and event of it. */
static void end_capture(struct remote_captures *c, uint32_t capture)
{
	for (uint32_t i = 0; i < c->streams.n;)
		if (c->streams.e[i].capture == capture)
			drop(c->budget, &c->streams, &c->streams.e[i]);
		else
			i++;
	for (uint32_t i = 0; i < c->events.n;)
		if (c->events.e[i].capture == capture)
			drop(c->budget, &c->events, &c->events.e[i]);
		else
			i++;
	drop(c->budget, &c->captures, find(&c->captures, capture));
}

static bool note_locked(struct remote_captures *c, const struct mearas_sqe *e)
{
	uint64_t key = remote_stream_key(e);
	struct cap_entry *cap = capture_of(c, key), *x, *y;

	switch (e->op) {
	case MEARAS_OP_CAPTURE_BEGIN:
		if (cap)
			return true; /* the device refuses a second begin */
		x = get(c->budget, &c->captures, ++c->next_capture);
		y = x ? get(c->budget, &c->streams, key) : NULL;
		if (!y) {
			if (x)
				drop(c->budget, &c->captures, x);
			return false;
		}
		y->capture = c->next_capture;
		return true;
	case MEARAS_OP_CAPTURE_END:
		if (!cap)
			return true;
		{
			uint32_t id = (uint32_t)cap->key;
			bool ok = true;

			if (cap->ranges.n) {
				x = get(c->budget, &c->graphs, e->args.CAPTURE_END.graph); /* another table: cap stays valid */
				ok = x && ranges_copy(c->budget, &x->ranges, &cap->ranges);
			}
			end_capture(c, id);
			return ok;
		}
	case MEARAS_OP_EVENT_RECORD:
		/* an external record is a node of the graph, not a fork of the capture */
		if (cap && (e->args.EVENT_RECORD.flags & MEARAS_EVENT_RECORD_EXTERNAL))
			return true;
		if (cap) {
			x = get(c->budget, &c->events, e->args.EVENT_RECORD.event);
			if (!x)
				return false;
			x->capture = (uint32_t)cap->key;
		} else if ((x = find(&c->events, e->args.EVENT_RECORD.event))) {
			drop(c->budget, &c->events, x); /* recorded again outside the capture */
		}
		return true;
	case MEARAS_OP_STREAM_WAIT_EVENT:
		x = find(&c->events, e->args.STREAM_WAIT_EVENT.event);
		if (x && !cap) {
			uint32_t id = x->capture;

			y = get(c->budget, &c->streams, key);
			if (!y)
				return false;
			y->capture = id;
		}
		return true;
	case MEARAS_OP_GRAPH_INSTANTIATE:
		x = find(&c->graphs, e->args.GRAPH_INSTANTIATE.graph);
		if (x) {
			y = get(c->budget, &c->execs, e->args.GRAPH_INSTANTIATE.exec); /* another table: x stays valid */
			return y && ranges_copy(c->budget, &y->ranges, &x->ranges);
		}
		if ((y = find(&c->execs, e->args.GRAPH_INSTANTIATE.exec)))
			drop(c->budget, &c->execs, y);
		return true;
	case MEARAS_OP_GRAPH_CLONE:
		if (e->args.GRAPH_CLONE.clone == e->args.GRAPH_CLONE.graph)
			return true; /* the device refuses an id in use */
		if (!find(&c->graphs, e->args.GRAPH_CLONE.graph)) {
			if ((y = find(&c->graphs, e->args.GRAPH_CLONE.clone)))
				drop(c->budget, &c->graphs, y);
			return true;
		}
		/* the same table: the original is looked up again once the clone's entry is made */
		y = get(c->budget, &c->graphs, e->args.GRAPH_CLONE.clone);
		x = y ? find(&c->graphs, e->args.GRAPH_CLONE.graph) : NULL;
		return x && ranges_copy(c->budget, &y->ranges, &x->ranges);
	case MEARAS_OP_GRAPH_DESTROY:
		if ((x = find(&c->graphs, e->args.GRAPH_DESTROY.graph)))
			drop(c->budget, &c->graphs, x);
		return true;
	case MEARAS_OP_GRAPH_EXEC_DESTROY:
		if ((x = find(&c->execs, e->args.GRAPH_EXEC_DESTROY.exec)))
			drop(c->budget, &c->execs, x);
		return true;
	default:
		return true;
	}
}

bool remote_captures_note(struct remote_captures *c, const struct mearas_sqe *e)
{
	bool ok;

	if (!c)
		return true;
	pthread_mutex_lock(&c->lock);
	ok = note_locked(c, e);
	pthread_mutex_unlock(&c->lock);
	return ok;
}

void remote_captures_begin_failed(struct remote_captures *c, uint64_t stream_key)
{
	struct cap_entry *cap;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	cap = capture_of(c, stream_key);
	if (cap)
		end_capture(c, (uint32_t)cap->key);
	pthread_mutex_unlock(&c->lock);
}

bool remote_captures_take_copy(struct remote_captures *c, const struct mearas_sqe *e, const struct mearas_span *r,
			       bool *ok)
{
	struct cap_entry *cap;

	*ok = true;
	if (!c)
		return false;
	pthread_mutex_lock(&c->lock);
	cap = capture_of(c, remote_stream_key(e));
	if (cap)
		*ok = ranges_add(c->budget, &cap->ranges, r);
	pthread_mutex_unlock(&c->lock);
	return cap != NULL;
}

bool remote_captures_launch_ranges(struct remote_captures *c, const struct mearas_sqe *e, struct mearas_span **out,
				   uint32_t *n)
{
	struct cap_entry *x;
	bool ok = true;

	*out = NULL;
	*n = 0;
	if (!c || e->op != MEARAS_OP_GRAPH_LAUNCH)
		return true;
	pthread_mutex_lock(&c->lock);
	x = find(&c->execs, e->args.GRAPH_LAUNCH.exec);
	if (x && x->ranges.n) {
		*out = malloc(x->ranges.n * sizeof(**out));
		ok = *out != NULL;
		if (ok) {
			memcpy(*out, x->ranges.r, x->ranges.n * sizeof(**out));
			*n = x->ranges.n;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return ok;
}
