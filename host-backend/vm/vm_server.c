// SPDX-License-Identifier: MIT
/*
 * --vm specs, the slot layout, and one supervisor process per VM: it owns
 * the VM's shared memory (a memfd per VM connection), forks the VM worker,
 * and when the worker ends (the VM went away, or the worker died) marks
 * that memory dead and starts a fresh worker for the next VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/memfd.h"
#include "mearas/log.h"
#include "mearas/sockpath.h"
#include "vm.h"

int vm_parse_spec(const char *arg, struct vm_spec *out, char *err, size_t errlen)
{
	char buf[512], *fields[5] = { 0 }, *save = NULL, *end;
	unsigned n = 0;
	unsigned long long mb, vg = 0;

	memset(out, 0, sizeof(*out));
	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf))
		return snprintf(err, errlen, "--vm value too long"), -1;
	for (char *t = strtok_r(buf, ":", &save); t && n < 5; t = strtok_r(NULL, ":", &save))
		fields[n++] = t;
	if (n < 3 || n > 4)
		return snprintf(err, errlen, "--vm=%s: expected NAME:SOCKET_PATH:SIZE_MB[:VGPUS]", arg), -1;
	if (strlen(fields[0]) >= sizeof(out->name) || !fields[0][0])
		return snprintf(err, errlen, "--vm: bad VM name '%s'", fields[0]), -1;
	if (strlen(fields[1]) >= sizeof(out->socket) || fields[1][0] != '/')
		return snprintf(err, errlen, "--vm: socket path must be absolute and under %zu bytes",
				sizeof(out->socket)), -1;
	errno = 0;
	mb = strtoull(fields[2], &end, 10);
	if (errno || *end || mb == 0 || mb > (1ull << 20) || (mb & (mb - 1)))
		return snprintf(err, errlen, "--vm: SIZE_MB '%s' must be a power of two (a PCI BAR), 1..1048576",
				fields[2]), -1;
	if (n == 4) {
		vg = strtoull(fields[3], &end, 10);
		if (*end || vg == 0 || vg > MEARAS_MAX_VGPUS)
			return snprintf(err, errlen, "--vm: VGPUS '%s' must be 1..%u", fields[3],
					MEARAS_MAX_VGPUS), -1;
	}
	snprintf(out->name, sizeof(out->name), "%s", fields[0]);
	snprintf(out->socket, sizeof(out->socket), "%s", fields[1]);
	out->size = mb << 20;
	out->vgpus = (unsigned)vg;
	return 0;
}

int vm_resolve_user(const char *user, struct vm_spec *specs, unsigned n, char *err, size_t errlen)
{
	const char *name = user ? user : VM_DEFAULT_QEMU_USER;
	struct passwd *pw = getpwnam(name);
	uid_t uid = 0;
	gid_t gid = 0;

	if (!pw && user) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(user, &end, 10);
		if (errno || !*user || *end || v > 0xfffffffeul)
			return snprintf(err, errlen, "--vm-user: no user '%s' on this host", user), -1;
		pw = getpwuid((uid_t)v);
		uid = (uid_t)v;
		gid = pw ? pw->pw_gid : (gid_t)v;
	} else if (pw) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	} /* else: no libvirt-qemu here: root only */
	for (unsigned i = 0; i < n; i++) {
		specs[i].qemu_uid = uid;
		specs[i].qemu_gid = gid;
	}
	return 0;
}

/* Device address windows (1 TiB each, from 16 TiB) must stay below the
 * region address hint at 96 TiB. */
#define MAX_WINDOWS 64u

