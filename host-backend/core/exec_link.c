// SPDX-License-Identifier: MIT
/*
 * LINK records (cuLinkComplete): the inputs a client gathered, laid out as
 * include/mearas/link.h says, copied out of the data area first (the client
 * can write there while we read), then checked before the device sees them:
 * the header (magic, counts, reserved words), every option one the layout
 * carries, every input's type carried and its bytes inside the layout, and
 * nothing after the last. The device links (device.h's link) and writes the
 * image, or the linker's error log, at `out`.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "mearas/link.h"

/* the layout at buf (len bytes) into h and in[] (h.count inputs); NULL when
 * it holds, else what is wrong */
static const char *parse(const uint8_t *buf, uint64_t len, struct mearas_link_header *hp,
			 struct mdev_link_input *in)
{
	struct mearas_link_header h;
	uint64_t off = sizeof(h);

	if (len < sizeof(h))
		return "shorter than its header";
	memcpy(&h, buf, sizeof(h));
	if (h.magic != MEARAS_LINK_MAGIC || h.reserved)
		return "not a link layout";
	if (!h.count || h.count > MEARAS_LINK_MAX_INPUTS)
		return "input count out of range";
	if (h.nopts > MEARAS_LINK_MAX_OPTS)
		return "option count out of range";
	for (unsigned i = 0; i < h.nopts; i++)
		if (!mearas_link_option_carried(h.opt[i]))
			return "an option the layout does not carry";
	for (unsigned i = 0; i < h.count; i++) {
		struct mearas_link_input li;

		if (len - off < sizeof(li))
			return "an input header past the end";
		memcpy(&li, buf + off, sizeof(li));
		off += sizeof(li);
		if (li.type > MEARAS_LINK_INPUT_MAX || li.reserved)
			return "an input type the layout does not carry";
		if (!li.size || li.size > len - off || mearas_link_pad8(li.size) > len - off)
			return "an input's bytes past the end";
		in[i] = (struct mdev_link_input){ .type = li.type, .data = buf + off, .size = li.size };
		off += mearas_link_pad8(li.size);
	}
	if (off != len)
		return "bytes after the last input";
	*hp = h;
	return NULL;
}

int exec_op_LINK(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_LINK *in, struct mearas_cqe *c,
		 struct fence_req *f)
{
	uint64_t len = in->a->in_len, cap = in->a->out_cap, size = 0;
	const void *src = exec_data_ptr(v, in->a->in, len);
	void *out = exec_data_ptr(v, in->a->out, cap);
	struct mdev_link_input inputs[MEARAS_LINK_MAX_INPUTS];
	struct mearas_link_header h;
	const char *why;
	uint8_t *copy, *terminated;
	int r, link_error = 0;

	(void)e, (void)f;
	if (!src || !out || !cap || len > sizeof(h) + MEARAS_LINK_MAX_BYTES) {
		exec_refuse_log(v, "LINK refused: its input (%llu bytes) or output (%llu) is not in the data area",
				(unsigned long long)len, (unsigned long long)cap);
		return cudaErrorInvalidValue;
	}
	copy = malloc(len ? len : 1);
	if (!copy)
		return cudaErrorMemoryAllocation;
	memcpy(copy, src, len);
	why = parse(copy, len, &h, inputs);
	if (why) {
		exec_refuse_log(v, "LINK refused: its layout (%llu bytes): %s", (unsigned long long)len, why);
		free(copy);
		return cudaErrorInvalidValue;
	}
	/* A GPU's linker reads PTX to its NUL, whatever size it is given, and
	 * a client's input need not end in one (its padding, or the next
	 * input's header, follows): each input goes on followed by a NUL of
	 * ours. */
	terminated = malloc(len + 8u * h.count);
	if (!terminated) {
		free(copy);
		return cudaErrorMemoryAllocation;
	}
	for (uint64_t i = 0, at = 0; i < h.count; i++) {
		memcpy(terminated + at, inputs[i].data, inputs[i].size);
		terminated[at + inputs[i].size] = 0;
		inputs[i].data = terminated + at;
		at += mearas_link_pad8(inputs[i].size + 1);
	}
	free(copy);
	r = v->ops->link(v->dev, inputs, h.count, h.opt, h.val, h.nopts, out, cap, &size, &link_error);
	free(terminated);
	if (r)
		return r;
	c->val[0] = size;
	c->val[1] = (uint64_t)link_error;
	return 0;
}
