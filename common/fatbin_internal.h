/* SPDX-License-Identifier: MIT */
/* Shared between the fat binary container walker and the cubin/PTX parsers. */
#ifndef MEARAS_FATBIN_INTERNAL_H
#define MEARAS_FATBIN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mearas/fatbin.h"

/* Generous sanity bounds; CUDA itself allows at most 32764 bytes of parameters. */
#define FB_MAX_PARAMS 65536u
#define FB_MAX_PARAM_BYTES (1u << 20)

/* One kernel layout as found in one entry, before merging. */
struct fb_record {
	char *name;
	uint32_t nparams;
	uint32_t param_bytes;
	struct mearas_kparam *params;
	uint32_t entry;		/* entry number, for error messages */
	int from_ptx;		/* the layout came from PTX text, not a cubin */
};

/* a device variable's size, as a cubin's symbol table gives it */
struct fb_global {
	char *name;
	uint64_t size;
	int managed;		/* a __managed__ variable (STO_CUDA_MANAGED) */
};

struct fb_builder {
	struct fb_record *recs;
	size_t n, cap;
	struct fb_global *globals;
	size_t nglobals, capglobals;
	uint32_t entry;		/* entry being parsed now */
	int ptx;		/* it is PTX text */
	int scan_only;		/* mearas_image_may_print: entries are searched, not parsed */
	int prints;		/* a searched entry names printf's or assert's device function */
	int footprint;		/* mearas_module_footprint: entries are measured, not parsed */
	uint64_t footprint_max;	/* the largest entry's footprint so far */
};

void fb_seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Append one layout; takes ownership of params (malloc'd, nparams items,
 * may be NULL when nparams is 0) and copies name[0..namelen). Returns 0 or
 * -ENOMEM (params freed either way on failure).
 */
int fb_builder_add(struct fb_builder *b, const char *name, size_t namelen,
		   struct mearas_kparam *params, uint32_t nparams);

/* Append a device variable (name[0..namelen), size bytes, managed or not). 0 or -ENOMEM. */
int fb_builder_add_global(struct fb_builder *b, const char *name, size_t namelen, uint64_t size, int managed);

/* Whether code text (a cubin, PTX) names vprintf or __assertfail, the
 * functions device printf and assert call: code that names neither cannot
 * print. 1 or 0. */
int fb_text_prints(const uint8_t *text, size_t size);

/* Parsers: 0 or negative errno with err set. */
int fb_parse_cubin(const uint8_t *data, size_t size, struct fb_builder *b,
		   char *err, size_t errlen);
int fb_parse_ptx(const char *text, size_t size, struct fb_builder *b,
		 char *err, size_t errlen);

/* mearas_module_footprint of one cubin (its allocated sections or its
 * loaded segments, the larger) and of PTX text (the variables it defines in
 * global and constant memory). 0 or negative errno with err set. */
int fb_cubin_footprint(const uint8_t *data, size_t size, uint64_t *bytes, char *err, size_t errlen);
int fb_ptx_footprint(const char *text, size_t size, uint64_t *bytes, char *err, size_t errlen);

/* sums and products of sizes an image states, held at UINT64_MAX */
static inline uint64_t fb_add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static inline uint64_t fb_mul_sat(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static inline uint16_t fb_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t fb_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t fb_rd64(const uint8_t *p)
{
	return (uint64_t)fb_rd32(p) | (uint64_t)fb_rd32(p + 4) << 32;
}

#endif /* MEARAS_FATBIN_INTERNAL_H */
