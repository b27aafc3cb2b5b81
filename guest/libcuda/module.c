// SPDX-License-Identifier: MIT
/*
 * Modules, libraries, functions and kernels (cu.h). An image (fat binary,
 * cubin or PTX) is shipped to the host through the data area and loaded
 * there by the real driver (JIT included); kernel parameter layouts are
 * read from the image here and checked against what the device reports.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/fatbin.h"
#include "mearas/log.h"
#include "cu.h"

#define FUNCTION_MAGIC 0x6d46756eu
#define LIBRARY_MAGIC  0x6d4c6962u
#define KERNEL_MAGIC   0x6d4b726eu

/* longest kernel and global names sent, NUL included */
#define NAME_MAX_SENT (MEARAS_SQE_INLINE * 8)

struct cu_kernel {
	uint32_t magic;
	struct cu_library *lib;
	char *name;
	struct cu_function *fn[MEARAS_MAX_VGPUS];       /* per vGPU, made on first use */
	struct cu_kernel *next;
};

struct cu_library {
	uint32_t magic;
	void *image;
	size_t size;
	struct cu_module *mod[MEARAS_MAX_VGPUS];        /* per vGPU, loaded on first use */
	struct cu_kernel *kernels;
	pthread_mutex_t lock;
	struct cu_library *next;
};

/* every library, for resets */
static struct cu_library *libraries;
static pthread_mutex_t libraries_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- images ---- */

/* The image's start and size: a fat binary wrapper is followed to its fat
 * binary; a cubin and PTX text are sized from their own contents. */
static CUresult image_of(const void *image, const void **start, size_t *size)
{
	const void *fatbin;

	if (!image)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (mearas_fatbin_locate(image, &fatbin, size) == 0) {
		*start = fatbin;
		return CUDA_SUCCESS;
	}
	*start = image;
	if (mearas_module_image_size(image, size))
		return CU_REFUSE(CUDA_ERROR_INVALID_IMAGE);
	return CUDA_SUCCESS;
}

/* loads [image, image+size) on vgpu as a new module */
static CUresult module_load(int vgpu, const void *image, size_t size, struct cu_library *lib, struct cu_module **out)
{
	struct cu_module *m = calloc(1, sizeof(*m));
	char err[256];
	void *copy;
	CUresult r;

	if (!m)
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	m->index = mearas_fatbin_index_new(image, size, err, sizeof(err));
	if (!m->index)
		log_warn("module image (%zu bytes): kernel parameters unreadable, its kernels cannot be launched: %s",
			 size, err);
	m->id = rt_new_handle();
	m->vgpu = vgpu;
	m->lib = lib;
	copy = m->id ? dh_alloc(size) : NULL;
	if (!copy) {
		if (m->id)
			log_warn("a module image of %zu bytes does not fit the data area (%llu MiB): raise MEARAS_DATA_MB",
				 size, (unsigned long long)(rt.data_size >> 20));
		mearas_fatbin_index_free(m->index);
		free(m);
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	memcpy(copy, image, size);
	r = cu_result(rt_do_MODULE_LOAD(vgpu, m->id, dh_offset(copy), size));
	dh_free(copy);
	if (r) {
		mearas_fatbin_index_free(m->index);
		free(m);
		return r;
	}
	m->magic = MODULE_MAGIC;
	/* its __managed__ variables where the host names them; a module whose
	 * variables cannot be mirrored still loads (managedvars.c said why) */
	if (m->index && rt_mvars_bind_module(vgpu, m->id, m->index) != cudaSuccess)
		log_warn("a module's __managed__ variables are not reachable from the host: a host access faults");
	*out = m;
	return CUDA_SUCCESS;
}

static void function_free(struct cu_function *f);

static void module_free(struct cu_module *m)
{
	if (!m->gone) {
		rt_mvars_unbind(m->vgpu, m->id);
		rt_do_MODULE_UNLOAD(m->vgpu, m->id);
	}
	m->magic = 0;
	for (unsigned i = 0; i < m->nfns; i++)
		function_free(m->fns[i]);
	free(m->fns);
	mearas_fatbin_index_free(m->index);
	free(m);
}

/* the live module behind h (else CUDA_ERROR_INVALID_HANDLE) */
static CUresult module_of(CUmodule h, struct cu_module **out)
{
	struct cu_module *m = (struct cu_module *)h;

	*out = m && m->magic == MODULE_MAGIC ? m : NULL;
	return *out ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
}

CU_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	struct cu_ctx *c;
	struct cu_module *m;
	const void *start;
	size_t size;
	CUresult r = cu_need(cu_current_ctx(&c), module);

	if (r)
		return r;
	r = image_of(image, &start, &size);
	if (!r)
		r = module_load(c->vgpu, start, size, NULL, &m);
	if (!r)
		*module = (CUmodule)m;
	return r;
}

