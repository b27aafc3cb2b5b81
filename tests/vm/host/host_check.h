/* Pass/fail reporting for the host test programs. */
#ifndef MEARAS_HOST_CHECK_H
#define MEARAS_HOST_CHECK_H

#include <stdio.h>

extern int host_failures;

#define HCHECK(cond, name, ...)                                              \
	do {                                                                 \
		if (cond) {                                                  \
			printf("PASS %s\n", name);                           \
		} else {                                                     \
			host_failures++;                                     \
			printf("FAIL %s: ", name);                           \
			printf(__VA_ARGS__);                                 \
			printf("\n");                                        \
		}                                                            \
		fflush(stdout);                                              \
	} while (0)

#endif
