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

static const struct table_id CUDART_INTERFACE = {
	{ 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 },
	"CUDART_INTERFACE" };
static const struct table_id TOOLS_CALLBACK_HOOKS = {
	{ 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 },
	"TOOLS_RUNTIME_CALLBACK_HOOKS" };
static const struct table_id TOOLS_TLS = {
	{ 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc },
	"TOOLS_TLS" };
static const struct table_id CONTEXT_LOCAL_STORAGE = {
	{ 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 },
	"CONTEXT_LOCAL_STORAGE" };
static const struct table_id CONTEXT_CHECKS = {
	{ 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e },
	"CONTEXT_CHECKS" };
static const struct table_id INTEGRITY_CHECK = {
	{ 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 },
	"INTEGRITY_CHECK" };
/* cuBLASLt's and cuBLAS's (93 slots on the real 580 driver): of them they
 * were measured calling slot 4, the context's id, and on a stream of the
 * program's, slots 51 and 39: the stream's object and its id */
static const struct table_id CONTEXT_IDENTITY = {
	{ 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2 },
	"21318c60 (context identity)" };
/* asked for first, before cuInit; the real driver answers with 3 slots and
 * the runtime calls none of them */
static const struct table_id STARTUP = {
	{ 0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9 },
	"f8cff951 (startup)" };

/* ---- slots mearas does not serve: each knows its table and number ---- */

static CUresult unserved(const struct table_id *t, unsigned slot)
{
	log_err("export table %s slot %u was called: not supported by mearas, returning CUDA_ERROR_NOT_SUPPORTED",
		t->name, slot);
	return CU_REFUSE(CUDA_ERROR_NOT_SUPPORTED);
}

#define UNSERVED(tag, table, n) \
	static CUresult tag##_##n(void) { return unserved(&table, n); }
