// SPDX-License-Identifier: MIT
/*
 * A remote vGPU on the serving node (serve.h): its OPEN message forks a
 * worker process exactly like a local client's (core/client.c's
 * worker_serve: one vGPU, the GPU and VA window the forwarder asked for),
 * and this process then acts as that worker's guest: the link thread
 * writes received records into the worker's submission ring (session.c),
 * and the session thread, here, reaps the worker's completions and answers
 * the forwarder's REAP calls. The worker exits when the link closes (its
 * socket closes, and it is killed with the session thread), which frees
 * everything the remote vGPU held.
 */
#include <driver_types.h> /* cudaError_t values */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/client.h"
#include "core/config.h"
#include "core/fatal.h"
#include "mearas/clock.h"
#include "mearas/fdpass.h"
#include "mearas/log.h"
#include "mearas/ring.h"
#include "remote_link.h"
#include "serve.h"
#include "session.h"

#define CHILD_HANDSHAKE_MS 60000

/* ---- the worker process ---- */

static int start_worker(struct remote_session *s, char *msg, size_t msglen)
{
	struct backend_config child = *serve_cfg;
	int sv[2], fds[4 + MEARAS_MAX_THREADS], nfds = 0;
	struct mearas_hello hello = { .magic = MEARAS_HELLO_MAGIC, .version = MEARAS_PROTO_VERSION, .nvgpus = 1,
				      .data_size = s->open.data_size, .pid = (int32_t)getpid() };
	struct mearas_welcome wl;
	int r;

	if (s->open.gpu < 0 || s->open.va_window >= 4096) {
		snprintf(msg, msglen, "bad GPU %d or VA window %u", s->open.gpu, s->open.va_window);
		return cudaErrorInvalidValue;
	}
	child.gpu_map[0] = s->open.gpu;
	if (remote_spin_us(&child.remote, child.spin_us))
		child.spin_us = remote_spin_us(&child.remote, child.spin_us);
	child.va_window_first = s->open.va_window;
	child.data_va = s->open.data_va;
	child.serves_remote = true;
	if (s->open.quota && (!child.quota[0] || s->open.quota < child.quota[0]))
		child.quota[0] = s->open.quota;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		snprintf(msg, msglen, "socketpair: %s", strerror(errno));
		return cudaErrorMemoryAllocation;
	}
	s->child = fork();
	if (s->child == 0) {
		/* the worker: tied to this session thread, nothing else of ours kept */
		char dying[160];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		snprintf(dying, sizeof(dying), "worker of the remote vGPU of %s", mearas_link_conn_peer(s->conn));
		fatal_log_install(dying);
		if (dup2(sv[1], 3) < 0)
			_exit(1);
		close_range(4, ~0u, 0);
		_exit(worker_serve(&child, 3));
	}
	close(sv[1]);
	s->sock = sv[0];
	if (s->child < 0) {
		snprintf(msg, msglen, "fork: %s", strerror(errno));
		return cudaErrorMemoryAllocation;
	}
	r = mearas_send_fds(s->sock, &hello, sizeof(hello), NULL, 0);
	if (!r)
		r = mearas_recv_fds(s->sock, &wl, sizeof(wl), fds, (int)(sizeof(fds) / sizeof(fds[0])), &nfds,
				    CHILD_HANDSHAKE_MS);
	if (r) {
		snprintf(msg, msglen, "remote worker did not answer: %s", strerror(-r));
		return cudaErrorDevicesUnavailable;
	}
	if (wl.status) {
		wl.message[sizeof(wl.message) - 1] = 0;
		snprintf(msg, msglen, "%s", wl.message);
		return wl.status;
	}
	if (wl.nvgpus != 1 || wl.nthreads > MEARAS_MAX_THREADS || nfds != 4 + (int)wl.nthreads) {
		snprintf(msg, msglen, "remote worker handshake malformed");
		return cudaErrorDevicesUnavailable;
	}
	s->region = mmap(NULL, wl.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	close(fds[0]);
	if (s->region == MAP_FAILED) {
		s->region = NULL;
		snprintf(msg, msglen, "mmap: %s", strerror(errno));
		return cudaErrorMemoryAllocation;
	}
	s->region_size = wl.region_size;
	s->nthreads = wl.nthreads;
	s->kick_fd = fds[1];
	for (unsigned t = 0; t < s->nthreads; t++)
		s->wake_fds[t] = fds[2 + t];
	s->out_fd = fds[2 + s->nthreads];
	s->err_fd = fds[3 + s->nthreads];
	remote_session_map(s, s->region, wl.region_addr);
	return 0;
}

