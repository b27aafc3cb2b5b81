// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mearas/log.h"
#include "output.h"
#include "worker.h"

/* Device printf/assert output is written by the driver to this process's
 * stdout/stderr: make those pipes whose read ends go to the client, which
 * writes the bytes to its own stdout/stderr at the synchronizing call. Our
 * own log keeps the daemon's stderr. */
int output_capture_pipes(int *out_fd, int *err_fd, char *err, size_t errlen)
{
	int out[2], errp[2];

	if (pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	/* the driver's printf buffer holds 1 MiB: let a flush fit in the pipe */
	fcntl(out[1], F_SETPIPE_SZ, 1 << 20);
	fcntl(errp[1], F_SETPIPE_SZ, 1 << 20);
	mearas_log_set_fd(fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3));
	fflush(stdout);
	if (dup2(out[1], STDOUT_FILENO) < 0 || dup2(errp[1], STDERR_FILENO) < 0) {
		snprintf(err, errlen, "dup2: %s", strerror(errno));
		return -1;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	close(out[1]);
	close(errp[1]);
	*out_fd = out[0];
	*err_fd = errp[0];
	return 0;
}

int worker_capture_output(struct worker *w, char *err, size_t errlen)
{
	return output_capture_pipes(&w->out_fd, &w->err_fd, err, errlen);
}

bool worker_output_pending(struct worker *w)
{
	/* one system call for both pipes: this runs at every synchronization */
	struct pollfd p[2] = { { .fd = w->out_fd, .events = POLLIN }, { .fd = w->err_fd, .events = POLLIN } };

	return poll(p, 2, 0) > 0 && ((p[0].revents & POLLIN) || (p[1].revents & POLLIN));
}

