/* Server side: an admission thread accepts TCP connections on one port; each
 * gets its own thread that authenticates it, then reads frames and hands
 * messages and bulk chunks to the caller's callbacks. */
#include "link_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct mearas_link_conn {
	struct mearas_link_server *srv;
	struct mearas_link_conn *next;
	int fd; /* until the transport owns it */
	struct link_transport *t;
	pthread_t thread;
	pthread_mutex_t send_lock;
	char peer[80];
	void *user;
	int broken;   /* atomic */
	int stop;     /* atomic */
	int finished; /* atomic: thread done, ready to join */
	uint64_t last_rx_ns;
	uint32_t dead_ms;
	uint8_t *buf;
	size_t cap;
};

struct mearas_link_server {
	struct mearas_link_config cfg;
	uint8_t *key;
	struct mearas_link_server_ops ops;
	int listen_fd;
	uint16_t port;
	bool verbs_available;
	int stop; /* atomic */
	pthread_t admit_thread;
	pthread_mutex_t lock;
	struct mearas_link_conn *conns;
};

int mearas_link_replyv(struct mearas_link_conn *c, uint64_t seq, const struct iovec *data, int n)
{
	size_t len = 0;
	if (!c || n < 0 || n > MEARAS_LINK_REPLY_IOV_MAX || (n && !data))
		return MEARAS_LINK_E_INVAL;
	for (int i = 0; i < n; i++) {
		if (data[i].iov_len && !data[i].iov_base)
			return MEARAS_LINK_E_INVAL;
		len += data[i].iov_len;
		if (len > MEARAS_LINK_MAX_MSG)
			return MEARAS_LINK_E_INVAL;
	}
	uint8_t fhdr[LINK_FRAME_HDR], rhdr[LINK_MSG_HDR];
	struct link_frame_hdr fh = { .type = LINK_FRAME_REPLY, .count = 1,
				     .body_len = (uint32_t)(LINK_MSG_HDR + len) };
	wire_encode_frame(fhdr, &fh);
	wire_encode_msg(rhdr, seq, (uint32_t)len, 0);
	struct iovec iov[2 + MEARAS_LINK_REPLY_IOV_MAX] = { { fhdr, sizeof(fhdr) }, { rhdr, sizeof(rhdr) } };
	int k = 2;
	for (int i = 0; i < n; i++)
		if (data[i].iov_len)
			iov[k++] = data[i];
	pthread_mutex_lock(&c->send_lock);
	int rc = __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE);
	if (!rc && c->t) {
		rc = c->t->ops->send_iov(c->t, iov, k);
		if (rc) {
			rc = MEARAS_LINK_E_BROKEN;
			__atomic_store_n(&c->broken, rc, __ATOMIC_RELEASE);
			c->t->ops->shutdown(c->t);
		}
	} else if (!rc) {
		rc = MEARAS_LINK_E_BROKEN;
	}
	pthread_mutex_unlock(&c->send_lock);
	return rc;
}

int mearas_link_reply(struct mearas_link_conn *c, uint64_t seq, const void *data, size_t len)
{
	struct iovec iov = { (void *)data, len };
	if (!c || (len && !data) || len > MEARAS_LINK_MAX_MSG)
		return MEARAS_LINK_E_INVAL;
	return mearas_link_replyv(c, seq, &iov, len ? 1 : 0);
}

const char *mearas_link_conn_peer(const struct mearas_link_conn *c)
{
	return c ? c->peer : "";
}

void mearas_link_conn_set_user(struct mearas_link_conn *c, void *user)
{
	if (c)
		c->user = user;
}

void *mearas_link_conn_user(const struct mearas_link_conn *c)
{
	return c ? c->user : NULL;
}

uint16_t mearas_link_server_port(const struct mearas_link_server *s)
{
	return s ? s->port : 0;
}

static int conn_read(struct mearas_link_conn *c, void *buf, size_t len)
{
	return link_read_exact(c->t, buf, len, 100, c->dead_ms, &c->last_rx_ns, &c->stop);
}

static int conn_read_body(struct mearas_link_conn *c, size_t len)
{
	if (len > c->cap) {
		uint8_t *nb = realloc(c->buf, len);
		if (!nb)
			return MEARAS_LINK_E_NOMEM;
		c->buf = nb;
		c->cap = len;
	}
	return conn_read(c, c->buf, len);
}

