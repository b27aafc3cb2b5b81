// SPDX-License-Identifier: MIT
/*
 * Device printf/assert output of a VM's guest processes. A slot worker's
 * stdout/stderr are pipes (output_capture_pipes); when a synchronizing
 * record of its slot completes, exec.c's complete() calls vm_take_output,
 * which moves what the pipes hold into the slot's output rings before the
 * completion is posted. Each slot has its own process, contexts and pipes,
 * so one guest process never gets another's output.
 */
#include <errno.h>
#include <stddef.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/output.h"
#include "mearas/log.h"
#include "mearas/vm_output.h"
#include "vm.h"

static bool move_pipe(struct vm *vm, int fd, struct mearas_vm_out_ring *r, uint8_t *buf, uint32_t size,
		      uint32_t *head)
{
	char tmp[16384];
	bool moved = false;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			break;
		n = read(fd, tmp, sizeof(tmp));
		if (n <= 0) {
			if (n < 0 && errno != EINTR && errno != EAGAIN)
				log_warn("VM %s: device output: %s", vm->spec->name, strerror(errno));
			break;
		}
		if (mearas_vm_out_put(r, buf, size, head, tmp, (size_t)n) < (size_t)n)
			log_warn("VM %s: device output ring full: %zd bytes dropped", vm->spec->name, n);
		moved = true;
	}
	return moved;
}

static bool vm_take_output(struct worker *w)
{
	struct vm_slot *s = (struct vm_slot *)((char *)w - offsetof(struct vm_slot, w));
	struct vm *vm = s->vm;
	struct mearas_vm_output *o = s->out;
	bool moved;

	pthread_mutex_lock(&vm->out_lock);
	if (vm->test_printf) {
		dprintf(STDOUT_FILENO, "mearas test printf: slot %u stdout\n", s->index);
		dprintf(STDERR_FILENO, "mearas test printf: slot %u stderr\n", s->index);
	}
	moved = move_pipe(vm, vm->out_fd, &o->ring[0], o->out, MEARAS_VM_OUT_STDOUT, &s->out_head[0]);
	moved |= move_pipe(vm, vm->err_fd, &o->ring[1], o->err, MEARAS_VM_OUT_STDERR, &s->out_head[1]);
	pthread_mutex_unlock(&vm->out_lock);
	return moved;
}

int vm_output_capture(struct vm *vm, char *err, size_t errlen)
{
	const char *test = getenv("MEARAS_TEST_PRINTF");

	pthread_mutex_init(&vm->out_lock, NULL);
	vm->out_fd = vm->err_fd = -1;
	if (output_capture_pipes(&vm->out_fd, &vm->err_fd, err, errlen))
		return -1;
	/* tests/vm-cuda: a marker per synchronizing completion, no GPU needed */
	vm->test_printf = test && !strcmp(test, "1");
	return 0;
}

void vm_output_attach(struct vm *vm, struct vm_slot *s)
{
	s->w.out_fd = vm->out_fd;
	s->w.err_fd = vm->err_fd;
	s->w.take_output = vm->out_fd >= 0 ? vm_take_output : NULL;
}

/* A fresh owner starts with empty rings. */
