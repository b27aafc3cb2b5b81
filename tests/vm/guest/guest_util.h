/* Helpers shared by the guest test scenarios. */
#ifndef MEARAS_GUEST_UTIL_H
#define MEARAS_GUEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <mearas/kmod_uapi.h>

int open_dev(unsigned int index);
/* ioctl returning -errno on failure, 0 on success. */
int xioctl(int fd, unsigned long cmd, void *arg);
/* Current interrupt counter of vector (via MEARAS_IOC_WAIT, timeout 0). */
uint64_t vector_count(int fd, unsigned int vector);
int wait_vector(int fd, unsigned int vector, uint64_t last_seen,
		unsigned int timeout_ms, uint64_t *count);
void sleep_ms(unsigned int ms);
/* Bus address (0000:00:04.0) of /dev/mearasN's PCI device, or NULL. */
const char *pci_address(unsigned int index, char *buf, size_t len);
int write_sysfs(const char *path, const char *value);
/* Waits up to timeout_ms for /dev/mearasN to exist (want=1) or vanish (0). */
int wait_node(unsigned int index, int want, unsigned int timeout_ms);
/* Child touches addr; returns the signal that killed it (0 if none). */
int touch_in_child(volatile uint8_t *addr);

/* Checks of bad arguments and mmap bounds, common to all scenarios. */
void check_bad_args(int fd, const struct mearas_info *info);

#endif
