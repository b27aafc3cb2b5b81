// SPDX-License-Identifier: MIT
/*
 * A worker serves one client: handshake, region, pollers, teardown. It runs
 * in its own process (forked by mearasd per connection), so the device
 * state of one client is never shared with another and everything it held
 * is released when it exits.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mearas/fdpass.h"
#include "control/assembly.h"
#include "mearas/log.h"
#include "tenant.h"
#include "control/vgpustats.h"
#include "worker.h"

/* Each vGPU of a client gets its own 1 TiB device address window, so device
 * pointers of different vGPUs never collide (also across nodes). */
#define VA_WINDOW_BASE 0x100000000000ull
#define VA_WINDOW_SIZE 0x010000000000ull
/* The region is mapped here in the worker before the driver starts (so its
 * own address reservations avoid it), and the client maps it at the same
 * address when it can: then pinned host pointers are valid on the device. */
#define REGION_ADDR_HINT 0x600000000000ull

static int heap_map(void *ctx, uint64_t va, uint64_t size, void **cookie)
{
	struct vgpu *v = ctx;

	return v->ops->chunk_map(v->dev, va, size, cookie);
}

static void heap_unmap(void *ctx, uint64_t va, uint64_t size, void *cookie)
{
	struct vgpu *v = ctx;

	v->ops->chunk_unmap(v->dev, va, size, cookie);
}

/* Device memory counts against the quota of the client's identity (all its
 * workers on this vGPU ordinal, of the same assembly), not of this worker. */
static int heap_charge(void *ctx, uint64_t bytes)
{
	struct vgpu *v = ctx;
	static bool told;

	if (!tenant_charge_dev(v->w->tenant_slot, v->index, bytes, v->heap.quota))
		return 0;
	if (!told)
		log_warn("vGPU %u: allocation of %llu bytes refused: this user's clients hold its quota of "
			 "%llu MiB together", v->index, (unsigned long long)bytes,
			 (unsigned long long)(v->heap.quota >> 20));
	told = true;
	return -1;
}

static void heap_uncharge(void *ctx, uint64_t bytes)
{
	struct vgpu *v = ctx;

	tenant_uncharge_dev(v->w->tenant_slot, v->index, bytes);
}

static const struct vaheap_ops heap_ops = {
	.map = heap_map, .unmap = heap_unmap, .charge = heap_charge, .uncharge = heap_uncharge,
};

static void refuse(int sock, int status, const char *fmt, const char *arg)
{
	struct mearas_welcome wl = { .magic = MEARAS_WELCOME_MAGIC, .version = MEARAS_PROTO_VERSION,
				     .status = status };

	snprintf(wl.message, sizeof(wl.message), fmt, arg);
	log_warn("client refused: %s", wl.message);
	mearas_send_fds(sock, &wl, sizeof(wl), NULL, 0);
}

