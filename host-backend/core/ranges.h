/* SPDX-License-Identifier: MIT */
/*
 * Ranges that records name, checked without wrapping: 2D rows (copies and
 * memsets, here and on both nodes of a remote vGPU) and the data-area bytes
 * a record reads or writes (include/mearas/ops.spec's reads/writes, which
 * the forwarder carries and the serving node checks).
 */
#ifndef MEARAS_RANGES_H
#define MEARAS_RANGES_H

#include <stdbool.h>
#include <stdint.h>

#include "mearas/region.h"

/* a 2D range has at most this many rows, this far apart */
#define RANGE_2D_MAX_ROWS  (1ull << 32)
#define RANGE_2D_MAX_PITCH (1ull << 40)

/* The bytes a 2D range spans: `height` rows of `width` bytes, `pitch`
 * apart, pitch*(height-1)+width. False for an empty range, rows wider than
 * the pitch, or a span past 2^64. */
static inline bool range_2d_span(uint64_t width, uint64_t pitch, uint64_t height, uint64_t *span)
{
	if (!width || !height || width > pitch)
		return false;
	return !__builtin_mul_overflow(pitch, height - 1, span) && !__builtin_add_overflow(*span, width, span);
}

/* The rows of r lie inside a data area of data_size bytes; *len: their span. */
static inline bool span_in_data(const struct mearas_span *r, uint64_t data_size, uint64_t *len)
{
	return r->rows <= RANGE_2D_MAX_ROWS && r->pitch <= RANGE_2D_MAX_PITCH &&
	       range_2d_span(r->width, r->pitch, r->rows, len) && r->off <= data_size && *len <= data_size - r->off;
}

/* The data-area rows record e reads (a host-to-device copy's source), *len
 * their span; false for records that read none there. */
static inline bool record_reads_data(const struct mearas_sqe *e, uint64_t data_size, struct mearas_span *r,
				     uint64_t *len)
{
	return mearas_op_reads(e, r) && span_in_data(r, data_size, len);
}

/* The data-area rows record e writes (a device-to-host copy's destination),
 * *len their span. */
static inline bool record_writes_data(const struct mearas_sqe *e, uint64_t data_size, struct mearas_span *r,
				      uint64_t *len)
{
	return mearas_op_writes(e, r) && span_in_data(r, data_size, len);
}

/* A HOST_MAPPED record names a range inside a data area of data_size bytes
 * (checked where it runs, and by both nodes of a remote vGPU before they
 * follow the range). */
static inline bool host_mapped_valid(const struct mearas_sqe *e, uint64_t data_size)
{
	const struct mearas_args_HOST_MAPPED *a = &e->args.HOST_MAPPED;

	return a->size && a->off <= data_size && a->size <= data_size - a->off && a->mapped <= 1;
}

#endif
