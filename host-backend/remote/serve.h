/* SPDX-License-Identifier: MIT */
/*
 * The serving node of remote vGPUs (--link-port): a link server whose links
 * are remote vGPUs of other nodes' clients, each run by a worker process of
 * its own fed by the link's session (session.h).
 */
#ifndef MEARAS_REMOTE_SERVE_H
#define MEARAS_REMOTE_SERVE_H

#include <stdbool.h>

struct backend_config;

/* serve.c: starts the link server of cfg->remote (0, or -1 logged) */
int remote_serve_start(const struct backend_config *cfg);
void remote_serve_stop(void);

/* serve.c: the configuration remote_serve_start was given */
extern const struct backend_config *serve_cfg;
/* serve_worker.c: a link's session thread (its OPEN came): forks the
 * worker, replies, then reaps its completions until the link closes */
void *serve_session_main(void *session);
/* serve_worker.c: the link's receive thread between receives (spinning) or
 * before it waits (not spinning): while it spins, it reads the worker's
 * completions and sends the small replies itself */
struct remote_session;
void serve_rx_idle(struct remote_session *s, bool spinning);

#endif
