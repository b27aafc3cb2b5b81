// SPDX-License-Identifier: MIT
/*
 * __managed__ variables. The driver that loads a module on the back end
 * puts its managed variables in managed memory of the worker's process, at
 * addresses kernels reach directly and that the host names the variables by
 * (the runtime sets the host's pointer to the variable's device address). No
 * page of that memory is ours, so each module's variables get a twin: pages
 * of the data area mapped here at the variables' own addresses, so that a
 * host access and a device pointer to the variable name one address. The
 * twin and the device copy are kept equal the way the host can observe:
 *
 * - push: before a record of device work (a launch, copy, memset, graph
 *   launch ...) is posted, bytes the host changed since they were last equal
 *   are copied to the device on the record's stream (on a private stream
 *   while any stream of the process captures), so that work sees them;
 * - pull: after a wait, while device work was posted since the last
 *   whole-device synchronization, the variables are copied back on a
 *   private non-blocking stream (so the copy waits for nothing else) and
 *   merged: bytes the host changed meanwhile keep the host's value and go
 *   out with the next push.
 *
 * "last" holds each variable's bytes as of the last time both sides were
 * equal; that is what tells a host change (twin != last) from a device one.
 * A host function reading a variable sees it as of the last pull, and a host
 * write into one while kernels run reaches the device only with the next
 * posted record: managed memory as a GPU without concurrent managed access
 * shows it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mearas/fatbin.h"
#include "mearas/log.h"
#include "core.h"

/* a module's managed variables together may span this much at most */
#define SPAN_MAX (256ull << 20)

struct mv_var {
	uint64_t dptr, size;
	uint8_t *last;          /* the bytes both sides last agreed on */
};

struct mv_span {
	int vgpu;
	uint32_t module;
	uintptr_t base;         /* first page of the variables' addresses */
	uint64_t len;           /* pages mapped at base */
	void *block;            /* data-area block: the twin's pages, page aligned within */
	uint8_t *twin;          /* data-area address of base's page */
	uint8_t *scratch;       /* data area: where pulls land before the merge */
	unsigned nvars;
	struct mv_var *vars;
	struct mv_span *next;
};

static struct mv_span *spans;
static pthread_mutex_t mv_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t active;                 /* atomic: bit per vGPU with spans */
/* Device work posted (work_gen) against what a pull after a whole-device
 * synchronization has covered (clean_gen), per vGPU: while they differ,
 * every wait pulls (a wait for anything else, a stream's sync say, proves
 * only part of the work done). */
static uint64_t work_gen[MEARAS_MAX_VGPUS], clean_gen[MEARAS_MAX_VGPUS]; /* atomic */
/* this thread's last posted whole-device synchronization: its record's
 * user_data and the work it covers */
static __thread uint64_t sync_ud, sync_gen;
static uint32_t private_stream[MEARAS_MAX_VGPUS];
static __thread int inside;             /* this thread posts the copies of a push or pull */

static uint8_t *twin_of(const struct mv_span *s, const struct mv_var *v)
{
	return s->twin + (v->dptr - s->base);
}

/* the vGPU's non-blocking stream for pulls and captured pushes (0: none) */
static uint32_t stream_for(int vgpu)
{
	if (!private_stream[vgpu]) {
		uint32_t id = rt_new_handle();

		if (id && rt_do_STREAM_CREATE(vgpu, id, cudaStreamNonBlocking, 0) == cudaSuccess)
			private_stream[vgpu] = id;
	}
	return private_stream[vgpu];
}

static void prep_copy(struct rt_call *c, uint32_t stream, uint16_t flags, uint64_t dst, uint64_t src, uint64_t n,
		      int dir)
{
	rt_call_init(c, MEARAS_OP_MEMCPY, stream);
	c->sqe.flags = (uint16_t)((c->sqe.flags & ~MEARAS_SQE_PER_THREAD) | flags);
	mearas_prep_MEMCPY(&c->sqe, dst, src, n, (uint64_t)dir);
}

/* Copies vars' device bytes into scratch, then merges them into the twin
 * (mv_lock held, the caller's slot held). */
