// SPDX-License-Identifier: MIT
/*
 * mearasd: the host back end. Listens on a unix socket; each client
 * connection is served by a worker process of its own (core/client.c).
 * Who may connect, and how many workers and how much pinned memory each
 * identity may hold, is decided here and in tenant.c, from what the kernel
 * says of the caller (SO_PEERCRED), never from what the client sends.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "control/control.h"
#include "control/metrics.h"
#include "control/vgpustats.h"
#include "core/client.h"
#include "core/config.h"
#include "core/config_file.h"
#include "core/cpus.h"
#include "core/tenant.h"
#include "device/device.h"
#include "device/gpuprobe.h"
#include "mearas_version.h"
#include "mearas/clock.h"
#include "mearas/log.h"
#include "mearas/sockpath.h"
#include "remote/forward.h"
#include "remote/serve.h"
#include "vm/vm.h"

#define DEFAULT_SOCKET "/run/mearas/mearasd.sock"
#define DEFAULT_SOCKET_GROUP "mearas"

/* daemon hygiene: --log, --print-config; options a config file may give as arrays */
static const char *log_target = "auto";
static bool print_config;
static const char *const repeatable_opts[] = { "remote", "vm", NULL };

static volatile sig_atomic_t quit;
static const char *control_path, *node_name, *socket_group;
static bool socket_group_given;
static gid_t sock_gid;
static bool sock_has_group;     /* members of sock_gid may connect (else root only) */
static struct tenant_limits limits = {
	.max_workers = 256, .max_workers_per_id = 32, .data_per_id = 16384ull << 20,
};
static struct vm_spec vm_specs[VM_MAX_SPECS];
static unsigned n_vm_specs;
static const char *vm_user, *vm_dir;
static uint32_t metrics_port;           /* 0: no metrics endpoint */
static cpu_set_t cpus;                  /* --cpus, where cpus_given */
static bool cpus_given;
static const char *metrics_bind;