int worker_setup_vgpu(struct worker *w, unsigned i, int ndev, char *err, size_t errlen)
{
	const struct backend_config *cfg = w->cfg;
	struct vgpu *v = &w->vgpus[i];
	struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
							 MEARAS_ARENA_SIZE, w->nthreads);
	/* where worker_init_region put the block: our own arithmetic, never
	 * the region header, which a client (a guest process) can rewrite */
	uint8_t *blk = w->region + 4096 + l.size * i;
	/* filled here, then copied out: nothing is read back from the region */
	struct mearas_devinfo *info = &v->info;
	/* remote sessions start at the client's ordinal, VM slots at their own window */
	uint64_t base = VA_WINDOW_BASE + (uint64_t)(cfg->va_window_first + w->va_index0 + i) * VA_WINDOW_SIZE;
	uint64_t gran = 0, quota;
	bool remote = remote_vgpu_is_remote(&cfg->remote, i);
	int phys = cfg->gpu_map[i] >= 0 ? cfg->gpu_map[i] : remote ? 0 : (int)(i % (unsigned)ndev);
	int r;

	v->w = w;
	v->index = i;
	v->ops = cfg->dev;
	memset(info, 0, sizeof(*info));
	pthread_mutex_init(&v->cq_lock, NULL);
	pthread_mutex_init(&v->hf_lock, NULL);
	pthread_cond_init(&v->hf_cond, NULL);
	if (remote)
		r = remote_client_open(v, &cfg->remote.target[i], info, err, errlen);
	else
		r = v->ops->open(&v->dev, phys, base, VA_WINDOW_SIZE, info, &gran);
	if (r && remote)
		return r;
	if (r) {
		snprintf(err, errlen, "vGPU %u: cannot open %s device %d (error %d)", i, v->ops->name, phys, r);
		return r;
	}
	base = info->va_base ? info->va_base : base;
	quota = cfg->quota[i] ? cfg->quota[i] : info->total_mem;
	if (quota > info->total_mem)
		quota = info->total_mem;
	info->total_mem = quota;
	info->va_base = base;
	info->va_size = VA_WINDOW_SIZE;
	memcpy(blk + l.devinfo, info, sizeof(*info));
	vaheap_init(&v->heap, base, VA_WINDOW_SIZE - MEARAS_GLOBALS_RESERVE, gran, quota, &heap_ops, v);
	mearas_vgpu_rings_at(&v->rings, blk, &l, MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES, MEARAS_ARENA_SIZE);
	mearas_sqc_init(&v->sq, &v->rings);
	for (unsigned t = 0; t < w->nthreads; t++)
		mearas_cqp_init(&v->cq[t], &v->rings, t);
	v->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (v->kick_fd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		return cudaErrorMemoryAllocation;
	}
	if (!remote)
		log_info("vGPU %u -> %s device %d (%s), quota %llu MiB", i, v->ops->name, phys, info->name,
			 (unsigned long long)(quota >> 20));
	return 0;
}

static int build_region(struct worker *w, char *err, size_t errlen)
{
	struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
							 MEARAS_ARENA_SIZE, w->nthreads);
	uint64_t off = 4096, data_off;

	/* room for the most vGPUs, whatever this client has (unused pages cost
	 * nothing): the data area then sits at the same address in every
	 * worker, so a remote node's copy of it is where the client's pointers
	 * to mapped host memory point */
	data_off = mearas_align_up(off + l.size * MEARAS_MAX_VGPUS, 2u << 20);
	w->region_size = data_off + w->data_size;
	w->memfd = memfd_create("mearas-region", MFD_CLOEXEC);
	if (w->memfd < 0 || ftruncate(w->memfd, (off_t)w->region_size)) {
		snprintf(err, errlen, "shared region of %llu bytes: %s",
			 (unsigned long long)w->region_size, strerror(errno));
		return -1;
	}
	w->region = mmap((void *)REGION_ADDR_HINT, w->region_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED_NOREPLACE, w->memfd, 0);
	if (w->region == MAP_FAILED)
		w->region = mmap(NULL, w->region_size, PROT_READ | PROT_WRITE, MAP_SHARED, w->memfd, 0);
	if (w->region == MAP_FAILED) {
		snprintf(err, errlen, "mmap region: %s", strerror(errno));
		return -1;
	}
	worker_init_region(w, data_off);
	return 0;
}

void worker_init_region(struct worker *w, uint64_t data_off)
{
	struct mearas_vgpu_layout l = mearas_vgpu_layout(MEARAS_SQ_ENTRIES, MEARAS_CQ_ENTRIES,
							 MEARAS_ARENA_SIZE, w->nthreads);
	struct mearas_region_hdr *hdr = (struct mearas_region_hdr *)w->region;
	uint64_t off = 4096;

	hdr->magic = MEARAS_REGION_MAGIC;
	hdr->version = MEARAS_PROTO_VERSION;
	hdr->hdr_size = sizeof(*hdr);
	hdr->region_size = w->region_size;
	hdr->nvgpus = w->nvgpus;
	hdr->nthreads = w->nthreads;
	hdr->sq_entries = MEARAS_SQ_ENTRIES;
	hdr->cq_entries = MEARAS_CQ_ENTRIES;
	hdr->arena_size = MEARAS_ARENA_SIZE;
	hdr->data_off = data_off;
	hdr->data_size = w->data_size;
	hdr->vgpu_size = l.size;
	for (unsigned i = 0; i < w->nvgpus; i++)
		hdr->vgpu_off[i] = off + l.size * i;
	w->data = w->region + data_off;
}

