// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the receiving side of an encrypted link's records
 * (remote-link/src/transport_sealed.c, records.c) on a loopback TCP
 * connection. The fuzzer plays the peer: it seals messages of its choice
 * with the peer's key (or sends raw bytes), may flip one byte of the stream,
 * and writes it in pieces of a size it picks while the transport reads
 * with a buffer of a size it picks. Checks beyond the sanitizers: an intact
 * stream comes out byte for byte, then the peer's close reads as a broken
 * link; a flipped byte ends the link with an error, and nothing of the
 * altered record (or after it) comes out.
 *
 * Input:
 *   u8  flags   RECF_*
 *   u8  frag    most bytes the peer writes at once (0: as many as the socket takes;
 *               never fewer than a 4096th of the stream)
 *   u16 rcap    the reader's buffer (taken mod LINK_RX_BUF, plus 1)
 *   u16 flip    with RECF_FLIP: the stream byte flipped (taken mod its length)
 *   u8  back    both ends start this many records (mod 64) before the next key
 *   then, with RECF_RAW, the bytes the peer sends as they are; else messages,
 *   each { u16 len, u8 seed }: len bytes made from seed, sealed as one send
 *   of the link (records of at most 16 KiB).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_link.h"
#include "fuzz_seeds.h"
#include "records.h"

#define RECF_CHACHA 1u /* ChaCha20-Poly1305 (else AES-256-GCM) */
#define RECF_FLIP   2u
#define RECF_RAW    4u
#define STREAM_MAX  (1u << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t PEER_SECRET[LINK_REC_SECRET] = "the fuzzer's sending secret.....";
static const uint8_t OUR_SECRET[LINK_REC_SECRET] = "the transport's sending secret..";
static int listen_fd = -1;
static uint16_t listen_port;
static uint8_t *stream, *want, *got;

/* A connected loopback TCP pair: *ours for the transport, *peer for the fuzzer. */
static void tcp_pair(int *ours, int *peer)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(listen_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	*peer = socket(AF_INET, SOCK_STREAM, 0);
	must(*peer >= 0 && connect(*peer, (struct sockaddr *)&a, sizeof(a)) == 0, "connect");
	*ours = accept(listen_fd, NULL, NULL);
	must(*ours >= 0, "accept");
	must(fcntl(*peer, F_SETFL, O_NONBLOCK) == 0, "non-blocking peer");
}

/* Seals msg (len bytes) as the peer's link would send it: records of at most LINK_REC_MAX. */
static size_t seal_msg(struct link_rec_dir *tx, const uint8_t *msg, size_t len, uint8_t *out)
{
	size_t o = 0;

	while (len) {
		uint32_t n = len < LINK_REC_MAX ? (uint32_t)len : LINK_REC_MAX;

		must(link_rec_seal_begin(tx, out + o, n) == MEARAS_LINK_OK &&
			     link_rec_seal_part(tx, msg, n, out + o + LINK_REC_HDR) == MEARAS_LINK_OK &&
			     link_rec_seal_end(tx, out + o + LINK_REC_HDR + n) == MEARAS_LINK_OK,
		     "seal");
		o += LINK_REC_HDR + n + LINK_REC_TAG;
		msg += n;
		len -= n;
	}
	return o;
}

/* Everything the transport hands out now (its receive with no wait) onto
 * got; the status that stopped it (0: nothing more for now). */
