#define _GNU_SOURCE
#include "guest_util.h"
#include "check.h" /* tests/check.h, CHECK_PREFIX "GUEST-" (Makefile) */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int open_dev(unsigned int index)
{
	char path[64];

	snprintf(path, sizeof(path), MEARAS_DEV_PREFIX "%u", index);
	return open(path, O_RDWR | O_CLOEXEC);
}

int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

int wait_vector(int fd, unsigned int vector, uint64_t last_seen,
		unsigned int timeout_ms, uint64_t *count)
{
	struct mearas_wait w = { .vector = vector, .timeout_ms = timeout_ms,
				 .last_seen = last_seen };
	int ret = xioctl(fd, MEARAS_IOC_WAIT, &w);

	if (count)
		*count = w.count;
	return ret;
}

uint64_t vector_count(int fd, unsigned int vector)
{
	uint64_t count = 0;

	wait_vector(fd, vector, UINT64_MAX, 0, &count);
	return count;
}

void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

const char *pci_address(unsigned int index, char *buf, size_t len)
{
	char link[PATH_MAX], path[96];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/mearas/mearas%u/device", index);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return NULL;
	link[n] = '\0';
	snprintf(buf, len, "%s", strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
	return buf;
}

int write_sysfs(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	close(fd);
	return n < 0 ? -errno : 0;
}

int wait_node(unsigned int index, int want, unsigned int timeout_ms)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), MEARAS_DEV_PREFIX "%u", index);
	for (unsigned int t = 0;; t += 20) {
		if ((stat(path, &st) == 0) == (want != 0))
			return 0;
		if (t >= timeout_ms)
			return -ETIMEDOUT;
		sleep_ms(20);
	}
}

int touch_in_child(volatile uint8_t *addr)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		addr[0] = 0x5a;
		_exit(addr[0] == 0x5a ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void check_mmap_bounds(int fd, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK_NAMED(p == MAP_FAILED && errno == EINVAL, "mmap-longer-than-bar2-refused",
	      "p=%p errno=%d", p, errno);
	if (p != MAP_FAILED)
		munmap(p, size + page);

	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, size);
	CHECK_NAMED(p == MAP_FAILED && errno == EINVAL, "mmap-offset-at-end-refused",
	      "p=%p errno=%d", p, errno);
	if (p != MAP_FAILED)
		munmap(p, page);

	p = mmap(NULL, 2 * page, PROT_READ, MAP_SHARED, fd, size - page);
	CHECK_NAMED(p == MAP_FAILED && errno == EINVAL, "mmap-straddling-end-refused",
	      "p=%p errno=%d", p, errno);
	if (p != MAP_FAILED)
		munmap(p, 2 * page);

	p = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK_NAMED(p == MAP_FAILED && errno == EINVAL, "mmap-private-refused",
	      "p=%p errno=%d", p, errno);
	if (p != MAP_FAILED)
		munmap(p, page);

	/* A read-only fd maps read-only: MAP_SHARED works, PROT_WRITE is refused. */
	int rofd = open(MEARAS_DEV_PREFIX "0", O_RDONLY | O_CLOEXEC);
	void *ro = mmap(NULL, page, PROT_READ, MAP_SHARED, rofd, 0);
	void *rw = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, rofd, 0);

	CHECK_NAMED(rofd >= 0 && ro != MAP_FAILED && rw == MAP_FAILED && errno == EACCES,
	      "mmap-readonly-fd", "ro=%p rw=%p errno=%d", ro, rw, errno);
	if (ro != MAP_FAILED)
		munmap(ro, page);
	if (rw != MAP_FAILED)
		munmap(rw, page);
	if (rofd >= 0)
		close(rofd);

	/* The last page alone is fine and aliases the same memory. */
	uint8_t *whole = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	uint8_t *last = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			     size - page);
	int ok = whole != MAP_FAILED && last != MAP_FAILED;

	if (ok) {
		whole[size - page + 5] = 0xa5;
		ok = last[5] == 0xa5;
		last[6] = 0x3c;
		ok = ok && whole[size - page + 6] == 0x3c;
	}
	CHECK_NAMED(ok, "mmap-last-page-aliases-bar2", "whole=%p last=%p", (void *)whole,
	      (void *)last);
	if (whole != MAP_FAILED)
		munmap(whole, size);
	if (last != MAP_FAILED)
		munmap(last, page);
}

void check_bad_args(int fd, const struct mearas_info *info)
{
	struct mearas_doorbell db;
	uint64_t mask;
	int ret, fl;

	ret = xioctl(fd, MEARAS_IOC_INFO, NULL);
	CHECK_NAMED(ret == -EFAULT, "ioctl-info-null-efault", "ret=%d", ret);
	ret = xioctl(fd, _IO(MEARAS_IOC_MAGIC, 99), NULL);
	CHECK_NAMED(ret == -ENOTTY, "ioctl-unknown-enotty", "ret=%d", ret);
	ret = xioctl(fd, MEARAS_IOC_WAIT, (void *)16);
	CHECK_NAMED(ret == -EFAULT, "ioctl-wait-badptr-efault", "ret=%d", ret);

	db = (struct mearas_doorbell){ .peer_id = MEARAS_MAX_PEER_ID + 1 };
	ret = xioctl(fd, MEARAS_IOC_RING, &db);
	CHECK_NAMED(ret == -EINVAL, "ring-bad-peer-einval", "ret=%d", ret);
	db = (struct mearas_doorbell){ .vector = MEARAS_MAX_VECTORS };
	ret = xioctl(fd, MEARAS_IOC_RING, &db);
	CHECK_NAMED(ret == -EINVAL, "ring-bad-vector-einval", "ret=%d", ret);

	ret = wait_vector(fd, info->nr_vectors, 0, 0, NULL);
	if (info->flags & MEARAS_INFO_DOORBELL)
		CHECK_NAMED(ret == -EINVAL, "wait-bad-vector-einval", "ret=%d", ret);
	else
		CHECK_NAMED(ret == -EOPNOTSUPP, "wait-without-msix-eopnotsupp", "ret=%d", ret);

	ret = (int)read(fd, &mask, 4);
	CHECK_NAMED(ret < 0 && errno == EINVAL, "read-short-buffer-einval", "ret=%d errno=%d",
	      ret, errno);
	fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	ret = (int)read(fd, &mask, sizeof(mask));
	CHECK_NAMED(ret < 0 && errno == EAGAIN, "read-nonblock-nothing-eagain",
	      "ret=%d errno=%d", ret, errno);
	fcntl(fd, F_SETFL, fl);

	check_mmap_bounds(fd, info->shm_size);
}
