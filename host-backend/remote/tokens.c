// SPDX-License-Identifier: MIT
/* Records in flight on a remote vGPU, by token (tokens.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tokens.h"

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

bool remote_tokens_room(struct remote_tokens *t, uint32_t n)
{
	bool ok;

	pthread_mutex_lock(&t->lock);
	ok = !t->failed && t->cap - t->used >= n;
	pthread_mutex_unlock(&t->lock);
	return ok;
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
