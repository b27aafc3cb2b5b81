// SPDX-License-Identifier: MIT
/*
 * Copies and memsets, for both front ends. Host memory from cudaMallocHost lives in the data
 * area: copies from it are one DMA. Pageable memory is staged through
 * per-thread buffers in the data area, in chunks, pipelined: the library
 * fills chunk k+1 while the GPU moves chunk k. Small pageable uploads travel
 * inside the record and need no round trip.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mearas/log.h"
#include "core.h"

#define INLINE_COPY_MAX  (64u << 10)    /* pageable H2D up to this size rides in the record */
#define STAGE_CHUNKS     4u

struct rt_staging {
	uint8_t *buf[STAGE_CHUNKS];
	uint64_t ud[STAGE_CHUNKS];
	int vgpu[STAGE_CHUNKS];
	bool busy[STAGE_CHUNKS];
	uint64_t chunk;
};

static uint64_t chunk_size(void)
{
	static uint64_t size;

	if (!size) {
		const char *e = getenv("MEARAS_CHUNK_KB");
		uint64_t kb = e ? strtoull(e, NULL, 10) : 0;

		size = (kb >= 64 && kb <= 65536) ? kb << 10 : (4u << 20);
		/* a small data area (a VM slot) must still hold several threads' staging */
		if (!e && size > rt.data_size / 64)
			size = (rt.data_size / 64) & ~((64ull << 10) - 1);
		if (size < (64u << 10))
			size = 64u << 10;
	}
	return size;
}

static struct rt_staging *staging(void)
{
	struct rt_staging *s = rt_tls.staging;

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->chunk = chunk_size();
	for (unsigned i = 0; i < STAGE_CHUNKS; i++) {
		s->buf[i] = dh_alloc(s->chunk);
		if (!s->buf[i]) {
			log_warn("no room for staging buffers in the data area: raise MEARAS_DATA_MB");
			while (i--)
				dh_free(s->buf[i]);
			free(s);
			return NULL;
		}
	}
	rt_tls.staging = s;
	return s;
}

static cudaError_t stage_wait(struct rt_staging *s, unsigned k, cudaError_t first)
{
	struct mearas_cqe cqe;
	cudaError_t e;

	if (!s->busy[k])
		return first;
	s->busy[k] = false;
	e = rt_wait(s->vgpu[k], s->ud[k], &cqe);
	return first ? first : e;
}

static cudaError_t post_copy(int vgpu, const struct rt_stream_ref *st, uint64_t dst, uint64_t src,
			     uint64_t n, int dir, bool want, uint64_t *ud)
{
	struct rt_call c;

	rt_call_init(&c, MEARAS_OP_MEMCPY, st->id);
	c.sqe.flags |= st->sqe_flags;
	mearas_prep_MEMCPY(&c.sqe, dst, src, n, (uint64_t)dir);
	if (!want)
		return rt_post(vgpu, &c);
	return rt_post_tracked(vgpu, &c, ud);
}

/* a copy posted and waited for, under the calling thread's slot */
static cudaError_t copy_and_wait(int vgpu, const struct rt_stream_ref *st, uint64_t dst, uint64_t src, uint64_t n,
				 int dir)
{
	struct mearas_cqe cqe;
	uint64_t ud;
	int slot = rt_slot();
	cudaError_t e;

	pthread_mutex_lock(&rt.slot_lock[slot]);
	e = post_copy(vgpu, st, dst, src, n, dir, true, &ud);
	if (!e)
		e = rt_wait(vgpu, ud, &cqe);
	pthread_mutex_unlock(&rt.slot_lock[slot]);
	return e;
}

/* Pageable -> device through the staging buffers. Returns when the source
 * has been read (every chunk is staged) and the DMAs are done. */
/* Pageable host memory cannot go into a stream capture, as in CUDA: its
 * bytes travel in the record or through staging buffers, and the graph
 * would read those again at each launch, long after. */
