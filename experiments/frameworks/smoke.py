"""Framework smoke steps: each prints `NAME: ok` or `NAME: FAILED <error>`.

Run natively and with mearas's libcuda.so.1 first on LD_LIBRARY_PATH; the
point is to see which step fails through mearas and with what error.
Usage: python3 smoke.py torch|cupy|jax
"""
from __future__ import annotations

import sys
import traceback
from typing import Callable


def step(name: str, fn: Callable[[], object]) -> bool:
    try:
        r = fn()
        print(f"{name}: ok {r if r is not None else ''}", flush=True)
        return True
    except Exception as e:  # the error text is the point of the probe
        msg = str(e).strip().splitlines()
        print(f"{name}: FAILED {type(e).__name__}: {msg[0] if msg else ''}", flush=True)
        traceback.print_exc(limit=3, file=sys.stderr)
        return False


def torch_steps() -> None:
    import torch

    if not step("torch.cuda.is_available", lambda: torch.cuda.is_available()):
        return
    step("torch.device_count", lambda: torch.cuda.device_count())
    step("torch.randn", lambda: float(torch.randn(4, device="cuda", generator=None).sum().cpu() * 0 + 1))

    def mm() -> str:
        g = torch.Generator().manual_seed(0)
        a = torch.randn(256, 256, generator=g)
        b = torch.randn(256, 256, generator=g)
        d = (a.cuda() @ b.cuda()).cpu() - a @ b
        return f"max err {d.abs().max().item():.1e}"

    step("torch.matmul", mm)

    def bf16() -> str:
        a = torch.ones(128, 128, device="cuda", dtype=torch.bfloat16)
        return f"{(a @ a).float().mean().item():.1f}"

    step("torch.bf16_matmul", bf16)

    def conv() -> str:
        x = torch.ones(2, 3, 16, 16, device="cuda")
        m = torch.nn.Conv2d(3, 4, 3, padding=1).cuda()
        return f"{tuple(m(x).shape)}"

    step("torch.conv2d(cudnn)", conv)

    def train() -> str:
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).cuda()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        x = torch.randn(32, 64, device="cuda")
        for _ in range(5):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = m(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return f"loss {loss.item():.4f}"

    step("torch.train_bf16", train)

    def graphs() -> str:
        s = torch.cuda.Stream()
        x = torch.zeros(8, device="cuda")
        with torch.cuda.stream(s):
            x += 1
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            x.add_(1)
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        return f"{x.sum().item():.0f}"

    step("torch.cuda_graphs", graphs)
    step("torch.compile", lambda: float(torch.compile(lambda t: (t * 2).sin().sum())(torch.ones(16, device="cuda")).item()))


def cupy_steps() -> None:
    import cupy as cp

    step("cupy.device_count", lambda: cp.cuda.runtime.getDeviceCount())
    step("cupy.matmul", lambda: float((cp.ones((64, 64)) @ cp.ones((64, 64))).sum()))
    step("cupy.fft", lambda: float(abs(cp.fft.fft(cp.ones(64))).sum()))
    k = "extern \"C\" __global__ void twice(float* x){x[threadIdx.x]*=2;}"
    def raw() -> float:
        x = cp.ones(32, dtype=cp.float32)
        cp.RawKernel(k, "twice")((1,), (32,), (x,))
        return float(x.sum())
    step("cupy.rawkernel", raw)
    step("cupy.elementwise", lambda: float(cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 3", "t3")(cp.ones(8, dtype=cp.float32)).sum()))


def jax_steps() -> None:
    import jax
    import jax.numpy as jnp

    step("jax.devices", lambda: str(jax.devices()))
    f = jax.jit(lambda a: (a @ a).sum())
    step("jax.jit_matmul", lambda: float(f(jnp.ones((64, 64)))))
    step("jax.grad", lambda: float(jax.grad(lambda a: (a @ a).sum())(jnp.ones((8, 8))).sum()))


if __name__ == "__main__":
    {"torch": torch_steps, "cupy": cupy_steps, "jax": jax_steps}[sys.argv[1]]()
