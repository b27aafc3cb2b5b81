/* SPDX-License-Identifier: MIT */
/* The sim's CUDA arrays, texture and surface objects (device_sim_array.c),
 * and what they use of the sim device (device_sim.c). */
#ifndef MEARAS_DEVICE_SIM_ARRAY_H
#define MEARAS_DEVICE_SIM_ARRAY_H

#include <stdbool.h>

#include "device.h"

int sim_array_create(struct mdev *d, const struct mdev_array *a, void **array);
void sim_array_destroy(struct mdev *d, void *array);
int sim_array_copy(struct mdev *d, void *stream, void *array, const struct mdev_array_copy *c);
int sim_tex_create(struct mdev *d, const struct mearas_tex_args *t, void *array, uint64_t *value);
int sim_surf_create(struct mdev *d, void *array, uint64_t *value);
void sim_obj_destroy(struct mdev *d, uint64_t value);

/* device_sim.c: the host bytes of [va, va+len) of device memory of this
 * device or a peer (NULL: none); whether a stream captures a graph; the
 * monotonic time at which the work posted on a stream so far is done (0:
 * done now, UINT64_MAX: never) */
uint8_t *sim_any_host(struct mdev *d, uint64_t va, uint64_t len);
bool sim_captures(void *stream);
uint64_t sim_stream_done_ns(void *stream);

#endif
