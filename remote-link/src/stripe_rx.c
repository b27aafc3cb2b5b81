/* Server side of striped bulk transfers (stripe.h): the chunks of each
 * transfer are counted as they land, checked against the transfer, and the
 * main connection's BULK_END waits for the last of them. The peer proved the
 * key, yet what it sends is still checked: a chunk that contradicts its
 * transfer fails the link, and a transfer costs one slot of a fixed table. */
#include "link_internal.h"
#include "stripe.h"

#include <stdlib.h>
#include <time.h>

struct xfer {
	uint64_t id;            /* 0: never used (ids start at 1) */
	uint64_t total;
	uint64_t claimed;       /* bytes of chunks begun */
	uint64_t landed;        /* bytes of chunks handed over */
};

struct link_stripe_rx {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t streams;
	uint32_t taken;         /* bitmap of attached indexes */
	uint32_t active;        /* data connections attached, not detached yet */
	bool closed;
	uint64_t ended;         /* the last transfer whose BULK_END passed */
	struct xfer x[LINK_STRIPE_WINDOW];
};

struct link_stripe_rx *stripe_rx_new(uint32_t streams)
{
	struct link_stripe_rx *rx;
	pthread_condattr_t a;

	if (!streams || streams > LINK_STREAMS_MAX)
		return NULL;
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return NULL;
	rx->streams = streams;
	pthread_mutex_init(&rx->lock, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&rx->cond, &a);
	pthread_condattr_destroy(&a);
	return rx;
}

void stripe_rx_free(struct link_stripe_rx *rx)
{
	if (!rx)
		return;
	pthread_mutex_destroy(&rx->lock);
	pthread_cond_destroy(&rx->cond);
	free(rx);
}

uint32_t stripe_rx_streams(const struct link_stripe_rx *rx)
{
	return rx ? rx->streams : 0;
}

bool stripe_rx_attach(struct link_stripe_rx *rx, uint32_t index)
{
	bool ok;

	pthread_mutex_lock(&rx->lock);
	ok = !rx->closed && index < rx->streams && !(rx->taken & (1u << index));
	if (ok) {
		rx->taken |= 1u << index;
		rx->active++;
	}
	pthread_mutex_unlock(&rx->lock);
	return ok;
}

void stripe_rx_detach(struct link_stripe_rx *rx)
{
	pthread_mutex_lock(&rx->lock);
	rx->active--;
	pthread_cond_broadcast(&rx->cond);
	pthread_mutex_unlock(&rx->lock);
}

/* lock held: wait on the condition for at most 100 ms */
static void wait_a_while(struct link_stripe_rx *rx)
{
	struct timespec ts;
	uint64_t t = link_now_ns() + 100000000ull;

	ts.tv_sec = (time_t)(t / 1000000000ull);
	ts.tv_nsec = (long)(t % 1000000000ull);
	pthread_cond_timedwait(&rx->cond, &rx->lock, &ts);
}

int stripe_rx_chunk_begin(struct link_stripe_rx *rx, uint64_t id, uint64_t offset, uint64_t len, uint64_t total)
{
	int rc = MEARAS_LINK_OK;
	struct xfer *x;

	if (!id || !total || !len || offset >= total || len > total - offset)
		return MEARAS_LINK_E_PROTO;
	pthread_mutex_lock(&rx->lock);
	/* a data connection may run ahead of the main one, by a window at most */
	while (!rx->closed && id > rx->ended && id - rx->ended > LINK_STRIPE_WINDOW)
		wait_a_while(rx);
	if (rx->closed) {
		rc = MEARAS_LINK_E_CLOSED;
		goto out;
	}
	if (id <= rx->ended) {
		rc = MEARAS_LINK_E_PROTO; /* that transfer is over */
		goto out;
	}
	x = &rx->x[id % LINK_STRIPE_WINDOW];
	if (x->id != id) /* the slot's transfer ended (or none was there yet) */
		*x = (struct xfer){ .id = id, .total = total };
	if (x->total != total || len > x->total - x->claimed) {
		rc = MEARAS_LINK_E_PROTO;
		goto out;
	}
	x->claimed += len;
out:
	pthread_mutex_unlock(&rx->lock);
	return rc;
}

void stripe_rx_chunk_end(struct link_stripe_rx *rx, uint64_t id, uint64_t len)
{
	struct xfer *x = &rx->x[id % LINK_STRIPE_WINDOW];

	pthread_mutex_lock(&rx->lock);
	if (x->id == id) {
		x->landed += len;
		if (x->landed == x->total)
			pthread_cond_broadcast(&rx->cond);
	}
	pthread_mutex_unlock(&rx->lock);
}

int stripe_rx_end(struct link_stripe_rx *rx, uint64_t id, uint64_t total, const int *stop, uint32_t dead_ms)
{
	struct xfer *x = &rx->x[id % LINK_STRIPE_WINDOW];
	uint64_t seen = 0, since = link_now_ns();
	int rc = MEARAS_LINK_OK;

	pthread_mutex_lock(&rx->lock);
	if (id != rx->ended + 1 || !total) {
		rc = MEARAS_LINK_E_PROTO;
		goto out;
	}
	for (;;) {
		if (rx->closed || __atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
			rc = MEARAS_LINK_E_CLOSED;
			break;
		}
		if (x->id == id) {
			if (x->total != total) {
				rc = MEARAS_LINK_E_PROTO;
				break;
			}
			if (x->landed == total)
				break;
			if (x->landed != seen) {
				seen = x->landed;
				since = link_now_ns();
			}
		}
		if (link_now_ns() - since > (uint64_t)dead_ms * 1000000ull) {
			rc = MEARAS_LINK_E_BROKEN;
			break;
		}
		wait_a_while(rx);
	}
	if (!rc) {
		rx->ended = id;
		pthread_cond_broadcast(&rx->cond);
	}
out:
	pthread_mutex_unlock(&rx->lock);
	return rc;
}

void stripe_rx_close(struct link_stripe_rx *rx)
{
	pthread_mutex_lock(&rx->lock);
	rx->closed = true;
	pthread_cond_broadcast(&rx->cond);
	pthread_mutex_unlock(&rx->lock);
}

bool stripe_rx_closed(struct link_stripe_rx *rx)
{
	bool closed;

	pthread_mutex_lock(&rx->lock);
	closed = rx->closed;
	pthread_mutex_unlock(&rx->lock);
	return closed;
}

void stripe_rx_wait_detached(struct link_stripe_rx *rx)
{
	pthread_mutex_lock(&rx->lock);
	while (rx->active)
		wait_a_while(rx);
	pthread_mutex_unlock(&rx->lock);
}
