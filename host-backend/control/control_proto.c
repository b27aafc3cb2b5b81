// SPDX-License-Identifier: MIT
/*
 * The requests of proto/control.proto: Hello, GetProfile, Instantiate,
 * Release, List, AttachVm, DetachVm (control_vm.c). Every request gets exactly one ControlReply; anything
 * wrong gets an Error with a code and a message for the user.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assembly.h"
#include "attached.h"
#include "control_internal.h"
#include "mearas/dynarray.h"
#include "mearas/log.h"
#include "remote/config.h"

#define CONTROL_MAJOR 1
#define CONTROL_MINOR 0

static const char *node_name;

void control_proto_init(const struct backend_config *cfg, const char *node)
{
	node_name = node;
	profile_init(cfg->dev, node, &cfg->remote);
}

static uint8_t *pack(const Mearas__ControlReply *r, size_t *len)
{
	size_t n = mearas__control_reply__get_packed_size(r);
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		return NULL;
	*len = mearas__control_reply__pack(r, buf);
	return buf;
}

/* Packs the reply whose body is msg, the oneof's member `member` (body case
 * BODY): a macro, as a function cannot name the member. */
#define PACK_REPLY(len, BODY, member, msg)                                   \
	({                                                                   \
		Mearas__ControlReply reply_ = MEARAS__CONTROL_REPLY__INIT;   \
		reply_.body_case = MEARAS__CONTROL_REPLY__BODY_##BODY;       \
		reply_.member = (msg);                                       \
		pack(&reply_, len);                                          \
	})

static uint8_t *error_reply(Mearas__ErrorCode code, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

uint8_t *control_error(Mearas__ErrorCode code, size_t *len, const char *msg)
{
	Mearas__Error e = MEARAS__ERROR__INIT;

	e.code = code;
	e.message = (char *)msg;
	return PACK_REPLY(len, ERROR, error, &e);
}

static uint8_t *error_reply(Mearas__ErrorCode code, size_t *len, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_info("control: refused: %s", msg);
	return control_error(code, len, msg);
}

static uint8_t *do_hello(const Mearas__ControlRequest *q, size_t *len)
{
	const Mearas__HelloRequest *h = q->hello;
	Mearas__HelloReply hr = MEARAS__HELLO_REPLY__INIT;
	Mearas__Version v = MEARAS__VERSION__INIT;
	unsigned major = h->version ? h->version->major : 0, minor = h->version ? h->version->minor : 0;

	if (major != CONTROL_MAJOR)
		return error_reply(MEARAS__ERROR_CODE__ERROR_VERSION_MISMATCH, len,
				   "mearasd speaks control protocol %u.%u, the client %u.%u",
				   CONTROL_MAJOR, CONTROL_MINOR, major, minor);
	log_debug("control: hello from '%s'", h->client);
	v.major = CONTROL_MAJOR;
	v.minor = CONTROL_MINOR;
	hr.version = &v;
	hr.node = (char *)node_name;
	return PACK_REPLY(len, HELLO, hello, &hr);
}

static uint8_t *do_profile(const Mearas__ControlRequest *q, size_t *len)
{
	Mearas__GetProfileReply p;
	char err[320];
	uint8_t *out;

	if (profile_reply(&p, err, sizeof(err))) {
		profile_reply_free(&p);
		return error_reply(MEARAS__ERROR_CODE__ERROR_NO_RESOURCES, len, "%s", err);
	}
	out = PACK_REPLY(len, PROFILE, profile, &p);
	profile_reply_free(&p);
	return out;
}

static bool valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > ASSEMBLY_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (id[i] <= ' ' || id[i] > '~')
			return false;
	return true;
}

/* The manager's label of a booking: kept for the assembly's life and put in
 * every ListAssemblies reply and log line, so bounded text without control
 * characters (no forged log lines) */
static bool valid_owner(const char *owner)
{
	size_t n = strlen(owner);

	if (n > ASSEMBLY_OWNER_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)owner[i] < ' ' || owner[i] == 0x7f)
			return false;
	return true;
}

