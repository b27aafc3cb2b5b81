// SPDX-License-Identifier: MIT
/*
 * Module records: loading images from the data area (copied first: the
 * client could change them while they are parsed), kernels and globals
 * looked up by name, kernel attributes and occupancy, and launches with
 * their parameter buffers checked against the kernel's own layout.
 */
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"
#include "mearas/fatbin.h"

int exec_op_MODULE_LOAD(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MODULE_LOAD *in,
			struct mearas_cqe *c, struct fence_req *f)
{
	uint64_t size = in->a->size;
	const void *img = exec_data_ptr(v, in->a->image, size);
	char why[160];
	size_t extent;
	uint64_t bytes;
	void *copy, *mod;
	int r;

	(void)e, (void)c, (void)f;
	if (!img || size < 16 || size > (1ull << 31)) {
		exec_refuse_log(v, "module image refused: %llu bytes at data offset %#llx (16 bytes to 2 GiB inside the "
				"data area)", (unsigned long long)size, (unsigned long long)in->a->image);
		return cudaErrorInvalidValue;
	}
	copy = malloc(size);
	if (!copy)
		return cudaErrorMemoryAllocation;
	memcpy(copy, img, size);
	/* A GPU's loader (cuModuleLoadData) takes no length: it follows the
	 * image's own headers, or PTX text to its NUL. They must end inside
	 * the bytes we copied, and a wrapper's pointer is never followed. */
	if (mearas_module_image_extent(copy, size, &extent, why, sizeof(why))) {
		exec_refuse_log(v, "module image refused: %s", why);
		free(copy);
		return cudaErrorInvalidKernelImage;
	}
	/* The loader allocates the module's code, constants and variables
	 * from device memory: charged to the quota by the image's own account
	 * (a few bytes of headers can ask for any size of zero-filled
	 * variables), given back when the module goes. */
	if (mearas_module_footprint(copy, extent, &bytes, why, sizeof(why))) {
		exec_refuse_log(v, "module image refused: %s", why);
		free(copy);
		return cudaErrorInvalidKernelImage;
	}
	if (!exec_charge(v, bytes)) {
		exec_refuse_log(v, "module refused: its code and variables take %llu bytes, more than the vGPU's "
				"memory left (%llu of %llu bytes)", (unsigned long long)bytes,
				(unsigned long long)(v->heap.quota - v->heap.used), (unsigned long long)v->heap.quota);
		free(copy);
		return cudaErrorMemoryAllocation;
	}
	r = v->ops->module_load(v->dev, copy, size, &mod);
	/* searched once the driver took it (a module it refuses cannot print) */
	if (!r && !v->may_print)
		v->may_print = mearas_image_may_print(copy, size);
	free(copy);
	if (r) {
		vaheap_uncharge(&v->heap, bytes);
		return r;
	}
	return exec_keep_or_destroy(v, MEARAS_KIND_MODULE, in->a->module, mod, bytes);
}

int exec_op_MODULE_UNLOAD(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_MODULE_UNLOAD *in,
			  struct mearas_cqe *c, struct fence_req *f)
{
	struct handle_table *funcs = exec_table(v, MEARAS_KIND_FUNC);
	struct handle_table *mods = exec_table(v, MEARAS_KIND_MODULE);
	struct hslot *h = htab_get(mods, in->a->module);
	uint64_t charged;
	void *mod;

	(void)e, (void)c, (void)f;
	if (!h)
		return cudaErrorInvalidResourceHandle;
	charged = h->aux;
	mod = htab_take(mods, in->a->module);
	/* functions of the module die with it */
	for (uint32_t i = 0; i < funcs->cap; i++) {
		uint64_t aux = funcs->slots[i].aux;

		if (funcs->slots[i].obj && (aux >> 48) == in->a->module)
			exec_func_release(v, htab_take(funcs, i), aux);
	}
	/* and so do its globals: their memory is the driver's to reuse */
	pthread_mutex_lock(&v->heap_lock);
	for (size_t i = 0; i < v->nglobals;) {
		if (v->globals[i].module == in->a->module)
			v->globals[i] = v->globals[--v->nglobals];
		else
			i++;
	}
	pthread_mutex_unlock(&v->heap_lock);
	return exec_destroy_obj(v, MEARAS_KIND_MODULE, mod, charged);
}

