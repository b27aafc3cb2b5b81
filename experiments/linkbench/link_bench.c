/* SPDX-License-Identifier: MIT */
/*
 * Throughput figures of remote-link, printed, never judged (the loopback
 * tests of remote-link/tests check behaviour; what a link costs against raw
 * TCP is measured here). One mode per run:
 *   link_bench loopback [--bulk-mib=N]   in one process over 127.0.0.1:
 *       64-byte posts with batching on and off (msg/s), and a bulk transfer
 *       with link encryption on and off beside raw TCP (MB/s)
 *   link_bench tls [--rounds=N] [--mib=N] [--spin-us=N] [--only=on|off]
 *                  [--host=H --port=P --plain-port=Q --key=K]
 *       what encryption costs, TLS and clear text in the same run: a 4-byte
 *       call's round trip (median us), bulk up (mearas_link_bulk, as a remote
 *       host-to-device copy) and down (1 MiB replies, as device-to-host), MB/s,
 *       and the ratios; with --host against link_node servers holding key K
 *       (encrypted at P, encryption off at Q: netns_bench.sh, over veth);
 *       --only=on|off measures one of the two (for profiling); --spin-us=N sets
 *       rx_spin_us on both ends (mearasd uses 250 on 4 or more cores)
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
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static const uint8_t *KEY = (const uint8_t *)"bench-cluster-key-0123456789"; /* link_bench tls --key */
static uint32_t g_spin_us; /* link_bench tls --spin-us: cfg.rx_spin_us of both ends (mearasd's on 4+ cores: 250) */

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
	c->rx_spin_us = g_spin_us;
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct tls_figures {
	double rtt_us, up_mbs, down_mbs;
	double up_cpu, down_cpu; /* CPU seconds per GiB of this process (both ends on loopback) */
};

/* CPU time (user and system, all threads) of this process, seconds */
static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* One link with encryption enc to host:port: the figures of link_bench tls. */
static int tls_figures(const char *host, uint16_t port, enum mearas_link_encryption enc, uint32_t rounds,
		       size_t mib, struct tls_figures *f)
{
	struct mearas_link_config cfg;
	struct mearas_link *l = NULL;
	base_cfg(&cfg, enc);
	if (mearas_link_connect(host, port, &cfg, &l))
		return -1;
	int rc = 0;
	double *t = calloc(rounds, sizeof(*t));
	uint8_t req[4] = { 'E', 1, 2, 3 }, rep[4];
	for (uint32_t i = 0; t && i < rounds + 100 && !rc; i++) {
		double t0 = now_s();
		rc = mearas_link_call(l, req, sizeof(req), rep, sizeof(rep), NULL, 10000);
		if (i >= 100)
			t[i - 100] = (now_s() - t0) * 1e6; /* the first 100 warm up */
	}
	if (t && !rc) {
		qsort(t, rounds, sizeof(*t), cmp_double);
		f->rtt_us = t[rounds / 2];
	}
	free(t);
	const size_t bytes = mib << 20, chunk = 1u << 20;
	uint8_t *data = malloc(bytes > chunk ? bytes : chunk);
	rc = rc || !data;
	if (!rc) {
		memset(data, 0x5a, bytes);
		uint64_t before = 0, after = 0;
		rc = mearas_link_call(l, "S", 1, &before, sizeof(before), NULL, 30000);
		double t0 = now_s(), c0 = cpu_s();
		rc = rc || mearas_link_bulk(l, 1, data, bytes) ||
		     mearas_link_call(l, "S", 1, &after, sizeof(after), NULL, 30000) || after - before != bytes;
		f->up_mbs = bytes / (now_s() - t0) / 1e6;
		f->up_cpu = (cpu_s() - c0) / ((double)bytes / (1u << 30));
	}
	if (!rc) {
		uint8_t big[5] = { 'B' };
		uint32_t n = (uint32_t)chunk;
		memcpy(big + 1, &n, 4);
		double t0 = now_s(), c0 = cpu_s();
		size_t got = 0;
		for (size_t i = 0; i < mib && !rc; i++)
			rc = mearas_link_call(l, big, sizeof(big), data, chunk, &got, 30000) || got != chunk;
		f->down_mbs = bytes / (now_s() - t0) / 1e6;
		f->down_cpu = (cpu_s() - c0) / ((double)bytes / (1u << 30));
	}
	free(data);
	mearas_link_close(l);
	return rc ? -1 : 0;
}