/* The Identity message -> tenant_id; -1 when absent or unusable. */
static int identity_of(const Mearas__Identity *m, struct tenant_id *id)
{
	memset(id, 0, sizeof(*id));
	if (!m)
		return -1;
	switch (m->who_case) {
	case MEARAS__IDENTITY__WHO_UID:
		id->kind = TENANT_UID;
		id->uid = m->uid;
		return 0;
	case MEARAS__IDENTITY__WHO_VM:
		if (!m->vm[0] || strlen(m->vm) >= sizeof(id->vm))
			return -1;
		id->kind = TENANT_VM;
		snprintf(id->vm, sizeof(id->vm), "%s", m->vm);
		return 0;
	default:
		return -1;
	}
}

static uint8_t *do_instantiate(const Mearas__ControlRequest *req, size_t *len)
{
	const Mearas__InstantiateAssemblyRequest *q = req->instantiate;
	Mearas__InstantiateAssemblyReply ir = MEARAS__INSTANTIATE_ASSEMBLY_REPLY__INIT;
	static struct assembly a;
	const struct probe_result *gpus;
	char who[96];
	bool seen[MEARAS_MAX_VGPUS] = { 0 };

	if (!valid_id(q->assembly_id))
		return error_reply(MEARAS__ERROR_CODE__ERROR_BAD_REQUEST, len,
				   "assembly id must be 1..%d printable characters without spaces",
				   ASSEMBLY_ID_MAX);
	if (!valid_owner(q->owner))
		return error_reply(MEARAS__ERROR_CODE__ERROR_BAD_REQUEST, len,
				   "assembly %s: owner must be at most %d characters, none a control character "
				   "(got %zu bytes)", q->assembly_id, ASSEMBLY_OWNER_MAX, strlen(q->owner));
	if (q->n_vgpus == 0)
		return error_reply(MEARAS__ERROR_CODE__ERROR_BAD_REQUEST, len, "assembly %s has no vGPUs",
				   q->assembly_id);
	if (q->n_vgpus > MEARAS_MAX_VGPUS)
		return error_reply(MEARAS__ERROR_CODE__ERROR_NO_RESOURCES, len,
				   "assembly %s has %zu vGPUs; a client can use at most %u",
				   q->assembly_id, q->n_vgpus, MEARAS_MAX_VGPUS);
	gpus = profile_gpus(60000);
	if (gpus->status)
		return error_reply(MEARAS__ERROR_CODE__ERROR_NO_RESOURCES, len,
				   "cannot read this node's GPUs: %s", gpus->error);
	memset(&a, 0, sizeof(a));
	if (identity_of(q->identity, &a.who))
		return error_reply(MEARAS__ERROR_CODE__ERROR_BAD_REQUEST, len,
				   "assembly %s: the booking names no identity to bind it to (a uid, or a VM "
				   "name of 1..%d characters): update the assembly manager",
				   q->assembly_id, TENANT_VM_NAME_MAX - 1);
	snprintf(a.id, sizeof(a.id), "%s", q->assembly_id);
	a.owner = q->owner;
	a.nvgpus = (unsigned)q->n_vgpus;
	for (size_t i = 0; i < q->n_vgpus; i++) {
		const Mearas__VgpuSpec *v = q->vgpus[i];
		unsigned o = v->ordinal;

		if (o >= q->n_vgpus || seen[o])
			return error_reply(MEARAS__ERROR_CODE__ERROR_BAD_REQUEST, len,
					   "assembly %s: vGPU ordinals must be 0..%zu, each once (got %u)",
					   q->assembly_id, q->n_vgpus - 1, o);
		seen[o] = true;
		if (v->remote_address[0]) {
			/* a GPU of another node: forwarded over remote-link (quota not
			 * enforced there yet: the serving node's session gets the GPU) */
			struct remote_config probe;
			char spec[160];

			memset(&probe, 0, sizeof(probe));
			snprintf(spec, sizeof(spec), "%u=%s/%u", o, v->remote_address, v->gpu_index);
			if (strlen(v->remote_address) >= sizeof(a.vgpus[o].remote) ||
			    remote_parse_target(&probe, spec))
				return error_reply(MEARAS__ERROR_CODE__ERROR_BAD_REQUEST, len,
						   "assembly %s: vGPU %u: remote address '%s' is not HOST:PORT",
						   q->assembly_id, o, v->remote_address);
			a.vgpus[o].gpu_index = v->gpu_index;
			a.vgpus[o].quota = v->memory_quota_bytes;
			snprintf(a.vgpus[o].node, sizeof(a.vgpus[o].node), "%s", v->node);
			snprintf(a.vgpus[o].remote, sizeof(a.vgpus[o].remote), "%s", v->remote_address);
			continue;
		}
		if (v->node[0] && strcmp(v->node, node_name))
			return error_reply(MEARAS__ERROR_CODE__ERROR_BAD_REQUEST, len,
					   "assembly %s: vGPU %u is on node '%s' without a remote address, "
					   "but this mearasd serves node '%s' (--node-name)",
					   q->assembly_id, o, v->node, node_name);
		if (v->gpu_index >= gpus->count)
			return error_reply(MEARAS__ERROR_CODE__ERROR_NO_RESOURCES, len,
					   "assembly %s: vGPU %u wants GPU %u, node %s has %u GPU(s)",
					   q->assembly_id, o, v->gpu_index, node_name, gpus->count);
		if (v->memory_quota_bytes > gpus->gpus[v->gpu_index].memory_bytes)
			return error_reply(MEARAS__ERROR_CODE__ERROR_NO_RESOURCES, len,
					   "assembly %s: vGPU %u wants a quota of %llu bytes, GPU %u has %llu",
					   q->assembly_id, o, (unsigned long long)v->memory_quota_bytes,
					   v->gpu_index,
					   (unsigned long long)gpus->gpus[v->gpu_index].memory_bytes);
		a.vgpus[o].gpu_index = v->gpu_index;
		a.vgpus[o].quota = v->memory_quota_bytes;
		snprintf(a.vgpus[o].node, sizeof(a.vgpus[o].node), "%s", v->node);
	}
	switch (assembly_add(&a)) {
	case ASSEMBLY_OK:
		break;
	case ASSEMBLY_EXISTS:
		return error_reply(MEARAS__ERROR_CODE__ERROR_ALREADY_EXISTS, len,
				   "assembly %s is already instantiated", a.id);
	default:
		return error_reply(MEARAS__ERROR_CODE__ERROR_NO_RESOURCES, len,
				   "cannot store assembly %s (table full or out of memory)", a.id);
	}
	log_info("control: assembly %s instantiated for %s (%s): %u vGPU(s)", a.id,
		 tenant_id_str(&a.who, who, sizeof(who)), a.owner, a.nvgpus);
	ir.assembly_id = a.id;
	return PACK_REPLY(len, INSTANTIATED, instantiated, &ir);
}

