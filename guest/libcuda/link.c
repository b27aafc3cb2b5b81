// SPDX-License-Identifier: MIT
/*
 * Linking (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete,
 * cuLinkDestroy). The inputs stay here until cuLinkComplete, which lays
 * them out in the data area (include/mearas/link.h) and sends one LINK
 * record to the current context's vGPU: the host's driver links them for
 * the GPU behind it, and the image comes back into the link state, as the
 * driver keeps it, until cuLinkDestroy. A file input is read here (the
 * caller's file system). The log buffers stay here: a failed link's error
 * log fills the caller's error buffer; the info log is empty. The scalar JIT
 * options go to the host's linker; the others are not carried (said once).
 */
#include <stdlib.h>
#include <string.h>

#include "mearas/link.h"
#include "mearas/log.h"
#include "cu.h"

#define CU_LINK_MAGIC 0x6c696e6bu

struct link_input {
	uint32_t type;
	void *data;
	size_t size;
};

struct cu_link {
	uint32_t magic;
	struct link_input *in;
	unsigned n, cap;
	uint32_t opt[MEARAS_LINK_MAX_OPTS], val[MEARAS_LINK_MAX_OPTS];
	unsigned nopts;
	/* the caller's log buffers, and the option values its sizes and
	 * wall time are written back to (as the driver does) */
	char *info_log, *error_log;
	size_t info_cap, error_cap;
	void **info_size, **error_size, **wall_time;
	void *image;
	size_t image_size;
};

static struct cu_link *link_of(CUlinkState state)
{
	struct cu_link *l = (struct cu_link *)state;

	return l && l->magic == CU_LINK_MAGIC ? l : NULL;
}

static void said_once(int *said, const char *what, int n)
{
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		log_info("%s %d is not carried to the host's linker (ignored)", what, n);
}

/* the caller's options into l: log buffers kept here, scalars carried */
static CUresult take_options(struct cu_link *l, unsigned n, const CUjit_option *o, void **v)
{
	static int said;

	if (n && (!o || !v))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	for (unsigned i = 0; i < n; i++) {
		switch (o[i]) {
		case CU_JIT_INFO_LOG_BUFFER: l->info_log = v[i]; break;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
			l->info_cap = (size_t)(uintptr_t)v[i];
			l->info_size = &v[i];
			break;
		case CU_JIT_ERROR_LOG_BUFFER: l->error_log = v[i]; break;
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
			l->error_cap = (size_t)(uintptr_t)v[i];
			l->error_size = &v[i];
			break;
		case CU_JIT_WALL_TIME: l->wall_time = &v[i]; break;
		case CU_JIT_TARGET_FROM_CUCONTEXT: break;  /* what the host does anyway */
		default:
			if (!mearas_link_option_carried((uint32_t)o[i]) || l->nopts == MEARAS_LINK_MAX_OPTS) {
				said_once(&said, "cuLinkCreate: JIT option", (int)o[i]);
				break;
			}
			l->opt[l->nopts] = (uint32_t)o[i];
			l->val[l->nopts++] = (uint32_t)(uintptr_t)v[i];
		}
	}
	return CUDA_SUCCESS;
}

static CUresult link_create(unsigned n, CUjit_option *options, void **values, CUlinkState *out)
{
	struct cu_link *l;
	CUresult r = cu_need(cu_ready(), out);

	if (r)
		return r;
	l = calloc(1, sizeof(*l));
	if (!l)
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	r = take_options(l, n, options, values);
	if (r) {
		free(l);
		return r;
	}
	l->magic = CU_LINK_MAGIC;
	*out = (CUlinkState)l;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
					   CUlinkState *stateOut)
{
	return link_create(numOptions, options, optionValues, stateOut);
}

