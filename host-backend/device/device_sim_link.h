/* SPDX-License-Identifier: MIT */
/* The sim's linker model (device_sim_link.c), the sim device's link function. */
#ifndef MEARAS_DEVICE_SIM_LINK_H
#define MEARAS_DEVICE_SIM_LINK_H

#include "device.h"

int sim_link(struct mdev *d, const struct mdev_link_input *in, unsigned n, const uint32_t *opt, const uint32_t *val,
	     unsigned nopt, void *out, uint64_t cap, uint64_t *size, int *link_error);

#endif