static uint8_t *do_release(const Mearas__ControlRequest *req, size_t *len)
{
	const Mearas__ReleaseAssemblyRequest *q = req->release;
	Mearas__ReleaseAssemblyReply rr = MEARAS__RELEASE_ASSEMBLY_REPLY__INIT;

	if (assembly_remove(q->assembly_id) != ASSEMBLY_OK)
		return error_reply(MEARAS__ERROR_CODE__ERROR_NOT_FOUND, len, "no assembly %s on node %s",
				   q->assembly_id, node_name);
	/* clients already using it keep their vGPUs until they exit */
	log_info("control: assembly %s released", q->assembly_id);
	rr.assembly_id = q->assembly_id;
	return PACK_REPLY(len, RELEASED, released, &rr);
}

static uint8_t *do_attach_vm(const Mearas__ControlRequest *req, size_t *len)
{
	const Mearas__AttachVmRequest *q = req->attach_vm;
	Mearas__AttachVmReply ar = MEARAS__ATTACH_VM_REPLY__INIT;
	Mearas__ErrorCode code;
	unsigned vgpus = 0, slots = 0;
	char err[480];

	if (control_vm_attach(q, &vgpus, &slots, &code, err, sizeof(err)))
		return error_reply(code, len, "%s", err);
	ar.domain = q->domain;
	ar.socket = q->socket;
	ar.vgpus = vgpus;
	ar.slots = slots;
	return PACK_REPLY(len, VM_ATTACHED, vm_attached, &ar);
}

