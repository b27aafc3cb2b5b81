// SPDX-License-Identifier: MIT
/*
 * cuGetExportTable: the driver's private tables that NVIDIA's runtime (and
 * the libraries that embed it) ask for. They are ours, served in the
 * process: their slots are called directly and some hand out memory the
 * caller then reads and writes, so nothing of them crosses to the host.
 * What each slot does was measured on the real driver
 * (experiments/drvapi-probe, docs/driver-api.md). A slot mearas does not
 * serve logs its table and number and fails with CUDA_ERROR_NOT_SUPPORTED.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mearas/log.h"
#include "cu.h"
#include "integrity.h"

typedef void (*slot_fn)(void);

struct table_id {
	uint8_t uuid[16];
	const char *name;
};

/* the other tables' ids are in exptables_unserved.list */
static const struct table_id CONTEXT_LOCAL_STORAGE = {
	{ 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 },
	"CONTEXT_LOCAL_STORAGE" };

/* ---- CUDART_INTERFACE ---- */

/* slot 1: a module from a registered fat binary (wrapper) */
static CUresult rtif_module_from_wrapper(CUmodule *out, const void *wrapper)
{
	return cuModuleLoadData(out, wrapper);
}

/* slot 6: the same, with host-variable tables mearas does not take */
static CUresult rtif_module_from_wrapper_ex(CUmodule *out, const void *wrapper, void *a3, void *a4, size_t n)
{
	if (a3 || a4 || n) {
		log_err("export table CUDART_INTERFACE slot 6 with host variables: not supported by mearas");
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	return cuModuleLoadData(out, wrapper);
}

/* slot 2: the device's primary context, not retained */
static CUresult rtif_primary_context(CUcontext *out, CUdevice dev)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!out)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	if (dev < 0 || (unsigned)dev >= rt.nvgpus)
		return CU_REFUSE(CUDA_ERROR_INVALID_DEVICE);
	*out = (CUcontext)cu_primary(dev);
	return CUDA_SUCCESS;
}

/* slot 7: a module of the runtime's is going away: nothing kept for it */
static void rtif_module_gone(size_t module)
{
	(void)module;
}

/* slot 8: a module from a bare fat binary header */
static CUresult rtif_module_from_fatbin(const void *fatbin, CUmodule *out, void *a3, void *a4, unsigned n)
{
	if (a3 || a4 || n) {
		log_err("export table CUDART_INTERFACE slot 8 with host variables: not supported by mearas");
		return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
	}
	return cuModuleLoadData(out, fatbin);
}

/* slot 12: loads the driver's compilers; the host's driver has its own */
static CUresult rtif_load_compilers(void)
{
	return CUDA_SUCCESS;
}

/* ---- TOOLS_RUNTIME_CALLBACK_HOOKS: the tools' switches, all off ---- */

static uint8_t tools_state[1024];
static uint8_t tools_state2[14];

static void hooks_event(unsigned event, void *data)
{
	(void)event, (void)data;
}

static void *hooks_state(void **buf, size_t *size)
{
	if (buf)
		*buf = tools_state;
	if (size)
		*size = sizeof(tools_state);
	return tools_state;
}

static void hooks_api_call(void *ctx, void *data)
{
	(void)ctx, (void)data;
}

static void *hooks_state2(void **buf, size_t *size)
{
	if (buf)
		*buf = tools_state2;
	if (size)
		*size = sizeof(tools_state2);
	return tools_state2;
}

/* ---- TOOLS_TLS ---- */

/* slot 2: the calling thread's current context */
static CUresult tls_current_context(CUcontext *out)
{
	if (out)
		*out = (CUcontext)cu_current();
	return CUDA_SUCCESS;
}

/* ---- CONTEXT_LOCAL_STORAGE: values the runtime keeps per context ---- */

struct cu_cls {
	void *key, *value;
	void (*dtor)(CUcontext, void *key, void *value);
	struct cu_cls *next;
};

static pthread_mutex_t cls_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult cls_ctx(CUcontext ctx, struct cu_ctx **out)
{
	CUresult r = cu_ready();

	if (r)
		return r;
	*out = ctx ? cu_ctx_get(ctx) : cu_current();
	return *out ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_CONTEXT);
}

static CUresult cls_put(CUcontext ctx, void *key, void *value, void (*dtor)(CUcontext, void *, void *))
{
	struct cu_ctx *c;
	struct cu_cls *e;
	CUresult r = cls_ctx(ctx, &c);

	if (r)
		return r;
	pthread_mutex_lock(&cls_lock);
	for (e = c->cls; e && e->key != key; e = e->next)
		;
	if (!e && (e = calloc(1, sizeof(*e)))) {
		e->key = key;
		e->next = c->cls;
		c->cls = e;
	}
	if (e) {
		e->value = value;
		e->dtor = dtor;
	}
	pthread_mutex_unlock(&cls_lock);
	return e ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
}

