/* SPDX-License-Identifier: MIT */
/*
 * A raw client of mearasd for the hostile suite: connects over the process
 * transport (or attaches to a region mapped some other way) and writes SQEs
 * by hand, so an attack can put any bytes on a ring. Header-only; attack
 * programs (attacks/NAME.c) include it and link common/fdpass.c.
 */
#ifndef MEARAS_TESTS_HOSTILE_H
#define MEARAS_TESTS_HOSTILE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mearas/fdpass.h"
#include "mearas/region.h"
#include "mearas/ring.h"

struct hostile {
	int sock;
	int region_fd;                  /* the region's memfd, as mearasd sent it */
	uint8_t *region;
	struct mearas_region_hdr *hdr;
	uint8_t *data;
	struct mearas_vgpu_layout l;
	int kick[MEARAS_MAX_VGPUS];
	uint32_t sq_tail[MEARAS_MAX_VGPUS];
	uint32_t cq_head[MEARAS_MAX_VGPUS][MEARAS_MAX_THREADS];
	uint64_t next_ud;
	unsigned slot;                  /* completion slot used by hostile_call */
	void (*kick_fn)(struct hostile *h, unsigned v); /* NULL: the kick eventfd */
	char refusal[192];              /* welcome message of a refused hello */
};

/* Take the layout of a region mapped at `region` (a copy: an attacker that
 * rewrites the header does not move its own view). */
static inline void hostile_attach(struct hostile *h, uint8_t *region)
{
	h->region = region;
	h->hdr = (struct mearas_region_hdr *)region;
	h->data = region + h->hdr->data_off;
	h->l = mearas_vgpu_layout(h->hdr->sq_entries, h->hdr->cq_entries, h->hdr->arena_size,
				  h->hdr->nthreads);
	for (unsigned v = 0; v < MEARAS_MAX_VGPUS && v < h->hdr->nvgpus; v++) {
		h->sq_tail[v] = mearas_load_acquire(&((struct mearas_ring_ctl *)(region + h->hdr->vgpu_off[v] +
										  h->l.sq_ctl))->tail);
		for (unsigned t = 0; t < MEARAS_MAX_THREADS && t < h->hdr->nthreads; t++)
			h->cq_head[v][t] = mearas_load_acquire(
				(uint32_t *)(region + h->hdr->vgpu_off[v] + h->l.cqs + h->l.cq_stride * t));
	}
}

/* Connect with a hello (assembly may be NULL). 0 on success; -1 socket
 * error (errno); a positive cudaError_t when mearasd refused the hello
 * (h->refusal says why). */
