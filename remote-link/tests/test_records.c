/* Tests of the link's AEAD records (src/records.h) without a socket: two
 * ends keyed from the same secrets, records sealed by one and opened by the
 * other in place. Short AES-256-GCM records go through libsodium, longer
 * ones through OpenSSL; an end whose small_ok is cleared uses OpenSSL for
 * all, which is how the two are checked against each other (the format is
 * one: either end may use either). One case per behaviour
 * (`test_records NAME` runs one). */
#include "records.h"
#include "remote_link.h"

#define CHECK_RC_NAME(code) mearas_link_strerror(code)
#include "check.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t A_SECRET[LINK_REC_SECRET] = "secret of what end A sends.....";
static const uint8_t B_SECRET[LINK_REC_SECRET] = "secret of what end B sends.....";

/* end A seals with atx, end B opens with brx (and the other way) */
static struct link_rec_dir atx, arx, btx, brx;
static uint8_t rec[LINK_REC_WIRE_MAX], plain[LINK_REC_MAX];

static void keys(const EVP_CIPHER *cipher)
{
	REQUIRE_RC(link_rec_init_secrets(cipher, A_SECRET, B_SECRET, &atx, &arx), MEARAS_LINK_OK);
	REQUIRE_RC(link_rec_init_secrets(cipher, B_SECRET, A_SECRET, &btx, &brx), MEARAS_LINK_OK);
}

static void teardown(void)
{
	link_rec_free(&atx);
	link_rec_free(&arx);
	link_rec_free(&btx);
	link_rec_free(&brx);
}

static void fill(uint32_t n, unsigned salt)
{
	for (uint32_t i = 0; i < n; i++)
		plain[i] = (uint8_t)(i * 31u + salt);
}

/* seals n bytes of plain into rec with tx (whole, in place) */
static int seal(struct link_rec_dir *tx, uint32_t n)
{
	memcpy(rec + LINK_REC_HDR, plain, n);
	return link_rec_seal(tx, rec, n);
}

/* opens rec with rx: true when it authenticates and gives plain back */
static bool opens(struct link_rec_dir *rx, uint32_t n)
{
	return link_rec_len(rec) == n && link_rec_open(rx, rec, n) && !memcmp(rec + LINK_REC_HDR, plain, n);
}

static const uint32_t SIZES[] = { 1, 4, 100, LINK_REC_SMALL - 1, LINK_REC_SMALL, LINK_REC_SMALL + 1, 4096, LINK_REC_MAX };
#define NSIZES (sizeof(SIZES) / sizeof(SIZES[0]))

/* The AES suite's records use libsodium for short records where the CPU
 * allows (the CI machine's does: it has AES-NI); ChaCha20's never. */
static void t_short_aes_records_take_libsodium(void)
{
	keys(EVP_aes_256_gcm());
	CHECK(atx.small_ok == (crypto_aead_aes256gcm_is_available() != 0));
	CHECK(crypto_aead_aes256gcm_is_available());
	teardown();
	keys(EVP_chacha20_poly1305());
	CHECK(!atx.small_ok && !brx.small_ok);
}

/* Records of every size, sealed by one end, open at the other intact. */
static void t_records_open_at_the_peer(void)
{
	keys(EVP_aes_256_gcm());
	for (size_t i = 0; i < NSIZES; i++) {
		fill(SIZES[i], (unsigned)i);
		CHECK_RC(seal(&atx, SIZES[i]), MEARAS_LINK_OK);
		CHECK_MSG(opens(&brx, SIZES[i]), "a record of %u bytes", SIZES[i]);
		CHECK_RC(seal(&btx, SIZES[i]), MEARAS_LINK_OK);
		CHECK_MSG(opens(&arx, SIZES[i]), "a record of %u bytes back", SIZES[i]);
	}
}

/* Short records sealed by libsodium open with OpenSSL, and the other way:
 * one format, either implementation at either end. */
static void t_libsodium_and_openssl_agree(void)
{
	keys(EVP_aes_256_gcm());
	brx.small_ok = false; /* B opens everything with OpenSSL */
	btx.small_ok = false; /* and seals everything with it */
	for (size_t i = 0; i < NSIZES; i++) {
		fill(SIZES[i], 7u + (unsigned)i);
		CHECK_RC(seal(&atx, SIZES[i]), MEARAS_LINK_OK);
		CHECK_MSG(opens(&brx, SIZES[i]), "A (libsodium up to %u bytes) to B (OpenSSL): %u bytes", LINK_REC_SMALL,
			  SIZES[i]);
		CHECK_RC(seal(&btx, SIZES[i]), MEARAS_LINK_OK);
		CHECK_MSG(opens(&arx, SIZES[i]), "B (OpenSSL) to A (libsodium up to %u bytes): %u bytes", LINK_REC_SMALL,
			  SIZES[i]);
	}
}

