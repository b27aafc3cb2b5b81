// SPDX-License-Identifier: MIT
/*
 * The VM worker's side of the slot protocol (vm_region.h) as decisions: what
 * the guest wrote in the VM header (claim, ready, kick) and in its slot's
 * region header, read once and only compared, and the state of each slot
 * as its worker is started, asked to stop, reports and exits. The guest may
 * write anything at any time: a token is only compared with the one this
 * side keeps, kick bits are masked to the slot's vGPUs, slot numbers are
 * ours. vm_worker.c and vm_slot.c carry the results out (fork, stop byte,
 * kicks, guest notifications).
 */
#include <string.h>
#include <sys/wait.h>

#include "mearas/log.h"
#include "vm.h"

uint64_t vm_slot_off(const struct vm *vm, unsigned k)
{
	return vm->lay.slot_off + vm->lay.slot_size * k;
}

struct mearas_region_hdr *vm_slot_region(struct vm *vm, unsigned k)
{
	return (struct mearas_region_hdr *)(vm->base + vm_slot_off(vm, k));
}

void vm_scan_slot(struct vm *vm, unsigned k, struct vm_scan_req *req)
{
	struct mearas_vm_slot *c = &vm->hdr->slots[k];
	struct vm_slot *s = &vm->slots[k];
	uint32_t claim = __atomic_load_n(&c->claim, __ATOMIC_ACQUIRE);

	*req = (struct vm_scan_req){ 0 };
	if (s->active && claim != s->token && !s->stopping) {
		log_info("VM %s: slot %u given back (token %#x)", vm->spec->name, k, s->token);
		if (s->pid) {
			req->stop = true; /* ready = 0 once it exited */
		} else {
			/* its worker had died */
			s->active = false;
			vm_slot_region(vm, k)->state = 0;
			__atomic_store_n(&c->ready, 0, __ATOMIC_RELEASE);
			req->notify = true;
		}
	}
	if (!s->active && !s->pid && claim != 0 && __atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) != claim) {
		req->start = true;
		req->token = claim;
	}
}

struct mearas_vm_output *vm_slot_output(struct vm *vm, unsigned k)
{
	return (struct mearas_vm_output *)(vm->base + MEARAS_VM_OUT_OFF + (uint64_t)k * sizeof(struct mearas_vm_output));
}

/* No slot worker started, so none zeroed the slot (map_own_slot): the
 * claimant is told the slot is dead, and maps nothing of a previous
 * owner's rings, data or device output. */
void vm_scan_start_failed(struct vm *vm, unsigned k, uint32_t token)
{
	memset(vm_slot_region(vm, k), 0, vm->lay.slot_size);
	memset(vm_slot_output(vm, k), 0, sizeof(struct mearas_vm_output));
	vm_slot_region(vm, k)->state = MEARAS_BACKEND_DEAD;
	__atomic_store_n(&vm->hdr->slots[k].ready, token, __ATOMIC_RELEASE);
}

uint32_t vm_scan_kicks(struct vm *vm, unsigned k)
{
	const struct vm_slot *s = &vm->slots[k];

	if (!s->pid || s->stopping)
		return 0;
	/* nvgpus <= MEARAS_MAX_VGPUS (16): the shift stays inside 32 bits */
	return __atomic_exchange_n(&vm->hdr->slots[k].kick, 0, __ATOMIC_ACQ_REL) & ((1u << vm->lay.nvgpus) - 1);
}

void vm_slot_started(struct vm_slot *s, pid_t pid, int ctl, uint32_t token)
{
	s->ctl = ctl;
	s->pid = pid;
	s->token = token;
	s->active = s->starting = true;
	s->stopping = false;
}

bool vm_slot_begin_stop(struct vm_slot *s, uint64_t now_ms)
{
	if (!s->pid || s->stopping)
		return false;
	s->stopping = true;
	s->stop_deadline = now_ms + VM_STOP_GRACE_MS;
	return true;
}

bool vm_slot_overdue(const struct vm_slot *s, uint64_t now_ms)
{
	return s->pid && s->stopping && now_ms >= s->stop_deadline;
}

bool vm_slot_status(struct vm *vm, unsigned k, struct slot_status *st, size_t n)
{
	struct vm_slot *s = &vm->slots[k];
	struct mearas_vm_slot *c = &vm->hdr->slots[k];

	if (!s->starting || n != sizeof(*st))
		return false;
	s->starting = false;
	if (s->stopping)
		return false; /* given back before it was ready: nobody waits for it */
	st->msg[sizeof(st->msg) - 1] = 0;
	if (st->status) {
		log_err("VM %s: slot %u cannot start: %s", vm->spec->name, k, st->msg);
		vm_slot_region(vm, k)->state = MEARAS_BACKEND_DEAD;
	} else {
		log_info("VM %s: slot %u claimed (token %#x, guest pid %d): slot worker %d", vm->spec->name, k,
			 s->token, c->owner_pid, (int)s->pid);
	}
	/* ready = claim also on failure: the guest then reads DEAD */
	__atomic_store_n(&c->ready, s->token, __ATOMIC_RELEASE);
	return true;
}

unsigned vm_slot_gone(struct vm *vm, struct vm_slot *s, int wstatus)
{
	struct mearas_region_hdr *region = vm_slot_region(vm, s->index);
	unsigned vectors = 1u << MEARAS_VM_VEC_SLOT;

	if (s->stopping) {
		/* given back: free for the next claim (the caller cleared its memory) */
		s->active = s->stopping = s->starting = false;
		region->state = 0;
		__atomic_store_n(&vm->hdr->slots[s->index].ready, 0, __ATOMIC_RELEASE);
	} else {
		if (WIFSIGNALED(wstatus))
			log_warn("VM %s: slot %u worker %d killed by signal %d: its guest process's calls fail; the other slots are not touched",
				 vm->spec->name, s->index, (int)s->pid, WTERMSIG(wstatus));
		else
			log_warn("VM %s: slot %u worker %d exited (status %d): its guest process's calls fail",
				 vm->spec->name, s->index, (int)s->pid, WEXITSTATUS(wstatus));
		/* a slot ended by the GPU time limit keeps saying so */
		if (region->state != MEARAS_BACKEND_TIMED_OUT)
			region->state = MEARAS_BACKEND_DEAD;
		if (s->starting)
			__atomic_store_n(&vm->hdr->slots[s->index].ready, s->token, __ATOMIC_RELEASE);
		s->starting = false;
		vectors |= 1u << MEARAS_VM_VEC_WAKE;
	}
	s->pid = 0;
	return vectors;
}
