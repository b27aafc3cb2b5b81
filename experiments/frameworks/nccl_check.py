#!/usr/bin/env python3
"""torch.distributed with NCCL across two devices of one node, for the
framework suite: this process starts two ranks (processes of its own, rank r on
cuda:r, rendezvous over loopback TCP), each does an all_reduce, a broadcast
and a barrier and prints its result; this process prints one JSON verdict line
(verdict.py) naming both ranks' pids and NCCL's warnings (NCCL_DEBUG=WARN: they
name the failing CUDA call). Exit 0 when both ranks passed.
  python3 nccl_check.py [--timeout S]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

from suitelib import free_port, last_json
from verdict import Verdict, one_line, run_check

WORLD = 2


def rank_main(rank: int, port: int, timeout: float) -> int:
    """One rank: prints one JSON line {"rank", "pid", "ok", "detail"|"error"}."""
    out: dict[str, Any] = {"rank": rank, "pid": os.getpid(), "ok": False}
    try:
        import datetime

        import torch
        import torch.distributed as dist

        dev = torch.device(f"cuda:{rank}")
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=WORLD, timeout=datetime.timedelta(seconds=timeout),
                                device_id=dev)
        x = torch.full((1 << 20,), float(rank + 1), device=dev)
        dist.all_reduce(x)
        want = float(sum(range(1, WORLD + 1)))
        assert bool((x == want).all()), f"all_reduce gave {x[0].item()}, want {want}"
        y = torch.arange(1000, device=dev, dtype=torch.float32) * (rank + 1)
        dist.broadcast(y, src=0)
        assert bool(torch.equal(y.cpu(), torch.arange(1000, dtype=torch.float32))), "broadcast differs"
        dist.barrier()
        dist.destroy_process_group()
        out.update(ok=True, detail=f"all_reduce {want}, broadcast exact")
    except Exception as e:  # the rank's error is its result
        import traceback

        traceback.print_exc()
        out["error"] = one_line(e)
    print(json.dumps(out), flush=True)
    return 0 if out["ok"] else 1


def body(v: Verdict, timeout: float) -> None:
    port = free_port()
    env = {**os.environ, "NCCL_DEBUG": os.environ.get("NCCL_DEBUG", "WARN")}
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", str(r), "--port", str(port),
                               "--timeout", str(timeout)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(WORLD)]
    v.extra["pids"] = [p.pid for p in procs]
    warnings: list[str] = []
    for r, p in enumerate(procs):
        try:
            so, se = p.communicate(timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            p.kill()
            so, se = p.communicate()
            se += f"\nrank {r}: killed after {timeout + 30:.0f} s"
        sys.stderr.write(se)
        warnings += [ln.strip() for ln in se.splitlines() if "NCCL WARN" in ln or "not supported" in ln]
        res = last_json(so) or {"ok": False, "error": f"no result (exit {p.returncode}): {se.strip()[-200:]}"}

        if res.get("ok"):
            v.steps.append({"name": f"rank {r}", "ok": True, "detail": res.get("detail")})
        else:
            v.steps.append({"name": f"rank {r}", "ok": False, "error": str(res.get("error"))})
    v.extra["nccl_warnings"] = warnings[:20]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds for the collectives (default 60)")
    a = ap.parse_args(argv)
    if a.rank is not None:
        return rank_main(a.rank, a.port, a.timeout)
    return run_check(Verdict("torch_nccl"), lambda v: body(v, a.timeout))


if __name__ == "__main__":
    sys.exit(main())
