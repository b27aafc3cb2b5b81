/* SPDX-License-Identifier: MIT */
/* Public API: locating a registered fat binary and the per-kernel layout index. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatbin_entries.h"

struct mearas_fatbin_index {
	size_t n;
	struct mearas_kernel_info *kernels;	/* sorted by name */
	size_t nglobals;
	struct fb_global *globals;		/* sorted by name, one per name */
};

void fb_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int fb_text_prints(const uint8_t *text, size_t size)
{
	return memmem(text, size, "vprintf", 7) || memmem(text, size, "__assertfail", 12);
}

int mearas_image_may_print(const void *image, size_t size)
{
	const uint8_t *d = image;
	struct fb_builder b = { .scan_only = 1 };

	if (!image)
		return 1;
	/* a cubin or PTX text: searched as it is */
	if (size < 4 || fb_rd32(d) != MEARAS_FATBIN_MAGIC)
		return fb_text_prints(d, size);
	if (fb_parse_fatbins(d, size, &b, NULL, 0))
		return 1;
	return b.prints;
}

int mearas_module_footprint(const void *image, size_t size, uint64_t *bytes, char *err, size_t errlen)
{
	const uint8_t *d = image;
	struct fb_builder b = { .footprint = 1 };
	int rc;

	fb_seterr(err, errlen, "no error");
	if (!image || size < 4) {
		fb_seterr(err, errlen, "no image");
		return -EINVAL;
	}
	if (d[0] == 0x7f && d[1] == 'E' && d[2] == 'L' && d[3] == 'F')
		return fb_cubin_footprint(d, size, bytes, err, errlen);
	if (fb_rd32(d) != MEARAS_FATBIN_MAGIC)
		return fb_ptx_footprint(image, size, bytes, err, errlen);
	rc = fb_parse_fatbins(d, size, &b, err, errlen);
	if (!rc)
		*bytes = b.footprint_max;
	return rc;
}

int mearas_fatbin_locate(const void *wrapper_or_fatbin, const void **fatbin, size_t *size)
{
	if (!wrapper_or_fatbin || !fatbin || !size)
		return -EINVAL;
	const uint8_t *p = wrapper_or_fatbin;
	if (fb_rd32(p) == MEARAS_FATBINC_MAGIC) {
		uint32_t version = fb_rd32(p + 4);
		const void *data;
		if (version != 1 && version != 2)
			return -EINVAL;
		memcpy(&data, p + 8, sizeof(data));
		if (!data)
			return -EINVAL;
		p = data;
	}
	if (fb_rd32(p) != MEARAS_FATBIN_MAGIC)
		return -EINVAL;
	uint16_t hsize = fb_rd16(p + 6);
	uint64_t body = fb_rd64(p + 8);
	if (hsize < 16)
		return -EINVAL;
	if (body > (1ull << 40))
		return -EOVERFLOW;
	*fatbin = p;
	*size = hsize + (size_t)body;
	return 0;
}

/* The extent of an ELF image: its headers, program headers and sections. */
static int elf_size(const uint8_t *d, size_t max, size_t *size)
{
	uint64_t end = 64, phoff = fb_rd64(d + 0x20), shoff = fb_rd64(d + 0x28);
	uint16_t phentsize = fb_rd16(d + 0x36), phnum = fb_rd16(d + 0x38);
	uint16_t shentsize = fb_rd16(d + 0x3a), shnum = fb_rd16(d + 0x3c);

	if (d[4] != 2 || d[5] != 1 || shentsize != 64 || phoff > max || shoff > max)
		return -EINVAL;
	if (phoff + (uint64_t)phnum * phentsize > end)
		end = phoff + (uint64_t)phnum * phentsize;
	if (shoff + (uint64_t)shnum * shentsize > end)
		end = shoff + (uint64_t)shnum * shentsize;
	if (end > max)
		return -EOVERFLOW;
	for (uint16_t i = 0; i < shnum; i++) {
		const uint8_t *sh = d + shoff + 64ull * i;
		uint64_t off = fb_rd64(sh + 0x18), len = fb_rd64(sh + 0x20);

		if (fb_rd32(sh + 4) == 8 /* SHT_NOBITS */)
			continue;
		if (off > max || len > max - off)
			return -EOVERFLOW;
		if (off + len > end)
			end = off + len;
	}
	*size = (size_t)end;
	return 0;
}