static uint8_t *do_detach_vm(const Mearas__ControlRequest *q, size_t *len)
{
	Mearas__DetachVmReply dr = MEARAS__DETACH_VM_REPLY__INIT;
	Mearas__ErrorCode code;
	char err[320];

	if (control_vm_detach(q->detach_vm->domain, &code, err, sizeof(err)))
		return error_reply(code, len, "%s", err);
	dr.domain = q->detach_vm->domain;
	return PACK_REPLY(len, VM_DETACHED, vm_detached, &dr);
}

struct list_builder {
	Mearas__AssemblyInfo **infos;
	size_t n, cap;
	bool failed;
};

struct attached_list {
	struct attached_slot *e;
	size_t n, cap;
	bool failed;
};

static void collect_attached(const struct attached_slot *s, void *ctx)
{
	struct attached_list *l = ctx;
	struct attached_slot *grown = mearas_dynarray_grow(l->e, &l->cap, l->n + 1, sizeof(*grown), 8);

	if (!grown) {
		l->failed = true;
		return;
	}
	l->e = grown;
	l->e[l->n++] = *s;
}

/* The processes served assembly id now (attached.h): one block for the
 * attachments, their pointers and VM names; freed with info. */
static int add_attached(Mearas__AssemblyInfo *info, const char *id)
{
	struct attached_list l = { 0 };
	Mearas__Attachment *at, **ptrs;
	char *names;
	size_t namelen = sizeof(l.e->vm);

	attached_foreach(id, collect_attached, &l);
	if (l.failed || !l.n) {
		free(l.e);
		return l.failed ? -1 : 0;
	}
	ptrs = calloc(1, l.n * (sizeof(*ptrs) + sizeof(*at) + namelen));
	if (!ptrs) {
		free(l.e);
		return -1;
	}
	at = (Mearas__Attachment *)(ptrs + l.n);
	names = (char *)(at + l.n);
	for (size_t k = 0; k < l.n; k++) {
		mearas__attachment__init(&at[k]);
		at[k].pid = (uint32_t)l.e[k].client_pid;
		memcpy(names + k * namelen, l.e[k].vm, namelen);
		at[k].vm = names + k * namelen;
		ptrs[k] = &at[k];
	}
	info->attached = ptrs;
	info->n_attached = l.n;
	free(l.e);
	return 0;
}

