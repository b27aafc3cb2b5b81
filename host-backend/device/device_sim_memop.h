/* SPDX-License-Identifier: MIT */
/* The sim's stream memory operations (device_sim_memop.c). */
#ifndef MEARAS_DEVICE_SIM_MEMOP_H
#define MEARAS_DEVICE_SIM_MEMOP_H

#include "device.h"

int sim_stream_memop(struct mdev *d, void *stream, bool wait, uint64_t addr, bool host, uint64_t value, unsigned size,
		     unsigned flags);

#endif
