// SPDX-License-Identifier: MIT
/* host-backend/remote/config.c: remote_spin_us is asked on every turn of the
 * serving node's session thread (once per round trip of a synchronous call),
 * so it must not cost system calls: the node's cores are counted once. The
 * test counts this process's read system calls (/proc/self/io, syscr) over
 * many calls; no timing. */
#include <stdio.h>
#include <string.h>

#include "remote/config.h"

static long long read_syscalls(void)
{
	char line[128];
	long long n = -1;
	FILE *f = fopen("/proc/self/io", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "syscr: %lld", &n) == 1)
			break;
	fclose(f);
	return n;
}

int main(void)
{
	struct remote_config rc = { .spin = REMOTE_SPIN_AUTO };
	unsigned first = remote_spin_us(&rc, 100), again = 0;
	long long before, after;

	before = read_syscalls();
	for (int i = 0; i < 1000; i++)
		again |= remote_spin_us(&rc, 100) != first;
	after = read_syscalls();
	if (before < 0 || after < 0) {
		printf("SKIP spin_test: no /proc/self/io\n");
		return 0;
	}
	/* reading /proc/self/io itself costs a few reads */
	if (after - before > 16 || again) {
		printf("FAIL remote_spin_us: %lld read system calls over 1000 calls%s\n", after - before,
		       again ? ", and its answer changed" : "");
		return 1;
	}
	printf("PASS remote_spin_us: %lld read system calls over 1000 calls\n", after - before);
	return 0;
}
