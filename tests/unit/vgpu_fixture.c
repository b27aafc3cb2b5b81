// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include "mearas/ring.h"
#include "vgpu_fixture.h"

#define VA_BASE 0x100000000000ull
#define VA_SIZE 0x010000000000ull

static int setup_vgpu(struct worker *w, unsigned i, uint64_t quota, const struct mearas_vgpu_layout *l,
		      uint64_t blk_off)
{
	struct vgpu *v = &w->vgpus[i];
	uint8_t *blk = w->region + blk_off;
	struct mearas_devinfo *info = (struct mearas_devinfo *)(blk + l->devinfo);
	uint64_t base = VA_BASE + (uint64_t)i * VA_SIZE, gran = 0;
	int r;

	vgpu_attach(v, w, i);
	v->engine = &vgpu_engine_local;
	r = v->ops->open(&v->dev, (int)(i % 2), base, VA_SIZE, info, &gran);
	if (r) {
		fprintf(stderr, "fixture: sim open failed: %d\n", r);
		return -1;
	}
	if (!quota || quota > info->total_mem)
		quota = info->total_mem;
	if (vgpu_wire(v, blk, l, base, VA_SIZE, gran, quota)) {
		perror("fixture: eventfd");
		return -1;
	}
	return 0;
}

int fixture_init(struct fixture *f, unsigned nvgpus, uint64_t quota)
{
	struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
							 MEARAS_ARENA_SIZE, MEARAS_MAX_THREADS);
	struct worker *w;
	uint64_t data_off;
	int out[2], err[2];

	memset(f, 0, sizeof(*f));
	f->cfg.dev = &mdev_sim_ops;
	f->cfg.vgpus_default = nvgpus;
	f->cfg.spin_us = 50;
	for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++)
		f->cfg.gpu_map[i] = -1;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -1;
	f->w = w;
	w->cfg = &f->cfg;
	w->sock = -1;
	w->memfd = -1;
	w->nvgpus = nvgpus;
	w->nthreads = MEARAS_MAX_THREADS;
	w->data_size = FIXTURE_DATA_SIZE;
	data_off = mearas_align_up(4096 + l.size * nvgpus, 2u << 20);
	w->region_size = data_off + w->data_size;
	w->region = mmap(NULL, w->region_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (w->region == MAP_FAILED) {
		perror("fixture: mmap");
		return -1;
	}
	worker_init_region(w, data_off);
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) || pipe2(err, O_CLOEXEC | O_NONBLOCK)) {
		perror("fixture: pipe");
		return -1;
	}
	close(out[1]);
	close(err[1]);
	w->out_fd = out[0];
	w->err_fd = err[0];
	if (w->cfg->dev->init(NULL, 0))
		return -1;
	for (unsigned i = 0; i < nvgpus; i++)
		if (setup_vgpu(w, i, quota, &l, 4096 + l.size * i))
			return -1;
	for (unsigned t = 0; t < w->nthreads; t++) {
		w->wake_fds[t] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w->wake_fds[t] < 0) {
			perror("fixture: eventfd");
			return -1;
		}
	}
	return 0;
}

void fixture_destroy(struct fixture *f)
{
	struct worker *w = f->w;

	if (!w)
		return;
	for (unsigned i = 0; i < w->nvgpus; i++) {
		struct vgpu *v = &w->vgpus[i];

		if (!v->dev)
			continue;
		/* what is still pending is done on the model: complete it first */
		while (v->npend && exec_poll_pending(v) > 0)
			;
		exec_drop_pending(v);
		vgpu_teardown(v);
		exec_flags_release(v);
		vaheap_destroy(&v->heap);
		for (size_t k = 0; k < MEARAS_KIND_COUNT; k++)
			htab_free(&v->htab[k]);
		free(v->pend);
		free(v->globals);
		v->ops->close(v->dev);
		close(v->kick_fd);
		pthread_mutex_destroy(&v->cq_lock);
		pthread_mutex_destroy(&v->hf_lock);
		pthread_mutex_destroy(&v->heap_lock);
		pthread_cond_destroy(&v->hf_cond);
	}
	for (unsigned t = 0; t < w->nthreads; t++)
		close(w->wake_fds[t]);
	close(w->out_fd);
	close(w->err_fd);
	munmap(w->region, w->region_size);
	free(w);
	f->w = NULL;
}

static struct mearas_ring_ctl *cq_ctl(struct fixture *f, unsigned vg, unsigned slot)
{
	return mearas_cq_ctl(&f->w->vgpus[vg].rings, slot);
}

uint32_t fixture_cq_ready(struct fixture *f, unsigned vg, unsigned slot)
{
	return mearas_ring_ready(cq_ctl(f, vg, slot));
}

bool fixture_cq_pop(struct fixture *f, unsigned vg, unsigned slot, struct mearas_cqe *out)
{
	struct mearas_ring_ctl *ctl = cq_ctl(f, vg, slot);
	struct mearas_cqe *ring = (struct mearas_cqe *)(ctl + 1);
	uint32_t head = ctl->head;

	if (mearas_load_acquire(&ctl->tail) == head)
		return false;
	*out = ring[head & (MEARAS_CQ_ENTRIES - 1)];
	mearas_store_release(&ctl->head, head + 1);
	return true;
}

int fixture_call(struct fixture *f, unsigned vg, unsigned slot, struct mearas_sqe *e, uint64_t val[2])
{
	struct mearas_cqe c;
	static uint64_t user_data = 1000;

	e->flags |= MEARAS_SQE_WANT_CQE;
	e->cq = (uint16_t)slot;
	e->user_data = ++user_data;
	exec_record(&f->w->vgpus[vg], e);
	if (fixture_cq_ready(f, vg, slot) != 1 || !fixture_cq_pop(f, vg, slot, &c)) {
		fprintf(stderr, "fixture: %s posted %u completions, 1 expected\n", mearas_op_name(e->op),
			fixture_cq_ready(f, vg, slot));
		return -1000;
	}
	if (c.user_data != user_data) {
		fprintf(stderr, "fixture: completion user_data %llu, expected %llu\n",
			(unsigned long long)c.user_data, (unsigned long long)user_data);
		return -1000;
	}
	if (val) {
		val[0] = c.val[0];
		val[1] = c.val[1];
	}
	return c.status;
}

int fixture_op(struct fixture *f, unsigned vg, unsigned slot, unsigned op, uint32_t stream,
	       const uint64_t *args, unsigned n)
{
	struct mearas_sqe e = sqe_of(op);

	e.stream = stream;
	for (unsigned i = 0; i < n && i < sizeof(e.args.a) / sizeof(e.args.a[0]); i++)
		e.args.a[i] = args[i];
	return fixture_call(f, vg, slot, &e, NULL);
}
