// SPDX-License-Identifier: MIT
/* host-backend/handles.c: put/get/take, id bounds, duplicate ids, growth. */
#include "check.h"
#include "worker.h"

int main(void)
{
	struct handle_table t = { 0 };
	int objs[8];

	/* id 0 and ids >= MEARAS_MAX_HANDLES are refused, nothing is stored */
	CHECK_EQ(htab_put(&t, 0, &objs[0], 1), cudaErrorInvalidValue);
	CHECK_EQ(htab_put(&t, MEARAS_MAX_HANDLES, &objs[0], 1), cudaErrorInvalidValue);
	CHECK_EQ(htab_put(&t, UINT64_MAX, &objs[0], 1), cudaErrorInvalidValue);
	CHECK_EQ(htab_put(&t, (1ull << 32) + 5, &objs[0], 1), cudaErrorInvalidValue);
	CHECK(htab_get(&t, 0) == NULL);
	CHECK(htab_get(&t, 5) == NULL);         /* empty table */
	CHECK(htab_take(&t, 5) == NULL);

	CHECK_EQ(htab_put(&t, 1, &objs[1], 11), 0);
	CHECK_EQ(htab_put(&t, MEARAS_MAX_HANDLES - 1, &objs[2], 22), 0); /* grows to the top */
	CHECK_EQ(htab_put(&t, 1000, &objs[3], 33), 0);
	CHECK(t.cap >= MEARAS_MAX_HANDLES);
	CHECK(htab_get(&t, 1)->obj == &objs[1]);
	CHECK_EQ(htab_get(&t, 1)->aux, 11);
	CHECK(htab_get(&t, MEARAS_MAX_HANDLES - 1)->obj == &objs[2]);
	CHECK_EQ(htab_get(&t, 1000)->aux, 33);
	CHECK(htab_get(&t, 2) == NULL);
	CHECK(htab_get(&t, MEARAS_MAX_HANDLES) == NULL);
	CHECK(htab_get(&t, UINT64_MAX) == NULL);

	/* a duplicate id is refused and the first object stays */
	CHECK_EQ(htab_put(&t, 1000, &objs[4], 44), cudaErrorInvalidValue);
	CHECK(htab_get(&t, 1000)->obj == &objs[3]);
	CHECK_EQ(htab_get(&t, 1000)->aux, 33);

	/* take empties the slot once; the id can be reused afterwards */
	CHECK(htab_take(&t, 1000) == &objs[3]);
	CHECK(htab_take(&t, 1000) == NULL);
	CHECK(htab_get(&t, 1000) == NULL);
	CHECK(htab_take(&t, 0) == NULL);
	CHECK(htab_take(&t, UINT64_MAX) == NULL);
	CHECK_EQ(htab_put(&t, 1000, &objs[5], 55), 0);
	CHECK(htab_get(&t, 1000)->obj == &objs[5]);
	CHECK_EQ(htab_get(&t, 1000)->aux, 55);

	htab_free(&t);
	CHECK(t.slots == NULL && t.cap == 0);
	CHECK(htab_get(&t, 1) == NULL);
	/* growth from a small table keeps earlier entries */
	for (uint64_t id = 1; id < 300; id += 7)
		CHECK_EQ(htab_put(&t, id, &objs[id % 8], id), 0);
	for (uint64_t id = 1; id < 300; id += 7) {
		CHECK(htab_get(&t, id)->obj == &objs[id % 8]);
		CHECK_EQ(htab_get(&t, id)->aux, id);
	}
	htab_free(&t);
	printf("handles: ok\n");
	return 0;
}
