// SPDX-License-Identifier: MIT
/*
 * VM transport: the guest kernel module's /dev/mearasN gives access to the
 * ivshmem BAR2 that mearasd serves (include/mearas/vm_region.h). The module
 * claims a client slot for us (given back if we die) and lets us map that
 * slot alone (its header read-only) and its output area: the VM header and
 * the other processes' slots are not ours to see. We wait until the host
 * has set the slot up and use its region like the process transport's.
 * Kick = MEARAS_IOC_VM_KICK (our vGPU bit, then the host's doorbell); wait =
 * the module's per-vector interrupt counter (MEARAS_IOC_WAIT) with the
 * need-wakeup flags of the rings, re-checking after every wakeup.
 * The slot is given back by the module when our file is released: at exit,
 * after our mappings are gone (or when a child forked without exec, which
 * shares the file, exits too). Not in a destructor: threads still running
 * during exit would fault on a slot no longer ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mearas/kmod_uapi.h"
#include "mearas/log.h"
#include "mearas/vm_output.h"
#include "mearas/vm_region.h"
#include "core.h"

#define CLAIM_TIMEOUT_MS 10000

static __thread uint64_t wake_seen;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static int ring_host(struct rt_transport *tp)
{
	struct mearas_doorbell db = { .peer_id = MEARAS_HOST_PEER_ID, .vector = MEARAS_VM_VEC_HOST };

	return ioctl(tp->dev_fd, MEARAS_IOC_RING, &db) ? -errno : 0;
}

/* Waits for an interrupt on vector (or the timeout): 0, 1 when the wait
 * timed out, -errno on a dead device. */
static int wait_vector(struct rt_transport *tp, unsigned vector, uint64_t *seen, int timeout_ms)
{
	struct mearas_wait w = { .vector = vector, .timeout_ms = (uint32_t)timeout_ms, .last_seen = *seen };
	int r = ioctl(tp->dev_fd, MEARAS_IOC_WAIT, &w) ? errno : 0;

	if (r == 0 || r == ETIMEDOUT || r == EINTR) {
		*seen = w.count;
		return r == ETIMEDOUT;
	}
	return -r;
}

/* The host's view through the module: 0, or -errno (ENODEV: device gone). */
static int vm_state(struct rt_transport *tp, struct mearas_vm_state *st)
{
	return ioctl(tp->dev_fd, MEARAS_IOC_VM_STATE, st) ? -errno : 0;
}

cudaError_t tpv_connect(struct rt_transport *tp, const char *dev, int *fd, uint64_t *region_off,
			uint64_t *region_size, uint64_t *region_addr, unsigned *nvgpus, unsigned *nthreads)
{
	struct mearas_info info;
	struct mearas_vm_claim c;
	struct mearas_vm_state st;
	uint64_t seen = 0, start, last_ring;

	tp->sock = -1;
	tp->out_fd = tp->err_fd = -1;
	tp->dev_fd = open(dev, O_RDWR | O_CLOEXEC);
	if (tp->dev_fd < 0) {
		log_err("cannot open %s: %s", dev, strerror(errno));
		return cudaErrorNoDevice;
	}
	if (ioctl(tp->dev_fd, MEARAS_IOC_INFO, &info)) {
		log_err("%s: not a mearas device: %s", dev, strerror(errno));
		return cudaErrorNoDevice;
	}
	if (!(info.flags & MEARAS_INFO_DOORBELL) || info.nr_vectors < MEARAS_VM_VECTORS) {
		log_err("%s: an ivshmem-doorbell device with %u vectors is needed (has %u): "
			"mearasd serves VMs as their ivshmem server", dev, MEARAS_VM_VECTORS, info.nr_vectors);
		return cudaErrorNoDevice;
	}
	if (vm_state(tp, &st)) {
		log_err("%s: no mearas VM header in the shared memory (is mearasd --vm serving this VM, "
			"and the module current?): %s", dev, strerror(errno));
		return cudaErrorNoDevice;
	}
	if (st.vm_state != MEARAS_BACKEND_READY) {
		log_err("%s: mearasd does not serve this VM (backend state %u)", dev, st.vm_state);
		return cudaErrorDevicesUnavailable;
	}
	/* the counter before we ask, so the host's answer is never missed */
	wait_vector(tp, MEARAS_VM_VEC_SLOT, &seen, 0);
	/* the module takes a free slot (and gives it back if we die), rings
	 * the host, and lets us map that slot alone */
	if (ioctl(tp->dev_fd, MEARAS_IOC_VM_CLAIM, &c)) {
		if (errno == EBUSY) {
			log_err("%s: all mearas slots of this VM are in use", dev);
			return cudaErrorDevicesUnavailable;
		}
		log_err("claiming a mearas slot: %s", strerror(errno));
		return cudaErrorNoDevice;
	}
	tp->vm_token = c.token;
	start = last_ring = now_ms();
	for (;;) {
		if (vm_state(tp, &st) || st.vm_state != MEARAS_BACKEND_READY ||
		    wait_vector(tp, MEARAS_VM_VEC_SLOT, &seen, 0) < 0) {
			log_err("%s: mearasd went away", dev);
			return cudaErrorDevicesUnavailable;
		}
		if (st.ready == c.token)
			break;
		if (now_ms() - start > CLAIM_TIMEOUT_MS) {
			log_err("%s: mearasd did not set up slot %u within %d s", dev, c.slot, CLAIM_TIMEOUT_MS / 1000);
			return cudaErrorDevicesUnavailable;
		}
		if (now_ms() - last_ring > 1000) {
			ring_host(tp);
			last_ring = now_ms();
		}
		wait_vector(tp, MEARAS_VM_VEC_SLOT, &seen, 100);
	}
	*fd = tp->dev_fd;
	*region_off = c.region_off;
	*region_size = c.region_size;
	*region_addr = c.region_addr;
	tp->vm_region = (const struct mearas_region_hdr *)MAP_FAILED;
	{
		/* our slot's header, to see the back end's state while waiting */
		void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, tp->dev_fd, (off_t)c.region_off);

		if (p == MAP_FAILED) {
			log_err("%s: mmap: %s", dev, strerror(errno));
			return cudaErrorNoDevice;
		}
		tp->vm_region = p;
	}
	tp->vm_out = mmap(NULL, sizeof(*tp->vm_out), PROT_READ | PROT_WRITE, MAP_SHARED, tp->dev_fd,
			  (off_t)c.out_off);
	if (tp->vm_out == MAP_FAILED) {
		log_err("%s: mmap of the output rings: %s", dev, strerror(errno));
		tp->vm_out = NULL;
		return cudaErrorNoDevice;
	}
	if (tp->vm_region->state != MEARAS_BACKEND_READY) {
		log_err("%s: mearasd could not set up a slot for this process (see mearasd's log)", dev);
		return cudaErrorDevicesUnavailable;
	}
	*nvgpus = tp->vm_region->nvgpus;
	*nthreads = tp->vm_region->nthreads;
	if (*nvgpus == 0 || *nvgpus > MEARAS_MAX_VGPUS || *nthreads == 0 || *nthreads > MEARAS_MAX_THREADS) {
		log_err("%s: malformed slot header", dev);
		return cudaErrorNoDevice;
	}
	log_debug("VM transport: slot %u of %u, token %#x", c.slot, c.nslots, c.token);
	return cudaSuccess;
}

