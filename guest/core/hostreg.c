// SPDX-License-Identifier: MIT
/* Registration of ordinary process memory (cudaHostRegister, cuMemHostRegister). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mearas/log.h"
#include "core.h"

/*
 * cudaHostRegister of ordinary process memory: the back end cannot reach
 * it, so its pages are replaced by data-area pages holding the same bytes,
 * mapped at the same addresses (the region is a memfd). The program keeps
 * its pointer; copies from it become DMA, and the pages' twin in the region
 * is the device pointer (cudaHostGetDevicePointer). Unregistering puts
 * private pages with the same bytes back. Caveat: the pages are switched
 * while the call runs, so other threads must not write to the pages that
 * hold the range (the same rule as for the memory itself) meanwhile.
 */
/*
 * Whole pages move, not just the registered bytes: the rest of each page
 * (other heap objects, allocator metadata) must keep its contents. Those
 * bytes are not the program's to ASan, so the copy is not instrumented.
 */
__attribute__((no_sanitize("address"), no_sanitize("hwaddress")))
static void copy_pages(uint8_t *dst, const uint8_t *src, uint64_t len)
{
	volatile const uint64_t *s = (volatile const uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;

	/* a word loop: memcpy would be intercepted and checked all the same */
	for (uint64_t i = 0; i < len / 8; i++)
		d[i] = s[i];
}

/*
 * Whether any page of [start, end) belongs to a shared mapping (a file or
 * shared memory other processes see, or one shared with a forked child):
 * moving those pages into the data area would silently end the sharing
 * (NCCL's /dev/shm buffers are registered this way), so such memory is
 * refused instead. -1 where /proc/self/maps cannot be read.
 */
static int range_is_shared(const uint8_t *start, const uint8_t *end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int shared = 0;

	if (!f)
		return -1;
	while (!shared && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		if ((uintptr_t)start < hi && lo < (uintptr_t)end && perms[3] == 's')
			shared = 1;
	}
	fclose(f);
	return shared;
}

struct registered {
	uint8_t *user;          /* page-aligned start of the registered pages */
	uint64_t len;           /* whole pages */
	uint8_t *twin;          /* page-aligned data-area copy */
	void *block;            /* data-area block holding twin */
	uint8_t *ptr;           /* what the program registered */
	size_t size;
	struct registered *next;
};
static struct registered *registered_list;
static pthread_mutex_t registered_lock = PTHREAD_MUTEX_INITIALIZER;

static struct registered *find_registered(const void *p, uint64_t len)
{
	for (struct registered *r = registered_list; r; r = r->next) {
		const uint8_t *c = p;

		if (c >= r->ptr && c < r->ptr + r->size && len <= (uint64_t)(r->ptr + r->size - c))
			return r;
	}
	return NULL;
}

void *rt_registered_twin(const void *p, uint64_t len)
{
	struct registered *r;
	void *t = NULL;

	if (!registered_list)
		return NULL;
	pthread_mutex_lock(&registered_lock);
	r = find_registered(p, len);
	if (r)
		t = r->twin + ((const uint8_t *)p - r->user);
	pthread_mutex_unlock(&registered_lock);
	return t;
}

cudaError_t rt_host_register(void *ptr, size_t size, unsigned int flags)
{
	const uint64_t page = 4096;
	struct registered *r;
	uint8_t *start, *end;
	void *where;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	if (!ptr || !size || (flags & ~(unsigned)(cudaHostRegisterPortable | cudaHostRegisterMapped |
						  cudaHostRegisterIoMemory | cudaHostRegisterReadOnly)))
		return cudaErrorInvalidValue;
	if (flags & cudaHostRegisterIoMemory) {
		rt_log_unsupported("host registration of I/O memory");
		return cudaErrorNotSupported;
	}
	if (dh_contains(ptr, 1))
		return cudaErrorHostMemoryAlreadyRegistered;
	start = (uint8_t *)((uintptr_t)ptr & ~(uintptr_t)(page - 1));
	end = (uint8_t *)(((uintptr_t)ptr + size + page - 1) & ~(uintptr_t)(page - 1));
	pthread_mutex_lock(&registered_lock);
	for (r = registered_list; r; r = r->next) {
		if (start < r->user + r->len && r->user < end) {
			pthread_mutex_unlock(&registered_lock);
			return cudaErrorHostMemoryAlreadyRegistered;
		}
	}
	/* after that test: registered pages are shared (the data area's) */
	switch (range_is_shared(start, end)) {
	case 0:
		break;
	case 1:
		log_warn("cudaHostRegister of %p (%zu bytes): shared memory (MAP_SHARED: a file, /dev/shm, or memory "
			 "shared with another process) is not supported by mearas: its pages cannot move into the "
			 "data area without ending the sharing; register private memory or use cudaHostAlloc",
			 ptr, size);
		pthread_mutex_unlock(&registered_lock);
		return cudaErrorNotSupported;
	default:
		log_warn("cudaHostRegister: /proc/self/maps cannot be read (%s), so shared memory cannot be told "
			 "apart: refused", strerror(errno));
		pthread_mutex_unlock(&registered_lock);
		return cudaErrorNotSupported;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto nomem;
	r->user = start;
	r->len = (uint64_t)(end - start);
	r->ptr = ptr;
	r->size = size;
	r->block = dh_alloc(r->len + page);
	if (!r->block) {
		log_warn("cudaHostRegister of %zu bytes does not fit the data area (%llu MiB): raise MEARAS_DATA_MB",
			 size, (unsigned long long)(rt.data_size >> 20));
		free(r);
		goto nomem;
	}
	r->twin = (uint8_t *)(((uintptr_t)r->block + page - 1) & ~(uintptr_t)(page - 1));
	copy_pages(r->twin, start, r->len);
	where = mmap(start, r->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, rt.memfd,
		     (off_t)(rt.memfd_off + (uint64_t)(r->twin - rt.region)));
	if (where == MAP_FAILED) {
		log_warn("cudaHostRegister: cannot remap %p: %s", ptr, strerror(errno));
		dh_free(r->block);
		free(r);
		pthread_mutex_unlock(&registered_lock);
		return cudaErrorInvalidValue;
	}
	r->next = registered_list;
	registered_list = r;
	pthread_mutex_unlock(&registered_lock);
	if (flags & cudaHostRegisterMapped)
		rt_host_mapped(r->block, r->len + page);
	return cudaSuccess;
nomem:
	pthread_mutex_unlock(&registered_lock);
	return cudaErrorMemoryAllocation;
}

cudaError_t rt_host_unregister(void *ptr)
{
	struct registered **pp;
	cudaError_t e = rt_ensure();

	if (e)
		return e;
	pthread_mutex_lock(&registered_lock);
	for (pp = &registered_list; *pp; pp = &(*pp)->next) {
		struct registered *r = *pp;

		if (r->ptr != ptr)
			continue;
		/* private pages again, with the bytes the twin holds now, filled
		 * aside and swapped in whole: the range never reads as anything
		 * else meanwhile. It shares pages with whatever the heap put
		 * beside the registered bytes (r itself, as likely as not). */
		uint8_t *copy = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (copy == MAP_FAILED) {
			pthread_mutex_unlock(&registered_lock);
			return cudaErrorMemoryAllocation;
		}
		copy_pages(copy, r->twin, r->len);
		if (mremap(copy, r->len, r->len, MREMAP_MAYMOVE | MREMAP_FIXED, r->user) == MAP_FAILED) {
			log_warn("cudaHostUnregister: cannot remap %p: %s", ptr, strerror(errno));
			munmap(copy, r->len);
			pthread_mutex_unlock(&registered_lock);
			return cudaErrorUnknown;
		}
		rt_host_unmapped(r->block);
		dh_free(r->block);
		*pp = r->next;
		free(r);
		pthread_mutex_unlock(&registered_lock);
		return cudaSuccess;
	}
	pthread_mutex_unlock(&registered_lock);
	return cudaErrorHostMemoryNotRegistered;
}