/* JIT options tune the host's compilation; the host's defaults serve */
CU_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
					      CUjit_option *options, void **optionValues)
{
	(void)options, (void)optionValues;
	if (numOptions)
		log_debug("cuModuleLoadDataEx: %u JIT option(s) not passed on", numOptions);
	return cuModuleLoadData(module, image);
}

CU_EXPORT CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return cuModuleLoadData(module, fatCubin);
}

CUresult cu_read_file(const char *fname, void **data, size_t *size)
{
	FILE *f;
	long len;

	if (!fname)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	f = fopen(fname, "rb");
	if (!f)
		return CU_REFUSE(CUDA_ERROR_FILE_NOT_FOUND);
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return CU_REFUSE(CUDA_ERROR_FILE_NOT_FOUND);
	}
	/* one more zero byte: PTX text is then terminated */
	*data = calloc(1, (size_t)len + 1);
	if (!*data || fread(*data, 1, (size_t)len, f) != (size_t)len) {
		free(*data);
		fclose(f);
		return CU_REFUSE(*data ? CUDA_ERROR_FILE_NOT_FOUND : CUDA_ERROR_OUT_OF_MEMORY);
	}
	fclose(f);
	if (size)
		*size = (size_t)len;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
	void *data;
	CUresult r = cu_read_file(fname, &data, NULL);

	if (r)
		return r;
	r = cuModuleLoadData(module, data);
	free(data);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
	struct cu_module *m;
	CUresult r = cu_ready();

	if (!r)
		r = module_of(hmod, &m);
	if (r)
		return r;
	if (m->lib) /* a library's: unloaded with the library */
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	if (m->runtime) {
		log_warn("cuModuleUnload: the module holds the CUDA runtime's kernels (cuFuncGetModule of a "
			 "cudaGetFuncBySymbol function): not unloaded");
		return CU_REFUSE(CUDA_ERROR_NOT_PERMITTED);
	}
	module_free(m);
	return CUDA_SUCCESS;
}

/* lazy, as the driver loads by default since CUDA 12.2 */
CU_EXPORT CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	return cu_answer(mode, CU_MODULE_LAZY_LOADING);
}

static uint32_t name_len(const char *name)
{
	size_t n = strlen(name) + 1;

	return n > NAME_MAX_SENT ? 0 : (uint32_t)n;
}