void tpv_kick(struct rt_transport *tp, unsigned vgpu)
{
	uint32_t mask = 1u << vgpu;

	if (ioctl(tp->dev_fd, MEARAS_IOC_VM_KICK, &mask) && errno != ENODEV)
		log_warn("kick vGPU %u: %s", vgpu, strerror(errno));
}

static bool backend_alive(struct rt_transport *tp, struct mearas_vm_state *st)
{
	if (vm_state(tp, st) || st->vm_state != MEARAS_BACKEND_READY ||
	    tp->vm_region->state != MEARAS_BACKEND_READY) {
		log_err("mearasd stopped serving this process: outstanding and later CUDA calls fail");
		return false;
	}
	return true;
}

/* A guest's clock under emulation can jump: the heartbeat is judged by
 * waits that timed out (per thread), not by reading the clock. */
static __thread uint32_t beat_seen;
static __thread unsigned stale_waits;

static bool heartbeat_ok(uint32_t beat, bool timed_out)
{

	if (beat != beat_seen || !timed_out) {
		beat_seen = beat;
		stale_waits = 0;
		return true;
	}
	if (++stale_waits * 1000u < MEARAS_VM_DEAD_MS)
		return true;
	log_err("mearasd's VM worker stopped (no heartbeat during %u waits): outstanding and later CUDA calls fail",
		stale_waits);
	return false;
}

/* The caller announced NEED_WAKEUP on its ring before calling: an interrupt
 * after that moves the counter past wake_seen (read at our previous
 * wakeup), so it is never lost; an older one only costs a spurious return. */
bool tpv_wait(struct rt_transport *tp, unsigned slot, int timeout_ms)
{
	struct mearas_vm_state st;
	int r;

	(void)slot;
	if (!backend_alive(tp, &st))
		return false;
	if (timeout_ms == 0)
		return true;
	r = wait_vector(tp, MEARAS_VM_VEC_WAKE, &wake_seen, timeout_ms);
	if (r < 0) {
		log_err("the mearas device went away: outstanding and later CUDA calls fail");
		return false;
	}
	return backend_alive(tp, &st) && heartbeat_ok(st.heartbeat, r == 1 && timeout_ms >= 1000);
}

/* Device printf/assert output the host moved into our slot's rings at a
 * synchronizing call: to our stdout/stderr, like the process transport. */
void tpv_drain_output(struct rt_transport *tp)
{
	static const uint32_t sizes[2] = { MEARAS_VM_OUT_STDOUT, MEARAS_VM_OUT_STDERR };
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint32_t dropped_seen[2];
	FILE *to[2] = { stdout, stderr };
	char buf[16384];

	if (!tp->vm_out)
		return;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 2; i++) {
		struct mearas_vm_out_ring *r = &tp->vm_out->ring[i];
		const uint8_t *data = i ? tp->vm_out->err : tp->vm_out->out;
		uint32_t dropped = __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
		size_t n;

		while ((n = mearas_vm_out_get(r, data, sizes[i], buf, sizeof(buf))) > 0)
			fwrite(buf, 1, n, to[i]);
		if (dropped != dropped_seen[i]) {
			fprintf(stderr, "mearas: %u bytes of device output lost (the VM's output ring was full)\n",
				dropped - dropped_seen[i]);
			dropped_seen[i] = dropped;
		}
	}
	fflush(stdout);
	pthread_mutex_unlock(&lock);
}