int mearas_module_image_size(const void *image, size_t *size)
{
	const uint8_t *d = image;
	const void *fatbin;

	if (!image || !size)
		return -EINVAL;
	if (d[0] == 0x7f && d[1] == 'E' && d[2] == 'L' && d[3] == 'F')
		return elf_size(d, (size_t)1 << 40, size);
	if (mearas_fatbin_locate(image, &fatbin, size) == 0) {
		if (fatbin != image)
			return -EINVAL;     /* a wrapper: the caller passes what it points at */
		return 0;
	}
	*size = strnlen(image, (size_t)1 << 32) + 1;
	return *size > ((size_t)1 << 32) ? -EOVERFLOW : 0;
}

int mearas_module_image_extent(const void *image, size_t avail, size_t *size, char *err, size_t errlen)
{
	const uint8_t *d = image;
	int rc;

	if (!image || !size || avail < 4) {
		fb_seterr(err, errlen, "shorter than a magic number");
		return -EINVAL;
	}
	if (d[0] == 0x7f && d[1] == 'E' && d[2] == 'L' && d[3] == 'F') {
		rc = avail < 64 ? -EOVERFLOW : elf_size(d, avail, size);
		if (rc)
			fb_seterr(err, errlen, "ELF header malformed, or headers or sections past its %zu bytes", avail);
		return rc;
	}
	if (fb_rd32(d) == MEARAS_FATBINC_MAGIC) {
		fb_seterr(err, errlen, "a fat binary wrapper (it holds a pointer, not the fat binary)");
		return -EINVAL;
	}
	if (fb_rd32(d) == MEARAS_FATBIN_MAGIC) {
		uint16_t hsize = avail >= 16 ? fb_rd16(d + 6) : 0;
		uint64_t body = avail >= 16 ? fb_rd64(d + 8) : 0;

		if (avail < 16 || hsize < 16 || hsize > avail || body > avail - hsize) {
			fb_seterr(err, errlen, "fat binary header and body past its %zu bytes", avail);
			return -EOVERFLOW;
		}
		*size = hsize + (size_t)body;
		return 0;
	}
	d = memchr(image, 0, avail);
	if (!d) {
		fb_seterr(err, errlen, "text without its NUL in its %zu bytes", avail);
		return -EOVERFLOW;
	}
	*size = (size_t)(d - (const uint8_t *)image) + 1;
	return 0;
}

int fb_builder_add(struct fb_builder *b, const char *name, size_t namelen,
		   struct mearas_kparam *params, uint32_t nparams)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct fb_record *r = realloc(b->recs, cap * sizeof(*r));
		if (!r) {
			free(params);
			return -ENOMEM;
		}
		b->recs = r;
		b->cap = cap;
	}
	char *copy = malloc(namelen + 1);
	if (!copy) {
		free(params);
		return -ENOMEM;
	}
	memcpy(copy, name, namelen);
	copy[namelen] = '\0';

	uint32_t bytes = 0;
	for (uint32_t i = 0; i < nparams; i++)
		if (params[i].offset + params[i].size > bytes)
			bytes = params[i].offset + params[i].size;
	b->recs[b->n++] = (struct fb_record){ .name = copy, .nparams = nparams,
					      .param_bytes = bytes, .params = params,
					      .entry = b->entry, .from_ptx = b->ptx };
	return 0;
}

