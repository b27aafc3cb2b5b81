// SPDX-License-Identifier: MIT
/*
 * Tensor map records (TENSOR_MAP_ENCODE: cuTensorMapEncodeTiled, ...Im2col,
 * ...Im2colWide). The arguments are copied out of the payload, then checked
 * here before the device sees them: the call, the rank (1..5; im2col 3..5),
 * every enum in its range, the arrays' entries past the rank zero, each
 * dimension 1..2^32 and stride below 2^40, and the whole tensor, from
 * globalAddress to its last element's last byte, inside device memory of
 * this client (its allocations, module globals and mapped VMM memory): a
 * tenant gets no descriptor of memory that is not its own. The finer rules
 * of cuda.h (alignments, box sizes, swizzle and interleave combinations) are
 * the device's: the driver checks them on a GPU, the sim as documented
 * (device_sim.c). The device's 128 bytes go to the data area at `map`.
 */
#include <string.h>

#include "exec_internal.h"
#include "mearas/tensormap.h"

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = { [MEARAS_TMAP_TILED] = "tiled", [MEARAS_TMAP_IM2COL] = "im2col",
					      [MEARAS_TMAP_IM2COL_WIDE] = "im2col wide" };

	return kind < sizeof(names) / sizeof(names[0]) && names[kind] ? names[kind] : "unknown";
}

/* nonzero when any of n entries from `from` on is set */
static bool any_u64(const uint64_t *a, unsigned from, unsigned n)
{
	for (unsigned i = from; i < n; i++)
		if (a[i])
			return true;
	return false;
}

static bool any_u32(const uint32_t *a, unsigned from, unsigned n)
{
	for (unsigned i = from; i < n; i++)
		if (a[i])
			return true;
	return false;
}

static bool any_i32(const int32_t *a, unsigned from, unsigned n)
{
	for (unsigned i = from; i < n; i++)
		if (a[i])
			return true;
	return false;
}

/* The arguments' shape: the call's rank range, enums in range, unused
 * entries zero, dimensions and strides within cuda.h's bounds. NULL when
 * they hold, else what is wrong (for the log line). */
static const char *tmap_shape_error(uint32_t kind, const struct mearas_tmap_args *a)
{
	bool im2col = kind != MEARAS_TMAP_TILED;
	unsigned rank = a->rank, corners;

	if (kind != MEARAS_TMAP_TILED && kind != MEARAS_TMAP_IM2COL && kind != MEARAS_TMAP_IM2COL_WIDE)
		return "unknown encode call";
	if (rank < (im2col ? 3u : 1u) || rank > MEARAS_TMAP_MAX_RANK)
		return im2col ? "rank not 3 to 5" : "rank not 1 to 5";
	if (a->dtype > MEARAS_TMAP_DTYPE_MAX || a->interleave > MEARAS_TMAP_INTERLEAVE_MAX ||
	    a->swizzle > MEARAS_TMAP_SWIZZLE_MAX || a->l2promo > MEARAS_TMAP_L2_MAX || a->oobfill > MEARAS_TMAP_OOB_MAX ||
	    a->wide_mode > (kind == MEARAS_TMAP_IM2COL_WIDE ? MEARAS_TMAP_WIDE_MODE_MAX : 0))
		return "an enum out of range";
	corners = kind == MEARAS_TMAP_IM2COL ? rank - 2 : kind == MEARAS_TMAP_IM2COL_WIDE ? 1 : 0;
	if (any_u64(a->dims, rank, MEARAS_TMAP_MAX_RANK) || any_u64(a->strides, rank - 1, MEARAS_TMAP_MAX_RANK - 1) ||
	    any_u32(a->estrides, rank, MEARAS_TMAP_MAX_RANK) ||
	    any_u32(a->box, im2col ? 0 : rank, MEARAS_TMAP_MAX_RANK) || any_i32(a->lower, corners, 3) ||
	    any_i32(a->upper, corners, 3) || (!im2col && (a->channels || a->pixels)) || a->reserved)
		return "entries past the rank (or not used by the call) set";
	for (unsigned i = 0; i < rank; i++)
		if (a->dims[i] == 0 || a->dims[i] > MEARAS_TMAP_MAX_DIM)
			return "a dimension not 1 to 2^32";
	for (unsigned i = 0; i + 1 < rank; i++)
		if (a->strides[i] >= MEARAS_TMAP_MAX_STRIDE)
			return "a stride not below 2^40";
	return NULL;
}

/* The bytes from globalAddress to the end of the tensor's last element:
 * the innermost row (dims[0] elements) plus each outer dimension's last
 * index times its stride. False when that passes 2^64 (2^32 rows 2^40
 * bytes apart do). */
static bool tmap_span(const struct mearas_tmap_args *a, uint64_t *span)
{
	uint64_t s = (a->dims[0] * mearas_tmap_elem_bits(a->dtype) + 7) / 8, step;

	for (unsigned i = 1; i < a->rank; i++)
		if (__builtin_mul_overflow(a->dims[i] - 1, a->strides[i - 1], &step) ||
		    __builtin_add_overflow(s, step, &s))
			return false;
	*span = s;
	return true;
}

int exec_op_TENSOR_MAP_ENCODE(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_TENSOR_MAP_ENCODE *in,
			      struct mearas_cqe *c, struct fence_req *f)
{
	uint32_t kind = in->a->kind;
	struct mearas_tmap_args a;
	uint8_t out[MEARAS_TMAP_BYTES];
	const char *why;
	uint64_t span = 0;
	void *dst;
	int r;

	(void)e, (void)c, (void)f;
	if (in->a->map_len != MEARAS_TMAP_BYTES || !(dst = exec_data_ptr(v, in->a->map, MEARAS_TMAP_BYTES))) {
		exec_refuse_log(v, "tensor map refused: its %llu bytes at data offset %#llx are not one map inside the "
				"data area", (unsigned long long)in->a->map_len, (unsigned long long)in->a->map);
		return cudaErrorInvalidValue;
	}
	if (in->params_len != sizeof(a)) {
		exec_refuse_log(v, "tensor map refused: %u bytes of arguments, not %zu", in->params_len, sizeof(a));
		return cudaErrorInvalidValue;
	}
	/* a private copy: the client could change the shared bytes while we check them */
	memcpy(&a, in->params, sizeof(a));
	why = tmap_shape_error(kind, &a);
	if (why) {
		exec_refuse_log(v, "%s tensor map of rank %u refused: %s", kind_name(kind), a.rank, why);
		return cudaErrorInvalidValue;
	}
	if (!tmap_span(&a, &span)) {
		exec_refuse_log(v, "%s tensor map at %#llx refused: its dimensions and strides span past 2^64",
				kind_name(kind), (unsigned long long)a.addr);
		return cudaErrorInvalidValue;
	}
	if (!exec_dev_owner(v, a.addr, span)) {
		exec_refuse_log(v, "%s tensor map of %#llx bytes at %#llx refused: not inside device memory of this client",
				kind_name(kind), (unsigned long long)span, (unsigned long long)a.addr);
		return cudaErrorInvalidValue;
	}
	if (!v->ops->tensor_map_encode) {
		exec_refuse_log(v, "tensor maps are not supported by the %s device", v->ops->name);
		return cudaErrorNotSupported;
	}
	memset(out, 0, sizeof(out));
	r = v->ops->tensor_map_encode(v->dev, kind, &a, out);
	if (r)
		return r;
	memcpy(dst, out, sizeof(out));
	return 0;
}
