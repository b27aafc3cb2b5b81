// SPDX-License-Identifier: MIT
/* Two threads, one ring: every record arrives once, in order, with the bytes
 * the producer wrote (release/acquire on the indices publishes the payload).
 * Indices start just below UINT32_MAX so the run crosses the wrap. */
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

int main(int argc, char **argv)
{
	pthread_t t;
	struct mearas_sqe e;
	uint64_t seq = 0;

	total = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	test_ring_init(&ring, 256, UINT32_MAX - 1000);
	CHECK(ring.sqes);
	CHECK(pthread_create(&t, NULL, producer, NULL) == 0);
	while (seq < total) {
		if (!test_ring_pop(&ring, &e)) {
			sched_yield();
			continue;
		}
		if (!test_sqe_valid(&e, seq)) {
			fprintf(stderr, "record %llu out of order or torn (user_data %llu)\n",
				(unsigned long long)seq, (unsigned long long)e.user_data);
			return 1;
		}
		seq++;
	}
	pthread_join(t, NULL);
	CHECK(!test_ring_pop(&ring, &e));
	test_ring_fini(&ring);
	printf("ring ordering: %llu records in order\n", (unsigned long long)total);
	return 0;
}
