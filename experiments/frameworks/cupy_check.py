#!/usr/bin/env python3
"""CuPy capability check for the framework suite: matmul, FFT, a RawKernel
and an ElementwiseKernel (both compiled by NVRTC), and the memory pool, each
checked against NumPy on the host. Prints one JSON verdict line (verdict.py);
exit 0 when every step passed.
  python3 cupy_check.py
"""
from __future__ import annotations

import sys
from typing import Any

from verdict import Verdict, run_check

TWICE = r'''
extern "C" __global__ void twice_plus(const float* x, float* y, float c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + c;
}
'''


def body(v: Verdict) -> None:
    import numpy as np

    cp: Any = None

    def load() -> str:
        nonlocal cp
        import cupy

        cp = cupy
        n = int(cp.cuda.runtime.getDeviceCount())
        assert n >= 1, f"getDeviceCount() = {n}"
        v.extra["cupy"] = str(cp.__version__)
        return f"cupy {cp.__version__}, {n} device(s)"

    v.step("import and devices", load, fatal=True)
    rng = np.random.default_rng(3)

    def matmul() -> str:
        a = rng.standard_normal((512, 384))
        b = rng.standard_normal((384, 256))
        got = cp.asnumpy(cp.asarray(a) @ cp.asarray(b))
        err = float(np.abs(got - a @ b).max())
        assert err < 1e-9, f"max error {err} against NumPy (float64)"
        return f"max error {err:.1e}"

    def fft() -> str:
        x = rng.standard_normal(4096) + 1j * rng.standard_normal(4096)
        got = cp.asnumpy(cp.fft.fft(cp.asarray(x)))
        err = float(np.abs(got - np.fft.fft(x)).max())
        assert err < 1e-8, f"max error {err} against numpy.fft"
        return f"max error {err:.1e}"

    def raw() -> str:
        n = 10000
        x = rng.standard_normal(n).astype(np.float32)
        k = cp.RawKernel(TWICE, "twice_plus")
        y = cp.empty(n, dtype=cp.float32)
        k(((n + 255) // 256,), (256,), (cp.asarray(x), y, np.float32(0.5), np.int32(n)))
        assert np.array_equal(cp.asnumpy(y), 2 * x + np.float32(0.5)), "RawKernel result differs"
        return "exact"

    def elementwise() -> str:
        k = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * y - 1.0f", "mearas_fma")
        x = rng.standard_normal(5000).astype(np.float32)
        y = rng.standard_normal(5000).astype(np.float32)
        got = cp.asnumpy(k(cp.asarray(x), cp.asarray(y)))
        err = float(np.abs(got - (x * y - np.float32(1))).max())
        assert err < 1e-5, f"max error {err}"
        return f"max error {err:.1e}"

    def pool() -> str:
        mp = cp.get_default_memory_pool()
        mp.free_all_blocks()
        base = int(mp.used_bytes())
        a = cp.zeros(64 << 20, dtype=cp.uint8)
        used = int(mp.used_bytes()) - base
        assert used >= 64 << 20, f"used_bytes grew by {used}"
        ptr = a.data.ptr
        del a
        b = cp.ones(64 << 20, dtype=cp.uint8)  # the freed block is reused
        reused = b.data.ptr == ptr
        assert int(b.sum()) == 64 << 20
        del b
        held = int(mp.total_bytes())
        mp.free_all_blocks()
        assert int(mp.total_bytes()) < held, "free_all_blocks gave nothing back"
        assert reused, "the pool did not reuse a freed block"
        return f"64 MiB block reused, {held >> 20} MiB held before free_all_blocks"

    v.step("matmul", matmul)
    v.step("fft", fft)
    v.step("rawkernel", raw)
    v.step("elementwise", elementwise)
    v.step("memory pool", pool)


if __name__ == "__main__":
    sys.exit(run_check(Verdict("cupy"), body))
