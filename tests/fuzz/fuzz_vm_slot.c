// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the VM slot protocol as mearasd's VM worker sees it
 * (vm_region.h; format in fuzz_vm.h). A guest writes whatever it likes into
 * the VM header, its slots' region headers and its output rings' tails;
 * between its writes the VM worker scans (the shipped vm_scan_slot,
 * vm_scan_start_failed and vm_scan_kicks, in scan_slots' order) and its
 * slot workers start, report (vm_slot_status), are asked to stop
 * (vm_slot_begin_stop), run past their grace (vm_slot_overdue) and exit
 * (vm_slot_gone), and write device output (mearas_vm_out_put). What
 * vm_slot.c does with processes and fds is played by the harness.
 * Checks: the host writes no word that is the guest's (claim, owner_pid,
 * the slots it does not serve), writes ready only as 0 or the slot's token,
 * clears kick bits only; a slot worker starts only for a fresh nonzero
 * claim on a slot without one, and is stopped only when its claim changed;
 * kicks stay within the slot's vGPUs; output never overruns its ring.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz_die.h"
#include "fuzz_vm.h"
#include "mearas/log.h"
#include "mearas/vm_output.h"
#include "vm/vm.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SLOT_OFF  MEARAS_VM_SLOT_ALIGN  /* the VM header's page, then the slots' output areas */
#define SLOT_SIZE 4096u  /* of a slot's region, the harness keeps its header only */

static struct vm vm;
static struct vm_spec spec = { .name = "fuzz" };
static uint8_t *mem;                                  /* header + slot region headers, exactly */
static struct mearas_vm_output *outs[MEARAS_VM_MAX_SLOTS];
static uint64_t clock_ms;
static pid_t next_pid;
static uint8_t bytes[1 << 16];                        /* device output */

static void reset(unsigned nslots, unsigned nvgpus)
{
	struct mearas_vm_hdr *h;

	memset(mem, 0, SLOT_OFF + MEARAS_VM_MAX_SLOTS * SLOT_SIZE);
	memset(&vm, 0, sizeof(vm));
	vm.spec = &spec;
	vm.base = mem;
	vm.hdr = h = (struct mearas_vm_hdr *)mem;
	vm.memfd = vm.out_fd = vm.err_fd = -1;
	vm.lay = (struct vm_layout){ .nslots = nslots, .nvgpus = nvgpus, .slot_off = SLOT_OFF, .slot_size = SLOT_SIZE };
	/* as write_header in vm_worker.c */
	h->magic = MEARAS_VM_MAGIC;
	h->version = MEARAS_VM_VERSION;
	h->nslots = nslots;
	h->nvgpus = nvgpus;
	h->slot_off = SLOT_OFF;
	h->slot_size = SLOT_SIZE;
	h->state = MEARAS_BACKEND_READY;
	for (unsigned k = 0; k < MEARAS_VM_MAX_SLOTS; k++) {
		vm.slots[k].vm = &vm;
		vm.slots[k].index = k;
		vm.slots[k].ctl = -1;
		vm.slots[k].out = outs[k];
		memset(outs[k]->ring, 0, sizeof(outs[k]->ring));
	}
	clock_ms = 1000;
	next_pid = 1000;
}

/* ---- the guest's words, before and after what the host does ---- */

struct words {
	struct mearas_vm_slot slots[MEARAS_VM_MAX_SLOTS];
};

static void snap(struct words *w)
{
	memcpy(w->slots, vm.hdr->slots, sizeof(w->slots));
}

/* The host changed only what is its own: ready (to 0 or a slot's token)
 * and kick (cleared) of the slots it serves. */
