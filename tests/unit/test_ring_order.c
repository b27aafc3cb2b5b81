// SPDX-License-Identifier: MIT
/* Two threads, one ring: every record arrives once, in order, with the bytes
 * the producer wrote (release/acquire on the indices publishes the payload).
 * Indices start just below UINT32_MAX so the run crosses the wrap.
 * usage: test_ring_order [--records=N] (default 1000000) */
#include <pthread.h>
#include <sched.h>

#include "check.h"
#include "ring_util.h"

static struct test_ring ring;
static uint64_t total;

static void *producer(void *arg)
{
	struct mearas_sqe e;

	(void)arg;
	for (uint64_t seq = 0; seq < total; seq++) {
		test_sqe_fill(&e, seq);
		while (!test_ring_push(&ring, &e))
			sched_yield();
	}
	return NULL;
}

static void records_in_order_across_threads(void)
{
	pthread_t t;
	struct mearas_sqe e;
	uint64_t seq = 0, bad = 0;

	total = check_opt_u64("records", 1000000);
	test_ring_init(&ring, 256, UINT32_MAX - 1000);
	REQUIRE(ring.sqes);
	REQUIRE(pthread_create(&t, NULL, producer, NULL) == 0);
	/* a bad record is counted and the run goes on, so the producer ends */
	while (seq < total) {
		if (!test_ring_pop(&ring, &e)) {
			sched_yield();
			continue;
		}
		if (!test_sqe_valid(&e, seq) && !bad++)
			CHECK_FAIL("record %llu out of order or torn (user_data %llu)",
				   (unsigned long long)seq, (unsigned long long)e.user_data);
		seq++;
	}
	pthread_join(t, NULL);
	CHECK_EQ(bad, 0);
	CHECK(!test_ring_pop(&ring, &e));
	test_ring_fini(&ring);
	printf("  %llu records\n", (unsigned long long)total);
}

static const struct check_case cases[] = {
	{ "records_in_order_across_threads", records_in_order_across_threads },
};
CHECK_MAIN(cases)
