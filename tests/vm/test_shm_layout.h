/* Layout of the shared memory that the host and guest test programs use. */
#ifndef MEARAS_TEST_SHM_LAYOUT_H
#define MEARAS_TEST_SHM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define TEST_READY_MAGIC 0x4d454152u

#define TEST_PLAIN_SIZE0 (4u << 20)
#define TEST_PLAIN_SIZE1 (1u << 20)
#define TEST_DOORBELL_SIZE (4u << 20)
#define TEST_VECTORS 2u

/* Guest stages (ctrl.stage), each answered by the host. */
enum test_stage {
	TEST_STAGE_NONE = 0,
	TEST_STAGE_POLLING = 2,	/* guest sleeps in poll(): host notifies vector 1 */
	TEST_STAGE_DONE = 3,	/* guest saw vector 1 through poll()+read() */
	TEST_STAGE_REPROBED = 4,/* device removed and rescanned: host notifies vector 0 */
};

struct test_ctrl {
	uint32_t guest_ready;	/* TEST_READY_MAGIC once the guest is waiting */
	uint32_t guest_peer_id;
	uint32_t stage;
	uint32_t host_stage;
};

#define TEST_PATTERN_OFF 4096u
#define TEST_PATTERN_LEN 65536u
#define TEST_HOST_PATTERN_OFF (TEST_PATTERN_OFF + TEST_PATTERN_LEN)

static inline uint8_t test_guest_byte(size_t i, uint32_t seed)
{
	return (uint8_t)(i * 7u + seed * 31u + 3u);
}

static inline uint8_t test_host_byte(size_t i, uint32_t seed)
{
	return (uint8_t)(i * 13u + seed * 17u + 1u);
}

static inline uint32_t test_load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void test_store(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

#endif
