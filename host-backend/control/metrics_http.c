// SPDX-License-Identifier: MIT
/*
 * The metrics endpoint: libmicrohttpd in one internal thread of its own,
 * GET (or HEAD) /metrics only; every other path is 404, every other method
 * 405. Whoever can reach the port is untrusted: connections, their memory
 * (headers) and their idle time are bounded by the library's options, and
 * nothing a request carries is used but its method and path.
 *
 * Connections cannot be held against scrapers: the library's timeout counts
 * idle time only (a header byte every few seconds keeps a connection), and on
 * 127.0.0.1 every local user shares one address, so a per-address limit
 * would let any of them take the endpoint. Instead, a new connection that
 * finds METRICS_EVICT_AT open shuts the oldest one; a scraper's connection
 * lives a millisecond (every answer closes it), so only a flood of new
 * connections within that millisecond could push it out.
 *
 * libmicrohttpd is loaded when the endpoint is asked for (--metrics-port),
 * not linked: mearasd runs where it is not installed (GPU machines and
 * containers), and only the metrics need it.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mearas/log.h"
#include "metrics.h"

#define METRICS_MAX_CONNECTIONS 16
#define METRICS_EVICT_AT 12 /* open connections at which a new one shuts the oldest */
#define METRICS_TIMEOUT_S 10
#define METRICS_CONN_MEMORY (32u << 10) /* request line and headers, per connection */

/* the library's calls used here, from libmicrohttpd.so.12 */
static struct {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
					   void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	void (*stop_daemon)(struct MHD_Daemon *daemon);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *connection,
							       enum MHD_ConnectionInfoType info_type, ...);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
							    enum MHD_ResponseMemoryMode mode);
	enum MHD_Result (*add_response_header)(struct MHD_Response *response, const char *header,
					       const char *content);
	enum MHD_Result (*queue_response)(struct MHD_Connection *connection, unsigned int status_code,
					  struct MHD_Response *response);
	void (*destroy_response)(struct MHD_Response *response);
} mhd;

#define MHD_LIBRARY "libmicrohttpd.so.12"

/* 0, or -1 with the reason on stderr */
static int load_mhd(void)
{
	static const struct {
		const char *name;
		size_t off;
	} fns[] = {
		{ "MHD_start_daemon", offsetof(__typeof__(mhd), start_daemon) },
		{ "MHD_stop_daemon", offsetof(__typeof__(mhd), stop_daemon) },
		{ "MHD_get_connection_info", offsetof(__typeof__(mhd), get_connection_info) },
		{ "MHD_create_response_from_buffer", offsetof(__typeof__(mhd), create_response_from_buffer) },
		{ "MHD_add_response_header", offsetof(__typeof__(mhd), add_response_header) },
		{ "MHD_queue_response", offsetof(__typeof__(mhd), queue_response) },
		{ "MHD_destroy_response", offsetof(__typeof__(mhd), destroy_response) },
	};
	void *lib;

	if (mhd.start_daemon)
		return 0;
	lib = dlopen(MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "mearasd: --metrics-port needs %s (Debian: libmicrohttpd12): %s\n", MHD_LIBRARY,
			dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *f = dlsym(lib, fns[i].name);

		if (!f) {
			fprintf(stderr, "mearasd: %s has no %s\n", MHD_LIBRARY, fns[i].name);
			memset(&mhd, 0, sizeof(mhd));
			dlclose(lib);
			return -1;
		}
		memcpy((char *)&mhd + fns[i].off, &f, sizeof(f));
	}
	return 0;
}

static struct MHD_Daemon *daemon_;
static struct metrics_source source;
/* the server's sockets: closed in every worker mearasd forks (workers never
 * exec, so close-on-exec does not keep them from holding the port) */
static int listen_fd = -1;
static uint16_t listen_port;
static int conn_fds[METRICS_MAX_CONNECTIONS + 4];
/* the rest only on the server's thread (every callback runs there) */
static uint64_t conn_seq[METRICS_MAX_CONNECTIONS + 4]; /* order of arrival; 0: shut already */
static uint64_t next_seq;

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *ci = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	int fd = ci ? ci->connect_fd : -1;
	size_t n = sizeof(conn_fds) / sizeof(conn_fds[0]);

	(void)cls;
	(void)socket_context;
	if (fd < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		int expect = toe == MHD_CONNECTION_NOTIFY_STARTED ? -1 : fd;

		if (__atomic_compare_exchange_n(&conn_fds[i], &expect, toe == MHD_CONNECTION_NOTIFY_STARTED ? fd : -1,
						false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			conn_seq[i] = toe == MHD_CONNECTION_NOTIFY_STARTED ? ++next_seq : 0;
			return;
		}
	}
}