/* ---- the session thread ---- */

/* Sends the REAP replies the queue fills. rx (the link's receive thread)
 * sends only small replies, and only while its socket has taken all sent
 * before (so the send does not wait on the peer); anything else goes to
 * the session thread (handed over). */
static void try_reply(struct remote_session *s, bool rx)
{
	for (;;) {
		struct reply_build r;
		uint64_t seq;
		bool any;
		int rc;

		pthread_mutex_lock(&s->qlock);
		if (rx && s->nreap && s->qlen &&
		    (!remote_session_reply_small(s) || !mearas_link_conn_tx_clear(s->conn))) {
			pthread_mutex_unlock(&s->qlock);
			if (rx_serve_hand_over(&s->rx))
				remote_session_notify(s);
			break;
		}
		any = remote_session_next_reply(s, &seq, &r);
		pthread_mutex_unlock(&s->qlock);
		if (!any)
			break;
		/* its device-to-host bulk goes first, over the data connections */
		rc = 0;
		for (int i = 0; !rc && i < r.nbulk; i++)
			rc = mearas_link_conn_bulk(s->conn, r.bulk[i].off, s->data + r.bulk[i].off, r.bulk[i].len);
		if (!rc)
			rc = mearas_link_replyv(s->conn, seq, r.iov, r.n);
		if (rx)
			s->replies_rx++;
		else
			s->replies_thread++;
		if (rc)
			log_warn("remote session %s: reply: %s", mearas_link_conn_peer(s->conn),
				 mearas_link_strerror(rc));
	}
}

/* A completion waits in a worker ring (and the queue has room for it), or a
 * reply can go out (unlocked reads: a hint). */
static bool harvest_ready(struct remote_session *s)
{
	for (unsigned slot = 0; slot < s->nthreads && !remote_session_queue_over(s); slot++)
		if (mearas_cqc_ready(&s->cq[slot]))
			return true;
	return __atomic_load_n(&s->nreap, __ATOMIC_RELAXED) && __atomic_load_n(&s->qlen, __ATOMIC_RELAXED);
}

void serve_rx_idle(struct remote_session *s, bool spinning)
{
	if (!spinning) {
		/* it is about to wait for the link: the session thread takes over */
		if (rx_serve_stop(&s->rx))
			remote_session_notify(s);
		return;
	}
	if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) != 1 || __atomic_load_n(&s->closing, __ATOMIC_ACQUIRE) ||
	    !rx_serve_pass(&s->rx) || pthread_mutex_trylock(&s->harvest_lock))
		return;
	/* most passes find nothing: no scan of the rings, no queue lock then */
	if (s->held.n || harvest_ready(s)) {
		if (!remote_session_queue_over(s))
			remote_session_collect(s, &s->held, &s->fresh);
		try_reply(s, true);
	}
	pthread_mutex_unlock(&s->harvest_lock);
}

/* Until a while after the last record or completion, watch the rings
 * instead of sleeping until the worker's eventfd write wakes this thread:
 * a synchronous call's next record comes one round trip after its reply. */
