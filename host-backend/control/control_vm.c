// SPDX-License-Identifier: MIT
/*
 * VM servers made and removed through the control socket (AttachVm,
 * DetachVm): a domain's QEMU gets an ivshmem-doorbell socket in --vm-dir
 * whose guest processes each get the vGPUs of the assembly booked for that
 * domain. The assembly is applied to the VM's own copy of mearasd's
 * configuration exactly as for a process client of it (assembly_apply:
 * GPUs, quotas, remote vGPUs), then a VM server (vm/vm_server.c) runs with
 * that copy. Only the control thread touches this table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "assembly.h"
#include "control.h"
#include "control_internal.h"
#include "mearas/log.h"
#include "mearas/sockpath.h"
#include "remote/forward.h"
#include "vm/vm.h"

#define VM_RUNTIME_MAX 64
#define VM_READY_MS 10000u
#define VM_STOP_MS 10000u
#define VM_MIN_BAR (4ull << 20)
#define VM_MAX_BAR (1ull << 40)

struct runtime_vm {
	struct vm_spec spec;            /* spec.name: the domain */
	struct backend_config cfg;      /* mearasd's, with the assembly applied */
	char assembly[ASSEMBLY_ID_MAX + 1];
	pid_t pid;                      /* the VM server's supervisor */
	int pidfd;
};

static const struct backend_config *base_cfg;
static char vm_dir[sizeof(((struct vm_spec *)0)->socket)] = CONTROL_DEFAULT_VM_DIR;
static struct runtime_vm *vms[VM_RUNTIME_MAX];

int control_vm_init(const struct backend_config *cfg, const char *dir)
{
	size_t n;

	base_cfg = cfg;
	if (!dir)
		return 0;
	n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (dir[0] != '/' || n >= sizeof(vm_dir) - 8) {
		log_err("--vm-dir must be an absolute path under %zu bytes", sizeof(vm_dir) - 8);
		return -1;
	}
	memcpy(vm_dir, dir, n);
	vm_dir[n] = 0;
	return 0;
}

static struct runtime_vm *find(const char *domain)
{
	for (unsigned i = 0; i < VM_RUNTIME_MAX; i++)
		if (vms[i] && !strcmp(vms[i]->spec.name, domain))
			return vms[i];
	return NULL;
}

/* A libvirt domain name as an identity: 1..63 printable characters, no '/' */
static bool valid_domain(const char *d)
{
	size_t n = strlen(d);

	if (n == 0 || n >= TENANT_VM_NAME_MAX || n >= sizeof(((struct vm_spec *)0)->name))
		return false;
	for (size_t i = 0; i < n; i++)
		if (d[i] < ' ' || d[i] > '~' || d[i] == '/')
			return false;
	return true;
}

/* The socket: a file directly in vm_dir, named with [A-Za-z0-9._+-], not
 * starting with a dot. */
static bool valid_socket(const char *path, char *why, size_t whylen)
{
	size_t dl = strlen(vm_dir), n = strlen(path);
	const char *base = path + dl + 1;

	if (n >= sizeof(((struct vm_spec *)0)->socket))
		return snprintf(why, whylen, "socket path '%s' is too long (at most %zu bytes)", path,
				sizeof(((struct vm_spec *)0)->socket) - 1), false;
	if (strncmp(path, vm_dir, dl) || path[dl] != '/' || !*base || *base == '.')
		return snprintf(why, whylen, "socket '%s' is not a file directly in mearasd's VM directory %s "
				"(--vm-dir)", path, vm_dir), false;
	for (const char *c = base; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '.' || *c == '_' || *c == '-' || *c == '+'))
			return snprintf(why, whylen, "socket name '%s' may hold only letters, digits and ._+-",
					base), false;
	return true;
}

/* vm_dir exists (made 0755 when missing: QEMU must reach its socket there)
 * and is a directory that only root may change. */
static int ensure_dir(char *why, size_t whylen)
{
	struct stat st;

	if (mkdir(vm_dir, 0755) && errno != EEXIST)
		return snprintf(why, whylen, "cannot make the VM directory %s: %s", vm_dir, strerror(errno)), -1;
	if (lstat(vm_dir, &st) || !S_ISDIR(st.st_mode))
		return snprintf(why, whylen, "the VM directory %s is not a directory", vm_dir), -1;
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return snprintf(why, whylen, "the VM directory %s must belong to mearasd's user and not be "
				"writable by others (mode %03o)", vm_dir, (unsigned)(st.st_mode & 0777)), -1;
	return 0;
}

