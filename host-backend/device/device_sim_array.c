// SPDX-License-Identifier: MIT
/*
 * The sim's CUDA arrays: host memory laid out row by row, slice by slice
 * (the layout is the sim's; a GPU's is opaque), so that copies into and out
 * of an array really move bytes and tests can see them come back. Texture
 * and surface objects are numbers handed out from 1 up (the sim runs no
 * kernels that could sample them). Copies on a capturing stream are refused:
 * the sim's graphs do not record array copies.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <driver_types.h>

#include "device_sim_array.h"
#include "mearas/array_cu.h"
#include "mearas/log.h"

struct sim_array {
	struct mdev_array shape;
	uint64_t row;           /* bytes of a row */
	uint64_t rows;          /* rows of a slice */
	uint8_t *bytes;
};

static atomic_uint_fast64_t sim_next_object = 1;

int sim_array_create(struct mdev *d, const struct mdev_array *a, void **array)
{
	struct sim_array *arr = calloc(1, sizeof(*arr));

	(void)d;
	if (!arr)
		return cudaErrorMemoryAllocation;
	arr->shape = *a;
	arr->row = a->width * mearas_elem_bytes(a->format, a->channels);
	arr->rows = mearas_array_extent(a->height);
	arr->bytes = calloc(arr->row * arr->rows, mearas_array_extent(a->depth));
	if (!arr->bytes) {
		free(arr);
		return cudaErrorMemoryAllocation;
	}
	*array = arr;
	return 0;
}

void sim_array_destroy(struct mdev *d, void *array)
{
	struct sim_array *arr = array;

	(void)d;
	free(arr->bytes);
	free(arr);
}

int sim_array_copy(struct mdev *d, void *stream, void *array, const struct mdev_array_copy *c)
{
	struct sim_array *arr = array;
	bool to_array = c->dir == MEARAS_ARRAY_HTOA || c->dir == MEARAS_ARRAY_DTOA;
	bool host = c->dir == MEARAS_ARRAY_HTOA || c->dir == MEARAS_ARRAY_ATOH;
	uint64_t span = c->pitch * (c->height - 1) + c->width;
	uint8_t *lin, *box;

	if (sim_captures(stream)) {
		log_warn("sim: a copy into or out of a CUDA array on a capturing stream: not supported by the sim "
			 "device");
		return cudaErrorStreamCaptureUnsupported;
	}
	/* the back end checked the box against the shape and the linear side */
	lin = host ? (uint8_t *)(uintptr_t)c->mem : sim_any_host(d, c->mem, span);
	if (!lin)
		return cudaErrorInvalidValue;
	box = arr->bytes + (uint64_t)c->z * arr->rows * arr->row + (uint64_t)c->y * arr->row + c->x;
	for (uint32_t r = 0; r < c->height; r++) {
		if (to_array)
			memcpy(box + r * arr->row, lin + r * c->pitch, c->width);
		else
			memcpy(lin + r * c->pitch, box + r * arr->row, c->width);
	}
	return 0;
}

int sim_tex_create(struct mdev *d, const struct mearas_tex_args *t, void *array, uint64_t *value)
{
	(void)d, (void)t, (void)array;
	*value = atomic_fetch_add(&sim_next_object, 1);
	return 0;
}

int sim_surf_create(struct mdev *d, void *array, uint64_t *value)
{
	(void)d, (void)array;
	*value = atomic_fetch_add(&sim_next_object, 1);
	return 0;
}

void sim_obj_destroy(struct mdev *d, uint64_t value)
{
	(void)d, (void)value;
}