/* the accept loop's stop signals, and its mask while it waits (them let in) */
static sigset_t stop_signals, in_wait;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mearasd [options]\n"
		"  --config=FILE        read options from FILE, TOML: `quota-mb = 4096`, `remote = [\"1=h:7000\"]`\n"
		"                       (keys are the long options; options on the command line win; default\n"
		"                       " CONFIG_FILE_DEFAULT " where it exists; --config= reads none)\n"
		"  --print-config       check the options and print those given (config file and command\n"
		"                       line; the others keep their defaults) as TOML, then exit\n"
		"  --log-level=L        error, warn, info or debug (default: $MEARAS_LOG, else info)\n"
		"  --log=stderr|syslog|auto  where the log goes (default auto: syslog, hence the journal, when\n"
		"                       systemd gave stderr to the journal (JOURNAL_STREAM), else stderr)\n"
		"  --version            print the version and exit\n"
		"  --device=cuda|sim    execute on local GPUs (default; mearasd exits when none can be used)\n"
		"                       or on the host-memory model (no GPU needed)\n"
		"  --socket=PATH        client socket (default $MEARAS_SOCKET or " DEFAULT_SOCKET ")\n"
		"  --socket-group=GROUP who may use the client socket besides root: its members (mode\n"
		"                       0660). Default: group '" DEFAULT_SOCKET_GROUP "' when it exists, else\n"
		"                       nobody (mode 0600, root only; also --socket-group=). Checked again\n"
		"                       on every connection from the caller's credentials (SO_PEERCRED),\n"
		"                       whatever the socket's mode\n"
		"  --max-clients=N      client workers at most, all users together (default 256, max 4096)\n"
		"  --max-clients-per-user=N  client workers (connections) of one uid at most (default 32)\n"
		"  --user-data-mb=M     pinned data areas of all of one uid's clients together, MiB\n"
		"                       (default 16384)\n"
		"  --control=PATH       control socket of the assembly manager\n"
		"                       (default $MEARAS_CONTROL_SOCKET or " CONTROL_DEFAULT_SOCKET ")\n"
		"  --node-name=NAME     node name told to the assembly manager (default: hostname)\n"
		"  --vgpus=N            vGPUs of a client that asks for none (default: one per GPU, 2 for sim)\n"
		"  --gpu-map=A,B,...    physical GPU of vGPU 0, 1, ... (default: round robin)\n"
		"  --quota-mb=M         memory quota of every vGPU in MiB (default: the GPU's memory), shared\n"
		"                       by all clients of one uid (of one assembly, for assemblies)\n"
		"  --data-mb=M          default data area (pinned host memory) per client (default 512)\n"
		"  --max-data-mb=M      largest data area a client may ask for (default 16384)\n"
		"  --spin-us=U          poller busy-polls this long before sleeping (default 50)\n"
		"  --cpus=LIST          run the daemon, its threads and its workers on these CPUs only\n"
		"                       (as taskset -c: 0-3,8; default: every CPU it may use); a few\n"
		"                       CPUs close together may shorten remote vGPUs' round trips or\n"
		"                       not: measure (docs/operations.md)\n"
		"  --kernel-timeout-ms=N  GPU time limit: a client whose kernel runs longer than N ms\n"
		"                       has its context torn down and its calls fail with\n"
		"                       cudaErrorLaunchTimeout; other clients keep running (0, the\n"
		"                       default: no limit; local vGPUs of process clients only, not\n"
		"                       VM slots or remote vGPUs)\n"
		"  --remote=V=HOST:PORT[/GPU]  vGPU V of every client runs on GPU (default 0) of the\n"
		"                       mearasd at HOST:PORT (repeatable)\n"
		"  --link-port=P        serve remote vGPUs to other nodes on TCP port P\n"
		"  --link-bind=ADDR     address the link server binds (default: all)\n"
		"  --cluster-key-file=F shared secret authenticating nodes to each other (use a random one:\n"
		"                       the link's TLS key is derived from it, e.g. head -c 32 /dev/urandom | base64)\n"
		"  --link-encryption=on|off  every TCP link encrypted after the handshake (default on: a TLS 1.3\n"
		"                       handshake, then AEAD records keyed from it); off: clear text, no integrity, for a trusted\n"
		"                       fabric only; both nodes of a link need the same setting\n"
		"  --link-transport=tcp|verbs|auto  transport of the links this node opens (--remote): tcp (the\n"
		"                       default); verbs: RDMA (an RC queue pair, the TCP connection kept as side\n"
		"                       channel; needs an RDMA device and --link-encryption=off, else mearasd\n"
		"                       does not start); auto: verbs where it works, else TCP with a log line\n"
		"                       saying why. A link server (--link-port) takes both kinds; with verbs it\n"
		"                       too needs its RDMA device at startup\n"
		"  --verbs-device=NAME  RDMA device of verbs links (default: the first, as ibv_devices lists)\n"
		"  --verbs-gid-index=N  GID table index of verbs links (default 0)\n"
		"  --link-dead-ms=MS    a silent link is declared dead after this long (default 3000)\n"
		"  --remote-spin=auto|on|off  the threads of remote vGPUs (both nodes) spin through a round\n"
		"                       trip instead of sleeping (at least 250 us after their last work):\n"
		"                       auto (the default) on nodes of 4 cores or more, on: on any node,\n"
		"                       off: never (each hop then waits for a wakeup)\n"
		"  --link-streams=N     TCP connections each link this node opens (--remote) spreads its bulk\n"
		"                       copies over, each sent by a thread (and TLS session) of its own\n"
		"                       (1..16; default 4 on a node of 8 cores or more, else 1; 1: the\n"
		"                       link's one connection, as before)\n"
		"  --link-batch=N       records sent per link batch at most (1 = no batching; default 256)\n"
		"  --link-batch-us=N    hold records with no host-visible result up to N us to fill a batch\n"
		"                       (0, the default: a batch goes when the vGPU's ring is drained)\n"
		"  --link-handshake-ms=MS  a link connection must be authenticated within MS (default 3000)\n"
		"  --link-max-pending=N connections in the handshake at once; more are refused (default 16)\n"
		"  --link-max=N         remote vGPUs (links) served at once (default 64)\n"
		"  --link-fd-reserve=N  refuse link connections that would leave fewer than N fds besides\n"
		"                       their own session's (default 64)\n"
		"  --link-mem-mb=M      memory one remote vGPU may make a node allocate besides its data\n"
		"                       area (mapped-range shadows on both nodes; queued replies, graph\n"
		"                       launch ranges and capture tables on the remote one); past it its\n"
		"                       calls fail with cudaErrorMemoryAllocation (default: the data area\n"
		"                       size plus 64)\n"
		"  --vm=NAME:SOCKET:SIZE_MB[:VGPUS]  serve a VM as its ivshmem server on SOCKET (repeatable):\n"
		"                       SIZE_MB of shared memory (a power of two), VGPUS per guest process\n"
		"  --vm-user=USER       the user QEMU runs as: owns every --vm socket (mode 0600) and, with\n"
		"                       root, is the only one mearasd admits on it (default: " VM_DEFAULT_QEMU_USER "\n"
		"                       where that user exists, else root only)\n"
		"  --vm-dir=DIR         where the sockets of VMs attached through the control socket\n"
		"                       (AttachVm: the libvirt hook) are made (default " CONTROL_DEFAULT_VM_DIR ")\n"
		"  --metrics-port=N     serve Prometheus metrics on http://ADDR:N/metrics (0, the default: off)\n"
		"  --metrics-bind=ADDR  address the metrics endpoint binds (default " METRICS_DEFAULT_BIND "; anyone\n"
		"                       who reaches it sees every identity's and assembly's figures)\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

/* long options without a short letter */
enum { OPT_LINK_HANDSHAKE_MS = 1000, OPT_LINK_MAX_PENDING, OPT_LINK_MAX, OPT_LINK_FD_RESERVE, OPT_LINK_MEM_MB,
       OPT_VM_USER, OPT_METRICS_PORT, OPT_METRICS_BIND, OPT_VM_DIR, OPT_LINK_TRANSPORT, OPT_REMOTE_SPIN, OPT_VERBS_DEVICE,
       OPT_VERBS_GID_INDEX, OPT_LINK_STREAMS, OPT_CPUS };

/* daemon hygiene options (config file, version, logs) */
enum { OPT_CONFIG = 2000, OPT_PRINT_CONFIG, OPT_VERSION, OPT_LOG_LEVEL, OPT_LOG };

/* --NAME=N in [lo, hi] into *out */
static int parse_range(const char *name, const char *arg, uint64_t lo, uint64_t hi, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(arg, &v) || v < lo || v > hi)
		return fprintf(stderr, "mearasd: bad --%s '%s' (%llu..%llu)\n", name, arg, (unsigned long long)lo,
			       (unsigned long long)hi), -1;
	*out = (uint32_t)v;
	return 0;
}

