// Separate compilation: defines the __device__ function rdc_a.cu calls, and one kernel.
#include <cuda_runtime.h>

#include "expect_macros.h"

__device__ int rdc_add(int a, int b) { return a + b; }

extern "C" __global__ void rdc_k2(short s, float *f, unsigned char u) { f[u] = rdc_add(s, 1); }

struct P_k2 { short s; float *f; unsigned char u; };

static const struct expect_kernel table[] = {
	{ (const void *)rdc_k2, "rdc_k2", 3,
	  { EXPECT_FIELD(P_k2, s), EXPECT_FIELD(P_k2, f), EXPECT_FIELD(P_k2, u) },
	  (unsigned)(offsetof(P_k2, u) + 1) },
};

static void launch_all()
{
	P_k2 p;
	expect_fields((const void *)rdc_k2, p, offsetof(P_k2, u) + 1, [](P_k2 &m) {
		m.s = -5; m.f = (float *)0x4000; m.u = 200;
	});
	rdc_k2<<<1, 1>>>(p.s, p.f, p.u);
}

namespace {
struct registrar {
	registrar() { expect_register(table, 1, launch_all); }
} registrar_instance;
}
