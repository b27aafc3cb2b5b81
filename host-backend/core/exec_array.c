// SPDX-License-Identifier: MIT
/*
 * CUDA arrays, texture objects and surface objects (ARRAY_CREATE,
 * MEMCPY_ARRAY, TEX_CREATE, SURF_CREATE and their destroy records;
 * include/mearas/array.h). What is checked before the device sees a record:
 *  - an array's shape (width 1.., height and depth 0.., each at most
 *    MEARAS_ARRAY_MAX_DIM), format, channels (1, 2, 4) and flags; its bytes
 *    (its elements', or the device's padded layout where it says more) are
 *    charged to the vGPU's quota while it lives;
 *  - a copy's box lies inside the array (bytes of a row, rows, the slice)
 *    and its linear side inside the data area or this client's device
 *    memory;
 *  - a texture's resource is an array of this client, or device memory of
 *    this vGPU held by this client (all of it: a linear range, or every row
 *    of a pitched one), enums in range and unused fields zero;
 *  - a surface's array was made for surface loads and stores.
 * The finer rules (a cubemap's square faces, filtering of integer formats
 * ...) are the device's: the driver checks them on a GPU.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "ranges.h"
#include "mearas/array_cu.h"

struct exec_array {
	void *dev;
	struct mdev_array shape;
	uint64_t bytes;         /* charged to the quota */
	uint32_t elem;          /* bytes of one element */
};

/* texture and surface objects: the device's value for the object */
struct exec_texobj {
	uint64_t value;
};

static int no_arrays(struct vgpu *v)
{
	if (v->ops->array_create)
		return 0;
	exec_refuse_log(v, "CUDA arrays, textures and surfaces are not supported by the %s device", v->ops->name);
	return cudaErrorNotSupported;
}

/* NULL when the shape is one mearas carries, else what is wrong; *bytes:
 * the array's size */
static const char *array_shape_error(const struct mearas_args_ARRAY_CREATE *a, uint64_t *bytes)
{
	unsigned elem = mearas_elem_bytes(a->format, a->channels);

	if (!elem)
		return "a format or channel count mearas does not carry (8/16/32-bit integers, half, float; 1, 2 "
		       "or 4 channels)";
	if (a->flags & ~MEARAS_ARRAY_FLAGS_KNOWN)
		return "flags mearas does not carry (sparse, deferred mapping, depth, colour or video arrays)";
	if (!a->width || a->width > MEARAS_ARRAY_MAX_DIM || a->height > MEARAS_ARRAY_MAX_DIM ||
	    a->depth > MEARAS_ARRAY_MAX_DIM)
		return "a side of 0 (width) or past 2^17 elements";
	/* each factor is below 2^17 and an element at most 16 bytes: no overflow */
	*bytes = a->width * mearas_array_extent(a->height) * mearas_array_extent(a->depth) * elem;
	if (*bytes > MEARAS_ARRAY_MAX_BYTES)
		return "more than 2^40 bytes";
	return NULL;
}

int exec_op_ARRAY_CREATE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_ARRAY_CREATE *in,
			 struct mearas_cqe *c, struct fence_req *f)
{
	const struct mearas_args_ARRAY_CREATE *a = in->a;
	struct exec_array *arr;
	struct mdev_array shape;
	const char *why;
	uint64_t bytes = 0, laid_out = 0;
	int r = no_arrays(v);

	(void)e, (void)c, (void)f;
	if (r)
		return r;
	why = array_shape_error(a, &bytes);
	if (why) {
		exec_refuse_log(v, "array of %llu x %llu x %llu, format %#x, %u channels, flags %#x refused: %s",
				(unsigned long long)a->width, (unsigned long long)a->height,
				(unsigned long long)a->depth, a->format, a->channels, a->flags, why);
		return cudaErrorInvalidValue;
	}
	shape = (struct mdev_array){ .width = a->width, .height = a->height, .depth = a->depth,
				     .format = a->format, .channels = a->channels, .flags = a->flags };
	/* the driver's layout pads (a small array can take far more than its
	 * elements): charged at what the device says it takes, if more */
	if (v->ops->array_footprint && !v->ops->array_footprint(v->dev, &shape, &laid_out) && laid_out > bytes)
		bytes = laid_out;
	arr = exec_charged_new(v, bytes, sizeof(*arr));
	if (!arr)
		return cudaErrorMemoryAllocation;
	arr->shape = shape;
	arr->bytes = bytes;
	arr->elem = mearas_elem_bytes(a->format, a->channels);
	r = v->ops->array_create(v->dev, &arr->shape, &arr->dev);
	if (r) {
		exec_charged_free(v, bytes, arr);
		return r;
	}
	return exec_keep_or_destroy(v, MEARAS_KIND_ARRAY, in->a->array, arr, 0);
}