/* --NAME=N megabytes, N in [lo, hi], into *bytes */
static int parse_mb(const char *name, const char *arg, uint32_t lo, uint32_t hi, uint64_t *bytes)
{
	uint32_t mb;

	if (parse_range(name, arg, lo, hi, &mb))
		return -1;
	*bytes = (uint64_t)mb << 20;
	return 0;
}

/* The options that take a number in a range, straight into their setting. */
struct range_opt {
	int opt;
	const char *name;
	uint32_t lo, hi;
	uint32_t *out;
};

static const struct range_opt *range_opt_of(const struct range_opt *r, size_t n, int opt)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].opt == opt)
			return &r[i];
	return NULL;
}

static int parse_args(int argc, char **argv, struct backend_config *cfg, const char **sock)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "device", required_argument, NULL, 'd' }, { "socket", required_argument, NULL, 's' },
		{ "vgpus", required_argument, NULL, 'n' }, { "gpu-map", required_argument, NULL, 'g' },
		{ "quota-mb", required_argument, NULL, 'q' }, { "data-mb", required_argument, NULL, 'D' },
		{ "max-data-mb", required_argument, NULL, 'M' }, { "spin-us", required_argument, NULL, 'S' },
		{ "control", required_argument, NULL, 'c' }, { "node-name", required_argument, NULL, 'N' },
		{ "remote", required_argument, NULL, 'R' }, { "link-port", required_argument, NULL, 'L' },
		{ "link-bind", required_argument, NULL, 'B' }, { "cluster-key-file", required_argument, NULL, 'K' },
		{ "link-dead-ms", required_argument, NULL, 'T' }, { "link-batch", required_argument, NULL, 'b' },
		{ "link-batch-us", required_argument, NULL, 'u' }, { "link-encryption", required_argument, NULL, 'e' },
		{ "kernel-timeout-ms", required_argument, NULL, 'k' },
		{ "link-handshake-ms", required_argument, NULL, OPT_LINK_HANDSHAKE_MS },
		{ "link-max-pending", required_argument, NULL, OPT_LINK_MAX_PENDING },
		{ "link-max", required_argument, NULL, OPT_LINK_MAX },
		{ "link-fd-reserve", required_argument, NULL, OPT_LINK_FD_RESERVE },
		{ "link-mem-mb", required_argument, NULL, OPT_LINK_MEM_MB },
		{ "link-streams", required_argument, NULL, OPT_LINK_STREAMS },
		{ "link-transport", required_argument, NULL, OPT_LINK_TRANSPORT },
		{ "remote-spin", required_argument, NULL, OPT_REMOTE_SPIN },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "verbs-device", required_argument, NULL, OPT_VERBS_DEVICE },
		{ "verbs-gid-index", required_argument, NULL, OPT_VERBS_GID_INDEX },
		{ "vm", required_argument, NULL, 'V' },
		{ "socket-group", required_argument, NULL, 'G' }, { "max-clients", required_argument, NULL, 'C' },
		{ "max-clients-per-user", required_argument, NULL, 'P' },
		{ "user-data-mb", required_argument, NULL, 'U' },
		{ "vm-user", required_argument, NULL, OPT_VM_USER },
		{ "vm-dir", required_argument, NULL, OPT_VM_DIR },
		{ "metrics-port", required_argument, NULL, OPT_METRICS_PORT },
		{ "metrics-bind", required_argument, NULL, OPT_METRICS_BIND },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	const struct range_opt ranges[] = {
		{ 'T', "link-dead-ms", 100, 600000, &cfg->remote.dead_ms },
		{ 'b', "link-batch", 1, 65536, &cfg->remote.batch_msgs },
		{ 'u', "link-batch-us", 0, 100000, &cfg->remote.batch_us },
		{ 'k', "kernel-timeout-ms", 0, 86400000, &cfg->kernel_timeout_ms },
		{ OPT_LINK_HANDSHAKE_MS, "link-handshake-ms", 100, 60000, &cfg->remote.handshake_ms },
		{ OPT_LINK_MAX_PENDING, "link-max-pending", 1, 4096, &cfg->remote.max_pending },
		{ OPT_LINK_MAX, "link-max", 1, 4096, &cfg->remote.max_links },
		{ OPT_LINK_FD_RESERVE, "link-fd-reserve", 1, 1 << 20, &cfg->remote.fd_reserve },
		{ OPT_VERBS_GID_INDEX, "verbs-gid-index", 0, 4095, &cfg->remote.verbs_gid_index },
		{ OPT_LINK_STREAMS, "link-streams", 1, REMOTE_STREAMS_MAX, &cfg->remote.streams },
		{ 'C', "max-clients", 1, TENANT_SLOTS_MAX, &limits.max_workers },
		{ 'P', "max-clients-per-user", 1, TENANT_SLOTS_MAX, &limits.max_workers_per_id },
		{ OPT_METRICS_PORT, "metrics-port", 0, 65535, &metrics_port },
	};
	const struct range_opt *r;
	uint64_t v;
	int c, idx;

	/* the config file's options go first, so that the command line's win */
	if (config_file_merge(argc, argv, opts, repeatable_opts, &argc, &argv))
		return -1;
	while (idx = -1, (c = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
		config_file_note(opts, idx, optarg);
		r = range_opt_of(ranges, sizeof(ranges) / sizeof(ranges[0]), c);
		if (r) {
			if (parse_range(r->name, optarg, r->lo, r->hi, r->out))
				return -1;
			continue;
		}
		switch (c) {
		case OPT_CONFIG:
			break; /* read by config_file_merge */
		case OPT_PRINT_CONFIG:
			print_config = true;
			break;
		case OPT_VERSION:
			printf("mearasd %s\n", MEARAS_VERSION);
			exit(0);
		case OPT_LOG_LEVEL: {
			int l = mearas_log_level_of(optarg);

			if (l < 0)
				return fprintf(stderr, "mearasd: bad --log-level '%s' (error, warn, info, debug)\n",
					       optarg), -1;
			mearas_log_set_level(l);
			break;
		}
		case OPT_LOG:
			if (strcmp(optarg, "stderr") && strcmp(optarg, "syslog") && strcmp(optarg, "auto"))
				return fprintf(stderr, "mearasd: bad --log '%s' (stderr, syslog or auto)\n",
					       optarg), -1;
			log_target = optarg;
			break;
		case 'd':
			if (!strcmp(optarg, "sim"))
				cfg->dev = &mdev_sim_ops;
			else if (!strcmp(optarg, "cuda"))
				cfg->dev = &mdev_cuda_ops;
			else
				return fprintf(stderr, "mearasd: unknown device '%s' (cuda or sim)\n", optarg), -1;
			break;
		case 's':
			*sock = optarg;
			break;
		case 'c':
			control_path = optarg;
			break;
		case 'N':
			if (!*optarg)
				return fprintf(stderr, "mearasd: empty --node-name\n"), -1;
			node_name = optarg;
			break;
		case 'n':
			if (parse_u64(optarg, &v) || v == 0 || v > MEARAS_MAX_VGPUS)
				return fprintf(stderr, "mearasd: --vgpus must be 1..%u\n", MEARAS_MAX_VGPUS), -1;
			cfg->vgpus_default = (unsigned)v;
			break;
		case 'g': {
			char *dup = strdup(optarg), *tok, *save = NULL;
			unsigned i = 0;

			for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (i >= MEARAS_MAX_VGPUS || parse_u64(tok, &v) || v > 64) {
					free(dup);
					return fprintf(stderr, "mearasd: bad --gpu-map '%s'\n", optarg), -1;
				}
				cfg->gpu_map[i++] = (int)v;
			}
			free(dup);
			break;
		}
		case 'q':
			if (parse_u64(optarg, &v) || v == 0 || v > (1ull << 30))
				return fprintf(stderr, "mearasd: bad --quota-mb '%s'\n", optarg), -1;
			for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++)
				cfg->quota[i] = v << 20;
			break;
		case 'D':
		case 'M':
			if (parse_u64(optarg, &v) || v < 8 || v > (1ull << 20))
				return fprintf(stderr, "mearasd: bad --%s '%s' (8..1048576)\n",
					       c == 'D' ? "data-mb" : "max-data-mb", optarg), -1;
			if (c == 'D')
				cfg->data_default = v << 20;
			else
				cfg->data_max = v << 20;
			break;
		case 'S':
			if (parse_u64(optarg, &v) || v > 1000000)
				return fprintf(stderr, "mearasd: bad --spin-us '%s'\n", optarg), -1;
			cfg->spin_us = (unsigned)v;
			break;
		case 'R':
			if (remote_parse_target(&cfg->remote, optarg))
				return fprintf(stderr, "mearasd: bad --remote '%s' (VGPU=HOST:PORT[/GPU])\n", optarg), -1;
			break;
		case 'L':
			if (parse_u64(optarg, &v) || v == 0 || v > 65535)
				return fprintf(stderr, "mearasd: bad --link-port '%s'\n", optarg), -1;
			cfg->remote.link_port = (uint16_t)v;
			break;
		case 'B':
			cfg->remote.link_bind = optarg;
			break;
		case 'K':
			if (remote_load_key(&cfg->remote, optarg))
				return -1;
			break;
		case OPT_LINK_MEM_MB:
			if (parse_mb("link-mem-mb", optarg, 1, 1 << 20, &cfg->remote.link_mem))
				return -1;
			break;
		case OPT_REMOTE_SPIN:
			if (remote_parse_spin(&cfg->remote, optarg))
				return fprintf(stderr, "mearasd: bad --remote-spin '%s' (auto, on or off)\n", optarg), -1;
			break;
		case OPT_CPUS: {
			char why[128];

			if (!cpus_parse(optarg, &cpus, why, sizeof(why)))
				return fprintf(stderr, "mearasd: bad --cpus '%s': %s\n", optarg, why), -1;
			cpus_given = true;
			break;
		}
		case OPT_LINK_TRANSPORT:
			if (remote_parse_transport(&cfg->remote, optarg))
				return fprintf(stderr, "mearasd: bad --link-transport '%s' (tcp, verbs or auto)\n", optarg),
				       -1;
			break;
		case OPT_VERBS_DEVICE:
			if (!optarg[0] || strlen(optarg) >= REMOTE_HOST_MAX)
				return fprintf(stderr, "mearasd: bad --verbs-device '%s' (an RDMA device name, as "
					       "ibv_devices lists)\n", optarg), -1;
			cfg->remote.verbs_device = optarg;
			break;
		case 'e':
			if (!strcmp(optarg, "on")) {
				cfg->remote.encryption_off = false;
			} else if (!strcmp(optarg, "off")) {
				cfg->remote.encryption_off = true;
				log_warn("--link-encryption=off: node-to-node links carry records and data in clear text "
					 "with no integrity check (a trusted fabric only)");
			} else {
				return fprintf(stderr, "mearasd: bad --link-encryption '%s' (on or off)\n", optarg), -1;
			}
			break;
		case 'V': {
			char err[256];

			if (n_vm_specs >= VM_MAX_SPECS)
				return fprintf(stderr, "mearasd: at most %u --vm\n", VM_MAX_SPECS), -1;
			if (vm_parse_spec(optarg, &vm_specs[n_vm_specs], err, sizeof(err)))
				return fprintf(stderr, "mearasd: %s\n", err), -1;
			n_vm_specs++;
			break;
		}
		case 'G':
			socket_group = optarg;
			socket_group_given = true;
			break;
		case 'U':
			if (parse_mb("user-data-mb", optarg, 8, 1u << 30, &limits.data_per_id))
				return -1;
			break;
		case OPT_VM_USER:
			vm_user = optarg;
			break;
		case OPT_VM_DIR:
			if (optarg[0] != '/')
				return fprintf(stderr, "mearasd: --vm-dir must be an absolute path\n"), -1;
			vm_dir = optarg;
			break;
		case OPT_METRICS_BIND:
			metrics_bind = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	config_file_note(opts, -1, NULL);
	if (optind < argc)
		return fprintf(stderr, "mearasd: unexpected argument '%s'\n", argv[optind]), -1;
	if (cfg->data_default > cfg->data_max)
		return fprintf(stderr, "mearasd: --data-mb exceeds --max-data-mb\n"), -1;
	if (cfg->data_default > limits.data_per_id)
		return fprintf(stderr, "mearasd: --data-mb exceeds --user-data-mb\n"), -1;
	{
		char err[256];

		if (vm_resolve_user(vm_user, vm_specs, n_vm_specs, err, sizeof(err)))
			return fprintf(stderr, "mearasd: %s\n", err), -1;
	}
	if (print_config) {
		config_file_print(stdout, opts, repeatable_opts);
		exit(0);
	}
	return 0;
}

