// SPDX-License-Identifier: MIT
/*
 * Registration of the device code a program carries (called by
 * nvcc-generated static constructors, before main). Nothing is sent then:
 * a module is loaded on a vGPU the first time one of its kernels or
 * variables is used there, as CUDA's lazy loading does. Kernel parameter
 * layouts come from the registered fat binary (common/fatbin.c), so they are
 * known without a GPU; the back end cross-checks them against the driver.
 */
#include <stdlib.h>
#include <string.h>

#include "mearas/fatbin.h"
#include "mearas/log.h"
#include "rt.h"

struct rt_module {
	uint32_t id;
	const void *fatbin;
	size_t size;
	struct mearas_fatbin_index *index;
	int index_tried;
	uint32_t loaded;                        /* bit per vGPU */
	struct rt_mvar *mvars;                  /* its __managed__ variables, as registered */
	pthread_mutex_t lock;
};

/* a __managed__ variable: the host reads it through *host_ptr, which gets
 * its device address once the module is loaded (managedvars.c mirrors the
 * variable there) */
struct rt_mvar {
	void **host_ptr;
	const char *name;
	struct rt_mvar *next;
};

struct rt_func {
	struct rt_module *m;
	const void *host;
	const char *name;
	uint32_t id;
	const struct mearas_kernel_info *info;
	uint32_t ready;                         /* bit per vGPU */
};

struct rt_var {
	struct rt_module *m;
	const void *host;
	const char *name;
	size_t size;
	uint64_t dptr[MEARAS_MAX_VGPUS];
	uint64_t dsize[MEARAS_MAX_VGPUS];
	uint32_t ready;
};

static cudaError_t module_ready(struct rt_module *m, int vgpu);

/* host address -> object: open addressing, grown under the write lock */
struct ptr_map {
	const void **keys;
	void **vals;
	size_t cap, n;
};

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct ptr_map funcs, vars;
static struct rt_module **modules;
static size_t nmodules, cap_modules;

static size_t hash_ptr(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

static int map_put(struct ptr_map *m, const void *k, void *v)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct ptr_map g = { 0 };

		g.cap = m->cap ? m->cap * 2 : 256;
		g.keys = calloc(g.cap, sizeof(*g.keys));
		g.vals = calloc(g.cap, sizeof(*g.vals));
		if (!g.keys || !g.vals) {
			free(g.keys);
			free(g.vals);
			return -1;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i])
				map_put(&g, m->keys[i], m->vals[i]);
		free(m->keys);
		free(m->vals);
		*m = g;
	}
	for (size_t i = hash_ptr(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i] || m->keys[i] == k) {
			if (!m->keys[i])
				m->n++;
			m->keys[i] = k;
			m->vals[i] = v;
			return 0;
		}
	}
}

static void *map_get(const struct ptr_map *m, const void *k)
{
	if (!m->cap || !k)
		return NULL;
	for (size_t i = hash_ptr(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return NULL;
		if (m->keys[i] == k)
			return m->vals[i];
	}
}

RT_EXPORT void **__cudaRegisterFatBinary(void *fatCubin)
{
	struct rt_module *m = calloc(1, sizeof(*m));

	if (!m) {
		log_err("out of memory registering device code");
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	if (mearas_fatbin_locate(fatCubin, &m->fatbin, &m->size)) {
		log_err("unrecognized fat binary at %p: its kernels will fail with cudaErrorInvalidKernelImage",
			fatCubin);
		m->fatbin = NULL;
	}
	pthread_rwlock_wrlock(&reg_lock);
	if (nmodules == cap_modules) {
		size_t n = cap_modules ? cap_modules * 2 : 16;
		struct rt_module **p = realloc(modules, n * sizeof(*p));

		if (p) {
			modules = p;
			cap_modules = n;
		}
	}
	if (nmodules < cap_modules)
		modules[nmodules++] = m;
	pthread_rwlock_unlock(&reg_lock);
	/* the id is taken when the module is first loaded (handles need the connection) */
	return (void **)m;
}

RT_EXPORT void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
	/* everything of this binary is registered; loading stays lazy */
	(void)fatCubinHandle;
}

RT_EXPORT void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
	struct rt_module *m = (struct rt_module *)fatCubinHandle;

	if (!m || rt.init_err || rt.dead || !rt.region)
		return;
	pthread_mutex_lock(&m->lock);
	for (unsigned v = 0; v < rt.nvgpus; v++) {
		if (m->loaded & (1u << v)) {
			rt_mvars_unbind((int)v, m->id);
			rt_do_MODULE_UNLOAD((int)v, m->id);
		}
	}
	m->loaded = 0;
	pthread_mutex_unlock(&m->lock);
}