static cudaError_t pageable_capture_check(const struct rt_stream_ref *st, uint64_t n)
{
	if (!rt_capture_active(st))
		return cudaSuccess;
	log_warn("copy of %llu bytes of pageable host memory on a capturing stream refused "
		 "(cudaErrorStreamCaptureUnsupported, as in CUDA): capture copies of pinned memory "
		 "(cudaMallocHost, cudaHostRegister)", (unsigned long long)n);
	return cudaErrorStreamCaptureUnsupported;
}

static cudaError_t staged_h2d(int vgpu, const struct rt_stream_ref *st, uint64_t dst, const uint8_t *src,
			      uint64_t n)
{
	struct rt_staging *s = staging();
	int slot = rt_slot();
	cudaError_t e = cudaSuccess;
	uint64_t off = 0;
	unsigned k = 0;

	if (!s)
		return cudaErrorMemoryAllocation;
	pthread_mutex_lock(&rt.slot_lock[slot]);
	while (off < n && !e) {
		uint64_t len = n - off < s->chunk ? n - off : s->chunk;

		e = stage_wait(s, k, e);
		if (e)
			break;
		rt_parcopy(s->buf[k], src + off, len);
		s->vgpu[k] = vgpu;
		e = post_copy(vgpu, st, dst + off, dh_offset(s->buf[k]), len, MEARAS_COPY_HTOD, true, &s->ud[k]);
		s->busy[k] = !e;
		off += len;
		k = (k + 1) % STAGE_CHUNKS;
	}
	/* completions arrive in posting order: the oldest is at k */
	for (unsigned i = 0; i < STAGE_CHUNKS; i++)
		e = stage_wait(s, (k + i) % STAGE_CHUNKS, e);
	pthread_mutex_unlock(&rt.slot_lock[slot]);
	return e;
}

/* Device -> pageable: keep STAGE_CHUNKS DMAs in flight, copy each out as it lands. */
static cudaError_t staged_d2h(int vgpu, const struct rt_stream_ref *st, uint8_t *dst, uint64_t src, uint64_t n)
{
	struct rt_staging *s = staging();
	int slot = rt_slot();
	cudaError_t e = cudaSuccess;
	uint64_t nchunks, posted = 0, i;

	if (!s)
		return cudaErrorMemoryAllocation;
	nchunks = (n + s->chunk - 1) / s->chunk;
	pthread_mutex_lock(&rt.slot_lock[slot]);
	for (; posted < nchunks && posted < STAGE_CHUNKS && !e; posted++) {
		uint64_t off = posted * s->chunk, len = n - off < s->chunk ? n - off : s->chunk;
		unsigned k = (unsigned)(posted % STAGE_CHUNKS);

		s->vgpu[k] = vgpu;
		e = post_copy(vgpu, st, dh_offset(s->buf[k]), src + off, len, MEARAS_COPY_DTOH, true, &s->ud[k]);
		s->busy[k] = !e;
	}
	for (i = 0; i < nchunks && !e; i++) {
		uint64_t off = i * s->chunk, len = n - off < s->chunk ? n - off : s->chunk;
		unsigned k = (unsigned)(i % STAGE_CHUNKS);

		e = stage_wait(s, k, e);
		if (e)
			break;
		rt_parcopy(dst + off, s->buf[k], len);
		if (posted < nchunks) {
			uint64_t poff = posted * s->chunk, plen = n - poff < s->chunk ? n - poff : s->chunk;

			s->vgpu[k] = vgpu;
			e = post_copy(vgpu, st, dh_offset(s->buf[k]), src + poff, plen, MEARAS_COPY_DTOH, true,
				      &s->ud[k]);
			s->busy[k] = !e;
			posted++;
		}
	}
	/* completions arrive in posting order: the oldest unwaited is chunk i */
	for (unsigned j = 0; j < STAGE_CHUNKS; j++)
		e = stage_wait(s, (unsigned)((i + j) % STAGE_CHUNKS), e);
	pthread_mutex_unlock(&rt.slot_lock[slot]);
	return e;
}

