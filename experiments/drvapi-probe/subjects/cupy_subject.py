"""drvapi-probe subject: CuPy array maths and a RawKernel (NVRTC +
cuModuleLoadData), each checked. Exit 3 when cupy is missing."""
import sys

try:
    import cupy as cp
except Exception as exc:  # noqa: BLE001
    print(f"SKIP cupy: {exc}")
    sys.exit(3)

a = cp.arange(1 << 20, dtype=cp.float32)
total = float((a * 2).sum())
n = 1 << 20
assert abs(total - float(n) * (n - 1)) / (float(n) * (n - 1)) < 1e-5, total

k = cp.RawKernel(
    r"""
extern "C" __global__ void twice_plus(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
""",
    "twice_plus",
)
y = cp.empty_like(a)
k(((n + 255) // 256,), (256,), (a, y, cp.int32(n)))
assert bool(cp.all(y == a * 2 + 1)), "rawkernel"
print(f"PASS cupy {cp.__version__} runtime {cp.cuda.runtime.runtimeGetVersion()}")