static cudaError_t pull_span(struct mv_span *s)
{
	uint64_t ud[64];
	uint32_t stream = stream_for(s->vgpu);
	cudaError_t first = cudaSuccess;

	if (!stream)
		return cudaErrorMemoryAllocation;
	for (unsigned at = 0; at < s->nvars; at += 64) {
		unsigned n = s->nvars - at < 64 ? s->nvars - at : 64, posted = 0;

		for (unsigned i = 0; i < n; i++) {
			struct mv_var *v = &s->vars[at + i];
			struct rt_call c;

			prep_copy(&c, stream, 0, dh_offset(s->scratch + (v->dptr - s->base)), v->dptr, v->size,
				  MEARAS_COPY_DTOH);
			if (rt_post_tracked(s->vgpu, &c, &ud[posted]) != cudaSuccess)
				break;
			posted++;
		}
		for (unsigned i = 0; i < posted; i++) {
			struct mearas_cqe cqe;
			cudaError_t e = rt_wait(s->vgpu, ud[i], &cqe);

			if (e && !first)
				first = e;
		}
		if (posted < n)
			return first ? first : rt_gone();
	}
	if (first)
		return first;
	for (unsigned i = 0; i < s->nvars; i++) {
		struct mv_var *v = &s->vars[i];
		uint8_t *t = twin_of(s, v), *d = s->scratch + (v->dptr - s->base);

		for (uint64_t k = 0; k < v->size; k++) {
			/* a byte the host left alone takes the device's value */
			if (t[k] == v->last[k])
				t[k] = d[k];
			v->last[k] = d[k];
		}
	}
	return cudaSuccess;
}

