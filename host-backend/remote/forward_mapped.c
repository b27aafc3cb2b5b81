// SPDX-License-Identifier: MIT
/* Mapped host memory on a remote vGPU, the forwarder's side (forward.h,
 * mapped.c): the host's changes go to the serving node ahead of launches. */
#include <sys/uio.h>

#include "core/ranges.h"
#include "core/worker.h"
#include "forward.h"
#include "mapped.h"
#include "mearas/log.h"
#include "messages.h"
#include "remote_link.h"

/* remote_mapped emit: bytes of a mapped range go to the serving node, in
 * pieces, ahead of the records that follow */
static int push_mapped(void *ctx, uint64_t off, const uint8_t *bytes, uint64_t len)
{
	struct vgpu *v = ctx;
	struct remote_vgpu *rv = rv_of(v);
	int rc = 0;

	for (uint64_t done = 0; !rc && done < len; done += REMOTE_MAPPED_PIECE) {
		uint64_t n = len - done < REMOTE_MAPPED_PIECE ? len - done : REMOTE_MAPPED_PIECE;
		struct remote_mapped_msg m = { .kind = REMOTE_MSG_MAPPED, .off = off + done, .len = n };
		struct iovec iov[2] = { { &m, sizeof(m) }, { (void *)(bytes + done), n } };

		rc = mearas_link_postv_burst(rv->link, iov, 2);
	}
	if (rc)
		forward_fail_link(v, rc, mearas_link_strerror(rc));
	return rc;
}

/*
 * Mapped host memory: a range becomes mapped with its bytes sent whole; each
 * kernel launch first sends what the host changed in the mapped ranges since
 * (the serving node sends the device's changes with its completions).
 */
/* Returns REMOTE_REC_REFUSED for a HOST_MAPPED this node cannot shadow
 * (its budget, or memory): the serving node then fails it the same way, so
 * that neither node follows the range and the program gets the error. */
uint32_t forward_mapped_before(struct vgpu *v, const struct mearas_sqe *e)
{
	struct remote_vgpu *rv = rv_of(v);
	const struct mearas_args_HOST_MAPPED *a = &e->args.HOST_MAPPED;
	bool launch = mearas_op_props(e->op)->kernel;

	/* most records are neither: nothing else is looked at for them */
	if ((!launch && e->op != MEARAS_OP_HOST_MAPPED) || __atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE))
		return 0;
	if (e->op == MEARAS_OP_HOST_MAPPED) {
		if (!host_mapped_valid(e, v->w->data_size))
			return 0; /* the serving node refuses it */
		if (!rv->can_map && a->mapped) {
			/* its device pointer would reach nothing of ours on the other node */
			log_warn("vGPU %u: mapped host memory refused: the remote node's copy of the data area is "
				 "not at this node's address", v->index);
			return REMOTE_REC_REFUSED;
		}
		if (!rv->can_map)
			return 0;
		/* the shadow first: bytes the host writes meanwhile are sent again at the next launch */
		if (!remote_mapped_set(rv->mapped, v->w->data, a->off, a->size, a->mapped != 0)) {
			log_warn("vGPU %u: a mapped range of %llu bytes is refused (memory or --link-mem-mb)", v->index,
				 (unsigned long long)a->size);
			return REMOTE_REC_REFUSED;
		}
		if (a->mapped)
			push_mapped(v, a->off, v->w->data + a->off, a->size);
	} else if (rv->can_map && remote_mapped_any(rv->mapped)) {
		remote_mapped_diff(rv->mapped, v->w->data, push_mapped, v);
	}
	return 0;
}
