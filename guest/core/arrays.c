// SPDX-License-Identifier: MIT
/*
 * CUDA arrays, texture objects and surface objects for both front ends
 * (include/mearas/array.h). An array is an id on the back end; creating one
 * is a round trip (the back end checks its shape and charges its bytes).
 * Copies go slice by slice as MEMCPY_ARRAY records: linear memory in the
 * data area (pinned, or registered through its twin) and device memory are
 * named in the record; pageable memory goes through a block of the data
 * area, a few MiB of rows at a time, and the call returns when its bytes
 * have been read or written.
 *
 * Texture and surface objects are the device's values, so that kernels
 * take what the program passes them; a list here maps each to its id and
 * vGPU (values of different vGPUs may be equal: the one on the current
 * device wins) and keeps what it was made with for the Get*Desc calls.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "mearas/array_cu.h"
#include "mearas/log.h"

#define ARRAY_MAGIC 0x6d417279u
#define STAGE_BYTES (4ull << 20)        /* pageable copies: rows staged at a time */

struct rt_texobj {
	uint64_t value;
	uint32_t id;
	int vgpu;
	bool surface;
	struct mearas_tex_args args;
	struct rt_array *array;
	struct rt_texobj *next;
};

static pthread_mutex_t texobj_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_texobj *texobjs;

struct rt_array *rt_array_get(const void *h)
{
	const struct rt_array *a = h;

	return a && a->magic == ARRAY_MAGIC ? (struct rt_array *)a : NULL;
}

cudaError_t rt_array_create(int vgpu, uint64_t width, uint64_t height, uint64_t depth, uint32_t format,
			    uint32_t channels, uint32_t flags, struct rt_array **out)
{
	struct rt_array *a = calloc(1, sizeof(*a));
	cudaError_t e;

	if (!a)
		return cudaErrorMemoryAllocation;
	*a = (struct rt_array){ .magic = ARRAY_MAGIC, .id = rt_new_handle(), .vgpu = vgpu, .width = width,
				.height = height, .depth = depth, .format = format, .channels = channels,
				.flags = flags, .elem = mearas_elem_bytes(format, channels) };
	e = a->id ? rt_do_ARRAY_CREATE(vgpu, a->id, width, height, depth, format, channels, flags)
		  : cudaErrorMemoryAllocation;
	if (e) {
		free(a);
		return e;
	}
	*out = a;
	return cudaSuccess;
}

cudaError_t rt_array_destroy(struct rt_array *a)
{
	int vgpu = a->vgpu;
	uint32_t id = a->id;

	memset(a, 0, sizeof(*a)); /* no longer an array to rt_array_get */
	free(a);
	return rt_do_ARRAY_DESTROY(vgpu, id);
}

/* ---- copies ---- */

/* one slice's rows through a data-area block (pageable memory) */
static cudaError_t staged_slice(struct rt_array *a, const struct rt_stream_ref *st, const struct rt_array_box *b,
				uint64_t z, uint8_t *mem, uint64_t pitch, bool to_array)
{
	uint64_t per = STAGE_BYTES / b->width, rows = b->height;
	uint8_t *buf;
	cudaError_t e = cudaSuccess;

	if (per == 0)
		per = 1;
	if (per > rows)
		per = rows;
	buf = dh_alloc(per * b->width);
	if (!buf) {
		log_warn("array copy: no room in the data area for %llu bytes of staging: raise MEARAS_DATA_MB",
			 (unsigned long long)(per * b->width));
		return cudaErrorMemoryAllocation;
	}
	for (uint64_t r = 0; r < rows && !e; r += per) {
		uint64_t n = rows - r < per ? rows - r : per;

		if (to_array)
			for (uint64_t i = 0; i < n; i++)
				memcpy(buf + i * b->width, mem + (r + i) * pitch, b->width);
		e = rt_do_MEMCPY_ARRAY(a->vgpu, st, a->id, dh_offset(buf), b->width, (uint32_t)b->x,
				       (uint32_t)(b->y + r), (uint32_t)z, (uint32_t)b->width, (uint32_t)n,
				       to_array ? MEARAS_ARRAY_HTOA : MEARAS_ARRAY_ATOH, true);
		if (!e && !to_array)
			for (uint64_t i = 0; i < n; i++)
				memcpy(mem + (r + i) * pitch, buf + i * b->width, b->width);
	}
	dh_free(buf);
	return e;
}