/* The group of --socket-group (a name or a number); 0, or -1 when unknown. */
static int lookup_group(const char *name, gid_t *gid)
{
	struct group *g = getgrnam(name);
	uint64_t v;

	if (g) {
		*gid = g->gr_gid;
		return 0;
	}
	if (!parse_u64(name, &v) && v < UINT32_MAX) {
		*gid = (gid_t)v;
		return 0;
	}
	return -1;
}

/*
 * Owner root (mearasd's user), mode 0660 and the socket group, or 0600 when
 * there is none. The socket is made 0600 (umask) so that no one connects
 * before its mode is set; every connection's credentials are checked again
 * anyway (admit_peer), so a mode changed later opens nothing.
 */
static int secure_socket(const char *path, const char *shown)
{
	const char *name = socket_group ? socket_group : DEFAULT_SOCKET_GROUP;

	if (socket_group_given && !*name)
		name = NULL; /* --socket-group= : root only */
	if (name && lookup_group(name, &sock_gid)) {
		if (socket_group_given) {
			fprintf(stderr, "mearasd: --socket-group: no group '%s'\n", name);
			return -1;
		}
		name = NULL;
	}
	if (name && chown(path, geteuid(), sock_gid)) {
		if (socket_group_given) {
			fprintf(stderr, "mearasd: cannot give %s to group %s: %s\n", shown, name, strerror(errno));
			return -1;
		}
		log_warn("cannot give %s to group %s (%s): root only", shown, name, strerror(errno));
		name = NULL;
	}
	sock_has_group = name != NULL;
	if (chmod(path, sock_has_group ? 0660 : 0600)) {
		fprintf(stderr, "mearasd: chmod %s: %s\n", shown, strerror(errno));
		return -1;
	}
	if (sock_has_group)
		log_info("client socket %s: mode 0660, group %s (gid %u): root and the group's members may connect",
			 shown, name, (unsigned)sock_gid);
	else
		log_info("client socket %s: mode 0600, root only (no group '%s'; --socket-group=GROUP lets a "
			 "group's members connect)", shown, DEFAULT_SOCKET_GROUP);
	return 0;
}

