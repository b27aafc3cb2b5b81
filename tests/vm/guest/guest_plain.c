/* ivshmem-plain scenario: two devices, patterns, module and device lifecycle. */
#define _GNU_SOURCE
#include "guest_scenarios.h"
#include "check.h" /* tests/check.h, CHECK_PREFIX "GUEST-" (Makefile) */
#include "guest_util.h"
#include "../test_shm_layout.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <unistd.h>

static void check_plain_device(unsigned int index, uint64_t want_size)
{
	struct mearas_info info;
	char name[64];
	int fd, ret;
	uint8_t *shm;
	size_t bad = 0;

	fd = open_dev(index);
	snprintf(name, sizeof(name), "dev%u-open", index);
	CHECK_NAMED(fd >= 0, name, "errno=%d", errno);
	if (fd < 0)
		return;
	ret = xioctl(fd, MEARAS_IOC_INFO, &info);
	snprintf(name, sizeof(name), "dev%u-info-plain", index);
	CHECK_NAMED(ret == 0 && info.shm_size == want_size && info.nr_vectors == 0 &&
	      info.flags == 0 && info.peer_id == 0 && info.reserved == 0, name,
	      "ret=%d size=%llu vectors=%u flags=%u peer=%u", ret,
	      (unsigned long long)info.shm_size, info.nr_vectors, info.flags,
	      info.peer_id);

	struct mearas_doorbell db = { .peer_id = 0, .vector = 0 };
	ret = xioctl(fd, MEARAS_IOC_RING, &db);
	snprintf(name, sizeof(name), "dev%u-ring-plain-eopnotsupp", index);
	CHECK_NAMED(ret == -EOPNOTSUPP, name, "ret=%d", ret);

	shm = mmap(NULL, want_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	snprintf(name, sizeof(name), "dev%u-mmap", index);
	CHECK_NAMED(shm != MAP_FAILED, name, "errno=%d", errno);
	if (shm != MAP_FAILED) {
		for (size_t i = 0; i < TEST_PATTERN_LEN; i++)
			bad += shm[TEST_HOST_PATTERN_OFF + i] != test_host_byte(i, index);
		snprintf(name, sizeof(name), "dev%u-host-pattern-seen", index);
		CHECK_NAMED(bad == 0, name, "%zu bytes differ", bad);
		for (size_t i = 0; i < TEST_PATTERN_LEN; i++)
			shm[TEST_PATTERN_OFF + i] = test_guest_byte(i, index);
		munmap(shm, want_size);
	}
	if (index == 0)
		check_bad_args(fd, &info);
	close(fd);
}

static void check_module_lifecycle(void)
{
	int fd = open_dev(0);
	uint8_t *shm = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	struct mearas_info info;
	int ret;

	ret = system("rmmod mearas 2>/dev/null");
	CHECK_NAMED(ret != 0 && access("/dev/mearas0", F_OK) == 0,
	      "rmmod-refused-while-open", "rmmod status %d", ret);
	close(fd);
	ret = system("rmmod mearas 2>/dev/null");
	CHECK_NAMED(ret != 0, "rmmod-refused-while-mapped", "rmmod status %d", ret);
	if (shm != MAP_FAILED)
		munmap(shm, 4096);
	ret = system("rmmod mearas");
	CHECK_NAMED(ret == 0 && wait_node(0, 0, 2000) == 0, "rmmod-after-close",
	      "rmmod status %d", ret);
	ret = system("insmod /lib/mearas/mearas.ko");
	CHECK_NAMED(ret == 0 && wait_node(0, 1, 2000) == 0 && wait_node(1, 1, 2000) == 0,
	      "insmod-again", "insmod status %d", ret);

	fd = open_dev(0);
	shm = mmap(NULL, TEST_PLAIN_SIZE0, PROT_READ, MAP_SHARED, fd, 0);
	CHECK_NAMED(fd >= 0 && shm != MAP_FAILED &&
	      shm[TEST_PATTERN_OFF + 1] == test_guest_byte(1, 0),
	      "reload-keeps-shared-memory", "fd=%d", fd);
	if (shm != MAP_FAILED)
		munmap(shm, TEST_PLAIN_SIZE0);
	ret = xioctl(fd, MEARAS_IOC_INFO, &info);
	CHECK_NAMED(ret == 0 && info.shm_size == TEST_PLAIN_SIZE0, "reload-info", "ret=%d", ret);
	close(fd);
}

/* Removes /dev/mearas0's PCI device while it is open, mapped and polled. */
static void check_device_removal(void)
{
	char bdf[64], path[160];
	struct mearas_info info;
	struct pollfd pfd;
	uint64_t mask;
	int fd = open_dev(0), ret;
	volatile uint8_t *shm = mmap(NULL, TEST_PLAIN_SIZE0, PROT_READ | PROT_WRITE,
				     MAP_SHARED, fd, 0);

	if (!pci_address(0, bdf, sizeof(bdf)) || shm == MAP_FAILED) {
		CHECK_NAMED(0, "remove-setup", "no pci address or mmap failed");
		return;
	}
	/* Populate our page tables so that removal has something to zap. */
	shm[0] = 0x11;
	CHECK_NAMED(touch_in_child(shm) == 0 && shm[0] == 0x5a,
	      "mapping-usable-before-remove", "child write not seen");
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/remove", bdf);
	ret = write_sysfs(path, "1");
	CHECK_NAMED(ret == 0 && wait_node(0, 0, 2000) == 0, "pci-remove-while-open",
	      "ret=%d", ret);

	ret = xioctl(fd, MEARAS_IOC_INFO, &info);
	CHECK_NAMED(ret == -ENODEV, "removed-info-enodev", "ret=%d", ret);
	ret = (int)read(fd, &mask, sizeof(mask));
	CHECK_NAMED(ret < 0 && errno == ENODEV, "removed-read-enodev", "ret=%d errno=%d",
	      ret, errno);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	ret = poll(&pfd, 1, 1000);
	CHECK_NAMED(ret == 1 && (pfd.revents & (POLLERR | POLLHUP)), "removed-poll-hup",
	      "ret=%d revents=%#x", ret, pfd.revents);
	void *again = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHECK_NAMED(again == MAP_FAILED && errno == ENODEV, "removed-mmap-enodev",
	      "errno=%d", errno);
	ret = touch_in_child(shm);
	CHECK_NAMED(ret == SIGBUS, "removed-mapping-sigbus", "child signal %d", ret);
	munmap((void *)shm, TEST_PLAIN_SIZE0);
	close(fd);

	ret = write_sysfs("/sys/bus/pci/rescan", "1");
	CHECK_NAMED(ret == 0 && wait_node(0, 1, 3000) == 0, "pci-rescan-reprobes",
	      "ret=%d", ret);
	fd = open_dev(0);
	ret = fd < 0 ? -errno : xioctl(fd, MEARAS_IOC_INFO, &info);
	CHECK_NAMED(ret == 0 && info.shm_size == TEST_PLAIN_SIZE0, "rescanned-info",
	      "ret=%d", ret);
	if (fd >= 0)
		close(fd);

	ret = system("rmmod mearas && insmod /lib/mearas/mearas.ko");
	CHECK_NAMED(ret == 0 && wait_node(0, 1, 2000) == 0, "final-unload-reload",
	      "status %d", ret);
}

/* x86 PAT must have BAR2 of /dev/mearasN reserved write-back (not UC). */
static void check_bar2_write_back(unsigned int index)
{
	unsigned long long start = 0, end = 0, flags = 0;
	char bdf[64], path[160], line[256], want[40], name[64];
	int found = 0;
	FILE *f;

	snprintf(name, sizeof(name), "dev%u-bar2-pat-write-back", index);
	if (!pci_address(index, bdf, sizeof(bdf))) {
		CHECK_NAMED(0, name, "no pci address");
		return;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bdf);
	f = fopen(path, "r");
	for (int i = 0; f && i < 3 && fgets(line, sizeof(line), f); i++)
		sscanf(line, "%llx %llx %llx", &start, &end, &flags);
	if (f)
		fclose(f);
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	f = fopen("/sys/kernel/debug/x86/pat_memtype_list", "r");
	snprintf(want, sizeof(want), "0x%016llx-", start);
	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, want)) {
			found = 1;
			break;
		}
	}
	if (f)
		fclose(f);
	CHECK_NAMED(found && strstr(line, "write-back"), name, "BAR2 %#llx: %s", start,
	      found ? line : "no PAT entry");
}

void scenario_plain(void)
{
	check_bar2_write_back(0);
	check_plain_device(0, TEST_PLAIN_SIZE0);
	check_plain_device(1, TEST_PLAIN_SIZE1);
	check_module_lifecycle();
	check_device_removal();
}
