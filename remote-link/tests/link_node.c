/* One end of a link for the namespace tests (test_netns.sh), one mode per run:
 *   serve ADDR PORT KEY              run a test server until SIGTERM
 *   call HOST PORT KEY               one echo call; prints RESULT <status>
 *   bulk HOST PORT KEY MIB           link bulk throughput
 *   rate HOST PORT KEY N on|off      small-message rate, batching on/off
 *   cut HOST PORT KEY                bulk in a loop until the link fails
 * (experiments/linkbench measures raw TCP beside these for comparison) */
#include "remote_link.h"
#include "test_server.h"
#include "check.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
	(void)sig;
	got_term = 1;
}

static long long realtime_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* LINK_TRANSPORT=verbs and LINK_GID_INDEX=n pick the RDMA transport (guest test);
 * LINK_ENCRYPTION=off turns link encryption off (verbs needs it off). */
static void cfg_with_key(struct mearas_link_config *c, const char *key)
{
	mearas_link_config_init(c);
	const char *tr = getenv("LINK_TRANSPORT"), *gid = getenv("LINK_GID_INDEX");
	const char *hs = getenv("LINK_HANDSHAKE_MS");
	const char *enc = getenv("LINK_ENCRYPTION");
	if (enc && strcmp(enc, "off") == 0)
		c->encryption = MEARAS_LINK_ENCRYPTION_OFF;
	if (tr && strcmp(tr, "verbs") == 0)
		c->transport = MEARAS_LINK_TRANSPORT_VERBS;
	if (gid)
		c->verbs_gid_index = (uint32_t)atoi(gid);
	if (hs)
		c->handshake_ms = (uint32_t)atoi(hs);
	if (strcmp(key, "-") != 0) {
		c->key = (const uint8_t *)key;
		c->key_len = strlen(key);
	}
}

static int do_serve(const char *addr, uint16_t port, const char *key)
{
	struct mearas_link_config cfg;
	cfg_with_key(&cfg, key);
	struct ts_state st;
	ts_init(&st);
	st.print_events = true;
	struct mearas_link_server_ops ops;
	ts_ops(&st, &ops);
	struct mearas_link_server *s = NULL;
	int rc = mearas_link_server_start(addr, port, &cfg, &ops, &s);
	if (rc) {
		printf("RESULT %d\n", rc);
		return 1;
	}
	printf("LISTENING %u\n", mearas_link_server_port(s));
	fflush(stdout);
	while (!got_term)
		usleep(50000);
	mearas_link_server_stop(s);
	return 0;
}

static int connect_to(const char *host, const char *port, const char *key, struct mearas_link **l)
{
	struct mearas_link_config cfg;
	cfg_with_key(&cfg, key);
	int rc = mearas_link_connect(host, (uint16_t)atoi(port), &cfg, l);
	if (rc)
		printf("RESULT %d (%s)\n", rc, mearas_link_strerror(rc));
	return rc;
}

static int do_call(char **a)
{
	struct mearas_link *l = NULL;
	if (connect_to(a[0], a[1], a[2], &l))
		return 1;
	char rep[16];
	size_t n = 0;
	int rc = mearas_link_call(l, "Ehello", 6, rep, sizeof(rep), &n, 5000);
	if (!rc && (n != 6 || memcmp(rep, "Ehello", 6)))
		rc = MEARAS_LINK_E_PROTO;
	printf("RESULT %d (%s)\n", rc, mearas_link_strerror(rc));
	mearas_link_close(l);
	return rc ? 1 : 0;
}

static int do_bulk(char **a)
{
	struct mearas_link *l = NULL;
	if (connect_to(a[0], a[1], a[2], &l))
		return 1;
	size_t bytes = (size_t)atoi(a[3]) << 20;
	uint8_t *data = malloc(bytes);
	memset(data, 0x5a, bytes);
	uint64_t before = 0, got = 0; /* the server counts bulk bytes over all links */
	int rc = mearas_link_call(l, "S", 1, &before, sizeof(before), NULL, 5000);
	double t0 = check_now();
	if (!rc)
		rc = mearas_link_bulk(l, 1, data, bytes);
	if (!rc)
		rc = mearas_link_call(l, "S", 1, &got, sizeof(got), NULL, 60000);
	got -= before;
	double dt = check_now() - t0;
	free(data);
	mearas_link_close(l);
	if (rc || got != bytes) {
		printf("RESULT %d (%s)\n", rc, mearas_link_strerror(rc));
		return 1;
	}
	const char *tr = getenv("LINK_TRANSPORT");
	printf("MEASURE link (%s) %.1f MB/s\n", tr && strcmp(tr, "verbs") == 0 ? "verbs" : "tcp",
	       bytes / dt / 1e6);
	return 0;
}

static int do_rate(char **a)
{
	struct mearas_link_config cfg;
	cfg_with_key(&cfg, a[2]);
	cfg.batch_max_msgs = strcmp(a[4], "on") == 0 ? 256 : 1;
	struct mearas_link *l = NULL;
	int rc = mearas_link_connect(a[0], (uint16_t)atoi(a[1]), &cfg, &l);
	if (rc)
		return 1;
	uint32_t n = (uint32_t)atoi(a[3]);
	uint8_t m[64] = { 'X' };
	double t0 = check_now();
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = mearas_link_post(l, m, sizeof(m));
	uint64_t got;
	if (!rc)
		rc = mearas_link_call(l, "S", 1, &got, sizeof(got), NULL, 60000);
	double dt = check_now() - t0;
	mearas_link_close(l);
	if (rc)
		return 1;
	printf("MEASURE rate batching %s %.0f msg/s\n", a[4], n / dt);
	return 0;
}

static int do_cut(char **a)
{
	struct mearas_link *l = NULL;
	if (connect_to(a[0], a[1], a[2], &l))
		return 1;
	size_t bytes = 16u << 20;
	uint8_t *data = calloc(1, bytes);
	int rc = 0;
	for (int round = 0; !rc; round++) {
		rc = mearas_link_bulk(l, 1, data, bytes);
		uint64_t got;
		if (!rc)
			rc = mearas_link_call(l, "S", 1, &got, sizeof(got), NULL, 0);
		if (round == 0 && !rc) {
			printf("STARTED\n");
			fflush(stdout);
		}
	}
	rc = mearas_link_health(l);
	long long at = realtime_ms();
	double t0 = check_now();
	int later = mearas_link_post(l, "X", 1);
	double later_s = check_now() - t0;
	printf("ERROR status=%d (%s) at_ms=%lld later_call=%d in %.3f s\n", rc,
	       mearas_link_strerror(rc), at, later, later_s);
	free(data);
	mearas_link_close(l);
	return rc == MEARAS_LINK_E_BROKEN && later == MEARAS_LINK_E_BROKEN && later_s < 0.1 ? 0 : 1;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 5 && strcmp(argv[1], "serve") == 0)
		return do_serve(argv[2], (uint16_t)atoi(argv[3]), argv[4]);
	if (argc >= 5 && strcmp(argv[1], "call") == 0)
		return do_call(argv + 2);
	if (argc >= 6 && strcmp(argv[1], "bulk") == 0)
		return do_bulk(argv + 2);
	if (argc >= 7 && strcmp(argv[1], "rate") == 0)
		return do_rate(argv + 2);
	if (argc >= 5 && strcmp(argv[1], "cut") == 0)
		return do_cut(argv + 2);
	fprintf(stderr, "usage: see the comment at the top of tests/link_node.c\n");
	return 2;
}
