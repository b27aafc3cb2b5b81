// SPDX-License-Identifier: MIT
/*
 * The sim's linker model (LINK records on mearasd --device=sim). The sim
 * runs no code, so a link need only give an image the sim's module loader
 * reads with the kernels of every input: the inputs laid end to end as fat
 * binaries (a fat binary input as it is; PTX text and a cubin each wrapped
 * in one of one entry), which the loader's parser takes (several fat
 * binaries laid end to end, as in an executable's section). Like a linker it
 * refuses what it cannot resolve: a function a PTX input declares .extern
 * that no PTX input defines is CUDA_ERROR_INVALID_PTX, with a log line that
 * names it. Objects and libraries are refused (CUDA_ERROR_NOT_SUPPORTED):
 * the model has no archive reader, and so are inputs of more than 65536
 * function definitions (each extern is looked up in their sorted table).
 * Options change nothing here.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <driver_types.h>

#include "mearas/fatbin.h"
#include "mearas/link.h"
#include "device_sim_link.h"

#define FATBIN_HDR 16u
#define ENTRY_HDR 0x40u

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static bool is_fatbin(const void *p)
{
	uint32_t magic;

	memcpy(&magic, p, 4);
	return magic == MEARAS_FATBIN_MAGIC;
}

/* bytes a wrapped input takes (PTX gets its NUL) */
static uint64_t wrapped_size(const struct mdev_link_input *in)
{
	if (in->type == CU_JIT_INPUT_FATBINARY)
		return mearas_link_pad8(in->size);
	return FATBIN_HDR + ENTRY_HDR + mearas_link_pad8(in->size + (in->type == CU_JIT_INPUT_PTX));
}

/* writes input in as a fat binary at out (wrapped_size bytes) */
static void wrap(const struct mdev_link_input *in, uint8_t *out)
{
	uint64_t payload;

	memset(out, 0, wrapped_size(in));
	if (in->type == CU_JIT_INPUT_FATBINARY) {
		memcpy(out, in->data, in->size);
		return;
	}
	payload = mearas_link_pad8(in->size + (in->type == CU_JIT_INPUT_PTX));
	put32(out, MEARAS_FATBIN_MAGIC);
	put16(out + 4, 1);
	put16(out + 6, FATBIN_HDR);
	put64(out + 8, ENTRY_HDR + payload);
	put16(out + FATBIN_HDR, in->type == CU_JIT_INPUT_PTX ? 1 : 2);   /* entry kind: PTX, ELF */
	put32(out + FATBIN_HDR + 0x04, ENTRY_HDR);
	put64(out + FATBIN_HDR + 0x08, payload);
	put32(out + FATBIN_HDR + 0x1c, 90);
	memcpy(out + FATBIN_HDR + ENTRY_HDR, in->data, in->size);
}

/* the name of the function whose directive (".func") starts at p: its
 * return parameters, in parentheses, come first */
static size_t func_name(const char *p, const char *end, const char **name)
{
	size_t n = 0;

	while (p < end && isspace((unsigned char)*p))
		p++;
	if (p < end && *p == '(') {
		while (p < end && *p != ')')
			p++;
		if (p < end)
			p++;
		while (p < end && isspace((unsigned char)*p))
			p++;
	}
	*name = p;
	while (p + n < end && (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '$'))
		n++;
	return n;
}

/* the functions the PTX inputs define, sorted, so that each extern is
 * looked up once: searching the inputs for every declaration was quadratic
 * in a client's input (minutes for a few MiB) */
#define SIM_LINK_MAX_DEFS 65536u

struct def {
	const char *name;
	size_t len;
};