UNSERVED(rtif, CUDART_INTERFACE, 3)
UNSERVED(rtif, CUDART_INTERFACE, 4)
UNSERVED(rtif, CUDART_INTERFACE, 5)
UNSERVED(rtif, CUDART_INTERFACE, 9)
UNSERVED(rtif, CUDART_INTERFACE, 10)
UNSERVED(rtif, CUDART_INTERFACE, 11)
UNSERVED(hooks, TOOLS_CALLBACK_HOOKS, 3)
UNSERVED(hooks, TOOLS_CALLBACK_HOOKS, 5)
UNSERVED(tls, TOOLS_TLS, 1)
UNSERVED(checks, CONTEXT_CHECKS, 1)
UNSERVED(checks, CONTEXT_CHECKS, 4)
UNSERVED(checks, CONTEXT_CHECKS, 5)
UNSERVED(checks, CONTEXT_CHECKS, 6)
UNSERVED(checks, CONTEXT_CHECKS, 7)
UNSERVED(checks, CONTEXT_CHECKS, 8)
UNSERVED(checks, CONTEXT_CHECKS, 9)
UNSERVED(checks, CONTEXT_CHECKS, 10)
UNSERVED(checks, CONTEXT_CHECKS, 11)
UNSERVED(checks, CONTEXT_CHECKS, 12)
UNSERVED(checks, CONTEXT_CHECKS, 13)
UNSERVED(checks, CONTEXT_CHECKS, 14)
UNSERVED(integrity, INTEGRITY_CHECK, 2)
UNSERVED(ident, CONTEXT_IDENTITY, 1)
UNSERVED(ident, CONTEXT_IDENTITY, 2)
UNSERVED(ident, CONTEXT_IDENTITY, 3)
UNSERVED(ident, CONTEXT_IDENTITY, 5)
UNSERVED(ident, CONTEXT_IDENTITY, 6)
UNSERVED(ident, CONTEXT_IDENTITY, 7)
UNSERVED(ident, CONTEXT_IDENTITY, 8)
UNSERVED(ident, CONTEXT_IDENTITY, 9)
UNSERVED(ident, CONTEXT_IDENTITY, 10)
UNSERVED(ident, CONTEXT_IDENTITY, 11)
UNSERVED(ident, CONTEXT_IDENTITY, 12)
UNSERVED(ident, CONTEXT_IDENTITY, 13)
UNSERVED(ident, CONTEXT_IDENTITY, 14)
UNSERVED(ident, CONTEXT_IDENTITY, 15)
UNSERVED(ident, CONTEXT_IDENTITY, 16)
UNSERVED(ident, CONTEXT_IDENTITY, 17)
UNSERVED(ident, CONTEXT_IDENTITY, 18)
UNSERVED(ident, CONTEXT_IDENTITY, 19)
UNSERVED(ident, CONTEXT_IDENTITY, 20)
UNSERVED(ident, CONTEXT_IDENTITY, 21)
UNSERVED(ident, CONTEXT_IDENTITY, 22)
UNSERVED(ident, CONTEXT_IDENTITY, 23)
UNSERVED(ident, CONTEXT_IDENTITY, 24)
UNSERVED(ident, CONTEXT_IDENTITY, 25)
UNSERVED(ident, CONTEXT_IDENTITY, 26)
UNSERVED(ident, CONTEXT_IDENTITY, 27)
UNSERVED(ident, CONTEXT_IDENTITY, 28)
UNSERVED(ident, CONTEXT_IDENTITY, 29)
UNSERVED(ident, CONTEXT_IDENTITY, 30)
UNSERVED(ident, CONTEXT_IDENTITY, 31)
UNSERVED(ident, CONTEXT_IDENTITY, 32)
UNSERVED(ident, CONTEXT_IDENTITY, 33)
UNSERVED(ident, CONTEXT_IDENTITY, 34)
UNSERVED(ident, CONTEXT_IDENTITY, 35)
UNSERVED(ident, CONTEXT_IDENTITY, 36)
UNSERVED(ident, CONTEXT_IDENTITY, 37)
UNSERVED(ident, CONTEXT_IDENTITY, 38)
UNSERVED(ident, CONTEXT_IDENTITY, 40)
UNSERVED(ident, CONTEXT_IDENTITY, 41)
UNSERVED(ident, CONTEXT_IDENTITY, 42)
UNSERVED(ident, CONTEXT_IDENTITY, 43)
UNSERVED(ident, CONTEXT_IDENTITY, 44)
UNSERVED(ident, CONTEXT_IDENTITY, 45)
UNSERVED(ident, CONTEXT_IDENTITY, 46)
UNSERVED(ident, CONTEXT_IDENTITY, 47)
UNSERVED(ident, CONTEXT_IDENTITY, 48)
UNSERVED(ident, CONTEXT_IDENTITY, 49)
UNSERVED(ident, CONTEXT_IDENTITY, 50)
UNSERVED(ident, CONTEXT_IDENTITY, 52)
UNSERVED(ident, CONTEXT_IDENTITY, 53)
UNSERVED(ident, CONTEXT_IDENTITY, 54)
UNSERVED(ident, CONTEXT_IDENTITY, 55)
UNSERVED(ident, CONTEXT_IDENTITY, 56)
UNSERVED(ident, CONTEXT_IDENTITY, 57)
UNSERVED(ident, CONTEXT_IDENTITY, 58)
UNSERVED(ident, CONTEXT_IDENTITY, 59)
UNSERVED(ident, CONTEXT_IDENTITY, 60)
UNSERVED(ident, CONTEXT_IDENTITY, 61)
UNSERVED(ident, CONTEXT_IDENTITY, 62)
UNSERVED(ident, CONTEXT_IDENTITY, 63)
UNSERVED(ident, CONTEXT_IDENTITY, 64)
UNSERVED(ident, CONTEXT_IDENTITY, 65)
UNSERVED(ident, CONTEXT_IDENTITY, 66)
UNSERVED(ident, CONTEXT_IDENTITY, 67)
UNSERVED(ident, CONTEXT_IDENTITY, 68)
UNSERVED(ident, CONTEXT_IDENTITY, 69)
UNSERVED(ident, CONTEXT_IDENTITY, 70)
UNSERVED(ident, CONTEXT_IDENTITY, 71)
UNSERVED(ident, CONTEXT_IDENTITY, 72)
UNSERVED(ident, CONTEXT_IDENTITY, 73)
UNSERVED(ident, CONTEXT_IDENTITY, 74)
UNSERVED(ident, CONTEXT_IDENTITY, 75)
UNSERVED(ident, CONTEXT_IDENTITY, 76)
UNSERVED(ident, CONTEXT_IDENTITY, 77)
UNSERVED(ident, CONTEXT_IDENTITY, 78)
UNSERVED(ident, CONTEXT_IDENTITY, 79)
UNSERVED(ident, CONTEXT_IDENTITY, 80)
UNSERVED(ident, CONTEXT_IDENTITY, 81)
UNSERVED(ident, CONTEXT_IDENTITY, 82)
UNSERVED(ident, CONTEXT_IDENTITY, 83)
UNSERVED(ident, CONTEXT_IDENTITY, 84)
UNSERVED(ident, CONTEXT_IDENTITY, 85)
UNSERVED(ident, CONTEXT_IDENTITY, 86)
UNSERVED(ident, CONTEXT_IDENTITY, 87)
UNSERVED(ident, CONTEXT_IDENTITY, 88)
UNSERVED(ident, CONTEXT_IDENTITY, 89)
UNSERVED(ident, CONTEXT_IDENTITY, 90)
UNSERVED(ident, CONTEXT_IDENTITY, 91)
UNSERVED(ident, CONTEXT_IDENTITY, 92)
UNSERVED(startup, STARTUP, 2)

