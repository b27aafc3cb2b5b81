// SPDX-License-Identifier: MIT
/*
 * One client slot of a VM, served by a slot worker: a process forked by the
 * VM worker when a guest process claims the slot, ended when it gives the
 * slot back (or dies). The slot worker maps only its slot's region and
 * output area (the rest of the VM's memory, the VM header and the other
 * slots are unmapped in it), registers only its slot's data area with the
 * device, opens its own device contexts, and serves the region exactly like
 * a process client's (same pollers, same exec). So a guest process's
 * kernels cannot reach another slot's data or device memory, and a fault or
 * a hung host function in one slot touches no other. Every claim gets a
 * fresh process and a zeroed slot: nothing of the previous owner remains.
 *
 * VM worker <-> slot worker: a SOCK_SEQPACKET pair. The slot worker sends
 * one status message when it is ready (or why it cannot start); the VM
 * worker sends one byte to ask it to stop; EOF means the slot worker
 * exited. Kicks go through eventfds the VM worker made; completions are
 * signalled on the guest's own eventfds, duplicated from the ivshmem server
 * before the fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control/attached.h"
#include "control/vgpustats.h"
#include "core/engine.h"
#include "core/fatal.h"
#include "core/watchdog.h"
#include "ivshmem/ivshmem_server.h"
#include "mearas/log.h"
#include "vm.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static void notify(struct vm *vm, unsigned vector)
{
	if (vm->peer)
		ivshmem_server_notify(vm->srv, vm->peer, vector);
}

/* ---- slot worker ---- */