static CUresult cls_delete(CUcontext ctx, void *key)
{
	struct cu_ctx *c;
	struct cu_cls **pp, *e = NULL;
	CUresult r = cls_ctx(ctx, &c);

	if (r)
		return r;
	pthread_mutex_lock(&cls_lock);
	for (pp = &c->cls; *pp; pp = &(*pp)->next)
		if ((*pp)->key == key) {
			e = *pp;
			*pp = e->next;
			break;
		}
	pthread_mutex_unlock(&cls_lock);
	free(e);
	return e ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
}

/* measured: no context gives CUDA_ERROR_INVALID_CONTEXT, an unknown key
 * CUDA_ERROR_INVALID_HANDLE */
static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
	struct cu_ctx *c;
	struct cu_cls *e;
	CUresult r = cu_need(cls_ctx(ctx, &c), value);

	if (r)
		return r;
	pthread_mutex_lock(&cls_lock);
	for (e = c->cls; e && e->key != key; e = e->next)
		;
	if (e)
		*value = e->value;
	pthread_mutex_unlock(&cls_lock);
	return e ? CUDA_SUCCESS : CU_REFUSE(CUDA_ERROR_INVALID_HANDLE);
}

void cu_cls_destroy(struct cu_ctx *c)
{
	struct cu_cls *e;

	pthread_mutex_lock(&cls_lock);
	e = c->cls;
	c->cls = NULL;
	pthread_mutex_unlock(&cls_lock);
	while (e) {
		struct cu_cls *next = e->next;

		if (e->dtor)
			e->dtor((CUcontext)c, e->key, e->value);
		free(e);
		e = next;
	}
}

/* ---- CONTEXT_CHECKS ---- */

/* slot 2: is ctx a wrapper of another context (a green context)? never here */
static CUresult checks_unwrap(CUcontext ctx, uint32_t *is_wrapped, CUcontext *unwrapped)
{
	(void)ctx, (void)unwrapped;
	if (is_wrapped)
		*is_wrapped = 0;
	return CUDA_SUCCESS;
}

static uint32_t checks_flags(void)
{
	return 0;
}

/* ---- INTEGRITY_CHECK ---- */

/* generated (exptables_unserved.list) */
static slot_fn table_rtif[13], table_integrity[3];

/* slot 1: computed in the calling thread over what this process sees
 * (integrity.h); before a successful cuInit the driver answers
 * CUDA_ERROR_NOT_INITIALIZED and writes nothing */
static CUresult integrity_answer(uint32_t version, uint64_t unix_seconds, uint64_t *result)
{
	struct cu_integrity_device devs[MEARAS_MAX_VGPUS];
	struct cu_integrity_input in = {
		.driver_version = CU_DRIVER_VERSION,
		.version = version,
		.pid = (uint32_t)getpid(),
		.thread = (uint32_t)(uintptr_t)pthread_self(),
		.cudart_table = (uint64_t)(uintptr_t)table_rtif,
		.integrity_table = (uint64_t)(uintptr_t)table_integrity,
		.slot_fn = (uint64_t)(uintptr_t)table_integrity[1],
		.unix_seconds = unix_seconds,
		.devices = devs,
	};
	CUresult r = cu_ready();

	if (r)
		return r;
	if (!result)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	/* every device as this front end reports it (device.c) */
	for (unsigned i = 0; i < rt.nvgpus; i++) {
		const int32_t *a = rt.v[i].info->attrs;

		memcpy(devs[i].uuid, rt.v[i].info->uuid, 16);
		devs[i].pci_domain = a[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID];
		devs[i].pci_bus = a[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID];
		devs[i].pci_device = a[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID];
	}
	in.ndevices = rt.nvgpus;
	cu_integrity_answer(&in, (uint8_t *)result);
	return CUDA_SUCCESS;
}

/* slot 1: the runtime reports its errors through it (a logging hook, its
 * arguments undocumented): nothing to do, the program sees the error */
static CUresult startup_report(void)
{
	return CUDA_SUCCESS;
}

/* ---- context identity (cuBLASLt) ---- */

/* slot 4: the context's unique id, as cuCtxGetId gives it */
static CUresult ident_context_id(CUcontext ctx, unsigned long long *id)
{
	return cuCtxGetId(ctx, id);
}

/* slot 51 (cuBLAS, on a stream of the caller's): the driver's object of a
 * stream, which slot 39 then asks the id of; measured: (context, stream,
 * out), the pointer written. The stream handle is our object. */
