// SPDX-License-Identifier: MIT
/*
 * Pinned ranges the program may hand to kernels: cudaHostAllocMapped and
 * cudaHostRegisterMapped memory, and any block given to
 * cudaHostGetDevicePointer. A local vGPU reaches the whole data area
 * anyway; a remote vGPU's kernels reach the remote node's copy of it, so
 * each remote vGPU is told about these ranges (HOST_MAPPED records) and its
 * nodes keep them coherent: the bytes the host changed go over before each
 * launch, the bytes the device changed come back before each completion.
 *
 * Under unified addressing a cudaHostAlloc/cuMemHostAlloc pointer is usable
 * by kernels without the mapped flag. Following a range costs a comparison
 * of it at every launch, so such allocations are followed only while small
 * (flags, counters: HOST_IMPLICIT_MAX each, HOST_IMPLICIT_TOTAL in all);
 * larger ones are not, which is logged once (at debug level: most large
 * pinned buffers only carry copies).
 */
#include <pthread.h>
#include <stdlib.h>

#include "mearas/log.h"
#include "core.h"

#define HOST_IMPLICIT_MAX (4u << 10)
#define HOST_IMPLICIT_TOTAL (64u << 10)

struct mapped_range {
	uint64_t off, size;
	bool implicit;          /* followed without the program asking (rt_host_allocated) */
	struct mapped_range *next;
};

static struct mapped_range *mapped_list;
static uint64_t implicit_bytes;
static bool implicit_refusal_logged;
static pthread_mutex_t mapped_lock = PTHREAD_MUTEX_INITIALIZER;

static void tell_remote_vgpus(uint64_t off, uint64_t size, bool on)
{
	for (unsigned i = 0; i < rt.nvgpus; i++) {
		if (!rt.v[i].info->is_remote)
			continue;
		(void)rt_do_HOST_MAPPED((int)i, off, size, on); /* a failed post fails later calls too */
	}
}

static bool any_remote(void)
{
	for (unsigned i = 0; i < rt.nvgpus; i++)
		if (rt.v[i].info->is_remote)
			return true;
	return false;
}

static void follow(const void *p, uint64_t size, bool implicit)
{
	uint64_t off;
	struct mapped_range *r;

	if (!size || !any_remote())
		return;
	off = dh_offset(p);
	pthread_mutex_lock(&mapped_lock);
	for (r = mapped_list; r; r = r->next)
		if (r->off == off)
			break;
	if (r && r->implicit && !implicit) {
		r->implicit = false; /* asked for now: no longer counted against the implicit bound */
		implicit_bytes -= r->size;
	} else if (!r && implicit && (size > HOST_IMPLICIT_MAX || implicit_bytes + size > HOST_IMPLICIT_TOTAL)) {
		/* debug: most large pinned buffers only carry copies */
		if (!implicit_refusal_logged)
			log_debug("pinned allocations without the mapped flag are followed on remote vGPUs only up to "
				 "%u KiB each and %u KiB in all: one of %llu bytes is not, so kernels of a remote vGPU "
				 "that use its host pointer directly see stale bytes (allocate it with "
				 "cudaHostAllocMapped, or pass it to cudaHostGetDevicePointer, to have it followed)",
				 HOST_IMPLICIT_MAX >> 10, HOST_IMPLICIT_TOTAL >> 10, (unsigned long long)size);
		implicit_refusal_logged = true;
	} else if (!r && (r = malloc(sizeof(*r)))) {
		*r = (struct mapped_range){ .off = off, .size = size, .implicit = implicit, .next = mapped_list };
		mapped_list = r;
		if (implicit)
			implicit_bytes += size;
		tell_remote_vgpus(off, size, true);
	} else if (!r) {
		log_warn("out of memory: a mapped range is not kept coherent on remote vGPUs");
	}
	pthread_mutex_unlock(&mapped_lock);
}

void rt_host_mapped(const void *p, uint64_t size)
{
	follow(p, size, false);
}

void rt_host_allocated(const void *p, uint64_t size, bool mapped)
{
	follow(p, size, !mapped);
}

void *rt_host_alloc(const char *what, uint64_t size, bool mapped)
{
	void *p = dh_alloc(size);

	if (!p) {
		log_warn("%s allocation of %llu bytes does not fit the data area (%llu MiB): raise MEARAS_DATA_MB",
			 what, (unsigned long long)size, (unsigned long long)(rt.data_size >> 20));
		return NULL;
	}
	rt_host_allocated(p, size, mapped);
	return p;
}

void rt_host_unmapped(const void *p)
{
	uint64_t off;

	if (!mapped_list)
		return;
	off = dh_offset(p);
	pthread_mutex_lock(&mapped_lock);
	for (struct mapped_range **pp = &mapped_list; *pp; pp = &(*pp)->next) {
		struct mapped_range *r = *pp;

		if (r->off != off)
			continue;
		tell_remote_vgpus(r->off, r->size, false);
		if (r->implicit)
			implicit_bytes -= r->size;
		*pp = r->next;
		free(r);
		break;
	}
	pthread_mutex_unlock(&mapped_lock);
}