static int dispatch_batch(struct mearas_link_conn *c, const struct link_frame_hdr *fh)
{
	const struct mearas_link_server_ops *ops = &c->srv->ops;
	size_t off = 0;
	for (uint32_t i = 0; i < fh->count; i++) {
		if (fh->body_len - off < LINK_MSG_HDR)
			return MEARAS_LINK_E_PROTO;
		const uint8_t *m = c->buf + off;
		uint64_t seq = wire_get_u64(m);
		uint32_t len = wire_get_u32(m + 8);
		uint32_t flags = wire_get_u32(m + 12);
		off += LINK_MSG_HDR;
		if (len > fh->body_len - off)
			return MEARAS_LINK_E_PROTO;
		if (ops->on_message)
			ops->on_message(ops->ctx, c, seq, flags & LINK_MSG_WANTS_REPLY, c->buf + off, len);
		off += len;
	}
	return off == fh->body_len ? MEARAS_LINK_OK : MEARAS_LINK_E_PROTO;
}

/* A chunk whose bytes the caller places (ops->chunk_dest). */
static int read_chunk_in_place(struct mearas_link_conn *c, const struct link_frame_hdr *fh)
{
	const struct mearas_link_server_ops *ops = &c->srv->ops;
	size_t n = fh->body_len - LINK_CHUNK_HDR;
	int rc = conn_read_body(c, LINK_CHUNK_HDR);
	if (rc)
		return rc;
	uint64_t tag = wire_get_u64(c->buf), id = wire_get_u64(c->buf + 8);
	uint64_t off = wire_get_u64(c->buf + 16), total = wire_get_u64(c->buf + 24);
	uint8_t *dst = ops->chunk_dest(ops->ctx, c, tag, off, total, n);
	if (!dst) {
		if (LINK_CHUNK_HDR + n > c->cap) {
			uint8_t *nb = realloc(c->buf, LINK_CHUNK_HDR + n);
			if (!nb)
				return MEARAS_LINK_E_NOMEM;
			c->buf = nb;
			c->cap = LINK_CHUNK_HDR + n;
		}
		dst = c->buf + LINK_CHUNK_HDR;
	}
	rc = conn_read(c, dst, n);
	if (!rc && ops->on_chunk)
		ops->on_chunk(ops->ctx, c, tag, id, off, total, dst, n);
	return rc;
}

static int serve_frames(struct mearas_link_conn *c)
{
	const struct mearas_link_server_ops *ops = &c->srv->ops;
	for (;;) {
		uint8_t hdr[LINK_FRAME_HDR];
		struct link_frame_hdr fh;
		int rc = conn_read(c, hdr, sizeof(hdr));
		if (!rc)
			rc = wire_decode_frame(hdr, &fh);
		if (!rc && fh.type == LINK_FRAME_CHUNK && ops->chunk_dest && fh.body_len >= LINK_CHUNK_HDR) {
			rc = read_chunk_in_place(c, &fh);
			if (rc)
				return rc;
			continue;
		}
		if (!rc && fh.type != LINK_FRAME_CLOSE)
			rc = conn_read_body(c, fh.body_len);
		if (rc)
			return rc;
		switch (fh.type) {
		case LINK_FRAME_BATCH:
			rc = dispatch_batch(c, &fh);
			break;
		case LINK_FRAME_CHUNK:
			if (fh.body_len < LINK_CHUNK_HDR) {
				rc = MEARAS_LINK_E_PROTO;
				break;
			}
			if (ops->on_chunk)
				ops->on_chunk(ops->ctx, c, wire_get_u64(c->buf), wire_get_u64(c->buf + 8),
					      wire_get_u64(c->buf + 16), wire_get_u64(c->buf + 24),
					      c->buf + LINK_CHUNK_HDR, fh.body_len - LINK_CHUNK_HDR);
			break;
		case LINK_FRAME_HEARTBEAT: {
			uint8_t ack[LINK_FRAME_HDR + 8];
			struct link_frame_hdr ah = { .type = LINK_FRAME_HEARTBEAT_ACK, .body_len = 8 };
			wire_encode_frame(ack, &ah);
			memset(ack + LINK_FRAME_HDR, 0, 8);
			if (fh.body_len >= 8)
				memcpy(ack + LINK_FRAME_HDR, c->buf, 8);
			struct iovec iov = { ack, sizeof(ack) };
			pthread_mutex_lock(&c->send_lock);
			rc = c->t->ops->send_iov(c->t, &iov, 1) ? MEARAS_LINK_E_BROKEN : MEARAS_LINK_OK;
			pthread_mutex_unlock(&c->send_lock);
			break;
		}
		case LINK_FRAME_CLOSE:
			return MEARAS_LINK_OK;
		default:
			rc = MEARAS_LINK_E_PROTO;
		}
		if (rc)
			return rc;
	}
}