static inline int hostile_connect(struct hostile *h, const char *path, unsigned nvgpus, uint64_t data_size,
				  const char *assembly)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct mearas_hello hello = { .magic = MEARAS_HELLO_MAGIC, .version = MEARAS_PROTO_VERSION,
				      .nvgpus = nvgpus, .data_size = data_size, .pid = getpid() };
	struct mearas_welcome wl;
	int fds[3 + MEARAS_MAX_VGPUS + MEARAS_MAX_THREADS], nfds = 0;
	uint8_t *reg;

	memset(h, 0, sizeof(*h));
	if (assembly)
		snprintf(hello.assembly, sizeof(hello.assembly), "%s", assembly);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	h->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->sock < 0 || connect(h->sock, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	if (mearas_send_fds(h->sock, &hello, sizeof(hello), NULL, 0))
		return -1;
	memset(&wl, 0, sizeof(wl));
	if (mearas_recv_fds(h->sock, &wl, sizeof(wl), fds, (int)(sizeof(fds) / sizeof(fds[0])), &nfds, 20000))
		return -1;
	if (wl.status) {
		snprintf(h->refusal, sizeof(h->refusal), "%.*s", (int)sizeof(wl.message), wl.message);
		return wl.status;
	}
	h->region_fd = fds[0];
	reg = mmap(NULL, wl.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (reg == MAP_FAILED)
		return -1;
	hostile_attach(h, reg);
	for (unsigned i = 0; i < wl.nvgpus && i < MEARAS_MAX_VGPUS; i++)
		h->kick[i] = fds[1 + i];
	return 0;
}

/* The attack's connection to the socket named by argv[1], or "FAIL:
 * connect" and exit 1. */
static inline void hostile_open(struct hostile *h, int argc, char **argv, unsigned nvgpus, uint64_t data_size)
{
	int r = argc < 2 ? -2 : hostile_connect(h, argv[1], nvgpus, data_size, NULL);

	if (r) {
		printf("FAIL: connect (%d)\n", r);
		exit(1);
	}
}

static inline struct mearas_ring_ctl *hostile_sq_ctl(struct hostile *h, unsigned v)
{
	return (struct mearas_ring_ctl *)(h->region + h->hdr->vgpu_off[v] + h->l.sq_ctl);
}

static inline struct mearas_devinfo *hostile_devinfo(struct hostile *h, unsigned v)
{
	return (struct mearas_devinfo *)(h->region + h->hdr->vgpu_off[v] + h->l.devinfo);
}

static inline uint8_t *hostile_arena(struct hostile *h, unsigned v)
{
	return h->region + h->hdr->vgpu_off[v] + h->l.arena;
}

static inline struct mearas_sqe hostile_sqe(unsigned op)
{
	struct mearas_sqe e;

	memset(&e, 0, sizeof(e));
	e.op = (uint16_t)op;
	return e;
}

/* Put one record on vGPU v's SQ (waits for room) and kick if asked. */
static inline void hostile_submit(struct hostile *h, unsigned v, const struct mearas_sqe *e)
{
	struct mearas_ring_ctl *sq = hostile_sq_ctl(h, v);
	struct mearas_sqe *ring = (struct mearas_sqe *)(h->region + h->hdr->vgpu_off[v] + h->l.sqes);
	uint32_t entries = h->hdr->sq_entries;

	while (h->sq_tail[v] - mearas_load_acquire(&sq->head) >= entries - 1)
		usleep(10);
	ring[h->sq_tail[v] & (entries - 1)] = *e;
	h->sq_tail[v]++;
	mearas_store_release(&sq->tail, h->sq_tail[v]);
	if (mearas_ring_needs_wakeup(sq)) {
		if (h->kick_fn) {
			h->kick_fn(h, v);
		} else {
			uint64_t one = 1;

			if (write(h->kick[v], &one, sizeof(one)) < 0)
				perror("hostile: kick");
		}
	}
}

/* The next completion on (v, slot) that is not a host-function request;
 * 0, or -1 after timeout_ms. */
static inline int hostile_wait(struct hostile *h, unsigned v, unsigned slot, struct mearas_cqe *out, int timeout_ms)
{
	uint8_t *base = h->region + h->hdr->vgpu_off[v] + h->l.cqs + h->l.cq_stride * slot;
	struct mearas_ring_ctl *ctl = (struct mearas_ring_ctl *)base;
	struct mearas_cqe *ring = (struct mearas_cqe *)(ctl + 1);
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (mearas_load_acquire(&ctl->tail) != h->cq_head[v][slot]) {
			*out = ring[h->cq_head[v][slot] & (h->hdr->cq_entries - 1)];
			h->cq_head[v][slot]++;
			mearas_store_release(&ctl->head, h->cq_head[v][slot]);
			if (out->flags & MEARAS_CQE_HOST_FUNC)
				continue;
			return 0;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			return -1;
		usleep(20);
	}
}

/* Submit with WANT_CQE and wait (10 s): the completion's status, or -1000
 * when none came. val (may be NULL) gets the completion's values. */
static inline int hostile_call(struct hostile *h, unsigned v, struct mearas_sqe *e, uint64_t val[2])
{
	struct mearas_cqe c;

	e->flags |= MEARAS_SQE_WANT_CQE;
	e->cq = (uint16_t)h->slot;
	e->user_data = ++h->next_ud;
	hostile_submit(h, v, e);
	do {
		if (hostile_wait(h, v, h->slot, &c, 10000))
			return -1000;
	} while (c.user_data != e->user_data);
	if (val) {
		val[0] = c.val[0];
		val[1] = c.val[1];
	}
	return c.status;
}

/* cudaMalloc on vGPU v: the device pointer, or 0 (status in *st) */
static inline uint64_t hostile_alloc(struct hostile *h, unsigned v, uint64_t size, int *st)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_MEM_ALLOC);
	uint64_t val[2] = { 0, 0 };
	int r;

	e.args.a[0] = size;
	r = hostile_call(h, v, &e, val);
	if (st)
		*st = r;
	return r ? 0 : val[0];
}

/* cudaMemcpy on vGPU v; host addresses are data-area offsets */
static inline int hostile_memcpy(struct hostile *h, unsigned v, uint64_t dst, uint64_t src, uint64_t size, int dir)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_MEMCPY);

	e.args.a[0] = dst;
	e.args.a[1] = src;
	e.args.a[2] = size;
	e.args.a[3] = (uint64_t)dir;
	return hostile_call(h, v, &e, NULL);
}

#endif