/* the box lies in the array, and each of its numbers fits a record's 32 bits */
static bool box_ok(const struct rt_array *a, const struct rt_array_box *b)
{
	return b->x + b->width <= a->width * a->elem && b->y + b->height <= mearas_array_extent(a->height) &&
	       b->z + b->depth <= mearas_array_extent(a->depth);
}

cudaError_t rt_array_copy(struct rt_array *a, const struct rt_array_box *b, void *mem, uint64_t pitch,
			  uint64_t slice_rows, bool to_array, cudaStream_t stream, bool async)
{
	struct rt_stream_ref st;
	uint64_t slice, span, lin;
	uint32_t dir;
	bool pageable = false;
	cudaError_t e = rt_stream_of(stream, &st);

	if (e)
		return e;
	if (!b->width || !b->height || !b->depth)
		return cudaSuccess;
	if (!mem)
		return cudaErrorInvalidValue;
	if (!box_ok(a, b)) {
		log_info("array copy of %llu x %llu x %llu bytes at (%llu, %llu, %llu): outside the %llu x %llu x %llu "
			 "array", (unsigned long long)b->width, (unsigned long long)b->height,
			 (unsigned long long)b->depth, (unsigned long long)b->x, (unsigned long long)b->y,
			 (unsigned long long)b->z, (unsigned long long)a->width, (unsigned long long)a->height,
			 (unsigned long long)a->depth);
		return cudaErrorInvalidValue;
	}
	if (pitch < b->width || (b->depth > 1 && slice_rows < b->height))
		return cudaErrorInvalidPitchValue;
	if (stream && stream != cudaStreamLegacy && stream != cudaStreamPerThread && st.vgpu != a->vgpu)
		return cudaErrorInvalidResourceHandle;
	st.vgpu = a->vgpu;
	slice = pitch * (b->depth > 1 ? slice_rows : b->height);
	span = slice * (b->depth - 1) + pitch * (b->height - 1) + b->width;
	/* where the linear side is: device memory, the data area (or a
	 * registered range's twin there), or pageable memory */
	lin = (uint64_t)(uintptr_t)mem;
	if (dm_find(lin, span, NULL, NULL) >= 0) {
		dir = to_array ? MEARAS_ARRAY_DTOA : MEARAS_ARRAY_ATOD;
	} else {
		void *twin = dh_contains(mem, span) ? mem : rt_registered_twin(mem, span);

		dir = to_array ? MEARAS_ARRAY_HTOA : MEARAS_ARRAY_ATOH;
		pageable = !twin;
		if (twin)
			lin = dh_offset(twin);
	}
	for (uint64_t z = 0; z < b->depth && !e; z++) {
		bool last = z + 1 == b->depth;

		if (pageable) {
			e = staged_slice(a, &st, b, b->z + z, (uint8_t *)mem + z * slice, pitch, to_array);
			continue;
		}
		/* a synchronous copy with a host side returns when it is done */
		e = rt_do_MEMCPY_ARRAY(a->vgpu, &st, a->id, lin + z * slice, pitch, (uint32_t)b->x, (uint32_t)b->y,
				       (uint32_t)(b->z + z), (uint32_t)b->width, (uint32_t)b->height, dir,
				       last && !async && (dir == MEARAS_ARRAY_HTOA || dir == MEARAS_ARRAY_ATOH));
	}
	return e;
}

cudaError_t rt_array_copy_arrays(struct rt_array *dst, uint64_t dx, uint64_t dy, uint64_t dz, struct rt_array *src,
				 const struct rt_array_box *b, cudaStream_t stream)
{
	struct rt_array_box to = { .x = dx, .y = dy, .z = dz, .width = b->width, .height = b->height, .depth = b->depth };
	void *tmp = NULL;
	cudaError_t e;

	if (!b->width || !b->height || !b->depth)
		return cudaSuccess;
	if (dst->vgpu != src->vgpu) {
		log_info("copy between arrays of vGPUs %d and %d: arrays of one device only", src->vgpu, dst->vgpu);
		return cudaErrorInvalidValue;
	}
	if (!box_ok(src, b) || !box_ok(dst, &to))
		return cudaErrorInvalidValue;
	e = rt_malloc_on(src->vgpu, &tmp, b->width * b->height * b->depth, 0);
	if (e)
		return e;
	/* device to device: posted in stream order, nothing waits on the host */
	e = rt_array_copy(src, b, tmp, b->width, b->height, false, stream, true);
	if (!e)
		e = rt_array_copy(dst, &to, tmp, b->width, b->height, true, stream, true);
	rt_free(tmp, stream, true);
	return e;
}