/* one input: data, a malloc'd buffer of size bytes, is taken (freed when refused) */
static CUresult add_input(struct cu_link *l, CUjitInputType type, void *data, size_t size)
{
	uint64_t total = 0;
	CUresult r = CUDA_SUCCESS;

	for (unsigned i = 0; i < l->n; i++)
		total += l->in[i].size;
	if (type == CU_JIT_INPUT_NVVM) {
		r = CUDA_ERROR_NOT_SUPPORTED;
	} else if ((unsigned)type > MEARAS_LINK_INPUT_MAX || !size) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (l->n == MEARAS_LINK_MAX_INPUTS || size > MEARAS_LINK_MAX_BYTES - total) {
		log_warn("cuLinkAddData: a link of more than %u inputs or %llu MiB is not carried",
			 MEARAS_LINK_MAX_INPUTS, MEARAS_LINK_MAX_BYTES >> 20);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else if (l->n == l->cap) {
		unsigned cap = l->cap ? l->cap * 2 : 8;
		struct link_input *in = realloc(l->in, cap * sizeof(*in));

		if (in) {
			l->in = in;
			l->cap = cap;
		} else {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	if (r) {
		free(data);
		return CU_REFUSE(r);
	}
	l->in[l->n++] = (struct link_input){ .type = (uint32_t)type, .data = data, .size = size };
	return CUDA_SUCCESS;
}

/* the link state an input is added to, after the checks both ways of adding
 * make (args_ok: the caller's arguments are there) */
static CUresult link_for_input(CUlinkState state, bool args_ok, unsigned nopts, struct cu_link **out)
{
	static int said;
	CUresult r = cu_need(cu_ready(), args_ok);

	*out = link_of(state);
	if (!r && !*out)
		r = CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	if (!r && nopts)
		said_once(&said, "cuLinkAddData / cuLinkAddFile: an input's own options, count", (int)nopts);
	return r;
}

static CUresult add_data(CUlinkState state, CUjitInputType type, void *data, size_t size, unsigned n)
{
	struct cu_link *l;
	CUresult r = link_for_input(state, data && size, n, &l);
	void *copy;

	if (r)
		return r;
	copy = malloc(size);
	if (!copy)
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	memcpy(copy, data, size);
	return add_input(l, type, copy, size);
}

CU_EXPORT CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
					    const char *name, unsigned int numOptions, CUjit_option *options,
					    void **optionValues)
{
	(void)name, (void)options, (void)optionValues;
	return add_data(state, type, data, size, numOptions);
}

static CUresult add_file(CUlinkState state, CUjitInputType type, const char *path, unsigned n)
{
	struct cu_link *l;
	CUresult r = link_for_input(state, path != NULL, n, &l);
	void *data;
	size_t size;

	if (!r)
		r = cu_read_file(path, &data, &size);
	if (!r && size > MEARAS_LINK_MAX_BYTES) {
		free(data);
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	return r ? r : add_input(l, type, data, size);
}

CU_EXPORT CUresult CUDAAPI cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
					    unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	(void)options, (void)optionValues;
	return add_file(state, type, path, numOptions);
}

/* the layout of l's inputs at buf (len bytes, link.h) */
static void lay_out(const struct cu_link *l, uint8_t *buf)
{
	struct mearas_link_header h = { .magic = MEARAS_LINK_MAGIC, .count = l->n, .nopts = l->nopts };
	size_t off = sizeof(h);

	memcpy(h.opt, l->opt, sizeof(h.opt));
	memcpy(h.val, l->val, sizeof(h.val));
	memcpy(buf, &h, sizeof(h));
	for (unsigned i = 0; i < l->n; i++) {
		struct mearas_link_input li = { .type = l->in[i].type, .size = l->in[i].size };

		memcpy(buf + off, &li, sizeof(li));
		off += sizeof(li);
		memcpy(buf + off, l->in[i].data, l->in[i].size);
		memset(buf + off + l->in[i].size, 0, mearas_link_pad8(l->in[i].size) - l->in[i].size);
		off += mearas_link_pad8(l->in[i].size);
	}
}

static uint64_t layout_size(const struct cu_link *l)
{
	uint64_t len = sizeof(struct mearas_link_header);

	for (unsigned i = 0; i < l->n; i++)
		len += sizeof(struct mearas_link_input) + mearas_link_pad8(l->in[i].size);
	return len;
}

/* the caller's log buffer (cap bytes) gets text[0..n), NUL-terminated; its
 * size option gets the bytes written */
static void fill_log(char *buf, size_t cap, void **size_slot, const char *text, size_t n)
{
	if (buf && cap) {
		n = n < cap - 1 ? n : cap - 1;
		memcpy(buf, text, n);
		buf[n] = '\0';
	} else {
		n = 0;
	}
	if (size_slot)
		*size_slot = (void *)(uintptr_t)n;
}

/* LINK on vgpu with out_cap bytes of room; *out the data-area buffer that holds the answer */
static CUresult link_on(int vgpu, const uint8_t *in, uint64_t in_len, uint64_t cap, void **out, uint64_t *size,
			uint64_t *link_error)
{
	*out = dh_alloc(cap);
	if (!*out) {
		log_warn("cuLinkComplete: %llu bytes for the linked image do not fit the data area (%llu MiB): "
			 "raise MEARAS_DATA_MB", (unsigned long long)cap, (unsigned long long)(rt.data_size >> 20));
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	return cu_result(rt_do_LINK(vgpu, dh_offset(in), in_len, dh_offset(*out), cap, size, link_error));
}

CU_EXPORT CUresult CUDAAPI cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	struct cu_link *l = link_of(state);
	struct cu_ctx *c;
	uint64_t len, cap, size = 0, link_error = 0;
	uint8_t *in;
	void *out = NULL;
	CUresult r = cu_need(cu_ready(), cubinOut && sizeOut);

	if (!r && !l)
		r = CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	if (!r && !l->n)
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (!r)
		r = cu_current_ctx(&c);
	if (r)
		return r;
	len = layout_size(l);
	in = dh_alloc(len);
	if (!in) {
		log_warn("cuLinkComplete: %llu bytes of inputs do not fit the data area (%llu MiB): raise MEARAS_DATA_MB",
			 (unsigned long long)len, (unsigned long long)(rt.data_size >> 20));
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	lay_out(l, in);
	/* room for an image a little larger than its inputs, then what it takes */
	cap = 2 * len + (1u << 20);
	r = link_on(c->vgpu, in, len, cap, &out, &size, &link_error);
	if (!r && !link_error && size > cap) {
		dh_free(out);
		out = NULL;
		cap = size;
		r = link_on(c->vgpu, in, len, cap, &out, &size, &link_error);
	}
	dh_free(in);
	if (!r && link_error) {
		fill_log(l->error_log, l->error_cap, l->error_size, out, size < cap ? size : cap);
		log_debug("cuLinkComplete: the host's linker refused the inputs (error %llu): %.*s",
			  (unsigned long long)link_error, (int)(size < cap && size < 400 ? size : 400), (char *)out);
		r = CU_REFUSE((CUresult)link_error);
	} else if (!r && size <= cap) {
		free(l->image);
		l->image = malloc(size ? size : 1);
		if (!l->image) {
			r = CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
		} else {
			memcpy(l->image, out, size);
			l->image_size = size;
			fill_log(l->info_log, l->info_cap, l->info_size, "", 0);
			fill_log(l->error_log, l->error_cap, l->error_size, "", 0);
			*cubinOut = l->image;
			*sizeOut = size;
		}
	} else if (!r) {
		r = CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);  /* grew between the two asks */
	}
	if (l->wall_time) {
		float zero = 0;

		memcpy(l->wall_time, &zero, sizeof(zero));
	}
	if (out)
		dh_free(out);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuLinkDestroy(CUlinkState state)
{
	struct cu_link *l = link_of(state);

	if (!l)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	l->magic = 0;
	for (unsigned i = 0; i < l->n; i++)
		free(l->in[i].data);
	free(l->in);
	free(l->image);
	free(l);
	return CUDA_SUCCESS;
}

/* the names before CUDA 6.5 (_v2 since): the same calls */
#undef cuLinkCreate
#undef cuLinkAddData
#undef cuLinkAddFile
CU_EXPORT CUresult CUDAAPI cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
					CUlinkState *stateOut);
CU_EXPORT CUresult CUDAAPI cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
					CUlinkState *stateOut)
{
	return link_create(numOptions, options, optionValues, stateOut);
}

CU_EXPORT CUresult CUDAAPI cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
					 const char *name, unsigned int numOptions, CUjit_option *options,
					 void **optionValues);
CU_EXPORT CUresult CUDAAPI cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
					 const char *name, unsigned int numOptions, CUjit_option *options,
					 void **optionValues)
{
	(void)name, (void)options, (void)optionValues;
	return add_data(state, type, data, size, numOptions);
}

CU_EXPORT CUresult CUDAAPI cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
					 unsigned int numOptions, CUjit_option *options, void **optionValues);
CU_EXPORT CUresult CUDAAPI cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
					 unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	(void)options, (void)optionValues;
	return add_file(state, type, path, numOptions);
}