/*
 * The socket is bound under a temporary name, listening and secured before
 * it is renamed to path: whoever sees path can connect (a socket file that
 * exists before listen() refuses connections, which start-up scripts that
 * wait for the file took for a dead daemon).
 */
static int listen_on(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char tmp[sizeof(a.sun_path)];
	struct stat st;
	mode_t old_mask;
	pid_t holder;
	int fd, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%d~", path, (int)getpid()) >= sizeof(tmp)) {
		fprintf(stderr, "mearasd: socket path too long (at most %zu bytes): %s\n",
			sizeof(a.sun_path) - 14, path);
		return -1;
	}
	/* a live server's socket is never taken over; a stale one (refusing
	 * connections: its server is gone) is replaced below */
	if (mearas_socket_live(path, &holder)) {
		fprintf(stderr, "mearasd: %s is served by a live process (pid %d), another mearasd: not taken "
			"over (stop it, or give this one another --socket)\n", path, (int)holder);
		return -1;
	}
	strcpy(a.sun_path, tmp);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	unlink(tmp);
	old_mask = umask(0177);
	r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old_mask);
	if (r || listen(fd, 64)) {
		fprintf(stderr, "mearasd: cannot listen on %s: %s\n", path, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (secure_socket(tmp, path)) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	/* what is at path may be replaced only if it is a socket (a stale one of ours) */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "mearasd: %s exists and is not a socket: not replaced\n", path);
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path)) {
		fprintf(stderr, "mearasd: cannot put the socket at %s: %s\n", path, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	return fd;
}

/* The caller's credentials as the kernel recorded them at connect(). */
static int peer_of(int c, struct tenant_peer *p)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) || len != sizeof(cr))
		return -1;
	memset(p, 0, sizeof(*p));
	p->id.kind = TENANT_UID;
	p->id.uid = cr.uid;
	p->gid = cr.gid;
	p->pid = cr.pid;
	return 0;
}

