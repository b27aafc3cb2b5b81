// SPDX-License-Identifier: MIT
/* Process transport: mearasd's unix socket hands over the region (a memfd)
 * and the eventfds used for notifications. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "mearas/fdpass.h"
#include "mearas/log.h"
#include "core.h"

#define DEFAULT_SOCKET "/run/mearas/mearasd.sock"

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *e = getenv(name);
	char *end;
	unsigned long long v;

	if (!e || !*e)
		return def;
	v = strtoull(e, &end, 10);
	if (*end) {
		log_warn("ignoring %s=%s (not a number)", name, e);
		return def;
	}
	return v;
}

cudaError_t tpu_connect(struct rt_transport *tp, int *memfd, uint64_t *region_size, uint64_t *region_addr,
			unsigned *nvgpus, unsigned *nthreads)
{
	const char *path = getenv("MEARAS_SOCKET");
	const char *assembly = getenv("MEARAS_ASSEMBLY");
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct mearas_hello h = { .magic = MEARAS_HELLO_MAGIC, .version = MEARAS_PROTO_VERSION };
	struct mearas_welcome wl;
	int fds[3 + MEARAS_MAX_VGPUS + MEARAS_MAX_THREADS], nfds = 0, r;

	if (!path || !*path)
		path = DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(a.sun_path)) {
		log_err("MEARAS_SOCKET path too long");
		return cudaErrorNoDevice;
	}
	strcpy(a.sun_path, path);
	h.nvgpus = (uint32_t)env_u64("MEARAS_VGPUS", 0);
	h.data_size = env_u64("MEARAS_DATA_MB", 0) << 20;
	h.pid = (int32_t)getpid();
	if (assembly)
		snprintf(h.assembly, sizeof(h.assembly), "%s", assembly);
	tp->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (tp->sock < 0 || connect(tp->sock, (struct sockaddr *)&a, sizeof(a))) {
		if (errno == EACCES)
			log_err("not allowed to use mearasd's socket %s: only root and the socket's group "
				"may (ask the operator: mearasd --socket-group)", path);
		else
			log_err("cannot reach mearasd at %s: %s (is mearasd running? set MEARAS_SOCKET)",
				path, strerror(errno));
		return cudaErrorNoDevice;
	}
	r = mearas_send_fds(tp->sock, &h, sizeof(h), NULL, 0);
	if (!r)
		r = mearas_recv_fds(tp->sock, &wl, sizeof(wl), fds, (int)(sizeof(fds) / sizeof(fds[0])),
				    &nfds, 60000);
	if (r) {
		log_err("handshake with mearasd at %s failed: %s", path, strerror(-r));
		return cudaErrorNoDevice;
	}
	if (wl.magic != MEARAS_WELCOME_MAGIC || wl.version != MEARAS_PROTO_VERSION) {
		log_err("mearasd at %s speaks protocol %u, this library %u", path, wl.version,
			MEARAS_PROTO_VERSION);
		return cudaErrorInsufficientDriver;
	}
	if (wl.status) {
		wl.message[sizeof(wl.message) - 1] = 0;
		log_err("mearasd refused: %s", wl.message);
		return (cudaError_t)wl.status;
	}
	if (wl.nvgpus == 0 || wl.nvgpus > MEARAS_MAX_VGPUS || wl.nthreads == 0 ||
	    wl.nthreads > MEARAS_MAX_THREADS || nfds != 3 + (int)wl.nvgpus + (int)wl.nthreads) {
		log_err("malformed welcome from mearasd (%u vGPUs, %u slots, %d fds)", wl.nvgpus,
			wl.nthreads, nfds);
		return cudaErrorNoDevice;
	}
	*memfd = fds[0];
	for (unsigned i = 0; i < wl.nvgpus; i++)
		tp->kick_fd[i] = fds[1 + i];
	for (unsigned t = 0; t < wl.nthreads; t++)
		tp->wake_fd[t] = fds[1 + wl.nvgpus + t];
	tp->out_fd = fds[1 + wl.nvgpus + wl.nthreads];
	tp->err_fd = fds[2 + wl.nvgpus + wl.nthreads];
	*region_size = wl.region_size;
	*region_addr = wl.region_addr;
	*nvgpus = wl.nvgpus;
	*nthreads = wl.nthreads;
	return cudaSuccess;
}

void tpu_kick(struct rt_transport *tp, unsigned vgpu)
{
	uint64_t one = 1;

	if (write(tp->kick_fd[vgpu], &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("kick vGPU %u: %s", vgpu, strerror(errno));
}

bool tpu_wait(struct rt_transport *tp, unsigned slot, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = tp->wake_fd[slot], .events = POLLIN },
		{ .fd = tp->sock, .events = POLLIN | POLLRDHUP },
	};
	uint64_t cnt;
	int r = poll(p, 2, timeout_ms);

	if (r < 0)
		return errno == EINTR;
	if (p[1].revents) {
		/* mearasd never writes after the welcome: any event is its end */
		if (rt_gone() == cudaErrorLaunchTimeout)
			log_err("a kernel ran past mearasd's GPU time limit: this process's GPU context is "
				"gone, its CUDA calls fail with cudaErrorLaunchTimeout");
		else
			log_err("lost the connection to mearasd: outstanding and later CUDA calls fail");
		return false;
	}
	if (p[0].revents & POLLIN) {
		if (read(tp->wake_fd[slot], &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
			return true;
	}
	return true;
}

/* Device printf/assert output waiting in the worker's pipes goes to our own
 * stdout/stderr, through stdio so it keeps its place among the program's
 * own output. */
void tpu_drain_output(struct rt_transport *tp)
{
	char buf[65536];
	int fds[2] = { tp->out_fd, tp->err_fd };
	FILE *to[2] = { stdout, stderr };

	for (int i = 0; i < 2; i++) {
		for (;;) {
			struct pollfd p = { .fd = fds[i], .events = POLLIN };
			ssize_t n;

			if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
				break;
			n = read(fds[i], buf, sizeof(buf));
			if (n <= 0)
				break;
			fwrite(buf, 1, (size_t)n, to[i]);
		}
	}
}