int control_vm_attach(const Mearas__AttachVmRequest *q, unsigned *vgpus, unsigned *slots,
		      Mearas__ErrorCode *code, char *err, size_t errlen)
{
	struct tenant_id who = { .kind = TENANT_VM };
	struct assembly found;
	struct runtime_vm *v;
	struct vm_layout lay;
	unsigned free_slot = VM_RUNTIME_MAX, nvgpus = 0;
	char why[320];

	*code = MEARAS__ERROR_CODE__ERROR_BAD_REQUEST;
	if (!valid_domain(q->domain))
		return snprintf(err, errlen, "domain name must be 1..%d printable characters without '/'",
				TENANT_VM_NAME_MAX - 1), -1;
	if (!valid_socket(q->socket, why, sizeof(why)))
		return snprintf(err, errlen, "VM %s: %s", q->domain, why), -1;
	if (q->bar_size_bytes < VM_MIN_BAR || q->bar_size_bytes > VM_MAX_BAR ||
	    (q->bar_size_bytes & (q->bar_size_bytes - 1)))
		return snprintf(err, errlen, "VM %s: shared memory of %llu bytes: must be a power of two (a PCI "
				"BAR) of 4 MiB..1 TiB", q->domain, (unsigned long long)q->bar_size_bytes), -1;
	if (!base_cfg) {
		*code = MEARAS__ERROR_CODE__ERROR_INTERNAL;
		return snprintf(err, errlen, "VM servers are not set up in this mearasd"), -1;
	}
	*code = MEARAS__ERROR_CODE__ERROR_ALREADY_EXISTS;
	if (find(q->domain))
		return snprintf(err, errlen, "VM %s is attached already (detach it first)", q->domain), -1;
	for (unsigned i = 0; i < VM_RUNTIME_MAX; i++) {
		if (!vms[i]) {
			if (free_slot == VM_RUNTIME_MAX)
				free_slot = i;
		} else if (!strcmp(vms[i]->spec.socket, q->socket)) {
			return snprintf(err, errlen, "VM %s: socket %s serves VM %s already", q->domain, q->socket,
					vms[i]->spec.name), -1;
		}
	}
	*code = MEARAS__ERROR_CODE__ERROR_NO_RESOURCES;
	if (free_slot == VM_RUNTIME_MAX)
		return snprintf(err, errlen, "VM %s: %d VMs are attached already, the most one mearasd serves",
				q->domain, VM_RUNTIME_MAX), -1;
	v = calloc(1, sizeof(*v));
	if (!v)
		return snprintf(err, errlen, "VM %s: out of memory", q->domain), -1;
	v->cfg = *base_cfg;
	snprintf(who.vm, sizeof(who.vm), "%s", q->domain);
	/* as for a process client of the assembly: the VM's identity must be
	 * the one it was booked for; its GPUs, quotas and remote vGPUs */
	*code = assembly_find(q->assembly_id, &found) ? MEARAS__ERROR_CODE__ERROR_NOT_FOUND
						      : MEARAS__ERROR_CODE__ERROR_BAD_REQUEST;
	if (assembly_apply(q->assembly_id, &who, false, 0, &v->cfg, &nvgpus, why, sizeof(why)))
		goto fail;
	*code = MEARAS__ERROR_CODE__ERROR_NO_RESOURCES;
	/* a node that is down, or does not admit this one, fails the VM's
	 * start rather than every guest process later */
	for (unsigned i = 0; i < nvgpus; i++)
		if (remote_vgpu_is_remote(&v->cfg.remote, i) && remote_probe(&v->cfg.remote, i, why, sizeof(why)))
			goto fail;
	if (vm_compute_layout(q->bar_size_bytes, nvgpus, &lay, why, sizeof(why)) || ensure_dir(why, sizeof(why)))
		goto fail;
	snprintf(v->spec.name, sizeof(v->spec.name), "%s", q->domain);
	snprintf(v->spec.socket, sizeof(v->spec.socket), "%s", q->socket);
	snprintf(v->assembly, sizeof(v->assembly), "%s", q->assembly_id);
	snprintf(v->spec.assembly, sizeof(v->spec.assembly), "%s", q->assembly_id);
	v->spec.size = q->bar_size_bytes;
	v->spec.vgpus = nvgpus;
	v->spec.qemu_uid = q->qemu_uid;
	v->spec.qemu_gid = q->qemu_gid;
	if (vm_server_spawn(&v->cfg, &v->spec, VM_READY_MS, &v->pid, &v->pidfd, why, sizeof(why)))
		goto fail;
	vms[free_slot] = v;
	*vgpus = nvgpus;
	*slots = lay.nslots;
	log_info("control: VM %s attached: assembly %s, %u vGPU(s) per guest process, %u slot(s), socket %s "
		 "(QEMU uid %u), server %d", q->domain, q->assembly_id, nvgpus, lay.nslots, q->socket,
		 (unsigned)q->qemu_uid, (int)v->pid);
	return 0;
fail:
	snprintf(err, errlen, "VM %s: %s", q->domain, why);
	free(v);
	return -1;
}

int control_vm_detach(const char *domain, Mearas__ErrorCode *code, char *err, size_t errlen)
{
	for (unsigned i = 0; i < VM_RUNTIME_MAX; i++) {
		struct runtime_vm *v = vms[i];

		if (!v || strcmp(v->spec.name, domain))
			continue;
		vm_server_stop(v->pid, v->pidfd, VM_STOP_MS);
		mearas_unlink_socket(v->spec.socket);
		log_info("control: VM %s detached (assembly %s): its server and slot workers are gone", domain,
			 v->assembly);
		vms[i] = NULL;
		free(v);
		return 0;
	}
	*code = MEARAS__ERROR_CODE__ERROR_NOT_FOUND;
	snprintf(err, errlen, "no VM %s is attached on this node", domain);
	return -1;
}

void control_vm_unlink_all(void)
{
	for (unsigned i = 0; i < VM_RUNTIME_MAX; i++)
		if (vms[i])
			mearas_unlink_socket(vms[i]->spec.socket);
}
