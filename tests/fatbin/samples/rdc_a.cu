// Separate compilation: kernels here call a __device__ function of rdc_b.cu.
#include <cuda_runtime.h>

#include "expect_macros.h"

__device__ int rdc_add(int a, int b);

struct Pair { char c; double d; };

__global__ void rdc_k1(int *out, Pair p, short s) { *out = rdc_add((int)p.d, p.c + s); }

struct P_k1 { int *out; Pair p; short s; };

static const struct expect_kernel table[] = {
	{ (const void *)rdc_k1, "rdc_k1", 3,
	  { EXPECT_FIELD(P_k1, out), EXPECT_FIELD(P_k1, p), EXPECT_FIELD(P_k1, s) },
	  (unsigned)(offsetof(P_k1, s) + sizeof(short)) },
};

static void launch_all()
{
	P_k1 p;
	expect_fields((const void *)rdc_k1, p, offsetof(P_k1, s) + sizeof(short), [](P_k1 &m) {
		m.out = (int *)0x3000; m.p.c = 'p'; m.p.d = 1e10; m.s = 300;
	});
	rdc_k1<<<1, 1>>>(p.out, p.p, p.s);
}

namespace {
struct registrar {
	registrar() { expect_register(table, 1, launch_all); }
} registrar_instance;
}
