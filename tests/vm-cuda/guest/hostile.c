// SPDX-License-Identifier: MIT
/*
 * A hostile guest process: claims a slot through the module as the library
 * does, then writes crafted records, out-of-range ring indices and random
 * bytes into its slot, kicks every vGPU bit and rings the host's doorbell
 * all along. mearasd must survive it (checked from the host). Before that,
 * what the module must refuse it: the VM header (every slot's claim and
 * kick words), another process's slot, the whole BAR, raw claims, writes to
 * its own slot's header, a second slot for the same process, its slot
 * after giving it back, and a slot claimed again before the host zeroed it
 * (the previous owner's bytes). Prints GUEST-PASS/FAIL lines
 * (tests/check.h), then the count; exit status 1 on a failed check.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h" /* tests/check.h, CHECK_PREFIX "GUEST-" (Makefile) */
#include "mearas/kmod_uapi.h"
#include "mearas/vm_region.h"

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

static void check(const char *name, int ok, const char *why)
{
	CHECK_NAMED(ok, name, "%s", why);
}

/* mmap of [off, off + len) of fd with prot must fail with EACCES */
static void refused(const char *name, int f, uint64_t off, size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, f, (off_t)off);
	char why[96];

	snprintf(why, sizeof(why), "%s", p != MAP_FAILED ? "mapped" : strerror(errno));
	check(name, p == MAP_FAILED && errno == EACCES, why);
	if (p != MAP_FAILED)
		munmap(p, len);
}

static sigjmp_buf fault_jmp;

static void on_fault(int sig)
{
	siglongjmp(fault_jmp, sig);
}

/* does reading (write = 0) or writing one byte at p raise SIGBUS/SIGSEGV? */
static int faults(volatile uint8_t *p, int write)
{
	struct sigaction sa = { .sa_handler = on_fault }, old_bus, old_segv;
	int sig;

	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	sig = sigsetjmp(fault_jmp, 1);
	if (!sig) {
		if (write)
			*p = 0x5a;
		else
			(void)*p;
	}
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return sig != 0;
}

/* Another process of the VM, with a slot of its own: it cannot map ours
 * (nor, without a claim, anything). Exit 0 when everything was refused. */
static int other_process(const struct mearas_vm_claim *ours)
{
	struct mearas_vm_claim c;
	int f = open("/dev/mearas0", O_RDWR), bad = 0;
	void *p;

	if (f < 0)
		return 2;
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, f, (off_t)ours->region_off);
	bad |= p != MAP_FAILED;
	if (ioctl(f, MEARAS_IOC_VM_CLAIM, &c))
		return 3;
	p = mmap(NULL, ours->region_size, PROT_READ, MAP_SHARED, f, (off_t)ours->region_off);
	bad |= p != MAP_FAILED;
	p = mmap(NULL, ours->out_size, PROT_READ, MAP_SHARED, f, (off_t)ours->out_off);
	bad |= p != MAP_FAILED;
	return bad;
}

#define PREV_BYTE 0xa5

/* Does any of n bytes at p hold the previous owner's PREV_BYTE? */
static int holds_prev(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == PREV_BYTE)
			return 1;
	return 0;
}

/*
 * A slot given back and claimed again at once, by a file of the same
 * process (the module takes the lowest free slot: the same one). Until
 * mearasd has stopped the previous owner's slot worker, zeroed the slot and
 * set it up for the new claim (ready == its token), the slot still holds
 * the previous owner's rings, data area and device output: the new claimant
 * must not map any of it before then, and must find none of it after.
 */
