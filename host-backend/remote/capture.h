/* SPDX-License-Identifier: MIT */
/*
 * Stream capture as the serving node follows it (capture.c): which
 * device-to-host copies a capture took into its graph, so that every launch
 * of the graph sends their rows back to the forwarder.
 */
#ifndef MEARAS_REMOTE_CAPTURE_H
#define MEARAS_REMOTE_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "mearas/region.h"

struct remote_budget;
struct remote_captures;

struct remote_captures *remote_captures_new(void);
void remote_captures_free(struct remote_captures *c);
/* Its tables and ranges are taken from b from now on (NULL: no limit). */
void remote_captures_set_budget(struct remote_captures *c, struct remote_budget *b);
uint64_t remote_stream_key(const struct mearas_sqe *e);
/* Follows captures, graphs and executable graphs; false when out of memory.
 * c NULL (the device has no graphs): every call does nothing. */
bool remote_captures_note(struct remote_captures *c, const struct mearas_sqe *e);
/* The device refused the CAPTURE_BEGIN on this stream: it is not capturing. */
void remote_captures_begin_failed(struct remote_captures *c, uint64_t stream_key);
/* A device-to-host copy on a capturing stream: keeps its range with the
 * capture and returns true (ok false when out of memory). */
bool remote_captures_take_copy(struct remote_captures *c, const struct mearas_sqe *e, const struct mearas_span *r,
			       bool *ok);
/* A GRAPH_LAUNCH: the ranges its graph writes (malloc'd copy, *n 0 if none);
 * false when out of memory. */
bool remote_captures_launch_ranges(struct remote_captures *c, const struct mearas_sqe *e, struct mearas_span **out,
				   uint32_t *n);

#endif