static void harvest_spin(struct remote_session *s)
{
	uint64_t spin_ns = (uint64_t)remote_spin_us(&serve_cfg->remote, serve_cfg->spin_us) * 1000ull;

	if (!spin_ns)
		return;
	while (!harvest_ready(s) && !__atomic_load_n(&s->closing, __ATOMIC_ACQUIRE) && !rx_serve_now(&s->rx) &&
	       mearas_mono_ns() - __atomic_load_n(&s->last_active_ns, __ATOMIC_RELAXED) < spin_ns)
		mearas_cpu_relax();
}

/* Before sleeping: ask the worker to write the slots' eventfds on its next
 * completion (false, no sleep, when one came meanwhile). While this thread
 * is awake the worker writes none: no system call per completion. */
static bool cq_prepare_sleep(struct remote_session *s)
{
	bool ok = true;

	for (unsigned slot = 0; slot < s->nthreads; slot++)
		ok = mearas_ring_prepare_sleep(s->cq[slot].ctl) && ok;
	return ok;
}

static void cq_end_sleep(struct remote_session *s)
{
	for (unsigned slot = 0; slot < s->nthreads; slot++)
		mearas_ring_end_sleep(s->cq[slot].ctl);
}

/* Drains the eventfds poll found readable; true when the worker is gone. */
static bool after_poll(struct remote_session *s, struct pollfd *p, unsigned np)
{
	for (unsigned i = 0; i + 1 < np; i++) {
		uint64_t cnt;

		if ((p[i].revents & POLLIN) && read(p[i].fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
			log_warn("remote session: eventfd: %s", strerror(errno));
	}
	/* the worker never writes after its welcome: any event is its end */
	return p[np - 1].fd >= 0 && p[np - 1].revents;
}

/* The receive thread serves: this thread sleeps until it stops, hands a
 * reply over, the link closes or the worker ends (then true), and looks
 * every RX_SERVE_CHECK_MS whether it still passes over the rings. */
static bool wait_rx(struct remote_session *s)
{
	struct pollfd q[2] = { { .fd = s->notify_fd, .events = POLLIN },
			       { .fd = __atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) == 1 ? s->sock : -1,
				 .events = POLLIN | POLLRDHUP } };
	bool gone = false;

	__atomic_store_n(&s->sleeping, 1, __ATOMIC_SEQ_CST);
	if (rx_serve_now(&s->rx) && !__atomic_load_n(&s->closing, __ATOMIC_ACQUIRE))
		gone = poll(q, 2, RX_SERVE_CHECK_MS) > 0 && after_poll(s, q, 2);
	__atomic_store_n(&s->sleeping, 0, __ATOMIC_RELAXED);
	return gone;
}

/*
 * The worker posts completions to one ring per thread slot; their order
 * across slots is lost when read slot by slot. A completion read in one
 * pass goes out only after the next full pass, whose device-to-host data
 * goes out first: any data posted before that completion has been seen by
 * then, so the client never gets a completion before bytes it may read.
 * While the link's receive thread spins it makes these passes between its
 * receives (serve_rx_idle: the thread that read a call sends its reply);
 * otherwise this thread does. While busy it only watches the rings (a poll
 * for the worker's end every ACTIVE_POLL_EVERY passes); idle, it sleeps in
 * poll.
 */
#define ACTIVE_POLL_EVERY 256u

static void harvest(struct remote_session *s)
{
	struct pollfd p[MEARAS_MAX_THREADS + 2];
	unsigned np = 0, passes = 0;

	for (unsigned t = 0; t < s->nthreads; t++)
		p[np++] = (struct pollfd){ .fd = s->wake_fds[t], .events = POLLIN };
	p[np++] = (struct pollfd){ .fd = s->notify_fd, .events = POLLIN };
	p[np++] = (struct pollfd){ .fd = s->sock, .events = POLLIN | POLLRDHUP };
	while (!__atomic_load_n(&s->closing, __ATOMIC_ACQUIRE)) {
		bool ready = __atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) == 1, busy, gone = false;
		/* the queue is full: nothing is read from the rings until REAP calls drain it */
		bool paused = remote_session_queue_over(s);
		int r = 0;

		if (ready && rx_serve_now(&s->rx)) {
			gone = wait_rx(s);
			if (!gone && rx_serve_now(&s->rx))
				continue; /* the receive thread still serves */
		} else {
			rx_serve_taken(&s->rx);
			if (!s->held.n && ready && !paused)
				harvest_spin(s);
			busy = (s->held.n && !paused) || harvest_ready(s);
			if (busy) {
				__atomic_store_n(&s->last_active_ns, mearas_mono_ns(), __ATOMIC_RELAXED);
				if (++passes % ACTIVE_POLL_EVERY == 0) {
					r = poll(p, np, 0);
					gone = r > 0 && after_poll(s, p, np);
				}
			} else if (!rx_serve_now(&s->rx)) {
				__atomic_store_n(&s->sleeping, 1, __ATOMIC_RELAXED);
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
				/* paused, the rings' wakeups are not asked for: a REAP call wakes it */
				if (!harvest_ready(s) && !rx_serve_now(&s->rx) && (!ready || paused || cq_prepare_sleep(s))) {
					r = poll(p, np, 200);
					gone = r > 0 && after_poll(s, p, np);
				}
				__atomic_store_n(&s->sleeping, 0, __ATOMIC_RELAXED);
				cq_end_sleep(s);
			}
		}
		if (__atomic_load_n(&s->closing, __ATOMIC_ACQUIRE))
			break;
		pthread_mutex_lock(&s->harvest_lock);
		if (gone && __atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) == 1) {
			remote_session_worker_gone(s, &s->fresh);
			p[np - 1].fd = -1;
		}
		if (!paused)
			remote_session_collect(s, &s->held, &s->fresh);
		try_reply(s, false);
		pthread_mutex_unlock(&s->harvest_lock);
	}
}

