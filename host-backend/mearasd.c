// SPDX-License-Identifier: MIT
/*
 * mearasd: the host back end. Listens on a unix socket; each client
 * connection is served by a worker process of its own (worker.c).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "mearas/log.h"
#include "vm.h"
#include "worker.h"

#define DEFAULT_SOCKET "/run/mearas/mearasd.sock"

static volatile sig_atomic_t quit;
static const char *control_path, *node_name;
static struct vm_spec vm_specs[VM_MAX_SPECS];
static unsigned n_vm_specs;
static const char *vm_user;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mearasd [options]\n"
		"  --device=cuda|sim    execute on local GPUs (default) or on the host-memory model\n"
		"  --socket=PATH        client socket (default $MEARAS_SOCKET or " DEFAULT_SOCKET ")\n"
		"  --control=PATH       control socket of the assembly manager\n"
		"                       (default $MEARAS_CONTROL_SOCKET or " CONTROL_DEFAULT_SOCKET ")\n"
		"  --node-name=NAME     node name told to the assembly manager (default: hostname)\n"
		"  --vgpus=N            vGPUs of a client that asks for none (default: one per GPU, 2 for sim)\n"
		"  --gpu-map=A,B,...    physical GPU of vGPU 0, 1, ... (default: round robin)\n"
		"  --quota-mb=M         memory quota of every vGPU in MiB (default: the GPU's memory)\n"
		"  --data-mb=M          default data area (pinned host memory) per client (default 512)\n"
		"  --max-data-mb=M      largest data area a client may ask for (default 16384)\n"
		"  --spin-us=U          poller busy-polls this long before sleeping (default 50)\n"
		"  --remote=V=HOST:PORT[/GPU]  vGPU V of every client runs on GPU (default 0) of the\n"
		"                       mearasd at HOST:PORT (repeatable)\n"
		"  --link-port=P        serve remote vGPUs to other nodes on TCP port P\n"
		"  --link-bind=ADDR     address the link server binds (default: all)\n"
		"  --cluster-key-file=F shared secret authenticating nodes to each other\n"
		"  --link-dead-ms=MS    a silent link is declared dead after this long (default 3000)\n"
		"  --link-batch=N       records sent per link batch at most (1 = no batching; default 256)\n"
		"  --link-batch-us=N    hold records with no host-visible result up to N us to fill a batch\n"
		"                       (0, the default: a batch goes when the vGPU's ring is drained)\n"
		"  --vm=NAME:SOCKET:SIZE_MB[:VGPUS]  serve a VM as its ivshmem server on SOCKET (repeatable):\n"
		"                       SIZE_MB of shared memory (a power of two), VGPUS per guest process\n"
		"  --vm-user=USER       the user QEMU runs as: owns every --vm socket (mode 0600) and, with\n"
		"                       root, is the only one mearasd admits on it (default: " VM_DEFAULT_QEMU_USER "\n"
		"                       where that user exists, else root only)\n");
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

static int parse_args(int argc, char **argv, struct backend_config *cfg, const char **sock)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "socket", required_argument, NULL, 's' },
		{ "vgpus", required_argument, NULL, 'n' }, { "gpu-map", required_argument, NULL, 'g' },
		{ "quota-mb", required_argument, NULL, 'q' }, { "data-mb", required_argument, NULL, 'D' },
		{ "max-data-mb", required_argument, NULL, 'M' }, { "spin-us", required_argument, NULL, 'S' },
		{ "control", required_argument, NULL, 'c' }, { "node-name", required_argument, NULL, 'N' },
		{ "remote", required_argument, NULL, 'R' }, { "link-port", required_argument, NULL, 'L' },
		{ "link-bind", required_argument, NULL, 'B' }, { "cluster-key-file", required_argument, NULL, 'K' },
		{ "link-dead-ms", required_argument, NULL, 'T' }, { "link-batch", required_argument, NULL, 'b' },
		{ "link-batch-us", required_argument, NULL, 'u' },
		{ "vm", required_argument, NULL, 'V' },
		{ "vm-user", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
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
		case 'T':
			if (parse_u64(optarg, &v) || v < 100 || v > 600000)
				return fprintf(stderr, "mearasd: bad --link-dead-ms '%s' (100..600000)\n", optarg), -1;
			cfg->remote.dead_ms = (uint32_t)v;
			break;
		case 'b':
			if (parse_u64(optarg, &v) || v < 1 || v > 65536)
				return fprintf(stderr, "mearasd: bad --link-batch '%s' (1..65536)\n", optarg), -1;
			cfg->remote.batch_msgs = (uint32_t)v;
			break;
		case 'u':
			if (parse_u64(optarg, &v) || v > 100000)
				return fprintf(stderr, "mearasd: bad --link-batch-us '%s' (0..100000)\n", optarg), -1;
			cfg->remote.batch_us = (uint32_t)v;
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
		case 'U':
			vm_user = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc)
		return fprintf(stderr, "mearasd: unexpected argument '%s'\n", argv[optind]), -1;
	if (cfg->data_default > cfg->data_max)
		return fprintf(stderr, "mearasd: --data-mb exceeds --max-data-mb\n"), -1;
	{
		char err[256];

		if (vm_resolve_user(vm_user, vm_specs, n_vm_specs, err, sizeof(err)))
			return fprintf(stderr, "mearasd: %s\n", err), -1;
	}
	return 0;
}

static int listen_on(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "mearasd: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
		fprintf(stderr, "mearasd: cannot listen on %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	chmod(path, 0666);
	return fd;
}

/* An explicit control socket must work; the default one is skipped with a
 * warning where it cannot be had (no /run/mearas, another mearasd on it). */