static void reclaimed_slot_scrubbed(void)
{
	struct mearas_vm_claim c1, c2;
	struct mearas_vm_state st;
	int f1 = open("/dev/mearas0", O_RDWR), f2 = open("/dev/mearas0", O_RDWR), ready = 0, mapped = 0, seen = 0;
	uint8_t *region, *out;
	char why[128];

	if (f1 < 0 || f2 < 0 || ioctl(f1, MEARAS_IOC_VM_CLAIM, &c1)) {
		CHECK_NAMED(0, "hostile-reclaim-setup", "%s", strerror(errno));
		return;
	}
	for (int i = 0; i < 200 && !ready; i++) {
		nap_ms(50);
		ready = !ioctl(f1, MEARAS_IOC_VM_STATE, &st) && st.ready == c1.token;
	}
	region = mmap(NULL, c1.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, f1, (off_t)c1.region_off);
	out = mmap(NULL, c1.out_size, PROT_READ | PROT_WRITE, MAP_SHARED, f1, (off_t)c1.out_off);
	if (!ready || region == MAP_FAILED || out == MAP_FAILED) {
		CHECK_NAMED(0, "hostile-reclaim-setup", "slot not set up or not mapped");
		return;
	}
	/* the previous owner's bytes: its last page of data and its output rings' bytes */
	memset(region + c1.region_size - 4096, PREV_BYTE, 4096);
	memset(out + 4096, PREV_BYTE, c1.out_size - 4096);
	munmap(region, c1.region_size);
	munmap(out, c1.out_size);
	if (ioctl(f1, MEARAS_IOC_VM_RELEASE) || ioctl(f2, MEARAS_IOC_VM_CLAIM, &c2) || c2.slot != c1.slot) {
		CHECK_NAMED(0, "hostile-reclaim-setup", "release and claim again: %s", strerror(errno));
		return;
	}
	/* at once, and until it is set up: what can the new claimant see? */
	for (int i = 0; i < 1000 && !mapped; i++) {
		region = mmap(NULL, c2.region_size, PROT_READ, MAP_SHARED, f2, (off_t)c2.region_off);
		out = mmap(NULL, c2.out_size, PROT_READ, MAP_SHARED, f2, (off_t)c2.out_off);
		mapped = region != MAP_FAILED && out != MAP_FAILED;
		if (region != MAP_FAILED) {
			seen |= holds_prev(region + c2.region_size - 4096, 4096);
			munmap(region, c2.region_size);
		}
		if (out != MAP_FAILED) {
			seen |= holds_prev(out + 4096, c2.out_size - 4096);
			munmap(out, c2.out_size);
		}
		if (!mapped)
			nap_ms(10);
	}
	ready = !ioctl(f2, MEARAS_IOC_VM_STATE, &st) && st.ready == c2.token;
	snprintf(why, sizeof(why), "%s", seen ? "the previous owner's bytes were readable" : "never mapped");
	check("hostile-reclaimed-slot-holds-nothing-of-the-previous-owner", !seen && mapped && ready, why);
	close(f1);
	close(f2);
}

