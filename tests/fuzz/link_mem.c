// SPDX-License-Identifier: MIT
/* The fuzz targets' remote-link transport over a byte buffer (fuzz_link.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz_link.h"
#include "mearas/clock.h"

struct mem_transport {
	struct link_transport base;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const uint8_t *data;
	size_t len, pos;
	uint8_t frag;
	bool closed_gate;
	bool down;
	volatile uint8_t sum; /* what was sent, read byte by byte */
};

static struct mem_transport *mt(struct link_transport *t)
{
	return (struct mem_transport *)t;
}

static int mem_send_iov(struct link_transport *t, const struct iovec *iov, int iovcnt)
{
	struct mem_transport *m = mt(t);
	uint8_t sum = 0;
	bool down;

	for (int i = 0; i < iovcnt; i++)
		for (size_t k = 0; k < iov[i].iov_len; k++)
			sum ^= ((const uint8_t *)iov[i].iov_base)[k];
	pthread_mutex_lock(&m->lock);
	down = m->down;
	m->sum ^= sum;
	pthread_mutex_unlock(&m->lock);
	return down ? MEARAS_LINK_E_BROKEN : MEARAS_LINK_OK;
}

/* Waits on the gate for timeout_ms at most; lock held. */
static void wait_gate(struct mem_transport *m, uint32_t timeout_ms)
{
	struct timespec ts = mearas_realtime_after_ms(timeout_ms);

	while (m->closed_gate && !m->down)
		if (pthread_cond_timedwait(&m->cond, &m->lock, &ts))
			break;
}

static int mem_recv(struct link_transport *t, void *buf, size_t len, uint32_t timeout_ms)
{
	struct mem_transport *m = mt(t);
	size_t n;
	int rc;

	pthread_mutex_lock(&m->lock);
	if (m->closed_gate)
		wait_gate(m, timeout_ms);
	if (m->down) {
		rc = MEARAS_LINK_E_BROKEN;
	} else if (m->closed_gate) {
		rc = 0; /* nothing yet */
	} else if (m->pos == m->len) {
		rc = MEARAS_LINK_E_BROKEN; /* the peer's bytes are all read: EOF */
	} else {
		n = m->len - m->pos < len ? m->len - m->pos : len;
		if (m->frag && n > m->frag)
			n = m->frag;
		memcpy(buf, m->data + m->pos, n);
		m->pos += n;
		rc = (int)n;
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static void mem_shutdown(struct link_transport *t)
{
	struct mem_transport *m = mt(t);

	pthread_mutex_lock(&m->lock);
	m->down = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

static void mem_destroy(struct link_transport *t)
{
	struct mem_transport *m = mt(t);

	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->cond);
	free(m);
}

/* what is sent goes nowhere: always taken */
static bool mem_tx_clear(struct link_transport *t)
{
	(void)t;
	return true;
}

LINK_TRANSPORT_OPS(mem, "fuzz", mem_shutdown, mem_tx_clear);

struct link_transport *mem_transport_new(const uint8_t *data, size_t len, uint8_t frag, bool gated)
{
	struct mem_transport *m = calloc(1, sizeof(*m));

	if (!m)
		abort();
	m->base.ops = &mem_ops;
	snprintf(m->base.security, sizeof(m->base.security), "fuzzer bytes");
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	m->data = data;
	m->len = len;
	m->frag = frag;
	m->closed_gate = gated;
	return &m->base;
}

void mem_transport_open(struct link_transport *t)
{
	struct mem_transport *m = mt(t);

	pthread_mutex_lock(&m->lock);
	m->closed_gate = false;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

void fuzz_link_log(void *ctx, enum mearas_link_log_level level, const char *msg)
{
	static int verbose = -1;

	(void)ctx;
	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	if (verbose)
		fprintf(stderr, "link %d: %s\n", (int)level, msg);
}
