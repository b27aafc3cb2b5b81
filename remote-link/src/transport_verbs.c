/* RDMA verbs transport: one RC queue pair per link, SEND/RECV into registered
 * slot buffers, set up over the link's TCP connection, which stays open as a
 * side channel whose EOF tells that the peer is gone. Flow control relies on
 * RC receiver-not-ready retries (rnr_retry 7 = retry without limit). */
#include "link_internal.h"
#include "link.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/rand.h>

#define VERBS_SLOTS 32u
#define VERBS_SLOT_BYTES (64u << 10)
#define VERBS_PORT 1

struct verbs_transport {
	struct link_transport base;
	int fd;
	int down; /* atomic */
	uint32_t dead_ms;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *send_cq, *recv_cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *mem; /* VERBS_SLOTS receive slots, then VERBS_SLOTS send slots */
	size_t send_max; /* bytes per send: min(own slot, peer's receive slot) */
	uint32_t send_next, send_outstanding;
	int cur_slot;
	size_t cur_off, cur_len;
};

static struct ibv_context *open_device(const struct mearas_link_config *cfg)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	struct ibv_context *ctx = NULL;
	for (int i = 0; i < n && !ctx; i++)
		if (!cfg->verbs_device || strcmp(ibv_get_device_name(list[i]), cfg->verbs_device) == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

int mearas_link_verbs_probe(const struct mearas_link_config *cfg, char *why, size_t why_len)
{
	char names[128] = "";
	int n = 0, rc = MEARAS_LINK_E_NODEV;
	char scratch[2];

	if (!why) {
		why = scratch;
		why_len = sizeof(scratch);
	}
	if (!cfg)
		return snprintf(why, why_len, "no configuration"), MEARAS_LINK_E_INVAL;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		snprintf(why, why_len, "no RDMA device on this node (%s%s; Soft-RoCE: modprobe rdma_rxe, then "
			 "rdma link add rxe0 type rxe netdev IFACE)", list ? "none found" : "ibv_get_device_list: ",
			 list ? "" : strerror(errno));
		if (list)
			ibv_free_device_list(list);
		return MEARAS_LINK_E_NODEV;
	}
	struct ibv_device *dev = NULL;
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		size_t used = strlen(names);
		if (used + strlen(name) + 3 < sizeof(names))
			snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", name);
		if (!dev && (!cfg->verbs_device || strcmp(name, cfg->verbs_device) == 0))
			dev = list[i];
	}
	if (!dev) {
		snprintf(why, why_len, "RDMA device %s not found (this node has: %s)", cfg->verbs_device, names);
		ibv_free_device_list(list);
		return MEARAS_LINK_E_NODEV;
	}
	const char *name = ibv_get_device_name(dev);
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_port_attr pa;
	union ibv_gid gid;
	static const uint8_t zero[sizeof(gid.raw)];
	if (!ctx) {
		snprintf(why, why_len, "RDMA device %s does not open: %s", name, strerror(errno));
	} else if (ibv_query_port(ctx, VERBS_PORT, &pa)) {
		snprintf(why, why_len, "RDMA device %s: port %d not queryable", name, VERBS_PORT);
	} else if (cfg->verbs_gid_index >= (uint32_t)pa.gid_tbl_len ||
		   ibv_query_gid(ctx, VERBS_PORT, (int)cfg->verbs_gid_index, &gid) ||
		   !memcmp(gid.raw, zero, sizeof(zero))) {
		snprintf(why, why_len, "RDMA device %s: no GID at index %u (table of %d; is its netdev up with an "
			 "address?)", name, cfg->verbs_gid_index, pa.gid_tbl_len);
	} else {
		snprintf(why, why_len, "RDMA device %s, GID index %u", name, cfg->verbs_gid_index);
		rc = MEARAS_LINK_OK;
	}
	if (ctx)
		ibv_close_device(ctx);
	ibv_free_device_list(list);
	return rc;
}

int link_verbs_available(const struct mearas_link_config *cfg)
{
	struct ibv_context *ctx = open_device(cfg);
	if (!ctx)
		return MEARAS_LINK_E_NODEV;
	ibv_close_device(ctx);
	return MEARAS_LINK_OK;
}

static uint8_t *recv_slot(struct verbs_transport *v, uint32_t i)
{
	return v->mem + (size_t)i * VERBS_SLOT_BYTES;
}