static int tls_cost(const char *host, const uint16_t port[2], uint32_t rounds, size_t mib, int only)
{
	struct ts_local s[2];
	struct tls_figures f[2] = { { 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0 } };
	const enum mearas_link_encryption enc[2] = { MEARAS_LINK_ENCRYPTION_TLS, MEARAS_LINK_ENCRYPTION_OFF };
	int failed = 0;
	for (int i = 0; i < 2; i++) {
		uint16_t p = port[i];
		if (only >= 0 && only != i)
			continue;
		if (!host) {
			if (server_start(&s[i], enc[i]))
				return 1;
			p = s[i].port;
		}
		failed |= tls_figures(host ? host : "127.0.0.1", p, enc[i], rounds, mib, &f[i]);
		if (!host)
			mearas_link_server_stop(s[i].srv);
	}
	printf("MEASURE link %s, 4-byte call round trip (median of %u): encrypted %.1f us, encryption off %.1f us "
	       "(+%.1f us)\n", host ? host : "loopback", rounds, f[0].rtt_us, f[1].rtt_us, f[0].rtt_us - f[1].rtt_us);
	printf("MEASURE link %s, %zu MiB up (bulk): encrypted %.0f MB/s, encryption off %.0f MB/s (ratio %.2f)\n",
	       host ? host : "loopback", mib, f[0].up_mbs, f[1].up_mbs, f[1].up_mbs > 0 ? f[0].up_mbs / f[1].up_mbs : 0);
	printf("MEASURE link %s, %zu MiB down (1 MiB replies): encrypted %.0f MB/s, encryption off %.0f MB/s "
	       "(ratio %.2f)\n", host ? host : "loopback", mib, f[0].down_mbs, f[1].down_mbs,
	       f[1].down_mbs > 0 ? f[0].down_mbs / f[1].down_mbs : 0);
	/* CPU per byte does not depend on what else runs on the machine, the rates do */
	printf("MEASURE link %s, CPU seconds per GiB (%s): up encrypted %.2f, encryption off %.2f; "
	       "down encrypted %.2f, encryption off %.2f\n", host ? host : "loopback",
	       host ? "this process: the client end" : "both ends", f[0].up_cpu, f[1].up_cpu, f[0].down_cpu,
	       f[1].down_cpu);
	return failed ? 1 : 0;
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
	if (argc >= 2 && strcmp(argv[1], "tls") == 0) {
		uint32_t rounds = 2000;
		size_t mib = 256;
		const char *host = NULL;
		uint16_t port[2] = { 0, 0 };
		int only = -1; /* --only=on (0) or off (1): one of the two, for profiling */
		for (int i = 2; i < argc; i++) {
			if (!strncmp(argv[i], "--rounds=", 9))
				rounds = (uint32_t)strtoul(argv[i] + 9, NULL, 0);
			else if (!strncmp(argv[i], "--mib=", 6))
				mib = (size_t)strtoul(argv[i] + 6, NULL, 0);
			else if (!strncmp(argv[i], "--host=", 7))
				host = argv[i] + 7;
			else if (!strncmp(argv[i], "--spin-us=", 10))
				g_spin_us = (uint32_t)strtoul(argv[i] + 10, NULL, 0);
			else if (!strncmp(argv[i], "--only=", 7))
				only = strcmp(argv[i] + 7, "on") == 0 ? 0 : 1;
			else if (!strncmp(argv[i], "--port=", 7))
				port[0] = (uint16_t)atoi(argv[i] + 7);
			else if (!strncmp(argv[i], "--plain-port=", 13))
				port[1] = (uint16_t)atoi(argv[i] + 13);
			else if (!strncmp(argv[i], "--key=", 6))
				KEY = (const uint8_t *)argv[i] + 6;
		}
		return tls_cost(host, port, rounds ? rounds : 1, mib ? mib : 1, only);
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
