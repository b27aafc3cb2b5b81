/* The records an encrypted link carries after its TLS 1.3 handshake: an AEAD
 * record layer of the link's own, keyed from the TLS session (RFC 8446's
 * exporter), so that sending and receiving share no state and a small
 * message costs one AEAD operation instead of a TLS record's processing
 * under a lock both directions take.
 *
 * A record on the wire: a 4-byte big-endian plaintext length n
 * (1..LINK_REC_MAX), n bytes of ciphertext, a 16-byte tag. The length is the
 * additional data. Each direction has its own secret; its key and IV come
 * from it with HKDF-Expand, and the nonce of a record is the IV with the
 * record's sequence number (under the current key) XORed into its last 8
 * bytes, as in TLS 1.3. After LINK_REC_REKEY records a direction moves to the
 * next secret (HKDF-Expand of the last one, as TLS 1.3's KeyUpdate) and its
 * sequence starts again: both ends count records, nothing is sent. The
 * cipher follows the suite the TLS handshake chose: AES-256-GCM for its AES
 * suite, ChaCha20-Poly1305 for its ChaCha20 one. TCP delivers in order, so a
 * record dropped, replayed, reordered, cut or altered fails to open and the
 * link ends.
 *
 * AES-256-GCM records of up to LINK_REC_SMALL bytes (a call, a reply) are
 * sealed and opened with libsodium's AES-NI code where the CPU has it, the
 * longer ones with OpenSSL's EVP AEAD: the same cipher, key and nonce, so
 * either end may use either. Measured on an H200 node's CPU: a 100-byte
 * record costs both about 0.4-0.45 us in a loop, but with other work between
 * records (as in mearasd) OpenSSL's longer path through EVP and its provider
 * costs 0.6-0.7 us and more, libsodium's one call 0.42-0.45; OpenSSL is
 * several times faster per byte (AES-GCM stitched), so it keeps the rest. */
#ifndef MEARAS_LINK_RECORDS_H
#define MEARAS_LINK_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium/crypto_aead_aes256gcm.h>

typedef struct ssl_st SSL;
typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;
typedef struct evp_cipher_st EVP_CIPHER;

#define LINK_REC_HDR 4u
#define LINK_REC_TAG 16u
#define LINK_REC_MAX 16384u /* plaintext bytes of one record, at most */
#define LINK_REC_WIRE_MAX (LINK_REC_HDR + LINK_REC_MAX + LINK_REC_TAG)
/* records under one key: far below AES-GCM's limits (RFC 8446 5.5 allows
 * about 2^24.5 full records), and a rekey (three HKDF-Expand) every 4096
 * records costs nothing measurable */
#define LINK_REC_REKEY 4096u
#define LINK_REC_SECRET 32u
/* records this short go through libsodium (see above); where the two cost
 * the same per record in a loop on the H200 node's CPU is about 300 bytes */
#define LINK_REC_SMALL 512u

/* One direction: sealing (ours) or opening (the peer's). */
struct link_rec_dir {
	crypto_aead_aes256gcm_state small; /* the key for libsodium, when small_ok */
	EVP_CIPHER_CTX *ctx;
	const EVP_CIPHER *cipher;
	bool seal;
	bool small_ok; /* AES-256-GCM and a CPU libsodium's AES-GCM runs on */
	uint8_t secret[LINK_REC_SECRET];
	uint8_t iv[12];
	uint64_t seq; /* records under the current key */
	uint64_t rekeys;
};

/* Both directions of a connection whose TLS handshake is done (ssl: the
 * server side when server): tx seals what this end sends, rx opens what the
 * peer sends. MEARAS_LINK_OK, else E_SYS (both left freed). */
int link_rec_init(SSL *ssl, bool server, struct link_rec_dir *tx, struct link_rec_dir *rx);
/* The same from the two secrets (LINK_REC_SECRET bytes each; cipher
 * EVP_aes_256_gcm() or EVP_chacha20_poly1305()): what link_rec_init does
 * after the export, and how the fuzz target keys both ends. */
int link_rec_init_secrets(const EVP_CIPHER *cipher, const uint8_t *tx_secret, const uint8_t *rx_secret,
			  struct link_rec_dir *tx, struct link_rec_dir *rx);
void link_rec_free(struct link_rec_dir *d);

/* Sealing one record of n plaintext bytes: begin writes its header at out,
 * part encrypts in (len bytes; the parts add up to n) to out, end writes the
 * tag at tag. The record's ciphertext is contiguous: part's out moves on by
 * len each time. */
int link_rec_seal_begin(struct link_rec_dir *d, uint8_t *hdr, uint32_t n);
int link_rec_seal_part(struct link_rec_dir *d, const uint8_t *in, size_t len, uint8_t *out);
int link_rec_seal_end(struct link_rec_dir *d, uint8_t *tag);
/* Seals one whole record in place: its n plaintext bytes lie at
 * rec + LINK_REC_HDR; the header goes before them, the tag after. */
int link_rec_seal(struct link_rec_dir *d, uint8_t *rec, uint32_t n);

/* The plaintext length of the record whose header is hdr: 1..LINK_REC_MAX,
 * or 0 when out of bounds (refuse it). */
uint32_t link_rec_len(const uint8_t *hdr);
/* Opens the whole record at rec (header, n bytes of ciphertext, tag; n from
 * link_rec_len) in place: the plaintext then lies at rec + LINK_REC_HDR.
 * false when it does not authenticate (altered, forged, out of order). */
bool link_rec_open(struct link_rec_dir *d, uint8_t *rec, uint32_t n);

/* "AES-256-GCM" or "ChaCha20-Poly1305", for the link's log line */
const char *link_rec_cipher_name(const struct link_rec_dir *d);

#endif
