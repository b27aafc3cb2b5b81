#include "link_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mearas/hoptrace.h"
#include "mearas/log_line.h"

uint64_t link_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void link_log(const struct mearas_link_config *cfg, enum mearas_link_log_level level,
	      const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cfg && cfg->log) {
		cfg->log(cfg->log_ctx, level, msg);
		return;
	}
	/* mearas's log line (mearas/log_line.h), one write per line */
	char line[640];
	int n = mearas_log_line_prefix(line, sizeof(line), "remote-link", (int)level);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	n += snprintf(line + n, sizeof(line) - (size_t)n, "%s\n", msg);
	if ((size_t)n >= sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

void mearas_link_config_init(struct mearas_link_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->transport = MEARAS_LINK_TRANSPORT_TCP;
	cfg->encryption = MEARAS_LINK_ENCRYPTION_TLS;
	cfg->batch_max_bytes = 64u << 10;
	cfg->batch_max_msgs = 256;
	cfg->batch_delay_us = 50;
	cfg->heartbeat_ms = 500;
	cfg->dead_ms = 3000;
	cfg->connect_timeout_ms = 3000;
	cfg->handshake_ms = 3000;
	cfg->max_pending = 16;
	cfg->max_links = 64;
	cfg->fd_reserve = 64;
}

void link_config_effective(const struct mearas_link_config *in, struct mearas_link_config *out)
{
	*out = *in;
	if (!out->batch_max_bytes)
		out->batch_max_bytes = 64u << 10;
	if (out->batch_max_bytes > MEARAS_LINK_MAX_MSG)
		out->batch_max_bytes = MEARAS_LINK_MAX_MSG;
	if (!out->batch_max_msgs)
		out->batch_max_msgs = 256;
	if (!out->chunk_bytes)
		out->chunk_bytes = out->transport == MEARAS_LINK_TRANSPORT_VERBS ? 64u << 10 : 1u << 20;
	if (out->chunk_bytes > LINK_MAX_BODY_CHUNK)
		out->chunk_bytes = LINK_MAX_BODY_CHUNK;
	if (!out->heartbeat_ms)
		out->heartbeat_ms = 500;
	if (out->heartbeat_ms > LINK_DEAD_MS_MAX / 2)
		out->heartbeat_ms = LINK_DEAD_MS_MAX / 2;
	if (!out->dead_ms)
		out->dead_ms = 3000;
	if (out->dead_ms > LINK_DEAD_MS_MAX)
		out->dead_ms = LINK_DEAD_MS_MAX;
	if (out->dead_ms < 2 * out->heartbeat_ms)
		out->dead_ms = 2 * out->heartbeat_ms;
	if (!out->connect_timeout_ms)
		out->connect_timeout_ms = 3000;
	if (!out->handshake_ms)
		out->handshake_ms = 3000;
	if (!out->max_pending)
		out->max_pending = 16;
	if (!out->max_links)
		out->max_links = 64;
	if (!out->fd_reserve)
		out->fd_reserve = 64;
	if (!out->version_major) {
		out->version_major = MEARAS_LINK_VERSION_MAJOR;
		out->version_minor = MEARAS_LINK_VERSION_MINOR;
	}
	if (!out->node_name)
		out->node_name = "";
	if (out->streams > LINK_STREAMS_MAX)
		out->streams = LINK_STREAMS_MAX;
}

bool link_key_copy(const struct mearas_link_config *in, struct mearas_link_config *out, uint8_t **key)
{
	if (!in->key_len)
		return true;
	*key = malloc(in->key_len);
	if (!*key)
		return false;
	memcpy(*key, in->key, in->key_len);
	out->key = *key;
	return true;
}

uint32_t link_peer_dead_ms(uint32_t dead_ms, uint32_t peer_heartbeat_ms)
{
	/* 64-bit: three periods of a 32-bit interval do not fit 32 bits */
	uint64_t want = (uint64_t)peer_heartbeat_ms * 3;

	if (want > LINK_DEAD_MS_MAX)
		want = LINK_DEAD_MS_MAX;
	return want > dead_ms ? (uint32_t)want : dead_ms;
}

int link_read_exact(struct link_transport *t, void *buf, size_t len, uint32_t poll_ms,
		    uint32_t dead_ms, uint64_t *last_rx_ns, const int *stop)
{
	uint8_t *p = buf;
	while (len) {
		if (t->rx_pos < t->rx_have) {
			size_t k = t->rx_have - t->rx_pos < len ? t->rx_have - t->rx_pos : len;
			memcpy(p, t->rx_buf + t->rx_pos, k);
			t->rx_pos += (uint32_t)k;
			p += k;
			len -= k;
			continue;
		}
		if (__atomic_load_n(stop, __ATOMIC_ACQUIRE))
			return MEARAS_LINK_E_CLOSED;
		/* just after data more usually follows: look again without sleeping */
		bool spin = t->rx_spin_ns &&
			    link_now_ns() - __atomic_load_n(last_rx_ns, __ATOMIC_RELAXED) < t->rx_spin_ns;
		/* a large read lands in place; a small one fills the buffer (read-ahead) */
		bool direct = len >= LINK_RX_BUF / 2;
		if (!spin && t->idle)
			t->idle(t->idle_ctx, false);
		int n = t->ops->recv(t, direct ? p : t->rx_buf, direct ? len : LINK_RX_BUF,
				     spin ? 0 : poll_ms);
		if (n < 0)
			return n;
		if (n == 0) {
			if (spin && t->idle)
				t->idle(t->idle_ctx, true);
			if (link_now_ns() - __atomic_load_n(last_rx_ns, __ATOMIC_RELAXED) >
			    (uint64_t)dead_ms * 1000000ull)
				return MEARAS_LINK_E_BROKEN;
			continue;
		}
		__atomic_store_n(last_rx_ns, link_now_ns(), __ATOMIC_RELAXED);
		mearas_hop(MEARAS_HOP_recv);
		if (direct) {
			p += n;
			len -= (size_t)n;
		} else {
			t->rx_pos = 0;
			t->rx_have = (uint32_t)n;
		}
	}
	return MEARAS_LINK_OK;
}

const char *mearas_link_strerror(int status)
{
	switch (status) {
	case MEARAS_LINK_OK: return "ok";
	case MEARAS_LINK_E_INVAL: return "invalid argument";
	case MEARAS_LINK_E_NOMEM: return "out of memory";
	case MEARAS_LINK_E_CONNECT: return "cannot connect to peer";
	case MEARAS_LINK_E_AUTH: return "authentication failed (cluster key missing or wrong)";
	case MEARAS_LINK_E_VERSION: return "protocol version mismatch between nodes";
	case MEARAS_LINK_E_PROTO: return "malformed data from peer";
	case MEARAS_LINK_E_BROKEN: return "link broken (peer died, link cut or heartbeat lost)";
	case MEARAS_LINK_E_TIMEOUT: return "call timed out";
	case MEARAS_LINK_E_TOOBIG: return "reply larger than the buffer";
	case MEARAS_LINK_E_NODEV: return "transport unavailable (no RDMA device)";
	case MEARAS_LINK_E_CLOSED: return "link closed";
	case MEARAS_LINK_E_SYS: return "system call failed";
	case MEARAS_LINK_E_ENCRYPTION: return "link encryption differs between the nodes (--link-encryption)";
	default: return "unknown error";
	}
}

int link_buf_reserve(uint8_t **buf, size_t *cap, size_t need, size_t grow_to)
{
	if (need <= *cap)
		return MEARAS_LINK_OK;
	if (grow_to < need)
		grow_to = need;
	uint8_t *nb = realloc(*buf, grow_to);
	if (!nb)
		return MEARAS_LINK_E_NOMEM;
	*buf = nb;
	*cap = grow_to;
	return MEARAS_LINK_OK;
}

int link_iov_total(const struct iovec *iov, int iovcnt, int max, size_t *total)
{
	if (iovcnt < 0 || iovcnt > max || (iovcnt > 0 && !iov))
		return MEARAS_LINK_E_INVAL;
	size_t s = 0;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return MEARAS_LINK_E_INVAL;
		s += iov[i].iov_len;
		if (s > MEARAS_LINK_MAX_MSG)
			return MEARAS_LINK_E_INVAL;
	}
	*total = s;
	return MEARAS_LINK_OK;
}
