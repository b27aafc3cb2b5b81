/* SPDX-License-Identifier: MIT */
/*
 * The shared region (rings, arena, data area) is a memfd that mearasd's
 * worker made and sent to the client, mapped by both. A client that
 * shrinks it takes the pages from under the worker, whose next look at its
 * rings is a SIGBUS: the worker dies, without a word to the client. A
 * client that grows it makes the worker's file as large as it likes. Both
 * must be refused (the memfd sealed at its size), the region keep serving.
 *   region_resize SOCKET
 * Exit 0 when both were refused and a call works after.
 */
#include <errno.h>
#include <sys/stat.h>

#include "check.h" /* REQUIRE_MSG: a failure ends the program, exit 1 */
#include "hostile.h"

int main(int argc, char **argv)
{
	struct hostile h;
	struct stat st;

	hostile_open(&h, argc, argv, 1, 16ull << 20);
	REQUIRE_MSG(fstat(h.region_fd, &st) == 0, "fstat of the region: %s", strerror(errno));
	REQUIRE_MSG(ftruncate(h.region_fd, st.st_size / 2) != 0, "the region was shrunk from %lld bytes",
		    (long long)st.st_size);
	printf("shrink refused: %s\n", strerror(errno));
	REQUIRE_MSG(ftruncate(h.region_fd, st.st_size + (1ll << 40)) != 0, "the region was grown by a TiB");
	printf("growth refused: %s\n", strerror(errno));
	REQUIRE_MSG(hostile_alloc(&h, 0, 4096, NULL) != 0, "an allocation after the attempts");
	printf("region sealed at its size, the worker serving\n");
	return 0;
}