/* Root, mearasd's own user, and members of the socket group (primary or
 * supplementary group of the caller, SO_PEERGROUPS). */
static bool admit_peer(int c, const struct tenant_peer *p)
{
	if (tenant_privileged(&p->id))
		return true;
	return sock_has_group && mearas_peer_in_group(c, p->gid, sock_gid) > 0;
}

/*
 * Connections refused by the main process are kept open until their hello
 * has come (or a second has passed): closed at once, a client that sends
 * its hello after the refusal would get EPIPE instead of the reason. At most
 * REFUSED_MAX are kept; under a flood the oldest is closed first.
 */
#define REFUSED_MAX 64
#define REFUSED_KEEP_MS 1000

struct refused_conn {
	int fd;
	int64_t until_ms;
};

static struct refused_conn refused[REFUSED_MAX];
static unsigned nrefused;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void refused_drop(unsigned i)
{
	close(refused[i].fd);
	refused[i] = refused[--nrefused];
}

static void refused_keep(int c)
{
	if (nrefused == REFUSED_MAX) {
		unsigned oldest = 0;

		for (unsigned i = 1; i < nrefused; i++)
			if (refused[i].until_ms < refused[oldest].until_ms)
				oldest = i;
		refused_drop(oldest);
	}
	refused[nrefused++] = (struct refused_conn){ .fd = c, .until_ms = now_ms() + REFUSED_KEEP_MS };
}

/* Refused connections are logged, at most REFUSED_LOG_BURST lines a second:
 * whoever may connect can be refused at will, and must not flood the log. */
#define REFUSED_LOG_BURST 10
static struct mearas_log_burst refused_log; /* the accept loop's */

static bool refused_log_admit(void)
{
	return mearas_log_burst(&refused_log, REFUSED_LOG_BURST, "", "refused client connections");
}

/* Refused before a worker exists: the welcome says why. Never blocks the
 * accept loop; the connection is closed once the hello is in (above). */
static void refuse_conn(int c, const struct tenant_peer *p, int status, const char *msg)
{
	struct mearas_welcome wl = { .magic = MEARAS_WELCOME_MAGIC, .version = MEARAS_PROTO_VERSION,
				     .status = status };
	char who[96];

	snprintf(wl.message, sizeof(wl.message), "%s", msg);
	if (refused_log_admit())
		log_warn("client %s gid %u pid %d refused: %s", tenant_id_str(&p->id, who, sizeof(who)), p->gid,
			 p->pid, msg);
	if (send(c, &wl, sizeof(wl), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("refusal not delivered: %s", strerror(errno));
}

/* The live workers of client connections: the main process learns of a
 * worker's end, however it ended, from its pidfd, and frees what it held
 * in the tenant table. */
struct live_worker {
	int pidfd;
	unsigned slot;
};

static struct live_worker *live;
static unsigned nlive;

static void accept_client(const struct backend_config *cfg, int lfd)
{
	static bool warned_fds;
	struct tenant_peer peer;
	char err[192];
	unsigned slot;
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), pidfd;
	pid_t pid;

	if (c < 0) {
		bool short_of = errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM;

		if (short_of && !warned_fds) {
			/* the connection waits in the backlog until fds or memory come
			 * free; never a reason to stop serving the others */
			log_warn("accept: %s: new clients wait until resources come free", strerror(errno));
			warned_fds = true;
		} else if (!short_of && errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
			log_err("accept: %s", strerror(errno));
		}
		if (short_of)
			usleep(100000);
		return;
	}
	warned_fds = false;
	if (peer_of(c, &peer)) {
		if (refused_log_admit())
			log_warn("client refused: no credentials for the connection: %s", strerror(errno));
		close(c);
		return;
	}
	if (!admit_peer(c, &peer)) {
		snprintf(err, sizeof(err), "uid %u is not root and not in the group of the client socket; "
			 "ask the operator (mearasd --socket-group)", peer.id.uid);
		refuse_conn(c, &peer, cudaErrorNotPermitted, err);
		refused_keep(c);
		return;
	}
	slot = tenant_worker_add(&peer.id, err, sizeof(err));
	if (!slot) {
		refuse_conn(c, &peer, cudaErrorDevicesUnavailable, err);
		refused_keep(c);
		return;
	}
	pid = fork();
	if (pid == 0) {
		/* the worker: CUDA is first touched here, never in the parent */
		close(lfd);
		for (unsigned i = 0; i < nlive; i++)
			close(live[i].pidfd);
		for (unsigned i = 0; i < nrefused; i++)
			close(refused[i].fd);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL); /* blocked in the accept loop */
		_exit(worker_serve_client(cfg, c, &peer, slot));
	}
	close(c);
	if (pid < 0) {
		log_err("fork: %s", strerror(errno));
		tenant_worker_gone(slot);
		return;
	}
	/* ESRCH: the worker is gone already (children are reaped by the kernel) */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		if (errno != ESRCH) {
			log_err("pidfd_open of worker %d: %s: stopping it", (int)pid, strerror(errno));
			kill(pid, SIGKILL);
		}
		tenant_worker_gone(slot);
		return;
	}
	live[nlive++] = (struct live_worker){ .pidfd = pidfd, .slot = slot };
}