static int drain(struct link_transport *t, size_t rcap, size_t *ngot)
{
	for (;;) {
		if (*ngot + rcap > STREAM_MAX)
			die("the transport handed out more than was sent");
		int n = t->ops->recv(t, got + *ngot, rcap, 0);

		if (n <= 0)
			return n;
		*ngot += (size_t)n;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_link_init(seeds_link_records);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	must(listen_fd >= 0 && bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(listen_fd, 4) == 0 &&
		     getsockname(listen_fd, (struct sockaddr *)&a, &al) == 0,
	     "listen");
	listen_port = ntohs(a.sin_port);
	stream = malloc(STREAM_MAX);
	want = malloc(STREAM_MAX);
	got = malloc(STREAM_MAX);
	must(stream && want && got, "buffers");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 7)
		return 0;
	uint8_t flags = data[0], frag = data[1], back = data[6] % 64;
	size_t rcap = ((size_t)data[2] | (size_t)data[3] << 8) % LINK_RX_BUF + 1;
	size_t flip = (size_t)data[4] | (size_t)data[5] << 8;
	const EVP_CIPHER *cipher = flags & RECF_CHACHA ? EVP_chacha20_poly1305() : EVP_aes_256_gcm();
	struct link_rec_dir ptx, prx, tx, rx;
	size_t nstream = 0, nwant = 0, ngot = 0;
	/* where each record's plaintext starts in want, by the record's start in stream */
	size_t rec_at[256], rec_want[256], nrec = 0;

	data += 7, size -= 7;
	must(link_rec_init_secrets(cipher, PEER_SECRET, OUR_SECRET, &ptx, &prx) == MEARAS_LINK_OK &&
		     link_rec_init_secrets(cipher, OUR_SECRET, PEER_SECRET, &tx, &rx) == MEARAS_LINK_OK,
	     "keys");
	ptx.seq = rx.seq = LINK_REC_REKEY - back;
	if (flags & RECF_RAW) {
		nstream = size < STREAM_MAX ? size : STREAM_MAX;
		memcpy(stream, data, nstream);
	} else {
		for (; size >= 3; data += 3, size -= 3) {
			size_t len = (size_t)data[0] | (size_t)data[1] << 8;
			uint32_t x = data[2] * 2654435761u + 1;

			if (nwant + len > STREAM_MAX / 2 || nrec + (len + LINK_REC_MAX - 1) / LINK_REC_MAX > 256)
				break;
			for (size_t i = 0; i < len; i++, x = x * 1103515245u + 12345u)
				want[nwant + i] = (uint8_t)(x >> 24);
			for (size_t o = 0; o < len; o += LINK_REC_MAX) {
				rec_at[nrec] = nstream + (o / LINK_REC_MAX) * LINK_REC_WIRE_MAX;
				rec_want[nrec++] = nwant + o;
			}
			nstream += seal_msg(&ptx, want + nwant, len, stream + nstream);
			nwant += len;
		}
	}
	/* the plaintext that may come out: all of it, or what precedes the altered record */
	size_t may = nwant;
	if ((flags & RECF_FLIP) && nstream) {
		flip %= nstream;
		stream[flip] ^= 0x5a;
		for (size_t r = 0; r < nrec && rec_at[r] <= flip; r++)
			may = rec_want[r];
	}
	link_rec_free(&ptx);
	link_rec_free(&prx);

	int ours, peer;
	struct link_transport *t = NULL;
	struct mearas_link_config cfg;

	mearas_link_config_init(&cfg);
	cfg.log = fuzz_link_log;
	tcp_pair(&ours, &peer);
	must(link_sealed_transport_open(ours, &tx, &rx, "fuzz", &cfg, "fuzz-peer", &t) == MEARAS_LINK_OK, "transport");
	int st = 0;
	size_t piece = frag ? frag : nstream;
	if (piece < nstream / 4096)
		piece = nstream / 4096; /* a few thousand writes at most */
	for (size_t sent = 0; sent < nstream && st >= 0;) {
		size_t n = nstream - sent < piece ? nstream - sent : piece;

		ssize_t w = send(peer, stream + sent, n, MSG_NOSIGNAL);

		if (w < 0 && errno != EAGAIN)
			break; /* the peer's end failed (the transport keeps its own open, even after a refusal): stop writing; what came out is still checked */
		if (w > 0)
			sent += (size_t)w;
		st = drain(t, rcap, &ngot);
	}
	shutdown(peer, SHUT_WR);
	for (int i = 0; i < 1000 && st >= 0; i++) {
		struct pollfd p = { .fd = ours, .events = POLLIN };

		poll(&p, 1, 10);
		st = drain(t, rcap, &ngot);
	}
	if (st >= 0)
		die("the transport neither ended nor saw the peer's close");
	if (ngot > may || memcmp(got, want, ngot) != 0)
		die("bytes came out that the peer did not seal");
	if (!(flags & (RECF_FLIP | RECF_RAW)) && (ngot != nwant || st != MEARAS_LINK_E_BROKEN))
		die("an intact stream did not come out whole, then end as closed");
	t->ops->destroy(t);
	close(peer);
	return 0;
}

/* Seeds: small and multi-record messages, the next key's boundary, both
 * ciphers, a flipped byte, raw bytes. */
int seeds_link_records(const char *dir)
{
	static const struct {
		const char *name;
		uint8_t flags, frag, back;
		uint16_t rcap, flip;
		uint16_t len[3];
	} s[] = {
		{ "small", 0, 0, 63, 65535, 0, { 100, 7, 0 } },
		{ "multi-record-fragmented", 0, 200, 63, 1000, 0, { 40000, 1, 0 } },
		{ "next-key", 0, 0, 1, 65535, 0, { 16384, 16384, 300 } },
		{ "chacha", RECF_CHACHA, 13, 2, 17, 0, { 5000, 0, 0 } },
		{ "flipped-body", RECF_FLIP, 0, 63, 65535, 30, { 100, 100, 0 } },
		{ "flipped-length", RECF_FLIP, 1, 63, 65535, 2, { 100, 0, 0 } },
	};
	struct seedbuf b = { 0 };
	int rc = 0;

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		sb_u8(&b, s[i].flags);
		sb_u8(&b, s[i].frag);
		sb_u8(&b, (uint8_t)s[i].rcap), sb_u8(&b, (uint8_t)(s[i].rcap >> 8));
		sb_u8(&b, (uint8_t)s[i].flip), sb_u8(&b, (uint8_t)(s[i].flip >> 8));
		sb_u8(&b, s[i].back);
		for (int m = 0; m < 3 && s[i].len[m]; m++) {
			sb_u8(&b, (uint8_t)s[i].len[m]), sb_u8(&b, (uint8_t)(s[i].len[m] >> 8));
			sb_u8(&b, (uint8_t)(i * 7 + m));
		}
		rc |= sb_write(&b, dir, s[i].name);
	}
	static const uint8_t raw[] = { RECF_RAW, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 80, 1, 2, 3, 0, 1, 0, 1 };
	sb_put(&b, raw, sizeof(raw));
	rc |= sb_write(&b, dir, "raw");
	return rc;
}
