/* SPDX-License-Identifier: MIT */
/*
 * What encrypting one small link message costs in user space, with no
 * socket: TLS 1.3 (OpenSSL's SSL_write/SSL_read of one record between two
 * SSL objects joined by a BIO pair, the cipher suite remote-link negotiates)
 * beside the AEAD alone (EVP AES-128-GCM seal and open of the same bytes, a
 * fresh nonce each) and the link's own records as remote-link ships them
 * (remote-link/src/records.h: AES-256-GCM, libsodium up to LINK_REC_SMALL
 * bytes, EVP above, sealed and opened in place). The gap is OpenSSL's record
 * layer; the AEAD is the floor of any encrypted link. Printed, never judged.
 * TOUCH_KIB: that much other memory is read and written between two
 * messages (default 0), as a daemon's other work does between its records:
 * the caches are then no longer the AEAD's alone.
 *   tls_cost [BYTES [ROUNDS [TOUCH_KIB]]]     (default 128 bytes, 200000 rounds)
 * Output: "MEASURE tls_cost ..." lines; exit status 1 if a step failed.
 */
#include <stdbool.h>

#include "records.h"
#include "remote_link.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SUITE "TLS_AES_128_GCM_SHA256"
#define MAX_BYTES 16384

static const unsigned char psk_key[32] = "tls_cost: a fixed key, 32 bytes";

/* other work between two messages: TOUCH_KIB of memory read and written */
static unsigned char *touch_buf;
static size_t touch_len;

