// SPDX-License-Identifier: MIT
/*
 * The control socket's transport: one thread polls the listening socket and
 * its connections; each connection carries frames (u32 little-endian length
 * + message), one reply per request. A frame over CONTROL_MAX_REQUEST, or a
 * connection idle mid-frame too long, closes that connection only.
 * Only root, mearasd's own user and members of the socket's group (the
 * socket is 0660) may use it: every connection's credentials are checked
 * (SO_PEERCRED, SO_PEERGROUPS), so a socket someone made 0666 opens nothing.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "assembly.h"
#include "attached.h"
#include "control.h"
#include "control_internal.h"
#include "mearas/fdpass.h"
#include "mearas/log.h"
#include "mearas/sockpath.h"
#include "vgpustats.h"

#define MAX_CONNS 64
#define IDLE_CLOSE_MS 60000
#define SEND_TIMEOUT_S 5

struct conn {
	int fd;
	uint8_t hdr[4];
	size_t hdr_got;
	uint8_t *body;
	size_t body_len, body_got;
	int64_t active_ms;
};

static pthread_mutex_t fds_lock = PTHREAD_MUTEX_INITIALIZER;
static int listen_fd = -1;
static struct conn conns[MAX_CONNS];
static char *sock_path;
static gid_t sock_gid; /* the socket file's group: its members may connect */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Workers and probe children must not hold the control connections open
 * (a peer would never see them closed): drop them in every child. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&fds_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&fds_lock);
}

static void fork_child(void)
{
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	for (int i = 0; i < MAX_CONNS; i++) {
		if (conns[i].fd >= 0)
			close(conns[i].fd);
		conns[i].fd = -1;
	}
	pthread_mutex_unlock(&fds_lock);
}

static void conn_close(struct conn *c)
{
	pthread_mutex_lock(&fds_lock);
	close(c->fd);
	c->fd = -1;
	pthread_mutex_unlock(&fds_lock);
	free(c->body);
	c->body = NULL;
	c->hdr_got = c->body_len = c->body_got = 0;
}

/* Root, mearasd's own user, and members of the socket's group (primary or
 * supplementary group of the caller, as the kernel recorded them at connect).
 * Otherwise 0 with why filled in. */
static bool admit_peer(int fd, const struct ucred *cr, char *why, size_t whylen)
{
	int in;

	if (cr->uid == 0 || cr->uid == geteuid())
		return true;
	in = mearas_peer_in_group(fd, cr->gid, sock_gid);
	if (in < 0)
		snprintf(why, whylen, "its groups cannot be read");
	else if (!in)
		snprintf(why, whylen, "not root, not mearasd's user and not in the control socket's group (gid %u)",
			 (unsigned)sock_gid);
	return in > 0;
}

/* Refused connections are logged, at most REFUSED_LOG_BURST lines a second
 * (the accept thread's budget): they can come at will. */
#define REFUSED_LOG_BURST 10
static struct mearas_log_burst refused_log;

static bool refused_log_admit(void)
{
	return mearas_log_burst(&refused_log, REFUSED_LOG_BURST, "control: ", "refused connections");
}

/* A caller that may not use the socket gets one Error frame (it fits the
 * empty send buffer: nothing blocks) and is closed before a byte is read. */
static void refuse_peer(int fd, const struct ucred *cr, const char *why)
{
	char msg[320];
	size_t len = 0;
	uint8_t *out, hdr[4];

	snprintf(msg, sizeof(msg), "uid %u gid %u pid %d: %s", (unsigned)cr->uid,
		 (unsigned)cr->gid, (int)cr->pid, why);
	if (refused_log_admit())
		log_warn("control: refused: %s", msg);
	out = control_error(MEARAS__ERROR_CODE__ERROR_PERMISSION_DENIED, &len, msg);
	if (out) {
		for (int i = 0; i < 4; i++)
			hdr[i] = (uint8_t)(len >> (8 * i));
		if (send(fd, hdr, 4, MSG_DONTWAIT | MSG_NOSIGNAL) == 4)
			send(fd, out, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		free(out);
	}
	close(fd);
}

static void conn_accept(void)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	char why[160];

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) || crlen != sizeof(cr)) {
		if (refused_log_admit())
			log_warn("control: a connection without credentials (%s): closed", strerror(errno));
		close(fd);
		return;
	}
	if (!admit_peer(fd, &cr, why, sizeof(why))) {
		refuse_peer(fd, &cr, why);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	pthread_mutex_lock(&fds_lock);
	for (int i = 0; i < MAX_CONNS; i++) {
		if (conns[i].fd < 0) {
			conns[i] = (struct conn){ .fd = fd, .active_ms = now_ms() };
			pthread_mutex_unlock(&fds_lock);
			return;
		}
	}
	pthread_mutex_unlock(&fds_lock);
	if (refused_log_admit())
		log_warn("control: %d connections open already, refusing another", MAX_CONNS);
	close(fd);
}

static bool reply(struct conn *c)
{
	size_t len = 0;
	uint8_t *out = control_handle(c->body, c->body_len, &len), hdr[4];
	bool ok;

	if (!out) {
		log_err("control: out of memory answering a request");
		return false;
	}
	for (int i = 0; i < 4; i++)
		hdr[i] = (uint8_t)(len >> (8 * i));
	ok = !mearas_send_all(c->fd, hdr, 4) && !mearas_send_all(c->fd, out, len);
	free(out);
	if (!ok)
		log_warn("control: cannot send a reply: %s", strerror(errno));
	return ok;
}

