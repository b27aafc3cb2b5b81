/* SPDX-License-Identifier: MIT */
/*
 * mearasd as the ivshmem server of VMs (--vm=NAME:SOCKET:SIZE_MB[:VGPUS]).
 *
 * Per VM, mearasd forks a supervisor (vm_server.c) that creates the VM's
 * shared memory and forks a VM worker (vm_worker.c); the worker serves the
 * ivshmem socket and the VM header (claims, kicks) of
 * include/mearas/vm_region.h, and forks one slot worker per claimed client
 * slot (vm_slot.c): a process with its own device contexts that maps and
 * registers only its slot, so one guest process's GPU work (a fault, a
 * hung host function) touches no other's. When the VM goes away
 * (QEMU exits or is killed) the worker exits, taking all of the VM's device
 * state with it; the supervisor marks the old memory dead (guests still
 * mapping it get errors, not hangs) and starts a fresh worker with fresh
 * memory for the next VM on the socket.
 */
#ifndef MEARAS_VM_H
#define MEARAS_VM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/worker.h"
#include "mearas/vm_region.h"

#define VM_MAX_SPECS 16u

struct vm_spec {
	char name[64];
	char socket[108];
	uint64_t size;          /* bytes; a power of two (a PCI BAR) */
	unsigned vgpus;         /* per guest process; 0 = mearasd's default */
	char assembly[64];      /* AttachVm: the assembly it serves ("" for --vm) */
	/* the user QEMU runs as (--vm-user): owns the socket and, with root,
	 * is the only one admitted on it; 0 = root only */
	uid_t qemu_uid;
	gid_t qemu_gid;
};

/* --vm-user's default when that user exists (Debian/Ubuntu libvirt) */
#define VM_DEFAULT_QEMU_USER "libvirt-qemu"

/* The slot layout of a VM's shared memory. */
struct vm_layout {
	unsigned nslots, nvgpus;
	uint64_t slot_off, slot_size, region_fixed, data_size;
};

struct ivshmem_server;
struct vm;

/*
 * One client slot. The VM worker keeps the first part (it forks a slot
 * worker per claim and stops it at give-back); the slot worker, a process
 * of its own with its own device contexts, maps only its slot's region and
 * output area and uses the rest.
 */
struct vm_slot {
	struct vm *vm;
	unsigned index;
	/* VM worker */
	bool active;            /* claimed for token: a slot worker runs or died */
	bool starting;          /* forked, no status yet */
	bool stopping;          /* give-back seen, waiting for the exit */
	pid_t pid;              /* the slot worker, 0 none */
	int ctl;                /* socketpair end: status in, stop out, EOF = exit */
	uint64_t stop_deadline; /* ms: past it the slot worker is killed */
	uint32_t token;
	int kick_fds[MEARAS_MAX_VGPUS]; /* the slot worker's pollers' kicks */
	/* slot worker */
	bool dead_marked;
	int wake_fd[MEARAS_VM_VECTORS]; /* the guest's notification eventfds */
	struct mearas_vm_output *out;   /* its output area */
	uint32_t out_head[2];   /* our own heads of the slot's output rings */
	struct worker w;
};

struct vm {
	const struct backend_config *cfg;
	const struct vm_spec *spec;
	struct vm_layout lay;
	int memfd;
	uint8_t *base;          /* VM worker: all of it; slot worker: unmapped */
	struct mearas_vm_hdr *hdr;
	struct ivshmem_server *srv;
	unsigned peer;          /* the guest's peer id, 0 before it connects */
	volatile int gone;      /* the guest disconnected */
	int out_fd, err_fd;     /* slot worker: read ends of its stdout/stderr pipes, -1 none */
	bool test_printf;       /* MEARAS_TEST_PRINTF=1: write markers to them */
	pthread_mutex_t out_lock;
	struct vm_slot slots[MEARAS_VM_MAX_SLOTS];
};

/* a slot worker that does not stop this long after it was asked is killed */
#define VM_STOP_GRACE_MS 5000u

/* A slot worker's one status message to the VM worker (vm_slot.c). */
struct slot_status {
	int32_t status;         /* 0 ready, else a cudaError_t */
	char msg[220];
};

/* ---- vm_scan.c: the VM worker's decisions on what the guest wrote ----
 * What the guest writes (claim, ready, kick, owner_pid, its slot's region
 * header) is read here, and only compared; the slots' state moves here too.
 * Nothing here starts a process, touches an fd or rings the guest: the
 * callers in vm_worker.c and vm_slot.c do what the result says, and
 * tests/fuzz/fuzz_vm_slot runs the same functions on guest writes of its own. */

/* What a scan of one slot asks of the VM worker. */
struct vm_scan_req {
	bool stop;              /* the guest gave the slot back: stop its worker (vm_slot_stop) */
	bool notify;            /* the slot's state changed: ring the guest's slot vector */
	bool start;             /* a new claim: start a slot worker for token */
	uint32_t token;
};
/* Reads slot k's claim: a give-back of a slot whose worker had died is done
 * here (ready 0); a give-back of a running one and a new claim are asked for. */