CUresult cu_function_get(struct cu_module *m, const char *name, struct cu_function **out)
{
	struct cu_function *f;
	uint32_t nparams, pbytes, n;
	CUresult r;

	if (m->gone)
		return CU_REFUSE(CUDA_ERROR_CONTEXT_IS_DESTROYED);
	n = name_len(name);
	if (!n)
		return CU_REFUSE(CUDA_ERROR_NOT_FOUND);
	f = calloc(1, sizeof(*f));
	if (!f || !(f->name = strdup(name))) {
		free(f);
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	f->m = m;
	f->info = m->index ? mearas_fatbin_find_kernel(m->index, name) : NULL;
	f->id = rt_new_handle();
	r = f->id ? cu_result(rt_do_FUNC_GET(m->vgpu, m->id, f->id, name, n, &nparams, &pbytes))
		  : CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	if (r) {
		free(f->name);
		free(f);
		return r == CUDA_ERROR_INVALID_HANDLE ? CU_REFUSE(CUDA_ERROR_NOT_FOUND) : r;
	}
	if (f->info && pbytes != 0xffffffffu && (nparams != f->info->nparams || pbytes != f->info->param_bytes))
		log_err("kernel %s: the image says %u parameters / %u bytes, the device %u / %u", name,
			f->info->nparams, f->info->param_bytes, nparams, pbytes);
	f->magic = FUNCTION_MAGIC;
	*out = f;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct cu_module *m;
	struct cu_function *f;
	CUresult r = cu_need(cu_ready(), hfunc && name);

	if (!r)
		r = module_of(hmod, &m);
	if (r)
		return r;
	r = cu_function_get(m, name, &f);
	if (!r)
		*hfunc = (CUfunction)f;
	return r;
}

/* ---- the functions of a module: every kernel its image holds ---- */

static pthread_mutex_t module_fns_lock = PTHREAD_MUTEX_INITIALIZER;

/* m->fns made once: one function per kernel of the image's index (sorted
 * by name), so that every enumeration hands out the same handles, as the
 * driver does. A kernel the device does not find is left out: the index
 * covers every entry of a fat binary, the device loaded one of them (a
 * kernel built for another architecture only is not in the module). */
static CUresult module_functions(struct cu_module *m)
{
	struct cu_function **fns;
	size_t n, k = 0;
	CUresult r = CUDA_SUCCESS;

	if (m->gone)
		return CU_REFUSE(CUDA_ERROR_CONTEXT_IS_DESTROYED);
	if (!m->index) {
		log_err("the kernels of a module whose image mearas could not read cannot be enumerated: returning "
			"CUDA_ERROR_NOT_SUPPORTED");
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	pthread_mutex_lock(&module_fns_lock);
	if (m->fns)
		goto out;
	n = mearas_fatbin_kernel_count(m->index);
	if (n > UINT32_MAX || !(fns = calloc(n ? n : 1, sizeof(*fns)))) {
		r = CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
		goto out;
	}
	for (size_t i = 0; i < n && !r; i++) {
		const char *name = mearas_fatbin_kernel_at(m->index, i)->name;

		r = cu_function_get(m, name, &fns[k]);
		if (r == CUDA_ERROR_NOT_FOUND) {
			log_debug("module enumeration: kernel %s of the image is not in the loaded module", name);
			r = CUDA_SUCCESS;
		} else if (!r) {
			k++;
		}
	}
	if (r) {
		for (size_t i = 0; i < k; i++)
			function_free(fns[i]);
		free(fns);
		goto out;
	}
	m->nfns = (unsigned)k;
	m->fns = fns;
out:
	pthread_mutex_unlock(&module_fns_lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule hmod)
{
	struct cu_module *m;
	CUresult r = cu_need(cu_ready(), count);

	if (!r)
		r = module_of(hmod, &m);
	if (!r)
		r = module_functions(m);
	if (!r)
		*count = m->nfns;
	return r;
}

/* at most numFunctions handles, in the order of the image's index */
CU_EXPORT CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
						      CUmodule hmod)
{
	struct cu_module *m;
	CUresult r = cu_need(cu_ready(), functions || !numFunctions);

	if (!r)
		r = module_of(hmod, &m);
	if (!r)
		r = module_functions(m);
	for (unsigned i = 0; !r && i < numFunctions && i < m->nfns; i++)
		functions[i] = (CUfunction)m->fns[i];
	return r;
}

static CUresult global_get(struct cu_module *m, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
	uint64_t ptr, size, hint = 0;
	uint32_t n = name_len(name);
	CUresult r;

	if (m->gone)
		return CU_REFUSE(CUDA_ERROR_CONTEXT_IS_DESTROYED);
	if (!n)
		return CU_REFUSE(CUDA_ERROR_NOT_FOUND);
	/* the image's size of it: a GPU knows better, the sim device needs it */
	if (m->index)
		mearas_fatbin_find_global(m->index, name, &hint);
	r = cu_result(rt_do_GLOBAL_GET(m->vgpu, m->id, hint, name, n, &ptr, &size));
	if (r)
		return r == CUDA_ERROR_INVALID_VALUE ? CU_REFUSE(CUDA_ERROR_NOT_FOUND) : r;
	dm_add(m->vgpu, ptr, size, 1);
	if (dptr)
		*dptr = ptr;
	if (bytes)
		*bytes = size;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
	struct cu_module *m;
	CUresult r = cu_need(cu_ready(), name);

	if (!r)
		r = module_of(hmod, &m);
	return r ? r : global_get(m, name, dptr, bytes);
}

/* ---- libraries: context-independent, a module per vGPU on demand ---- */

/* the live library behind h (else CUDA_ERROR_INVALID_HANDLE) */
static CUresult library_of(CUlibrary h, struct cu_library **out)
{
	struct cu_library *l = (struct cu_library *)h;

	*out = l && l->magic == LIBRARY_MAGIC ? l : NULL;
	return *out ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
}

static struct cu_kernel *kernel_get(CUkernel h)
{
	struct cu_kernel *k = (struct cu_kernel *)h;

	return k && k->magic == KERNEL_MAGIC ? k : NULL;
}

/* what cuFuncGetName, cuFuncGetModule, cuFuncIsLoaded (of a CUfunction) and
 * cuKernelGetName, cuKernelGetLibrary (of a CUkernel) answer */
enum func_attr { FUNC_NAME, FUNC_MODULE, FUNC_LOADED, KERNEL_NAME, KERNEL_LIBRARY };

static CUresult func_attr(void *h, enum func_attr what, void *out)
{
	struct cu_function *f = NULL;
	struct cu_kernel *k = NULL;
	CUresult r = cu_need(cu_ready(), out);

	if (r)
		return r;
	if (what == KERNEL_NAME || what == KERNEL_LIBRARY) {
		k = kernel_get(h);
		if (!k)
			return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	} else {
		r = cu_function_of(h, &f);
		if (r)
			return r;
	}
	switch (what) {
	case FUNC_NAME:
		*(const char **)out = f->name;
		break;
	case FUNC_MODULE:
		*(CUmodule *)out = (CUmodule)f->m;
		break;
	case FUNC_LOADED:
		*(CUfunctionLoadingState *)out = CU_FUNCTION_LOADING_STATE_LOADED;
		break;
	case KERNEL_NAME:
		*(const char **)out = k->name;
		break;
	case KERNEL_LIBRARY:
		*(CUlibrary *)out = (CUlibrary)k->lib;
		break;
	}
	return CUDA_SUCCESS;
}

static CUresult library_module(struct cu_library *l, int vgpu, struct cu_module **out)
{
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&l->lock);
	if (!l->mod[vgpu])
		r = module_load(vgpu, l->image, l->size, l, &l->mod[vgpu]);
	*out = l->mod[vgpu];
	pthread_mutex_unlock(&l->lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
					     void **jitOptionsValues, unsigned int numJitOptions,
					     CUlibraryOption *libraryOptions, void **libraryOptionValues,
					     unsigned int numLibraryOptions)
{
	struct cu_library *l;
	const void *start;
	size_t size;
	CUresult r = cu_ready();

	(void)jitOptions, (void)jitOptionsValues, (void)libraryOptions, (void)libraryOptionValues;
	(void)numLibraryOptions;
	if (r)
		return r;
	if (!library || (numJitOptions && !jitOptions))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = image_of(code, &start, &size);
	if (r)
		return r;
	l = calloc(1, sizeof(*l));
	if (!l || !(l->image = malloc(size))) {
		free(l);
		return CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	}
	memcpy(l->image, start, size);
	l->size = size;
	pthread_mutex_init(&l->lock, NULL);
	l->magic = LIBRARY_MAGIC;
	pthread_mutex_lock(&libraries_lock);
	l->next = libraries;
	libraries = l;
	pthread_mutex_unlock(&libraries_lock);
	*library = (CUlibrary)l;
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
						 void **jitOptionsValues, unsigned int numJitOptions,
						 CUlibraryOption *libraryOptions, void **libraryOptionValues,
						 unsigned int numLibraryOptions)
{
	void *data;
	CUresult r = cu_read_file(fileName, &data, NULL);

	if (r)
		return r;
	r = cuLibraryLoadData(library, data, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
			      libraryOptionValues, numLibraryOptions);
	free(data);
	return r;
}

static void function_free(struct cu_function *f)
{
	if (!f)
		return;
	if (f->m)
		rt_func_gone(f->m->vgpu, f->id);
	f->magic = 0;
	free(f->name);
	free(f);
}

CU_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
	struct cu_library *l, **pp;
	CUresult r = cu_ready();

	if (!r)
		r = library_of(library, &l);
	if (r)
		return r;
	pthread_mutex_lock(&libraries_lock);
	for (pp = &libraries; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	pthread_mutex_unlock(&libraries_lock);
	l->magic = 0;
	while (l->kernels) {
		struct cu_kernel *k = l->kernels;

		l->kernels = k->next;
		for (unsigned v = 0; v < MEARAS_MAX_VGPUS; v++)
			function_free(k->fn[v]);
		k->magic = 0;
		free(k->name);
		free(k);
	}
	for (unsigned v = 0; v < MEARAS_MAX_VGPUS; v++)
		if (l->mod[v])
			module_free(l->mod[v]);
	pthread_mutex_destroy(&l->lock);
	free(l->image);
	free(l);
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	struct cu_library *l;
	struct cu_kernel *k;
	struct mearas_fatbin_index *idx;
	char err[256];
	CUresult r = cu_need(cu_ready(), pKernel && name);

	if (!r)
		r = library_of(library, &l);
	if (r)
		return r;
	pthread_mutex_lock(&l->lock);
	for (k = l->kernels; k; k = k->next)
		if (!strcmp(k->name, name))
			break;
	if (!k) {
		/* the name must be in the image, as the driver checks */
		idx = mearas_fatbin_index_new(l->image, l->size, err, sizeof(err));
		if (idx && !mearas_fatbin_find_kernel(idx, name))
			r = CU_REFUSE(CUDA_ERROR_NOT_FOUND);
		mearas_fatbin_index_free(idx);
		k = r ? NULL : calloc(1, sizeof(*k));
		if (!r && (!k || !(k->name = strdup(name)))) {
			free(k);
			k = NULL;
			r = CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
		}
		if (k) {
			k->lib = l;
			k->magic = KERNEL_MAGIC;
			k->next = l->kernels;
			l->kernels = k;
		}
	}
	pthread_mutex_unlock(&l->lock);
	if (!r)
		*pKernel = (CUkernel)k;
	return r;
}

/* the library's module on the current context's vGPU, loaded there first */
static CUresult library_here(CUlibrary library, const void *arg, struct cu_module **m)
{
	struct cu_ctx *c;
	struct cu_library *l;
	CUresult r = cu_need(cu_current_ctx(&c), arg);

	if (!r)
		r = library_of(library, &l);
	return r ? r : library_module(l, c->vgpu, m);
}

CU_EXPORT CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	struct cu_module *m;
	CUresult r = library_here(library, pMod, &m);

	if (!r)
		*pMod = (CUmodule)m;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	struct cu_module *m;
	CUresult r = library_here(library, name, &m);

	return r ? r : global_get(m, name, dptr, bytes);
}

/* A __managed__ variable's address, the one the host reaches it at too.
 * It needs no current context (NVIDIA's static runtime asks before making
 * one): a managed variable is one for the process, here the one of the
 * current context's vGPU, else the first vGPU's. */
CU_EXPORT CUresult CUDAAPI cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	struct cu_library *l;
	struct cu_module *m;
	struct cu_ctx *c = NULL;
	CUresult r = cu_need(cu_ready(), name);
	const char *managed;

	if (!r)
		r = library_of(library, &l);
	if (!r) {
		c = cu_current();
		r = library_module(l, c ? c->vgpu : 0, &m);
	}
	if (r)
		return r;
	for (size_t i = 0; (managed = mearas_fatbin_managed_at(m->index, i, NULL)); i++)
		if (!strcmp(managed, name))
			return global_get(m, name, dptr, bytes);
	return CU_REFUSE(CUDA_ERROR_NOT_FOUND);
}