int exec_op_FUNC_GET(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_FUNC_GET *in,
		     struct mearas_cqe *c, struct fence_req *f)
{
	uint32_t nparams, pbytes;
	uint64_t aux;
	void *fn;
	int r;

	(void)e, (void)f;
	r = v->ops->func_get(v->dev, in->module->obj, in->name, &fn, &nparams, &pbytes);
	if (r)
		return r;
	aux = exec_func_aux(in->a->module, nparams, pbytes);
	v->func_bytes += exec_func_cost(nparams);
	if (v->func_bytes > MEARAS_MAX_FUNC_BYTES) {
		exec_refuse_log(v, "FUNC_GET refused: kernel records would hold more than %llu MiB (a client looking "
				"kernels up without end?)", MEARAS_MAX_FUNC_BYTES >> 20);
		exec_func_release(v, fn, aux);
		return cudaErrorMemoryAllocation;
	}
	c->val[0] = nparams;
	c->val[1] = pbytes;
	return exec_keep_or_destroy(v, MEARAS_KIND_FUNC, in->a->func, fn, aux);
}

int exec_op_FUNC_ATTRS(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_FUNC_ATTRS *in,
		       struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)f;
	return v->ops->func_attrs(v->dev, in->func->obj, c->val);
}

int exec_op_FUNC_SET_ATTR(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_FUNC_SET_ATTR *in,
			  struct mearas_cqe *c, struct fence_req *f)
{
	(void)e, (void)c, (void)f;
	return v->ops->func_set_attr(v->dev, in->func->obj, (int)in->a->attr, (int)in->a->value);
}

/* a cluster shape is all three dimensions or none; the driver checks the
 * rest (it divides the grid, fits the device's cluster limit) */
static bool cluster_shape_ok(const uint32_t c[3])
{
	return !c[0] == !c[1] && !c[0] == !c[2];
}

int exec_op_OCCUPANCY(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_OCCUPANCY *in,
		      struct mearas_cqe *c, struct fence_req *f)
{
	int blocks = 0, r;

	(void)e, (void)f;
	if (in->a->block == 0 || in->a->block > 4096 || in->a->smem > (1u << 30))
		return cudaErrorInvalidValue;
	r = v->ops->occupancy(v->dev, in->func->obj, (int)in->a->block, in->a->smem, &blocks);
	c->val[0] = (uint64_t)blocks;
	return r;
}

int exec_op_OCCUPANCY_CLUSTERS(struct vgpu *v, const struct mearas_sqe *e,
			       const struct exec_in_OCCUPANCY_CLUSTERS *in, struct mearas_cqe *c, struct fence_req *f)
{
	const struct mearas_args_OCCUPANCY_CLUSTERS *a = in->a;
	struct mdev_launch l = { .smem = a->smem };
	int clusters = 0, r;

	(void)e, (void)f;
	if (!cluster_shape_ok(a->cluster) || a->smem > (1u << 30))
		return cudaErrorInvalidValue;
	for (int i = 0; i < 3; i++) {
		l.grid[i] = a->grid[i];
		l.block[i] = a->block[i];
		l.cluster[i] = a->cluster[i];
		if (!l.grid[i] || !l.block[i])
			return cudaErrorInvalidValue;
	}
	r = v->ops->occupancy_clusters(v->dev, in->func->obj, &l, &clusters);
	c->val[0] = (uint64_t)clusters;
	return r;
}

int exec_op_GLOBAL_GET(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_GLOBAL_GET *in,
		       struct mearas_cqe *c, struct fence_req *f)
{
	int r;