static int def_cmp(const void *a, const void *b)
{
	const struct def *x = a, *y = b;
	int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* the definitions (".visible .func" or ".weak .func") into defs (at most
 * SIM_LINK_MAX_DEFS), sorted; false when there are more */
static bool collect_defs(const struct mdev_link_input *in, unsigned n, struct def *defs, size_t *ndefs)
{
	static const char *const dirs[] = { ".visible .func", ".weak .func" };

	*ndefs = 0;
	for (unsigned i = 0; i < n; i++) {
		const char *t = in[i].data, *end = t + in[i].size;

		if (in[i].type != CU_JIT_INPUT_PTX)
			continue;
		for (unsigned k = 0; k < 2; k++)
			for (const char *p = t; (p = memmem(p, (size_t)(end - p), dirs[k], strlen(dirs[k])));) {
				const char *nm;
				size_t nl;

				p += strlen(dirs[k]);
				nl = func_name(p, end, &nm);
				if (!nl)
					continue;
				if (*ndefs == SIM_LINK_MAX_DEFS)
					return false;
				defs[(*ndefs)++] = (struct def){ .name = nm, .len = nl };
			}
	}
	qsort(defs, *ndefs, sizeof(*defs), def_cmp);
	return true;
}

/* the first function a PTX input declares .extern that none defines: its
 * name (*name, the length returned), 0 when every one is defined */
static size_t unresolved(const struct mdev_link_input *in, unsigned n, const struct def *defs, size_t ndefs,
			 const char **name)
{
	static const char dir[] = ".extern .func";

	for (unsigned i = 0; i < n; i++) {
		const char *t = in[i].data, *end = t + in[i].size;

		if (in[i].type != CU_JIT_INPUT_PTX)
			continue;
		for (const char *p = t; (p = memmem(p, (size_t)(end - p), dir, sizeof(dir) - 1));) {
			struct def key;

			p += sizeof(dir) - 1;
			key.len = func_name(p, end, &key.name);
			*name = key.name;
			/* the device runtime's functions (vprintf ...) are the driver's */
			if (key.len && !bsearch(&key, defs, ndefs, sizeof(*defs), def_cmp) &&
			    !(key.len == 7 && !memcmp(key.name, "vprintf", 7)) &&
			    !(key.len == 12 && !memcmp(key.name, "__assertfail", 12)))
				return key.len;
		}
	}
	return 0;
}

static void fail(int code, const char *msg, void *out, uint64_t cap, uint64_t *size, int *link_error)
{
	*size = strlen(msg);
	memcpy(out, msg, *size < cap ? *size : cap);
	*link_error = code;
}

int sim_link(struct mdev *d, const struct mdev_link_input *in, unsigned n, const uint32_t *opt, const uint32_t *val,
	     unsigned nopt, void *out, uint64_t cap, uint64_t *size, int *link_error)
{
	char msg[256];
	const char *name;
	struct def *defs;
	uint64_t total = 0, off = 0;
	size_t len, ndefs;

	(void)d, (void)opt, (void)val, (void)nopt;
	*link_error = 0;
	for (unsigned i = 0; i < n; i++) {
		if (in[i].type == CU_JIT_INPUT_OBJECT || in[i].type == CU_JIT_INPUT_LIBRARY) {
			fail(CUDA_ERROR_NOT_SUPPORTED, "sim: the linker model takes no objects or libraries", out, cap,
			     size, link_error);
			return 0;
		}
		if (in[i].type == CU_JIT_INPUT_FATBINARY &&
		    (in[i].size < FATBIN_HDR || !is_fatbin(in[i].data))) {
			snprintf(msg, sizeof(msg), "sim: input %u is not a fat binary", i);
			fail(CUDA_ERROR_INVALID_IMAGE, msg, out, cap, size, link_error);
			return 0;
		}
		total += wrapped_size(&in[i]);
	}
	defs = malloc(SIM_LINK_MAX_DEFS * sizeof(*defs));
	if (!defs)
		return cudaErrorMemoryAllocation;
	if (!collect_defs(in, n, defs, &ndefs)) {
		free(defs);
		fail(CUDA_ERROR_NOT_SUPPORTED, "sim: the linker model takes at most 65536 function definitions", out,
		     cap, size, link_error);
		return 0;
	}
	len = unresolved(in, n, defs, ndefs, &name);
	free(defs);
	if (len) {
		snprintf(msg, sizeof(msg), "sim: unresolved extern function '%.*s'", (int)(len > 128 ? 128 : len),
			 name);
		fail(CUDA_ERROR_INVALID_PTX, msg, out, cap, size, link_error);
		return 0;
	}
	*size = total;
	if (total > cap)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		wrap(&in[i], (uint8_t *)out + off);
		off += wrapped_size(&in[i]);
	}
	return 0;
}
