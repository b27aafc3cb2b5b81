/* SPDX-License-Identifier: MIT */
/*
 * Removing a socket path that mearasd (root) listens on: only a socket is
 * removed. A path that names anything else (a regular file, a device such
 * as /dev/null, a directory) is left alone, so a wrong --socket, --control
 * or --vm path cannot make the daemon delete a file.
 */
#ifndef MEARAS_SOCKPATH_H
#define MEARAS_SOCKPATH_H

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0: removed or not there; -1 with errno (EEXIST: not a socket, kept) */
static inline int mearas_unlink_socket(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		errno = EEXIST;
		return -1;
	}
	return unlink(path);
}

#endif
