/* Minimal pass/fail reporting for the guest test programs. */
#ifndef MEARAS_GUEST_CHECK_H
#define MEARAS_GUEST_CHECK_H

#include <stdio.h>

extern int check_failures;

#define CHECK(cond, name, ...)                                               \
	do {                                                                 \
		if (cond) {                                                  \
			printf("GUEST-PASS %s\n", name);                     \
		} else {                                                     \
			check_failures++;                                    \
			printf("GUEST-FAIL %s: ", name);                     \
			printf(__VA_ARGS__);                                 \
			printf("\n");                                        \
		}                                                            \
		fflush(stdout);                                              \
	} while (0)

#endif
