/* SPDX-License-Identifier: MIT */
/*
 * One user asks for a pinned data area on connection after connection
 * (each up to --max-data-mb). All of one user's data areas together are
 * capped (--user-data-mb): the connection that would pass the cap must be
 * refused with a clear reason, and a closed connection's area given back.
 *   data_area_cap_per_user SOCKET AREA_MB CAP_MB
 * Exit 0 when CAP/AREA areas were served, the next refused, and after one
 * was closed another served.
 */
#include "hostile.h"

#define CUDA_ERROR_MEMORY_ALLOCATION 2
#define MAXN 64

static struct hostile conns[MAXN];

int main(int argc, char **argv)
{
	uint64_t area, cap;
	unsigned fit;
	int r;

	if (argc < 4) {
		printf("usage: %s SOCKET AREA_MB CAP_MB\n", argv[0]);
		return 2;
	}
	area = strtoull(argv[2], NULL, 10) << 20;
	cap = strtoull(argv[3], NULL, 10) << 20;
	fit = area ? (unsigned)(cap / area) : 0;
	if (!fit || fit >= MAXN) {
		printf("usage: CAP_MB / AREA_MB must be 1..%d\n", MAXN - 1);
		return 2;
	}
	for (unsigned i = 0; i < fit; i++) {
		r = hostile_connect(&conns[i], argv[1], 1, area, NULL);
		if (r) {
			printf("FAIL: area %u of %u within the cap refused: %d %s\n", i + 1, fit, r, conns[i].refusal);
			return 1;
		}
		/* the data area is really there: the worker pinned what it announced */
		memset(conns[i].data, 0x5a, conns[i].hdr->data_size);
	}
	r = hostile_connect(&conns[fit], argv[1], 1, area, NULL);
	printf("%u areas of %s MiB served; the next: %d %s\n", fit, argv[2], r, conns[fit].refusal);
	if (r != CUDA_ERROR_MEMORY_ALLOCATION || !strstr(conns[fit].refusal, "data areas already")) {
		printf("FAIL: want cudaErrorMemoryAllocation (2), 'data areas already'\n");
		return 1;
	}
	close(conns[fit].sock);
	close(conns[0].sock);
	for (int i = 0; i < 50; i++) {
		r = hostile_connect(&conns[0], argv[1], 1, area, NULL);
		if (!r) {
			printf("a closed connection's area was given back\n");
			return 0;
		}
		close(conns[0].sock);
		usleep(100000);
	}
	printf("FAIL: no area served after one was closed: %d %s\n", r, conns[0].refusal);
	return 1;
}