/* The library's accept policy, for every new connection: at METRICS_EVICT_AT
 * open ones, the oldest is shut down (the library sees it end and closes it).
 * Always admits the new one. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	size_t n = sizeof(conn_fds) / sizeof(conn_fds[0]), open = 0, oldest = n;

	(void)cls;
	(void)addr;
	(void)addrlen;
	for (size_t i = 0; i < n; i++) {
		if (__atomic_load_n(&conn_fds[i], __ATOMIC_ACQUIRE) < 0 || !conn_seq[i])
			continue;
		open++;
		if (oldest == n || conn_seq[i] < conn_seq[oldest])
			oldest = i;
	}
	if (open >= METRICS_EVICT_AT && oldest < n) {
		shutdown(conn_fds[oldest], SHUT_RDWR);
		conn_seq[oldest] = 0;
	}
	return MHD_YES;
}

/* fd is a TCP socket of this server (its local port): never one the worker needs */
static bool ours(int fd)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&a, &len))
		return false;
	if (a.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&a)->sin_port) == listen_port;
	if (a.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&a)->sin6_port) == listen_port;
	return false;
}

static void fork_child(void)
{
	for (size_t i = 0; i < sizeof(conn_fds) / sizeof(conn_fds[0]); i++) {
		int fd = __atomic_load_n(&conn_fds[i], __ATOMIC_ACQUIRE);

		if (ours(fd))
			close(fd);
	}
	if (ours(listen_fd))
		close(listen_fd);
}

static int open_listener(const struct sockaddr *a, socklen_t alen)
{
	int one = 1, fd = socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, a, alen) || listen(fd, METRICS_MAX_CONNECTIONS)) {
		close(fd);
		return -1;
	}
	return fd;
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r = mhd.create_response_from_buffer(strlen(text), (void *)text,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = mhd.queue_response(c, status, r);
	mhd.destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct mtext t = { 0 };
	struct MHD_Response *r;
	enum MHD_Result ret;

	(void)cls;
	(void)version;
	(void)upload_data;
	if (!*req_cls) {
		/* first call: headers only; answer on the next one (a body, if
		 * any was sent, is then dropped unread with the connection) */
		*req_cls = c;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a body is not wanted: skipped */
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics is served here\n");
	if (strcmp(url, "/metrics"))
		return answer_text(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
	if (metrics_render(&source, &t)) {
		mtext_free(&t);
		return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory rendering the metrics\n");
	}
	r = mhd.create_response_from_buffer(t.len, t.buf, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		mtext_free(&t);
		return MHD_NO;
	}
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close"); /* see on_accept */
	ret = mhd.queue_response(c, MHD_HTTP_OK, r);
	mhd.destroy_response(r);
	return ret;
}

int metrics_start(const char *bind, uint16_t port, const struct metrics_source *src)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
	sigset_t all, old;

	if (!bind)
		bind = METRICS_DEFAULT_BIND;
	if (load_mhd())
		return -1;
	if (inet_pton(AF_INET, bind, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
	} else if (inet_pton(AF_INET6, bind, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		flags |= MHD_USE_IPv6;
	} else {
		fprintf(stderr, "mearasd: bad --metrics-bind '%s' (an IPv4 or IPv6 address)\n", bind);
		return -1;
	}
	for (size_t i = 0; i < sizeof(conn_fds) / sizeof(conn_fds[0]); i++)
		conn_fds[i] = -1;
	listen_fd = open_listener((struct sockaddr *)&ss, ss.ss_family == AF_INET ? sizeof(*a4) : sizeof(*a6));
	if (listen_fd < 0) {
		fprintf(stderr, "mearasd: cannot serve metrics on %s port %u: %s\n", bind, (unsigned)port,
			strerror(errno));
		return -1;
	}
	listen_port = port;
	source = *src;
	/* signals are for mearasd's accept loop, never for the server's thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	daemon_ = mhd.start_daemon(flags, port, on_accept, NULL, on_request, NULL,
				   MHD_OPTION_LISTEN_SOCKET, listen_fd,
				   MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_MAX_CONNECTIONS,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_TIMEOUT_S,
				   MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONN_MEMORY,
				   MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!daemon_) {
		fprintf(stderr, "mearasd: cannot start the metrics server on %s port %u\n", bind, (unsigned)port);
		close(listen_fd);
		listen_fd = -1;
		return -1;
	}
	pthread_atfork(NULL, NULL, fork_child);
	log_info("metrics: http://%s%s%s:%u/metrics (Prometheus text)", strchr(bind, ':') ? "[" : "", bind,
		 strchr(bind, ':') ? "]" : "", (unsigned)port);
	return 0;
}

void metrics_stop(void)
{
	/* the library closes the listen socket it was given */
	listen_fd = -1;
	if (daemon_)
		mhd.stop_daemon(daemon_);
	daemon_ = NULL;
}
