// The private tables mearas knows but serves only in part
// (guest/libcuda/exptables_unserved.list) are handed out with the real
// driver's size, and a slot not served fails with CUDA_ERROR_NOT_SUPPORTED
// (logging its table and number) instead of the caller getting
// CUDA_ERROR_NOT_FOUND, which cuBLASLt's bf16 path answers with a crash; a
// table nobody listed is still CUDA_ERROR_NOT_FOUND.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

static CUuuid id(const char *hex)
{
	CUuuid u;

	for (int i = 0; i < 16; i++) {
		unsigned b;

		sscanf(hex + 2 * i, "%2x", &b);
		u.bytes[i] = (char)b;
	}
	return u;
}

static int check_table(const char *hex, size_t nslots, unsigned slot)
{
	CUuuid u = id(hex);
	const void *t = NULL;
	CUresult r = cuGetExportTable(&t, &u);
	typedef CUresult (*slot_fn)(void *, void *, void *, void *);

	if (r != CUDA_SUCCESS || !t) {
		printf("FAIL: table %.8s: cuGetExportTable returned %d\n", hex, (int)r);
		return 1;
	}
	if (((const uintptr_t *)t)[0] != nslots * sizeof(void *)) {
		printf("FAIL: table %.8s: size %zu, expected %zu\n", hex, (size_t)((const uintptr_t *)t)[0],
		       nslots * sizeof(void *));
		return 1;
	}
	r = ((slot_fn)((const uintptr_t *)t)[slot])(NULL, NULL, NULL, NULL);
	if (r != CUDA_ERROR_NOT_SUPPORTED) {
		printf("FAIL: table %.8s slot %u returned %d, expected CUDA_ERROR_NOT_SUPPORTED\n", hex, slot, (int)r);
		return 1;
	}
	printf("table %.8s: %zu slots, slot %u fails with CUDA_ERROR_NOT_SUPPORTED\n", hex, nslots, slot);
	return 0;
}

int main(void)
{
	CUuuid unknown = id("00112233445566778899aabbccddeeff");
	const void *t = (const void *)1;

	if (cuInit(0) != CUDA_SUCCESS) {
		printf("FAIL: cuInit\n");
		return 1;
	}
	if (check_table("1734dc26800d47458726c0f1e7dd8bca", 17, 4) ||
	    check_table("6e163fbeb958444d835ce182aff1991e", 99, 8))
		return 1;
	if (cuGetExportTable(&t, &unknown) != CUDA_ERROR_NOT_FOUND || t) {
		printf("FAIL: an unknown table is not CUDA_ERROR_NOT_FOUND with NULL\n");
		return 1;
	}
	printf("PASS\n");
	return 0;
}
