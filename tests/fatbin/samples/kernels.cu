// Sample kernels with awkward parameter lists. Host side: the expected layout of
// each kernel, from a host-compiled mirror struct with the same members in the
// same order, and one launch of each kernel with distinctive argument values.
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

#include "expect_macros.h"

struct S3 { char a; short b; char c; };			// size 6, align 2
struct __align__(16) S16 { float x; double y; };	// size 16, align 16
struct Odd { char c; double d; char e; };		// size 24, align 8
struct __attribute__((packed)) Packed { char c; int i; };	// size 5, align 1
struct Empty {};					// size 1
struct Big { char data[5000]; };			// > 4 KiB
struct Huge { char data[20000]; };			// size needs more than 14 bits

__global__ void k_noparams() {}

__global__ void k_scalars(char c, short s, int i, long long ll, float f, double d,
			  unsigned char uc, bool b, int *p)
{
	if (p) *p = c + s + i + (int)ll + (int)f + (int)d + uc + b;
}

__global__ void k_structs(char c, S3 s3, short sh, S16 s16, Odd o, Packed pk, double d, Empty e)
{
	(void)e;
	if (c == 99) printf("%d %d %f %f %d %d %f\n", s3.b, sh, s16.y, o.d, o.e, pk.i, d);
}

__global__ void k_big(Big b, int n, int *out) { if (out) out[0] = b.data[n] + n; }

__global__ void k_huge(char c, Huge h, int tail, int *out) { if (out) out[0] = h.data[tail] + c; }

template <typename T, int N> __global__ void k_tmpl(T *a, T v, char tag)
{
	a[N] = v + tag;
}

extern "C" __global__ void k_c(float *x, int n, char tag) { x[n] = tag; }

namespace ns {
struct Functor { int scale; __device__ int operator()(int v) const { return v * scale; } };
template <typename F> __global__ void k_functor(F f, int *out, short s) { out[0] = f(s); }
}

struct P_noparams { char unused; };
struct P_scalars { char c; short s; int i; long long ll; float f; double d;
		   unsigned char uc; bool b; int *p; };
struct P_structs { char c; S3 s3; short sh; S16 s16; Odd o; Packed pk; double d; Empty e; };
struct P_big { Big b; int n; int *out; };
struct P_huge { char c; Huge h; int tail; int *out; };
template <typename T> struct P_tmpl { T *a; T v; char tag; };
struct P_c { float *x; int n; char tag; };
struct P_functor { ns::Functor f; int *out; short s; };

#define END(P, m) (unsigned)(offsetof(P, m) + sizeof(((P *)0)->m))

static const struct expect_kernel table[] = {
	{ (const void *)k_noparams, "k_noparams", 0, {}, 0 },
	{ (const void *)k_scalars, "k_scalars", 9,
	  { EXPECT_FIELD(P_scalars, c), EXPECT_FIELD(P_scalars, s), EXPECT_FIELD(P_scalars, i),
	    EXPECT_FIELD(P_scalars, ll), EXPECT_FIELD(P_scalars, f), EXPECT_FIELD(P_scalars, d),
	    EXPECT_FIELD(P_scalars, uc), EXPECT_FIELD(P_scalars, b), EXPECT_FIELD(P_scalars, p) },
	  END(P_scalars, p) },
	{ (const void *)k_structs, "k_structs", 8,
	  { EXPECT_FIELD(P_structs, c), EXPECT_FIELD(P_structs, s3), EXPECT_FIELD(P_structs, sh),
	    EXPECT_FIELD(P_structs, s16), EXPECT_FIELD(P_structs, o), EXPECT_FIELD(P_structs, pk),
	    EXPECT_FIELD(P_structs, d), EXPECT_FIELD(P_structs, e) },
	  END(P_structs, e) },
	{ (const void *)k_big, "k_big", 3,
	  { EXPECT_FIELD(P_big, b), EXPECT_FIELD(P_big, n), EXPECT_FIELD(P_big, out) },
	  END(P_big, out) },
	{ (const void *)k_huge, "k_huge", 4,
	  { EXPECT_FIELD(P_huge, c), EXPECT_FIELD(P_huge, h), EXPECT_FIELD(P_huge, tail),
	    EXPECT_FIELD(P_huge, out) },
	  END(P_huge, out) },
	{ (const void *)k_tmpl<float, 3>, "k_tmpl<float,3>", 3,
	  { EXPECT_FIELD(P_tmpl<float>, a), EXPECT_FIELD(P_tmpl<float>, v),
	    EXPECT_FIELD(P_tmpl<float>, tag) },
	  END(P_tmpl<float>, tag) },
	{ (const void *)k_tmpl<double, 1>, "k_tmpl<double,1>", 3,
	  { EXPECT_FIELD(P_tmpl<double>, a), EXPECT_FIELD(P_tmpl<double>, v),
	    EXPECT_FIELD(P_tmpl<double>, tag) },
	  END(P_tmpl<double>, tag) },
	{ (const void *)k_tmpl<short, 0>, "k_tmpl<short,0>", 3,
	  { EXPECT_FIELD(P_tmpl<short>, a), EXPECT_FIELD(P_tmpl<short>, v),
	    EXPECT_FIELD(P_tmpl<short>, tag) },
	  END(P_tmpl<short>, tag) },
	{ (const void *)k_c, "k_c", 3,
	  { EXPECT_FIELD(P_c, x), EXPECT_FIELD(P_c, n), EXPECT_FIELD(P_c, tag) },
	  END(P_c, tag) },
	{ (const void *)ns::k_functor<ns::Functor>, "ns::k_functor<Functor>", 3,
	  { EXPECT_FIELD(P_functor, f), EXPECT_FIELD(P_functor, out), EXPECT_FIELD(P_functor, s) },
	  END(P_functor, s) },
};

