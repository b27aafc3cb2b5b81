/* The link's AEAD records (records.h): key schedule, sealing, opening. The
 * cryptography is OpenSSL's (the TLS exporter, HKDF, EVP AEAD); this file
 * only frames records and counts them. */
#include "records.h"
#include "remote_link.h"
#include "wire.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/ssl.h>
#include <sodium/core.h>
#include <string.h>

/* RFC 5705/8446 exporter label: both secrets of a connection at once */
static const char EXPORT_LABEL[] = "EXPORTER-mearas-link-records-v1";
static const char KEY_LABEL[] = "mearas-link record key";
static const char IV_LABEL[] = "mearas-link record iv";
static const char NEXT_LABEL[] = "mearas-link record next secret";

static bool expand(const uint8_t *secret, const char *label, uint8_t *out, size_t n)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, (char *)"EXPAND_ONLY", 0),
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, LINK_REC_SECRET),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)label, strlen(label)),
		OSSL_PARAM_construct_end(),
	};
	bool ok = kctx && EVP_KDF_derive(kctx, out, n, params) == 1;
	EVP_KDF_CTX_free(kctx);
	return ok;
}

/* key and IV of the current secret into the cipher context */
static bool load_key(struct link_rec_dir *d)
{
	uint8_t key[32];
	int klen = EVP_CIPHER_get_key_length(d->cipher);
	bool ok = klen > 0 && (size_t)klen <= sizeof(key) && expand(d->secret, KEY_LABEL, key, (size_t)klen) &&
		  expand(d->secret, IV_LABEL, d->iv, sizeof(d->iv)) &&
		  (d->seal ? EVP_EncryptInit_ex(d->ctx, NULL, NULL, key, NULL) :
			     EVP_DecryptInit_ex(d->ctx, NULL, NULL, key, NULL)) == 1 &&
		  (!d->small_ok || crypto_aead_aes256gcm_beforenm(&d->small, key) == 0);
	OPENSSL_cleanse(key, sizeof(key));
	d->seq = 0;
	return ok;
}

static bool next_key(struct link_rec_dir *d)
{
	uint8_t next[LINK_REC_SECRET];
	bool ok = expand(d->secret, NEXT_LABEL, next, sizeof(next));
	memcpy(d->secret, next, sizeof(next));
	OPENSSL_cleanse(next, sizeof(next));
	d->rekeys++;
	return ok && load_key(d);
}

static bool dir_init(struct link_rec_dir *d, const EVP_CIPHER *cipher, bool seal, const uint8_t *secret)
{
	memset(d, 0, sizeof(*d));
	d->cipher = cipher;
	d->seal = seal;
	memcpy(d->secret, secret, LINK_REC_SECRET);
	/* sodium_init: once per process, safe from any thread; < 0 only when
	 * it cannot start, and then OpenSSL takes every record */
	d->small_ok = EVP_CIPHER_get_nid(cipher) == NID_aes_256_gcm && sodium_init() >= 0 &&
		      crypto_aead_aes256gcm_is_available();
	d->ctx = EVP_CIPHER_CTX_new();
	return d->ctx &&
	       (seal ? EVP_EncryptInit_ex(d->ctx, cipher, NULL, NULL, NULL) :
		       EVP_DecryptInit_ex(d->ctx, cipher, NULL, NULL, NULL)) == 1 &&
	       load_key(d);
}

void link_rec_free(struct link_rec_dir *d)
{
	EVP_CIPHER_CTX_free(d->ctx);
	OPENSSL_cleanse(d, sizeof(*d)); /* the libsodium key schedule too */
}

int link_rec_init_secrets(const EVP_CIPHER *cipher, const uint8_t *tx_secret, const uint8_t *rx_secret,
			  struct link_rec_dir *tx, struct link_rec_dir *rx)
{
	memset(tx, 0, sizeof(*tx));
	memset(rx, 0, sizeof(*rx));
	if (cipher && dir_init(tx, cipher, true, tx_secret) && dir_init(rx, cipher, false, rx_secret))
		return MEARAS_LINK_OK;
	link_rec_free(tx);
	link_rec_free(rx);
	return MEARAS_LINK_E_SYS;
}

int link_rec_init(SSL *ssl, bool server, struct link_rec_dir *tx, struct link_rec_dir *rx)
{
	/* [0, 32): what the client sends, [32, 64): what the server sends */
	uint8_t km[2 * LINK_REC_SECRET];
	const SSL_CIPHER *c = SSL_get_current_cipher(ssl);
	uint16_t suite = c ? SSL_CIPHER_get_protocol_id(c) : 0;
	/* the records' own cipher, after the suite's kind: AES-256 where TLS
	 * chose AES-128-GCM (the key comes from the exporter either way) */
	const EVP_CIPHER *cipher = suite == 0x1301 ? EVP_aes_256_gcm() :
				   suite == 0x1303 ? EVP_chacha20_poly1305() : NULL;
	memset(tx, 0, sizeof(*tx));
	memset(rx, 0, sizeof(*rx));
	if (!cipher || SSL_export_keying_material(ssl, km, sizeof(km), EXPORT_LABEL, strlen(EXPORT_LABEL), NULL,
						  0, 0) != 1)
		return MEARAS_LINK_E_SYS;
	const uint8_t *mine = server ? km + LINK_REC_SECRET : km, *theirs = server ? km : km + LINK_REC_SECRET;
	int rc = link_rec_init_secrets(cipher, mine, theirs, tx, rx);
	OPENSSL_cleanse(km, sizeof(km));
	return rc;
}

