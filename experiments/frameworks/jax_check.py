#!/usr/bin/env python3
"""JAX capability check for the framework suite: a jitted matmul and its
gradient on the CUDA backend (JAX_PLATFORMS=cuda: no silent fall back to the
CPU), with XLA's command buffers (CUDA graphs) on for every kind of command
that can use them and no minimum graph size. Prints one JSON verdict line
(verdict.py); exit 0 when every step passed.
  python3 jax_check.py [--platform cuda|cpu]      (cpu: for tests only)
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from verdict import Verdict, run_check

# XLA's flags: command buffers for fusions, cuBLAS(Lt) and custom calls, and
# graphs of any size (the default would leave a graph this small uncaptured)
COMMAND_BUFFER_FLAGS = ("--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL "
                        "--xla_gpu_graph_min_graph_size=1")


def set_env(platform: str) -> str:
    os.environ["JAX_PLATFORMS"] = platform
    if platform == "cuda":
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} {COMMAND_BUFFER_FLAGS}".strip()
    return os.environ.get("XLA_FLAGS", "")


def body(v: Verdict, platform: str) -> None:
    import numpy as np

    v.extra["xla_flags"] = set_env(platform)
    jax: Any = None
    jnp: Any = None

    def load() -> str:
        nonlocal jax, jnp
        import jax as j
        import jax.numpy as jn

        jax, jnp = j, jn
        devs = jax.devices()
        want = "gpu" if platform == "cuda" else "cpu"
        assert devs and devs[0].platform == want, f"devices {devs}: not on {want}"
        v.extra["jax"] = str(jax.__version__)
        return f"jax {jax.__version__}: {devs}"

    v.step("import and devices", load, fatal=True)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((256, 128)).astype(np.float32)
    b = rng.standard_normal((128, 64)).astype(np.float32)

    def matmul() -> str:
        f = jax.jit(lambda x, y: jnp.matmul(x, y, precision="highest"))
        for _ in range(3):  # replays of the compiled executable (its command buffer)
            got = np.asarray(f(a, b))
        err = float(np.abs(got - a @ b).max())
        assert err < 1e-3, f"max error {err} against NumPy"
        return f"max error {err:.1e}"

    def grad() -> str:
        # d/dx sum(x @ y) = ones @ y^T
        g = jax.jit(jax.grad(lambda x, y: jnp.matmul(x, y, precision="highest").sum()))
        for _ in range(3):
            got = np.asarray(g(a, b))
        want = np.ones((256, 64), np.float32) @ b.T
        err = float(np.abs(got - want).max())
        assert err < 1e-3, f"max error {err} against the analytic gradient"
        return f"max error {err:.1e}"

    v.step("jit matmul", matmul)
    v.step("jit grad", grad)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", choices=["cuda", "cpu"], default="cuda")
    a = ap.parse_args(argv)
    return run_check(Verdict("jax"), lambda v: body(v, a.platform))


if __name__ == "__main__":
    sys.exit(main())
