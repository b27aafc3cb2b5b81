/* SPDX-License-Identifier: MIT */
/* Pieces of the control socket shared by control*.c. */
#ifndef MEARAS_CONTROL_INTERNAL_H
#define MEARAS_CONTROL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "control.pb-c.h"
#include "core/config.h"
#include "device/gpuprobe.h"

/* control_proto.c: one request in, one packed ControlReply out (malloc'd) */
void control_proto_init(const struct backend_config *cfg, const char *node);
uint8_t *control_handle(const uint8_t *req, size_t len, size_t *reply_len);
/* a packed ControlReply with an Error (malloc'd; the caller logs it) */
uint8_t *control_error(Mearas__ErrorCode code, size_t *reply_len, const char *msg);

/* control_vm.c: VM servers of AttachVm/DetachVm. dir: where their sockets
 * must be (NULL: CONTROL_DEFAULT_VM_DIR); 0, or -1 when dir is unusable */
int control_vm_init(const struct backend_config *cfg, const char *dir);
/* 0 with the VM's vGPUs per guest process and slots, or -1 with code and err */
int control_vm_attach(const Mearas__AttachVmRequest *q, unsigned *vgpus, unsigned *slots,
		      Mearas__ErrorCode *code, char *err, size_t errlen);
int control_vm_detach(const char *domain, Mearas__ErrorCode *code, char *err, size_t errlen);
/* at mearasd's exit: the sockets of VM servers a kill left behind */
void control_vm_unlink_all(void);

/* control_profile.c */
void profile_init(const struct mdev_ops *ops, const char *node, const struct remote_config *remote);
/* the node's GPUs, probed again when older than max_age_ms */
const struct probe_result *profile_gpus(int max_age_ms);
/* sample the workers' call counters (about once a second) */
void profile_sample_rates(void);
/* fills a GetProfileReply; release with profile_reply_free */
int profile_reply(Mearas__GetProfileReply *out, char *err, size_t errlen);
void profile_reply_free(Mearas__GetProfileReply *r);

#endif
