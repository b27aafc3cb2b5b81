#define _GNU_SOURCE
#include "qemu_runner.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64

pid_t qemu_start(const struct qemu_opts *o)
{
	static char kernel[512], initrd[512], append[256], serial[512], errlog[512];
	const char *argv[MAX_ARGS];
	const char *qemu = getenv("MEARAS_QEMU") ? getenv("MEARAS_QEMU")
						 : "qemu-system-x86_64";
	struct stat st;
	int n = 0;
	pid_t pid;

	snprintf(kernel, sizeof(kernel), "%s/vmlinux", o->guest_dir);
	if (stat(kernel, &st) != 0)
		snprintf(kernel, sizeof(kernel), "%s/vmlinuz", o->guest_dir);
	snprintf(initrd, sizeof(initrd), "%s/initramfs.cpio.gz", o->guest_dir);
	snprintf(append, sizeof(append), "console=ttyS0 quiet panic=-1 mearas_arg=%s",
		 o->guest_arg);
	snprintf(serial, sizeof(serial), "file:%s", o->serial_log);
	snprintf(errlog, sizeof(errlog), "%s.err", o->serial_log);

	const char *fixed[] = { qemu, "-accel", "tcg", "-m", "256", "-smp", "1",
				"-nodefaults", "-display", "none", "-no-reboot",
				"-net", "none", "-serial", serial, "-kernel", kernel,
				"-initrd", initrd, "-append", append };
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		argv[n++] = fixed[i];
	for (size_t i = 0; o->device_args[i] && n < MAX_ARGS - 1; i++)
		argv[n++] = o->device_args[i];
	argv[n] = NULL;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(qemu, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", qemu, strerror(errno));
		_exit(127);
	}
	return pid;
}

int qemu_wait(pid_t pid, int timeout_ms)
{
	int status;

	for (int t = 0; t < timeout_ms; t += 20) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0)
			return -errno;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -ETIMEDOUT;
}

int check_serial_log(const char *path, const char *scenario)
{
	char line[1024], name[1200];
	int fails = 0, passes = 0, exit_ok = 0, clean = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		CHECK_NAMED(0, "serial-log", "%s: %s", path, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!strncmp(line, "GUEST-PASS ", 11)) {
			/* the guest's checks, one of the host's each */
			passes++;
			snprintf(name, sizeof(name), "%s/guest/%s", scenario, line + 11);
			CHECK_NAMED(true, name, " ");
		} else if (!strncmp(line, "GUEST-FAIL ", 11)) {
			char *why = strstr(line + 11, ": ");

			fails++;
			if (why)
				*why = '\0';
			snprintf(name, sizeof(name), "%s/guest/%s", scenario, line + 11);
			CHECK_NAMED(false, name, "%s", why ? why + 2 : "");
		} else if (!strcmp(line, "MEARAS-EXIT 0")) {
			exit_ok = 1;
		} else if (!strcmp(line, "MEARAS-KERNEL-CLEAN")) {
			clean = 1;
		} else if (strstr(line, "MEARAS-KERNEL-OOPS") ||
			   strstr(line, "MEARAS-INSMOD-FAILED")) {
			printf("  guest: %s\n", line);
		}
	}
	fclose(f);
	fflush(stdout);
	snprintf(name, sizeof(name), "%s/guest-ran-checks", scenario);
	CHECK_NAMED(passes > 0, name, "no GUEST-PASS lines in %s", path);
	snprintf(name, sizeof(name), "%s/guest-exit-0", scenario);
	CHECK_NAMED(exit_ok, name, "guest command did not exit 0 (see %s)", path);
	snprintf(name, sizeof(name), "%s/guest-no-oops", scenario);
	CHECK_NAMED(clean, name, "kernel oops/BUG in guest dmesg or no report (see %s)", path);
	return fails + !passes + !exit_ok + !clean;
}
