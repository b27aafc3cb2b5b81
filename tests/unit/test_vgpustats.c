// SPDX-License-Identifier: MIT
/*
 * host-backend/control/vgpustats.c for a VM's slot workers, which are not
 * mearasd's children: a slot worker counts into the shared table; once it
 * has exited its VM worker marks the slot ended (before reaping it), or the
 * process is simply gone, and mearasd's main process folds the slot into
 * the totals, so a series' counters do not go back when the guest process
 * ends; folding by tenant slot (process clients) leaves these slots alone.
 * Here the test is both the VM worker (it forks the "slot workers") and
 * mearasd's main process (it folds and reads).
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "control/vgpustats.h"

/* a slot worker's side: claims, counts h2d bytes and copy calls on vGPU 0,
 * d2h bytes on vGPU 1, then waits for a byte on hold (-1: none) and exits */
static pid_t slot_worker(const char *owner, uint64_t h2d, uint64_t d2h, int hold)
{
	pid_t p = fork();

	if (p == 0) {
		char c;

		vstats_claim("asm", owner, VSTAT_NO_OWNER_SLOT, 2);
		if (!vstats_vgpu(0))
			_exit(1);
		vstat_add(&vstats_vgpu(0)->bytes_h2d, h2d);
		vstat_add(&vstats_vgpu(0)->calls[MEARAS_OPCLASS_COPY], 1);
		vstat_add(&vstats_vgpu(1)->bytes_d2h, d2h);
		if (hold >= 0 && read(hold, &c, 1) < 0)
			_exit(1);
		vstats_release();
		_exit(0);
	}
	return p;
}

/* the series of owner's vGPU v in a snapshot (a copy; live = UINT32_MAX when none) */
static struct vstat_series series_of(const char *owner, unsigned v)
{
	struct vstat_series *list, out = { .live = UINT32_MAX };
	int n = vstats_snapshot(&list);

	for (int i = 0; i < n; i++)
		if (!strcmp(list[i].owner, owner) && list[i].vgpu == v)
			out = list[i];
	free(list);
	return out;
}

/* slots in the table held by owner */
static unsigned slots_of(const char *owner)
{
	struct vstat_slot *t = vstats_table();
	unsigned n = 0;

	for (unsigned i = 0; i < VSTAT_SLOTS; i++)
		if (__atomic_load_n(&t[i].pid, __ATOMIC_ACQUIRE) > 0 && !strcmp(t[i].owner, owner))
			n++;
	return n;
}

/* the VM worker's part: the child has exited; mark its slot, then reap it */
static void ended_and_reaped(pid_t p)
{
	siginfo_t si;
	int st;

	REQUIRE(waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT) == 0);
	vstats_child_ended(p);
	REQUIRE(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* two guest processes one after the other: their counts add up, and stay
 * once each has ended and was folded */
static void ended_slot_workers_fold_into_totals(void)
{
	struct vstat_series s0, s1;
	siginfo_t si;
	pid_t p;

	p = slot_worker("vm:one", 1000, 500, -1);
	REQUIRE(p > 0);
	/* exited, not yet marked (a zombie): still a live client, its counts shown */
	REQUIRE(waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT) == 0);
	CHECK_EQ(vstats_fold_ended(), 1);
	s0 = series_of("vm:one", 0);
	CHECK_EQ(s0.live, 1);
	CHECK_EQ(s0.sum.bytes_h2d, 1000);
	/* marked: folded while the zombie still holds its pid */
	vstats_child_ended(p);
	CHECK_EQ(vstats_fold_ended(), 0);
	CHECK_EQ(slots_of("vm:one"), 0);
	CHECK_EQ(series_of("vm:one", 0).live, 0);
	REQUIRE(waitpid(p, NULL, 0) == p);
	p = slot_worker("vm:one", 24, 6, -1);
	REQUIRE(p > 0);
	ended_and_reaped(p);
	s0 = series_of("vm:one", 0);
	s1 = series_of("vm:one", 1);
	CHECK_EQ(s0.live, 0);
	CHECK_EQ(s0.sum.bytes_h2d, 1024);
	CHECK_EQ(s0.sum.calls[MEARAS_OPCLASS_COPY], 2);
	CHECK_EQ(s1.sum.bytes_d2h, 506);
	CHECK_STR_EQ(s0.assembly, "asm");
	CHECK_EQ(slots_of("vm:one"), 0);
}

/* a slot worker gone without a mark (its VM worker died first, or reaped it
 * without saying) is folded once its process no longer exists */
static void gone_slot_worker_folds_without_mark(void)
{
	struct vstat_series s;
	pid_t p = slot_worker("vm:two", 77, 0, -1);

	REQUIRE(p > 0);
	REQUIRE(waitpid(p, NULL, 0) == p);
	CHECK_EQ(vstats_fold_ended(), 0);
	s = series_of("vm:two", 0);
	CHECK_EQ(s.live, 0);
	CHECK_EQ(s.sum.bytes_h2d, 77);
	CHECK_EQ(slots_of("vm:two"), 0);
}

/* a process client's worker ending (folded by its tenant slot) leaves a live
 * slot worker's slot where it is */
static void tenant_fold_leaves_live_slot_workers(void)
{
	struct vstat_series s;
	int hold[2];
	pid_t p;

	REQUIRE(pipe(hold) == 0);
	p = slot_worker("vm:three", 5, 5, hold[0]);
	REQUIRE(p > 0);
	/* wait for its counts: it is then claimed and counting */
	for (int i = 0; i < 2000 && series_of("vm:three", 0).sum.bytes_h2d != 5; i++)
		usleep(1000);
	vstats_worker_gone(0);
	vstats_worker_gone(VSTAT_NO_OWNER_SLOT);
	CHECK_EQ(vstats_fold_ended(), 1);
	s = series_of("vm:three", 0);
	CHECK_EQ(s.live, 1);
	CHECK_EQ(s.sum.bytes_h2d, 5);
	CHECK_EQ(slots_of("vm:three"), 1);
	REQUIRE(write(hold[1], "x", 1) == 1);
	ended_and_reaped(p);
	CHECK_EQ(vstats_fold_ended(), 0);
	CHECK_EQ(series_of("vm:three", 0).sum.bytes_h2d, 5);
	close(hold[0]);
	close(hold[1]);
}

static void setup(void)
{
	REQUIRE(vstats_init() == 0);
}

static const struct check_case cases[] = {
	{ "ended_slot_workers_fold_into_totals", ended_slot_workers_fold_into_totals },
	{ "gone_slot_worker_folds_without_mark", gone_slot_worker_folds_without_mark },
	{ "tenant_fold_leaves_live_slot_workers", tenant_fold_leaves_live_slot_workers },
};
CHECK_MAIN_FIXTURE(cases, setup, NULL)
