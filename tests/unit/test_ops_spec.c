// SPDX-License-Identifier: MIT
/* What the generated op code (include/mearas/ops.spec) promises to the
 * code built on it: the prep helpers keep each op's arguments at the words
 * older records used (hostile tests and fuzz corpora write raw words), the
 * data-area spans each op reads and writes, and the op properties the back
 * end dispatches on. */
#include <string.h>

#include "check.h"
#include "mearas/region.h"

static struct mearas_sqe blank(void)
{
	struct mearas_sqe e;

	memset(&e, 0, sizeof(e));
	return e;
}

static void test_prep_keeps_word_layout(void)
{
	struct mearas_sqe e = blank();

	mearas_prep_MEMCPY(&e, 1, 2, 3, MEARAS_COPY_DTOH);
	CHECK_EQ(e.op, MEARAS_OP_MEMCPY);
	CHECK(e.args.a[0] == 1 && e.args.a[1] == 2 && e.args.a[2] == 3 && e.args.a[3] == MEARAS_COPY_DTOH);
	e = blank();
	mearas_prep_MEMCPY_2D(&e, 1, 2, 3, 4, 5, 6, MEARAS_COPY_HTOD);
	for (int i = 0; i < 6; i++)
		CHECK_EQ(e.args.a[i], (uint64_t)i + 1);
	CHECK_EQ(e.args.a[6], MEARAS_COPY_HTOD);
	/* a launch packs grid, block and cluster two to a word, x first */
	e = blank();
	mearas_prep_LAUNCH(&e, 9, (const uint32_t[3]){ 10, 11, 12 }, (const uint32_t[3]){ 13, 14, 15 },
			   (const uint32_t[3]){ 2, 1, 1 }, 16, 1);
	CHECK_EQ(e.args.a[0], 9);
	CHECK_EQ(e.args.a[1], 10 | 11ull << 32);
	CHECK_EQ(e.args.a[2], 12 | 13ull << 32);
	CHECK_EQ(e.args.a[3], 14 | 15ull << 32);
	CHECK_EQ(e.args.a[4], 2 | 1ull << 32);
	CHECK_EQ(e.args.a[5], 1 | 16ull << 32);
	CHECK_EQ(e.args.a[6], 1);
	e = blank();
	mearas_prep_STREAM_CREATE(&e, 5, 1, -3);
	CHECK((int64_t)e.args.a[2] == -3);
	/* fields an op does not name stay zero */
	e = blank();
	mearas_prep_EVENT_SYNC(&e, 7);
	CHECK(e.args.a[0] == 7 && e.args.a[1] == 0 && e.args.a[6] == 0);
}

static void test_spans(void)
{
	struct mearas_sqe e = blank();
	struct mearas_span s;

	mearas_prep_MEMCPY(&e, 100, 200, 300, MEARAS_COPY_HTOD);
	CHECK(mearas_op_reads(&e, &s) && s.off == 200 && s.width == 300 && s.pitch == 300 && s.rows == 1);
	CHECK(!mearas_op_writes(&e, &s));
	mearas_prep_MEMCPY(&e, 100, 200, 300, MEARAS_COPY_DTOH);
	CHECK(!mearas_op_reads(&e, &s));
	CHECK(mearas_op_writes(&e, &s) && s.off == 100 && s.width == 300 && s.rows == 1);
	mearas_prep_MEMCPY(&e, 100, 200, 300, MEARAS_COPY_DTOD);
	CHECK(!mearas_op_reads(&e, &s) && !mearas_op_writes(&e, &s));
	mearas_prep_MEMCPY_2D(&e, 10, 64, 20, 128, 32, 4, MEARAS_COPY_HTOD);
	CHECK(mearas_op_reads(&e, &s) && s.off == 20 && s.pitch == 128 && s.width == 32 && s.rows == 4);
	mearas_prep_MEMCPY_2D(&e, 10, 64, 20, 128, 32, 4, MEARAS_COPY_DTOH);
	CHECK(mearas_op_writes(&e, &s) && s.off == 10 && s.pitch == 64 && s.width == 32 && s.rows == 4);
	mearas_prep_MODULE_LOAD(&e, 1, 4096, 777);
	CHECK(mearas_op_reads(&e, &s) && s.off == 4096 && s.width == 777);
	mearas_prep_LAUNCH(&e, 1, (const uint32_t[3]){ 1, 1, 1 }, (const uint32_t[3]){ 1, 1, 1 },
			   (const uint32_t[3]){ 0, 0, 0 }, 0, 0);
	CHECK(!mearas_op_reads(&e, &s) && !mearas_op_writes(&e, &s));
	/* array copies: the data-area rows of the host directions only */
	mearas_prep_MEMCPY_ARRAY(&e, 7, 4096, 64, 0, 1, 2, 48, 3, MEARAS_ARRAY_HTOA);
	CHECK(mearas_op_reads(&e, &s) && s.off == 4096 && s.pitch == 64 && s.width == 48 && s.rows == 3);
	CHECK(!mearas_op_writes(&e, &s));
	mearas_prep_MEMCPY_ARRAY(&e, 7, 4096, 64, 0, 1, 2, 48, 3, MEARAS_ARRAY_ATOH);
	CHECK(mearas_op_writes(&e, &s) && s.off == 4096 && s.rows == 3 && !mearas_op_reads(&e, &s));
	mearas_prep_MEMCPY_ARRAY(&e, 7, 4096, 64, 0, 1, 2, 48, 3, MEARAS_ARRAY_DTOA);
	CHECK(!mearas_op_reads(&e, &s) && !mearas_op_writes(&e, &s));
	/* an encoded tensor map comes back through the data area (a remote
	 * vGPU's forwarder follows the span back) */
	e = blank();
	mearas_prep_TENSOR_MAP_ENCODE(&e, 1, 8192, 128);
	CHECK(!mearas_op_reads(&e, &s));
	CHECK(mearas_op_writes(&e, &s) && s.off == 8192 && s.width == 128 && s.pitch == 128 && s.rows == 1);
}