/* The host's first access to a __managed__ variable of the module calls
 * this first, then reads the variable through the pointer registration
 * gave: the module is loaded on the current device, which sets it. When
 * that fails the program ends here, saying why, rather than on the null
 * pointer. */
RT_EXPORT char __cudaInitModule(void **fatCubinHandle)
{
	struct rt_module *m = (struct rt_module *)fatCubinHandle;
	cudaError_t e = cudaSuccess;
	int dev = 0;

	if (!m || !m->mvars)
		return 1;
	pthread_mutex_lock(&m->lock);
	if (!*m->mvars->host_ptr) {
		e = rt_ensure_device(&dev);
		if (!e)
			e = module_ready(m, dev);
	}
	pthread_mutex_unlock(&m->lock);
	for (struct rt_mvar *v = m->mvars; v; v = v->next) {
		if (!*v->host_ptr) {
			log_err("the host accessed __managed__ variable %s, which mearas could not place where the host "
				"reaches it (%s): exiting", v->name, e ? rt_error_name(e) : "see the lines above");
			exit(1);
		}
	}
	return 1;
}

RT_EXPORT void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
				      const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
				      dim3 *bDim, dim3 *gDim, int *wSize)
{
	struct rt_func *f = calloc(1, sizeof(*f));

	(void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
	if (!f)
		return;
	f->m = (struct rt_module *)fatCubinHandle;
	f->host = hostFun;
	f->name = deviceName;
	pthread_rwlock_wrlock(&reg_lock);
	map_put(&funcs, hostFun, f);
	pthread_rwlock_unlock(&reg_lock);
}

RT_EXPORT void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
				 const char *deviceName, int ext, size_t size, int constant, int global)
{
	struct rt_var *v = calloc(1, sizeof(*v));

	(void)deviceAddress, (void)ext, (void)constant, (void)global;
	if (!v)
		return;
	v->m = (struct rt_module *)fatCubinHandle;
	v->host = hostVar;
	v->name = deviceName;
	v->size = size;
	pthread_rwlock_wrlock(&reg_lock);
	map_put(&vars, hostVar, v);
	pthread_rwlock_unlock(&reg_lock);
}

RT_EXPORT void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress,
					const char *deviceName, int ext, size_t size, int constant, int global)
{
	struct rt_module *m = (struct rt_module *)fatCubinHandle;
	struct rt_mvar *v = calloc(1, sizeof(*v));

	(void)deviceAddress, (void)ext, (void)size, (void)constant, (void)global;
	if (!m || !v || !hostVarPtrAddress) {
		free(v);
		log_err("__managed__ variable %s: not registered (%s)", deviceName, m && v ? "no pointer" : "out of memory");
		return;
	}
	v->host_ptr = hostVarPtrAddress;
	v->name = deviceName;
	pthread_mutex_lock(&m->lock);
	v->next = m->mvars;
	m->mvars = v;
	pthread_mutex_unlock(&m->lock);
}

RT_EXPORT void __cudaRegisterHostVar(void **fatCubinHandle, const char *deviceName, char *hostVar, size_t size)
{
	(void)fatCubinHandle, (void)hostVar, (void)size;
	log_err("host variable %s: __cudaRegisterHostVar is not supported by mearas", deviceName);
}

struct rt_func *rt_func_by_host(const void *host_fun)
{
	struct rt_func *f;

	pthread_rwlock_rdlock(&reg_lock);
	f = map_get(&funcs, host_fun);
	pthread_rwlock_unlock(&reg_lock);
	return f;
}

uint32_t rt_func_id(const struct rt_func *f)
{
	return f->id;
}

const char *rt_func_name(const struct rt_func *f)
{
	return f->name;
}

/* The module's __managed__ variables mirrored where their device addresses
 * are, and the host's pointers to them set (the first vGPU's, as a managed
 * variable is one for the whole process); a failure leaves them unset and
 * __cudaInitModule says so. Called with m->lock held. */