static uint8_t *send_slot(struct verbs_transport *v, uint32_t i)
{
	return v->mem + (size_t)(VERBS_SLOTS + i) * VERBS_SLOT_BYTES;
}

static int post_recv(struct verbs_transport *v, uint32_t i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)recv_slot(v, i), .length = VERBS_SLOT_BYTES,
			       .lkey = v->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;
	return ibv_post_recv(v->qp, &wr, &bad) ? MEARAS_LINK_E_BROKEN : MEARAS_LINK_OK;
}

/* Waits until at most `keep` sends are outstanding. */
static int reap_sends(struct verbs_transport *v, uint32_t keep)
{
	uint64_t deadline = link_now_ns() + (uint64_t)v->dead_ms * 1000000ull;
	while (v->send_outstanding > keep) {
		if (__atomic_load_n(&v->down, __ATOMIC_ACQUIRE))
			return MEARAS_LINK_E_BROKEN;
		struct ibv_wc wc[8];
		int n = ibv_poll_cq(v->send_cq, 8, wc);
		if (n < 0)
			return MEARAS_LINK_E_BROKEN;
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				return MEARAS_LINK_E_BROKEN;
		v->send_outstanding -= (uint32_t)n;
		if (n == 0) {
			if (link_now_ns() > deadline)
				return MEARAS_LINK_E_BROKEN;
			sched_yield();
		}
	}
	return MEARAS_LINK_OK;
}

static int post_send(struct verbs_transport *v, uint32_t slot, size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)send_slot(v, slot), .length = (uint32_t)len,
			       .lkey = v->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (ibv_post_send(v->qp, &wr, &bad))
		return MEARAS_LINK_E_BROKEN;
	v->send_outstanding++;
	return MEARAS_LINK_OK;
}

static int verbs_send_iov(struct link_transport *t, const struct iovec *iov, int iovcnt)
{
	struct verbs_transport *v = (struct verbs_transport *)t;
	size_t fill = 0;
	uint32_t slot = 0;
	bool have_slot = false;
	for (int i = 0; i < iovcnt; i++) {
		const uint8_t *src = iov[i].iov_base;
		size_t left = iov[i].iov_len;
		while (left) {
			if (!have_slot) {
				int rc = reap_sends(v, VERBS_SLOTS - 1);
				if (rc)
					return rc;
				slot = v->send_next;
				v->send_next = (v->send_next + 1) % VERBS_SLOTS;
				have_slot = true;
				fill = 0;
			}
			size_t k = v->send_max - fill < left ? v->send_max - fill : left;
			memcpy(send_slot(v, slot) + fill, src, k); /* the one copy, into registered memory */
			fill += k;
			src += k;
			left -= k;
			if (fill == v->send_max) {
				int rc = post_send(v, slot, fill);
				if (rc)
					return rc;
				have_slot = false;
			}
		}
	}
	if (have_slot && fill)
		return post_send(v, slot, fill);
	return MEARAS_LINK_OK;
}

static bool side_channel_closed(struct verbs_transport *v)
{
	char c;
	ssize_t n = recv(v->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

static int verbs_recv(struct link_transport *t, void *buf, size_t len, uint32_t timeout_ms)
{
	struct verbs_transport *v = (struct verbs_transport *)t;
	while (v->cur_slot < 0) {
		if (__atomic_load_n(&v->down, __ATOMIC_ACQUIRE))
			return MEARAS_LINK_E_BROKEN;
		struct ibv_wc wc;
		int n = ibv_poll_cq(v->recv_cq, 1, &wc);
		if (n < 0)
			return MEARAS_LINK_E_BROKEN;
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS)
				return MEARAS_LINK_E_BROKEN;
			v->cur_slot = (int)wc.wr_id;
			v->cur_off = 0;
			v->cur_len = wc.byte_len;
			break;
		}
		if (ibv_req_notify_cq(v->recv_cq, 0))
			return MEARAS_LINK_E_BROKEN;
		n = ibv_poll_cq(v->recv_cq, 1, &wc);
		if (n != 0) {
			if (n < 0 || wc.status != IBV_WC_SUCCESS)
				return MEARAS_LINK_E_BROKEN;
			v->cur_slot = (int)wc.wr_id;
			v->cur_off = 0;
			v->cur_len = wc.byte_len;
			break;
		}
		struct pollfd pfd[2] = { { .fd = v->ch->fd, .events = POLLIN },
					 { .fd = v->fd, .events = POLLIN } };
		int pr = poll(pfd, 2, (int)timeout_ms);
		if (pr < 0 && errno != EINTR)
			return MEARAS_LINK_E_BROKEN;
		if (pr <= 0)
			return 0;
		if ((pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) && side_channel_closed(v))
			return MEARAS_LINK_E_BROKEN;
		if (pfd[0].revents & POLLIN) {
			struct ibv_cq *cq;
			void *cq_ctx;
			if (ibv_get_cq_event(v->ch, &cq, &cq_ctx) == 0)
				ibv_ack_cq_events(cq, 1);
		}
	}
	size_t k = v->cur_len - v->cur_off < len ? v->cur_len - v->cur_off : len;
	memcpy(buf, recv_slot(v, (uint32_t)v->cur_slot) + v->cur_off, k);
	v->cur_off += k;
	if (v->cur_off == v->cur_len) {
		int rc = post_recv(v, (uint32_t)v->cur_slot);
		v->cur_slot = -1;
		if (rc)
			return rc;
	}
	return (int)k;
}