/*
 * Type=notify units: readiness and stopping, where systemd asks
 * (NOTIFY_SOCKET). libsystemd is loaded only then: GPU machines without it
 * (containers) still run mearasd, which links nothing it does not always use.
 */
static void notify_systemd(const char *state)
{
	static int (*notify)(int unset_environment, const char *state);
	static bool looked;
	int r;

	if (!getenv("NOTIFY_SOCKET"))
		return;
	if (!looked) {
		void *lib = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);

		looked = true;
		if (lib)
			*(void **)&notify = dlsym(lib, "sd_notify");
		if (!notify)
			log_err("NOTIFY_SOCKET is set but libsystemd.so.0 cannot be loaded (%s): systemd will not hear "
				"that mearasd is ready (install libsystemd0)", dlerror());
	}
	if (!notify)
		return;
	r = notify(0, state);
	if (r < 0)
		log_warn("sd_notify: %s", strerror(-r));
}

static void serve_clients(const struct backend_config *cfg, int lfd)
{
	struct pollfd *pfd = calloc(1 + limits.max_workers + REFUSED_MAX, sizeof(*pfd));

	live = calloc(limits.max_workers, sizeof(*live));
	if (!pfd || !live) {
		log_err("out of memory for %u client workers", limits.max_workers);
		return;
	}
	/* SIGINT and SIGTERM are let in only inside ppoll: one that came between
	 * the loop's test of quit and the wait would otherwise be missed, and
	 * mearasd would sleep on until the next connection */
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, &in_wait);
	sigdelset(&in_wait, SIGINT);
	sigdelset(&in_wait, SIGTERM);
	/* everything listens (the client and control sockets, the link server) */
	notify_systemd("READY=1\nSTATUS=serving");
	while (!quit) {
		struct timespec ts;
		int r, timeout = -1;
		unsigned nl = nlive, nr = nrefused;
		int64_t now = now_ms();

		pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (unsigned i = 0; i < nl; i++)
			pfd[1 + i] = (struct pollfd){ .fd = live[i].pidfd, .events = POLLIN };
		for (unsigned i = 0; i < nr; i++) {
			int64_t left = refused[i].until_ms - now;

			pfd[1 + nl + i] = (struct pollfd){ .fd = refused[i].fd, .events = POLLIN };
			if (left < 0)
				left = 0;
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		/* VM guests' slot workers that ended: their counters into the
		 * totals, looked for every second while any is live */
		if (vstats_fold_ended() && (timeout < 0 || timeout > 1000))
			timeout = 1000;
		/* live[] has room: a worker holds a tenant slot until its pidfd is
		 * dropped here, and there are max_workers slots */
		ts = (struct timespec){ .tv_sec = timeout / 1000, .tv_nsec = (long)(timeout % 1000) * 1000000L };
		r = ppoll(pfd, 1 + nl + nr, timeout < 0 ? NULL : &ts, &in_wait);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			log_err("ppoll: %s", strerror(errno));
			break;
		}
		now = now_ms();
		for (unsigned i = nr; i-- > 0;)
			if (pfd[1 + nl + i].revents || refused[i].until_ms <= now)
				refused_drop(i);
		for (unsigned i = nl; i-- > 0;) {
			if (!pfd[1 + i].revents)
				continue;
			vstats_worker_gone(live[i].slot); /* its counters into the totals */
			tenant_worker_gone(live[i].slot);
			close(live[i].pidfd);
			live[i] = live[--nlive];
		}
		if (pfd[0].revents & POLLIN)
			accept_client(cfg, lfd);
	}
	notify_systemd("STOPPING=1");
	free(pfd);
}

/* An explicit control socket must work; the default one is skipped with a
 * warning where it cannot be had (no /run/mearas, another mearasd on it). */
/* --node-name, else the host's name: the control socket and the metrics
 * labels name the node so (set before either starts) */
static void default_node_name(void)
{
	static char host[256];

	if (node_name)
		return;
	if (gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "localhost");
	node_name = host;
}

static int start_control(const struct backend_config *cfg)
{
	const char *path = control_path ? control_path : getenv("MEARAS_CONTROL_SOCKET");
	bool explicit = path != NULL;

	if (!path)
		path = CONTROL_DEFAULT_SOCKET;
	if (!control_start(cfg, path, node_name, vm_dir))
		return 0;
	if (explicit)
		return -1;
	log_warn("running without a control socket: assemblies cannot be instantiated here");
	return 0;
}