int fb_builder_add_global(struct fb_builder *b, const char *name, size_t namelen, uint64_t size, int managed)
{
	char *copy;

	if (b->nglobals == b->capglobals) {
		size_t cap = b->capglobals ? b->capglobals * 2 : 16;
		struct fb_global *g = realloc(b->globals, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		b->globals = g;
		b->capglobals = cap;
	}
	copy = malloc(namelen + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, name, namelen);
	copy[namelen] = '\0';
	b->globals[b->nglobals++] = (struct fb_global){ .name = copy, .size = size, .managed = managed };
	return 0;
}

static void builder_free(struct fb_builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->recs[i].name);
		free(b->recs[i].params);
	}
	free(b->recs);
	for (size_t i = 0; i < b->nglobals; i++)
		free(b->globals[i].name);
	free(b->globals);
}

static int global_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fb_global *)a)->name, ((const struct fb_global *)b)->name);
}

/* The builder's variables into idx, one per name (several architectures
 * may each carry it: the largest size wins). */
static void take_globals(struct fb_builder *b, struct mearas_fatbin_index *idx)
{
	size_t n = 0;

	if (!b->nglobals)
		return;
	qsort(b->globals, b->nglobals, sizeof(*b->globals), global_cmp);
	for (size_t i = 0; i < b->nglobals; i++) {
		if (n && !strcmp(b->globals[n - 1].name, b->globals[i].name)) {
			if (b->globals[i].size > b->globals[n - 1].size)
				b->globals[n - 1].size = b->globals[i].size;
			b->globals[n - 1].managed |= b->globals[i].managed;
			free(b->globals[i].name);
			continue;
		}
		b->globals[n++] = b->globals[i];
	}
	idx->globals = b->globals;
	idx->nglobals = n;
	b->globals = NULL;
	b->nglobals = b->capglobals = 0;
}

int mearas_fatbin_find_global(const struct mearas_fatbin_index *idx, const char *name, uint64_t *size)
{
	struct fb_global key = { .name = (char *)name };
	const struct fb_global *g;

	if (!idx || !name || !idx->nglobals)
		return -ENOENT;
	g = bsearch(&key, idx->globals, idx->nglobals, sizeof(key), global_cmp);
	if (!g)
		return -ENOENT;
	*size = g->size;
	return 0;
}

const char *mearas_fatbin_managed_at(const struct mearas_fatbin_index *idx, size_t i, uint64_t *size)
{
	for (size_t k = 0; idx && k < idx->nglobals; k++) {
		if (!idx->globals[k].managed || i--)
			continue;
		if (size)
			*size = idx->globals[k].size;
		return idx->globals[k].name;
	}
	return NULL;
}