	(void)e, (void)f;
	r = v->ops->global_get(v->dev, in->module->obj, in->name, in->a->size, &c->val[0], &c->val[1]);
	if (r)
		return r;
	if (!exec_dev_range_ok(v, c->val[0], c->val[1])) {
		struct global_range *g;

		pthread_mutex_lock(&v->heap_lock); /* other vGPUs' threads read the list */
		if (v->nglobals == v->cap_globals) {
			size_t ncap = v->cap_globals ? v->cap_globals * 2 : 16;

			g = realloc(v->globals, ncap * sizeof(*g));
			if (!g) {
				pthread_mutex_unlock(&v->heap_lock);
				return cudaErrorMemoryAllocation;
			}
			v->globals = g;
			v->cap_globals = ncap;
		}
		v->globals[v->nglobals++] =
			(struct global_range){ .va = c->val[0], .size = c->val[1], .module = in->a->module };
		pthread_mutex_unlock(&v->heap_lock);
	}
	return 0;
}

int exec_op_LAUNCH(struct vgpu *v, const struct mearas_sqe *e, const struct exec_in_LAUNCH *in,
		   struct mearas_cqe *c, struct fence_req *f)
{
	const struct mearas_args_LAUNCH *a = in->a;
	struct mdev_launch l;
	uint32_t want = (uint32_t)in->func->aux;
	_Alignas(16) uint8_t params[MEARAS_MAX_PARAM_BYTES + 4];

	(void)e, (void)c;
	f->stream = in->stream;
	if (in->params_len > MEARAS_MAX_PARAM_BYTES || (want != 0xffffffffu && in->params_len != want))
		return cudaErrorInvalidValue;
	for (int i = 0; i < 3; i++) {
		l.grid[i] = a->grid[i];
		l.block[i] = a->block[i];
		if (!l.grid[i] || !l.block[i])
			return cudaErrorInvalidConfiguration;
	}
	if (a->smem > (1u << 30))
		return cudaErrorInvalidConfiguration;
	l.smem = (uint32_t)a->smem;
	if (a->flags & ~MEARAS_LAUNCH_KNOWN)
		return cudaErrorInvalidValue;
	l.cooperative = (a->flags & MEARAS_LAUNCH_COOPERATIVE) != 0;
	l.programmatic = (a->flags & MEARAS_LAUNCH_PROGRAMMATIC) != 0;
	l.sync_domain_remote = (a->flags & MEARAS_LAUNCH_SYNC_DOMAIN_REMOTE) != 0;
	l.cluster_policy = (int)((a->flags & MEARAS_LAUNCH_POLICY_MASK) >> MEARAS_LAUNCH_POLICY_SHIFT);
	if (l.cluster_policy > 2)       /* default, spread, load balancing */
		return cudaErrorInvalidValue;
	l.has_priority = (a->flags & MEARAS_LAUNCH_PRIORITY) != 0;
	l.priority = l.has_priority ? (int8_t)(uint8_t)(a->flags >> MEARAS_LAUNCH_PRIORITY_SHIFT) : 0;
	l.has_carveout = (a->flags & MEARAS_LAUNCH_CARVEOUT) != 0;
	l.carveout = l.has_carveout ? (int)(uint8_t)(a->flags >> MEARAS_LAUNCH_CARVEOUT_SHIFT) : 0;
	if (l.carveout > 100)
		return cudaErrorInvalidValue;
	if (!cluster_shape_ok(a->cluster))
		return cudaErrorInvalidConfiguration;
	for (int i = 0; i < 3; i++)
		l.cluster[i] = a->cluster[i];
	/* parameters are copied out of shared memory before the driver sees them */
	memcpy(params, in->params, in->params_len);
	l.params = params;
	l.param_bytes = in->params_len;
	f->kernel = in->func->obj;
	return v->ops->launch(v->dev, in->func->obj, f->stream, &l);
}