void exec_array_destroy(struct vgpu *v, void *obj)
{
	struct exec_array *arr = obj;

	v->ops->array_destroy(v->dev, arr->dev);
	exec_charged_free(v, arr->bytes, arr);
}

/* the box [x, x+width) bytes x [y, y+height) rows of slice z lies in the array */
static bool box_inside(const struct exec_array *arr, const struct mearas_args_MEMCPY_ARRAY *a)
{
	uint64_t row = arr->shape.width * arr->elem;

	return (uint64_t)a->x + a->width <= row && (uint64_t)a->y + a->height <= mearas_array_extent(arr->shape.height) &&
	       a->z < mearas_array_extent(arr->shape.depth);
}

int exec_op_MEMCPY_ARRAY(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MEMCPY_ARRAY *in,
			 struct mearas_cqe *c, struct fence_req *f)
{
	const struct mearas_args_MEMCPY_ARRAY *a = in->a;
	const struct exec_array *arr = in->array->obj;
	struct mdev_array_copy cp = { .dir = (int)a->dir, .mem = a->mem, .pitch = a->pitch, .x = a->x, .y = a->y,
				      .z = a->z, .width = a->width, .height = a->height };
	uint64_t span = 0;
	bool host = a->dir == MEARAS_ARRAY_HTOA || a->dir == MEARAS_ARRAY_ATOH;

	(void)e, (void)c;
	f->stream = in->stream;
	if (a->dir < MEARAS_ARRAY_HTOA || a->dir > MEARAS_ARRAY_ATOD)
		return cudaErrorInvalidMemcpyDirection;
	if (a->width == 0 || a->height == 0)
		return 0;
	if (a->pitch > RANGE_2D_MAX_PITCH || !range_2d_span(a->width, a->pitch, a->height, &span)) {
		exec_refuse_log(v, "array copy refused: %u rows of %u bytes with pitch %llu", a->height, a->width,
				(unsigned long long)a->pitch);
		return cudaErrorInvalidPitchValue;
	}
	if (!box_inside(arr, a)) {
		exec_refuse_log(v, "array copy refused: %u rows of %u bytes at byte %u, row %u, slice %u leave the "
				"%llu x %llu x %llu array", a->height, a->width, a->x, a->y, a->z,
				(unsigned long long)arr->shape.width, (unsigned long long)arr->shape.height,
				(unsigned long long)arr->shape.depth);
		return cudaErrorInvalidValue;
	}
	if (host) {
		void *p = exec_data_ptr(v, a->mem, span);

		cp.mem = (uint64_t)(uintptr_t)p;
		if (!p) {
			exec_refuse_log(v, "array copy refused: %llu bytes at data offset %#llx leave the data area",
					(unsigned long long)span, (unsigned long long)a->mem);
			return cudaErrorInvalidValue;
		}
	} else if (!exec_dev_owner(v, a->mem, span)) {
		exec_refuse_log(v, "array copy refused: %llu bytes at %#llx are not device memory of this client",
				(unsigned long long)span, (unsigned long long)a->mem);
		return cudaErrorInvalidValue;
	}
	return v->ops->array_copy(v->dev, f->stream, arr->dev, &cp);
}

/* ---- texture and surface objects ---- */

/* [dptr, dptr+len) is device memory of this vGPU that this client holds */
static bool own_device_range(struct vgpu *v, uint64_t dptr, uint64_t len)
{
	return exec_dev_owner(v, dptr, len) == v;
}

/* NULL when the resource's fields hold (and its memory is this client's),
 * else what is wrong (*bad_handle: an array id that names none); *arr: the
 * array of an array resource */
static const char *tex_resource_error(struct vgpu *v, const struct mearas_tex_args *t, struct exec_array **arr,
				      bool *bad_handle)
{
	unsigned elem = mearas_elem_bytes(t->format, t->channels);
	uint64_t span;

	switch (t->res) {
	case MEARAS_RES_ARRAY: {
		struct hslot *h = htab_get(exec_table(v, MEARAS_KIND_ARRAY), t->array);

		if (t->format || t->channels || t->dptr || t->size || t->width || t->height || t->pitch)
			return "linear-memory fields set on an array resource";
		if (!h) {
			*bad_handle = true;
			return "not an array of this client";
		}
		*arr = h->obj;
		return NULL;
	}
	case MEARAS_RES_LINEAR:
		if (t->array || t->width || t->height || t->pitch)
			return "array or pitched fields set on a linear resource";
		if (!elem)
			return "a format or channel count mearas does not carry";
		if (!t->size || !own_device_range(v, t->dptr, t->size))
			return "its bytes are not device memory of this client on this vGPU";
		return NULL;
	case MEARAS_RES_PITCH2D:
		if (t->array || t->size)
			return "array or linear fields set on a pitched resource";
		if (!elem)
			return "a format or channel count mearas does not carry";
		if (!t->width || !t->height || t->width > MEARAS_ARRAY_MAX_DIM || t->height > MEARAS_ARRAY_MAX_DIM ||
		    t->pitch > RANGE_2D_MAX_PITCH || !range_2d_span(t->width * elem, t->pitch, t->height, &span))
			return "a width, height or pitch out of range";
		if (!own_device_range(v, t->dptr, span))
			return "its rows are not device memory of this client on this vGPU";
		return NULL;
	default:
		return "a resource kind mearas does not carry (mipmapped arrays)";
	}
}