static void test_props(void)
{
	static const unsigned deferred[] = { MEARAS_OP_MEMCPY, MEARAS_OP_MEMCPY_2D, MEARAS_OP_MEMSET,
					     MEARAS_OP_MEMSET_2D, MEARAS_OP_STREAM_SYNC, MEARAS_OP_EVENT_SYNC,
					     MEARAS_OP_CTX_SYNC, MEARAS_OP_SYNC_ERROR, MEARAS_OP_MEM_FREE,
					     MEARAS_OP_MEMCPY_ARRAY };
	unsigned n = 0;

	for (unsigned op = 0; op < MEARAS_OP_COUNT; op++)
		n += mearas_op_props(op)->deferred;
	CHECK_EQ(n, sizeof(deferred) / sizeof(deferred[0]));
	for (unsigned i = 0; i < n; i++)
		CHECK(mearas_op_props(deferred[i])->deferred);
	CHECK(mearas_op_props(MEARAS_OP_LAUNCH)->kernel && mearas_op_props(MEARAS_OP_GRAPH_LAUNCH)->kernel);
	CHECK(mearas_op_props(MEARAS_OP_HOST_FUNC)->wait && mearas_op_props(MEARAS_OP_STREAM_WAIT_EVENT)->wait);
	CHECK(mearas_op_props(MEARAS_OP_HOST_FUNC_DONE)->urgent);
	CHECK(mearas_op_props(MEARAS_OP_MEM_FREE)->pends && !mearas_op_props(MEARAS_OP_MEM_FREE)->pends_sync);
	CHECK(mearas_op_props(MEARAS_OP_LAUNCH)->pends_sync && mearas_op_props(MEARAS_OP_LAUNCH)->stream);
	CHECK(mearas_op_props(MEARAS_OP_MEM_ALLOC)->sync && !mearas_op_props(MEARAS_OP_MEMCPY)->sync);
	CHECK(mearas_op_props(MEARAS_OP_TENSOR_MAP_ENCODE)->sync && !mearas_op_props(MEARAS_OP_TENSOR_MAP_ENCODE)->stream);
	CHECK(strcmp(mearas_op_name(MEARAS_OP_EVENT_ELAPSED), "EVENT_ELAPSED") == 0);
	CHECK(strcmp(mearas_op_name(MEARAS_OP_COUNT), "INVALID") == 0);
	CHECK(strcmp(mearas_op_name(60000), "INVALID") == 0);
}

static const struct check_case cases[] = {
	{ "prep_keeps_word_layout", test_prep_keeps_word_layout },
	{ "spans", test_spans },
	{ "props", test_props },
};

CHECK_MAIN(cases)