static void *conn_main(void *arg)
{
	struct mearas_link_conn *c = arg;
	struct mearas_link_server *s = c->srv;
	struct link_handshake_result hs;
	memset(&hs, 0, sizeof(hs));
	int rc = link_handshake_server(c->fd, &s->cfg, c->peer, s->verbs_available, &hs);
	if (!rc) {
		struct link_transport *t = NULL;
		if (hs.ssl)
			rc = link_tls_transport_create(c->fd, hs.ssl, &s->cfg, c->peer, &t);
		else if (hs.transport == MEARAS_LINK_TRANSPORT_VERBS)
			rc = link_verbs_transport_create(c->fd, &s->cfg, 1, &t);
		else
			rc = link_tcp_transport_create(c->fd, &s->cfg, &t);
		pthread_mutex_lock(&c->send_lock);
		c->t = t;
		if (!rc && __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
			rc = MEARAS_LINK_E_CLOSED;
		pthread_mutex_unlock(&c->send_lock);
		if (rc)
			link_log(&s->cfg, MEARAS_LINK_LOG_ERR, "link from %s: %s transport setup failed: %s",
				 c->peer, hs.transport == MEARAS_LINK_TRANSPORT_VERBS ? "verbs" : "tcp",
				 mearas_link_strerror(rc));
	}
	if (rc) {
		pthread_mutex_lock(&c->send_lock);
		if (!c->t)
			close(c->fd);
		c->fd = -1;
		pthread_mutex_unlock(&c->send_lock);
		__atomic_store_n(&c->finished, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	/* The peer heartbeats every peer_heartbeat_ms; give it a few periods. */
	c->dead_ms = s->cfg.dead_ms;
	if (hs.peer_heartbeat_ms && hs.peer_heartbeat_ms * 3 > c->dead_ms)
		c->dead_ms = hs.peer_heartbeat_ms * 3;
	c->last_rx_ns = link_now_ns();
	link_log(&s->cfg, hs.ssl ? MEARAS_LINK_LOG_INFO : MEARAS_LINK_LOG_WARN, "link from %s (%s) open over %s, %s",
		 c->peer, hs.peer_name, c->t->ops->name, c->t->security);
	if (s->ops.on_open)
		s->ops.on_open(s->ops.ctx, c);
	rc = serve_frames(c);
	if (rc && __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		rc = MEARAS_LINK_E_CLOSED; /* closed by mearas_link_server_stop */
	pthread_mutex_lock(&c->send_lock);
	__atomic_store_n(&c->broken, rc ? rc : MEARAS_LINK_E_CLOSED, __ATOMIC_RELEASE);
	c->t->ops->shutdown(c->t);
	pthread_mutex_unlock(&c->send_lock);
	if (rc)
		link_log(&s->cfg, MEARAS_LINK_LOG_WARN, "link from %s closed: %s", c->peer,
			 mearas_link_strerror(rc));
	if (s->ops.on_closed)
		s->ops.on_closed(s->ops.ctx, c, rc);
	__atomic_store_n(&c->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void free_conn(struct mearas_link_conn *c)
{
	if (c->t)
		c->t->ops->destroy(c->t);
	else if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_destroy(&c->send_lock);
	free(c->buf);
	free(c);
}

/* Joins and frees finished links; with all set, stops and reaps every link. */
static void reap_conns(struct mearas_link_server *s, bool all)
{
	pthread_mutex_lock(&s->lock);
	struct mearas_link_conn **pp = &s->conns;
	while (*pp) {
		struct mearas_link_conn *c = *pp;
		if (all) {
			__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
			pthread_mutex_lock(&c->send_lock);
			if (c->t)
				c->t->ops->shutdown(c->t);
			else if (c->fd >= 0)
				shutdown(c->fd, SHUT_RDWR);
			pthread_mutex_unlock(&c->send_lock);
		} else if (!__atomic_load_n(&c->finished, __ATOMIC_ACQUIRE)) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		pthread_mutex_unlock(&s->lock);
		pthread_join(c->thread, NULL);
		free_conn(c);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
}

static void format_peer(const struct sockaddr_storage *ss, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	}
	snprintf(out, cap, "%s:%u", host, port);
}

static void *admit_main(void *arg)
{
	struct mearas_link_server *s = arg;
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		reap_conns(s, false);
		struct pollfd pfd = { .fd = s->listen_fd, .events = POLLIN };
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct mearas_link_conn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->srv = s;
		c->fd = fd;
		pthread_mutex_init(&c->send_lock, NULL);
		format_peer(&ss, c->peer, sizeof(c->peer));
		if (link_tcp_set_options(fd, s->cfg.dead_ms) ||
		    pthread_create(&c->thread, NULL, conn_main, c)) {
			link_log(&s->cfg, MEARAS_LINK_LOG_ERR, "link from %s dropped: setup failed", c->peer);
			free_conn(c);
			continue;
		}
		pthread_mutex_lock(&s->lock);
		c->next = s->conns;
		s->conns = c;
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

static int open_listener(const char *bind_addr, uint16_t port, int *out_fd, uint16_t *out_port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char service[8];
	snprintf(service, sizeof(service), "%u", (unsigned)port);
	if (getaddrinfo(bind_addr, service, &hints, &res) != 0 || !res)
		return MEARAS_LINK_E_INVAL;
	int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
	int one = 1;
	int rc = MEARAS_LINK_E_SYS;
	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
	    bind(fd, res->ai_addr, res->ai_addrlen) == 0 && listen(fd, 64) == 0) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		getsockname(fd, (struct sockaddr *)&ss, &sl);
		*out_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							   : ((struct sockaddr_in *)&ss)->sin_port);
		*out_fd = fd;
		rc = MEARAS_LINK_OK;
	} else if (fd >= 0) {
		close(fd);
	}
	freeaddrinfo(res);
	return rc;
}

int mearas_link_server_start(const char *bind_addr, uint16_t port,
			     const struct mearas_link_config *cfg,
			     const struct mearas_link_server_ops *ops,
			     struct mearas_link_server **out)
{
	if (!cfg || !ops || !out || (cfg->key_len && !cfg->key))
		return MEARAS_LINK_E_INVAL;
	*out = NULL;
	struct mearas_link_server *s = calloc(1, sizeof(*s));
	if (!s)
		return MEARAS_LINK_E_NOMEM;
	link_config_effective(cfg, &s->cfg);
	s->ops = *ops;
	s->listen_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	if (cfg->key_len) {
		s->key = malloc(cfg->key_len);
		if (!s->key)
			goto nomem;
		memcpy(s->key, cfg->key, cfg->key_len);
		s->cfg.key = s->key;
	} else {
		link_log(&s->cfg, MEARAS_LINK_LOG_WARN, "no cluster key configured: every link is refused");
	}
	if (s->cfg.encryption == MEARAS_LINK_ENCRYPTION_OFF)
		link_log(&s->cfg, MEARAS_LINK_LOG_WARN,
			 "LINK ENCRYPTION IS OFF: after the handshake, link messages travel in clear text with no "
			 "integrity check: anyone on the network path can read them, alter them or take over a "
			 "link (use on a trusted fabric only; both nodes need the same --link-encryption)");
	s->verbs_available = link_verbs_available(&s->cfg) == MEARAS_LINK_OK;
	int rc = open_listener(bind_addr, port, &s->listen_fd, &s->port);
	if (rc) {
		link_log(&s->cfg, MEARAS_LINK_LOG_ERR, "cannot listen on %s:%u", bind_addr ? bind_addr : "*",
			 (unsigned)port);
		free(s->key);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return rc;
	}
	if (pthread_create(&s->admit_thread, NULL, admit_main, s)) {
		close(s->listen_fd);
		free(s->key);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return MEARAS_LINK_E_SYS;
	}
	*out = s;
	return MEARAS_LINK_OK;
nomem:
	pthread_mutex_destroy(&s->lock);
	free(s);
	return MEARAS_LINK_E_NOMEM;
}

void mearas_link_server_stop(struct mearas_link_server *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->admit_thread, NULL);
	close(s->listen_fd);
	reap_conns(s, true);
	if (s->key) {
		memset(s->key, 0, s->cfg.key_len);
		free(s->key);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}
