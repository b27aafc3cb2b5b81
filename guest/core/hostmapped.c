// SPDX-License-Identifier: MIT
/*
 * Pinned ranges the program may hand to kernels: cudaHostAllocMapped and
 * cudaHostRegisterMapped memory, and any block given to
 * cudaHostGetDevicePointer. A local vGPU reaches the whole data area
 * anyway; a remote vGPU's kernels reach the remote node's copy of it, so
 * each remote vGPU is told about these ranges (HOST_MAPPED records) and its
 * nodes keep them coherent: the bytes the host changed go over before each
 * launch, the bytes the device changed come back before each completion.
 */
#include <pthread.h>
#include <stdlib.h>

#include "mearas/log.h"
#include "core.h"

struct mapped_range {
	uint64_t off, size;
	struct mapped_range *next;
};

static struct mapped_range *mapped_list;
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

void rt_host_mapped(const void *p, uint64_t size)
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
	if (!r && (r = malloc(sizeof(*r)))) {
		*r = (struct mapped_range){ .off = off, .size = size, .next = mapped_list };
		mapped_list = r;
		tell_remote_vgpus(off, size, true);
	} else if (!r) {
		log_warn("out of memory: a mapped range is not kept coherent on remote vGPUs");
	}
	pthread_mutex_unlock(&mapped_lock);
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
		*pp = r->next;
		free(r);
		break;
	}
	pthread_mutex_unlock(&mapped_lock);
}
