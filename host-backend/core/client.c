// SPDX-License-Identifier: MIT
/*
 * A worker serves one client, a CUDA process: handshake, region, its vGPUs'
 * threads, teardown. It runs in its own process (forked by mearasd per
 * connection), so the device state of one client is never shared with
 * another and everything it held is released when it exits.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "control/assembly.h"
#include "control/attached.h"
#include "control/vgpustats.h"
#include "engine.h"
#include "exec.h"
#include "fatal.h"
#include "mearas/fdpass.h"
#include "mearas/log.h"
#include "output.h"
#include "tenant.h"
#include "watchdog.h"
#include "worker.h"

static void refuse(int sock, int status, const char *fmt, const char *arg)
{
	struct mearas_welcome wl = { .magic = MEARAS_WELCOME_MAGIC, .version = MEARAS_PROTO_VERSION,
				     .status = status };

	snprintf(wl.message, sizeof(wl.message), fmt, arg);
	log_warn("client refused: %s", wl.message);
	mearas_send_fds(sock, &wl, sizeof(wl), NULL, 0);
}

/* What the vGPU's thread keeps in its own fields, into the shared counters. */
static void publish_vgpu(struct vgpu *v)
{
	struct vstat_vgpu *s = vstats_vgpu(v->index);

	vstats_publish(v->index, __atomic_load_n(&v->records, __ATOMIC_RELAXED));
	if (!s)
		return;
	if (v->engine->local) {
		vstat_set(&s->mem_used, __atomic_load_n(&v->heap.used, __ATOMIC_RELAXED));
		vstat_set(&s->mem_quota, v->heap.quota);
	}
	if (v->engine->publish)
		v->engine->publish(v, s);
}

void worker_stats_publish(struct worker *w)
{
	for (unsigned v = 0; v < w->nvgpus; v++)
		publish_vgpu(&w->vgpus[v]);
}

void worker_stats_claim(struct worker *w, const char *assembly, const char *owner, unsigned owner_slot)
{
	vstats_claim(assembly, owner, owner_slot, w->nvgpus);
	for (unsigned i = 0; i < w->nvgpus; i++) {
		struct vgpu *v = &w->vgpus[i];
		struct vstat_vgpu *s = vstats_vgpu(i);

		v->stats = s;
		if (!s)
			continue;
		s->remote = !v->engine->local;
		s->gpu = v->engine->local ? v->phys : w->cfg->remote.target[i].gpu;
		if (!v->engine->local)
			snprintf(s->peer, sizeof(s->peer), "%s:%u", w->cfg->remote.target[i].host,
				 w->cfg->remote.target[i].port);
	}
}

/* The shared counters of each vGPU: labels, before the vGPUs' threads start. */
static void claim_stats(struct worker *w, const struct tenant_peer *peer, unsigned slot, const char *assembly)
{
	char owner[VSTAT_OWNER];

	if (!peer)
		return; /* only clients that mearasd's main process sees end are counted */
	if (peer->id.kind == TENANT_VM)
		snprintf(owner, sizeof(owner), "vm:%.*s", (int)sizeof(peer->id.vm), peer->id.vm);
	else
		snprintf(owner, sizeof(owner), "uid:%u", peer->id.uid);
	worker_stats_claim(w, assembly, owner, slot);
}

static void *watch_stop(struct worker *w)
{
	struct pollfd p = { .fd = w->sock, .events = POLLIN | POLLRDHUP };

	while (!w->broken && !w->timed_out) {
		int r = poll(&p, 1, 200);

		worker_stats_publish(w);
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

	/* a worker of the remote node's session names its peer itself (serve_worker.c) */
	if (peer) {
		char dying[96];

		snprintf(dying, sizeof(dying), "worker of client uid %u pid %d", peer->id.uid, peer->pid);
		fatal_log_install(dying);
	}
	r = mearas_recv_fds(sock, &h, sizeof(h), fds, 0, &got, 5000);
	if (r == -EPIPE) {
		/* closed with nothing sent: e.g. another mearasd checking whether
		 * this one is alive (mearas_socket_live) */
		log_debug("client closed the connection before its hello");
		return 1;
	}
	if (r) {
		log_warn("client sent no hello: %s", strerror(-r));
		return 1;
	}
	if (h.magic != MEARAS_HELLO_MAGIC) {
		refuse(sock, cudaErrorInvalidValue, "%s", "not a mearas client (bad magic)");
		return 1;
	}
	if (h.version != MEARAS_PROTO_VERSION) {
		char v[96];

		snprintf(v, sizeof(v), "%u with record layout %06x; mearasd speaks %u with %06x", h.version & 0xff,
			 h.version >> 8, MEARAS_PROTO_VERSION & 0xff, MEARAS_PROTO_VERSION >> 8);
		refuse(sock, cudaErrorInsufficientDriver,
		       "client protocol %s (the front end and mearasd come from different builds)", v);
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
	if (worker_build_region(w, err, sizeof(err))) {
		refuse(sock, cudaErrorMemoryAllocation, "%s", err);
		return 1;
	}
	if (worker_capture_output(w, err, sizeof(err))) {
		refuse(sock, cudaErrorMemoryAllocation, "%s", err);
		return 1;
	}
	/* the first local vGPU of this client: its assembly's placement
	 * (client_cfg), not the daemon's --remote list, says which are remote */
	for (local = 0; local < w->nvgpus && remote_vgpu_is_remote(&client_cfg.remote, local); local++)
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
	claim_stats(w, peer, slot, h.assembly);
	attached_claim(h.assembly, peer ? peer->pid : h.pid, "");
	if (watchdog_arm(w)) {
		log_err("%s: no memory for the GPU time limit: client not served", w->tenant);
		return 1;
	}
	for (unsigned i = 0; i < w->nvgpus; i++)
		pthread_create(&w->vgpus[i].thread, NULL, w->vgpus[i].engine->thread_main, &w->vgpus[i]);
	watch_stop(w);
	if (w->timed_out) {
		/* a poller may be stuck in the driver behind the kernel: no join */
		watchdog_teardown(w);
		return 3;
	}
	w->stop = 1;
	for (unsigned i = 0; i < w->nvgpus; i++)
		pthread_join(w->vgpus[i].thread, NULL);
	worker_stats_publish(w);
	vstats_release();
	attached_release();
	for (unsigned i = 0; i < w->nvgpus; i++) {
		struct vgpu *v = &w->vgpus[i];

		log_info("client %s vGPU %u: %llu records served%s", label, i,
			 (unsigned long long)v->records, w->broken ? " (client misbehaved)" : "");
		vgpu_log_sync_ops(v, label);
	}
	/* The process exits right after: the driver frees the client's contexts,
	 * memory and registrations with it; the model's memory goes with the
	 * process. A remote vGPU's link is ended by its engine, so the serving
	 * node sees it close rather than break. */
	for (unsigned i = 0; i < w->nvgpus; i++)
		if (!w->vgpus[i].engine->local)
			w->vgpus[i].engine->close(&w->vgpus[i]);
	return w->broken ? 2 : 0;
}