/* Across several moves to the next key, short and long records keep
 * opening, with libsodium at one end and OpenSSL at the other. */
static void t_next_key_in_both_implementations(void)
{
	keys(EVP_aes_256_gcm());
	brx.small_ok = false;
	unsigned bad = 0;
	for (unsigned i = 0; i < 3 * LINK_REC_REKEY + 10; i++) {
		uint32_t n = i % 5 ? 64 : 2000;
		fill(n, i);
		if (seal(&atx, n) != MEARAS_LINK_OK || !opens(&brx, n))
			bad++;
	}
	CHECK(bad == 0);
	CHECK(atx.rekeys == 3 && brx.rekeys == 3);
}

/* A bit changed anywhere in a short record (length, ciphertext, tag): it
 * does not open. */
static void t_altered_short_record_refused(void)
{
	const uint32_t n = 100;
	size_t wire = LINK_REC_HDR + n + LINK_REC_TAG;
	keys(EVP_aes_256_gcm());
	fill(n, 3);
	for (size_t at = 0; at < wire; at += 7) {
		/* both ends stay in step: a fresh pair for each try */
		teardown();
		keys(EVP_aes_256_gcm());
		REQUIRE_RC(seal(&atx, n), MEARAS_LINK_OK);
		rec[at] ^= 0x10;
		uint32_t len = link_rec_len(rec);
		CHECK_MSG(len != n || !link_rec_open(&brx, rec, n), "byte %zu changed, the record still opened", at);
	}
}

/* a copy of a record sealed before the one in rec */
static uint8_t first[LINK_REC_WIRE_MAX];

/* fresh AES keys; n bytes (salt) sealed by A, kept in first as well as in rec */
static void seal_first(uint32_t n, unsigned salt)
{
	teardown();
	keys(EVP_aes_256_gcm());
	fill(n, salt);
	REQUIRE_RC(seal(&atx, n), MEARAS_LINK_OK);
	memcpy(first, rec, sizeof(first));
}

/* A short record replayed (opened twice), or the second of two opened
 * first, does not open: each record has its own nonce. */
static void t_replayed_or_reordered_short_record_refused(void)
{
	const uint32_t n = 48;
	seal_first(n, 5);
	CHECK(opens(&brx, n));
	memcpy(rec, first, sizeof(first));
	CHECK(!link_rec_open(&brx, rec, n)); /* replayed */
	seal_first(n, 5);
	REQUIRE_RC(seal(&atx, n), MEARAS_LINK_OK);
	CHECK(!link_rec_open(&brx, rec, n)); /* the second before the first */
}

/* The same bytes sealed twice differ (a new nonce each time), and the
 * plaintext is not in the record. */
static void t_short_record_is_encrypted(void)
{
	const uint32_t n = 64;
	seal_first(n, 9);
	CHECK(memcmp(first + LINK_REC_HDR, plain, n) != 0);
	REQUIRE_RC(seal(&atx, n), MEARAS_LINK_OK);
	CHECK(memcmp(first + LINK_REC_HDR, rec + LINK_REC_HDR, n + LINK_REC_TAG) != 0);
}

/* An empty record is refused by the sealing end (a length of 0 is never
 * on the wire). */
static void t_empty_record_refused(void)
{
	keys(EVP_aes_256_gcm());
	CHECK_RC(link_rec_seal(&atx, rec, 0), MEARAS_LINK_E_INVAL);
	CHECK_RC(link_rec_seal(&atx, rec, LINK_REC_MAX + 1), MEARAS_LINK_E_INVAL);
}

#define T(fn) { #fn + 2, fn }
static const struct check_case cases[] = {
	T(t_short_aes_records_take_libsodium),
	T(t_records_open_at_the_peer),
	T(t_libsodium_and_openssl_agree),
	T(t_next_key_in_both_implementations),
	T(t_altered_short_record_refused),
	T(t_replayed_or_reordered_short_record_refused),
	T(t_short_record_is_encrypted),
	T(t_empty_record_refused),
};
CHECK_MAIN_FIXTURE(cases, NULL, teardown)
