// SPDX-License-Identifier: MIT
/*
 * host-backend/tenant.c: per-identity caps shared by separate worker
 * processes (workers per uid, data areas per uid, device memory per
 * identity and pool), slots given back when a worker ends, and a worker
 * killed while it holds the table's lock leaves neither a dead lock nor
 * wrong totals.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tenant.h"

#define MiB (1ull << 20)

static struct tenant_id uid(uint32_t u)
{
	struct tenant_id id = { .kind = TENANT_UID, .uid = u };

	return id;
}

/* charge in a child process (a worker is one), as a worker does */
static int charge_in_child(unsigned slot, unsigned v, uint64_t bytes, uint64_t quota)
{
	int st;
	pid_t p = fork();

	if (p == 0)
		_exit(tenant_charge_dev(slot, v, bytes, quota) ? 1 : 0);
	CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st));
	return WEXITSTATUS(st);
}

int main(void)
{
	struct tenant_limits lim = { .max_workers = 8, .max_workers_per_id = 3, .data_per_id = 100 * MiB };
	struct tenant_id a = uid(1000), b = uid(1001), vm = { .kind = TENANT_VM }, parsed;
	unsigned sa[3], sb, s;
	char err[256];

	/* identities: parse, compare, print */
	strcpy(vm.vm, "guest1");
	CHECK_EQ(tenant_id_parse("uid:1000", &parsed), 0);
	CHECK(tenant_id_equal(&parsed, &a) && !tenant_id_equal(&parsed, &b));
	CHECK_EQ(tenant_id_parse("vm:guest1", &parsed), 0);
	CHECK(tenant_id_equal(&parsed, &vm) && !tenant_id_equal(&parsed, &a));
	CHECK(tenant_id_parse("uid:", &parsed) && tenant_id_parse("uid:-1", &parsed) &&
	      tenant_id_parse("pid:1", &parsed) && tenant_id_parse("vm:", &parsed));
	CHECK(!strcmp(tenant_id_str(&vm, err, sizeof(err)), "VM guest1"));

	CHECK_EQ(tenant_table_init(&lim), 0);
	/* workers: at most 3 of one uid, another uid has its own count */
	for (int i = 0; i < 3; i++)
		CHECK((sa[i] = tenant_worker_add(&a, err, sizeof(err))) != 0);
	CHECK_EQ(tenant_worker_add(&a, err, sizeof(err)), 0);
	CHECK(strstr(err, "uid 1000 has 3 clients connected already"));
	CHECK((sb = tenant_worker_add(&b, err, sizeof(err))) != 0);

	/* data areas: 100 MiB for all of uid 1000's workers */
	CHECK_EQ(tenant_worker_hello(sa[0], "", 60 * MiB, err, sizeof(err)), 0);
	CHECK_EQ(tenant_worker_hello(sa[1], "", 60 * MiB, err, sizeof(err)), -1);
	CHECK(strstr(err, "holds 60 MiB of data areas already"));
	CHECK_EQ(tenant_worker_hello(sa[1], "", 40 * MiB, err, sizeof(err)), 0);
	CHECK_EQ(tenant_worker_hello(sa[2], "asm1", 8 * MiB, err, sizeof(err)), -1);
	CHECK_EQ(tenant_worker_hello(sb, "", 100 * MiB, err, sizeof(err)), 0); /* uid 1001's own */

	/* device memory: one quota per vGPU for the uid's workers without an
	 * assembly, charged from separate processes */
	CHECK_EQ(charge_in_child(sa[0], 0, 70 * MiB, 100 * MiB), 0);
	CHECK_EQ(charge_in_child(sa[1], 0, 40 * MiB, 100 * MiB), 1);
	CHECK_EQ(charge_in_child(sa[1], 0, 30 * MiB, 100 * MiB), 0);
	CHECK_EQ(charge_in_child(sa[1], 1, 100 * MiB, 100 * MiB), 0); /* vGPU 1: a quota of its own */
	CHECK_EQ(charge_in_child(sb, 0, 100 * MiB, 100 * MiB), 0);    /* uid 1001: its own */
	tenant_uncharge_dev(sa[0], 0, 20 * MiB);
	CHECK_EQ(tenant_charge_dev(sa[1], 0, 20 * MiB, 100 * MiB), 0);
	CHECK_EQ(tenant_charge_dev(sa[1], 0, 1, 100 * MiB), -1);

	/* a worker that ends gives back its slot, its data area and its memory */
	tenant_worker_gone(sa[0]);
	CHECK((s = tenant_worker_add(&a, err, sizeof(err))) != 0);
	CHECK_EQ(tenant_worker_hello(s, "", 60 * MiB, err, sizeof(err)), 0);
	CHECK_EQ(tenant_charge_dev(s, 0, 50 * MiB, 100 * MiB), 0);
	CHECK_EQ(tenant_charge_dev(s, 0, 1, 100 * MiB), -1);
	tenant_worker_gone(s);
	tenant_worker_gone(sa[1]);
	tenant_worker_gone(sa[2]);

	/* all identities together: --max-clients (8 here) */
	{
		unsigned held[8], n = 0, got;

		while (n < 8 && (got = tenant_worker_add(&b, err, sizeof(err))) != 0)
			held[n++] = got;
		CHECK_EQ(n, 2); /* uid 1001 holds one already: its cap of 3 */
		for (uint32_t u = 2000; n < 7; u++) {
			struct tenant_id other = uid(u);

			CHECK((held[n] = tenant_worker_add(&other, err, sizeof(err))) != 0);
			n++;
		}
		CHECK_EQ(tenant_worker_add(&vm, err, sizeof(err)), 0);
		CHECK(strstr(err, "mearasd serves 8 clients already"));
		tenant_worker_gone(held[6]);
		CHECK((held[6] = tenant_worker_add(&vm, err, sizeof(err))) != 0);
		for (unsigned i = 0; i < n; i++)
			tenant_worker_gone(held[i]);
		tenant_worker_gone(sb);
	}

	/* workers killed at any point, also while holding the lock: the table's
	 * totals stay those of the live slots (one of uid 1000 stays live
	 * throughout), and it never stays locked */
	CHECK((sa[0] = tenant_worker_add(&a, err, sizeof(err))) != 0);
	CHECK_EQ(tenant_worker_hello(sa[0], "", 10 * MiB, err, sizeof(err)), 0);
	CHECK_EQ(tenant_charge_dev(sa[0], 0, 10 * MiB, 100 * MiB), 0);
	for (int round = 0; round < 200; round++) {
		pid_t p;
		int st;

		CHECK((s = tenant_worker_add(&a, err, sizeof(err))) != 0);
		CHECK_EQ(tenant_worker_hello(s, "", 10 * MiB, err, sizeof(err)), 0);
		p = fork();
		if (p == 0) {
			for (;;) {
				if (!tenant_charge_dev(s, 0, 30 * MiB, 100 * MiB))
					tenant_uncharge_dev(s, 0, 30 * MiB);
			}
		}
		usleep((useconds_t)(round % 50) * 20);
		kill(p, SIGKILL);
		CHECK(waitpid(p, &st, 0) == p);
		tenant_worker_gone(s);
	}
	/* nothing of them is left, and the live worker still counts: 2 more
	 * workers, 90 MiB of data and 90 MiB of device memory */
	CHECK((sa[1] = tenant_worker_add(&a, err, sizeof(err))) != 0);
	CHECK((s = tenant_worker_add(&a, err, sizeof(err))) != 0);
	CHECK_EQ(tenant_worker_add(&a, err, sizeof(err)), 0);
	CHECK_EQ(tenant_worker_hello(s, "", 91 * MiB, err, sizeof(err)), -1);
	CHECK_EQ(tenant_worker_hello(s, "", 90 * MiB, err, sizeof(err)), 0);
	CHECK_EQ(tenant_charge_dev(s, 0, 91 * MiB, 100 * MiB), -1);
	CHECK_EQ(tenant_charge_dev(s, 0, 90 * MiB, 100 * MiB), 0);
	printf("test_tenant: ok\n");
	return 0;
}