void rt_mvars_after_wait(int vgpu, uint64_t user_data)
{
	uint32_t bit = 1u << vgpu;
	uint64_t covered = user_data == sync_ud ? sync_gen : 0;

	if (inside || !(__atomic_load_n(&active, __ATOMIC_ACQUIRE) & bit) ||
	    __atomic_load_n(&work_gen[vgpu], __ATOMIC_ACQUIRE) == __atomic_load_n(&clean_gen[vgpu], __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&mv_lock);
	inside = 1;
	/* a whole-device synchronization: what was posted before it is done */
	if (covered > __atomic_load_n(&clean_gen[vgpu], __ATOMIC_ACQUIRE))
		__atomic_store_n(&clean_gen[vgpu], covered, __ATOMIC_RELEASE);
	for (struct mv_span *s = spans; s; s = s->next) {
		cudaError_t e = s->vgpu == vgpu ? pull_span(s) : cudaSuccess;

		if (e) {
			log_warn("__managed__ variables of a module: reading them back from the device failed (%s): "
				 "the host sees older values", rt_error_name(e) ? rt_error_name(e) : "error");
			break;
		}
	}
	inside = 0;
	pthread_mutex_unlock(&mv_lock);
}

/* device work: what may read or write a variable on the device */
static bool device_work(unsigned op)
{
	const struct mearas_op_props *p = mearas_op_props(op);

	return p->capture || p->kernel;
}

void rt_mvars_before_post(int vgpu, const struct rt_call *c)
{
	uint32_t bit = 1u << vgpu;

	if (inside || !(__atomic_load_n(&active, __ATOMIC_ACQUIRE) & bit))
		return;
	if (c->sqe.op == MEARAS_OP_CTX_SYNC) {
		sync_ud = c->sqe.user_data;
		sync_gen = __atomic_load_n(&work_gen[vgpu], __ATOMIC_ACQUIRE);
	}
	if (!device_work(c->sqe.op))
		return;
	pthread_mutex_lock(&mv_lock);
	inside = 1;
	for (struct mv_span *s = spans; s; s = s->next) {
		if (s->vgpu != vgpu)
			continue;
		for (unsigned i = 0; i < s->nvars; i++) {
			struct mv_var *v = &s->vars[i];
			uint8_t *t = twin_of(s, v);
			struct rt_stream_ref st = { .vgpu = vgpu, .id = c->sqe.stream,
						    .sqe_flags = (uint16_t)(c->sqe.flags & MEARAS_SQE_PER_THREAD) };
			struct rt_call copy;

			if (!memcmp(t, v->last, v->size))
				continue;
			/* a capture would keep the copy in its graph: while any stream
			 * captures, the private stream instead (asking the back end
			 * which stream captures would be a round trip, and the caller
			 * may hold its slot) */
			if (rt_capture_any())
				st = (struct rt_stream_ref){ .vgpu = vgpu, .id = stream_for(vgpu) };
			/* only the bytes the host changed: the device may be changing the others */
			for (uint64_t k = 0; k < v->size;) {
				uint64_t run = 0;

				if (t[k] == v->last[k]) {
					k++;
					continue;
				}
				while (k + run < v->size && t[k + run] != v->last[k + run])
					run++;
				memcpy(v->last + k, t + k, run);
				prep_copy(&copy, st.id, st.sqe_flags, v->dptr + k, dh_offset(t + k), run, MEARAS_COPY_HTOD);
				if (rt_post(vgpu, &copy) != cudaSuccess)
					log_warn("__managed__ variable at %#llx: the host's change could not be sent to the "
						 "device", (unsigned long long)v->dptr);
				k += run;
			}
		}
	}
	inside = 0;
	pthread_mutex_unlock(&mv_lock);
	__atomic_add_fetch(&work_gen[vgpu], 1, __ATOMIC_ACQ_REL);
}

/* Whether [lo, hi) lies in a vGPU's address window that this process
 * reserved (connect.c): placeholder pages of ours, which the twin may
 * replace and must give back. */
static bool in_window(uint64_t lo, uint64_t hi)
{
	for (unsigned i = 0; i < rt.nvgpus; i++) {
		const struct rt_vgpu *v = &rt.v[i];

		if (v->window_reserved && lo >= v->info->va_base && hi <= v->info->va_base + v->info->va_size)
			return true;
	}
	return false;
}

static void span_free(struct mv_span *s, bool unmap)
{
	if (unmap && s->len && in_window(s->base, s->base + s->len))
		mmap((void *)s->base, s->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	else if (unmap && s->len)
		munmap((void *)s->base, s->len);
	for (unsigned i = 0; i < s->nvars; i++)
		free(s->vars[i].last);
	free(s->vars);
	if (s->block)
		dh_free(s->block);
	if (s->scratch)
		dh_free(s->scratch);
	free(s);
}

/* bits of active that still have spans (mv_lock held) */
static void recount(void)
{
	uint32_t bits = 0;

	for (struct mv_span *s = spans; s; s = s->next)
		bits |= 1u << s->vgpu;
	__atomic_store_n(&active, bits, __ATOMIC_RELEASE);
}

cudaError_t rt_mvars_bind(int vgpu, uint32_t module, const uint64_t *dptr, const uint64_t *size, unsigned n)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), lo = UINT64_MAX, hi = 0;
	struct mv_span *s;
	cudaError_t e;
	void *at;
	int slot;

	if (!n)
		return cudaSuccess;
	for (unsigned i = 0; i < n; i++) {
		if (!size[i] || dptr[i] + size[i] < dptr[i])
			return cudaErrorInvalidValue;
		lo = dptr[i] < lo ? dptr[i] : lo;
		hi = dptr[i] + size[i] > hi ? dptr[i] + size[i] : hi;
	}
	lo &= ~(page - 1);
	hi = (hi + page - 1) & ~(page - 1);
	if (hi - lo > SPAN_MAX) {
		log_warn("__managed__ variables of a module span %llu MiB of addresses: more than mearas mirrors "
			 "(%llu MiB)", (unsigned long long)((hi - lo) >> 20), (unsigned long long)(SPAN_MAX >> 20));
		return cudaErrorNotSupported;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->vars = calloc(n, sizeof(*s->vars))))
		goto nomem;
	*s = (struct mv_span){ .vgpu = vgpu, .module = module, .base = (uintptr_t)lo, .vars = s->vars };
	s->block = dh_alloc(hi - lo + page);
	s->scratch = dh_alloc(hi - lo);
	if (!s->block || !s->scratch) {
		log_warn("__managed__ variables of %llu bytes do not fit the data area (%llu MiB): raise MEARAS_DATA_MB",
			 (unsigned long long)(hi - lo), (unsigned long long)(rt.data_size >> 20));
		goto nomem;
	}
	s->twin = (uint8_t *)(((uintptr_t)s->block + page - 1) & ~(uintptr_t)(page - 1));
	memset(s->twin, 0, hi - lo);
	for (unsigned i = 0; i < n; i++) {
		s->vars[i] = (struct mv_var){ .dptr = dptr[i], .size = size[i], .last = malloc(size[i]) };
		s->nvars++;
		if (!s->vars[i].last)
			goto nomem;
		memset(s->vars[i].last, 0, size[i]);
	}
	/* the twin's pages where the host names the variables: over the
	 * placeholder of a vGPU window, never over any other mapping */
	at = mmap((void *)(uintptr_t)lo, hi - lo, PROT_READ | PROT_WRITE,
		  MAP_SHARED | (in_window(lo, hi) ? MAP_FIXED : MAP_FIXED_NOREPLACE), rt.memfd,
		  (off_t)(rt.memfd_off + (uint64_t)(s->twin - rt.region)));
	if (at != (void *)(uintptr_t)lo) {
		int err = at == MAP_FAILED ? errno : EEXIST;

		if (at != MAP_FAILED)
			munmap(at, hi - lo); /* a kernel without MAP_FIXED_NOREPLACE put it elsewhere */
		log_warn("__managed__ variables at %#llx..%#llx: the host cannot reach them there (%s)",
			 (unsigned long long)lo, (unsigned long long)hi, strerror(err));
		span_free(s, false);
		return cudaErrorNotSupported;
	}
	s->len = hi - lo;
	/* the variables' first values (the image's initializers); the slot
	 * before mv_lock, the order of a pull after a wait */
	slot = rt_slot();
	pthread_mutex_lock(&rt.slot_lock[slot]);
	pthread_mutex_lock(&mv_lock);
	inside = 1;
	e = pull_span(s);
	inside = 0;
	if (!e) {
		s->next = spans;
		spans = s;
		recount();
	}
	pthread_mutex_unlock(&mv_lock);
	pthread_mutex_unlock(&rt.slot_lock[slot]);
	if (e) {
		span_free(s, true);
		return e;
	}
	return cudaSuccess;
