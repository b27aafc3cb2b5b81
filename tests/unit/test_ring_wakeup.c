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
 * usage: test_ring_wakeup [records] [--drop-wakeups]
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

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)*s;
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

	while (mearas_load_acquire(&ring.ctl.head) != ring.prod_tail) {
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
	for (uint64_t seq = 0; seq < total; seq++) {
		bool sync_wait = rnd(&s) % 64 == 0;

		test_sqe_fill(&e, seq);
		while (!test_ring_push(&ring, &e))
			sched_yield();
		if (mearas_ring_needs_wakeup(&ring.ctl) && !(drop_wakeups && sync_wait)) {
			uint64_t one = 1;

			if (write(efd, &one, sizeof(one)) != sizeof(one)) {
				perror("eventfd write");
				exit(1);
			}
			wakeups_sent++;
		}
		if (sync_wait && !wait_drained()) {
			fprintf(stderr, "lost wakeup: consumer made no progress for %d ms (record %llu)\n",
				WAIT_MS, (unsigned long long)seq);
			exit(1);
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

int main(int argc, char **argv)
{
	uint64_t s = 0x243f6a8885a308d3ull, seq = 0;
	struct mearas_sqe e;
	pthread_t t;

	total = 2000000;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--drop-wakeups"))
			drop_wakeups = 1;
		else
			total = strtoull(argv[i], NULL, 0);
	}
	signal(SIGALRM, watchdog);
	alarm(300);
	efd = eventfd(0, EFD_NONBLOCK);
	CHECK(efd >= 0);
	test_ring_init(&ring, 64, UINT32_MAX - 100);
	CHECK(ring.sqes);
	CHECK(pthread_create(&t, NULL, producer, NULL) == 0);
	while (seq < total) {
		if (test_ring_pop(&ring, &e)) {
			if (!test_sqe_valid(&e, seq)) {
				fprintf(stderr, "record %llu out of order or torn\n", (unsigned long long)seq);
				return 1;
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
				fprintf(stderr, "lost wakeup: slept %d ms with %u record(s) waiting (record %llu)\n",
					WAIT_MS, mearas_ring_ready(&ring.ctl), (unsigned long long)seq);
				return 1;
			}
			if (r > 0) {
				uint64_t cnt;

				if (read(efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN) {
					perror("eventfd read");
					return 1;
				}
			}
		}
		mearas_ring_end_sleep(&ring.ctl);
	}
	pthread_join(t, NULL);
	test_ring_fini(&ring);
	printf("ring wakeup: %llu records, %llu sleeps, %llu wakeups, none lost\n",
	       (unsigned long long)total, (unsigned long long)sleeps, (unsigned long long)wakeups_sent);
	return 0;
}