/* the nonce of the next record; moves to the next key first when this one is used up */
static bool next_nonce(struct link_rec_dir *d, uint8_t nonce[12])
{
	if (d->seq == LINK_REC_REKEY && !next_key(d))
		return false;
	memcpy(nonce, d->iv, 12);
	for (int i = 0; i < 8; i++)
		nonce[4 + i] ^= (uint8_t)(d->seq >> (56 - 8 * i));
	d->seq++;
	return true;
}

/* OpenSSL's record: nonce and additional data into the context */
static bool start_record(struct link_rec_dir *d, const uint8_t *hdr)
{
	uint8_t nonce[12];
	if (!next_nonce(d, nonce))
		return false;
	int outl = 0;
	return (d->seal ? EVP_EncryptInit_ex(d->ctx, NULL, NULL, NULL, nonce) == 1 &&
				  EVP_EncryptUpdate(d->ctx, NULL, &outl, hdr, LINK_REC_HDR) == 1 :
			  EVP_DecryptInit_ex(d->ctx, NULL, NULL, NULL, nonce) == 1 &&
				  EVP_DecryptUpdate(d->ctx, NULL, &outl, hdr, LINK_REC_HDR) == 1);
}

int link_rec_seal_begin(struct link_rec_dir *d, uint8_t *hdr, uint32_t n)
{
	if (n == 0 || n > LINK_REC_MAX)
		return MEARAS_LINK_E_INVAL;
	wire_put_u32(hdr, n);
	return start_record(d, hdr) ? MEARAS_LINK_OK : MEARAS_LINK_E_SYS;
}

int link_rec_seal_part(struct link_rec_dir *d, const uint8_t *in, size_t len, uint8_t *out)
{
	int outl = 0;
	if (len > LINK_REC_MAX || EVP_EncryptUpdate(d->ctx, out, &outl, in, (int)len) != 1 || (size_t)outl != len)
		return MEARAS_LINK_E_SYS;
	return MEARAS_LINK_OK;
}

int link_rec_seal_end(struct link_rec_dir *d, uint8_t *tag)
{
	int outl = 0;
	uint8_t none[16];
	if (EVP_EncryptFinal_ex(d->ctx, none, &outl) != 1 || outl != 0 ||
	    EVP_CIPHER_CTX_ctrl(d->ctx, EVP_CTRL_AEAD_GET_TAG, LINK_REC_TAG, tag) != 1)
		return MEARAS_LINK_E_SYS;
	return MEARAS_LINK_OK;
}

static bool small_record(const struct link_rec_dir *d, uint32_t n)
{
	return d->small_ok && n <= LINK_REC_SMALL;
}

int link_rec_seal(struct link_rec_dir *d, uint8_t *rec, uint32_t n)
{
	uint8_t *body = rec + LINK_REC_HDR, nonce[12];
	if (!small_record(d, n)) {
		int rc = link_rec_seal_begin(d, rec, n);
		if (!rc)
			rc = link_rec_seal_part(d, body, n, body);
		return rc ? rc : link_rec_seal_end(d, body + n);
	}
	if (n == 0)
		return MEARAS_LINK_E_INVAL;
	wire_put_u32(rec, n);
	if (!next_nonce(d, nonce) || crypto_aead_aes256gcm_encrypt_detached_afternm(body, body + n, NULL, body, n, rec,
										      LINK_REC_HDR, NULL, nonce,
										      &d->small) != 0)
		return MEARAS_LINK_E_SYS;
	return MEARAS_LINK_OK;
}

uint32_t link_rec_len(const uint8_t *hdr)
{
	uint32_t n = wire_get_u32(hdr);
	return n >= 1 && n <= LINK_REC_MAX ? n : 0;
}

bool link_rec_open(struct link_rec_dir *d, uint8_t *rec, uint32_t n)
{
	uint8_t *body = rec + LINK_REC_HDR, none[16];
	int outl = 0, fin = 0;
	if (n == 0 || n > LINK_REC_MAX)
		return false;
	if (small_record(d, n)) {
		uint8_t nonce[12];
		return next_nonce(d, nonce) && crypto_aead_aes256gcm_decrypt_detached_afternm(
						       body, NULL, body, n, body + n, rec, LINK_REC_HDR, nonce, &d->small) == 0;
	}
	if (!start_record(d, rec))
		return false;
	return EVP_DecryptUpdate(d->ctx, body, &outl, body, (int)n) == 1 && (uint32_t)outl == n &&
	       EVP_CIPHER_CTX_ctrl(d->ctx, EVP_CTRL_AEAD_SET_TAG, LINK_REC_TAG, body + n) == 1 &&
	       EVP_DecryptFinal_ex(d->ctx, none, &fin) == 1 && fin == 0;
}

const char *link_rec_cipher_name(const struct link_rec_dir *d)
{
	return EVP_CIPHER_get_nid(d->cipher) == NID_chacha20_poly1305 ? "ChaCha20-Poly1305" : "AES-256-GCM";
}