static void check_host_writes(const struct words *before)
{
	for (unsigned k = 0; k < MEARAS_VM_MAX_SLOTS; k++) {
		const struct mearas_vm_slot *b = &before->slots[k], *a = &vm.hdr->slots[k];

		must(a->claim == b->claim && a->owner_pid == b->owner_pid && a->region_addr == b->region_addr &&
			     !memcmp(a->pad, b->pad, sizeof(a->pad)),
		     "the host wrote a word of the guest's");
		if (k >= vm.lay.nslots) {
			must(a->ready == b->ready && a->kick == b->kick, "the host wrote a slot it does not serve");
			continue;
		}
		must(a->ready == b->ready || a->ready == 0 || a->ready == vm.slots[k].token ||
			     a->ready == a->claim,
		     "the host wrote a ready that is not a token");
		must(a->kick == b->kick || a->kick == 0, "the host set kick bits");
	}
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* slot k's region: zero bytes around its header's state */
static bool zero_but_state(unsigned k)
{
	const uint8_t *r = (const uint8_t *)vm_slot_region(&vm, k);
	size_t at = offsetof(struct mearas_region_hdr, state);

	return all_zero(r, at) && all_zero(r + at + 4, SLOT_SIZE - at - 4);
}

/* ---- the host ---- */

static void scan(uint8_t fail)
{
	uint32_t mask = (1u << vm.lay.nvgpus) - 1;

	for (unsigned k = 0; k < vm.lay.nslots; k++) {
		struct vm_slot *s = &vm.slots[k];
		uint32_t claim = vm.hdr->slots[k].claim, kick;
		bool had_worker = s->pid != 0;
		struct vm_scan_req req;

		vm_scan_slot(&vm, k, &req);
		if (req.stop) {
			must(had_worker && claim != s->token, "a slot worker stopped whose claim stands");
			vm_slot_begin_stop(s, clock_ms); /* the stop byte goes out */
		}
		if (req.start) {
			must(!had_worker && !s->pid && !s->active, "a second worker for one slot");
			must(req.token == claim && claim != 0, "a worker started for another token than the claim");
			if (fail & (1u << k)) {
				vm_scan_start_failed(&vm, k, req.token);
				must(vm_slot_region(&vm, k)->state == MEARAS_BACKEND_DEAD && zero_but_state(k) &&
					     all_zero((const uint8_t *)outs[k], sizeof(*outs[k])),
				     "a slot whose worker did not start holds a previous owner's bytes");
			} else {
				vm_slot_started(s, next_pid++, 100 + (int)k, req.token);
				/* the slot worker starts with a cleared output area (map_own_slot) */
				memset(s->out->ring, 0, sizeof(s->out->ring));
				s->out_head[0] = s->out_head[1] = 0;
			}
		}
		kick = vm_scan_kicks(&vm, k);
		must(!(kick & ~mask), "a kick for a vGPU the slot does not have");
		must(!kick || (s->pid && !s->stopping), "a kick for a slot without a running worker");
	}
}

static void status(unsigned k, uint8_t size, uint32_t code)
{
	struct vm_slot *s = &vm.slots[k];
	struct slot_status st = { .status = (int32_t)code };
	size_t n = sizeof(st);

	if (k >= vm.lay.nslots || !s->pid)
		return; /* no worker to report */
	memset(st.msg, 'm', sizeof(st.msg)); /* unterminated */
	if (size & 1)
		n -= (size_t)(size / 2) + 1;
	if (vm_slot_status(&vm, k, &st, n))
		must(vm.hdr->slots[k].ready == s->token, "a slot said ready to another token");
}

static void gone(struct vm_slot *s, int wstatus)
{
	bool given_back = s->stopping;

	vm_slot_gone(&vm, s, wstatus);
	must(s->pid == 0, "an exited worker still counted");
	if (given_back)
		must(!s->active && !s->stopping && vm.hdr->slots[s->index].ready == 0, "a given back slot not free");
}

static void worker_exit(unsigned k, uint8_t how)
{
	struct vm_slot *s = &vm.slots[k];

	if (k >= vm.lay.nslots || !s->pid)
		return;
	gone(s, how < 128 ? how << 8 : how % 64 + 1); /* wait statuses: exited, killed */
}

static void time_passes(unsigned ms)
{
	clock_ms += ms;
	for (unsigned k = 0; k < vm.lay.nslots; k++)
		if (vm_slot_overdue(&vm.slots[k], clock_ms))
			gone(&vm.slots[k], SIGKILL); /* killed, as vm_slot_reap does */
}

static struct mearas_vm_out_ring *ring_of(unsigned k, unsigned r, uint8_t **buf, uint32_t *size)
{
	struct mearas_vm_output *o = outs[k];

	*buf = r ? o->err : o->out;
	*size = r ? MEARAS_VM_OUT_STDERR : MEARAS_VM_OUT_STDOUT;
	return &o->ring[r];
}

static void output(unsigned k, unsigned r, uint16_t len)
{
	struct vm_slot *s = &vm.slots[k];
	uint8_t *buf;
	uint32_t size, tail, was;
	struct mearas_vm_out_ring *ring = ring_of(k, r, &buf, &size);
	size_t n;

	if (k >= vm.lay.nslots || !s->pid)
		return; /* only a slot's worker writes its output */
	tail = ring->tail;
	was = s->out_head[r] - tail;
	n = mearas_vm_out_put(ring, buf, size, &s->out_head[r], bytes, len);
	must(n <= len && ring->head == s->out_head[r], "output ring head not the host's");
	if (was <= size)
		must(s->out_head[r] - tail <= size, "output past the guest's tail");
}

static void guest_read(unsigned k, unsigned r, uint16_t len)
{
	static uint8_t dst[1 << 16];
	uint8_t *buf;
	uint32_t size;
	struct mearas_vm_out_ring *ring = ring_of(k, r, &buf, &size);

	must(mearas_vm_out_get(ring, buf, size, dst, len) <= len, "read more than asked");
}

/* ---- the input ---- */

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bytes of arguments after each op byte. */
static const uint8_t arg_bytes[VMO_COUNT] = {
	[VMO_CLAIM] = 5, [VMO_READY] = 5, [VMO_KICK] = 5, [VMO_PID] = 5, [VMO_STATE] = 5, [VMO_SCAN] = 1,
	[VMO_STATUS] = 6, [VMO_EXIT] = 2, [VMO_TIME] = 2, [VMO_OUT] = 4, [VMO_TAIL] = 6, [VMO_READ] = 4,
};

static void guest_word(uint8_t op, unsigned k, uint32_t v)
{
	struct mearas_vm_slot *c = &vm.hdr->slots[k];

	switch (op) {
	case VMO_CLAIM: c->claim = v; break;
	case VMO_READY: c->ready = v; break;
	case VMO_KICK: c->kick = v; break;
	case VMO_PID: c->owner_pid = (int32_t)v; break;
	default: vm_slot_region(&vm, k)->state = v; break;
	}
}

static void one_step(uint8_t op, const uint8_t *a)
{
	unsigned k = a[0] % MEARAS_VM_MAX_SLOTS;
	struct words before;

	if (op <= VMO_STATE) {
		guest_word(op, k, le32(a + 1));
		return;
	}
	if (op == VMO_TAIL) {
		outs[k]->ring[a[1] & 1].tail = le32(a + 2);
		return;
	}
	if (op == VMO_READ) {
		guest_read(k, a[1] & 1, (uint16_t)(a[2] | a[3] << 8));
		return;
	}
	snap(&before);
	switch (op) {
	case VMO_SCAN: scan(a[0]); break;
	case VMO_STATUS: status(k, a[1], le32(a + 2)); break;
	case VMO_EXIT: worker_exit(k, a[1]); break;
	case VMO_TIME: time_passes(a[0] | a[1] << 8); break;
	default: output(k, a[1] & 1, (uint16_t)(a[2] | a[3] << 8)); break;
	}
	check_host_writes(&before);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_seeds_if_asked(seeds_vm);
	if (!getenv("FUZZ_VERBOSE"))
		mearas_log_set_fd(open("/dev/null", O_WRONLY | O_CLOEXEC));
	mem = malloc(SLOT_OFF + MEARAS_VM_MAX_SLOTS * SLOT_SIZE);
	for (unsigned k = 0; k < MEARAS_VM_MAX_SLOTS; k++) /* where the VM worker finds them */
		outs[k] = (struct mearas_vm_output *)(mem + MEARAS_VM_OUT_OFF + k * sizeof(*outs[k]));
	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 31);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	reset(1 + data[0] % MEARAS_VM_MAX_SLOTS, 1 + data[1] % MEARAS_MAX_VGPUS);
	data += 2, size -= 2;
	while (size >= 1 && data[0] < VMO_COUNT && size - 1 >= arg_bytes[data[0]]) {
		one_step(data[0], data + 1);
		size -= 1 + (size_t)arg_bytes[data[0]];
		data += 1 + arg_bytes[data[0]];
	}
	return 0;
}
