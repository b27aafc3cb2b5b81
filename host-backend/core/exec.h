/* SPDX-License-Identifier: MIT */
/*
 * Running records on a vGPU of this node (exec*.c): each record, already
 * copied out of the ring, is validated field by field and run; completions
 * that wait on the device are kept and posted when their fence passes.
 */
#ifndef MEARAS_EXEC_H
#define MEARAS_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "mearas/region.h"

struct vgpu;

/* validate and run one record */
void exec_record(struct vgpu *v, const struct mearas_sqe *e);
/* poll pending completions; returns how many completed */
int exec_poll_pending(struct vgpu *v);
/* forget every pending completion (the client is gone): fences and holds released */
void exec_drop_pending(struct vgpu *v);
/* The vGPU's completion flags go (after exec_drop_pending: none is polled
 * again); the device frees them where no queued write can reach them. */
void exec_flags_release(struct vgpu *v);
/* complete every pending record with status, waiting for nothing on the
 * device (the GPU time limit fired) */
void exec_fail_pending(struct vgpu *v, int status);
/* post a completion to thread slot cq; false if the client's CQ is corrupt/full */
bool post_cqe(struct vgpu *v, uint16_t cq, const struct mearas_cqe *c);
/* frees every object and all memory of the vGPU (a reset, or its end) */
void vgpu_teardown(struct vgpu *v);
/* One info line: the ops of the records the client waited for, most first
 * (what a program's synchronizing calls were), if any. */
void vgpu_log_sync_ops(const struct vgpu *v, const char *label);

#endif
