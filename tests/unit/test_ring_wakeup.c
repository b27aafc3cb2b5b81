// SPDX-License-Identifier: MIT
/*
 * The need-wakeup protocol under a race: the consumer sleeps on an eventfd
 * after mearas_ring_prepare_sleep(), the producer notifies only when
 * mearas_ring_needs_wakeup() says so. Both take random pauses so every
 * interleaving of "publish tail" and "announce sleep" happens. Now and then
 * the producer waits for the consumer to catch up, as a client waiting for a
 * completion does: a lost wakeup then shows as no progress for WAIT_MS, and
 * the test fails (as it does when the consumer sleeps WAIT_MS with records
 * waiting; a watchdog fails it if anything else hangs).
 *
 * usage: test_ring_wakeup [--records=N] [--drop-wakeups]
 * --drop-wakeups makes the producer skip some notifications on purpose: the
 * test must then fail (checks that the detector works).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "ring_util.h"

#define WAIT_MS 2000

static struct test_ring ring;
static int efd;
static uint64_t total;
static int drop_wakeups;
static uint64_t wakeups_sent, sleeps;
static int stop; /* a lost wakeup was seen: both sides end the run */

static bool stopped(void)
{
	return __atomic_load_n(&stop, __ATOMIC_ACQUIRE);
}

static void stop_run(void)
{
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
}

static uint32_t rnd(uint64_t *s)
{
	return (uint32_t)check_xorshift(s);
}

static void random_pause(uint64_t *s)
{
	uint32_t r = rnd(s) % 1024;

	if (r < 2) {
		struct timespec ts = { 0, (long)(rnd(s) % 50000) };

		nanosleep(&ts, NULL);
	} else if (r < 20) {
		sched_yield();
	} else if (r < 100) {
		for (uint32_t i = rnd(s) % 200; i; i--)
			mearas_cpu_relax();
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait for the consumer to take everything; false after WAIT_MS. */
static bool wait_drained(void)
{
	uint64_t start = now_ms();

	while (mearas_load_acquire(&ring.ctl.head) != ring.prod.tail) {
		if (now_ms() - start > WAIT_MS)
			return false;
		sched_yield();
	}
	return true;
}

static void *producer(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	struct mearas_sqe e;

	(void)arg;
	for (uint64_t seq = 0; seq < total && !stopped(); seq++) {
		bool sync_wait = rnd(&s) % 64 == 0;

		test_sqe_fill(&e, seq);
		while (!test_ring_push(&ring, &e))
			if (stopped())
				return NULL;
			else
				sched_yield();
		if (mearas_ring_needs_wakeup(&ring.ctl) && !(drop_wakeups && sync_wait)) {
			uint64_t one = 1;

			if (write(efd, &one, sizeof(one)) != sizeof(one)) {
				CHECK_FAIL("eventfd write failed");
				stop_run();
				return NULL;
			}
			wakeups_sent++;
		}
		if (sync_wait && !wait_drained()) {
			CHECK_FAIL("lost wakeup: consumer made no progress for %d ms (record %llu)", WAIT_MS,
				   (unsigned long long)seq);
			stop_run();
			return NULL;
		}
		random_pause(&s);
	}
	return NULL;
}

static void watchdog(int sig)
{
	static const char msg[] = "test_ring_wakeup: watchdog expired (hang or lost wakeup)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static void no_wakeup_lost(void)
{
	uint64_t s = 0x243f6a8885a308d3ull, seq = 0;
	struct mearas_sqe e;
	pthread_t t;

	total = check_opt_u64("records", 2000000);
	drop_wakeups = check_opt("drop-wakeups") != NULL;
	signal(SIGALRM, watchdog);
	alarm(300);
	efd = eventfd(0, EFD_NONBLOCK);
	REQUIRE(efd >= 0);
	test_ring_init(&ring, 64, UINT32_MAX - 100);
	REQUIRE(ring.sqes);
	REQUIRE(pthread_create(&t, NULL, producer, NULL) == 0);
	while (seq < total && !stopped()) {
		if (test_ring_pop(&ring, &e)) {
			if (!test_sqe_valid(&e, seq)) {
				CHECK_FAIL("record %llu out of order or torn", (unsigned long long)seq);
				stop_run();
				break;
			}
			seq++;
			random_pause(&s);
			continue;
		}
		if (mearas_ring_prepare_sleep(&ring.ctl)) {
			struct pollfd p = { .fd = efd, .events = POLLIN };
			int r;

			sleeps++;
			r = poll(&p, 1, WAIT_MS);
			if (r == 0 && mearas_ring_ready(&ring.ctl) != 0) {
				CHECK_FAIL("lost wakeup: slept %d ms with %u record(s) waiting (record %llu)",
					   WAIT_MS, mearas_ring_ready(&ring.ctl), (unsigned long long)seq);
				stop_run();
				break;
			}
			if (r > 0) {
				uint64_t cnt;

				if (read(efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN) {
					CHECK_FAIL("eventfd read: %s", strerror(errno));
					stop_run();
					break;
				}
			}
		}
		mearas_ring_end_sleep(&ring.ctl);
	}
	pthread_join(t, NULL);
	alarm(0);
	close(efd);
	test_ring_fini(&ring);
	printf("  %llu records, %llu sleeps, %llu wakeups\n", (unsigned long long)seq,
	       (unsigned long long)sleeps, (unsigned long long)wakeups_sent);
}

static const struct check_case cases[] = {
	{ "no_wakeup_lost", no_wakeup_lost },
};
CHECK_MAIN(cases)
