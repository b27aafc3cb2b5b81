// SPDX-License-Identifier: MIT
/* Remote vGPUs: what both ends share (tokens, options, link settings). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remote_link.h"
#include "remote.h"
#include "core/worker.h"

int remote_tokens_init(struct remote_tokens *t, uint32_t cap)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->e = calloc(cap, sizeof(*t->e));
	t->tok = calloc(cap, sizeof(*t->tok));
	t->cap = cap;
	t->next = 1;
	return t->e && t->tok ? 0 : -1;
}

uint64_t remote_tokens_add(struct remote_tokens *t, const struct remote_token *in)
{
	uint64_t token = 0;

	pthread_mutex_lock(&t->lock);
	if (!t->failed && t->used < t->cap) {
		/* tokens are sparse: skip indices still in flight */
		while (t->e[t->next & (t->cap - 1)].used)
			t->next++;
		token = t->next++;
		t->e[token & (t->cap - 1)] = *in;
		t->e[token & (t->cap - 1)].used = 1;
		t->tok[token & (t->cap - 1)] = token;
		t->used++;
	}
	pthread_mutex_unlock(&t->lock);
	return token;
}

bool remote_tokens_take(struct remote_tokens *t, uint64_t token, struct remote_token *out)
{
	uint32_t i = (uint32_t)(token & (t->cap - 1));
	bool ok = false;

	pthread_mutex_lock(&t->lock);
	if (token && t->e[i].used && t->tok[i] == token) {
		*out = t->e[i];
		t->e[i].used = 0;
		t->used--;
		ok = true;
	}
	pthread_mutex_unlock(&t->lock);
	return ok;
}

void remote_tokens_fail(struct remote_tokens *t, void (*fn)(void *ctx, const struct remote_token *e), void *ctx)
{
	pthread_mutex_lock(&t->lock);
	t->failed = 1;
	for (uint32_t i = 0; i < t->cap; i++) {
		if (!t->e[i].used)
			continue;
		t->e[i].used = 0;
		t->used--;
		fn(ctx, &t->e[i]);
	}
	pthread_mutex_unlock(&t->lock);
}

bool remote_d2h_range(const struct mearas_sqe *e, uint64_t data_size, struct mearas_span *r)
{
	uint64_t span;

	if (!mearas_op_writes(e, r))
		return false;
	if (r->rows > (1ull << 32) || r->pitch > (1ull << 40) || !range_2d_span(r->width, r->pitch, r->rows, &span))
		return false;
	return r->off <= data_size && span <= data_size - r->off;
}

int remote_parse_target(struct remote_config *rc, const char *spec)
{
	char buf[REMOTE_HOST_MAX + 32], *eq, *colon, *slash, *end;
	unsigned long vgpu, port, gpu = 0;

	if (strlen(spec) >= sizeof(buf))
		return -1;
	strcpy(buf, spec);
	eq = strchr(buf, '=');
	if (!eq)
		return -1;
	*eq = 0;
	errno = 0;
	vgpu = strtoul(buf, &end, 10);
	if (errno || end == buf || *end || vgpu >= MEARAS_MAX_VGPUS)
		return -1;
	slash = strrchr(eq + 1, '/');
	if (slash) {
		*slash = 0;
		gpu = strtoul(slash + 1, &end, 10);
		if (end == slash + 1 || *end || gpu > 64)
			return -1;
	}
	colon = strrchr(eq + 1, ':');
	if (!colon || colon == eq + 1)
		return -1;
	*colon = 0;
	port = strtoul(colon + 1, &end, 10);
	if (end == colon + 1 || *end || port == 0 || port > 65535)
		return -1;
	snprintf(rc->target[vgpu].host, sizeof(rc->target[vgpu].host), "%s", eq + 1);
	rc->target[vgpu].port = (uint16_t)port;
	rc->target[vgpu].gpu = (int)gpu;
	return 0;
}

int remote_load_key(struct remote_config *rc, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		fprintf(stderr, "mearasd: cluster key file %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = read(fd, rc->key, sizeof(rc->key));
	close(fd);
	while (n > 0 && (rc->key[n - 1] == '\n' || rc->key[n - 1] == '\r'))
		n--;
	if (n <= 0) {
		fprintf(stderr, "mearasd: cluster key file %s is empty\n", path);
		return -1;
	}
	rc->key_len = (size_t)n;
	snprintf(rc->key_file, sizeof(rc->key_file), "%s", path);
	return 0;
}

bool remote_vgpu_is_remote(const struct remote_config *rc, unsigned vgpu)
{
	return vgpu < MEARAS_MAX_VGPUS && rc->target[vgpu].host[0];
}

void remote_link_config(const struct remote_config *rc, struct mearas_link_config *lc)
{
	mearas_link_config_init(lc);
	if (rc->key_len) {
		lc->key = rc->key;
		lc->key_len = rc->key_len;
	}
	lc->encryption = rc->encryption_off ? MEARAS_LINK_ENCRYPTION_OFF : MEARAS_LINK_ENCRYPTION_TLS;
	if (rc->dead_ms)
		lc->dead_ms = rc->dead_ms;
	if (rc->batch_msgs)
		lc->batch_max_msgs = rc->batch_msgs;
	if (rc->batch_us)
		lc->batch_delay_us = rc->batch_us;
	if (rc->handshake_ms)
		lc->handshake_ms = rc->handshake_ms;
	if (rc->max_pending)
		lc->max_pending = rc->max_pending;
	if (rc->max_links)
		lc->max_links = rc->max_links;
	if (rc->fd_reserve)
		lc->fd_reserve = rc->fd_reserve;
	lc->node_name = "mearasd";
}

unsigned remote_spin_us(unsigned cfg_spin_us)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (!cfg_spin_us || ncpu < REMOTE_SPIN_MIN_CPUS)
		return ncpu < REMOTE_SPIN_MIN_CPUS ? 0 : cfg_spin_us;
	return cfg_spin_us < REMOTE_SPIN_US ? REMOTE_SPIN_US : cfg_spin_us;
}