static void touch(void)
{
	for (size_t i = 0; i < touch_len; i += 64)
		touch_buf[i]++;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static unsigned int server_psk(SSL *ssl, const char *identity, unsigned char *psk, unsigned int max)
{
	(void)ssl;
	(void)identity;
	if (max < sizeof(psk_key))
		return 0;
	memcpy(psk, psk_key, sizeof(psk_key));
	return sizeof(psk_key);
}

static unsigned int client_psk(SSL *ssl, const char *hint, char *identity, unsigned int max_identity,
			       unsigned char *psk, unsigned int max)
{
	(void)ssl;
	(void)hint;
	if (max_identity < 2 || max < sizeof(psk_key))
		return 0;
	strcpy(identity, "b");
	memcpy(psk, psk_key, sizeof(psk_key));
	return sizeof(psk_key);
}

static SSL *side(SSL_CTX **ctx, bool server)
{
	*ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (!*ctx || !SSL_CTX_set_min_proto_version(*ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_ciphersuites(*ctx, SUITE))
		return NULL;
	if (server)
		SSL_CTX_set_psk_server_callback(*ctx, server_psk);
	else
		SSL_CTX_set_psk_client_callback(*ctx, client_psk);
	return SSL_new(*ctx);
}

/* the mean over the rounds (a micro figure: its spread is small) */
static int tls_figures(size_t bytes, int rounds)
{
	SSL_CTX *cctx, *sctx;
	SSL *c = side(&cctx, false), *s = side(&sctx, true);
	BIO *cb, *sb;
	unsigned char msg[MAX_BYTES] = { 0 }, got[MAX_BYTES];
	double seal = 0, open = 0;

	if (!c || !s || !BIO_new_bio_pair(&cb, 1 << 20, &sb, 1 << 20))
		return 1;
	SSL_set_bio(c, cb, cb);
	SSL_set_bio(s, sb, sb);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	for (int i = 0; i < 16 && !(SSL_is_init_finished(c) && SSL_is_init_finished(s)); i++) {
		SSL_do_handshake(c);
		SSL_do_handshake(s);
	}
	if (!SSL_is_init_finished(c) || !SSL_is_init_finished(s)) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	for (int i = 0; i < rounds; i++) {
		size_t n = 0;
		touch();
		double t0 = now_ns();
		if (!SSL_write_ex(c, msg, bytes, &n) || n != bytes)
			return 1;
		double t1 = now_ns();
		if (!SSL_read_ex(s, got, sizeof(got), &n) || n != bytes)
			return 1;
		open += now_ns() - t1;
		seal += t1 - t0;
	}
	printf("MEASURE tls_cost %zu bytes, TLS 1.3 %s (OpenSSL %s): SSL_write %.0f ns, SSL_read %.0f ns\n",
	       bytes, SSL_CIPHER_get_name(SSL_get_current_cipher(c)), OpenSSL_version(OPENSSL_VERSION_STRING),
	       seal / rounds, open / rounds);
	SSL_free(c);
	SSL_free(s);
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
	return 0;
}

static int aead_figures(size_t bytes, int rounds)
{
	static const unsigned char key[16] = "tls_cost aeadkey";
	EVP_CIPHER_CTX *e = EVP_CIPHER_CTX_new(), *d = EVP_CIPHER_CTX_new();
	unsigned char iv[12] = { 0 }, aad[5] = { 23, 3, 3, 0, 0 }, tag[16];
	unsigned char msg[MAX_BYTES] = { 0 }, sealed[MAX_BYTES], got[MAX_BYTES];
	double seal = 0, open = 0;
	int len;

	if (!e || !d || !EVP_EncryptInit_ex(e, EVP_aes_128_gcm(), NULL, key, iv) ||
	    !EVP_DecryptInit_ex(d, EVP_aes_128_gcm(), NULL, key, iv))
		return 1;
	for (int i = 0; i < rounds; i++) {
		memcpy(iv, &i, sizeof(i)); /* a fresh nonce per message, as a sequence number gives */
		touch();
		double t0 = now_ns();
		if (!EVP_EncryptInit_ex(e, NULL, NULL, NULL, iv) || !EVP_EncryptUpdate(e, NULL, &len, aad, sizeof(aad)) ||
		    !EVP_EncryptUpdate(e, sealed, &len, msg, (int)bytes) || !EVP_EncryptFinal_ex(e, sealed + len, &len) ||
		    !EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_GCM_GET_TAG, sizeof(tag), tag))
			return 1;
		double t1 = now_ns();
		if (!EVP_DecryptInit_ex(d, NULL, NULL, NULL, iv) || !EVP_DecryptUpdate(d, NULL, &len, aad, sizeof(aad)) ||
		    !EVP_DecryptUpdate(d, got, &len, sealed, (int)bytes) ||
		    !EVP_CIPHER_CTX_ctrl(d, EVP_CTRL_GCM_SET_TAG, sizeof(tag), tag) ||
		    EVP_DecryptFinal_ex(d, got + len, &len) <= 0)
			return 1;
		open += now_ns() - t1;
		seal += t1 - t0;
	}
	printf("MEASURE tls_cost %zu bytes, AEAD alone (EVP AES-128-GCM): seal %.0f ns, open %.0f ns\n", bytes,
	       seal / rounds, open / rounds);
	EVP_CIPHER_CTX_free(e);
	EVP_CIPHER_CTX_free(d);
	return 0;
}

/* the link's records as remote-link seals and opens them */
static int record_figures(size_t bytes, int rounds)
{
	static const uint8_t a[LINK_REC_SECRET] = "tls_cost: secret of one end....", b[LINK_REC_SECRET] =
		"tls_cost: secret of the other..";
	static uint8_t rec[LINK_REC_WIRE_MAX];
	struct link_rec_dir tx, rx, ptx, prx;
	double seal = 0, open = 0;
	int rc = 0;

	if (link_rec_init_secrets(EVP_aes_256_gcm(), a, b, &tx, &rx) != MEARAS_LINK_OK)
		return 1;
	if (link_rec_init_secrets(EVP_aes_256_gcm(), b, a, &ptx, &prx) != MEARAS_LINK_OK) {
		link_rec_free(&tx);
		link_rec_free(&rx);
		return 1;
	}
	for (int i = 0; i < rounds && !rc; i++) {
		memset(rec + LINK_REC_HDR, i, bytes);
		touch();
		double t0 = now_ns();
		rc = link_rec_seal(&tx, rec, (uint32_t)bytes);
		double t1 = now_ns();
		if (!rc && !link_rec_open(&prx, rec, (uint32_t)bytes))
			rc = 1;
		open += now_ns() - t1;
		seal += t1 - t0;
	}
	if (!rc)
		printf("MEASURE tls_cost %zu bytes, link records (%s, %s): seal %.0f ns, open %.0f ns\n", bytes,
		       link_rec_cipher_name(&tx), tx.small_ok && bytes <= LINK_REC_SMALL ? "libsodium" : "OpenSSL EVP",
		       seal / rounds, open / rounds);
	link_rec_free(&tx);
	link_rec_free(&rx);
	link_rec_free(&ptx);
	link_rec_free(&prx);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	long bytes = argc > 1 ? strtol(argv[1], NULL, 10) : 128;
	long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 200000;
	long touch_kib = argc > 3 ? strtol(argv[3], NULL, 10) : 0;

	if (argc > 4 || bytes < 1 || bytes > MAX_BYTES || rounds < 1 || rounds > 100000000 || touch_kib < 0 ||
	    touch_kib > (1l << 20)) {
		fprintf(stderr, "usage: tls_cost [BYTES (1-%d) [ROUNDS [TOUCH_KIB (0-1048576)]]]\n", MAX_BYTES);
		return 2;
	}
	touch_len = (size_t)touch_kib << 10;
	touch_buf = touch_len ? calloc(1, touch_len) : NULL;
	if (touch_len && !touch_buf)
		return 1;
	if (tls_figures((size_t)bytes, (int)rounds) || aead_figures((size_t)bytes, (int)rounds) ||
	    record_figures((size_t)bytes, (int)rounds)) {
		fprintf(stderr, "tls_cost: a TLS or AEAD step failed\n");
		ERR_print_errors_fp(stderr);
		return 1;
	}
	return 0;
}