static int start_control(const struct backend_config *cfg)
{
	static char host[256];
	const char *path = control_path ? control_path : getenv("MEARAS_CONTROL_SOCKET");
	bool explicit = path != NULL;

	if (!path)
		path = CONTROL_DEFAULT_SOCKET;
	if (!node_name) {
		if (gethostname(host, sizeof(host) - 1))
			snprintf(host, sizeof(host), "localhost");
		node_name = host;
	}
	if (!control_start(cfg, path, node_name))
		return 0;
	if (explicit)
		return -1;
	log_warn("running without a control socket: assemblies cannot be instantiated here");
	return 0;
}

int main(int argc, char **argv)
{
	struct backend_config cfg = {
		.dev = &mdev_cuda_ops, .data_default = 512ull << 20, .data_max = 16384ull << 20,
		.spin_us = 50,
	};
	const char *sock = getenv("MEARAS_SOCKET");
	struct sigaction sa = { .sa_handler = on_signal };
	int lfd;

	mearas_log_init("mearasd");
	for (unsigned i = 0; i < MEARAS_MAX_VGPUS; i++)
		cfg.gpu_map[i] = -1;
	if (!sock)
		sock = DEFAULT_SOCKET;
	if (parse_args(argc, argv, &cfg, &sock))
		return 2;
	if (!cfg.vgpus_default)
		cfg.vgpus_default = cfg.dev == &mdev_sim_ops ? 2 : 1;
	lfd = listen_on(sock);
	if (lfd < 0)
		return 1;
	if (start_control(&cfg)) {
		unlink(sock);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN); /* workers are reaped automatically */
	if (vm_servers_start(&cfg, vm_specs, n_vm_specs))
		return 1;
	log_info("device=%s (%s); socket %s; %u vGPU(s) per client by default; data area %llu MiB",
		 cfg.dev->name, cfg.dev->startup_note, sock, cfg.vgpus_default,
		 (unsigned long long)(cfg.data_default >> 20));
	if (cfg.remote.link_port && remote_server_start(&cfg))
		return 1;
	while (!quit) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		pid_t pid;

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			log_err("accept: %s", strerror(errno));
			break;
		}
		pid = fork();
		if (pid == 0) {
			/* the worker: CUDA is first touched here, never in the parent */
			close(lfd);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			_exit(worker_serve(&cfg, c));
		}
		if (pid < 0)
			log_err("fork: %s", strerror(errno));
		close(c);
	}
	unlink(sock);
	control_stop();
	remote_server_stop();
	vm_servers_unlink(vm_specs, n_vm_specs);
	log_info("stopped");
	return 0;
}
