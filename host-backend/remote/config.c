// SPDX-License-Identifier: MIT
/* Remote vGPUs in mearasd's configuration: options, cluster key, link settings (config.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "mearas/log.h"
#include "remote_link.h"

int remote_parse_target(struct remote_config *rc, const char *spec)
{
	char buf[REMOTE_HOST_MAX + 32], *eq, *colon, *slash, *end;
	unsigned long vgpu, port, gpu = 0;

	if (strlen(spec) >= sizeof(buf))
		return -1;
	strcpy(buf, spec);
	eq = strchr(buf, '=');
	if (!eq)
		return -1;
	*eq = 0;
	errno = 0;
	vgpu = strtoul(buf, &end, 10);
	if (errno || end == buf || *end || vgpu >= MEARAS_MAX_VGPUS)
		return -1;
	slash = strrchr(eq + 1, '/');
	if (slash) {
		*slash = 0;
		gpu = strtoul(slash + 1, &end, 10);
		if (end == slash + 1 || *end || gpu > 64)
			return -1;
	}
	colon = strrchr(eq + 1, ':');
	if (!colon || colon == eq + 1)
		return -1;
	*colon = 0;
	port = strtoul(colon + 1, &end, 10);
	if (end == colon + 1 || *end || port == 0 || port > 65535)
		return -1;
	snprintf(rc->target[vgpu].host, sizeof(rc->target[vgpu].host), "%s", eq + 1);
	rc->target[vgpu].port = (uint16_t)port;
	rc->target[vgpu].gpu = (int)gpu;
	return 0;
}

int remote_load_key(struct remote_config *rc, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		fprintf(stderr, "mearasd: cluster key file %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = read(fd, rc->key, sizeof(rc->key));
	close(fd);
	while (n > 0 && (rc->key[n - 1] == '\n' || rc->key[n - 1] == '\r'))
		n--;
	if (n <= 0) {
		fprintf(stderr, "mearasd: cluster key file %s is empty\n", path);
		return -1;
	}
	rc->key_len = (size_t)n;
	snprintf(rc->key_file, sizeof(rc->key_file), "%s", path);
	return 0;
}

/* *out = the index of word in words[n] (an option's value); 0, or -1 for another word */
static int parse_word(const char *word, const char *const *words, int n, int *out)
{
	for (int i = 0; i < n; i++) {
		if (words[i] && !strcmp(word, words[i])) {
			*out = i;
			return 0;
		}
	}
	return -1;
}

int remote_parse_transport(struct remote_config *rc, const char *word)
{
	static const char *const words[] = { [MEARAS_LINK_TRANSPORT_TCP] = "tcp",
					     [MEARAS_LINK_TRANSPORT_VERBS] = "verbs",
					     [MEARAS_LINK_TRANSPORT_AUTO] = "auto" };

	return parse_word(word, words, (int)(sizeof(words) / sizeof(words[0])), &rc->transport);
}

int remote_check_transport(const struct remote_config *rc)
{
	struct mearas_link_config lc;
	bool links = rc->link_port != 0;
	char why[256];

	for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++)
		links |= rc->target[i].host[0] != 0;
	if (rc->transport == MEARAS_LINK_TRANSPORT_TCP || !links)
		return 0;
	mearas_link_config_init(&lc);
	lc.verbs_device = rc->verbs_device;
	lc.verbs_gid_index = rc->verbs_gid_index;
	int probe = mearas_link_verbs_probe(&lc, why, sizeof(why));
	if (rc->transport == MEARAS_LINK_TRANSPORT_VERBS) {
		if (!rc->encryption_off) {
			fprintf(stderr, "mearasd: --link-transport=verbs needs --link-encryption=off on both nodes "
				"(link encryption covers TCP links only)\n");
			return -1;
		}
		if (probe) {
			fprintf(stderr, "mearasd: --link-transport=verbs: %s\n", why);
			return -1;
		}
		log_info("links over verbs: %s", why);
	} else if (!rc->encryption_off) {
		log_info("--link-transport=auto: links use TCP (link encryption is on, and it covers TCP links only; "
			 "verbs needs --link-encryption=off on both nodes)");
	} else if (probe) {
		log_info("--link-transport=auto: links use TCP (%s)", why);
	} else {
		log_info("--link-transport=auto: links use verbs where the peer takes them (%s), else TCP", why);
	}
	return 0;
}