static void signal_guest(struct vm_slot *s, unsigned vector)
{
	uint64_t one = 1;

	if (write(s->wake_fd[vector], &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("VM %s slot %u: notify: %s", s->vm->spec->name, s->index, strerror(errno));
}

static void vm_wake(struct worker *w, unsigned cq)
{
	(void)cq;
	signal_guest(w->wake_ctx, MEARAS_VM_VEC_WAKE);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Everything the VM worker had open (the ivshmem socket and its peers, the
 * other slots' channels) is none of this process's business. */
static void close_fds_except(int *keep, unsigned n)
{
	unsigned lo = 3;

	qsort(keep, n, sizeof(*keep), cmp_int);
	for (unsigned i = 0; i < n; i++) {
		if (keep[i] < (int)lo)
			continue;
		if ((unsigned)keep[i] > lo)
			close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	close_range(lo, ~0u, 0);
}

static void report(int ctl, int status, const char *msg)
{
	struct slot_status st = { .status = status };

	snprintf(st.msg, sizeof(st.msg), "%s", msg);
	if (send(ctl, &st, sizeof(st), MSG_NOSIGNAL) < 0)
		log_warn("slot worker: status to the VM worker: %s", strerror(errno));
}

/* Only this slot's part of the memory, at the address the guest was told
 * (region_addr), zeroed: the previous owner's rings and data are gone. */
static int map_own_slot(struct vm *vm, struct vm_slot *s, char *err, size_t errlen)
{
	uint64_t off = vm_slot_off(vm, s->index), out_off = MEARAS_VM_OUT_OFF + (uint64_t)s->index * sizeof(*s->out);
	uint8_t *addr = vm->base + off, *p;

	munmap(vm->base, vm->spec->size);
	vm->base = NULL;
	vm->hdr = NULL;
	if (fallocate(vm->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)vm->lay.slot_size))
		return snprintf(err, errlen, "clearing the slot: %s", strerror(errno)), -1;
	p = mmap(addr, vm->lay.slot_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, vm->memfd,
		 (off_t)off);
	if (p != addr)
		return snprintf(err, errlen, "mapping the slot: %s", p == MAP_FAILED ? strerror(errno) : "moved"), -1;
	s->out = mmap(NULL, sizeof(*s->out), PROT_READ | PROT_WRITE, MAP_SHARED, vm->memfd, (off_t)out_off);
	if (s->out == MAP_FAILED)
		return snprintf(err, errlen, "mapping the slot's output area: %s", strerror(errno)), -1;
	memset(s->out, 0, sizeof(*s->out));
	close(vm->memfd);
	vm->memfd = -1;
	s->w.region = addr;
	return 0;
}

static int slot_open(struct vm *vm, struct vm_slot *s, char *err, size_t errlen)
{
	const struct backend_config *cfg = vm->cfg;
	struct worker *w = &s->w;
	unsigned local;
	int ndev = 1, r;

	w->cfg = cfg;
	w->sock = -1;
	w->memfd = -1;
	w->region_size = vm->lay.region_fixed + vm->lay.data_size;
	w->data_size = vm->lay.data_size;
	w->nvgpus = vm->lay.nvgpus;
	w->nthreads = MEARAS_MAX_THREADS;
	w->va_index0 = s->index * vm->lay.nvgpus;
	w->wake = vm_wake;
	w->wake_ctx = s;
	if (vm_output_capture(vm, err, errlen))
		log_warn("VM %s slot %u: device printf output is not carried to the guest: %s", vm->spec->name,
			 s->index, err);
	vm_output_attach(vm, s);
	/* an assembly's vGPUs may all be on other nodes: no device here then */
	for (local = 0; local < w->nvgpus && remote_vgpu_is_remote(&cfg->remote, local); local++)
		;
	if (local < w->nvgpus) {
		if (cfg->dev->init(err, errlen))
			return cudaErrorNoDevice;
		ndev = cfg->dev->count();
		if (ndev <= 0)
			return snprintf(err, errlen, "no GPU on this node"), cudaErrorNoDevice;
	}
	worker_init_region(w, vm->lay.region_fixed);
	for (unsigned i = 0; i < w->nvgpus; i++) {
		r = worker_setup_vgpu(w, i, ndev, err, errlen);
		if (r)
			return r;
		/* the VM worker's eventfd: it writes the guest's kick bits there */
		close(w->vgpus[i].kick_fd);
		w->vgpus[i].kick_fd = s->kick_fds[i];
	}
	/* this slot's data area only: a kernel of this guest process cannot
	 * reach another slot's (nor, on a GPU, its device memory: other
	 * contexts) */
	r = local < w->nvgpus ? w->vgpus[local].ops->host_register(w->vgpus[local].dev, w->data, w->data_size) : 0;
	if (r)
		return snprintf(err, errlen, "cannot register the slot's data area with the device (error %d)", r), r;
	return 0;
}

static int start_pollers(struct worker *w, char *err, size_t errlen)
{
	for (unsigned i = 0; i < w->nvgpus; i++) {
		int r = pthread_create(&w->vgpus[i].thread, NULL, w->vgpus[i].engine->thread_main, &w->vgpus[i]);

		if (r) {
			snprintf(err, errlen, "poller thread: %s", strerror(r));
			w->stop = 1;
			for (unsigned j = 0; j < i; j++)
				pthread_join(w->vgpus[j].thread, NULL);
			return cudaErrorMemoryAllocation;
		}
	}
	return 0;
}

/* Stops the pollers and frees every device object (the process's exit
 * would too; this way the statistics are logged and the driver is told).
 * guest_pid: the guest's word for the process, named in the report (the
 * framework suite finds a guest run's records by it). */
static void slot_close(struct vm *vm, struct vm_slot *s, int32_t guest_pid)
{
	struct worker *w = &s->w;
	uint64_t one = 1;

	((struct mearas_region_hdr *)w->region)->state = 0;
	w->stop = 1;
	for (unsigned i = 0; i < w->nvgpus; i++) {
		if (write(w->vgpus[i].kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("VM %s slot %u: kick: %s", vm->spec->name, s->index, strerror(errno));
		pthread_mutex_lock(&w->vgpus[i].hf_lock);
		/* host functions waiting for the departed process: done */
		w->vgpus[i].hf_done_token = UINT64_MAX;
		pthread_cond_broadcast(&w->vgpus[i].hf_cond);
		pthread_mutex_unlock(&w->vgpus[i].hf_lock);
	}
	for (unsigned i = 0; i < w->nvgpus; i++)
		pthread_join(w->vgpus[i].thread, NULL);
	worker_stats_publish(w);
	vstats_release();
	for (unsigned i = 0; i < w->nvgpus; i++) {
		struct vgpu *v = &w->vgpus[i];

		v->engine->close(v);
		/* parsed by tests/vm-cuda/gpu-suite.sh (host_us_per_sync_call) and
		 * experiments/frameworks/suitelib.py (records per guest pid) */
		log_info("VM %s slot %u vGPU %u: %llu records served, %llu synchronizing in %.3f us of host time each%s; freed (guest pid %d)",
			 vm->spec->name, s->index, i, (unsigned long long)v->records, (unsigned long long)v->sync_calls,
			 v->sync_calls ? (double)v->sync_ns / 1e3 / (double)v->sync_calls : 0.0,
			 w->broken ? " (client misbehaved)" : "", (int)guest_pid);
	}
}

static void __attribute__((noreturn)) slot_main(struct vm *vm, struct vm_slot *s, int ctl, pid_t parent)
{
	int keep[2 + MEARAS_MAX_VGPUS + MEARAS_VM_VECTORS];
	unsigned nkeep = 0;
	char err[256];
	int32_t guest_pid;
	int r;

	char dying[160];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	prctl(PR_SET_NAME, "mearas-slot");
	snprintf(dying, sizeof(dying), "worker of VM %s slot %u", vm->spec->name, s->index);
	fatal_log_install(dying);
	for (unsigned v = 0; v < MEARAS_VM_VECTORS; v++) {
		s->wake_fd[v] = ivshmem_server_peer_eventfd(vm->srv, vm->peer, v);
		if (s->wake_fd[v] < 0) {
			report(ctl, cudaErrorDevicesUnavailable, "the guest is gone");
			_exit(1);
		}
		keep[nkeep++] = s->wake_fd[v];
	}
	/* the guest's word, shown to people only (ListAssemblies) */
	guest_pid = __atomic_load_n(&vm->hdr->slots[s->index].owner_pid, __ATOMIC_RELAXED);
	keep[nkeep++] = ctl;
	keep[nkeep++] = vm->memfd;
	for (unsigned i = 0; i < vm->lay.nvgpus; i++)
		keep[nkeep++] = s->kick_fds[i];
	close_fds_except(keep, nkeep);
	vm->srv = NULL; /* its fds are closed here; the VM worker keeps it */
	r = map_own_slot(vm, s, err, sizeof(err)) ? cudaErrorDevicesUnavailable : 0;
	if (!r)
		r = slot_open(vm, s, err, sizeof(err));
	snprintf(s->w.tenant, sizeof(s->w.tenant), "VM %s slot %u", vm->spec->name, s->index);
	if (!r && watchdog_arm(&s->w)) {
		snprintf(err, sizeof(err), "no memory for the GPU time limit");
		r = cudaErrorMemoryAllocation;
	}
	if (!r) {
		char owner[VSTAT_OWNER];

		/* counted like a process client of the VM (mearasd folds the slot
		 * once this process has ended: its VM worker says so) */
		snprintf(owner, sizeof(owner), "vm:%s", vm->spec->name);
		worker_stats_claim(&s->w, vm->spec->assembly, owner, VSTAT_NO_OWNER_SLOT);
		r = start_pollers(&s->w, err, sizeof(err));
	}
	if (r) {
		report(ctl, r, err);
		_exit(1);
	}
	((struct mearas_region_hdr *)s->w.region)->state = MEARAS_BACKEND_READY;
	report(ctl, 0, "");
	attached_claim(vm->spec->assembly, guest_pid, vm->spec->name);
	for (;;) {
		struct pollfd p = { .fd = ctl, .events = POLLIN };

		if (poll(&p, 1, 100) > 0 && p.revents)
			break; /* a stop byte, or the VM worker is gone */
		worker_stats_publish(&s->w);
		if (s->w.timed_out || (vm->cfg->kernel_timeout_ms && watchdog_pollers_stuck(&s->w))) {
			/* the GPU time limit: this process's exit frees its context,
			 * a poller may be stuck in the driver behind the kernel (no
			 * join); the header says TIMED_OUT, which the VM worker keeps */
			watchdog_teardown(&s->w);
			_exit(3);
		}
		if (s->w.broken && !s->dead_marked) {
			log_warn("VM %s: slot %u: the guest process broke its rings: slot dead until given back",
				 vm->spec->name, s->index);
			((struct mearas_region_hdr *)s->w.region)->state = MEARAS_BACKEND_DEAD;
			s->dead_marked = true;
			signal_guest(s, MEARAS_VM_VEC_SLOT);
			signal_guest(s, MEARAS_VM_VEC_WAKE);
		}
	}
	attached_release();
	slot_close(vm, s, guest_pid);
	_exit(0);
}

/* ---- VM worker ---- */

int vm_slot_start(struct vm *vm, unsigned k, uint32_t token, char *err, size_t errlen)
{
	struct vm_slot *s = &vm->slots[k];
	pid_t parent = getpid(), pid;
	int sv[2];
	unsigned i;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return snprintf(err, errlen, "socketpair: %s", strerror(errno)), -1;
	for (i = 0; i < vm->lay.nvgpus; i++) {
		s->kick_fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (s->kick_fds[i] < 0)
			break;
	}
	if (i < vm->lay.nvgpus) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		slot_main(vm, s, sv[1], parent);
	}
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	close(sv[1]);
	vm_slot_started(s, pid, sv[0], token);
	return 0;
fail:
	while (i-- > 0)
		close(s->kick_fds[i]);
	close(sv[0]);
	close(sv[1]);
	return -1;
}

void vm_slot_stop(struct vm *vm, unsigned k)
{
	struct vm_slot *s = &vm->slots[k];

	(void)vm;
	if (!vm_slot_begin_stop(s, now_ms()))
		return;
	if (send(s->ctl, "s", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN)
		kill(s->pid, SIGKILL); /* it is gone or going anyway */
}

/* The slot worker exited: reaped, its channel closed. */
static void slot_exited(struct vm *vm, struct vm_slot *s)
{
	unsigned vectors;
	int st = 0;
	siginfo_t si;

	/* exited but not reaped: its pid is not anyone else's yet, so its
	 * counter slot is marked ended for mearasd to fold (vgpustats.h) */
	while (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	vstats_child_ended(s->pid);
	while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
		;
	close(s->ctl);
	s->ctl = -1;
	for (unsigned i = 0; i < vm->lay.nvgpus; i++)
		close(s->kick_fds[i]);
	/* given back: the departed process's rings and data are not left for the next claim */
	if (s->stopping && fallocate(vm->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				     (off_t)vm_slot_off(vm, s->index), (off_t)vm->lay.slot_size))
		log_warn("VM %s: slot %u: clearing: %s", vm->spec->name, s->index, strerror(errno));
	vectors = vm_slot_gone(vm, s, st);
	for (unsigned v = 0; v < MEARAS_VM_VECTORS; v++)
		if (vectors & (1u << v))
			notify(vm, v);
}

void vm_slot_ctl(struct vm *vm, unsigned k)
{
	struct vm_slot *s = &vm->slots[k];
	struct slot_status st;
	ssize_t n;

	if (!s->pid)
		return;
	n = recv(s->ctl, &st, sizeof(st), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		slot_exited(vm, s);
		return;
	}
	if (vm_slot_status(vm, k, &st, (size_t)n))
		notify(vm, MEARAS_VM_VEC_SLOT);
}

void vm_slot_reap(struct vm *vm, bool all)
{
	for (unsigned k = 0; k < vm->lay.nslots; k++) {
		struct vm_slot *s = &vm->slots[k];

		if (!s->pid)
			continue;
		if (all)
			vm_slot_stop(vm, k);
		while (all && s->pid && now_ms() < s->stop_deadline) {
			struct pollfd p = { .fd = s->ctl, .events = POLLIN };

			if (poll(&p, 1, (int)(s->stop_deadline - now_ms())) > 0)
				vm_slot_ctl(vm, k);
		}
		if (vm_slot_overdue(s, now_ms())) {
			log_warn("VM %s: slot %u worker %d did not stop within %u ms: killed", vm->spec->name, k,
				 (int)s->pid, VM_STOP_GRACE_MS);
			kill(s->pid, SIGKILL);
			slot_exited(vm, s);
		}
	}
}
