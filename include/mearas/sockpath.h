/* SPDX-License-Identifier: MIT */
/*
 * Removing a socket path that mearasd (root) listens on: only a socket is
 * removed. A path that names anything else (a regular file, a device such
 * as /dev/null, a directory) is left alone, so a wrong --socket, --control
 * or --vm path cannot make the daemon delete a file. And whether a peer on
 * such a socket is in its group.
 */
#ifndef MEARAS_SOCKPATH_H
#define MEARAS_SOCKPATH_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Whether the peer on unix socket fd, whose primary group is primary
 * (SO_PEERCRED), is in group: by its primary group or one of its
 * supplementary groups as the kernel recorded them at connect
 * (SO_PEERGROUPS). 1 or 0; -1 when its groups cannot be read. */
static inline int mearas_peer_in_group(int fd, gid_t primary, gid_t group)
{
	gid_t groups[256], *g = groups;
	socklen_t len = sizeof(groups);
	int in = 0;

	if (primary == group)
		return 1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
		if (errno != ERANGE || !(g = malloc(len)) || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
			if (g != groups)
				free(g);
			return -1;
		}
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		in |= g[i] == group;
	if (g != groups)
		free(g);
	return in;
}

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

/*
 * 1 when a live server accepts connections on the unix socket at path (its
 * pid in *pid where the kernel says, else 0), 0 when none does: no socket
 * there, or a stale one that refuses connections (its server is gone). A
 * server whose backlog is full counts as live. Never blocks.
 */
static inline int mearas_socket_live(const char *path, pid_t *pid)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int fd, live;

	*pid = 0;
	if (strlen(path) >= sizeof(a.sun_path))
		return 0;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return 0;
	live = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EAGAIN;
	if (live && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && len == sizeof(cr))
		*pid = cr.pid;
	close(fd);
	return live;
}

#endif