int vm_compute_layout(uint64_t size, unsigned nvgpus, struct vm_layout *l, char *err, size_t errlen)
{
	uint64_t fixed = mearas_vm_region_fixed(nvgpus), need = fixed + MEARAS_VM_MIN_DATA, avail;
	unsigned k;

	if (size < MEARAS_VM_SLOT_ALIGN + need) {
		snprintf(err, errlen, "%llu MiB of shared memory cannot hold one slot of %u vGPU(s): at least %llu MiB",
			 (unsigned long long)(size >> 20), nvgpus,
			 (unsigned long long)((MEARAS_VM_SLOT_ALIGN + need + (1 << 20) - 1) >> 20));
		return -1;
	}
	avail = size - MEARAS_VM_SLOT_ALIGN;
	k = (unsigned)(avail / need);
	if (k > MEARAS_VM_MAX_SLOTS)
		k = MEARAS_VM_MAX_SLOTS;
	if (k * nvgpus > MAX_WINDOWS)
		k = MAX_WINDOWS / nvgpus;
	l->nslots = k;
	l->nvgpus = nvgpus;
	l->slot_off = MEARAS_VM_SLOT_ALIGN;
	l->slot_size = (avail / k) & ~(MEARAS_VM_SLOT_ALIGN - 1);
	l->region_fixed = fixed;
	l->data_size = l->slot_size - fixed;
	return 0;
}

static volatile sig_atomic_t sup_quit;

static void sup_on_signal(int sig)
{
	(void)sig;
	sup_quit = 1;
}

/* The guests still mapping this memory must see that nobody serves it. */
static void mark_dead(const struct vm_layout *l, int memfd, uint64_t size)
{
	uint8_t *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);

	if (base == MAP_FAILED)
		return;
	((struct mearas_vm_hdr *)base)->state = MEARAS_BACKEND_DEAD;
	for (unsigned k = 0; k < l->nslots; k++)
		((struct mearas_region_hdr *)(base + l->slot_off + l->slot_size * k))->state = MEARAS_BACKEND_DEAD;
	munmap(base, size);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

/* ready_fd >= 0: handed to the first worker, which says there when it serves
 * the socket (vm_server_spawn waits for it) */
static void supervise(const struct backend_config *cfg, const struct vm_spec *spec, const struct vm_layout *l,
		      int ready_fd)
{
	struct sigaction sa = { .sa_handler = sup_on_signal };
	sigset_t none;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGCHLD, SIG_DFL);
	/* forked by the control thread, which blocks every signal */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	while (!sup_quit) {
		int memfd = mearas_sealed_memfd("mearas-vm", spec->size), st = 0;
		uint64_t started = now_ms();
		pid_t pid;

		if (memfd < 0) {
			log_err("VM %s: shared memory of %llu MiB: %s", spec->name,
				(unsigned long long)(spec->size >> 20), strerror(errno));
			_exit(1);
		}
		pid = fork();
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			signal(SIGTERM, SIG_DFL);
			signal(SIGINT, SIG_DFL);
			_exit(vm_worker_run(cfg, spec, memfd, ready_fd));
		}
		if (ready_fd >= 0) {
			close(ready_fd); /* the worker has it; EOF if it ends without a word */
			ready_fd = -1;
		}
		if (pid < 0) {
			log_err("VM %s: fork: %s", spec->name, strerror(errno));
			_exit(1);
		}
		log_info("VM %s: worker pid %d", spec->name, (int)pid);
		while (waitpid(pid, &st, 0) < 0) {
			if (errno != EINTR)
				break;
			if (sup_quit)
				kill(pid, SIGTERM);
		}
		mark_dead(l, memfd, spec->size);
		close(memfd);
		if (WIFSIGNALED(st))
			log_warn("VM %s: worker %d killed by signal %d", spec->name, (int)pid, WTERMSIG(st));
		if (sup_quit)
			break;
		/* a worker that fails at once (bad device, socket in use) is not
		 * restarted in a tight loop */
		if (now_ms() - started < 1000)
			sleep(1);
	}
	mearas_unlink_socket(spec->socket);
	_exit(0);
}

/* a listening socket bound at path, in this network namespace */
static bool socket_listening(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "re");
	char line[512];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long flags;
		char *nl = strchr(line, '\n');
		int off = 0;

		if (nl)
			*nl = 0;
		/* Num RefCount Protocol Flags Type St Inode Path; Flags 0x10000: listening */
		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %n", &flags, &off) == 1 && off > 0)
			found = (flags & 0x10000) && !strcmp(line + off, path);
	}
	fclose(f);
	return found;
}

