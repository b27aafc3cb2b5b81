/* SPDX-License-Identifier: MIT */
/*
 * Remote vGPUs in mearasd's configuration (config.c): which vGPUs a node
 * forwards to which other node (--remote), the cluster key, and the link
 * settings of both ends (--link-*).
 */
#ifndef MEARAS_REMOTE_CONFIG_H
#define MEARAS_REMOTE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mearas/region.h"

#define REMOTE_HOST_MAX 256
/* Threads of a remote vGPU (both nodes) stay awake at least this long after
 * their last record when spinning is on (--spin-us > 0) and the node has
 * REMOTE_SPIN_MIN_CPUS cores or more (--remote-spin=auto, the default; =on
 * spins on any node, =off never): a synchronous call's next record comes
 * one network round trip later, and a wakeup per hop costs more than the
 * spin. With fewer cores the spinning threads would take turns on them, and
 * every hop would wait for a time slice instead. */
#define REMOTE_SPIN_US 250u
#define REMOTE_SPIN_MIN_CPUS 4
enum { REMOTE_SPIN_AUTO, REMOTE_SPIN_ON, REMOTE_SPIN_OFF };

/* A vGPU backed by a GPU of another node (the forwarding node's side). */
struct remote_target {
	char host[REMOTE_HOST_MAX];
	uint16_t port;
	int gpu;
};

struct remote_config {
	struct remote_target target[MEARAS_MAX_VGPUS]; /* host "" = local */
	char key_file[REMOTE_HOST_MAX];
	uint8_t key[256];
	size_t key_len;
	const char *link_bind;  /* serving node: address to bind ("" = any) */
	uint16_t link_port;     /* serving node: 0 = no link server */
	uint32_t dead_ms;       /* link dead bound (0 = library default, 3 s) */
	uint32_t batch_msgs;    /* records per link batch (0 = library default, 1 = no batching) */
	uint32_t batch_us;      /* time bound of a batch (0 = none: sent when the ring is drained) */
	/* link server admission (0 = library default, remote_link.h) */
	uint32_t handshake_ms;  /* accept to authenticated link */
	uint32_t max_pending;   /* connections in the handshake at once */
	uint32_t max_links;     /* remote vGPUs (links) served at once */
	uint32_t fd_reserve;    /* fds kept free for the rest of mearasd */
	uint64_t link_mem;      /* bytes one link may make this node allocate (0 = REMOTE_LINK_MEM_EXTRA more than its data area) */
	bool encryption_off;    /* --link-encryption=off: links in clear text (both ends must agree) */
	int transport;          /* --link-transport: enum mearas_link_transport (0 = tcp) */
	const char *verbs_device; /* --verbs-device (NULL = the first RDMA device) */
	uint32_t verbs_gid_index; /* --verbs-gid-index */
	int spin;               /* --remote-spin: REMOTE_SPIN_AUTO, _ON or _OFF */
	uint32_t streams;       /* --link-streams: TCP connections a link this node opens spreads its bulk
				 * copies over (0: REMOTE_STREAMS_DEFAULT where the node has
				 * REMOTE_STREAMS_MIN_CPUS cores, else 1; 1: the link's one connection) */
};

/* --link-streams left out: this many where the node has the cores for a
 * sender thread each (a TLS session each: AES-GCM on one core is the limit
 * of one connection), else 1 */
#define REMOTE_STREAMS_DEFAULT 4u
#define REMOTE_STREAMS_MIN_CPUS 8
#define REMOTE_STREAMS_MAX 16u

/* --remote=VGPU=HOST:PORT[/GPU] */
int remote_parse_target(struct remote_config *rc, const char *spec);
int remote_load_key(struct remote_config *rc, const char *path);
/* --link-transport=tcp|verbs|auto: 0, or -1 for another word */
int remote_parse_transport(struct remote_config *rc, const char *word);
/* At startup, on a node that opens or serves links: verbs asked for without
 * an RDMA device, or with link encryption on, is an error (-1, said on
 * stderr); auto says in the log what its links will use. */
int remote_check_transport(const struct remote_config *rc);
struct mearas_link_config;
/* the remote-link settings of either end */
void remote_link_config(const struct remote_config *rc, struct mearas_link_config *lc);
/* The connections a link this node opens moves bulk data over (--link-streams, or its default). */
unsigned remote_link_streams(const struct remote_config *rc);
/* How long a remote vGPU's threads spin (us) given --spin-us and
 * --remote-spin; 0: never. Cheap: the cores are counted at the first call only. */
unsigned remote_spin_us(const struct remote_config *rc, unsigned cfg_spin_us);
/* --remote-spin=auto|on|off: 0, or -1 for another word */
int remote_parse_spin(struct remote_config *rc, const char *word);
/* What both nodes' log lines of a remote vGPU say of its spinning. */
const char *remote_spin_said(const struct remote_config *rc, unsigned cfg_spin_us);

static inline bool remote_vgpu_is_remote(const struct remote_config *rc, unsigned vgpu)
{
	return vgpu < MEARAS_MAX_VGPUS && rc->target[vgpu].host[0];
}

#endif
