/* SPDX-License-Identifier: MIT */
/*
 * Serving one client, a CUDA process, on its connection (client.c): hello,
 * identity caps, the region and its vGPUs, then their threads until the
 * client goes away. Runs in the worker process mearasd forks per client.
 */
#ifndef MEARAS_CLIENT_H
#define MEARAS_CLIENT_H

struct backend_config;
struct tenant_peer;

/* Serves one accepted client connection; returns the exit status. peer:
 * the caller as the kernel told mearasd (SO_PEERCRED); slot: its worker
 * slot in the tenant table (tenant.h). */
int worker_serve_client(const struct backend_config *cfg, int sock, const struct tenant_peer *peer,
			unsigned slot);
/* The same for a caller inside mearasd (a remote vGPU's session on the
 * serving node): no identity checks, no per-identity accounting. */
int worker_serve(const struct backend_config *cfg, int sock);

#endif