#define SLOT(f) ((slot_fn)(void (*)(void))(f))
#define SIZE_SLOT(n) ((slot_fn)(uintptr_t)((n) * sizeof(void *)))

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

static slot_fn cudart_interface[13] = {
	SIZE_SLOT(13), SLOT(rtif_module_from_wrapper), SLOT(rtif_primary_context), SLOT(rtif_3), SLOT(rtif_4),
	SLOT(rtif_5), SLOT(rtif_module_from_wrapper_ex), SLOT(rtif_module_gone), SLOT(rtif_module_from_fatbin),
	SLOT(rtif_9), SLOT(rtif_10), SLOT(rtif_11), SLOT(rtif_load_compilers),
};

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

static slot_fn tools_callback_hooks[7] = {
	SIZE_SLOT(7), SLOT(hooks_event), SLOT(hooks_state), SLOT(hooks_3), SLOT(hooks_api_call), SLOT(hooks_5),
	SLOT(hooks_state2),
};

/* ---- TOOLS_TLS ---- */

/* slot 2: the calling thread's current context */
static CUresult tls_current_context(CUcontext *out)
{
	if (out)
		*out = (CUcontext)cu_current();
	return CUDA_SUCCESS;
}

static slot_fn tools_tls[3] = { SIZE_SLOT(3), SLOT(tls_1), SLOT(tls_current_context) };

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
	CUresult r = cls_ctx(ctx, &c);

	if (r)
		return r;
	if (!value)
		return CU_REFUSE(CUDA_ERROR_INVALID_VALUE);
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

/* no size slot: three functions, then NULL */
static slot_fn context_local_storage[4] = { SLOT(cls_put), SLOT(cls_delete), SLOT(cls_get), NULL };

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

static slot_fn context_checks[15] = {
	SIZE_SLOT(15), SLOT(checks_1), SLOT(checks_unwrap), SLOT(checks_flags), SLOT(checks_4), SLOT(checks_5),
	SLOT(checks_6), SLOT(checks_7), SLOT(checks_8), SLOT(checks_9), SLOT(checks_10), SLOT(checks_11),
	SLOT(checks_12), SLOT(checks_13), SLOT(checks_14),
};

