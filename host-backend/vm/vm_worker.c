// SPDX-License-Identifier: MIT
/*
 * The worker of one VM: maps the VM's shared memory, serves its ivshmem
 * socket (to the VM's QEMU alone) and the VM header, and forks a slot
 * worker per claimed slot (vm_slot.c). It never touches a device itself:
 * CUDA lives in the slot workers. One event loop: the server socket, the
 * host doorbell eventfd that guests ring after claiming or giving back a
 * slot or setting kick bits, and the slot workers' channels. It returns
 * when the guest disconnects, after stopping every slot worker; the
 * process then exits.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ivshmem/ivshmem_server.h"
#include "mearas/log.h"
#include "vm.h"

/* Same place as a process client's region: before the driver reserves
 * addresses. Guest processes map their slot at the same address when they
 * can, so pinned host pointers are device pointers too. */
#define VM_ADDR_HINT 0x600000000000ull
#define SCAN_INTERVAL_MS MEARAS_VM_BEAT_MS

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

/* Who may have the VM's memory: its QEMU (the --vm-user, or root), one at
 * a time. The socket's owner and mode say the same; this holds even if
 * someone loosens them. A refused peer gets nothing: no memory fd, no
 * eventfds. Once the guest went away this worker ends, and the next QEMU
 * is served by a fresh worker with fresh memory. */
static int admit(void *opaque, pid_t pid, uid_t uid, gid_t gid, size_t npeers)
{
	struct vm *vm = opaque;

	(void)gid;
	if (uid != 0 && uid != vm->spec->qemu_uid) {
		log_warn("VM %s: refused a connection on %s from pid %d uid %u: only the VM's QEMU (uid %u, --vm-user) or root may connect",
			 vm->spec->name, vm->spec->socket, (int)pid, (unsigned)uid, (unsigned)vm->spec->qemu_uid);
		return -1;
	}
	if (npeers || vm->peer) {
		log_warn("VM %s: refused a second connection on %s from pid %d uid %u: %s",
			 vm->spec->name, vm->spec->socket, (int)pid, (unsigned)uid,
			 vm->gone ? "the previous guest is still being torn down (retry)"
				  : "a guest is attached (one QEMU per socket)");
		return -1;
	}
	return 0;
}

static void on_connect(void *opaque, unsigned int peer)
{
	struct vm *vm = opaque;

	if (vm->peer) { /* admit() lets one in at most: never here */
		log_err("VM %s: a second guest (peer %u) on %s", vm->spec->name, peer, vm->spec->socket);
		return;
	}
	__atomic_store_n(&vm->peer, peer, __ATOMIC_RELEASE);
	log_info("VM %s: guest connected (peer %u)", vm->spec->name, peer);
}

static void on_disconnect(void *opaque, unsigned int peer)
{
	struct vm *vm = opaque;

	if (peer == vm->peer) {
		log_info("VM %s: guest disconnected (peer %u): freeing its GPU resources", vm->spec->name, peer);
		vm->gone = 1;
	}
}

static void write_header(struct vm *vm)
{
	struct mearas_vm_hdr *h = vm->hdr;

	memset(h, 0, sizeof(*h));
	h->magic = MEARAS_VM_MAGIC;
	h->version = MEARAS_VM_VERSION;
	h->shm_size = vm->spec->size;
	h->nslots = vm->lay.nslots;
	h->nvgpus = vm->lay.nvgpus;
	h->slot_off = vm->lay.slot_off;
	h->slot_size = vm->lay.slot_size;
	for (unsigned k = 0; k < vm->lay.nslots; k++) {
		vm->slots[k].vm = vm;
		vm->slots[k].index = k;
		vm->slots[k].ctl = -1;
		h->slots[k].region_addr = (uint64_t)(uintptr_t)(vm->base + vm->lay.slot_off + vm->lay.slot_size * k);
	}
}

/* Reacts to what the guest wrote: claims, give-backs, kicks (vm_scan.c
 * decides, from values read once and only compared; slot numbers are ours). */
static void scan_slots(struct vm *vm)
{
	char err[256];

	for (unsigned k = 0; k < vm->lay.nslots; k++) {
		struct vm_slot *s = &vm->slots[k];
		struct vm_scan_req req;
		uint32_t kick;
		uint64_t one = 1;

		vm_scan_slot(vm, k, &req);
		if (req.stop)
			vm_slot_stop(vm, k); /* ready = 0 once it exited */
		if (req.notify)
			ivshmem_server_notify(vm->srv, vm->peer, MEARAS_VM_VEC_SLOT);
		if (req.start && vm_slot_start(vm, k, req.token, err, sizeof(err))) {
			log_err("VM %s: slot %u cannot start: %s", vm->spec->name, k, err);
			vm_scan_start_failed(vm, k, req.token);
			ivshmem_server_notify(vm->srv, vm->peer, MEARAS_VM_VEC_SLOT);
		}
		kick = vm_scan_kicks(vm, k);
		for (unsigned i = 0; i < vm->lay.nvgpus; i++)
			if ((kick & (1u << i)) && write(s->kick_fds[i], &one, sizeof(one)) < 0 && errno != EAGAIN)
				log_warn("VM %s: kick: %s", vm->spec->name, strerror(errno));
	}
}

