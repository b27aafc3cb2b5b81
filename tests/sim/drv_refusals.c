// SPDX-License-Identifier: MIT
/*
 * A refusal of mearas's libcuda names the entry point the program called and
 * the place that refused, at debug level (guest/libcuda/errors.c). The
 * program catches its own stderr in a file around one refused call and looks
 * for the line.
 *   drv_refusals direct   an entry point's own check (cuMemAlloc, no pointer)
 *   drv_refusals helper   a helper's check (a bad stream handle): the entry
 *                         point is found on the stack
 *   drv_refusals backend  the back end's error (cu_result): a copy to an
 *                         address that is no allocation
 *   drv_refusals quiet    at the default level nothing is logged
 */
#include <string.h>
#include <unistd.h>

#include "drv_check.h"

static FILE *caught;
static int saved_fd = -1;

static void catch_stderr(void)
{
	fflush(stderr);
	caught = tmpfile();
	REQUIRE(caught, "tmpfile");
	saved_fd = dup(2);
	REQUIRE(saved_fd >= 0 && dup2(fileno(caught), 2) == 2, "dup2");
}

/* what stderr got since catch_stderr (stderr is restored) */
static char *release_stderr(void)
{
	static char text[8192];
	size_t n;

	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	rewind(caught);
	n = fread(text, 1, sizeof(text) - 1, caught);
	text[n] = 0;
	fclose(caught);
	fputs(text, stderr); /* into the test's log too */
	return text;
}

static void expect_line(const char *text, const char *entry, const char *code, const char *place)
{
	char want[256];

	snprintf(want, sizeof(want), "%s: %s (%s", entry, code, place);
	REQUIRE(strstr(text, want), "no line with \"%s\" in: %s", want, text);
}

static void direct(void)
{
	char *text;

	catch_stderr();
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(NULL, 16));
	text = release_stderr();
	expect_line(text, "cuMemAlloc_v2", "CUDA_ERROR_INVALID_VALUE", "memory.c:");
}

static void helper(void)
{
	/* readable memory that is no stream (handles are pointers, and the
	 * driver, like mearas, reads what they point at) */
	static char not_a_stream[256];
	char *text;

	catch_stderr();
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize((CUstream)not_a_stream));
	text = release_stderr();
	expect_line(text, "cuStreamSynchronize", "CUDA_ERROR_INVALID_HANDLE", "stream.c:");
	REQUIRE(strstr(text, " cu_stream_ref)"), "the refusing helper not named: %s", text);
}

static void backend(void)
{
	char host[64] = { 0 };
	const char *name = NULL;
	CUresult r;
	char *text;

	catch_stderr();
	r = cuMemcpyHtoD((CUdeviceptr)0x10, host, sizeof(host));
	text = release_stderr();
	REQUIRE(r != CUDA_SUCCESS, "a copy to address 0x10 succeeded");
	cuGetErrorName(r, &name);
	expect_line(text, "cuMemcpyHtoD_v2", name ? name : "?", "copy.c:");
}

static void quiet(void)
{
	char *text;

	catch_stderr();
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(NULL, 16));
	text = release_stderr();
	REQUIRE(!strstr(text, "CUDA_ERROR_INVALID_VALUE"), "a refusal logged below debug level: %s", text);
}

int main(int argc, char **argv)
{
	static const struct drv_mode modes[] = {
		{ "direct", direct }, { "helper", helper }, { "backend", backend },
		{ "quiet", quiet },
	};

	return drv_run_mode_in_primary(argc, argv, modes, DRV_NMODES(modes));
}