static void verbs_shutdown(struct link_transport *t)
{
	struct verbs_transport *v = (struct verbs_transport *)t;
	__atomic_store_n(&v->down, 1, __ATOMIC_RELEASE);
	shutdown(v->fd, SHUT_RDWR);
	if (v->qp) {
		struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
		ibv_modify_qp(v->qp, &attr, IBV_QP_STATE);
	}
}

static void verbs_destroy(struct link_transport *t)
{
	struct verbs_transport *v = (struct verbs_transport *)t;
	if (v->qp)
		ibv_destroy_qp(v->qp);
	if (v->send_cq)
		ibv_destroy_cq(v->send_cq);
	if (v->recv_cq)
		ibv_destroy_cq(v->recv_cq);
	if (v->ch)
		ibv_destroy_comp_channel(v->ch);
	if (v->mr)
		ibv_dereg_mr(v->mr);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->ctx)
		ibv_close_device(v->ctx);
	free(v->mem);
	if (v->fd >= 0)
		close(v->fd);
	free(v);
}

/* a send waits for the queue pair's room: never said to be clear */
static bool verbs_tx_clear(struct link_transport *t)
{
	(void)t;
	return false;
}

LINK_TRANSPORT_OPS(verbs, "verbs", verbs_shutdown, verbs_tx_clear);

