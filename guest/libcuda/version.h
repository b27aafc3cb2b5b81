/* SPDX-License-Identifier: MIT */
/* The driver version mearas's libcuda.so.1 reports (cuDriverGetVersion) and
 * answers cuGetProcAddress for: 1000 * major + 10 * minor. The cuGetProcAddress
 * table is generated from a real driver of this version (scripts/procgen.py
 * checks it), so change the two together. */
#ifndef MEARAS_CU_VERSION_H
#define MEARAS_CU_VERSION_H

#define CU_DRIVER_VERSION 13000

#endif