nomem:
	if (s)
		span_free(s, false);
	return cudaErrorMemoryAllocation;
}

cudaError_t rt_mvars_bind_module(int vgpu, uint32_t module, const struct mearas_fatbin_index *idx)
{
	uint64_t hint, *dptr, *size;
	const char *name;
	unsigned n = 0;
	cudaError_t e = cudaSuccess;

	while (mearas_fatbin_managed_at(idx, n, &hint))
		n++;
	if (!n)
		return cudaSuccess;
	dptr = calloc(n, sizeof(*dptr));
	size = calloc(n, sizeof(*size));
	for (unsigned i = 0; i < n && dptr && size && !e; i++) {
		name = mearas_fatbin_managed_at(idx, i, &hint);
		e = rt_do_GLOBAL_GET(vgpu, module, hint, name, (uint32_t)strlen(name) + 1, &dptr[i], &size[i]);
		if (e)
			log_warn("__managed__ variable %s: the device does not know it (%s)", name,
				 rt_error_name(e) ? rt_error_name(e) : "error");
		else
			dm_add(vgpu, dptr[i], size[i], 1);
	}
	if (!dptr || !size)
		e = cudaErrorMemoryAllocation;
	if (!e)
		e = rt_mvars_bind(vgpu, module, dptr, size, n);
	free(dptr);
	free(size);
	return e;
}

void rt_mvars_unbind(int vgpu, uint32_t module)
{
	struct mv_span **pp, *gone = NULL;

	pthread_mutex_lock(&mv_lock);
	for (pp = &spans; *pp;) {
		struct mv_span *s = *pp;

		if (s->vgpu == vgpu && (s->module == module || !module)) {
			*pp = s->next;
			s->next = gone;
			gone = s;
			continue;
		}
		pp = &s->next;
	}
	recount();
	pthread_mutex_unlock(&mv_lock);
	while (gone) {
		struct mv_span *s = gone;

		gone = s->next;
		span_free(s, true);
	}
}

void rt_mvars_forget_vgpu(int vgpu)
{
	rt_mvars_unbind(vgpu, 0);
	private_stream[vgpu] = 0;
}
