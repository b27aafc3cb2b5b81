// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_seeds.h"

void sb_put(struct seedbuf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			abort();
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

void sb_u8(struct seedbuf *b, uint8_t v)
{
	sb_put(b, &v, 1);
}

void sb_u32(struct seedbuf *b, uint32_t v)
{
	uint8_t le[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	sb_put(b, le, sizeof(le));
}

int sb_write(struct seedbuf *b, const char *dir, const char *name)
{
	char path[512];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b->p, 1, b->len, f) != b->len)
		rc = -1;
	if (f && fclose(f))
		rc = -1;
	if (rc)
		perror(path);
	b->len = 0;
	return rc;
}
