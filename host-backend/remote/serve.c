// SPDX-License-Identifier: MIT
/*
 * The serving node (--link-port): its link server, where every accepted
 * link is one remote vGPU. The link's callbacks hand its messages and bulk
 * chunks to the link's session (session.c); its OPEN starts the session
 * thread (serve_worker.c), which forks the vGPU's worker and replies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "core/config.h"
#include "device/device.h"
#include "mearas/log.h"
#include "messages.h"
#include "remote_link.h"
#include "serve.h"
#include "session.h"

const struct backend_config *serve_cfg;
static struct mearas_link_server *server;

/* ---- link callbacks ---- */

static void on_open(void *ctx, struct mearas_link_conn *c)
{
	(void)ctx;
	mearas_link_conn_set_user(c, remote_session_new(c, serve_cfg->dev->capture_begin != NULL));
}

/* OPEN: the session thread forks the worker (device start-up can be slow) and replies. */
static void open_message(struct remote_session *s, uint64_t seq, const void *data)
{
	struct remote_open_reply rep = { .magic = REMOTE_MAGIC, .status = cudaErrorInvalidValue };

	memcpy(&s->open, data, sizeof(s->open));
	s->open.node[sizeof(s->open.node) - 1] = 0;
	s->open_seq = seq;
	if (s->open.magic != REMOTE_MAGIC || s->open.version != REMOTE_VERSION) {
		snprintf(rep.message, sizeof(rep.message),
			 "remote protocol %u with record layout %06x; this node speaks %u with %06x (mearasd "
			 "built from another version)", s->open.version & 0xff, s->open.version >> 8,
			 REMOTE_VERSION & 0xff, REMOTE_VERSION >> 8);
	} else if (s->thread_started || __atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) == 1) {
		snprintf(rep.message, sizeof(rep.message), "the link already has a vGPU");
	} else if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE)) {
		/* on_open could not set the session up */
		rep.status = cudaErrorMemoryAllocation;
		snprintf(rep.message, sizeof(rep.message), "the remote node is out of memory or fds for a vGPU");
	} else if ((errno = pthread_create(&s->thread, NULL, serve_session_main, s))) {
		rep.status = cudaErrorMemoryAllocation;
		snprintf(rep.message, sizeof(rep.message), "the remote node cannot start a thread: %s",
			 strerror(errno));
	} else {
		s->thread_started = true;
		return;
	}
	log_warn("remote vGPU for %s refused: %s", mearas_link_conn_peer(s->conn), rep.message);
	mearas_link_reply(s->conn, seq, &rep, sizeof(rep));
}

static void on_message(void *ctx, struct mearas_link_conn *c, uint64_t seq, bool wants_reply, const void *data,
		       size_t len)
{
	struct remote_session *s = mearas_link_conn_user(c);

	(void)ctx;
	if (s && remote_session_message(s, seq, wants_reply, data, len))
		open_message(s, seq, data);
}

static void on_chunk(void *ctx, struct mearas_link_conn *c, uint64_t tag, uint64_t bulk_id, uint64_t offset,
		     uint64_t total, const void *data, size_t len)
{
	struct remote_session *s = mearas_link_conn_user(c);

	(void)ctx, (void)bulk_id, (void)total;
	if (s)
		remote_session_chunk(s, tag, offset, data, len);
}

static void *chunk_dest(void *ctx, struct mearas_link_conn *c, uint64_t tag, uint64_t offset, uint64_t total,
			size_t len)
{
	struct remote_session *s = mearas_link_conn_user(c);

	(void)ctx, (void)total;
	return s ? remote_session_chunk_dest(s, tag, offset, len) : NULL;
}

static void on_idle(void *ctx, struct mearas_link_conn *c, bool spinning)
{
	struct remote_session *s = mearas_link_conn_user(c);

	(void)ctx;
	if (s)
		serve_rx_idle(s, spinning);
}