static const char *tex_desc_error(const struct mearas_tex_args *t)
{
	for (unsigned i = 0; i < 3; i++)
		if (t->address[i] > MEARAS_TEX_ADDRESS_MAX)
			return "an address mode out of range";
	if (t->filter > MEARAS_TEX_FILTER_MAX || t->mip_filter > MEARAS_TEX_FILTER_MAX)
		return "a filter mode out of range";
	if (t->flags & ~MEARAS_TEX_FLAGS_KNOWN)
		return "texture flags mearas does not carry";
	if (t->has_view > 1 || t->reserved || t->view_format > MEARAS_TEX_VIEW_FORMAT_MAX)
		return "a resource view out of range";
	if (!t->has_view && (t->view_format || t->view_width || t->view_height || t->view_depth || t->view_first_mip ||
			     t->view_last_mip || t->view_first_layer || t->view_last_layer))
		return "resource-view fields set without a view";
	if (t->has_view && t->res != MEARAS_RES_ARRAY)
		return "a resource view on linear memory";
	return NULL;
}

/* the device's texture (kind MEARAS_KIND_TEXOBJ) or surface object value */
static void object_destroy(struct vgpu *v, enum mearas_handle_kind k, uint64_t value)
{
	if (k == MEARAS_KIND_TEXOBJ)
		v->ops->tex_destroy(v->dev, value);
	else
		v->ops->surf_destroy(v->dev, value);
}

static int keep_object(struct vgpu *v, enum mearas_handle_kind k, uint64_t id, uint64_t value, struct mearas_cqe *c)
{
	struct exec_texobj *o = malloc(sizeof(*o));

	if (!o) {
		object_destroy(v, k, value);
		return cudaErrorMemoryAllocation;
	}
	o->value = value;
	c->val[0] = value;
	return exec_keep_or_destroy(v, k, id, o, 0);
}

int exec_op_TEX_CREATE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_TEX_CREATE *in,
		       struct mearas_cqe *c, struct fence_req *f)
{
	struct mearas_tex_args t;
	struct exec_array *arr = NULL;
	const char *why;
	bool bad_handle = false;
	uint64_t value = 0;
	int r = no_arrays(v);

	(void)e, (void)f;
	if (r)
		return r;
	if (in->params_len != sizeof(t)) {
		exec_refuse_log(v, "texture object refused: %u bytes of arguments, not %zu", in->params_len, sizeof(t));
		return cudaErrorInvalidValue;
	}
	/* a private copy: the client could change the shared bytes while we check them */
	memcpy(&t, in->params, sizeof(t));
	why = tex_resource_error(v, &t, &arr, &bad_handle);
	if (!why)
		why = tex_desc_error(&t);
	if (why) {
		exec_refuse_log(v, "texture object of resource kind %u refused: %s", t.res, why);
		return bad_handle ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue;
	}
	r = v->ops->tex_create(v->dev, &t, arr ? arr->dev : NULL, &value);
	if (r)
		return r;
	return keep_object(v, MEARAS_KIND_TEXOBJ, in->a->tex, value, c);
}

int exec_op_SURF_CREATE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_SURF_CREATE *in,
			struct mearas_cqe *c, struct fence_req *f)
{
	const struct exec_array *arr = in->array->obj;
	uint64_t value = 0;
	int r = no_arrays(v);

	(void)e, (void)f;
	if (r)
		return r;
	if (!(arr->shape.flags & MEARAS_ARRAY_SURFACE_LDST)) {
		exec_refuse_log(v, "surface object refused: its array was not made for surface loads and stores");
		return cudaErrorInvalidValue;
	}
	r = v->ops->surf_create(v->dev, arr->dev, &value);
	if (r)
		return r;
	return keep_object(v, MEARAS_KIND_SURFOBJ, in->a->surf, value, c);
}

void exec_texobj_destroy(struct vgpu *v, enum mearas_handle_kind k, void *obj)
{
	struct exec_texobj *o = obj;

	object_destroy(v, k, o->value);
	free(o);
}
