/* SPDX-License-Identifier: MIT */
/*
 * Inputs of the remote-link targets (also written by seeds_link.c).
 *
 * fuzz_link_msg: the data plane after the handshake, encryption off.
 *   u8  flags    LINKF_*
 *   u8  frag     the most bytes one receive call hands over (0: all asked)
 *   client side only:
 *     u8  ncalls (taken mod LINK_FUZZ_MAX_CALLS)
 *     ncalls x { u8 kind (LINK_CALL_*), u8 cap_lo, u8 cap_hi, u8 step }
 *       async: a reply buffer of cap bytes; stream: reads of step + 1 bytes,
 *       of at most cap bytes in all (the rest is left for the link to skip)
 *   then the bytes the peer sends: frames (remote-link/src/wire.h)
 *
 * fuzz_link_handshake: the handshake on a socket pair.
 *   u8  flags    HSF_*
 *   then the bytes the peer sends (it never sees what this end sends)
 */
#ifndef MEARAS_FUZZ_LINK_H
#define MEARAS_FUZZ_LINK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz_die.h"
#include "link_internal.h"

#define LINKF_CLIENT     1u  /* the peer is a server: it sends replies to our calls */
#define LINKF_CHUNK_DEST 2u  /* server: chunk_dest places bulk bytes in a sink */
#define LINKF_REPLY      4u  /* server: answer each message that wants a reply */

#define LINK_CALL_STREAM 1u  /* else an asynchronous call with a buffer */
#define LINK_FUZZ_MAX_CALLS 16u
#define LINK_FUZZ_SINK   (64u << 10) /* chunk_dest's sink: tags 0 and 1 */

#define HSF_CLIENT  1u  /* this end is the client; the peer plays the server */
#define HSF_TLS     2u  /* encryption on (both ends' setting, from this end's view) */
#define HSF_NOKEY   4u  /* server: no cluster key configured */
#define HSF_VERBS   8u  /* server: verbs available; client: asks for verbs (encryption off) */

#define FUZZ_LINK_KEY "fuzz-cluster-key-0123456789abcdef"

/* A transport over fuzzer bytes: receives hand them out (frag bytes at a
 * time at most, 0: no limit) and then fail as a closed connection would;
 * sends are checked for readable memory and dropped. gated: receives wait
 * until mem_transport_open (the client's calls are registered first). */
struct link_transport *mem_transport_new(const uint8_t *data, size_t len, uint8_t frag, bool gated);
void mem_transport_open(struct link_transport *t);

/* A log callback that drops everything unless FUZZ_VERBOSE is set. */
void fuzz_link_log(void *ctx, enum mearas_link_log_level level, const char *msg);

/* Seed writers (FUZZ_WRITE_SEEDS=DIR build/fuzz_link_*): 0 or -1. */
int seeds_link_msg(const char *dir);
int seeds_link_handshake(const char *dir);
int seeds_link_records(const char *dir);

/* LLVMFuzzerInitialize of the link targets: SIGPIPE ignored (as in
 * mearasd), then their seeds written when asked (fuzz_seeds_if_asked). */
static inline void fuzz_link_init(int (*write_seeds)(const char *dir))
{
	signal(SIGPIPE, SIG_IGN);
	fuzz_seeds_if_asked(write_seeds);
}

#endif
