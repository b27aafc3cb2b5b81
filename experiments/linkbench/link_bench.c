/* SPDX-License-Identifier: MIT */
/*
 * Throughput figures of remote-link, printed, never judged (the loopback
 * tests of remote-link/tests check behaviour; what a link costs against raw
 * TCP is measured here). One mode per run:
 *   link_bench loopback [--bulk-mib=N]   in one process over 127.0.0.1:
 *       64-byte posts with batching on and off (msg/s), and a bulk transfer
 *       with link encryption on and off beside raw TCP (MB/s)
 *   link_bench rawsink ADDR PORT SESSIONS   raw TCP sink (for netns_bench.sh)
 *   link_bench rawsend HOST PORT MIB        raw TCP sender: "MEASURE raw X MB/s"
 * Output: "MEASURE ..." lines. Exit status 0 unless a transfer failed.
 */
#include "bench_raw.h"
#include "remote_link.h"
#include "test_server.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const uint8_t KEY[] = "bench-cluster-key-0123456789";

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void base_cfg(struct mearas_link_config *c, enum mearas_link_encryption enc)
{
	mearas_link_config_init(c);
	c->key = KEY;
	c->key_len = strlen((const char *)KEY);
	c->encryption = enc;
}

static int server_start(struct ts_local *s, enum mearas_link_encryption enc)
{
	struct mearas_link_config cfg;
	base_cfg(&cfg, enc);
	return ts_local_start(s, "127.0.0.1", 0, &cfg);
}

/* n 64-byte posts then a synchronizing call: messages per second, -1 on failure */
static double message_rate(uint16_t port, uint32_t batch_max_msgs, uint32_t n)
{
	struct mearas_link_config cfg;
	base_cfg(&cfg, MEARAS_LINK_ENCRYPTION_TLS);
	cfg.batch_max_msgs = batch_max_msgs;
	struct mearas_link *l = NULL;
	if (mearas_link_connect("127.0.0.1", port, &cfg, &l))
		return -1;
	uint8_t m[64] = { 'X' };
	double t0 = now_s();
	uint32_t i = 0;
	while (i < n && !mearas_link_post(l, m, sizeof(m)))
		i++;
	uint64_t bulk;
	int rc = mearas_link_call(l, "S", 1, &bulk, sizeof(bulk), NULL, 30000);
	double dt = now_s() - t0;
	mearas_link_close(l);
	return rc || i < n ? -1 : n / dt;
}

/* Bulk throughput of a link with encryption enc (MB/s), -1 on failure. */
static double link_bulk_mbs(enum mearas_link_encryption enc, const uint8_t *data, size_t bytes)
{
	struct ts_local s;
	struct mearas_link_config cfg;
	struct mearas_link *l = NULL;
	double mbs = -1;
	if (server_start(&s, enc))
		return -1;
	base_cfg(&cfg, enc);
	if (mearas_link_connect("127.0.0.1", s.port, &cfg, &l) == MEARAS_LINK_OK) {
		double t0 = now_s();
		int rc = mearas_link_bulk(l, 1, data, bytes);
		uint64_t got = 0;
		if (!rc)
			rc = mearas_link_call(l, "S", 1, &got, sizeof(got), NULL, 30000);
		if (!rc && got == bytes)
			mbs = bytes / (now_s() - t0) / 1e6;
		mearas_link_close(l);
	}
	mearas_link_server_stop(s.srv);
	return mbs;
}

struct sink_arg {
	int fd;
};

static void *sink_main(void *p)
{
	struct sink_arg *a = p;
	raw_sink_serve(a->fd, 1);
	return NULL;
}

static int loopback(size_t bulk_mib)
{
	struct ts_local s;
	int failed = 0;

	/* small messages: what batching buys */
	if (server_start(&s, MEARAS_LINK_ENCRYPTION_TLS))
		return 1;
	double on = message_rate(s.port, 256, 300000);
	double off = message_rate(s.port, 1, 100000);
	mearas_link_server_stop(s.srv);
	printf("MEASURE loopback 64-byte posts: batching on %.0f msg/s, off %.0f msg/s (x%.1f)\n", on, off,
	       off > 0 ? on / off : 0);
	failed |= on <= 0 || off <= 0;

	/* bulk: the link encrypted and not, beside raw TCP written the same way */
	const size_t bytes = bulk_mib << 20, chunk = 1u << 20;
	uint8_t *data = malloc(bytes);
	if (!data)
		return 1;
	memset(data, 0x5a, bytes);
	double tls_mbs = link_bulk_mbs(MEARAS_LINK_ENCRYPTION_TLS, data, bytes);
	double plain_mbs = link_bulk_mbs(MEARAS_LINK_ENCRYPTION_OFF, data, bytes);
	free(data);
	uint16_t rport = 0;
	struct sink_arg sa = { raw_sink_listen("127.0.0.1", 0, &rport) };
	pthread_t th;
	double raw_mbs = -1;
	if (sa.fd >= 0 && !pthread_create(&th, NULL, sink_main, &sa)) {
		raw_mbs = raw_send("127.0.0.1", rport, bytes, chunk);
		pthread_join(th, NULL);
	}
	if (sa.fd >= 0)
		close(sa.fd);
	printf("MEASURE loopback bulk %zu MiB, 1 MiB chunks: link %.0f MB/s encrypted, %.0f MB/s encryption off; "
	       "raw TCP %.0f MB/s\n", bulk_mib, tls_mbs, plain_mbs, raw_mbs);
	if (raw_mbs > 0)
		printf("MEASURE loopback bulk, share of raw TCP: encrypted %.2f, encryption off %.2f\n",
		       tls_mbs / raw_mbs, plain_mbs / raw_mbs);
	failed |= tls_mbs <= 0 || plain_mbs <= 0 || raw_mbs <= 0;
	return failed;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "loopback") == 0) {
		size_t mib = 512;
		for (int i = 2; i < argc; i++)
			if (!strncmp(argv[i], "--bulk-mib=", 11))
				mib = (size_t)strtoul(argv[i] + 11, NULL, 0);
		return loopback(mib ? mib : 1);
	}
	if (argc >= 5 && strcmp(argv[1], "rawsink") == 0) {
		uint16_t port = 0;
		int fd = raw_sink_listen(argv[2], (uint16_t)atoi(argv[3]), &port);
		if (fd < 0)
			return 1;
		printf("LISTENING %u\n", port);
		return raw_sink_serve(fd, atoi(argv[4])) ? 1 : 0;
	}
	if (argc >= 5 && strcmp(argv[1], "rawsend") == 0) {
		double mbs = raw_send(argv[2], (uint16_t)atoi(argv[3]), (size_t)atoi(argv[4]) << 20, 1u << 20);
		if (mbs < 0)
			return 1;
		printf("MEASURE raw %.1f MB/s\n", mbs);
		return 0;
	}
	fprintf(stderr, "usage: see the comment at the top of experiments/linkbench/link_bench.c\n");
	return 2;
}