/* remote-link's messages in mearasd's log, at mearasd's level and in its format */
static void link_log_to_mearas(void *ctx, enum mearas_link_log_level level, const char *msg)
{
	(void)ctx;
	mearas_log(level == MEARAS_LINK_LOG_ERR ? MEARAS_LOG_ERR :
		   level == MEARAS_LINK_LOG_WARN ? MEARAS_LOG_WARN : MEARAS_LOG_INFO, "%s", msg);
}

static long online_cpus(void);

void remote_link_config(const struct remote_config *rc, struct mearas_link_config *lc)
{
	mearas_link_config_init(lc);
	if (rc->key_len) {
		lc->key = rc->key;
		lc->key_len = rc->key_len;
	}
	lc->encryption = rc->encryption_off ? MEARAS_LINK_ENCRYPTION_OFF : MEARAS_LINK_ENCRYPTION_TLS;
	/* an option left 0 keeps the library's default */
#define GIVEN(field, value) do { if (value) lc->field = (value); } while (0)
	GIVEN(dead_ms, rc->dead_ms);
	GIVEN(batch_max_msgs, rc->batch_msgs);
	GIVEN(batch_delay_us, rc->batch_us);
	GIVEN(handshake_ms, rc->handshake_ms);
	GIVEN(max_pending, rc->max_pending);
	GIVEN(max_links, rc->max_links);
	GIVEN(fd_reserve, rc->fd_reserve);
#undef GIVEN
	lc->transport = (enum mearas_link_transport)rc->transport;
	/* 1: no data connections, the link exactly as without them */
	lc->streams = remote_link_streams(rc) > 1 ? remote_link_streams(rc) : 0;
	lc->verbs_device = rc->verbs_device;
	lc->verbs_gid_index = rc->verbs_gid_index;
	lc->node_name = "mearasd";
	lc->log = link_log_to_mearas;
}

/* The node's online cores, counted once: glibc's sysconf reads
 * /sys/devices/system/cpu/online on every call (open, read, close), and the
 * session thread asks on every turn of its loop, one per round trip. */
static long online_cpus(void)
{
	static long n;
	long v = __atomic_load_n(&n, __ATOMIC_RELAXED);

	if (!v) {
		v = sysconf(_SC_NPROCESSORS_ONLN);
		if (v < 1)
			v = 1;
		__atomic_store_n(&n, v, __ATOMIC_RELAXED);
	}
	return v;
}

unsigned remote_spin_us(const struct remote_config *rc, unsigned cfg_spin_us)
{
	if (!cfg_spin_us || rc->spin == REMOTE_SPIN_OFF ||
	    (rc->spin == REMOTE_SPIN_AUTO && online_cpus() < REMOTE_SPIN_MIN_CPUS))
		return 0;
	return cfg_spin_us < REMOTE_SPIN_US ? REMOTE_SPIN_US : cfg_spin_us;
}

int remote_parse_spin(struct remote_config *rc, const char *word)
{
	static const char *const words[] = { [REMOTE_SPIN_AUTO] = "auto", [REMOTE_SPIN_ON] = "on",
					     [REMOTE_SPIN_OFF] = "off" };

	return parse_word(word, words, (int)(sizeof(words) / sizeof(words[0])), &rc->spin);
}

const char *remote_spin_said(const struct remote_config *rc, unsigned cfg_spin_us)
{
	return remote_spin_us(rc, cfg_spin_us) ? "its threads spin through a round trip"
					       : "its threads sleep between records (--remote-spin)";
}

unsigned remote_link_streams(const struct remote_config *rc)
{
	if (rc->streams)
		return rc->streams < REMOTE_STREAMS_MAX ? rc->streams : REMOTE_STREAMS_MAX;
	return online_cpus() >= REMOTE_STREAMS_MIN_CPUS ? REMOTE_STREAMS_DEFAULT : 1;
}