static void on_closed(void *ctx, struct mearas_link_conn *c, int status)
{
	struct remote_session *s = mearas_link_conn_user(c);

	(void)ctx;
	if (!s)
		return;
	log_info("remote link %s closed (%s): freeing its vGPU", mearas_link_conn_peer(c),
		 status ? mearas_link_strerror(status) : "orderly");
	__atomic_store_n(&s->closing, 1, __ATOMIC_RELEASE);
	if (s->sock >= 0)
		shutdown(s->sock, SHUT_RDWR); /* also ends a handshake still in progress */
	remote_session_notify(s);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	if (s->region)
		munmap(s->region, s->region_size);
	for (unsigned t = 0; t < s->nthreads; t++)
		close(s->wake_fds[t]);
	for (int *fd = (int[]){ s->kick_fd, s->out_fd, s->err_fd, -2 }; *fd != -2; fd++)
		if (*fd >= 0)
			close(*fd);
	remote_session_free(s);
	mearas_link_conn_set_user(c, NULL);
}

/* fds this process holds for one remote vGPU: the link's socket, the
 * session's eventfd, the worker's socket, kick and output pipes, and one
 * wakeup eventfd per completion slot */
#define LINK_SESSION_FDS (6u + MEARAS_MAX_THREADS)

int remote_serve_start(const struct backend_config *cfg)
{
	struct mearas_link_config lc;
	struct rlimit rl;
	uint32_t reserve;
	int rc;

	serve_cfg = cfg;
	remote_link_config(&cfg->remote, &lc);
	lc.rx_spin_us = remote_spin_us(&cfg->remote, cfg->spin_us);
	/* a connection is admitted only with room for its session besides the reserve */
	lc.fd_reserve += LINK_SESSION_FDS;
	/* the soft fd limit (often 1024) is raised as far as the links need and the hard one allows */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY) {
		/* and a link's data connections (--link-streams of its forwarding node, 16 at most) */
		rlim_t want = (rlim_t)lc.fd_reserve + (rlim_t)lc.max_links * (LINK_SESSION_FDS + REMOTE_STREAMS_MAX) + 256;
		rlim_t was = rl.rlim_cur;

		if (was < want && rl.rlim_max > was) {
			rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
				log_info("link server: fd limit raised from %llu to %llu", (unsigned long long)was,
					 (unsigned long long)rl.rlim_cur);
			else
				rl.rlim_cur = was;
		}
	}
	/* the reserve the operator asked for, without the session room added above */
	reserve = lc.fd_reserve - LINK_SESSION_FDS;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)reserve + (rlim_t)lc.max_links * LINK_SESSION_FDS)
		log_warn("link server: the fd limit (%llu) leaves room for about %llu of --link-max=%u remote vGPUs "
			 "(each holds %u fds, %u more kept in reserve): raise the limit (LimitNOFILE) for more",
			 (unsigned long long)rl.rlim_cur,
			 (unsigned long long)(rl.rlim_cur > reserve ? (rl.rlim_cur - reserve) / LINK_SESSION_FDS : 0),
			 lc.max_links, LINK_SESSION_FDS, reserve);
	rc = mearas_link_server_start(cfg->remote.link_bind && cfg->remote.link_bind[0] ? cfg->remote.link_bind : NULL,
				      cfg->remote.link_port, &lc, &(struct mearas_link_server_ops){
					      .on_message = on_message, .on_chunk = on_chunk, .chunk_dest = chunk_dest,
					      .on_open = on_open, .on_idle = on_idle,
					      .on_closed = on_closed },
				      &server);
	if (rc) {
		log_err("link server on port %u: %s", cfg->remote.link_port, mearas_link_strerror(rc));
		return -1;
	}
	log_info("link server on port %u%s; at most %u links, %u connections in a handshake of %u ms at most", mearas_link_server_port(server),
		 cfg->remote.key_len ? " (cluster key required)" : " (no cluster key configured: every link is refused)",
		 lc.max_links, lc.max_pending, lc.handshake_ms);
	return 0;
}

void remote_serve_stop(void)
{
	if (server)
		mearas_link_server_stop(server);
	server = NULL;
}