/* ---- INTEGRITY_CHECK ---- */

static slot_fn integrity_check[3];

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
		.cudart_table = (uint64_t)(uintptr_t)cudart_interface,
		.integrity_table = (uint64_t)(uintptr_t)integrity_check,
		.slot_fn = (uint64_t)(uintptr_t)integrity_check[1],
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

static slot_fn integrity_check[3] = { SIZE_SLOT(3), SLOT(integrity_answer), SLOT(integrity_2) };

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

static slot_fn context_identity[93] = {
	SIZE_SLOT(93), SLOT(ident_1), SLOT(ident_2), SLOT(ident_3), SLOT(ident_context_id), SLOT(ident_5),
	SLOT(ident_6), SLOT(ident_7), SLOT(ident_8), SLOT(ident_9), SLOT(ident_10), SLOT(ident_11), SLOT(ident_12),
	SLOT(ident_13), SLOT(ident_14), SLOT(ident_15), SLOT(ident_16), SLOT(ident_17), SLOT(ident_18),
	SLOT(ident_19), SLOT(ident_20), SLOT(ident_21), SLOT(ident_22), SLOT(ident_23), SLOT(ident_24),
	SLOT(ident_25), SLOT(ident_26), SLOT(ident_27), SLOT(ident_28), SLOT(ident_29), SLOT(ident_30),
	SLOT(ident_31), SLOT(ident_32), SLOT(ident_33), SLOT(ident_34), SLOT(ident_35), SLOT(ident_36),
	SLOT(ident_37), SLOT(ident_38), SLOT(ident_stream_id), SLOT(ident_40), SLOT(ident_41), SLOT(ident_42),
	SLOT(ident_43), SLOT(ident_44), SLOT(ident_45), SLOT(ident_46), SLOT(ident_47), SLOT(ident_48),
	SLOT(ident_49), SLOT(ident_50), SLOT(ident_stream_object), SLOT(ident_52), SLOT(ident_53), SLOT(ident_54),
	SLOT(ident_55), SLOT(ident_56), SLOT(ident_57), SLOT(ident_58), SLOT(ident_59), SLOT(ident_60),
	SLOT(ident_61), SLOT(ident_62), SLOT(ident_63), SLOT(ident_64), SLOT(ident_65), SLOT(ident_66),
	SLOT(ident_67), SLOT(ident_68), SLOT(ident_69), SLOT(ident_70), SLOT(ident_71), SLOT(ident_72),
	SLOT(ident_73), SLOT(ident_74), SLOT(ident_75), SLOT(ident_76), SLOT(ident_77), SLOT(ident_78),
	SLOT(ident_79), SLOT(ident_80), SLOT(ident_81), SLOT(ident_82), SLOT(ident_83), SLOT(ident_84),
	SLOT(ident_85), SLOT(ident_86), SLOT(ident_87), SLOT(ident_88), SLOT(ident_89), SLOT(ident_90),
	SLOT(ident_91), SLOT(ident_92),
};

static slot_fn startup[3] = { SIZE_SLOT(3), SLOT(startup_report), SLOT(startup_2) };

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

#include "exptables_unserved.gen.h"

/* ---- the lookup ---- */

static const struct {
	const struct table_id *id;
	const slot_fn *table;
} tables[] = {
	{ &CUDART_INTERFACE, cudart_interface },
	{ &TOOLS_CALLBACK_HOOKS, tools_callback_hooks },
	{ &TOOLS_TLS, tools_tls },
	{ &CONTEXT_LOCAL_STORAGE, context_local_storage },
	{ &CONTEXT_CHECKS, context_checks },
	{ &INTEGRITY_CHECK, integrity_check },
	{ &CONTEXT_IDENTITY, context_identity },
	{ &STARTUP, startup },
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
