/* ivshmem-doorbell scenario against the host test program's server. */
#define _GNU_SOURCE
#include "guest_scenarios.h"
#include "check.h" /* tests/check.h, CHECK_PREFIX "GUEST-" (Makefile) */
#include "guest_util.h"
#include "../test_shm_layout.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LONG_WAIT_MS 20000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void check_interrupts(int fd, const struct mearas_info *info,
			     struct test_ctrl *ctrl, uint8_t *shm)
{
	struct mearas_doorbell db = { .peer_id = MEARAS_HOST_PEER_ID, .vector = 1 };
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t c0, count, mask = 0;
	size_t bad = 0;
	int ret;

	for (size_t i = 0; i < TEST_PATTERN_LEN; i++)
		shm[TEST_PATTERN_OFF + i] = test_guest_byte(i, info->peer_id);

	c0 = vector_count(fd, 0);
	ret = wait_vector(fd, 0, c0, 200, &count);
	CHECK_NAMED(ret == -ETIMEDOUT && count == c0, "wait-times-out", "ret=%d", ret);

	test_store(&ctrl->guest_peer_id, info->peer_id);
	test_store(&ctrl->guest_ready, TEST_READY_MAGIC);
	ret = xioctl(fd, MEARAS_IOC_RING, &db);
	CHECK_NAMED(ret == 0, "ring-host-doorbell", "ret=%d", ret);

	/* The host answers the doorbell with vector 0; c0 predates the ring. */
	ret = wait_vector(fd, 0, c0, LONG_WAIT_MS, &count);
	CHECK_NAMED(ret == 0 && count > c0, "wait-wakes-on-msix", "ret=%d count=%llu",
	      ret, (unsigned long long)count);
	for (size_t i = 0; i < TEST_PATTERN_LEN; i++)
		bad += shm[TEST_HOST_PATTERN_OFF + i] != test_host_byte(i, info->peer_id);
	CHECK_NAMED(bad == 0, "host-pattern-seen", "%zu bytes differ", bad);

	ret = (int)read(fd, &mask, sizeof(mask));
	CHECK_NAMED(ret == 8 && mask == 1, "read-mask-vector0", "ret=%d mask=%#llx", ret,
	      (unsigned long long)mask);
	ret = poll(&pfd, 1, 0);
	CHECK_NAMED(ret == 0, "poll-nothing-pending", "ret=%d revents=%#x", ret, pfd.revents);

	test_store(&ctrl->stage, TEST_STAGE_POLLING);
	ret = poll(&pfd, 1, LONG_WAIT_MS);
	CHECK_NAMED(ret == 1 && (pfd.revents & POLLIN), "poll-wakes-on-msix",
	      "ret=%d revents=%#x", ret, pfd.revents);
	mask = 0;
	ret = (int)read(fd, &mask, sizeof(mask));
	CHECK_NAMED(ret == 8 && mask == 2, "read-mask-vector1", "ret=%d mask=%#llx", ret,
	      (unsigned long long)mask);
	test_store(&ctrl->stage, TEST_STAGE_DONE);
}

/* A waiter blocked in MEARAS_IOC_WAIT must wake with ENODEV on removal. */
static void check_remove_wakes_waiter(int fd)
{
	char bdf[64], path[160];
	struct mearas_info info;
	int status = -1, ret;
	double t0;
	pid_t pid;

	if (!pci_address(0, bdf, sizeof(bdf))) {
		CHECK_NAMED(0, "doorbell-remove-setup", "no pci address");
		return;
	}
	pid = fork();
	if (pid == 0) {
		ret = wait_vector(fd, 0, vector_count(fd, 0), LONG_WAIT_MS, NULL);
		_exit(ret == -ENODEV ? 0 : 1);
	}
	sleep_ms(500);
	t0 = now_s();
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/remove", bdf);
	ret = write_sysfs(path, "1");
	waitpid(pid, &status, 0);
	CHECK_NAMED(ret == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	      now_s() - t0 < 10, "remove-wakes-waiter-enodev",
	      "ret=%d status=%#x", ret, status);
	ret = xioctl(fd, MEARAS_IOC_INFO, &info);
	CHECK_NAMED(ret == -ENODEV, "doorbell-removed-info-enodev", "ret=%d", ret);
}