int vm_sockets_check(const struct vm_spec *specs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (socket_listening(specs[i].socket)) {
			fprintf(stderr, "mearasd: VM %s: %s is served by a live process already, another mearasd: not "
				"taken over\n", specs[i].name, specs[i].socket);
			return -1;
		}
	return 0;
}

int vm_servers_start(const struct backend_config *cfg, const struct vm_spec *specs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct vm_layout l;
		char err[256];
		pid_t pid;

		if (vm_compute_layout(specs[i].size, specs[i].vgpus ? specs[i].vgpus : cfg->vgpus_default, &l, err,
				      sizeof(err))) {
			log_err("VM %s: %s", specs[i].name, err);
			return -1;
		}
		pid = fork();
		if (pid == 0)
			supervise(cfg, &specs[i], &l, -1);
		if (pid < 0) {
			log_err("fork: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

int vm_server_spawn(const struct backend_config *cfg, const struct vm_spec *spec, unsigned timeout_ms,
		    pid_t *pidp, int *pidfdp, char *err, size_t errlen)
{
	struct vm_layout l;
	char msg[256];
	struct pollfd p;
	ssize_t n = 0;
	int ready[2], pidfd, r;
	pid_t pid;

	if (vm_compute_layout(spec->size, spec->vgpus ? spec->vgpus : cfg->vgpus_default, &l, err, errlen))
		return -1;
	if (pipe2(ready, O_CLOEXEC))
		return snprintf(err, errlen, "pipe: %s", strerror(errno)), -1;
	pid = fork();
	if (pid == 0) {
		/* nothing of mearasd's (client connections, the listening
		 * sockets) stays open in the VM's processes */
		close(ready[0]);
		if (ready[1] > 3)
			close_range(3, (unsigned)ready[1] - 1, 0);
		close_range((unsigned)ready[1] + 1, ~0u, 0);
		supervise(cfg, spec, &l, ready[1]);
	}
	close(ready[1]);
	if (pid < 0) {
		close(ready[0]);
		return snprintf(err, errlen, "fork: %s", strerror(errno)), -1;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		snprintf(err, errlen, "pidfd_open: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, WNOHANG);
		close(ready[0]);
		return -1;
	}
	p = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	do
		r = poll(&p, 1, (int)timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		n = read(ready[0], msg, sizeof(msg) - 1);
	close(ready[0]);
	if (n > 0 && msg[0] == 0) {
		*pidp = pid;
		*pidfdp = pidfd;
		return 0;
	}
	if (n > 0) {
		msg[n] = 0;
		snprintf(err, errlen, "%s", msg);
	} else if (r == 0) {
		snprintf(err, errlen, "the VM server did not serve %s within %u ms", spec->socket, timeout_ms);
	} else {
		snprintf(err, errlen, "the VM server ended before serving %s (see mearasd's log)", spec->socket);
	}
	vm_server_stop(pid, pidfd, 2000);
	mearas_unlink_socket(spec->socket);
	return -1;
}

/* true when the process of pidfd ended within ms */
static bool ended_within(int pidfd, unsigned ms)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	uint64_t until = now_ms() + ms;
	int r;

	for (;;) {
		uint64_t now = now_ms();

		r = poll(&p, 1, now < until ? (int)(until - now) : 0);
		if (r > 0)
			return true;
		if (r == 0 || errno != EINTR)
			return false;
	}
}

void vm_server_stop(pid_t pid, int pidfd, unsigned grace_ms)
{
	kill(pid, SIGTERM);
	if (!ended_within(pidfd, grace_ms)) {
		log_warn("VM server %d did not stop within %u ms: killed", (int)pid, grace_ms);
		kill(pid, SIGKILL);
		ended_within(pidfd, 5000);
	}
	waitpid(pid, NULL, WNOHANG); /* where mearasd reaps its own children */
	close(pidfd);
}

void vm_servers_unlink(const struct vm_spec *specs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		mearas_unlink_socket(specs[i].socket);
}