/* the kernel's function on vgpu, loading the library's module there first */
static CUresult kernel_function(struct cu_kernel *k, int vgpu, struct cu_function **out)
{
	struct cu_module *m;
	CUresult r = CUDA_SUCCESS;
	struct cu_function *f = __atomic_load_n(&k->fn[vgpu], __ATOMIC_ACQUIRE);

	if (f) {
		*out = f;
		return CUDA_SUCCESS;
	}
	r = library_module(k->lib, vgpu, &m);
	if (r)
		return r;
	pthread_mutex_lock(&k->lib->lock);
	if (!k->fn[vgpu])
		r = cu_function_get(m, k->name, &f);
	if (!r && !k->fn[vgpu])
		__atomic_store_n(&k->fn[vgpu], f, __ATOMIC_RELEASE);
	*out = k->fn[vgpu];
	pthread_mutex_unlock(&k->lib->lock);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct cu_ctx *c;
	struct cu_kernel *k;
	struct cu_function *f;
	CUresult r = cu_need(cu_current_ctx(&c), pFunc);

	if (r)
		return r;
	k = kernel_get(kernel);
	if (!k)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	r = kernel_function(k, c->vgpu, &f);
	if (!r)
		*pFunc = (CUfunction)f;
	return r;
}

CU_EXPORT CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
	return func_attr(hfunc, KERNEL_NAME, name);
}