static void *watch_stop(struct worker *w)
{
	struct pollfd p = { .fd = w->sock, .events = POLLIN | POLLRDHUP };

	while (!w->broken && !w->timed_out) {
		int r = poll(&p, 1, 200);

		vstats_publish(w);
		if (w->cfg->kernel_timeout_ms && watchdog_pollers_stuck(w))
			break;
		if (r > 0) {
			char c;

			/* the client never writes after the hello: any event is its end */
			if ((p.revents & (POLLHUP | POLLRDHUP | POLLERR)) ||
			    recv(w->sock, &c, 1, MSG_DONTWAIT) <= 0)
				break;
		}
	}
	return NULL;
}

int worker_serve(const struct backend_config *cfg, int sock)
{
	return worker_serve_client(cfg, sock, NULL, 0);
}

int worker_serve_client(const struct backend_config *cfg, int sock, const struct tenant_peer *peer,
			unsigned slot)
{
	static const struct tenant_id internal = { .kind = TENANT_NONE };
	const struct tenant_id *who = peer ? &peer->id : &internal;
	bool privileged = !peer || tenant_privileged(who);
	struct mearas_hello h;
	struct worker *w;
	char err[256], label[48];
	int fds[3 + MEARAS_MAX_VGPUS + MEARAS_MAX_THREADS], nfds = 0, got = 0, r, ndev;
	unsigned local;
	struct mearas_welcome wl = { .magic = MEARAS_WELCOME_MAGIC, .version = MEARAS_PROTO_VERSION };
	struct backend_config client_cfg; /* this client's: its assembly's GPUs and quotas */

	r = mearas_recv_fds(sock, &h, sizeof(h), fds, 0, &got, 5000);
	if (r) {
		log_warn("client sent no hello: %s", strerror(-r));
		return 1;
	}
	if (h.magic != MEARAS_HELLO_MAGIC) {
		refuse(sock, cudaErrorInvalidValue, "%s", "not a mearas client (bad magic)");
		return 1;
	}
	if (h.version != MEARAS_PROTO_VERSION) {
		char v[32];

		snprintf(v, sizeof(v), "%u", h.version);
		refuse(sock, cudaErrorInsufficientDriver, "client protocol version %s, mearasd speaks 1", v);
		return 1;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return 1;
	client_cfg = *cfg;
	w->cfg = &client_cfg;
	w->sock = sock;
	w->nvgpus = h.nvgpus ? h.nvgpus : cfg->vgpus_default;
	h.assembly[sizeof(h.assembly) - 1] = 0;
	if (h.assembly[0] && assembly_apply(h.assembly, who, privileged, h.nvgpus, &client_cfg, &w->nvgpus, err,
					    sizeof(err))) {
		refuse(sock, cudaErrorNoDevice, "%s", err);
		return 1;
	}
	w->nthreads = MEARAS_MAX_THREADS;
	w->data_size = h.data_size ? h.data_size : cfg->data_default;
	w->data_size = mearas_align_up(w->data_size, 2u << 20);
	if (w->nvgpus > MEARAS_MAX_VGPUS) {
		refuse(sock, cudaErrorInvalidValue, "%s", "too many vGPUs asked for (at most 16)");
		return 1;
	}
	if (w->data_size > cfg->data_max || w->data_size < (8u << 20)) {
		refuse(sock, cudaErrorInvalidValue, "%s", "data area size out of range (MEARAS_DATA_MB)");
		return 1;
	}
	/* the identity's data areas and device memory, all its workers together */
	if (tenant_worker_hello(slot, h.assembly, w->data_size, err, sizeof(err))) {
		refuse(sock, cudaErrorMemoryAllocation, "%s", err);
		return 1;
	}
	w->tenant_slot = slot;
	if (build_region(w, err, sizeof(err))) {
		refuse(sock, cudaErrorMemoryAllocation, "%s", err);
		return 1;
	}
	if (worker_capture_output(w, err, sizeof(err))) {
		refuse(sock, cudaErrorMemoryAllocation, "%s", err);
		return 1;
	}
	for (local = 0; local < w->nvgpus && remote_vgpu_is_remote(&cfg->remote, local); local++)
		;
	if (local < w->nvgpus && cfg->dev->init(err, sizeof(err))) {
		refuse(sock, cudaErrorNoDevice, "device initialization failed: %s", err);
		return 1;
	}
	ndev = local < w->nvgpus ? cfg->dev->count() : 1;
	if (ndev <= 0) {
		refuse(sock, cudaErrorNoDevice, "%s", "no GPU on this node");
		return 1;
	}
	for (unsigned i = 0; i < w->nvgpus; i++) {
		r = worker_setup_vgpu(w, i, ndev, err, sizeof(err));
		if (r) {
			refuse(sock, r, "%s", err);
			return 1;
		}
	}
	/* the data area is registered once (portable to every context) so pinned
	 * copies are DMA from it with no staging */
	r = local < w->nvgpus ? w->vgpus[local].ops->host_register(w->vgpus[local].dev, w->data, w->data_size) : 0;
	if (r) {
		refuse(sock, r, "%s", "cannot register the data area with the device");
		return 1;
	}
	for (unsigned t = 0; t < w->nthreads; t++) {
		w->wake_fds[t] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w->wake_fds[t] < 0) {
			refuse(sock, cudaErrorMemoryAllocation, "%s", "out of eventfds");
			return 1;
		}
	}
	((struct mearas_region_hdr *)w->region)->state = MEARAS_BACKEND_READY;
	fds[nfds++] = w->memfd;
	for (unsigned i = 0; i < w->nvgpus; i++)
		fds[nfds++] = w->vgpus[i].kick_fd;
	for (unsigned t = 0; t < w->nthreads; t++)
		fds[nfds++] = w->wake_fds[t];
	fds[nfds++] = w->out_fd;
	fds[nfds++] = w->err_fd;
	wl.region_addr = (uint64_t)(uintptr_t)w->region;
	wl.region_size = w->region_size;
	wl.nvgpus = w->nvgpus;
	wl.nthreads = w->nthreads;
	r = mearas_send_fds(sock, &wl, sizeof(wl), fds, nfds);
	if (r) {
		log_warn("client vanished during handshake: %s", strerror(-r));
		return 1;
	}
	/* the hello's pid is the client's word; the kernel's is logged */
	if (peer)
		snprintf(label, sizeof(label), "uid %u pid %d", peer->id.uid, peer->pid);
	else
		snprintf(label, sizeof(label), "pid %d", h.pid);
	log_info("client %s: %u vGPU(s), data area %llu MiB%s%s", label, w->nvgpus,
		 (unsigned long long)(w->data_size >> 20), h.assembly[0] ? ", assembly " : "",
		 h.assembly[0] ? h.assembly : "");
	snprintf(w->tenant, sizeof(w->tenant), "client pid %d%s%.32s", peer ? peer->pid : h.pid,
		 h.assembly[0] ? " of assembly " : "", h.assembly);
	vstats_claim(h.assembly, w->nvgpus);
	if (watchdog_arm(w)) {
		log_err("%s: no memory for the GPU time limit: client not served", w->tenant);
		return 1;
	}
	for (unsigned i = 0; i < w->nvgpus; i++)
		pthread_create(&w->vgpus[i].thread, NULL, w->vgpus[i].remote ? remote_client_main : poller_main,
			       &w->vgpus[i]);
	watch_stop(w);
	vstats_release();
	if (w->timed_out) {
		/* a poller may be stuck in the driver behind the kernel: no join */
		watchdog_teardown(w);
		return 3;
	}
	w->stop = 1;
	for (unsigned i = 0; i < w->nvgpus; i++)
		pthread_join(w->vgpus[i].thread, NULL);
	for (unsigned i = 0; i < w->nvgpus; i++) {
		struct vgpu *v = &w->vgpus[i];

		log_info("client %s vGPU %u: %llu records served%s", label, i,
			 (unsigned long long)v->records, w->broken ? " (client misbehaved)" : "");
	}
	/* The process exits right after: the driver frees the client's contexts,
	 * memory and registrations with it; the model's memory goes with the process. */
	return w->broken ? 2 : 0;
}
