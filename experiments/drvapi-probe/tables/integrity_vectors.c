// SPDX-License-Identifier: MIT
/*
 * Test vectors for the runtime's integrity check (export table d4082055...,
 * slot 1): calls the real driver's slot with chosen versions and times and
 * prints every input the answer may depend on, as one JSON object, so a
 * front end's own computation can be checked offline.
 *   integrity_vectors REAL_LIBCUDA
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*init_fn)(unsigned);
typedef int (*int_out_fn)(int *);
typedef int (*dev_get_fn)(int *, int);
typedef int (*uuid_fn)(unsigned char *, int);
typedef int (*attr_fn)(int *, int, int);
typedef int (*table_fn)(const void **, const unsigned char *);
typedef int (*check_fn)(uint32_t, uint64_t, uint64_t *);

static const unsigned char integrity_uuid[16] = { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
						  0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 };
static const unsigned char cudart_uuid[16] = { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
					       0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 };

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "integrity_vectors: the driver has no %s\n", name);
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	void *h;
	const void *itab = NULL, *rtab = NULL;
	int drv = 0, n = 0;
	static const uint32_t versions[] = { 13000, 13001, 13002, 12082, 12080 };
	static const uint64_t times[] = { 0, 1764000000ull, 1764086400ull };

	if (argc != 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h || ((init_fn)sym(h, "cuInit"))(0) || ((int_out_fn)sym(h, "cuDriverGetVersion"))(&drv) ||
	    ((int_out_fn)sym(h, "cuDeviceGetCount"))(&n))
		return 2;
	if (((table_fn)sym(h, "cuGetExportTable"))(&rtab, cudart_uuid) ||
	    ((table_fn)sym(h, "cuGetExportTable"))(&itab, integrity_uuid) || !itab || !((const uintptr_t *)itab)[1]) {
		fprintf(stderr, "integrity_vectors: no integrity-check table\n");
		return 3;
	}
	printf("{\"driver_version\": %d, \"pid\": %d, \"pthread_self\": %" PRIu64 ", "
	       "\"cudart_table\": %" PRIu64 ", \"integrity_table\": %" PRIu64 ", \"integrity_slot1\": %" PRIu64
	       ", \"integrity_slot0\": %" PRIu64 ", \"devices\": [",
	       drv, (int)getpid(), (uint64_t)pthread_self(), (uint64_t)(uintptr_t)rtab, (uint64_t)(uintptr_t)itab,
	       (uint64_t)((const uintptr_t *)itab)[1], (uint64_t)((const uintptr_t *)itab)[0]);
	for (int i = 0; i < n; i++) {
		unsigned char u[16];
		int dev, dom = -1, bus = -1, slot = -1;

		((dev_get_fn)sym(h, "cuDeviceGet"))(&dev, i);
		((uuid_fn)sym(h, "cuDeviceGetUuid"))(u, dev);
		((attr_fn)sym(h, "cuDeviceGetAttribute"))(&dom, 50, dev);  /* PCI domain */
		((attr_fn)sym(h, "cuDeviceGetAttribute"))(&bus, 33, dev);  /* PCI bus */
		((attr_fn)sym(h, "cuDeviceGetAttribute"))(&slot, 34, dev); /* PCI device */
		printf("%s{\"ordinal\": %d, \"device\": %d, \"uuid\": \"", i ? ", " : "", i, dev);
		for (int k = 0; k < 16; k++)
			printf("%02x", u[k]);
		printf("\", \"pci_domain\": %d, \"pci_bus\": %d, \"pci_device\": %d}", dom, bus, slot);
	}
	printf("], \"calls\": [");
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++)
		for (size_t t = 0; t < sizeof(times) / sizeof(times[0]); t++) {
			uint64_t out[2] = { 0, 0 };
			int rc = ((check_fn)((const uintptr_t *)itab)[1])(versions[v], times[t], out);

			printf("%s{\"version\": %u, \"time\": %" PRIu64 ", \"rc\": %d, \"result\": [%" PRIu64 ", %" PRIu64
			       "]}", v || t ? ", " : "", versions[v], times[t], rc, out[0], out[1]);
		}
	printf("]}\n");
	return 0;
}
