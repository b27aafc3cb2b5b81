/* SPDX-License-Identifier: MIT */
/* The sim's stream memory operations (device_sim_memop.c). */
#ifndef MEARAS_DEVICE_SIM_MEMOP_H
#define MEARAS_DEVICE_SIM_MEMOP_H

#include "device.h"

int sim_stream_memop(struct mdev *d, void *stream, bool wait, uint64_t addr, bool host, uint64_t value, unsigned size,
		     unsigned flags);
/* completion flags (device.h) */
int sim_flags_create(struct mdev *d, unsigned n, void **flags);
void sim_flags_destroy(struct mdev *d, void *flags);
int sim_flag_write(struct mdev *d, void *flags, unsigned i, uint32_t value, void *stream);
uint32_t sim_flag_read(struct mdev *d, void *flags, unsigned i);

#endif
