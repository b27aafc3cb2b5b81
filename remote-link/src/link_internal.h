/* Internal pieces shared by the client, the server and the transports. */
#ifndef MEARAS_LINK_INTERNAL_H
#define MEARAS_LINK_INTERNAL_H

#include "remote_link.h"
#include "transport.h"
#include "wire.h"

#include <stdint.h>

uint64_t link_now_ns(void);
void link_log(const struct mearas_link_config *cfg, enum mearas_link_log_level level,
	      const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Copy of cfg with zero fields replaced by defaults; key is not copied. */
void link_config_effective(const struct mearas_link_config *in, struct mearas_link_config *out);

/* Longest dead bound a link takes (the --link-dead-ms range of mearasd). */
#define LINK_DEAD_MS_MAX 600000u
/* Dead bound of a server link whose peer heartbeats every peer_heartbeat_ms
 * (a value the peer sends): a few of its periods, at least dead_ms, at most
 * LINK_DEAD_MS_MAX. */
uint32_t link_peer_dead_ms(uint32_t dead_ms, uint32_t peer_heartbeat_ms);

/* Reads exactly len bytes; fails with E_BROKEN when nothing arrives for dead_ms,
 * E_CLOSED when *stop becomes nonzero. *last_rx_ns is updated on progress. */
int link_read_exact(struct link_transport *t, void *buf, size_t len, uint32_t poll_ms,
		    uint32_t dead_ms, uint64_t *last_rx_ns, const int *stop);

/* ---- handshake (handshake.c) ---- */
struct link_handshake_result {
	enum mearas_link_transport transport;
	uint32_t peer_heartbeat_ms;
	char peer_name[64];
};
int link_handshake_client(int fd, const struct mearas_link_config *cfg);
/* Server side; logs refusals with peer (an "addr:port" string); the whole
 * handshake takes cfg->handshake_ms at most. */
int link_handshake_server(int fd, const struct mearas_link_config *cfg, const char *peer,
			  bool verbs_available, struct link_handshake_result *res);
/* Length-prefixed blob on the side channel (handshake and verbs setup). */
int link_send_blob(int fd, const void *buf, size_t len);
int link_recv_blob(int fd, void *buf, size_t cap, size_t *len, uint32_t timeout_ms);

#endif
