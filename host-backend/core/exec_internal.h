/* SPDX-License-Identifier: MIT */
/*
 * Shared by the pieces of record execution: exec.c (dispatch, completions,
 * teardown), exec_check.c (validation helpers), exec_objects.c (object
 * lifetimes), the op handlers (exec_memory.c, exec_module.c, exec_stream.c,
 * exec_graph.c) and the generated decoding (build/gen/exec_ops.gen.c, from
 * include/mearas/ops.spec).
 */
#ifndef MEARAS_EXEC_INTERNAL_H
#define MEARAS_EXEC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "exec.h"
#include "worker.h"

/* What a handler asks exec_record to do once the device has done the
 * record's work: wait for a fence on stream (or for the client's event),
 * then act and post the completion. */
struct fence_req {
	void *stream;           /* record a fence on this stream, complete when it passes */
	void *event;            /* or wait for this user event */
	enum pending_action action;
	uint64_t arg;
	int flush;              /* a synchronizing call: flush device output when done */
	void *kernel;           /* LAUNCH: the kernel, for the GPU time limit's log line */
};

#include "exec_ops.gen.h"

typedef int (*exec_run_fn)(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c,
			   struct fence_req *f);
/* exec_ops.gen.c: decode and validate a record, then run its handler */
extern const exec_run_fn exec_handlers[MEARAS_OP_COUNT];

/* ---- exec_check.c: validation ---- */
/* a refused record's log line, at most 10 a second per vGPU */
void exec_refuse_log(struct vgpu *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the record's payload (inline or in the arena), bounds checked */
int exec_payload(struct vgpu *v, const struct mearas_sqe *e, const uint8_t **p, uint32_t *len);
/* a NUL-terminated, non-empty string at the payload's start, copied out */
int exec_payload_string(struct vgpu *v, const struct mearas_sqe *e, char *out, size_t outlen);
/* [va, va+len) lies in one allocation or module global of v */
bool exec_dev_range_ok(struct vgpu *v, uint64_t va, uint64_t len);
/* the vGPU of this client whose memory holds [va, va+len), or NULL */
struct vgpu *exec_dev_owner(struct vgpu *v, uint64_t va, uint64_t len);
/* the worker's pointer to data-area bytes [off, off+len), or NULL */
void *exec_data_ptr(struct vgpu *v, uint64_t off, uint64_t len);
/* the record's stream: legacy, per-thread default (made on first use) or a client stream */
int exec_resolve_stream(struct vgpu *v, const struct mearas_sqe *e, void **s);
/* a client-chosen id for a new object: in range and not in use */
bool exec_id_free(struct handle_table *t, uint64_t id);

/* ---- exec_objects.c: lifetimes of the client's objects ---- */
/* the event's hold by pending completions (0, or cudaErrorMemoryAllocation) */
int exec_hold_get(struct vgpu *v, void *ev);
void exec_hold_put(struct vgpu *v, void *ev);
/* drop a reference to the host functions of a graph (freed with the last) */
void exec_share_put(struct vgpu *v, struct hf_share *sh);
/* a graph's or an instantiation's handle is gone: its nodes uncounted, its share put */
void exec_graph_put(struct vgpu *v, struct hf_share *sh);
void exec_hf_free_list(struct vgpu *v, struct host_func_req *r);
/* kernel records (FUNC_GET): funcs' aux and what one costs against MEARAS_MAX_FUNC_BYTES */
uint64_t exec_func_aux(uint64_t module, uint32_t nparams, uint32_t pbytes);
uint64_t exec_func_cost(uint32_t nparams);
void exec_func_release(struct vgpu *v, void *fn, uint64_t aux);
/* completions that would flush output through stream s wait on their own fence */
void exec_forget_stream(struct vgpu *v, void *s);
/* keep a new device object under its client id, or destroy it */
int exec_keep_or_destroy(struct vgpu *v, enum mearas_handle_kind k, uint64_t id, void *obj, uint64_t aux);
/* the *_DESTROY records: take the client's object out of its table, destroy it */
int exec_take_and_destroy(struct vgpu *v, enum mearas_handle_kind k, uint64_t id);
/* destroy an object of kind k (its table entry is already gone) */
int exec_destroy_obj(struct vgpu *v, enum mearas_handle_kind k, void *obj, uint64_t aux);
/* objects that hold device memory outside the heap's allocations (VMM
 * physical memory, CUDA arrays): `bytes` charged to the vGPU's quota and a
 * zeroed object of objsize bytes, or NULL with nothing charged; and both
 * given back */
void *exec_charged_new(struct vgpu *v, uint64_t bytes, size_t objsize);
/* bytes charged to the vGPU's quota (a loaded module's); false: over it */
bool exec_charge(struct vgpu *v, uint64_t bytes);
void exec_charged_free(struct vgpu *v, uint64_t bytes, void *obj);

/* ---- exec_memory.c ---- */
struct exec_pool;
/* drop a reference to a memory pool: its handle's (table) or an allocation's */
void exec_pool_put(struct vgpu *v, struct exec_pool *p, bool table);
/* free an allocation once the device is done with it (its pool gets its bytes back) */
int exec_mem_free(struct vgpu *v, uint64_t va);

/* ---- exec_vmm.c ---- */
struct exec_phys;
/* drop a reference to physical memory: its handle's or a mapping's */
void exec_phys_put(struct vgpu *v, struct exec_phys *p);
/* unmap every mapping of the vGPU (teardown, after the handle tables) */
void exec_vmm_teardown(struct vgpu *v);

/* ---- exec_array.c ---- */
/* destroy an array (its quota comes back), a texture or a surface object */
void exec_array_destroy(struct vgpu *v, void *obj);
void exec_texobj_destroy(struct vgpu *v, enum mearas_handle_kind k, void *obj);

/* ---- exec_stream.c ---- */
/* a host function's trampoline (run in stream order by the device) */
void exec_host_func_trampoline(void *arg);
bool exec_stream_capturing(struct vgpu *v, void *s);
/* Record e's stream s captures: asked of the device only while a capture
 * may be open (no driver call otherwise), never of the legacy stream, which
 * never captures (CAPTURE_BEGIN refuses it) and which a GPU's driver may not
 * even be asked about while another stream captures. */
bool exec_record_captures(struct vgpu *v, const struct mearas_sqe *e, void *s);
/* ---- exec_graph.c ---- */
int exec_no_graphs(struct vgpu *v);

/* ---- exec.c ---- */
/* post c to thread slot cq; with seq, c's user_data becomes the next
 * host-function run number (*seq), taken under the same lock */
bool exec_post_cqe_seq(struct vgpu *v, uint16_t cq, struct mearas_cqe *c, uint64_t *seq);

static inline struct handle_table *exec_table(struct vgpu *v, enum mearas_handle_kind k)
{
	return &v->htab[k];
}

#endif