void *serve_session_main(void *arg)
{
	struct remote_session *s = arg;
	struct remote_open_reply rep = { .magic = REMOTE_MAGIC };
	int r = start_worker(s, rep.message, sizeof(rep.message));

	if (!r) {
		struct mearas_region_hdr *hdr = (struct mearas_region_hdr *)s->region;
		struct mearas_vgpu_layout l = mearas_vgpu_layout(hdr->sq_entries, hdr->cq_entries, hdr->arena_size,
								 hdr->nthreads);

		memcpy(&rep.info, s->region + hdr->vgpu_off[0] + l.devinfo, sizeof(rep.info));
		rep.data_va = s->worker_data_va;
		remote_session_start(s, serve_cfg->remote.link_mem);
		log_info("remote vGPU for %s (%s): GPU %d, VA window %u, worker pid %d, memory budget %llu MiB, %s",
			 mearas_link_conn_peer(s->conn), s->open.node, s->open.gpu, s->open.va_window, (int)s->child,
			 (unsigned long long)(s->budget.limit >> 20), remote_spin_said(&serve_cfg->remote, serve_cfg->spin_us));
	} else {
		__atomic_store_n(&s->ready, -1, __ATOMIC_RELEASE);
		log_warn("remote vGPU for %s refused: %s", mearas_link_conn_peer(s->conn), rep.message);
	}
	rep.status = r;
	mearas_link_reply(s->conn, s->open_seq, &rep, sizeof(rep));
	if (!r)
		harvest(s);
	if (!r)
		log_info("remote vGPU for %s: %llu replies sent by the link's receive thread, %llu by the session thread",
			 mearas_link_conn_peer(s->conn), (unsigned long long)s->replies_rx,
			 (unsigned long long)s->replies_thread);
	/* closing the socket stops the worker; it is killed when this thread ends */
	if (s->sock >= 0)
		close(s->sock);
	s->sock = -1;
	for (int i = 0; i < 100 && s->child > 0 && kill(s->child, 0) == 0; i++)
		usleep(10000);
	return NULL;
}
