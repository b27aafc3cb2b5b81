/* SPDX-License-Identifier: MIT */
/* Shared memory that mearasd makes and hands to a less trusted process (a
 * client's region, a VM's BAR): a memfd sealed at its size. The other side
 * maps and writes it, but can neither shrink it (the pages would go from
 * under mearasd, whose next access is a SIGBUS) nor grow it. */
#ifndef MEARAS_CORE_MEMFD_H
#define MEARAS_CORE_MEMFD_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* the memfd, or -1 with errno */
static inline int mearas_sealed_memfd(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), e;

	if (fd < 0)
		return -1;
	if (!ftruncate(fd, (off_t)size) && !fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		return fd;
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

#endif