static void launch_all()
{
	int *dp = (int *)(uintptr_t)0x1000;
	float *fp = (float *)(uintptr_t)0x2000;

	expect_next_launch((const void *)k_noparams, nullptr, nullptr, 0);
	k_noparams<<<1, 1>>>();

	P_scalars ps;
	expect_fields((const void *)k_scalars, ps, END(P_scalars, p), [&](P_scalars &m) {
		m.c = 'x'; m.s = -1234; m.i = 0x12345678; m.ll = -0x123456789abcLL; m.f = 1.5f;
		m.d = -2.25; m.uc = 0xee; m.b = true; m.p = dp;
	});
	k_scalars<<<2, 32>>>(ps.c, ps.s, ps.i, ps.ll, ps.f, ps.d, ps.uc, ps.b, ps.p);

	P_structs pst;
	expect_fields((const void *)k_structs, pst, END(P_structs, e), [](P_structs &m) {
		m.c = 'c'; m.s3.a = 1; m.s3.b = 0x2233; m.s3.c = 4; m.sh = 0x1122;
		m.s16.x = 5.5f; m.s16.y = 6.75; m.o.c = 7; m.o.d = 8.5; m.o.e = 9;
		m.pk.c = 10; m.pk.i = 0x0b0c0d0e; m.d = 3.125;	// Empty has no value bytes
	});
	k_structs<<<1, 1>>>(pst.c, pst.s3, pst.sh, pst.s16, pst.o, pst.pk, pst.d, pst.e);

	static P_big pb;
	expect_fields((const void *)k_big, pb, END(P_big, out), [&](P_big &m) {
		for (unsigned i = 0; i < sizeof(m.b.data); i++) m.b.data[i] = (char)(i * 7);
		m.n = 4999; m.out = dp;
	});
	k_big<<<1, 1>>>(pb.b, pb.n, pb.out);

	static P_huge ph;
	expect_fields((const void *)k_huge, ph, END(P_huge, out), [&](P_huge &m) {
		for (unsigned i = 0; i < sizeof(m.h.data); i++) m.h.data[i] = (char)(i * 13 + 1);
		m.c = 'h'; m.tail = 19999; m.out = dp;
	});
	k_huge<<<1, 1>>>(ph.c, ph.h, ph.tail, ph.out);

	P_tmpl<float> tf;
	expect_fields((const void *)k_tmpl<float, 3>, tf, END(P_tmpl<float>, tag),
		      [&](P_tmpl<float> &m) { m.a = fp; m.v = 0.5f; m.tag = 't'; });
	k_tmpl<float, 3><<<1, 1>>>(tf.a, tf.v, tf.tag);

	P_tmpl<double> td;
	expect_fields((const void *)k_tmpl<double, 1>, td, END(P_tmpl<double>, tag),
		      [&](P_tmpl<double> &m) { m.a = (double *)fp; m.v = 0.25; m.tag = 'u'; });
	k_tmpl<double, 1><<<1, 1>>>(td.a, td.v, td.tag);

	P_tmpl<short> tsh;
	expect_fields((const void *)k_tmpl<short, 0>, tsh, END(P_tmpl<short>, tag),
		      [&](P_tmpl<short> &m) { m.a = (short *)fp; m.v = -7; m.tag = 'v'; });
	k_tmpl<short, 0><<<1, 1>>>(tsh.a, tsh.v, tsh.tag);

	// Through the public runtime API rather than <<<>>>.
	P_c pc;
	expect_fields((const void *)k_c, pc, END(P_c, tag),
		      [&](P_c &m) { m.x = fp; m.n = 77; m.tag = 'z'; });
	void *args[] = { &pc.x, &pc.n, &pc.tag };
	cudaLaunchKernel((const void *)k_c, dim3(1), dim3(1), args, 0, nullptr);

	P_functor pf;
	expect_fields((const void *)ns::k_functor<ns::Functor>, pf, END(P_functor, s),
		      [&](P_functor &m) { m.f.scale = 3; m.out = dp; m.s = 41; });
	ns::k_functor<<<1, 1>>>(pf.f, pf.out, pf.s);
}

namespace {
struct registrar {
	registrar() { expect_register(table, sizeof(table) / sizeof(table[0]), launch_all); }
} registrar_instance;
}
