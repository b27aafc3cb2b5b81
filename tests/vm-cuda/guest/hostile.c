// SPDX-License-Identifier: MIT
/*
 * A hostile guest process: claims a slot as the library does, then writes
 * crafted records, out-of-range ring indices and random bytes into its slot
 * and into the VM header, ringing the host's doorbell all along. mearasd
 * must survive it (checked from the host). Prints GUEST-PASS/FAIL lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mearas/kmod_uapi.h"
#include "mearas/vm_proto.h"

static int fd;

static void ring(void)
{
	struct mearas_doorbell db = { .peer_id = MEARAS_HOST_PEER_ID, .vector = MEARAS_VM_VEC_HOST };

	ioctl(fd, MEARAS_IOC_RING, &db);
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void scribble(void *p, size_t len, unsigned *seed)
{
	unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char)rand_r(seed);
}

int main(void)
{
	struct mearas_info info;
	struct mearas_vm_hdr *h;
	unsigned seed = 12345, nslots, k = 0;
	uint64_t slot_off, slot_size;
	uint32_t token = ((uint32_t)getpid() << 8) | 0x5a;
	uint8_t *base, *region;
	int ready = 0, dead = 0;

	fd = open("/dev/mearas0", O_RDWR);
	if (fd < 0 || ioctl(fd, MEARAS_IOC_INFO, &info)) {
		printf("GUEST-FAIL hostile-open: %s\n", strerror(errno));
		return 1;
	}
	base = mmap(NULL, info.shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		printf("GUEST-FAIL hostile-mmap: %s\n", strerror(errno));
		return 1;
	}
	h = (struct mearas_vm_hdr *)base;
	nslots = h->nslots;
	slot_off = h->slot_off;
	slot_size = h->slot_size;
	if (h->magic != MEARAS_VM_MAGIC || nslots == 0 || nslots > MEARAS_VM_MAX_SLOTS ||
	    slot_off + slot_size * nslots > info.shm_size) {
		printf("GUEST-FAIL hostile-header: no valid VM header\n");
		return 1;
	}
	for (k = 0; k < nslots; k++) {
		struct mearas_claim c = { .offset = offsetof(struct mearas_vm_hdr, slots) +
						    k * sizeof(struct mearas_vm_slot),
					  .expect = 0, .value = token, .db_peer = 0, .db_vector = MEARAS_VM_VEC_HOST };

		if (ioctl(fd, MEARAS_IOC_CLAIM, &c) == 0)
			break;
	}
	if (k == nslots) {
		printf("GUEST-FAIL hostile-claim: no free slot\n");
		return 1;
	}
	ring();
	for (int i = 0; i < 100 && !ready; i++) {
		nap_ms(50);
		ready = __atomic_load_n(&h->slots[k].ready, __ATOMIC_ACQUIRE) == token;
	}
	printf("GUEST-%s hostile-slot-ready\n", ready ? "PASS" : "FAIL");
	region = base + slot_off + slot_size * k;
	{
		const struct mearas_region_hdr *rh = (const struct mearas_region_hdr *)region;
		struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
								 MEARAS_ARENA_SIZE, MEARAS_MAX_THREADS);
		uint8_t *blk = region + 4096;
		struct mearas_ring_ctl *sq = (struct mearas_ring_ctl *)(blk + l.sq_ctl);
		struct mearas_sqe *sqes = (struct mearas_sqe *)(blk + l.sqes);
		uint32_t tail = sq->tail;

		/* crafted records: unknown op, bad completion slot, arena payload
		 * out of range, copies outside the data area, huge sizes */
		for (int i = 0; i < 64; i++) {
			struct mearas_sqe *e = &sqes[(tail + i) & (MEARAS_SQ_ENTRIES - 1)];

			scribble(e, sizeof(*e), &seed);
			e->op = (uint16_t)(i % 3 == 0 ? 9999 : i % MEARAS_OP_COUNT);
			e->cq = (uint16_t)(i % 2 ? 60000 : 1);
			e->flags = (uint16_t)(i & 7);
			e->payload_len = i % 4 == 0 ? 0xfffffff0u : (uint32_t)i;
			e->payload_off = 0xfffff000u;
			e->args.a[0] = ~0ull;
			e->args.a[1] = 1ull << 63;
			e->args.a[2] = ~0ull >> 1;
			e->args.a[3] = (uint64_t)(i % 5);
		}
		__atomic_store_n(&sq->tail, tail + 64, __ATOMIC_RELEASE);
		__atomic_or_fetch(&h->slots[k].kick, 1u, __ATOMIC_ACQ_REL);
		ring();
		nap_ms(300);
		/* indices out of range */
		__atomic_store_n(&sq->tail, sq->head + 100000, __ATOMIC_RELEASE);
		__atomic_or_fetch(&h->slots[k].kick, ~0u, __ATOMIC_ACQ_REL);
		ring();
		for (int i = 0; i < 60 && !dead; i++) {
			nap_ms(50);
			dead = __atomic_load_n(&rh->state, __ATOMIC_ACQUIRE) == MEARAS_BACKEND_DEAD;
		}
		printf("GUEST-%s hostile-slot-marked-dead\n", dead ? "PASS" : "FAIL");
	}
	/* random bytes over our slot and the whole VM header, claims of every
	 * slot with garbage, and a storm of doorbells */
	for (int round = 0; round < 20; round++) {
		scribble(region, 3u << 20, &seed);
		scribble(h, 4096, &seed);
		for (unsigned s = 0; s < MEARAS_VM_MAX_SLOTS; s++)
			h->slots[s].claim = (uint32_t)rand_r(&seed);
		for (int i = 0; i < 50; i++)
			ring();
		nap_ms(50);
	}
	/* odd doorbells and vectors, and bad ioctls */
	{
		struct mearas_doorbell db = { .peer_id = 0, .vector = 63 };
		struct mearas_claim c = { .offset = info.shm_size - 2 };

		ioctl(fd, MEARAS_IOC_RING, &db);
		printf("GUEST-%s hostile-bad-claim-refused\n",
		       ioctl(fd, MEARAS_IOC_CLAIM, &c) < 0 && errno == EINVAL ? "PASS" : "FAIL");
	}
	printf("GUEST-PASS hostile-done\n");
	return 0;
}
