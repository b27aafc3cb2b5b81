// SPDX-License-Identifier: MIT
/*
 * host-backend/core/tenant.c: per-identity caps shared by separate worker
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
#include "core/tenant.h"

#define MiB (1ull << 20)

static struct tenant_id uid(uint32_t u)
{
	struct tenant_id id = { .kind = TENANT_UID, .uid = u };

	return id;
}

static const struct tenant_limits lim = { .max_workers = 8, .max_workers_per_id = 3,
					  .data_per_id = 100 * MiB };
static struct tenant_id a, b, vm;
static unsigned sa[3], sb;
static char err[256];

/* a fresh table per case; uid 1000 (a), uid 1001 (b), VM guest1 (vm) */
static void fresh_table(void)
{
	a = uid(1000);
	b = uid(1001);
	memset(&vm, 0, sizeof(vm));
	vm.kind = TENANT_VM;
	strcpy(vm.vm, "guest1");
	REQUIRE(tenant_table_init(&lim) == 0);
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

/* identities: parse, compare, print */
static void identities(void)
{
	struct tenant_id parsed;

	CHECK_EQ(tenant_id_parse("uid:1000", &parsed), 0);
	CHECK(tenant_id_equal(&parsed, &a) && !tenant_id_equal(&parsed, &b));
	CHECK_EQ(tenant_id_parse("vm:guest1", &parsed), 0);
	CHECK(tenant_id_equal(&parsed, &vm) && !tenant_id_equal(&parsed, &a));
	CHECK(tenant_id_parse("uid:", &parsed) && tenant_id_parse("uid:-1", &parsed) &&
	      tenant_id_parse("pid:1", &parsed) && tenant_id_parse("vm:", &parsed));
	CHECK(!strcmp(tenant_id_str(&vm, err, sizeof(err)), "VM guest1"));
}

/* three workers of uid 1000 (sa[]), one of uid 1001 (sb) */
static void add_workers(void)
{
	for (int i = 0; i < 3; i++)
		REQUIRE((sa[i] = tenant_worker_add(&a, err, sizeof(err))) != 0);
	REQUIRE((sb = tenant_worker_add(&b, err, sizeof(err))) != 0);
}

/* their data areas: 60 + 40 MiB of uid 1000's 100, 100 MiB of uid 1001's */
static void hello_workers(void)
{
	REQUIRE(tenant_worker_hello(sa[0], "", 60 * MiB, err, sizeof(err)) == 0);
	REQUIRE(tenant_worker_hello(sa[1], "", 40 * MiB, err, sizeof(err)) == 0);
	REQUIRE(tenant_worker_hello(sb, "", 100 * MiB, err, sizeof(err)) == 0);
}

/* device memory: vGPU 0 full for uid 1000 (50 + 50 MiB), uid 1000's vGPU 1
 * and uid 1001's vGPU 0 full too */
static void charge_workers(void)
{
	REQUIRE(tenant_charge_dev(sa[0], 0, 50 * MiB, 100 * MiB) == 0);
	REQUIRE(tenant_charge_dev(sa[1], 0, 50 * MiB, 100 * MiB) == 0);
	REQUIRE(tenant_charge_dev(sa[1], 1, 100 * MiB, 100 * MiB) == 0);
	REQUIRE(tenant_charge_dev(sb, 0, 100 * MiB, 100 * MiB) == 0);
}

/* workers: at most 3 of one uid, another uid has its own count */
static void workers_capped_per_identity(void)
{
	for (int i = 0; i < 3; i++)
		CHECK((sa[i] = tenant_worker_add(&a, err, sizeof(err))) != 0);
	CHECK_EQ(tenant_worker_add(&a, err, sizeof(err)), 0);
	CHECK(strstr(err, "uid 1000 has 3 clients connected already"));
	CHECK((sb = tenant_worker_add(&b, err, sizeof(err))) != 0);
}

/* data areas: 100 MiB for all of uid 1000's workers */
static void data_areas_capped_per_identity(void)
{
	add_workers();
	CHECK_EQ(tenant_worker_hello(sa[0], "", 60 * MiB, err, sizeof(err)), 0);
	CHECK_EQ(tenant_worker_hello(sa[1], "", 60 * MiB, err, sizeof(err)), -1);
	CHECK(strstr(err, "holds 60 MiB of data areas already"));
	CHECK_EQ(tenant_worker_hello(sa[1], "", 40 * MiB, err, sizeof(err)), 0);
	CHECK_EQ(tenant_worker_hello(sa[2], "asm1", 8 * MiB, err, sizeof(err)), -1);
	CHECK_EQ(tenant_worker_hello(sb, "", 100 * MiB, err, sizeof(err)), 0); /* uid 1001's own */
}

/* device memory: one quota per vGPU for the uid's workers without an
 * assembly, charged from separate processes */
static void device_memory_per_vgpu_and_identity(void)
{
	add_workers();
	hello_workers();
	CHECK_EQ(charge_in_child(sa[0], 0, 70 * MiB, 100 * MiB), 0);
	CHECK_EQ(charge_in_child(sa[1], 0, 40 * MiB, 100 * MiB), 1);
	CHECK_EQ(charge_in_child(sa[1], 0, 30 * MiB, 100 * MiB), 0);
	CHECK_EQ(charge_in_child(sa[1], 1, 100 * MiB, 100 * MiB), 0); /* vGPU 1: a quota of its own */
	CHECK_EQ(charge_in_child(sb, 0, 100 * MiB, 100 * MiB), 0);    /* uid 1001: its own */
	tenant_uncharge_dev(sa[0], 0, 20 * MiB);
	CHECK_EQ(tenant_charge_dev(sa[1], 0, 20 * MiB, 100 * MiB), 0);
	CHECK_EQ(tenant_charge_dev(sa[1], 0, 1, 100 * MiB), -1);
}

/* a worker that ends gives back its slot, its data area and its memory */
static void gone_worker_gives_back(void)
{
	unsigned s;

	add_workers();
	hello_workers();
	charge_workers();
	tenant_worker_gone(sa[0]);
	CHECK((s = tenant_worker_add(&a, err, sizeof(err))) != 0);
	CHECK_EQ(tenant_worker_hello(s, "", 60 * MiB, err, sizeof(err)), 0);
	CHECK_EQ(tenant_charge_dev(s, 0, 50 * MiB, 100 * MiB), 0);
	CHECK_EQ(tenant_charge_dev(s, 0, 1, 100 * MiB), -1);
	tenant_worker_gone(s);
	tenant_worker_gone(sa[1]);
	tenant_worker_gone(sa[2]);
	/* all of uid 1000's slots are free again */
	for (int i = 0; i < 3; i++)
		CHECK((sa[i] = tenant_worker_add(&a, err, sizeof(err))) != 0);
}

/* all identities together: --max-clients (8 here) */
static void max_clients_across_identities(void)
{
	unsigned held[8], n = 0, got;

	REQUIRE((sb = tenant_worker_add(&b, err, sizeof(err))) != 0);
	while (n < 8 && (got = tenant_worker_add(&b, err, sizeof(err))) != 0)
		held[n++] = got;
	CHECK_EQ(n, 2); /* uid 1001 holds one already: its cap of 3 */
	for (uint32_t u = 2000; n < 7; u++) {
		struct tenant_id other = uid(u);

		REQUIRE((held[n] = tenant_worker_add(&other, err, sizeof(err))) != 0);
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
static void killed_workers_leave_no_lock_nor_charge(void)
{
	unsigned s;

	REQUIRE((sa[0] = tenant_worker_add(&a, err, sizeof(err))) != 0);
	CHECK_EQ(tenant_worker_hello(sa[0], "", 10 * MiB, err, sizeof(err)), 0);
	CHECK_EQ(tenant_charge_dev(sa[0], 0, 10 * MiB, 100 * MiB), 0);
	for (int round = 0; round < 200; round++) {
		pid_t p;
		int st;

		REQUIRE((s = tenant_worker_add(&a, err, sizeof(err))) != 0);
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
}

static const struct check_case cases[] = {
	{ "identities", identities },
	{ "workers_capped_per_identity", workers_capped_per_identity },
	{ "data_areas_capped_per_identity", data_areas_capped_per_identity },
	{ "device_memory_per_vgpu_and_identity", device_memory_per_vgpu_and_identity },
	{ "gone_worker_gives_back", gone_worker_gives_back },
	{ "max_clients_across_identities", max_clients_across_identities },
	{ "killed_workers_leave_no_lock_nor_charge", killed_workers_leave_no_lock_nor_charge },
};
CHECK_MAIN_FIXTURE(cases, fresh_table, NULL)
