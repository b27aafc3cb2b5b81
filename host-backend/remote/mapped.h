/* SPDX-License-Identifier: MIT */
/*
 * Mapped host memory kept coherent across the two nodes of a remote vGPU
 * (mapped.c): each node keeps a shadow of each mapped range, the bytes both
 * last agreed on, and sends the runs of bytes that changed on its side.
 */
#ifndef MEARAS_REMOTE_MAPPED_H
#define MEARAS_REMOTE_MAPPED_H

#include <stdbool.h>
#include <stdint.h>

struct remote_budget;
struct remote_mapped;

struct remote_mapped *remote_mapped_new(void);
void remote_mapped_free(struct remote_mapped *m);
/* Any range mapped? (no lock: the fast path's check) */
bool remote_mapped_any(const struct remote_mapped *m);
/* Shadows are taken from b from now on (NULL: no limit; set before any range). */
void remote_mapped_set_budget(struct remote_mapped *m, struct remote_budget *b);
/* [off, off + size) of the data area base is mapped (on) or no longer; the
 * shadow starts as base's bytes. false when out of memory or budget. */
bool remote_mapped_set(struct remote_mapped *m, const uint8_t *base, uint64_t off, uint64_t size, bool on);
/* [off, off + len) of base is known to both nodes now (a copy carried it):
 * the shadow takes it, so it does not count as a change. */
void remote_mapped_absorb(struct remote_mapped *m, const uint8_t *base, uint64_t off, uint64_t len);
/* Bytes the other node changed: into base and the shadow at once. */
void remote_mapped_write(struct remote_mapped *m, uint8_t *base, uint64_t off, const void *bytes, uint64_t len);
/* emit(ctx, off, bytes, len) for every run of bytes where base differs from
 * the shadow (this node's changes), which the shadow then takes; emit runs
 * under the table's lock and returns nonzero to stop. Returns bytes sent. */
typedef int (*remote_mapped_emit_fn)(void *ctx, uint64_t off, const uint8_t *bytes, uint64_t len);
uint64_t remote_mapped_diff(struct remote_mapped *m, const uint8_t *base, remote_mapped_emit_fn emit, void *ctx);

#endif