static int map_memory(struct vm *vm, int memfd)
{
	uint64_t size = vm->spec->size;

	vm->base = mmap((void *)VM_ADDR_HINT, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
			memfd, 0);
	if (vm->base == MAP_FAILED)
		vm->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (vm->base == MAP_FAILED) {
		log_err("VM %s: mmap of %llu bytes: %s", vm->spec->name, (unsigned long long)size, strerror(errno));
		return -1;
	}
	vm->hdr = (struct mearas_vm_hdr *)vm->base;
	return 0;
}

/* The socket is born 0600 (umask), then given to the QEMU user: nobody
 * else may connect at any moment (admit() checks again). */
static int open_socket(struct vm *vm, int memfd, const struct ivshmem_server_callbacks *cb, char *err,
		       size_t errlen)
{
	const struct vm_spec *spec = vm->spec;
	mode_t old = umask(0177);

	vm->srv = ivshmem_server_new(spec->socket, memfd, MEARAS_VM_VECTORS, cb);
	umask(old);
	if (!vm->srv) {
		snprintf(err, errlen, "cannot serve %s: %s", spec->socket, strerror(errno));
		return -1;
	}
	if (chown(spec->socket, spec->qemu_uid, spec->qemu_gid) || chmod(spec->socket, 0600)) {
		snprintf(err, errlen, "cannot give %s to uid %u: %s", spec->socket, (unsigned)spec->qemu_uid,
			 strerror(errno));
		ivshmem_server_free(vm->srv);
		return -1;
	}
	return 0;
}

/* Tells whoever waits for this VM server (vm_server_spawn) that it serves
 * its socket (msg "") or why it cannot. */
static void tell_ready(int *ready_fd, const char *msg)
{
	if (*ready_fd < 0)
		return;
	if (write(*ready_fd, msg, strlen(msg) + 1) < 0)
		log_warn("VM server: cannot report readiness: %s", strerror(errno));
	close(*ready_fd);
	*ready_fd = -1;
}

int vm_worker_run(const struct backend_config *cfg, const struct vm_spec *spec, int memfd, int ready_fd)
{
	static struct vm vmstate; /* large: one per process */
	struct vm *vm = &vmstate;
	struct ivshmem_server_callbacks cb = { .peer_connected = on_connect, .peer_disconnected = on_disconnect,
					       .admit = admit, .opaque = vm };
	char err[256];
	uint64_t last_beat = 0;
	int doorbell;

	vm->cfg = cfg;
	vm->spec = spec;
	if (vm_compute_layout(spec->size, spec->vgpus ? spec->vgpus : cfg->vgpus_default, &vm->lay, err,
			      sizeof(err))) {
		log_err("VM %s: %s", spec->name, err);
		tell_ready(&ready_fd, err);
		return 1;
	}
	if (map_memory(vm, memfd)) {
		tell_ready(&ready_fd, "cannot map the VM's shared memory (see mearasd's log)");
		return 1;
	}
	vm->memfd = memfd;
	write_header(vm);
	if (open_socket(vm, memfd, &cb, err, sizeof(err))) {
		log_err("VM %s: %s", spec->name, err);
		tell_ready(&ready_fd, err);
		return 1;
	}
	doorbell = ivshmem_server_host_eventfd(vm->srv, MEARAS_VM_VEC_HOST);
	vm->hdr->state = MEARAS_BACKEND_READY;
	log_info("VM %s: serving %s (QEMU uid %u or root, one at a time): %llu MiB, %u slot(s) of %u vGPU(s), %llu MiB data area each",
		 spec->name, spec->socket, (unsigned)spec->qemu_uid, (unsigned long long)(spec->size >> 20), vm->lay.nslots, vm->lay.nvgpus,
		 (unsigned long long)(vm->lay.data_size >> 20));
	tell_ready(&ready_fd, "");
	while (!vm->gone) {
		struct pollfd p[2 + MEARAS_VM_MAX_SLOTS] = {
			{ .fd = ivshmem_server_poll_fd(vm->srv), .events = POLLIN },
			{ .fd = doorbell, .events = POLLIN } };
		uint64_t n;
		int r;

		for (unsigned k = 0; k < vm->lay.nslots; k++)
			p[2 + k] = (struct pollfd){ .fd = vm->slots[k].pid ? vm->slots[k].ctl : -1, .events = POLLIN };
		r = poll(p, 2 + vm->lay.nslots, SCAN_INTERVAL_MS);
		if (r < 0 && errno != EINTR) {
			log_err("VM %s: poll: %s", spec->name, strerror(errno));
			break;
		}
		if (p[0].revents) {
			r = ivshmem_server_process(vm->srv);
			if (r < 0)
				log_warn("VM %s: ivshmem server: %s", spec->name, strerror(-r));
		}
		if (p[1].revents)
			ivshmem_server_host_consume(vm->srv, MEARAS_VM_VEC_HOST, &n);
		for (unsigned k = 0; k < vm->lay.nslots; k++)
			if (r > 0 && p[2 + k].revents)
				vm_slot_ctl(vm, k);
		if (!vm->gone)
			scan_slots(vm);
		vm_slot_reap(vm, false);
		if (now_ms() - last_beat >= MEARAS_VM_BEAT_MS / 2) {
			__atomic_add_fetch(&vm->hdr->heartbeat, 1, __ATOMIC_RELEASE);
			last_beat = now_ms();
		}
	}
	vm->hdr->state = MEARAS_BACKEND_DEAD;
	vm_slot_reap(vm, true);
	ivshmem_server_free(vm->srv);
	log_info("VM %s: worker done", spec->name);
	return 0;
}
