/* SPDX-License-Identifier: MIT */
/*
 * A client names an assembly in its hello. The name is no credential: an
 * assembly booked for one uid (or for a VM) must be refused to any other
 * uid, with a clear reason, while its own uid gets exactly its vGPUs.
 *   assembly_by_name_other_user SOCKET ASSEMBLY ok QUOTA_MB | refused
 * Exit 0 when the outcome is the expected one.
 */
#include "hostile.h"

#define CUDA_ERROR_NO_DEVICE 100

int main(int argc, char **argv)
{
	struct hostile h;
	int r;

	if (argc < 4) {
		printf("usage: %s SOCKET ASSEMBLY ok QUOTA_MB | refused\n", argv[0]);
		return 2;
	}
	r = hostile_connect(&h, argv[1], 0, 8ull << 20, argv[2]);
	printf("uid %u names assembly %s -> %d%s%s\n", getuid(), argv[2], r, h.refusal[0] ? ": " : "",
	       h.refusal);
	if (!strcmp(argv[3], "refused")) {
		if (r == CUDA_ERROR_NO_DEVICE && strstr(h.refusal, "was not booked for"))
			return 0;
		if (r == 0)
			printf("FAIL: got the assembly's vGPUs (%u, quota %llu MiB) by its name alone\n",
			       h.hdr->nvgpus, (unsigned long long)(hostile_devinfo(&h, 0)->total_mem >> 20));
		else
			printf("FAIL: want cudaErrorNoDevice (100), 'was not booked for'\n");
		return 1;
	}
	if (r == 0 && argc > 4 && hostile_devinfo(&h, 0)->total_mem == strtoull(argv[4], NULL, 10) << 20)
		return 0;
	printf("FAIL: the owner must get its assembly (quota %s MiB)\n", argc > 4 ? argv[4] : "?");
	return 1;
}
