/* SPDX-License-Identifier: MIT */
/*
 * The version of the NVIDIA kernel driver on this node ("580.159.04"), as
 * /proc/driver/nvidia/version states it: what mearasd publishes in each
 * vGPU's devinfo (mearas_devinfo.kmd_version) for nvmlSystemGetDriverVersion,
 * which frameworks parse as numbers (XLA reads the kernel driver's version so).
 */
#ifndef MEARAS_KMD_VERSION_H
#define MEARAS_KMD_VERSION_H

#include <stdbool.h>
#include <stddef.h>

/* The version in the text of /proc/driver/nvidia/version: the first word
 * of its "NVRM version:" line made of digits and dots that has a dot
 * (proprietary and open modules word that line differently). true with it
 * in out (NUL-terminated, at most len - 1 bytes), false if there is none. */
bool kmd_version_parse(const char *text, char *out, size_t len);

/* kmd_version_parse of the file at path; false if it cannot be read */
bool kmd_version_read(const char *path, char *out, size_t len);

#endif
