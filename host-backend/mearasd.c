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

#include "mearas/log.h"
#include "vm.h"
#include "worker.h"

#define DEFAULT_SOCKET "/run/mearas/mearasd.sock"

static volatile sig_atomic_t quit;
static struct vm_spec vm_specs[VM_MAX_SPECS];
static unsigned n_vm_specs;

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
		"  --vgpus=N            vGPUs of a client that asks for none (default: one per GPU, 2 for sim)\n"
		"  --gpu-map=A,B,...    physical GPU of vGPU 0, 1, ... (default: round robin)\n"
		"  --quota-mb=M         memory quota of every vGPU in MiB (default: the GPU's memory)\n"
		"  --data-mb=M          default data area (pinned host memory) per client (default 512)\n"
		"  --max-data-mb=M      largest data area a client may ask for (default 16384)\n"
		"  --spin-us=U          poller busy-polls this long before sleeping (default 50)\n"
		"  --vm=NAME:SOCKET:SIZE_MB[:VGPUS]  serve a VM as its ivshmem server on SOCKET (repeatable):\n"
		"                       SIZE_MB of shared memory (a power of two), VGPUS per guest process\n");
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
		{ "vm", required_argument, NULL, 'V' },
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
		case 'V': {
			char err[256];

			if (n_vm_specs >= VM_MAX_SPECS)
				return fprintf(stderr, "mearasd: at most %u --vm\n", VM_MAX_SPECS), -1;
			if (vm_parse_spec(optarg, &vm_specs[n_vm_specs], err, sizeof(err)))
				return fprintf(stderr, "mearasd: %s\n", err), -1;
			n_vm_specs++;
			break;
		}
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
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN); /* workers are reaped automatically */
	if (vm_servers_start(&cfg, vm_specs, n_vm_specs))
		return 1;
	log_info("device=%s (%s); socket %s; %u vGPU(s) per client by default; data area %llu MiB",
		 cfg.dev->name, cfg.dev->startup_note, sock, cfg.vgpus_default,
		 (unsigned long long)(cfg.data_default >> 20));
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
	vm_servers_unlink(vm_specs, n_vm_specs);
	log_info("stopped");
	return 0;
}