int main(void)
{
	struct mearas_info info;
	struct mearas_vm_claim c;
	struct mearas_vm_state st;
	unsigned seed = 12345;
	uint8_t *region;
	int ready = 0, dead = 0, status;
	pid_t pid;

	fd = open("/dev/mearas0", O_RDWR);
	if (fd < 0 || ioctl(fd, MEARAS_IOC_INFO, &info)) {
		CHECK_NAMED(0, "hostile-open", "%s", strerror(errno));
		return check_done();
	}
	/* nothing is mappable before a claim, and never the VM header */
	refused("hostile-no-map-before-claim", fd, MEARAS_VM_OUT_OFF, 4096, PROT_READ);
	if (ioctl(fd, MEARAS_IOC_VM_CLAIM, &c)) {
		CHECK_NAMED(0, "hostile-claim", "%s", strerror(errno));
		return check_done();
	}
	for (int i = 0; i < 100 && !ready; i++) {
		nap_ms(50);
		ready = !ioctl(fd, MEARAS_IOC_VM_STATE, &st) && st.ready == c.token;
	}
	check("hostile-slot-ready", ready, "not set up");
	refused("hostile-vm-header-refused", fd, 0, 4096, PROT_READ);
	refused("hostile-whole-bar-refused", fd, 0, info.shm_size, PROT_READ | PROT_WRITE);
	refused("hostile-other-slot-refused", fd,
		c.region_off + (c.slot + 1 < c.nslots ? c.region_size : -c.region_size), 4096, PROT_READ);
	refused("hostile-other-output-refused", fd,
		c.out_off + (c.slot + 1 < c.nslots ? c.out_size : -c.out_size), 4096, PROT_READ);
	refused("hostile-past-slot-refused", fd, c.region_off, c.region_size + 4096, PROT_READ);
	{
		struct mearas_claim raw = { .offset = offsetof(struct mearas_vm_hdr, slots), .value = 1 };

		check("hostile-raw-claim-refused", ioctl(fd, MEARAS_IOC_CLAIM, &raw) < 0 && errno == EPERM,
		      "raw claim of the VM header accepted");
	}
	region = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)c.region_off);
	if (region == MAP_FAILED) {
		CHECK_NAMED(0, "hostile-mmap-own-slot", "%s", strerror(errno));
		return check_done();
	}
	check("hostile-own-header-readable", !faults(region, 0), "read faulted");
	check("hostile-own-header-read-only", faults(region + 8, 1), "write to the slot's header went through");
	check("hostile-own-rings-writable", !faults(region + 4096 + 64, 1), "write faulted");
	pid = fork();
	if (pid == 0)
		_exit(other_process(&c));
	waitpid(pid, &status, 0);
	check("hostile-other-process-cannot-map-our-slot", WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "another process mapped our slot");
	{
		const struct mearas_region_hdr *rh = (const struct mearas_region_hdr *)region;
		struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
								 MEARAS_ARENA_SIZE, MEARAS_MAX_THREADS);
		uint8_t *blk = region + 4096;
		struct mearas_ring_ctl *sq = (struct mearas_ring_ctl *)(blk + l.sq_ctl);
		struct mearas_sqe *sqes = (struct mearas_sqe *)(blk + l.sqes);
		uint32_t tail = sq->tail, all = ~0u, one = 1;

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
		ioctl(fd, MEARAS_IOC_VM_KICK, &one);
		nap_ms(300);
		/* indices out of range */
		__atomic_store_n(&sq->tail, sq->head + 100000, __ATOMIC_RELEASE);
		ioctl(fd, MEARAS_IOC_VM_KICK, &all);
		for (int i = 0; i < 60 && !dead; i++) {
			nap_ms(50);
			dead = __atomic_load_n(&rh->state, __ATOMIC_ACQUIRE) == MEARAS_BACKEND_DEAD;
		}
		check("hostile-slot-marked-dead", dead, "slot not marked dead");
	}
	/* random bytes over our slot (past its header), kicks of every bit and
	 * a storm of doorbells */
	for (int round = 0; round < 20; round++) {
		uint32_t bits = (uint32_t)rand_r(&seed);

		scribble(region + 4096, (3u << 20) - 4096, &seed);
		ioctl(fd, MEARAS_IOC_VM_KICK, &bits);
		for (int i = 0; i < 50; i++)
			ring();
		nap_ms(50);
	}
	/* odd doorbells and vectors, and bad ioctls */
	{
		struct mearas_doorbell db = { .peer_id = 0, .vector = 63 };
		struct mearas_claim bad = { .offset = info.shm_size - 2 };

		ioctl(fd, MEARAS_IOC_RING, &db);
		check("hostile-bad-claim-refused", ioctl(fd, MEARAS_IOC_CLAIM, &bad) < 0 && errno == EINVAL,
		      "accepted");
		check("hostile-second-claim-refused", ioctl(fd, MEARAS_IOC_VM_CLAIM, &c) < 0 && errno == EALREADY,
		      "a second slot for one file");
		/* nor through another file: one process cannot take every slot
		 * from the VM's other processes */
		{
			struct mearas_vm_claim c2;
			int f2 = open("/dev/mearas0", O_RDWR), r;

			r = ioctl(f2, MEARAS_IOC_VM_CLAIM, &c2);
			check("hostile-second-slot-per-process-refused", r < 0 && errno == EALREADY,
			      r ? strerror(errno) : "a second slot for one process");
			close(f2);
		}
	}
	/* given back: the slot is gone from this process (the next owner's) */
	check("hostile-release", ioctl(fd, MEARAS_IOC_VM_RELEASE) == 0, strerror(errno));
	check("hostile-slot-unmapped-after-release", faults(region + 4096, 0), "still readable");
	refused("hostile-no-map-after-release", fd, c.region_off, 4096, PROT_READ);
	reclaimed_slot_scrubbed();
	CHECK_NAMED(1, "hostile-done", " ");
	return check_done();
}
