/* SPDX-License-Identifier: MIT */
/*
 * vm_slot_cross_access SOCKET KERNELS.fatbin: as the VM's QEMU (trusted,
 * root: it maps the whole BAR), claim slot A and then slot B, put a pattern
 * in B's data area and B's device memory, then use slot A's rings to reach
 * B: a device-to-host copy from B's device pointer, and a kernel
 * (mearas_sim_add_u32 of the sim device) launched in A on B's data area and
 * on B's device memory. Each must be refused and B's bytes stay intact.
 * Exit 0: all refused and intact; 2: some reached B; 1: setup error.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "hostile.h"
#include "vm_peer.h"

#define PATTERN 0x5a
#define N 4096u

static struct vm_peer peer;
static struct mearas_vm_hdr *vh;
static struct hostile hs[2];

static void kick(struct hostile *h, unsigned v)
{
	unsigned k = (unsigned)(h - hs);

	__atomic_or_fetch(&vh->slots[k].kick, 1u << v, __ATOMIC_ACQ_REL);
	vm_peer_ring(&peer);
}

/* claim slot k for token as the guest's module would; wait for ready */
static int claim(uint8_t *base, unsigned k, uint32_t token)
{
	struct mearas_vm_slot *c = &vh->slots[k];
	uint32_t zero = 0;

	if (!__atomic_compare_exchange_n(&c->claim, &zero, token, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return fprintf(stderr, "slot %u is taken\n", k), -1;
	vm_peer_ring(&peer);
	for (int i = 0; i < 1000 && __atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) != token; i++)
		usleep(10000);
	if (__atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) != token)
		return fprintf(stderr, "slot %u was not set up\n", k), -1;
	hostile_attach(&hs[k], base + vh->slot_off + vh->slot_size * k);
	hs[k].kick_fn = kick;
	if (hs[k].hdr->state != MEARAS_BACKEND_READY)
		return fprintf(stderr, "slot %u is not served\n", k), -1;
	return 0;
}

static int run(struct hostile *h, unsigned op, uint64_t a0, uint64_t a1, uint64_t a2, const char *name)
{
	struct mearas_sqe e = hostile_sqe(op);

	e.args.a[0] = a0;
	e.args.a[1] = a1;
	e.args.a[2] = a2;
	if (name) {
		e.payload_len = (uint32_t)strlen(name) + 1;
		memcpy(e.inline_payload, name, e.payload_len);
	}
	return hostile_call(h, 0, &e, NULL);
}

/* mearas_sim_add_u32<<<1, 1>>>(p, n, 1) in slot h, then a sync: the first error */
static int add_u32(struct hostile *h, uint64_t p, uint32_t n)
{
	struct mearas_sqe e = hostile_sqe(MEARAS_OP_LAUNCH);
	uint32_t v = 1;
	int r;

	e.args.a[0] = 1;
	e.args.a[1] = 1 | (1ull << 32);
	e.args.a[2] = 1 | (1ull << 32);
	e.args.a[3] = 1 | (1ull << 32);
	e.payload_len = 16;
	memcpy(e.inline_payload, &p, 8);
	memcpy(e.inline_payload + 8, &n, 4);
	memcpy(e.inline_payload + 12, &v, 4);
	r = hostile_call(h, 0, &e, NULL);
	if (r)
		return r;
	return run(h, MEARAS_OP_CTX_SYNC, 0, 0, 0, NULL);
}

static int intact(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != PATTERN)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct hostile *a = &hs[0], *b = &hs[1];
	uint8_t *base, *fat;
	uint64_t dev_b, data_b;
	struct stat st;
	int fd, r, bad = 0;

	if (argc != 3)
		return fprintf(stderr, "usage: %s SOCKET KERNELS.fatbin\n", argv[0]), 1;
	if (vm_peer_connect(&peer, argv[1]) || peer.shm_fd < 0)
		return fprintf(stderr, "not served as the VM's QEMU\n"), 1;
	if (fstat(peer.shm_fd, &st))
		return perror("fstat"), 1;
	base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, peer.shm_fd, 0);
	if (base == MAP_FAILED)
		return perror("mmap"), 1;
	vh = (struct mearas_vm_hdr *)base;
	if (vh->magic != MEARAS_VM_MAGIC || vh->nslots < 2)
		return fprintf(stderr, "no VM header with 2 slots\n"), 1;
	/* A first: on main its worker registered the whole BAR for it */
	if (claim(base, 0, 0xa1) || claim(base, 1, 0xb2))
		return 1;

	/* B: a pattern in its data area and in its device memory */
	memset(b->data, PATTERN, 2 * N);
	dev_b = hostile_alloc(b, 0, N, &r);
	if (!dev_b || hostile_memcpy(b, 0, dev_b, 0, N, MEARAS_COPY_HTOD))
		return fprintf(stderr, "slot B setup failed (%d)\n", r), 1;
	data_b = vh->slots[1].region_addr + b->hdr->data_off;

	/* A: a kernel image of its own */
	fd = open(argv[2], O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return perror(argv[2]), 1;
	fat = a->data;
	if (read(fd, fat, (size_t)st.st_size) != st.st_size)
		return perror("read"), 1;
	close(fd);
	if (run(a, MEARAS_OP_MODULE_LOAD, 1, 0, (uint64_t)st.st_size, NULL) ||
	    run(a, MEARAS_OP_FUNC_GET, 1, 1, 0, "mearas_sim_add_u32"))
		return fprintf(stderr, "slot A: module load failed\n"), 1;
	memset(a->data + N, 0, N);

	r = hostile_memcpy(a, 0, N, dev_b, N, MEARAS_COPY_DTOH);
	printf("A copies B's device memory (%#llx) out: status %d\n", (unsigned long long)dev_b, r);
	if (!r || intact(a->data + N, N))
		bad = 1;
	r = add_u32(a, data_b, N / 4);
	printf("A's kernel on B's data area (%#llx): status %d\n", (unsigned long long)data_b, r);
	if (!r || r == -1000) /* -1000: no answer, slot A's worker died */
		bad = 1;
	r = add_u32(a, dev_b, N / 4);
	printf("A's kernel on B's device memory: status %d\n", r);
	if (!r || r == -1000)
		bad = 1;

	/* B's bytes, as B sees them */
	if (!intact(b->data, N)) {
		printf("B's data area was changed\n");
		bad = 1;
	}
	memset(b->data + N, 0, N);
	if (hostile_memcpy(b, 0, N, dev_b, N, MEARAS_COPY_DTOH) || !intact(b->data + N, N)) {
		printf("B's device memory was changed or lost\n");
		bad = 1;
	}
	printf(bad ? "slot A reached slot B\n" : "every access to slot B refused; B's bytes intact\n");
	return bad ? 2 : 0;
}