/* A default-stream copy between two vGPUs: CUDA serializes it with the work
 * of both devices, but each vGPU's records run on their own poller. Finish
 * the destination's earlier work, then wait for the copy, so later work on
 * either vGPU sees the data. */
static cudaError_t cross_vgpu_copy(int sv, int dv, const struct rt_stream_ref *st, uint64_t dst, uint64_t src,
				   uint64_t n)
{
	cudaError_t e = rt_do_CTX_SYNC(dv);

	return e ? e : copy_and_wait(sv, st, dst, src, n, MEARAS_COPY_DTOD);
}

/* Which vGPU's device memory holds [p, p+n)? -1: host memory; -2: a
 * device window but no live allocation (an invalid device pointer). */
static int classify(const void *p, uint64_t n)
{
	int v = dm_find((uint64_t)(uintptr_t)p, n ? n : 1, NULL, NULL);

	if (v >= 0)
		return v;
	return dm_window_owner((uint64_t)(uintptr_t)p) >= 0 ? -2 : -1;
}

static const char *side_name(int v)
{
	return v >= 0 ? "device memory" : v == -2 ? "in a device window but in no live allocation" : "host memory";
}

/* the kind asked for checked against where the sides are (cudaMemcpyDefault: taken from them) */
static cudaError_t kind_of(enum cudaMemcpyKind *kind, int dv, int sv)
{
	if (*kind == cudaMemcpyDefault) {
		if (dv == -2 || sv == -2)
			return cudaErrorInvalidValue;
		*kind = dv >= 0 ? (sv >= 0 ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
				: (sv >= 0 ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
		return cudaSuccess;
	}
	switch (*kind) {
	case cudaMemcpyHostToHost:
		return cudaSuccess;
	case cudaMemcpyHostToDevice:
		return dv >= 0 ? cudaSuccess : cudaErrorInvalidValue;
	case cudaMemcpyDeviceToHost:
		return sv >= 0 ? cudaSuccess : cudaErrorInvalidValue;
	case cudaMemcpyDeviceToDevice:
		return dv >= 0 && sv >= 0 ? cudaSuccess : cudaErrorInvalidValue;
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
}

static bool pinned(const void *p, uint64_t n)
{
	return dh_contains(p, n) || rt_registered_twin(p, n);
}

/*
 * Unified addressing: pinned host memory (the data area, registered pages) is
 * also a device pointer, as the driver has it (cuMemcpyDtoHAsync from a
 * cuMemHostAlloc pointer, which XLA's autotuner does). A side the kind names
 * as device memory that is pinned host memory is taken as the host side it
 * is; true when one was.
 */
static bool pinned_sides(enum cudaMemcpyKind *kind, const void *dst, int dv, uint64_t dn, const void *src, int sv,
			 uint64_t sn)
{
	bool dd = *kind == cudaMemcpyHostToDevice || *kind == cudaMemcpyDeviceToDevice;
	bool sd = *kind == cudaMemcpyDeviceToHost || *kind == cudaMemcpyDeviceToDevice;
	bool dh = dd && dv == -1 && pinned(dst, dn), sh = sd && sv == -1 && pinned(src, sn);

	if (!dh && !sh)
		return false;
	dd = dd && !dh;
	sd = sd && !sh;
	*kind = dd ? (sd ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
		   : (sd ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
	return true;
}

/* the copy's kind from where its two sides are (classify, pinned_sides: *moved
 * then, when asked); a refusal says at debug level what each side was found to be */
static cudaError_t resolve_kind(enum cudaMemcpyKind *kind, const void *dst, int dv, uint64_t dn, const void *src,
				int sv, uint64_t sn, bool *moved)
{
	enum cudaMemcpyKind asked = *kind;
	bool was_pinned = pinned_sides(kind, dst, dv, dn, src, sv, sn);
	cudaError_t e = kind_of(kind, dv, sv);

	if (moved)
		*moved = was_pinned;

	if (e == cudaErrorInvalidValue)
		log_debug("copy of %llu bytes refused (kind %d): destination %p is %s, source %p is %s",
			  (unsigned long long)sn, (int)asked, dst, side_name(dv), src, side_name(sv));
	return e;
}


cudaError_t rt_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t stream,
		      bool async)
{
	struct rt_stream_ref st;
	int dv, sv, vgpu;
	bool moved;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if ((unsigned)kind > cudaMemcpyDefault)
		return cudaErrorInvalidMemcpyDirection;
	if (n == 0)
		return cudaSuccess;
	if (!dst || !src)
		return cudaErrorInvalidValue;
	dv = classify(dst, n);
	sv = classify(src, n);
	e = resolve_kind(&kind, dst, dv, n, src, sv, n, &moved);
	if (e)
		return e;
	e = rt_stream_ref(stream, &st);
	if (e)
		return e;
	/* registered memory: copy through its pinned twin (one DMA) */
	if (kind == cudaMemcpyHostToDevice) {
		void *t = rt_registered_twin(src, n);

		if (t)
			src = t;
	} else if (kind == cudaMemcpyDeviceToHost) {
		void *t = rt_registered_twin(dst, n);

		if (t)
			dst = t;
	}
	if (moved)
		log_debug("copy of %zu bytes %p <- %p: pinned host memory asked as device memory, copied as kind %d%s", n,
			  dst, src, (int)kind, kind == cudaMemcpyHostToHost ? " after the stream's work" : "");
	if (kind == cudaMemcpyHostToHost) {
		if (async || stream || moved) {
			/* keep stream order: host copies wait for earlier work
			 * (all of them when a side was asked as device memory) */
			e = rt_do_STREAM_SYNC(st.vgpu, &st);
			if (e)
				return e;
		}
		memmove(dst, src, n);
		return cudaSuccess;
	}
	/* the device side decides the vGPU, unless an explicit stream does */
	vgpu = kind == cudaMemcpyHostToDevice ? dv : sv;
	if (stream && stream != cudaStreamLegacy && stream != cudaStreamPerThread)
		vgpu = st.vgpu;
	else
		st.vgpu = vgpu;
	switch (kind) {
	case cudaMemcpyHostToDevice:
		if (dh_contains(src, n)) {
			if (async)
				return post_copy(vgpu, &st, (uint64_t)(uintptr_t)dst, dh_offset(src), n,
						 MEARAS_COPY_HTOD, false, NULL);
			return copy_and_wait(vgpu, &st, (uint64_t)(uintptr_t)dst, dh_offset(src), n, MEARAS_COPY_HTOD);
		}
		e = pageable_capture_check(&st, n);
		if (e)
			return e;
		if (n <= INLINE_COPY_MAX) {
			return rt_do_MEMCPY_INLINE(vgpu, &st, (uint64_t)(uintptr_t)dst, src, (uint32_t)n, false);
		}
		return staged_h2d(vgpu, &st, (uint64_t)(uintptr_t)dst, src, n);
	case cudaMemcpyDeviceToHost:
		if (dh_contains(dst, n)) {
			if (async)
				return post_copy(vgpu, &st, dh_offset(dst), (uint64_t)(uintptr_t)src, n,
						 MEARAS_COPY_DTOH, false, NULL);
			return copy_and_wait(vgpu, &st, dh_offset(dst), (uint64_t)(uintptr_t)src, n, MEARAS_COPY_DTOH);
		}
		e = pageable_capture_check(&st, n);
		if (e)
			return e;
		return staged_d2h(vgpu, &st, dst, (uint64_t)(uintptr_t)src, n);
	default: /* device to device: no host synchronization, as in CUDA */
		if (dv != sv && vgpu == sv && st.id == MEARAS_STREAM_LEGACY)
			return cross_vgpu_copy(sv, dv, &st, (uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)src, n);
		return post_copy(vgpu, &st, (uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)src, n,
				 MEARAS_COPY_DTOD, false, NULL);
	}
}

/* A copy from device memory of vGPU sv to device memory of vGPU dv
 * (cudaMemcpyPeer, cuMemcpyPeer): both devices must exist; as with unified
 * addressing, the pointers decide where the bytes are. */
cudaError_t rt_memcpy_peer(void *dst, int dv, const void *src, int sv, size_t n, cudaStream_t stream, bool async)
{
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (dv < 0 || sv < 0 || (unsigned)dv >= rt.nvgpus || (unsigned)sv >= rt.nvgpus)
		return cudaErrorInvalidDevice;
	return rt_memcpy(dst, src, n, cudaMemcpyDeviceToDevice, stream, async);
}

/* ---- 2D ---- */

cudaError_t rt_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
			     size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, bool async)
{
	struct rt_stream_ref st;
	struct rt_call c;
	int dv, sv, vgpu, dir;
	uint64_t dspan, sspan;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (width == 0 || height == 0)
		return cudaSuccess;
	if (width > dpitch || width > spitch)
		return cudaErrorInvalidPitchValue;
	dspan = dpitch * (height - 1) + width;
	sspan = spitch * (height - 1) + width;
	dv = classify(dst, dspan);
	sv = classify(src, sspan);
	e = resolve_kind(&kind, dst, dv, dspan, src, sv, sspan, NULL);
	if (!e)
		e = rt_stream_ref(stream, &st);
	if (e)
		return e;
	if (kind == cudaMemcpyHostToHost) {
		e = rt_do_STREAM_SYNC(st.vgpu, &st);
		for (size_t r = 0; r < height && !e; r++)
			memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
		return e;
	}
	vgpu = kind == cudaMemcpyHostToDevice ? dv : sv;
	if (stream && stream != cudaStreamLegacy && stream != cudaStreamPerThread)
		vgpu = st.vgpu;
	dir = kind == cudaMemcpyHostToDevice ? MEARAS_COPY_HTOD
	      : kind == cudaMemcpyDeviceToHost ? MEARAS_COPY_DTOH : MEARAS_COPY_DTOD;
	/* pageable host sides: copy row by row through the 1D paths */
	if ((dir == MEARAS_COPY_HTOD && !dh_contains(src, sspan)) ||
	    (dir == MEARAS_COPY_DTOH && !dh_contains(dst, dspan))) {
		for (size_t r = 0; r < height && !e; r++)
			e = rt_memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width, kind,
				      stream, async);
		return e;
	}
	rt_call_init(&c, MEARAS_OP_MEMCPY_2D, st.id);
	c.sqe.flags |= st.sqe_flags;
	mearas_prep_MEMCPY_2D(&c.sqe, dir == MEARAS_COPY_DTOH ? dh_offset(dst) : (uint64_t)(uintptr_t)dst, dpitch,
			      dir == MEARAS_COPY_HTOD ? dh_offset(src) : (uint64_t)(uintptr_t)src, spitch, width, height,
			      (uint64_t)dir);
	if (async || dir == MEARAS_COPY_DTOD)
		return rt_post(vgpu, &c);
	return rt_call(vgpu, &c, NULL);
}

/* ---- memset ---- */

/*
 * A memset whose destination is pinned host memory (the data area, or
 * registered memory), which CUDA allows with unified addressing (XLA's
 * autotuner clears flags in pinned host memory with cuMemsetD32Async). The
 * bytes are filled from this thread once the stream's earlier work is done,
 * for the Async calls too: the call then returns after its work, which an
 * Async call may (a fill from a host function on the stream made JAX hang on
 * an H200). Not while the stream captures a graph: a graph node cannot be a
 * host thread's fill at replay.
 */
bool rt_pinned_host(const void *p, uint64_t len)
{
	return dh_contains(p, len) || rt_registered_twin(p, len);
}

cudaError_t rt_host_memset(const char *call, const struct rt_stream_ref *st, void *dst, size_t pitch, unsigned value,
			   unsigned elem, size_t width, size_t height)
{
	cudaError_t e;

	if (rt_capture_active(st)) {
		log_warn("%s into pinned host memory at %p while the stream captures a graph: not supported by mearas "
			 "(device memory only there)", call, dst);
		return cudaErrorNotSupported;
	}
	e = rt_do_STREAM_SYNC(st->vgpu, st);
	if (e)
		return e;
	for (size_t row = 0; row < height; row++) {
		uint8_t *p = (uint8_t *)dst + row * (height > 1 ? pitch : 0);

		for (size_t i = 0; i < width; i++) {
			if (elem == 1)
				p[i] = (uint8_t)value;
			else if (elem == 2)
				((uint16_t *)p)[i] = (uint16_t)value;
			else
				((uint32_t *)p)[i] = value;
		}
	}
	return cudaSuccess;
}

cudaError_t rt_memset(void *p, size_t pitch, int value, size_t width, size_t height,
				 cudaStream_t stream)
{
	struct rt_stream_ref st;
	uint64_t span;
	int vgpu;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (width == 0 || height == 0)
		return cudaSuccess;
	if (height > 1 && width > pitch)
		return cudaErrorInvalidValue;
	span = height > 1 ? pitch * (height - 1) + width : width;
	vgpu = dm_find((uint64_t)(uintptr_t)p, span, NULL, NULL);
	if (vgpu < 0 && !rt_pinned_host(p, span))
		return cudaErrorInvalidValue;
	e = rt_stream_ref(stream, &st);
	if (e)
		return e;
	if (vgpu < 0)
		return rt_host_memset("cudaMemset", &st, p, pitch, (uint8_t)value, 1, width, height);
	/* memsets of device memory are asynchronous to the host, as in CUDA */
	if (stream)
		vgpu = st.vgpu;
	if (height == 1)
		return rt_do_MEMSET(vgpu, &st, (uint64_t)(uintptr_t)p, (uint8_t)value, width, 1, false);
	return rt_do_MEMSET_2D(vgpu, &st, (uint64_t)(uintptr_t)p, pitch, (uint8_t)value, width, height, false);
}

/*
 * cudaMemcpyBatchAsync and cuMemcpyBatchAsync: the attributes checked as
 * CUDA checks them (each copy covered, a known source access order and
 * flags), then each copy posted as cudaMemcpyAsync of kind Default on the
 * stream, in the batch's order (CUDA leaves the order within a batch open:
 * this is one it allows). A copy's source is read as cudaMemcpyAsync reads
 * it, which serves every access order: the hints (locations, overlap with
 * compute) change nothing here. *fail (may be NULL): the failing copy's
 * index, SIZE_MAX when no one copy is to blame.
 */
cudaError_t rt_memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
			    const struct cudaMemcpyAttributes *attrs, const size_t *idxs, size_t nattrs,
			    cudaStream_t stream, size_t *fail)
{
	struct rt_stream_ref st;
	cudaError_t e = rt_ensure();

	if (fail)
		*fail = SIZE_MAX;
	if (e)
		return e;
	if (!count || !dsts || !srcs || !sizes || !attrs || !idxs || !nattrs || nattrs > count || idxs[0] != 0)
		return cudaErrorInvalidValue;
	for (size_t k = 0; k < nattrs; k++) {
		if ((k && idxs[k] <= idxs[k - 1]) || idxs[k] >= count)
			return cudaErrorInvalidValue;
		if (attrs[k].srcAccessOrder < cudaMemcpySrcAccessOrderStream ||
		    attrs[k].srcAccessOrder > cudaMemcpySrcAccessOrderAny ||
		    (attrs[k].flags & ~(unsigned)cudaMemcpyFlagPreferOverlapWithCompute))
			return cudaErrorInvalidValue;
	}
	e = rt_stream_ref(stream, &st);
	if (e)
		return e;
	/* "must not be the legacy NULL stream" */
	if (st.id == MEARAS_STREAM_LEGACY && !(st.sqe_flags & MEARAS_SQE_PER_THREAD))
		return cudaErrorInvalidValue;
	for (size_t i = 0; i < count; i++) {
		e = rt_memcpy(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault, stream, true);
		if (e) {
			if (fail)
				*fail = i;
			return e;
		}
	}
	return cudaSuccess;
}