/* Reads what is there; returns false when the connection is to be closed. */
static bool conn_read(struct conn *c)
{
	for (;;) {
		uint8_t *dst;
		size_t want;
		ssize_t n;

		if (c->hdr_got < 4) {
			dst = c->hdr + c->hdr_got;
			want = 4 - c->hdr_got;
		} else {
			dst = c->body + c->body_got;
			want = c->body_len - c->body_got;
		}
		n = want ? recv(c->fd, dst, want, MSG_DONTWAIT) : 0;
		if (want && n < 0 && errno == EINTR)
			continue;
		if (want && n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (want && n <= 0) {
			if (n < 0 || c->hdr_got)
				log_warn("control: connection ended inside a frame%s%s",
					 n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			return false; /* EOF between frames: the client is done */
		}
		c->active_ms = now_ms();
		if (c->hdr_got < 4) {
			c->hdr_got += (size_t)n;
			if (c->hdr_got < 4)
				continue;
			c->body_len = (size_t)c->hdr[0] | (size_t)c->hdr[1] << 8 | (size_t)c->hdr[2] << 16 |
				      (size_t)c->hdr[3] << 24;
			if (c->body_len > CONTROL_MAX_REQUEST) {
				log_warn("control: request frame of %zu bytes exceeds %u: connection closed",
					 c->body_len, CONTROL_MAX_REQUEST);
				return false;
			}
			c->body = malloc(c->body_len ? c->body_len : 1);
			if (!c->body) {
				log_err("control: no memory for a frame of %zu bytes", c->body_len);
				return false;
			}
			c->body_got = 0;
		} else {
			c->body_got += (size_t)n;
		}
		if (c->body_got < c->body_len)
			continue;
		if (!reply(c))
			return false;
		free(c->body);
		c->body = NULL;
		c->hdr_got = c->body_len = c->body_got = 0;
	}
}

static void *control_main(void *arg)
{
	struct pollfd pfd[1 + MAX_CONNS];
	struct conn *who[1 + MAX_CONNS];

	(void)arg;
	profile_gpus(0); /* learn the GPUs before the first request */
	for (;;) {
		int n = 1, r;
		int64_t now;

		pfd[0] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
		for (int i = 0; i < MAX_CONNS; i++) {
			if (conns[i].fd < 0)
				continue;
			pfd[n] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
			who[n++] = &conns[i];
		}
		r = poll(pfd, (nfds_t)n, 1000);
		if (r < 0 && errno != EINTR) {
			log_err("control: poll: %s", strerror(errno));
			sleep(1);
		}
		profile_sample_rates();
		now = now_ms();
		for (int i = 1; i < n; i++) {
			struct conn *c = who[i];

			if (pfd[i].revents && !conn_read(c))
				conn_close(c);
			else if (now - c->active_ms > IDLE_CLOSE_MS)
				conn_close(c);
		}
		if (r > 0 && (pfd[0].revents & POLLIN))
			conn_accept();
	}
	return NULL;
}

/* Another live server on path? Then do not take its socket away. */
int control_start(const struct backend_config *cfg, const char *path, const char *node, const char *vm_dir)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	sigset_t all, old;
	struct stat st;
	pthread_t t;
	pid_t holder;
	mode_t old_mask;
	int fd, e;

	if (control_vm_init(cfg, vm_dir))
		return -1;
	if (strlen(path) >= sizeof(a.sun_path)) {
		log_err("control socket path too long: %s", path);
		return -1;
	}
	if (mearas_socket_live(path, &holder)) {
		log_err("control socket %s is served by another process already (pid %d): not taken over", path,
			(int)holder);
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (mearas_unlink_socket(path)) {
		log_err("control socket %s: %s (not replaced: only a socket is)", path,
			errno == EEXIST ? "exists and is not a socket" : strerror(errno));
		close(fd);
		return -1;
	}
	/* born 0600: no one connects before its mode is set (and every
	 * connection is checked anyway, conn_accept) */
	old_mask = umask(0177);
	e = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old_mask);
	if (e || listen(fd, 64)) {
		log_err("cannot listen on the control socket %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* the manager runs as root; others may not change assemblies: root,
	 * mearasd's user and the socket's group (mearasd's, or the directory's
	 * when it is set-group-ID) */
	if (stat(a.sun_path, &st) || chmod(a.sun_path, 0660)) {
		log_err("control socket %s: %s", a.sun_path, strerror(errno));
		close(fd);
		mearas_unlink_socket(path);
		return -1;
	}
	sock_gid = st.st_gid;
	for (int i = 0; i < MAX_CONNS; i++)
		conns[i].fd = -1;
	listen_fd = fd;
	sock_path = strdup(path);
	assembly_table_init();
	if (attached_init())
		log_warn("no shared table of assembly users: ListAssemblies names no processes");
	if (vstats_init())
		log_warn("no shared call-rate table: vGPU call rates are reported as 0");
	control_proto_init(cfg, node);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	/* signals are for the accept loop, never for this thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&t, NULL, control_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		log_err("control thread: %s", strerror(e));
		return -1;
	}
	pthread_detach(t);
	log_info("control socket %s (mode 0660, gid %u: root, mearasd's user and that group's members), node %s", path,
		 (unsigned)sock_gid, node);
	return 0;
}

void control_stop(void)
{
	if (sock_path)
		mearas_unlink_socket(sock_path);
	control_vm_unlink_all();
}