CU_EXPORT CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	return func_attr(kernel, KERNEL_LIBRARY, pLib);
}

/* ---- functions ---- */

CUresult cu_function_of(CUfunction h, struct cu_function **out)
{
	struct cu_function *f = (struct cu_function *)h;
	struct cu_kernel *k;
	struct cu_ctx *c;
	CUresult r;

	if (f && f->magic == FUNCTION_MAGIC) {
		*out = f;
		return f->m->gone ? CU_REFUSE(CUDA_ERROR_CONTEXT_IS_DESTROYED) : CUDA_SUCCESS;
	}
	/* a CUkernel stands for its function in the current context */
	k = kernel_get((CUkernel)h);
	if (!k)
		return CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
	r = cu_current_ctx(&c);
	return r ? r : kernel_function(k, c->vgpu, out);
}

/* cu_ready, then cu_function_of */
static CUresult ready_function(CUfunction h, struct cu_function **out)
{
	CUresult r = cu_ready();

	return r ? r : cu_function_of(h, out);
}

static CUresult function_attribute(int *pi, CUfunction_attribute attrib, struct cu_function *f)
{
	const struct mearas_devinfo *info = rt.v[f->m->vgpu].info;
	uint64_t p[2], p0, p1;
	int shared;
	CUresult r;

	/* what the program set reads back as set, with no question to the back end */
	if (rt_func_set_value(f->m->vgpu, f->id, (int)attrib, pi))
		return CUDA_SUCCESS;
	r = cu_result(rt_func_attrs(f->m->vgpu, f->id, p));
	if (r)
		return r;
	p0 = p[0];
	p1 = p[1];
	shared = (int)(p1 & 0xffffff);
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = (int)((p0 >> 16) & 0xffff); break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = shared; break;
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = (int)((p1 >> 48) & 0xffff); break;
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = (int)((p1 >> 24) & 0xffffff); break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = (int)(p0 & 0xffff); break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = (int)((p0 >> 32) & 0xffff); break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = (int)((p0 >> 48) & 0xffff); break;
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*pi = info->attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK] - shared;
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		*pi = 0;        /* no cluster launches through mearas */
		break;
	default:
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	}
	return CUDA_SUCCESS;
}

