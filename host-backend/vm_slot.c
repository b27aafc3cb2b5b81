// SPDX-License-Identifier: MIT
/*
 * One client slot of a VM: a client region inside the VM's shared memory
 * served exactly like a process client's (same pollers, same exec), started
 * when a guest process claims the slot and reset when it gives it back.
 * The slot's devices stay open for the worker's life; what a guest process
 * created on them is freed at every reset.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ivshmem/ivshmem_server.h"
#include "mearas/log.h"
#include "vm.h"

/* Where worker_init_region put vGPU i's block (devinfo first): our own
 * arithmetic, never the guest-writable header. */
static struct mearas_devinfo *slot_devinfo(struct vm *vm, struct vm_slot *s, unsigned i)
{
	struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
							 MEARAS_ARENA_SIZE, MEARAS_MAX_THREADS);

	(void)vm;
	return (struct mearas_devinfo *)(s->w.region + 4096 + l.size * i + l.devinfo);
}

static void vm_wake(struct worker *w, unsigned cq)
{
	struct vm *vm = w->wake_ctx;
	unsigned peer = __atomic_load_n(&vm->peer, __ATOMIC_ACQUIRE);

	(void)cq;
	if (peer)
		ivshmem_server_notify(vm->srv, peer, MEARAS_VM_VEC_WAKE);
}

static int slot_open(struct vm *vm, struct vm_slot *s, char *err, size_t errlen)
{
	struct worker *w = &s->w;
	int r;

	w->cfg = vm->cfg;
	w->sock = -1;
	w->memfd = -1;
	w->region = vm->base + vm->lay.slot_off + vm->lay.slot_size * s->index;
	w->region_size = vm->lay.region_fixed + vm->lay.data_size;
	w->data_size = vm->lay.data_size;
	w->nvgpus = vm->lay.nvgpus;
	w->nthreads = MEARAS_MAX_THREADS;
	w->va_index0 = s->index * vm->lay.nvgpus;
	w->wake = vm_wake;
	w->wake_ctx = vm;
	vm_output_attach(vm, s);
	memset(w->region, 0, vm->lay.region_fixed);
	worker_init_region(w, vm->lay.region_fixed);
	for (unsigned i = 0; i < w->nvgpus; i++) {
		r = worker_setup_vgpu(w, i, vm->ndev, err, errlen);
		if (r)
			return r;
		s->info[i] = *slot_devinfo(vm, s, i);
	}
	if (!vm->registered) {
		/* once per worker: the whole shared memory, so that every slot's
		 * data area is DMA-able */
		r = w->vgpus[0].ops->host_register(w->vgpus[0].dev, vm->base,
						   vm->lay.slot_off + vm->lay.slot_size * vm->lay.nslots);
		if (r) {
			snprintf(err, errlen, "cannot register the VM's shared memory with the device (error %d)", r);
			return r;
		}
		vm->registered = true;
	}
	s->opened = true;
	return 0;
}

/* Back to the state of a fresh client: region rewritten, private indices 0. */
static void slot_reset_region(struct vm *vm, struct vm_slot *s)
{
	struct worker *w = &s->w;

	memset(w->region, 0, vm->lay.region_fixed);
	worker_init_region(w, vm->lay.region_fixed);
	for (unsigned i = 0; i < w->nvgpus; i++) {
		struct vgpu *v = &w->vgpus[i];

		*slot_devinfo(vm, s, i) = s->info[i];
		v->sq_head = 0;
		memset(v->cq_tail, 0, sizeof(v->cq_tail));
		v->hf_done_token = 0;
		v->records = 0;
		v->sync_calls = 0;
		v->sync_ns = 0;
	}
	w->stop = 0;
	w->broken = false;
	vm_output_reset(vm, s);
}

int vm_slot_start(struct vm *vm, unsigned k, uint32_t token, char *err, size_t errlen)
{
	struct vm_slot *s = &vm->slots[k];
	struct worker *w = &s->w;
	int r;

	if (!s->opened) {
		r = slot_open(vm, s, err, errlen);
		if (r)
			return r;
	}
	slot_reset_region(vm, s);
	((struct mearas_region_hdr *)w->region)->state = MEARAS_BACKEND_READY;
	for (unsigned i = 0; i < w->nvgpus; i++) {
		r = pthread_create(&w->vgpus[i].thread, NULL, poller_main, &w->vgpus[i]);
		if (r) {
			snprintf(err, errlen, "poller thread: %s", strerror(r));
			w->stop = 1;
			for (unsigned j = 0; j < i; j++)
				pthread_join(w->vgpus[j].thread, NULL);
			return cudaErrorMemoryAllocation;
		}
	}
	s->active = true;
	s->dead_marked = false;
	s->token = token;
	return 0;
}

/* Stops the pollers and frees every device object of the slot. */
void vm_slot_stop(struct vm *vm, unsigned k)
{
	struct vm_slot *s = &vm->slots[k];
	struct worker *w = &s->w;
	uint64_t one = 1;

	if (!s->active)
		return;
	((struct mearas_region_hdr *)w->region)->state = 0;
	w->stop = 1;
	for (unsigned i = 0; i < w->nvgpus; i++) {
		if (write(w->vgpus[i].kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("VM %s slot %u: kick: %s", vm->spec->name, k, strerror(errno));
		pthread_mutex_lock(&w->vgpus[i].hf_lock);
		/* host functions waiting for the departed process: done */
		w->vgpus[i].hf_done_token = UINT64_MAX;
		pthread_cond_broadcast(&w->vgpus[i].hf_cond);
		pthread_mutex_unlock(&w->vgpus[i].hf_lock);
	}
	for (unsigned i = 0; i < w->nvgpus; i++)
		pthread_join(w->vgpus[i].thread, NULL);
	for (unsigned i = 0; i < w->nvgpus; i++) {
		struct vgpu *v = &w->vgpus[i];

		v->ops->bind_thread(v->dev);
		exec_drop_pending(v);
		vgpu_teardown(v);
		/* parsed by tests/vm-cuda/gpu-suite.sh (host_us_per_sync_call) */
		log_info("VM %s slot %u vGPU %u: %llu records served, %llu synchronizing in %.3f us of host time each%s; freed",
			 vm->spec->name, k, i, (unsigned long long)v->records, (unsigned long long)v->sync_calls,
			 v->sync_calls ? (double)v->sync_ns / 1e3 / (double)v->sync_calls : 0.0,
			 w->broken ? " (client misbehaved)" : "");
	}
	s->active = false;
	s->token = 0;
}