static void mvars_ready(struct rt_module *m, int vgpu)
{
	cudaError_t e = rt_mvars_bind_module(vgpu, m->id, m->index);

	for (struct rt_mvar *v = m->mvars; v && !e; v = v->next) {
		uint64_t ptr, size;

		if (*v->host_ptr)
			continue;
		if (rt_do_GLOBAL_GET(vgpu, m->id, 0, v->name, (uint32_t)strlen(v->name) + 1, &ptr, &size) == cudaSuccess)
			*v->host_ptr = (void *)(uintptr_t)ptr;
		else
			log_err("__managed__ variable %s: its module on the device does not define it", v->name);
	}
}

/* Parse the module's fat binary (once) and load it on vgpu (once).
 * Called with m->lock held. */
static cudaError_t module_ready(struct rt_module *m, int vgpu)
{
	void *img;
	cudaError_t e;

	if (!m->fatbin)
		return cudaErrorInvalidKernelImage;
	if (!m->index_tried) {
		char err[256];

		m->index_tried = 1;
		m->index = mearas_fatbin_index_new(m->fatbin, m->size, err, sizeof(err));
		if (!m->index)
			log_err("cannot read kernel parameters from a registered fat binary: %s", err);
		m->id = rt_new_handle();
	}
	if (!m->index || !m->id)
		return cudaErrorInvalidKernelImage;
	if (m->loaded & (1u << vgpu))
		return cudaSuccess;
	img = dh_alloc(m->size);
	if (!img)
		return cudaErrorMemoryAllocation;
	memcpy(img, m->fatbin, m->size);
	e = rt_do_MODULE_LOAD(vgpu, m->id, dh_offset(img), m->size);
	dh_free(img);
	if (!e) {
		m->loaded |= 1u << vgpu;
		if (m->mvars)
			mvars_ready(m, vgpu);
	}
	return e;
}

/* Longest kernel and variable names sent, NUL included. */
#define FUNC_NAME_MAX   (MEARAS_SQE_INLINE * 8)
#define SYMBOL_NAME_MAX 4096

/* FUNC_GET and GLOBAL_GET send a name as the payload, NUL included: its
 * length, or 0 when it is longer than max. */
static uint32_t name_payload_len(const char *name, size_t max)
{
	size_t n = strlen(name) + 1;

	return n > max ? 0 : (uint32_t)n;
}

cudaError_t rt_func_ready(struct rt_func *f, int vgpu)
{
	uint32_t nparams, pbytes, n = name_payload_len(f->name, FUNC_NAME_MAX);
	cudaError_t e;

	if (__atomic_load_n(&f->ready, __ATOMIC_ACQUIRE) & (1u << vgpu))
		return cudaSuccess;
	pthread_mutex_lock(&f->m->lock);
	e = module_ready(f->m, vgpu);
	if (e)
		goto out;
	if (!f->info) {
		f->info = mearas_fatbin_find_kernel(f->m->index, f->name);
		if (!f->info) {
			log_err("kernel %s is not in its fat binary", f->name);
			e = cudaErrorInvalidDeviceFunction;
			goto out;
		}
		f->id = rt_new_handle();
	}
	if (f->ready & (1u << vgpu))
		goto out;
	e = n ? rt_do_FUNC_GET(vgpu, f->m->id, f->id, f->name, n, &nparams, &pbytes) : cudaErrorInvalidDeviceFunction;
	if (e)
		goto out;
	/* the driver's view against the one read from the fat binary */
	if (pbytes != 0xffffffffu && (nparams != f->info->nparams || pbytes != f->info->param_bytes))
		log_err("kernel %s: fat binary says %u parameters / %u bytes, the device %u / %u",
			f->name, f->info->nparams, f->info->param_bytes, nparams, pbytes);
	__atomic_or_fetch(&f->ready, 1u << vgpu, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&f->m->lock);
	return e;
}

/* f on vgpu as the driver library's CUfunction (cudaGetFuncBySymbol) */
cudaError_t rt_func_as_driver(struct rt_func *f, int vgpu, void **out)
{
	cudaError_t e = rt_func_ready(f, vgpu);

	return e ? e : mearas_cu_runtime_function(vgpu, f->m->id, f->m->index, f->name, out);
}

const struct mearas_kernel_info *rt_func_info(const struct rt_func *f)
{
	return f->info;
}

