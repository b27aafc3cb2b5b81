// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuprobe.h"

/* where the child opens each device: any window will do, it only asks */
#define PROBE_VA_BASE 0x100000000000ull
#define PROBE_VA_SIZE 0x010000000000ull

static void probe_here(const struct mdev_ops *ops, struct probe_result *r)
{
	int n;

	memset(r, 0, sizeof(*r));
	r->status = ops->init(r->error, sizeof(r->error));
	if (r->status)
		return;
	n = ops->count();
	if (n <= 0) {
		r->status = cudaErrorNoDevice;
		snprintf(r->error, sizeof(r->error), "no %s device on this node", ops->name);
		return;
	}
	if (n > PROBE_MAX_GPUS)
		n = PROBE_MAX_GPUS;
	for (int i = 0; i < n; i++) {
		static struct mearas_devinfo info;
		struct probe_gpu *g = &r->gpus[i];
		struct mdev *d = NULL;
		uint64_t gran, free_b = 0, total = 0;
		int e;

		memset(&info, 0, sizeof(info));
		e = ops->open(&d, i, PROBE_VA_BASE, PROBE_VA_SIZE, &info, &gran);
		if (e) {
			r->status = e;
			snprintf(r->error, sizeof(r->error), "cannot open %s device %d (error %d)",
				 ops->name, i, e);
			return;
		}
		snprintf(g->name, sizeof(g->name), "%s", info.name);
		g->cc_major = (uint32_t)info.attrs[cudaDevAttrComputeCapabilityMajor];
		g->cc_minor = (uint32_t)info.attrs[cudaDevAttrComputeCapabilityMinor];
		g->sm_count = (uint32_t)info.attrs[cudaDevAttrMultiProcessorCount];
		g->memory_bytes = info.total_mem;
		if (ops->mem_info(d, &free_b, &total) == 0) {
			g->free_bytes = free_b;
			g->free_known = 1;
		}
		ops->close(d);
	}
	r->count = (uint32_t)n;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gpu_probe(const struct mdev_ops *ops, int timeout_ms, struct probe_result *out)
{
	int p[2];
	size_t got = 0;
	int64_t deadline = now_ms() + timeout_ms;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	if (pipe2(p, O_CLOEXEC)) {
		out->status = cudaErrorUnknown;
		snprintf(out->error, sizeof(out->error), "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		static struct probe_result r;
		size_t off = 0;

		close(p[0]);
		probe_here(ops, &r);
		while (off < sizeof(r)) {
			ssize_t w = write(p[1], (char *)&r + off, sizeof(r) - off);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
		_exit(0);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		out->status = cudaErrorUnknown;
		snprintf(out->error, sizeof(out->error), "fork: %s", strerror(errno));
		return;
	}
	while (got < sizeof(*out)) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, (int)left) == 0)
			break;
		n = read(p[0], (char *)out + got, sizeof(*out) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(p[0]);
	if (got < sizeof(*out)) {
		kill(pid, SIGKILL);
		memset(out, 0, sizeof(*out));
		out->status = cudaErrorUnknown;
		snprintf(out->error, sizeof(out->error), "GPU probe (child pid %d) %s", (int)pid,
			 now_ms() >= deadline ? "timed out" : "died without answering");
	}
	waitpid(pid, NULL, 0); /* ECHILD where mearasd lets the kernel reap children */
	out->error[sizeof(out->error) - 1] = 0;
	if (out->count > PROBE_MAX_GPUS)
		out->count = PROBE_MAX_GPUS;
}