static int setup_resources(struct verbs_transport *v, const struct mearas_link_config *cfg)
{
	v->ctx = open_device(cfg);
	if (!v->ctx)
		return MEARAS_LINK_E_NODEV;
	v->pd = ibv_alloc_pd(v->ctx);
	v->ch = ibv_create_comp_channel(v->ctx);
	if (!v->pd || !v->ch)
		return MEARAS_LINK_E_SYS;
	int fl = fcntl(v->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(v->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return MEARAS_LINK_E_SYS;
	v->send_cq = ibv_create_cq(v->ctx, VERBS_SLOTS, NULL, NULL, 0);
	v->recv_cq = ibv_create_cq(v->ctx, VERBS_SLOTS, NULL, v->ch, 0);
	if (!v->send_cq || !v->recv_cq)
		return MEARAS_LINK_E_SYS;
	size_t bytes = (size_t)2 * VERBS_SLOTS * VERBS_SLOT_BYTES;
	if (posix_memalign((void **)&v->mem, 4096, bytes))
		return MEARAS_LINK_E_NOMEM;
	v->mr = ibv_reg_mr(v->pd, v->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp_init_attr qia = {
		.send_cq = v->send_cq, .recv_cq = v->recv_cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = VERBS_SLOTS, .max_recv_wr = VERBS_SLOTS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	if (!v->mr || !(v->qp = ibv_create_qp(v->pd, &qia)))
		return MEARAS_LINK_E_SYS;
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
				    .port_num = VERBS_PORT, .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
	if (ibv_modify_qp(v->qp, &init,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return MEARAS_LINK_E_SYS;
	for (uint32_t i = 0; i < VERBS_SLOTS; i++)
		if (post_recv(v, i))
			return MEARAS_LINK_E_SYS;
	return MEARAS_LINK_OK;
}

static int exchange_endpoints(struct verbs_transport *v, const struct mearas_link_config *cfg,
			      uint32_t psn, Mearas__VerbsEndpoint **peer)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	if (ibv_query_port(v->ctx, VERBS_PORT, &pa) ||
	    ibv_query_gid(v->ctx, VERBS_PORT, (int)cfg->verbs_gid_index, &gid))
		return MEARAS_LINK_E_SYS;
	Mearas__VerbsEndpoint me = MEARAS__VERBS_ENDPOINT__INIT;
	me.qp_num = v->qp->qp_num;
	me.psn = psn;
	me.lid = pa.lid;
	me.gid.data = gid.raw;
	me.gid.len = sizeof(gid.raw);
	me.mtu = pa.active_mtu;
	me.recv_buf_bytes = VERBS_SLOT_BYTES;
	uint8_t buf[256];
	size_t n = mearas__verbs_endpoint__get_packed_size(&me);
	mearas__verbs_endpoint__pack(&me, buf);
	int rc = link_send_blob(v->fd, buf, n);
	if (!rc)
		rc = link_recv_blob(v->fd, buf, sizeof(buf), &n, cfg->connect_timeout_ms);
	if (rc)
		return rc;
	*peer = mearas__verbs_endpoint__unpack(NULL, n, buf);
	if (!*peer || (*peer)->gid.len != 16 || !(*peer)->recv_buf_bytes)
		return MEARAS_LINK_E_PROTO;
	if ((*peer)->mtu > pa.active_mtu)
		(*peer)->mtu = pa.active_mtu;
	return MEARAS_LINK_OK;
}

static int connect_qp(struct verbs_transport *v, const struct mearas_link_config *cfg,
		      uint32_t psn, const Mearas__VerbsEndpoint *peer)
{
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = (enum ibv_mtu)peer->mtu,
		.dest_qp_num = peer->qp_num, .rq_psn = peer->psn,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .dlid = (uint16_t)peer->lid, .port_num = VERBS_PORT, .is_global = 1,
			     .grh = { .sgid_index = (uint8_t)cfg->verbs_gid_index, .hop_limit = 1 } },
	};
	memcpy(rtr.ah_attr.grh.dgid.raw, peer->gid.data, 16);
	if (ibv_modify_qp(v->qp, &rtr,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return MEARAS_LINK_E_SYS;
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				   .rnr_retry = 7, .sq_psn = psn, .max_rd_atomic = 1 };
	if (ibv_modify_qp(v->qp, &rts,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return MEARAS_LINK_E_SYS;
	/* Both sides ready before the first SEND. */
	uint8_t ready = 1;
	size_t n;
	int rc = link_send_blob(v->fd, &ready, 1);
	if (!rc)
		rc = link_recv_blob(v->fd, &ready, 1, &n, cfg->connect_timeout_ms);
	return rc;
}

int link_verbs_transport_create(int fd, const struct mearas_link_config *cfg, int is_server,
				struct link_transport **out)
{
	(void)is_server; /* both sides send their endpoint first: it fits in socket buffers */
	struct verbs_transport *v = calloc(1, sizeof(*v));
	if (!v)
		return MEARAS_LINK_E_NOMEM;
	v->base.ops = &verbs_ops;
	v->base.rx_spin_ns = (uint64_t)cfg->rx_spin_us * 1000ull;
	snprintf(v->base.security, sizeof(v->base.security), "UNENCRYPTED (verbs links are not encrypted)");
	v->fd = -1;
	v->cur_slot = -1;
	v->dead_ms = cfg->dead_ms;
	uint32_t psn = 0;
	RAND_bytes((uint8_t *)&psn, sizeof(psn));
	psn &= 0xffffff;
	Mearas__VerbsEndpoint *peer = NULL;
	v->fd = fd;
	int rc = setup_resources(v, cfg);
	if (!rc)
		rc = exchange_endpoints(v, cfg, psn, &peer);
	if (!rc) {
		v->send_max = peer->recv_buf_bytes < VERBS_SLOT_BYTES ? peer->recv_buf_bytes
								       : VERBS_SLOT_BYTES;
		rc = connect_qp(v, cfg, psn, peer);
	}
	if (peer)
		mearas__verbs_endpoint__free_unpacked(peer, NULL);
	if (rc) {
		v->fd = -1; /* not taken on failure */
		verbs_destroy(&v->base);
		return rc;
	}
	*out = &v->base;
	return MEARAS_LINK_OK;
}
