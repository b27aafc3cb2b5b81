/* SPDX-License-Identifier: MIT */
/* Building seed inputs of the fuzz targets in memory and writing them out. */
#ifndef MEARAS_FUZZ_SEEDS_H
#define MEARAS_FUZZ_SEEDS_H

#include <stddef.h>
#include <stdint.h>

struct seedbuf {
	uint8_t *p;
	size_t len, cap;
};

void sb_put(struct seedbuf *b, const void *p, size_t n);
void sb_u8(struct seedbuf *b, uint8_t v);
void sb_u32(struct seedbuf *b, uint32_t v);
/* Writes the bytes to DIR/NAME and empties b; 0 or -1 (with a message). */
int sb_write(struct seedbuf *b, const char *dir, const char *name);

#endif