cudaError_t rt_func_pack(const struct rt_func *f, void **args, uint8_t *buf, uint32_t *len)
{
	const struct mearas_kernel_info *k = f->info;

	if (k->param_bytes > MEARAS_MAX_PARAM_BYTES)
		return cudaErrorInvalidValue;
	if (k->nparams && !args)
		return cudaErrorInvalidValue;
	memset(buf, 0, k->param_bytes);
	for (uint32_t i = 0; i < k->nparams; i++) {
		if (!args[i])
			return cudaErrorInvalidValue;
		memcpy(buf + k->params[i].offset, args[i], k->params[i].size);
	}
	*len = k->param_bytes;
	return cudaSuccess;
}

/* A __managed__ variable named by its address (what the host's pointer to
 * it holds once its module is loaded): its bytes on vgpu. */
static cudaError_t managed_symbol(const void *symbol, int vgpu, uint64_t *dptr, uint64_t *size)
{
	struct rt_module *m = NULL;
	const char *name = NULL;
	cudaError_t e;

	pthread_rwlock_rdlock(&reg_lock);
	for (size_t i = 0; i < nmodules && !name && symbol; i++) {
		pthread_mutex_lock(&modules[i]->lock);
		for (struct rt_mvar *mv = modules[i]->mvars; mv && !name; mv = mv->next) {
			if (*mv->host_ptr == symbol) {
				m = modules[i];
				name = mv->name;
			}
		}
		pthread_mutex_unlock(&modules[i]->lock);
	}
	pthread_rwlock_unlock(&reg_lock);
	if (!name)
		return cudaErrorInvalidSymbol;
	pthread_mutex_lock(&m->lock);
	e = module_ready(m, vgpu);
	if (!e)
		e = rt_do_GLOBAL_GET(vgpu, m->id, 0, name, (uint32_t)strlen(name) + 1, dptr, size);
	pthread_mutex_unlock(&m->lock);
	return e;
}

cudaError_t rt_symbol(const void *symbol, int vgpu, uint64_t *dptr, uint64_t *size)
{
	struct rt_var *v;
	uint64_t ptr, dsize;
	uint32_t n;
	cudaError_t e;

	pthread_rwlock_rdlock(&reg_lock);
	v = map_get(&vars, symbol);
	pthread_rwlock_unlock(&reg_lock);
	if (!v)
		return managed_symbol(symbol, vgpu, dptr, size);
	if (__atomic_load_n(&v->ready, __ATOMIC_ACQUIRE) & (1u << vgpu)) {
		*dptr = v->dptr[vgpu];
		*size = v->dsize[vgpu];
		return cudaSuccess;
	}
	pthread_mutex_lock(&v->m->lock);
	e = module_ready(v->m, vgpu);
	if (e)
		goto out;
	n = name_payload_len(v->name, SYMBOL_NAME_MAX);
	e = n ? rt_do_GLOBAL_GET(vgpu, v->m->id, v->size, v->name, n, &ptr, &dsize) : cudaErrorInvalidSymbol;
	if (e)
		goto out;
	v->dptr[vgpu] = ptr;
	v->dsize[vgpu] = dsize;
	dm_add(vgpu, ptr, dsize, 1);
	__atomic_or_fetch(&v->ready, 1u << vgpu, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&v->m->lock);
	if (!e) {
		*dptr = v->dptr[vgpu];
		*size = v->dsize[vgpu];
	}
	return e;
}

void rt_modules_forget_vgpu(int vgpu)
{
	uint32_t mask = ~(1u << vgpu);

	rt_func_forget(vgpu, 0); /* what was set on its functions is gone */
	pthread_rwlock_rdlock(&reg_lock);
	for (size_t i = 0; i < nmodules; i++)
		__atomic_and_fetch(&modules[i]->loaded, mask, __ATOMIC_ACQ_REL);
	for (size_t i = 0; i < funcs.cap; i++)
		if (funcs.keys[i])
			__atomic_and_fetch(&((struct rt_func *)funcs.vals[i])->ready, mask, __ATOMIC_ACQ_REL);
	for (size_t i = 0; i < vars.cap; i++)
		if (vars.keys[i])
			__atomic_and_fetch(&((struct rt_var *)vars.vals[i])->ready, mask, __ATOMIC_ACQ_REL);
	pthread_rwlock_unlock(&reg_lock);
}
