// SPDX-License-Identifier: MIT
/* host-backend/core/handles.c: put/get/take, id bounds, duplicate ids, growth. */
#include "check.h"
#include "core/worker.h"

static struct handle_table t;
static int objs[8];

static void fresh_table(void)
{
	memset(&t, 0, sizeof(t));
}

static void free_table(void)
{
	htab_free(&t);
}

/* ids 1, MEARAS_MAX_HANDLES - 1 and 1000 hold objs[1..3], aux 11, 22, 33 */
static void put_three(void)
{
	CHECK_EQ(htab_put(&t, 1, &objs[1], 11), 0);
	CHECK_EQ(htab_put(&t, MEARAS_MAX_HANDLES - 1, &objs[2], 22), 0); /* grows to the top */
	CHECK_EQ(htab_put(&t, 1000, &objs[3], 33), 0);
}

/* id 0 and ids >= MEARAS_MAX_HANDLES are refused, nothing is stored */
static void bad_ids_refused(void)
{
	CHECK_EQ(htab_put(&t, 0, &objs[0], 1), cudaErrorInvalidValue);
	CHECK_EQ(htab_put(&t, MEARAS_MAX_HANDLES, &objs[0], 1), cudaErrorInvalidValue);
	CHECK_EQ(htab_put(&t, UINT64_MAX, &objs[0], 1), cudaErrorInvalidValue);
	CHECK_EQ(htab_put(&t, (1ull << 32) + 5, &objs[0], 1), cudaErrorInvalidValue);
	CHECK(htab_get(&t, 0) == NULL);
	CHECK(htab_get(&t, 5) == NULL);         /* empty table */
	CHECK(htab_take(&t, 5) == NULL);
}

static void put_and_get(void)
{
	put_three();
	CHECK(t.cap >= MEARAS_MAX_HANDLES);
	REQUIRE(htab_get(&t, 1) && htab_get(&t, MEARAS_MAX_HANDLES - 1) && htab_get(&t, 1000));
	CHECK(htab_get(&t, 1)->obj == &objs[1]);
	CHECK_EQ(htab_get(&t, 1)->aux, 11);
	CHECK(htab_get(&t, MEARAS_MAX_HANDLES - 1)->obj == &objs[2]);
	CHECK_EQ(htab_get(&t, 1000)->aux, 33);
	CHECK(htab_get(&t, 2) == NULL);
	CHECK(htab_get(&t, MEARAS_MAX_HANDLES) == NULL);
	CHECK(htab_get(&t, UINT64_MAX) == NULL);
}

/* a duplicate id is refused and the first object stays */
static void duplicate_refused(void)
{
	put_three();
	CHECK_EQ(htab_put(&t, 1000, &objs[4], 44), cudaErrorInvalidValue);
	REQUIRE(htab_get(&t, 1000));
	CHECK(htab_get(&t, 1000)->obj == &objs[3]);
	CHECK_EQ(htab_get(&t, 1000)->aux, 33);
}

/* take empties the slot once; the id can be reused afterwards */
static void take_once_then_reuse(void)
{
	put_three();
	CHECK(htab_take(&t, 1000) == &objs[3]);
	CHECK(htab_take(&t, 1000) == NULL);
	CHECK(htab_get(&t, 1000) == NULL);
	CHECK(htab_take(&t, 0) == NULL);
	CHECK(htab_take(&t, UINT64_MAX) == NULL);
	CHECK_EQ(htab_put(&t, 1000, &objs[5], 55), 0);
	REQUIRE(htab_get(&t, 1000));
	CHECK(htab_get(&t, 1000)->obj == &objs[5]);
	CHECK_EQ(htab_get(&t, 1000)->aux, 55);
}

static void free_empties_table(void)
{
	put_three();
	htab_free(&t);
	CHECK(t.slots == NULL && t.cap == 0);
	CHECK(htab_get(&t, 1) == NULL);
}

/* growth from a small table keeps earlier entries */
static void growth_keeps_entries(void)
{
	for (uint64_t id = 1; id < 300; id += 7)
		CHECK_EQ(htab_put(&t, id, &objs[id % 8], id), 0);
	for (uint64_t id = 1; id < 300; id += 7) {
		REQUIRE(htab_get(&t, id));
		CHECK(htab_get(&t, id)->obj == &objs[id % 8]);
		CHECK_EQ(htab_get(&t, id)->aux, id);
	}
}

static const struct check_case cases[] = {
	{ "bad_ids_refused", bad_ids_refused },
	{ "put_and_get", put_and_get },
	{ "duplicate_refused", duplicate_refused },
	{ "take_once_then_reuse", take_once_then_reuse },
	{ "free_empties_table", free_empties_table },
	{ "growth_keeps_entries", growth_keeps_entries },
};
CHECK_MAIN_FIXTURE(cases, fresh_table, free_table)