/* --log: auto is syslog (hence the journal) where systemd gave stderr to the journal */
static void start_logging(void)
{
	if (!strcmp(log_target, "syslog") || (!strcmp(log_target, "auto") && mearas_log_journal_stderr()))
		mearas_log_to_syslog(LOG_DAEMON);
}

/*
 * --device=cuda: the GPUs must be usable (a child process asks, gpuprobe.c:
 * mearasd itself never initializes CUDA) and every --gpu-map entry of a
 * local vGPU must name one; else mearasd exits instead of refusing every
 * client (unless --remote vGPUs on other nodes' GPUs are all it may serve).
 */
static int check_gpus(const struct backend_config *cfg)
{
	static struct probe_result r;

	unsigned remote = 0;

	for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++)
		remote += cfg->remote.target[i].host[0] != 0;
	gpu_probe(cfg->dev, 30000, &r);
	if (r.status && remote) {
		/* a node may use other nodes' GPUs only */
		log_warn("no usable local GPU (%s): only the %u remote vGPU(s) of --remote can be served", r.error,
			 remote);
		return 0;
	}
	if (r.status) {
		fprintf(stderr, "mearasd: no usable GPU: %s (--device=sim runs without one, on a host-memory "
			"model)\n", r.error);
		return -1;
	}
	for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++)
		if (cfg->gpu_map[i] >= 0 && (unsigned)cfg->gpu_map[i] >= r.count && !cfg->remote.target[i].host[0]) {
			fprintf(stderr, "mearasd: --gpu-map names GPU %d, but this node has %u\n", cfg->gpu_map[i],
				r.count);
			return -1;
		}
	log_info("%u GPU(s): %s%s", r.count, r.gpus[0].name, r.count > 1 ? ", ..." : "");
	return 0;
}

/* Before any thread or worker starts: all of them inherit it. */
static int confine_cpus(void)
{
	char why[600], list[256];

	if (!cpus_given)
		return 0;
	if (!cpus_confine(&cpus, why, sizeof(why))) {
		fprintf(stderr, "mearasd: --cpus: %s\n", why);
		return -1;
	}
	cpus_format(&cpus, list, sizeof(list));
	log_info("running on CPU(s) %s (--cpus)", list);
	return 0;
}

int main(int argc, char **argv)
{
	struct backend_config cfg = {
		.dev = &mdev_cuda_ops, .data_default = 512ull << 20, .data_max = 16384ull << 20,
		.spin_us = 50, .remote_engine = &remote_forward_engine,
	};
	const char *sock = getenv("MEARAS_SOCKET");
	struct sigaction sa = { .sa_handler = on_signal };
	int lfd;

	mearas_log_init("mearasd");
	for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++)
		cfg.gpu_map[i] = -1;
	if (!sock)
		sock = DEFAULT_SOCKET;
	if (parse_args(argc, argv, &cfg, &sock)) {
		config_file_blame();
		return 2;
	}
	start_logging();
	default_node_name();
	if (confine_cpus())
		return 1;
	if (remote_check_transport(&cfg.remote))
		return 1;
	if (cfg.dev == &mdev_cuda_ops && check_gpus(&cfg))
		return 1;
	if (!cfg.vgpus_default)
		cfg.vgpus_default = cfg.dev == &mdev_sim_ops ? 2 : 1;
	if (tenant_table_init(&limits) || vm_sockets_check(vm_specs, n_vm_specs))
		return 1;
	if (vstats_init())
		log_warn("no shared counter table: vGPU calls are not counted");
	/* before anything listens: whoever sees a socket may stop mearasd cleanly */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* the endpoint is up before the client socket appears: whoever waits
	 * for that socket may scrape at once (its threads block every signal) */
	if (metrics_port) {
		struct metrics_source ms = { .node = node_name, .device = cfg.dev->name,
					     .nvml = cfg.dev == &mdev_cuda_ops };

		if (metrics_start(metrics_bind, (uint16_t)metrics_port, &ms))
			return 1;
	} else if (metrics_bind) {
		log_warn("--metrics-bind without --metrics-port: no metrics endpoint");
	}
	lfd = listen_on(sock);
	if (lfd < 0) {
		metrics_stop();
		return 1;
	}
	if (start_control(&cfg)) {
		mearas_unlink_socket(sock);
		metrics_stop();
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN); /* workers are reaped automatically */
	if (vm_servers_start(&cfg, vm_specs, n_vm_specs))
		return 1;
	log_info("device=%s (%s); socket %s; %u vGPU(s) per client by default; data area %llu MiB",
		 cfg.dev->name, cfg.dev->startup_note, sock, cfg.vgpus_default,
		 (unsigned long long)(cfg.data_default >> 20));
	log_info("per user: %u clients, %llu MiB of data areas; %u clients in all", limits.max_workers_per_id,
		 (unsigned long long)(limits.data_per_id >> 20), limits.max_workers);
	if (cfg.kernel_timeout_ms)
		log_info("GPU time limit: a client's kernel may run %u ms, then its context is torn down "
			 "(process clients; not VM slots or remote links)", cfg.kernel_timeout_ms);
	if (cfg.remote.link_port && remote_serve_start(&cfg))
		return 1;
	serve_clients(&cfg, lfd);
	metrics_stop();
	mearas_unlink_socket(sock);
	control_stop();
	remote_serve_stop();
	vm_servers_unlink(vm_specs, n_vm_specs);
	log_info("stopped");
	return 0;
}