CU_EXPORT CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	struct cu_function *f;
	CUresult r = cu_need(cu_ready(), pi);

	if (r)
		return r;
	r = cu_function_of(hfunc, &f);
	return r ? r : function_attribute(pi, attrib, f);
}

static CUresult set_attribute(struct cu_function *f, CUfunction_attribute attrib, int value)
{
	const int32_t *a = rt.v[f->m->vgpu].info->attrs;
	CUresult r;

	if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
	    (value < 0 || value > a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN]))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && (value < -1 || value > 100))
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	/* occupancy depends on the attributes set (dynamic shared memory,
	 * carveout): forgotten before and after, for a thread asking meanwhile */
	rt_func_forget(f->m->vgpu, f->id);
	/* the runtime's attribute numbers are the driver's */
	r = cu_result(rt_do_FUNC_SET_ATTR(f->m->vgpu, f->id, (int)attrib, value));
	rt_func_forget(f->m->vgpu, f->id);
	if (!r)
		r = cu_result(rt_func_note_set(f->m->vgpu, f->id, (int)attrib, value));
	return r;
}

CU_EXPORT CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	struct cu_function *f;
	CUresult r = ready_function(hfunc, &f);

	return r ? r : set_attribute(f, attrib, value);
}

/* the cache preference may change occupancy too: its answers are forgotten */
static CUresult set_cache_config(struct cu_function *f, int vgpu, CUfunc_cache config)
{
	CUresult r;

	rt_func_forget(vgpu, f->id);
	/* attribute -1 carries the cache preference to the back end */
	r = cu_result(rt_do_FUNC_SET_ATTR(vgpu, f->id, -1, (int)config));
	rt_func_forget(vgpu, f->id);
	return r;
}

