/*
 * Host side of the mearas VM tests:
 *   ivshmem_host_test plain|doorbell|kill GUEST_DIR WORK_DIR
 * plain: two ivshmem-plain devices backed by /dev/shm files.
 * doorbell: ivshmem-doorbell against this program's ivshmem server.
 * kill: QEMU is SIGKILLed mid-run; the server must report the disconnect.
 */
#define _GNU_SOURCE
#include "check.h"
#include "qemu_runner.h"
#include "../test_shm_layout.h"
#include "ivshmem_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BOOT_TIMEOUT_MS 90000
#define STEP_TIMEOUT_MS 30000

struct peer_events {
	unsigned int connected, disconnected;
	unsigned int last_connected, last_disconnected;
};

static void on_connect(void *opaque, unsigned int id)
{
	struct peer_events *ev = opaque;

	ev->connected++;
	ev->last_connected = id;
}

static void on_disconnect(void *opaque, unsigned int id)
{
	struct peer_events *ev = opaque;

	ev->disconnected++;
	ev->last_disconnected = id;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void *map_fd(int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int run_plain(const char *guest, const char *work)
{
	static const size_t sizes[2] = { TEST_PLAIN_SIZE0, TEST_PLAIN_SIZE1 };
	char files[2][128], objs[2][256], devs[2][64], log[512];
	uint8_t *shm[2];
	int status;

	for (int d = 0; d < 2; d++) {
		snprintf(files[d], sizeof(files[d]), "/dev/shm/mearas-test-%d-%d",
			 (int)getpid(), d);
		int fd = open(files[d], O_RDWR | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || ftruncate(fd, sizes[d]) < 0 || !(shm[d] = map_fd(fd, sizes[d]))) {
			CHECK_NAMED(0, "plain/shm-file", "%s: %s", files[d], strerror(errno));
			return 1;
		}
		close(fd);
		for (size_t i = 0; i < TEST_PATTERN_LEN; i++)
			shm[d][TEST_HOST_PATTERN_OFF + i] = test_host_byte(i, d);
		snprintf(objs[d], sizeof(objs[d]),
			 "memory-backend-file,size=%zu,share=on,mem-path=%s,id=m%d",
			 sizes[d], files[d], d);
		snprintf(devs[d], sizeof(devs[d]), "ivshmem-plain,memdev=m%d", d);
	}
	snprintf(log, sizeof(log), "%s/plain.log", work);
	const char *args[] = { "-object", objs[0], "-device", devs[0],
			       "-object", objs[1], "-device", devs[1], NULL };
	struct qemu_opts o = { guest, log, "plain", args };
	pid_t pid = qemu_start(&o);

	status = pid < 0 ? pid : qemu_wait(pid, BOOT_TIMEOUT_MS);
	CHECK_NAMED(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "plain/qemu-exits", "status %d (see %s.err)", status, log);
	for (int d = 0; d < 2; d++) {
		size_t bad = 0;
		char name[64];

		for (size_t i = 0; i < TEST_PATTERN_LEN; i++)
			bad += shm[d][TEST_PATTERN_OFF + i] != test_guest_byte(i, d);
		snprintf(name, sizeof(name), "plain/dev%d-guest-pattern-in-host-file", d);
		CHECK_NAMED(bad == 0, name, "%zu bytes differ", bad);
		munmap(shm[d], sizes[d]);
		unlink(files[d]);
	}
	check_serial_log(log, "plain");
	return 0;
}

struct doorbell_env {
	struct ivshmem_server *srv;
	struct peer_events ev;
	uint8_t *shm;
	struct test_ctrl *ctrl;
	pid_t qemu;
	int qemu_status;	/* valid once qemu == -1 */
};

/* Runs the server loop until cond(env) holds or timeout; false on timeout. */
static bool serve_until(struct doorbell_env *e, bool (*cond)(struct doorbell_env *),
			int timeout_ms)
{
	long long end = now_ms() + timeout_ms;

	while (!cond(e)) {
		struct pollfd p = { .fd = ivshmem_server_poll_fd(e->srv), .events = POLLIN };

		if (now_ms() > end)
			return false;
		/* After QEMU exits, serve a little longer for its disconnect. */
		if (e->qemu > 0 && waitpid(e->qemu, &e->qemu_status, WNOHANG) == e->qemu) {
			e->qemu = -1;
			if (end > now_ms() + 2000)
				end = now_ms() + 2000;
		}
		poll(&p, 1, 10);
		ivshmem_server_process(e->srv);
	}
	return true;
}

static bool is_connected(struct doorbell_env *e) { return e->ev.connected > 0; }
static bool is_disconnected(struct doorbell_env *e) { return e->ev.disconnected > 0; }
static bool guest_ready(struct doorbell_env *e)
{
	return test_load(&e->ctrl->guest_ready) == TEST_READY_MAGIC;
}
static bool host_doorbell(struct doorbell_env *e)
{
	struct pollfd p = { .fd = ivshmem_server_host_eventfd(e->srv, 1), .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}
static bool stage_polling(struct doorbell_env *e)
{
	return test_load(&e->ctrl->stage) == TEST_STAGE_POLLING;
}
static bool stage_done(struct doorbell_env *e)
{
	return test_load(&e->ctrl->stage) >= TEST_STAGE_DONE;
}
static bool stage_reprobed(struct doorbell_env *e)
{
	return test_load(&e->ctrl->stage) == TEST_STAGE_REPROBED;
}

static int start_doorbell_guest(struct doorbell_env *e, const char *guest,
				const char *work, const char *mode, char *log,
				size_t loglen)
{
	static char chardev[256], sock[160];
	struct ivshmem_server_callbacks cb = { .peer_connected = on_connect, .peer_disconnected = on_disconnect,
						.opaque = &e->ev };
	int fd = memfd_create("mearas-test", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, TEST_DOORBELL_SIZE) < 0 ||
	    !(e->shm = map_fd(fd, TEST_DOORBELL_SIZE))) {
		CHECK_NAMED(0, "doorbell/shm", "%s", strerror(errno));
		return -1;
	}
	e->ctrl = (struct test_ctrl *)e->shm;
	snprintf(sock, sizeof(sock), "%s/ivshmem-%s.sock", work, mode);
	e->srv = ivshmem_server_new(sock, fd, TEST_VECTORS, &cb);
	close(fd);
	CHECK_NAMED(e->srv != NULL, "server-new", "%s", strerror(errno));
	if (!e->srv)
		return -1;

	snprintf(chardev, sizeof(chardev), "socket,path=%s,id=ivs", sock);
	snprintf(log, loglen, "%s/%s.log", work, mode);
	const char *args[] = { "-chardev", chardev, "-device",
			       "ivshmem-doorbell,chardev=ivs,vectors=2", NULL };
	struct qemu_opts o = { guest, log, mode, args };

	char name[64];

	e->qemu = qemu_start(&o);
	snprintf(name, sizeof(name), "%s/qemu-starts", mode);
	return CHECK_NAMED(e->qemu > 0, name, "%s", strerror(-e->qemu)) ? 0 : -1;
}

static void finish(struct doorbell_env *e)
{
	if (e->qemu > 0)
		qemu_wait(e->qemu, 0);
	ivshmem_server_free(e->srv);
	munmap(e->shm, TEST_DOORBELL_SIZE);
}

static int run_doorbell(const char *guest, const char *work)
{
	struct doorbell_env e = { 0 };
	unsigned int id;
	uint64_t count = 0;
	size_t bad = 0;
	char log[512];
	int status, ret;

	if (start_doorbell_guest(&e, guest, work, "doorbell", log, sizeof(log)))
		return 1;
	CHECK_NAMED(serve_until(&e, is_connected, 10000), "doorbell/qemu-connects",
	       "no connection (see %s.err)", log);
	id = e.ev.last_connected;
	CHECK_NAMED(id >= 1, "doorbell/guest-peer-id-nonzero", "id %u", id);
	CHECK_NAMED(serve_until(&e, guest_ready, BOOT_TIMEOUT_MS), "doorbell/guest-ready-flag",
	       "guest never set the flag (see %s)", log);
	CHECK_NAMED(test_load(&e.ctrl->guest_peer_id) == id, "doorbell/guest-sees-own-peer-id",
	       "guest says %u, server gave %u", test_load(&e.ctrl->guest_peer_id), id);
	for (size_t i = 0; i < TEST_PATTERN_LEN; i++)
		bad += e.shm[TEST_PATTERN_OFF + i] != test_guest_byte(i, id);
	CHECK_NAMED(bad == 0, "doorbell/guest-pattern-in-host-memory", "%zu bytes differ", bad);

	CHECK_NAMED(serve_until(&e, host_doorbell, STEP_TIMEOUT_MS) &&
	       ivshmem_server_host_consume(e.srv, 1, &count) == 0 && count >= 1,
	       "doorbell/host-eventfd-wakes", "no doorbell on vector 1");
	ret = ivshmem_server_host_consume(e.srv, 0, &count);
	CHECK_NAMED(ret == -EAGAIN, "doorbell/host-vector0-quiet", "ret=%d", ret);

	for (size_t i = 0; i < TEST_PATTERN_LEN; i++)
		e.shm[TEST_HOST_PATTERN_OFF + i] = test_host_byte(i, id);
	ret = ivshmem_server_notify(e.srv, id, 0);
	CHECK_NAMED(ret == 0, "doorbell/notify-vector0", "ret=%d", ret);
	CHECK_NAMED(ivshmem_server_notify(e.srv, id + 1, 0) == -ENOENT &&
	       ivshmem_server_notify(e.srv, id, TEST_VECTORS) == -EINVAL,
	       "doorbell/notify-bad-args", "not refused");

	CHECK_NAMED(serve_until(&e, stage_polling, STEP_TIMEOUT_MS), "doorbell/guest-polling",
	       "stage %u", test_load(&e.ctrl->stage));
	ret = ivshmem_server_notify(e.srv, id, 1);
	CHECK_NAMED(ret == 0, "doorbell/notify-vector1", "ret=%d", ret);
	CHECK_NAMED(serve_until(&e, stage_done, STEP_TIMEOUT_MS), "doorbell/guest-poll-done",
	       "stage %u", test_load(&e.ctrl->stage));
	CHECK_NAMED(serve_until(&e, stage_reprobed, STEP_TIMEOUT_MS),
	       "doorbell/guest-reprobed", "stage %u", test_load(&e.ctrl->stage));
	ret = ivshmem_server_notify(e.srv, id, 0);
	CHECK_NAMED(ret == 0, "doorbell/notify-after-reprobe", "ret=%d", ret);

	CHECK_NAMED(serve_until(&e, is_disconnected, BOOT_TIMEOUT_MS) &&
	       e.ev.last_disconnected == id, "doorbell/disconnect-on-poweroff",
	       "disconnected=%u", e.ev.disconnected);
	status = e.qemu > 0 ? qemu_wait(e.qemu, 10000) : e.qemu_status;
	e.qemu = -1;
	CHECK_NAMED(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "doorbell/qemu-exits", "status %d", status);
	finish(&e);
	check_serial_log(log, "doorbell");
	return 0;
}

static int run_kill(const char *guest, const char *work)
{
	struct doorbell_env e = { 0 };
	unsigned int ids[4];
	char log[512];
	long long t0;

	if (start_doorbell_guest(&e, guest, work, "idle", log, sizeof(log)))
		return 1;
	CHECK_NAMED(serve_until(&e, is_connected, 10000), "kill/qemu-connects",
	       "no connection (see %s.err)", log);
	CHECK_NAMED(serve_until(&e, guest_ready, BOOT_TIMEOUT_MS), "kill/guest-ready-flag",
	       "guest never set the flag (see %s)", log);
	CHECK_NAMED(ivshmem_server_peer_ids(e.srv, ids, 4) == 1 && ids[0] == e.ev.last_connected,
	       "kill/one-peer-listed", "peer list wrong");
	t0 = now_ms();
	kill(e.qemu, SIGKILL);
	waitpid(e.qemu, NULL, 0);
	e.qemu = -1;
	CHECK_NAMED(serve_until(&e, is_disconnected, 5000) &&
	       e.ev.last_disconnected == e.ev.last_connected,
	       "kill/server-notices-disconnect", "no disconnect callback");
	printf("  kill: disconnect noticed %lld ms after SIGKILL\n", now_ms() - t0);
	CHECK_NAMED(ivshmem_server_peer_ids(e.srv, ids, 4) == 0 &&
	       ivshmem_server_notify(e.srv, e.ev.last_connected, 0) == -ENOENT,
	       "kill/peer-gone", "peer still listed");
	finish(&e);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s plain|doorbell|kill GUEST_DIR WORK_DIR\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(argv[1], "plain"))
		run_plain(argv[2], argv[3]);
	else if (!strcmp(argv[1], "doorbell"))
		run_doorbell(argv[2], argv[3]);
	else if (!strcmp(argv[1], "kill"))
		run_kill(argv[2], argv[3]);
	else {
		fprintf(stderr, "unknown mode %s\n", argv[1]);
		return 2;
	}
	return check_done();
}
