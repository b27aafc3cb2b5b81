/* SPDX-License-Identifier: MIT */
/*
 * FUNC_GET records: mearasd allocates one per lookup (on a GPU: the
 * kernel's parameter offsets, 4 bytes a parameter) and never freed them,
 * neither at MODULE_UNLOAD nor on reuse of the ids. Here a kernel of 4000
 * parameters is looked up under fresh ids until mearasd refuses, the module
 * is unloaded and loaded again, five times: the refusal must come
 * (cudaErrorMemoryAllocation) before the ids run out, at the same count
 * each round (unloading freed the records), and the worker keep serving.
 *   func_get_flood SOCKET
 * Exit 0 when all of that held.
 */
#include "check.h" /* REQUIRE_MSG: a failure ends the program, exit 1 */
#include "sim_kernels.h"

int main(int argc, char **argv)
{
	struct hostile h;
	unsigned first = 0;
	int r;

	hostile_open(&h, argc, argv, 1, 16ull << 20);
	for (int round = 0; round < 5; round++) {
		unsigned n = 0;

		r = sim_load_kernel(&h, 0, 1, "k_wide", 4000, 1 << 20);
		REQUIRE_MSG(r == 0, "module load, round %d: %d", round, r);
		for (uint64_t id = 1; id < MEARAS_MAX_HANDLES; id++) {
			r = sim_func_get(&h, 0, 1, id, "k_wide");
			if (r)
				break;
			n++;
		}
		printf("round %d: %u lookups, then status %d\n", round, n, r);
		REQUIRE_MSG(r == SEC_cudaErrorMemoryAllocation, "round %d: %u lookups and no refusal (status %d)", round, n,
		       r);
		if (!round)
			first = n;
		REQUIRE_MSG(n == first, "round %d: %u lookups, %u in the first round: records not freed", round, n, first);
		REQUIRE_MSG(sim_call1(&h, 0, MEARAS_OP_MODULE_UNLOAD, 0, 1, 0) == 0, "unload, round %d", round);
	}
	REQUIRE_MSG(hostile_alloc(&h, 0, 4096, NULL) != 0, "an allocation after it all");
	printf("kernel lookups bounded and freed with their module\n");
	return 0;
}