static void check_reprobe(const struct mearas_info *before)
{
	struct mearas_info info;
	struct test_ctrl *ctrl;
	uint64_t c0, count;
	int fd, ret;

	ret = write_sysfs("/sys/bus/pci/rescan", "1");
	CHECK_NAMED(ret == 0 && wait_node(0, 1, 3000) == 0, "doorbell-rescan", "ret=%d", ret);
	fd = open_dev(0);
	ret = fd < 0 ? -errno : xioctl(fd, MEARAS_IOC_INFO, &info);
	CHECK_NAMED(ret == 0 && info.peer_id == before->peer_id &&
	      info.nr_vectors == before->nr_vectors, "doorbell-rescan-info",
	      "ret=%d peer=%u", ret, info.peer_id);
	if (ret)
		return;
	ctrl = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ctrl == MAP_FAILED) {
		CHECK_NAMED(0, "doorbell-rescan-mmap", "errno=%d", errno);
		return;
	}
	c0 = vector_count(fd, 0);
	test_store(&ctrl->stage, TEST_STAGE_REPROBED);
	ret = wait_vector(fd, 0, c0, LONG_WAIT_MS, &count);
	CHECK_NAMED(ret == 0 && count > c0, "msix-after-reprobe", "ret=%d", ret);
	munmap(ctrl, 4096);
	close(fd);
}

void scenario_doorbell(void)
{
	struct mearas_info info;
	uint8_t *shm;
	int fd, ret;

	fd = open_dev(0);
	CHECK_NAMED(fd >= 0, "doorbell-open", "errno=%d", errno);
	if (fd < 0)
		return;
	ret = xioctl(fd, MEARAS_IOC_INFO, &info);
	CHECK_NAMED(ret == 0 && (info.flags & MEARAS_INFO_DOORBELL) &&
	      info.nr_vectors == TEST_VECTORS && info.shm_size == TEST_DOORBELL_SIZE &&
	      info.peer_id >= 1 && info.peer_id <= MEARAS_MAX_PEER_ID,
	      "doorbell-info", "ret=%d size=%llu vectors=%u flags=%u peer=%u", ret,
	      (unsigned long long)info.shm_size, info.nr_vectors, info.flags,
	      info.peer_id);
	if (ret)
		return;
	shm = mmap(NULL, info.shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK_NAMED(shm != MAP_FAILED, "doorbell-mmap", "errno=%d", errno);
	if (shm == MAP_FAILED)
		return;

	check_interrupts(fd, &info, (struct test_ctrl *)shm, shm);
	check_bad_args(fd, &info);
	munmap(shm, info.shm_size);
	check_remove_wakes_waiter(fd);
	close(fd);
	check_reprobe(&info);
}

/* Opens the device, says ready, then waits to be killed by the host. */
void scenario_idle(void)
{
	int fd = open_dev(0);
	struct test_ctrl *ctrl;

	CHECK_NAMED(fd >= 0, "idle-open", "errno=%d", errno);
	if (fd < 0)
		return;
	ctrl = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK_NAMED(ctrl != MAP_FAILED, "idle-mmap", "errno=%d", errno);
	if (ctrl == MAP_FAILED)
		return;
	test_store(&ctrl->guest_ready, TEST_READY_MAGIC);
	sleep(120);
}

/* Against mearas-ivshmem-serve -e: a doorbell to the host comes back. */
void scenario_ping(void)
{
	struct mearas_doorbell db = { .peer_id = MEARAS_HOST_PEER_ID, .vector = 1 };
	struct mearas_info info;
	uint64_t c1, count;
	double t0;
	int fd = open_dev(0), ret;

	CHECK_NAMED(fd >= 0, "ping-open", "errno=%d", errno);
	if (fd < 0)
		return;
	ret = xioctl(fd, MEARAS_IOC_INFO, &info);
	CHECK_NAMED(ret == 0 && (info.flags & MEARAS_INFO_DOORBELL) && info.peer_id >= 1,
	      "ping-info", "ret=%d flags=%u peer=%u", ret, info.flags, info.peer_id);
	c1 = vector_count(fd, 1);
	t0 = now_s();
	ret = xioctl(fd, MEARAS_IOC_RING, &db);
	if (!ret)
		ret = wait_vector(fd, 1, c1, LONG_WAIT_MS, &count);
	CHECK_NAMED(ret == 0, "ping-echoed", "ret=%d", ret);
	printf("ping: peer %u, round trip %.3f ms\n", info.peer_id, (now_s() - t0) * 1e3);
	close(fd);
}