CU_EXPORT CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	struct cu_function *f;
	CUresult r = ready_function(hfunc, &f);

	return r ? r : set_cache_config(f, f->m->vgpu, config);
}

/* bank sizes are fixed on every GPU CUDA 13 runs on (cuCtxSetSharedMemConfig) */
CU_EXPORT CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config)
{
	struct cu_function *f;
	CUresult r = ready_function(hfunc, &f);

	if (r)
		return r;
	return (unsigned)config <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_SUCCESS
									     : CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
}

CU_EXPORT CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
	return func_attr(hfunc, FUNC_NAME, name);
}

CU_EXPORT CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
					      size_t *paramSize)
{
	struct cu_function *f;
	CUresult r = ready_function(func, &f);

	if (r)
		return r;
	if (!f->info)
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	if (paramIndex >= f->info->nparams)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (paramOffset)
		*paramOffset = f->info->params[paramIndex].offset;
	if (paramSize)
		*paramSize = f->info->params[paramIndex].size;
	return CUDA_SUCCESS;
}

/* the kernel's function on the current context's device */
CU_EXPORT CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
						size_t *paramSize)
{
	CUfunction fn;
	CUresult r = cuKernelGetFunction(&fn, kernel);

	return r ? r : cuFuncGetParamInfo(fn, paramIndex, paramOffset, paramSize);
}

CU_EXPORT CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	return func_attr(hfunc, FUNC_MODULE, hmod);
}

CU_EXPORT CUresult CUDAAPI cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function)
{
	return func_attr(function, FUNC_LOADED, state);
}

CU_EXPORT CUresult CUDAAPI cuFuncLoad(CUfunction function)
{
	struct cu_function *f;

	return ready_function(function, &f);
}

/* the kernel's function on device dev (a context need not be current) */
static CUresult kernel_on_device(CUkernel kernel, CUdevice dev, struct cu_function **f)
{
	struct cu_kernel *k;
	CUresult r = cu_ready();

	if (r)
		return r;
	if (dev < 0 || (unsigned)dev >= rt.nvgpus)
		return CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
	k = kernel_get(kernel);
	return k ? kernel_function(k, dev, f) : CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
}

CU_EXPORT CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
	struct cu_function *f;
	CUresult r = kernel_on_device(kernel, dev, &f);

	if (!r && !pi)
		r = CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return r ? r : function_attribute(pi, attrib, f);
}

CU_EXPORT CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
	struct cu_function *f;
	CUresult r = kernel_on_device(kernel, dev, &f);

	return r ? r : set_attribute(f, attrib, val);
}

CU_EXPORT CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
	struct cu_function *f;
	CUresult r = kernel_on_device(kernel, dev, &f);

	return r ? r : set_cache_config(f, dev, config);
}

/* ---- resets: what was loaded on the vGPU is gone ---- */

void cu_modules_forget_vgpu(int vgpu)
{
	cu_runtime_modules_forget_vgpu(vgpu);
	pthread_mutex_lock(&libraries_lock);
	for (struct cu_library *l = libraries; l; l = l->next) {
		pthread_mutex_lock(&l->lock);
		if (l->mod[vgpu]) {
			l->mod[vgpu]->gone = true;
			/* functions made from it keep pointing at it: leave it */
			l->mod[vgpu] = NULL;
		}
		for (struct cu_kernel *k = l->kernels; k; k = k->next)
			__atomic_store_n(&k->fn[vgpu], NULL, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&l->lock);
	}
	pthread_mutex_unlock(&libraries_lock);
}