static void add_info(const struct assembly *a, void *ctx)
{
	struct list_builder *b = ctx;
	Mearas__AssemblyInfo *info, **grown;

	if (b->failed)
		return;
	grown = mearas_dynarray_grow(b->infos, &b->cap, b->n + 1, sizeof(*grown), 16);
	if (!grown) {
		b->failed = true;
		return;
	}
	b->infos = grown;
	/* one block: the info, its spec pointers, its specs, and copies of the strings */
	info = calloc(1, sizeof(*info) + sizeof(Mearas__Identity) +
			      a->nvgpus * (sizeof(Mearas__VgpuSpec *) + sizeof(Mearas__VgpuSpec)) +
			      sizeof(a->id) + sizeof(a->who.vm) + strlen(a->owner) + 1);
	if (!info) {
		b->failed = true;
		return;
	}
	mearas__assembly_info__init(info);
	info->identity = (Mearas__Identity *)(info + 1);
	mearas__identity__init(info->identity);
	info->vgpus = (Mearas__VgpuSpec **)(info->identity + 1);
	{
		Mearas__VgpuSpec *specs = (Mearas__VgpuSpec *)(info->vgpus + a->nvgpus);
		char *strs = (char *)(specs + a->nvgpus);

		memcpy(strs, a->id, sizeof(a->id));
		info->assembly_id = strs;
		strs += sizeof(a->id);
		if (a->who.kind == TENANT_UID) {
			info->identity->who_case = MEARAS__IDENTITY__WHO_UID;
			info->identity->uid = a->who.uid;
		} else if (a->who.kind == TENANT_VM) {
			memcpy(strs, a->who.vm, sizeof(a->who.vm));
			strs[sizeof(a->who.vm) - 1] = 0;
			info->identity->who_case = MEARAS__IDENTITY__WHO_VM;
			info->identity->vm = strs;
		}
		strs += sizeof(a->who.vm);
		strcpy(strs, a->owner);
		info->owner = strs;
		for (unsigned k = 0; k < a->nvgpus; k++) {
			mearas__vgpu_spec__init(&specs[k]);
			specs[k].ordinal = k;
			specs[k].node = (char *)a->vgpus[k].node;
			specs[k].gpu_index = a->vgpus[k].gpu_index;
			specs[k].memory_quota_bytes = a->vgpus[k].quota;
			specs[k].remote_address = (char *)a->vgpus[k].remote;
			info->vgpus[k] = &specs[k];
		}
	}
	info->n_vgpus = a->nvgpus;
	b->infos[b->n++] = info;
	if (add_attached(info, a->id))
		b->failed = true;
}

static uint8_t *do_list(const Mearas__ControlRequest *q, size_t *len)
{
	Mearas__ListAssembliesReply lr = MEARAS__LIST_ASSEMBLIES_REPLY__INIT;
	struct list_builder b = { 0 };
	uint8_t *out;

	assembly_foreach(add_info, &b);
	if (b.failed)
		out = error_reply(MEARAS__ERROR_CODE__ERROR_INTERNAL, len, "out of memory listing assemblies");
	else {
		lr.assemblies = b.infos;
		lr.n_assemblies = b.n;
		out = PACK_REPLY(len, ASSEMBLIES, assemblies, &lr);
	}
	for (size_t i = 0; i < b.n; i++) {
		free(b.infos[i]->attached);
		free(b.infos[i]);
	}
	free(b.infos);
	return out;
}

/* The handler of each request body, by its field number. */
static uint8_t *(*const handlers[])(const Mearas__ControlRequest *q, size_t *len) = {
	[MEARAS__CONTROL_REQUEST__BODY_HELLO] = do_hello,
	[MEARAS__CONTROL_REQUEST__BODY_GET_PROFILE] = do_profile,
	[MEARAS__CONTROL_REQUEST__BODY_INSTANTIATE] = do_instantiate,
	[MEARAS__CONTROL_REQUEST__BODY_RELEASE] = do_release,
	[MEARAS__CONTROL_REQUEST__BODY_LIST] = do_list,
	[MEARAS__CONTROL_REQUEST__BODY_ATTACH_VM] = do_attach_vm,
	[MEARAS__CONTROL_REQUEST__BODY_DETACH_VM] = do_detach_vm,
};

uint8_t *control_handle(const uint8_t *data, size_t n, size_t *len)
{
	Mearas__ControlRequest *q = mearas__control_request__unpack(NULL, n, data);
	uint8_t *out;

	if (!q)
		return error_reply(MEARAS__ERROR_CODE__ERROR_BAD_REQUEST, len,
				   "undecodable request (%zu bytes): not a ControlRequest", n);
	if ((unsigned)q->body_case < sizeof(handlers) / sizeof(handlers[0]) && handlers[q->body_case])
		out = handlers[q->body_case](q, len);
	else
		out = error_reply(MEARAS__ERROR_CODE__ERROR_BAD_REQUEST, len,
				  "request without a known body (field %d)", (int)q->body_case);
	mearas__control_request__free_unpacked(q, NULL);
	return out;
}
