/* SPDX-License-Identifier: MIT */
#ifndef MEARAS_FATBIN_ENTRIES_H
#define MEARAS_FATBIN_ENTRIES_H

#include "fatbin_internal.h"

/* Walk one or more fat binaries laid end to end, feeding every PTX and ELF
 * entry (decompressed) to its parser. 0 or negative errno with err set. */
int fb_parse_fatbins(const uint8_t *data, size_t size, struct fb_builder *b, char *err,
		     size_t errlen);

#endif /* MEARAS_FATBIN_ENTRIES_H */