void vm_scan_slot(struct vm *vm, unsigned k, struct vm_scan_req *req);
/* vm_slot_start failed for the claim token: the slot says DEAD to it. */
void vm_scan_start_failed(struct vm *vm, unsigned k, uint32_t token);
/* The kick bits the guest set for slot k's pollers, taken (cleared) and
 * masked to its vGPUs; none while it has no worker or it is stopping. */
uint32_t vm_scan_kicks(struct vm *vm, unsigned k);
/* A slot worker was forked for token, ctl its channel. */
void vm_slot_started(struct vm_slot *s, pid_t pid, int ctl, uint32_t token);
/* Asks slot k's worker to stop (now_ms: the clock); false when it has none or
 * is stopping already, else the caller sends it the stop byte. */
bool vm_slot_begin_stop(struct vm_slot *s, uint64_t now_ms);
/* A stopping slot worker that is still there at now_ms is past its grace. */
bool vm_slot_overdue(const struct vm_slot *s, uint64_t now_ms);
/* Slot k's worker sent n bytes of status st: true when the guest is to be
 * told (ready = its token). */
bool vm_slot_status(struct vm *vm, unsigned k, struct slot_status *st, size_t n);
/* Slot worker of s exited with wait status wstatus (its fds are closed):
 * free again if it was given back, else DEAD. Returns the guest vectors to
 * ring, a bit per vector. */
unsigned vm_slot_gone(struct vm *vm, struct vm_slot *s, int wstatus);

/* vm_server.c */
int vm_parse_spec(const char *arg, struct vm_spec *out, char *err, size_t errlen);
/* user: a name, a numeric uid, or NULL for the default; sets every spec's
 * qemu_uid/qemu_gid; 0 or -1 with err */
int vm_resolve_user(const char *user, struct vm_spec *specs, unsigned n, char *err, size_t errlen);
int vm_compute_layout(uint64_t size, unsigned nvgpus, struct vm_layout *l, char *err, size_t errlen);
/* forks one supervisor per VM; 0 or -1 */
/* 0, or -1 (said why) when a live server listens on a --vm socket already:
 * never taken over. Asked of /proc/net/unix, not by connecting (which the
 * VM server would take for its QEMU). */
int vm_sockets_check(const struct vm_spec *specs, unsigned n);
int vm_servers_start(const struct backend_config *cfg, const struct vm_spec *specs, unsigned n);
/*
 * One VM server started while mearasd runs (the control socket's AttachVm):
 * forks its supervisor and returns once the VM's first worker serves
 * spec->socket (at most timeout_ms), with the supervisor's pid and a pidfd
 * of it. cfg and spec must stay valid in the caller until the fork (the
 * supervisor has its own copies after). On failure nothing is left running
 * and err says why; -1.
 */
int vm_server_spawn(const struct backend_config *cfg, const struct vm_spec *spec, unsigned timeout_ms,
		    pid_t *pid, int *pidfd, char *err, size_t errlen);
/* Stops a VM server of vm_server_spawn: its supervisor, worker and slot
 * workers end, its memory is marked dead and its socket removed. Waits for
 * the supervisor's exit (SIGKILL after grace_ms); closes pidfd. */
void vm_server_stop(pid_t pid, int pidfd, unsigned grace_ms);
/* at mearasd's exit: a socket a killed worker left behind */
void vm_servers_unlink(const struct vm_spec *specs, unsigned n);

/* vm_worker.c: serves one VM connection on memfd; returns the exit status.
 * ready_fd >= 0: once the socket is served, one empty message is written
 * there, or the reason it cannot be; then it is closed. */
int vm_worker_run(const struct backend_config *cfg, const struct vm_spec *spec, int memfd, int ready_fd);

/* vm_slot.c (VM worker side): fork a slot worker for token; ask it to
 * stop; react to its status/exit on its ctl fd (readable) */
int vm_slot_start(struct vm *vm, unsigned k, uint32_t token, char *err, size_t errlen);
void vm_slot_stop(struct vm *vm, unsigned k);
void vm_slot_ctl(struct vm *vm, unsigned k);
/* kills slot workers past their stop deadline; all of them with all=true
 * (the VM worker is ending) and waits for them */
void vm_slot_reap(struct vm *vm, bool all);
/* where slot k's region lies in the VM's memory, and its header there (vm_scan.c) */
uint64_t vm_slot_off(const struct vm *vm, unsigned k);
struct mearas_region_hdr *vm_slot_region(struct vm *vm, unsigned k);
/* slot k's device output area, in the VM's memory */
struct mearas_vm_output *vm_slot_output(struct vm *vm, unsigned k);

/* vm_output.c: device printf/assert output into the slot's output rings
 * (slot worker) */
int vm_output_capture(struct vm *vm, char *err, size_t errlen);
void vm_output_attach(struct vm *vm, struct vm_slot *s);

#endif
