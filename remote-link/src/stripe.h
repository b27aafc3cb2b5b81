/* Striped bulk transfers: a TCP link's main connection may come with data
 * connections (mearas_link_config.streams), each authenticated by the same
 * handshake as the main one and bound to its link by a random link id that
 * the main connection's accept gave. A bulk transfer's chunks go round-robin
 * over them, each connection written by a thread of its own (with a TLS
 * session of its own when the link is encrypted), and then a BULK_END frame
 * on the main connection names the transfer (id, total): the server's main
 * connection reads nothing past it until every byte of the transfer has
 * landed, so a message posted after the transfer never overtakes its bytes.
 *
 * BULK_END body: { bulk_id u64 | total u64 }
 *
 * stripe_tx.c: the client's senders; stripe_rx.c: the server's accounting of
 * the chunks of each transfer (checked against what the transfer announced). */
#ifndef MEARAS_LINK_STRIPE_H
#define MEARAS_LINK_STRIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct link_transport;

#define LINK_STREAMS_MAX 16u    /* data connections a link may have */
#define LINK_ID_BYTES 16u
#define LINK_BULK_END_BODY 16u
/* transfers the data connections may run ahead of the main connection's
 * BULK_END (each holds one fixed-size slot on the server, no more) */
#define LINK_STRIPE_WINDOW 8u

/* What the handshake carries for striping (handshake.c). */
struct link_hs_stripe {
	uint32_t want;                  /* client, main connection: data connections wanted */
	bool bulk_in;                   /* ... and it reads bulk data the server sends on them */
	bool attach;                    /* client: this is a data connection of link_id */
	uint32_t index;                 /* ... its place, 0 .. granted - 1 */
	uint8_t link_id[LINK_ID_BYTES]; /* data connection: in; main connection: out */
	uint32_t granted;               /* main connection: out (0: none) */
};

/* ---- server side: one per striped link ---- */
struct link_stripe_rx;

struct link_stripe_rx *stripe_rx_new(uint32_t streams);
void stripe_rx_free(struct link_stripe_rx *rx);
uint32_t stripe_rx_streams(const struct link_stripe_rx *rx);
/* A data connection takes place index: false when the link is ending, the
 * index is out of range or taken. */
bool stripe_rx_attach(struct link_stripe_rx *rx, uint32_t index);
/* That connection's thread no longer touches the link. */
void stripe_rx_detach(struct link_stripe_rx *rx);
/* A chunk of transfer id (total bytes in all), len bytes at offset, is about
 * to be read: MEARAS_LINK_OK; E_PROTO when it contradicts the transfer (its
 * total, its range, bytes past the total, a transfer already ended); waits
 * while id is more than LINK_STRIPE_WINDOW transfers ahead of the last one
 * ended; E_CLOSED once the link is ending. */
int stripe_rx_chunk_begin(struct link_stripe_rx *rx, uint64_t id, uint64_t offset, uint64_t len, uint64_t total);
/* ... and its bytes have been handed over. */
void stripe_rx_chunk_end(struct link_stripe_rx *rx, uint64_t id, uint64_t len);
/* BULK_END of transfer id (total bytes): waits until all of them landed.
 * OK; E_PROTO when id is not the next transfer or total differs; E_BROKEN
 * when no chunk of it lands for dead_ms; E_CLOSED when the link is ending
 * or *stop is set. */
int stripe_rx_end(struct link_stripe_rx *rx, uint64_t id, uint64_t total, const int *stop, uint32_t dead_ms);
/* The link is ending: waiters return E_CLOSED, no data connection attaches
 * any more; then waits until every attached one has detached. */
void stripe_rx_close(struct link_stripe_rx *rx);
bool stripe_rx_closed(struct link_stripe_rx *rx);
void stripe_rx_wait_detached(struct link_stripe_rx *rx);

/* ---- client side ---- */
struct link_stripe_tx;
/* fail(ctx, index, status): stream index could not send; the link fails */
typedef void (*stripe_fail_fn)(void *ctx, uint32_t index, int status);

/* fail's index has this bit when the stream's reader failed */
#define STRIPE_FAIL_READ 0x80000000u
/* where a chunk the peer sent lands (NULL: refused, the link fails) */
typedef void *(*stripe_dest_fn)(void *ctx, uint64_t tag, uint64_t offset, uint64_t total, size_t len);

/* Takes over n transports (destroyed by stripe_tx_free; on failure too). */
int stripe_tx_new(struct link_transport **t, uint32_t n, size_t chunk_bytes, stripe_fail_fn fail, void *ctx,
		  struct link_stripe_tx **out);
/* The same; borrowed: the transports stay the caller's (not destroyed),
 * and must outlive stripe_tx_free. */
int stripe_tx_new_ex(struct link_transport **t, uint32_t n, size_t chunk_bytes, bool borrowed, stripe_fail_fn fail,
		     void *ctx, struct link_stripe_tx **out);
/* A reader thread per stream too: the chunks the peer sends go through rx
 * (its transfers' checks and counts) to where dest says. */
int stripe_tx_read(struct link_stripe_tx *tx, struct link_stripe_rx *rx, stripe_dest_fn dest, void *ctx);
uint32_t stripe_tx_streams(const struct link_stripe_tx *tx);
/* Sends len bytes of data as chunks (tag, id), round-robin over the
 * streams, each from data without a copy; returns when all are sent: OK, or
 * the error of a stream that failed. One caller at a time. *chunks: how many. */
int stripe_tx_send(struct link_stripe_tx *tx, uint64_t tag, uint64_t id, const void *data, size_t len,
		   uint64_t *chunks, uint64_t *bytes);
/* Every stream's connection shut: senders fail, stripe_tx_send returns. */
void stripe_tx_shutdown(struct link_stripe_tx *tx);
/* Tests: shuts stream index's connection only, as a network failure would. */
void stripe_tx_cut(struct link_stripe_tx *tx, uint32_t index);
void stripe_tx_free(struct link_stripe_tx *tx);

#endif
