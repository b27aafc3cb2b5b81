/* SPDX-License-Identifier: MIT */
#ifndef MEARAS_TEST_UTIL_H
#define MEARAS_TEST_UTIL_H

#include <stddef.h>

/* Whole file in a malloc'd buffer (size in *size), NULL with a message on error. */
unsigned char *read_file(const char *path, size_t *size);

#endif
