/* Shared between the fake driver (fakecuda.c) and the CPU test
 * (probe_test.c): UUIDs, slot signatures and the values the fake returns. */
#ifndef FAKE_API_H
#define FAKE_API_H

#include <stdint.h>

#define FAKE_DRIVER_VERSION 13000
#define FAKE_DEVICE_COUNT 3
#define FAKE_ERR_INVALID_DEVICE 101
#define FAKE_ERR_NOT_FOUND 500

typedef struct {
    unsigned char bytes[16];
} fake_uuid;

/* A sized table: slot 0 = 6 * 8, five function slots. */
#define UUID_PLAIN {{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xf0, 0x01}}
/* Header-less, NULL-terminated: the context-local-storage UUID. */
#define UUID_CLS {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93}}
/* The two tables whose addresses cudart hashes: patched in place. */
#define UUID_CUDART {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}}
#define UUID_INTEG {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2}}
/* Composite: header says 3 slots, more follow (size word, function). */
#define UUID_COMP {{0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9}}
/* Not known to the fake: FAKE_ERR_NOT_FOUND. */
#define UUID_UNKNOWN {{0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee}}

struct fake_pair {
    uint64_t a, b;
};

typedef int (*plain1_fn)(uint64_t *out, uint64_t a);                 /* *out=3a+1, ret 0x11 */
typedef int (*plain2_fn)(int, int, int, int, int, int, int, int, uint64_t *out); /* stack args */
typedef double (*plain3_fn)(double x, double y, uint64_t *out);      /* xmm in/out */
typedef int (*plain4_fn)(uint64_t *out, int n, ...);                 /* varargs doubles */
typedef struct fake_pair (*plain5_fn)(uint64_t a, uint64_t b);       /* rax:rdx */

typedef int (*cls_put_fn)(void *ctx, void *key, void *val, void (*dtor)(void *, void *, void *));
typedef int (*cls_del_fn)(void *ctx, void *key);
typedef int (*cls_get_fn)(void **out, void *ctx, void *key);

typedef int (*cudart1_fn)(void **out, int dev); /* *out = 0xc0ffee00 + dev */
typedef int (*cudart2_fn)(uint32_t *out);       /* *out = 0xcafe, ret 0 */
typedef int (*integ1_fn)(unsigned version, uint64_t ts, uint64_t res[2]);
typedef int (*integ2_fn)(void *);
typedef int (*comp_fn)(uint64_t *out);

#endif
