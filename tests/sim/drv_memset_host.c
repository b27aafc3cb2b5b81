// Memsets whose destination is pinned host memory (cuMemHostAlloc), which
// the driver allows and XLA's autotuner does; one behaviour per argument:
//   blocking  cuMemsetD32 returns with the words set (synchronous for
//             pinned host memory)
//   async     cuMemsetD8Async into it runs after the stream's earlier work
//             (a device-to-host copy into the same bytes) and is done when
//             the stream is
//   captured  the same while the stream captures a graph: NOT_SUPPORTED,
//             bytes untouched
//   rows      cuMemsetD2D16 sets each row's width and leaves the pitch gap
//   refused   a pointer that is neither device nor pinned host memory is
//             refused with CUDA_ERROR_INVALID_VALUE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "drv_check.h"

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	CUcontext ctx;
	uint8_t *h;

	(void)drv_primary_current(&ctx);
	CHECK(cuMemHostAlloc((void **)&h, 1 << 16, 0));
	memset(h, 0xee, 1 << 16);
	if (!strcmp(mode, "blocking")) {
		uint32_t w[4];

		CHECK(cuMemsetD32((CUdeviceptr)(uintptr_t)(h + 64), 0x01020304u, 2));
		memcpy(w, h + 60, sizeof(w));
		REQUIRE(w[0] == 0xeeeeeeeeu && w[1] == 0x01020304u && w[2] == 0x01020304u && w[3] == 0xeeeeeeeeu,
			"words %x %x %x %x", w[0], w[1], w[2], w[3]);
	} else if (!strcmp(mode, "async")) {
		CUstream s;
		CUdeviceptr d;

		CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		CHECK(cuMemAlloc(&d, 4096));
		CHECK(cuMemsetD8(d, 0x55, 4096));
		CHECK(cuMemcpyDtoHAsync(h, d, 4096, s));
		CHECK(cuMemsetD8Async((CUdeviceptr)(uintptr_t)h, 1, 2048, s));
		CHECK(cuStreamSynchronize(s));
		REQUIRE(h[0] == 1 && h[2047] == 1 && h[2048] == 0x55 && h[4095] == 0x55 && h[4096] == 0xee,
			"bytes %x %x %x %x %x", h[0], h[2047], h[2048], h[4095], h[4096]);
		CHECK(cuMemFree(d));
		CHECK(cuStreamDestroy(s));
	} else if (!strcmp(mode, "captured")) {
		CUstream s;
		CUgraph g;

		CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
		REQUIRE(cuMemsetD8Async((CUdeviceptr)(uintptr_t)h, 1, 4096, s) == CUDA_ERROR_NOT_SUPPORTED,
			"memset into pinned host memory captured");
		cuStreamEndCapture(s, &g);
		REQUIRE(h[0] == 0xee && h[4095] == 0xee, "bytes changed: %u %u", h[0], h[4095]);
		CHECK(cuStreamDestroy(s));
	} else if (!strcmp(mode, "rows")) {
		uint16_t row[8];

		CHECK(cuMemsetD2D16((CUdeviceptr)(uintptr_t)h, 16, 0x0707, 4, 3));
		for (int r = 0; r < 3; r++) {
			memcpy(row, h + 16 * r, sizeof(row));
			for (int i = 0; i < 8; i++)
				REQUIRE(row[i] == (i < 4 ? 0x0707 : 0xeeee), "row %d word %d is %x", r, i, row[i]);
		}
	} else if (!strcmp(mode, "refused")) {
		uint32_t *plain = malloc(64);

		REQUIRE(plain, "malloc");
		REQUIRE(cuMemsetD32((CUdeviceptr)(uintptr_t)plain, 1, 4) == CUDA_ERROR_INVALID_VALUE,
			"pageable memory accepted");
		free(plain);
	} else {
		printf("usage: drv_memset_host blocking|async|captured|rows|refused\n");
		return 2;
	}
	CHECK(cuMemFreeHost(h));
	printf("PASS\n");
	return 0;
}