static CUresult ident_stream_object(CUcontext ctx, CUstream s, void **out)
{
	unsigned long long id;
	CUresult r;

	(void)ctx;
	if (!out)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	r = cuStreamGetId(s, &id);     /* a stream it names, or an error */
	if (!r)
		*out = s;
	return r;
}

/* slot 39: the id of what slot 51 gave (cuBLAS keys its per-stream
 * workspace by it); measured: (context, object, out), 13 written for a
 * program's first stream of its own, as cuStreamGetId counts them */
static CUresult ident_stream_id(CUcontext ctx, void *object, unsigned long long *out)
{
	(void)ctx;
	if (!out)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return cuStreamGetId((CUstream)object, out);
}

/* ---- 6e163fbe (cuFFT), served in part (exptables_unserved.list) ---- */

/* slot 7: calls visit(user, function, module) for every function of
 * module and returns how many it visited. Read from cuFFT's call site
 * (libcufft.so.12 of CUDA 13.0): it loads a module of one kernel with
 * cuModuleLoadData, calls slot 7 with the current context, the module, a
 * visit that stores its second argument into *user, and user, and takes
 * a return of 1 as success (anything else is its CUFFT_INTERNAL_ERROR);
 * an earlier GPU run saw the real driver answer 1 there and write a
 * pointer (no log of it was kept). The return as a
 * count (rather than a flag) and the third argument of visit (cuFFT's
 * reads only two) are not measured yet. The functions are those of
 * cuModuleEnumerateFunctions; ctx is not needed to find them. */
typedef void (*module_visit_fn)(void *user, CUfunction f, CUmodule mod);

static unsigned fn_module_functions(CUcontext ctx, CUmodule mod, module_visit_fn visit, void *user)
{
	CUfunction *fns;
	unsigned n;
	CUresult r;
	const char *name = NULL;

	(void)ctx;
	r = cuModuleGetFunctionCount(&n, mod);
	fns = r ? NULL : calloc(n ? n : 1, sizeof(*fns));
	if (!r && !fns)
		r = CU_REFUSE(CUDA_ERROR_OUT_OF_MEMORY);
	if (!r)
		r = cuModuleEnumerateFunctions(fns, n, mod);
	if (r) {
		cuGetErrorName(r, &name);
		log_err("export table 6e163fbe slot 7 (the functions of module %p): %s, none visited", (void *)mod,
			name ? name : "unknown error");
		free(fns);
		return 0;
	}
	for (unsigned i = 0; visit && i < n; i++)
		visit(user, fns[i], mod);
	free(fns);
	return n;
}

/* ---- the tables ---- */

/* a slot mearas does not serve: it knows its table and number */

static CUresult unserved(const struct table_id *t, unsigned slot)
{
	log_err("export table %s slot %u was called: not supported by mearas, returning CUDA_ERROR_NOT_SUPPORTED",
		t->name, slot);
	return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
}

#define UNSERVED(tag, table, n) \
	static CUresult tag##_##n(void) { return unserved(&table, n); }

#define SLOT(f) ((slot_fn)(void (*)(void))(f))
#define SIZE_SLOT(n) ((slot_fn)(uintptr_t)((n) * sizeof(void *)))

/* every table with a size slot, its id, and UNSERVED_TABLES that lists
 * them: written by gen_exptables.py from exptables_unserved.list */
#include "exptables_unserved.gen.h"

/* no size slot: three functions, then NULL */
static slot_fn context_local_storage[4] = { SLOT(cls_put), SLOT(cls_delete), SLOT(cls_get), NULL };

/* ---- the lookup ---- */

static const struct {
	const struct table_id *id;
	const slot_fn *table;
} tables[] = {
	{ &CONTEXT_LOCAL_STORAGE, context_local_storage },
	UNSERVED_TABLES
};

CUresult cu_export_table(const void **table, const CUuuid *id)
{
	static int said[64];
	unsigned h = 0;

	for (unsigned i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (!memcmp(tables[i].id->uuid, id->bytes, 16)) {
			*table = tables[i].table;
			return CUDA_SUCCESS;
		}
	*table = NULL;
	for (unsigned i = 0; i < 16; i++)
		h = h * 31 + (uint8_t)id->bytes[i];
	if (!__atomic_exchange_n(&said[h % 64], 1, __ATOMIC_RELAXED)) {
		const uint8_t *b = (const uint8_t *)id->bytes;

		log_warn("export table %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x is not "
			 "served by mearas: returning CUDA_ERROR_NOT_FOUND",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
			 b[15]);
	}
	return CU_REFUSE(CUDA_ERROR_NOT_FOUND);
}

CU_EXPORT CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	if (!ppExportTable || !pExportTableId)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
	return cu_export_table(ppExportTable, pExportTableId);
}
