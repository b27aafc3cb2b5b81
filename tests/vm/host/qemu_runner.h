/* Starts a TCG QEMU guest built by vm-configs/build-guest.sh. */
#ifndef MEARAS_QEMU_RUNNER_H
#define MEARAS_QEMU_RUNNER_H

#include <sys/types.h>

struct qemu_opts {
	const char *guest_dir;	/* vmlinux or vmlinuz + initramfs.cpio.gz */
	const char *serial_log;	/* guest console goes here */
	const char *guest_arg;	/* becomes $mearas_arg in the guest */
	const char *const *device_args; /* extra QEMU arguments, NULL-terminated */
};

/* Returns the QEMU pid or -errno. QEMU's stderr goes to serial_log.err. */
pid_t qemu_start(const struct qemu_opts *opts);

/*
 * Waits up to timeout_ms for pid to exit; kills it (SIGKILL) on timeout.
 * Returns its exit status as from waitpid, or -ETIMEDOUT.
 */
int qemu_wait(pid_t pid, int timeout_ms);

/*
 * Echoes GUEST-PASS/GUEST-FAIL lines of the serial log as the host's own
 * named checks (tests/check.h) and checks that the guest command exited 0
 * and dmesg had no oops. Returns failures found.
 */
int check_serial_log(const char *path, const char *scenario);

#endif