/* ---- texture and surface objects ---- */

static cudaError_t keep(uint64_t value, uint32_t id, int vgpu, bool surface, const struct mearas_tex_args *t,
			struct rt_array *a)
{
	struct rt_texobj *o = calloc(1, sizeof(*o));

	if (!o) {
		if (surface)
			rt_do_SURF_DESTROY(vgpu, id);
		else
			rt_do_TEX_DESTROY(vgpu, id);
		return cudaErrorMemoryAllocation;
	}
	*o = (struct rt_texobj){ .value = value, .id = id, .vgpu = vgpu, .surface = surface, .array = a };
	if (t)
		o->args = *t;
	pthread_mutex_lock(&texobj_lock);
	o->next = texobjs;
	texobjs = o;
	pthread_mutex_unlock(&texobj_lock);
	return cudaSuccess;
}

cudaError_t rt_tex_create(int vgpu, const struct mearas_tex_args *t, struct rt_array *a, uint64_t *value)
{
	uint32_t id = rt_new_handle();
	uint64_t v = 0;
	cudaError_t e;

	if (!id)
		return cudaErrorMemoryAllocation;
	e = rt_do_TEX_CREATE(vgpu, id, t, (uint32_t)sizeof(*t), &v);
	if (!e)
		e = keep(v, id, vgpu, false, t, a);
	if (!e)
		*value = v;
	return e;
}

cudaError_t rt_surf_create(struct rt_array *a, uint64_t *value)
{
	struct mearas_tex_args t = { .res = MEARAS_RES_ARRAY, .array = a->id };
	uint32_t id = rt_new_handle();
	uint64_t v = 0;
	cudaError_t e;

	if (!id)
		return cudaErrorMemoryAllocation;
	e = rt_do_SURF_CREATE(a->vgpu, id, a->id, &v);
	if (!e)
		e = keep(v, id, a->vgpu, true, &t, a);
	if (!e)
		*value = v;
	return e;
}

/* the object with this value (the current device's first), or NULL; under texobj_lock */
static struct rt_texobj **find_locked(uint64_t value, bool surface)
{
	struct rt_texobj **found = NULL;

	for (struct rt_texobj **p = &texobjs; *p; p = &(*p)->next) {
		if ((*p)->value != value || (*p)->surface != surface)
			continue;
		if ((*p)->vgpu == rt_tls.device)
			return p;
		if (!found)
			found = p;
	}
	return found;
}

cudaError_t rt_texobj_destroy(uint64_t value, bool surface)
{
	struct rt_texobj **p, *o = NULL;
	cudaError_t e;

	pthread_mutex_lock(&texobj_lock);
	p = find_locked(value, surface);
	if (p) {
		o = *p;
		*p = o->next;
	}
	pthread_mutex_unlock(&texobj_lock);
	if (!o)
		return cudaErrorInvalidValue;
	e = surface ? rt_do_SURF_DESTROY(o->vgpu, o->id) : rt_do_TEX_DESTROY(o->vgpu, o->id);
	free(o);
	return e;
}

cudaError_t rt_texobj_describe(uint64_t value, bool surface, void *out,
			       void (*fill)(void *out, const struct mearas_tex_args *t, struct rt_array *a))
{
	struct rt_texobj **p, o;

	if (!out)
		return cudaErrorInvalidValue;
	pthread_mutex_lock(&texobj_lock);
	p = find_locked(value, surface);
	if (p)
		o = **p;
	pthread_mutex_unlock(&texobj_lock);
	if (!p)
		return cudaErrorInvalidValue;
	fill(out, &o.args, o.array);
	return cudaSuccess;
}