static int record_cmp(const void *a, const void *b)
{
	const struct fb_record *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static int same_layout(const struct fb_record *a, const struct fb_record *b)
{
	return a->nparams == b->nparams &&
	       (a->nparams == 0 ||
		memcmp(a->params, b->params, a->nparams * sizeof(*a->params)) == 0);
}

/*
 * A cubin and PTX of one kernel that agree on every parameter's size but not
 * on offsets: a parameter aligned more than the constant bank's parameter
 * base (a __grid_constant__ CUtensorMap, 128 bytes at 64-byte alignment) is
 * padded in the cubin so that its absolute address is aligned, while PTX
 * counts from 0. The cubin's is the device-side layout the driver launches
 * with (cuFuncGetParamInfo), so it is the one kept.
 */
static int ptx_and_cubin_differ_in_padding(const struct fb_record *a, const struct fb_record *b)
{
	if (a->from_ptx == b->from_ptx || a->nparams != b->nparams)
		return 0;
	for (uint32_t i = 0; i < a->nparams; i++)
		if (a->params[i].size != b->params[i].size)
			return 0;
	return 1;
}

/* Sort records by name, check that duplicates agree, move one of each into idx. */
static int merge(struct fb_builder *b, struct mearas_fatbin_index *idx, char *err,
		 size_t errlen)
{
	if (b->n > 1)
		qsort(b->recs, b->n, sizeof(*b->recs), record_cmp);
	idx->kernels = calloc(b->n ? b->n : 1, sizeof(*idx->kernels));
	if (!idx->kernels) {
		fb_seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct fb_record *r = &b->recs[i];
		if (idx->n > 0 && strcmp(idx->kernels[idx->n - 1].name, r->name) == 0) {
			const struct fb_record *first = &b->recs[i - 1];
			struct mearas_kernel_info *kept = &idx->kernels[idx->n - 1];

			if (!same_layout(first, r) && ptx_and_cubin_differ_in_padding(first, r)) {
				if (!r->from_ptx) {
					/* the cubin's layout replaces PTX's; r, still
					 * named, frees the one it gives up */
					struct mearas_kparam *ptx = (struct mearas_kparam *)kept->params;

					kept->params = r->params;
					kept->param_bytes = r->param_bytes;
					r->params = ptx;
				}
				continue;
			}
			if (!same_layout(first, r)) {
				fb_seterr(err, errlen,
					  "kernel %s: entry %u says %u params (%u bytes), entry %u says %u params (%u bytes) or other offsets",
					  r->name, first->entry, first->nparams,
					  first->param_bytes, r->entry, r->nparams,
					  r->param_bytes);
				return -EINVAL;
			}
			continue;
		}
		idx->kernels[idx->n++] = (struct mearas_kernel_info){
			.name = r->name, .nparams = r->nparams,
			.param_bytes = r->param_bytes, .params = r->params };
		r->name = NULL;	/* owned by idx now; the record stays for comparisons */
	}
	return 0;
}

struct mearas_fatbin_index *mearas_fatbin_index_new(const void *fatbin, size_t size,
						    char *err, size_t errlen)
{
	fb_seterr(err, errlen, "no error");
	if (!fatbin) {
		fb_seterr(err, errlen, "null fat binary");
		return NULL;
	}
	struct mearas_fatbin_index *idx = calloc(1, sizeof(*idx));
	if (!idx) {
		fb_seterr(err, errlen, "out of memory");
		return NULL;
	}
	struct fb_builder b = { 0 };
	const uint8_t *d = fatbin;
	int rc;
	/* a module image may also be one cubin or PTX text (cuModuleLoadData) */
	if (size >= 4 && d[0] == 0x7f && d[1] == 'E' && d[2] == 'L' && d[3] == 'F')
		rc = fb_parse_cubin(d, size, &b, err, errlen);
	else if (size >= 4 && fb_rd32(d) != MEARAS_FATBIN_MAGIC && memchr(d, 0, size) == d + size - 1)
		rc = fb_parse_ptx(fatbin, size - 1, &b, err, errlen);
	else
		rc = fb_parse_fatbins(d, size, &b, err, errlen);
	if (rc == 0)
		rc = merge(&b, idx, err, errlen);
	if (rc == 0)
		take_globals(&b, idx);
	/* Records whose name moved into idx keep their params there too. */
	for (size_t i = 0; i < b.n; i++) {
		if (!b.recs[i].name)
			b.recs[i].params = NULL;
	}
	builder_free(&b);
	if (rc) {
		mearas_fatbin_index_free(idx);
		return NULL;
	}
	return idx;
}

static int name_cmp(const void *key, const void *elem)
{
	const struct mearas_kernel_info *k = elem;
	return strcmp(key, k->name);
}

const struct mearas_kernel_info *
mearas_fatbin_find_kernel(const struct mearas_fatbin_index *idx, const char *name)
{
	if (!idx || !name || idx->n == 0)
		return NULL;
	return bsearch(name, idx->kernels, idx->n, sizeof(*idx->kernels), name_cmp);
}

size_t mearas_fatbin_kernel_count(const struct mearas_fatbin_index *idx)
{
	return idx ? idx->n : 0;
}

const struct mearas_kernel_info *mearas_fatbin_kernel_at(const struct mearas_fatbin_index *idx,
							 size_t i)
{
	return idx && i < idx->n ? &idx->kernels[i] : NULL;
}

void mearas_fatbin_index_free(struct mearas_fatbin_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->n; i++) {
		free((void *)idx->kernels[i].name);
		free((void *)idx->kernels[i].params);
	}
	free(idx->kernels);
	for (size_t i = 0; i < idx->nglobals; i++)
		free(idx->globals[i].name);
	free(idx->globals);
	free(idx);
}
