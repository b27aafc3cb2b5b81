"""Sweep definitions (which assemblies and apps) and the loop that runs them."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .assembly import AssemblySpec, start_assembly
from .config import HarnessError, Paths, Unavailable, batch_option
from .netns import NETWORKS
from .records import Param, PointResult, progress
from .nodes import Node
from .runner import format_cpus, run_apps


@dataclass(frozen=True)
class RunOptions:
    device: str           # sim | cuda
    seconds: float        # per point
    apps: tuple[str, ...]
    native: bool          # add native baselines (needs a GPU)
    gpus: int             # physical GPUs of this machine
    pin: bool
    check: bool           # let the apps check their results (not on the sim)
    paths: Paths
    logs: Path


@dataclass(frozen=True)
class Point:
    params: dict[str, Param]
    app: str
    spec: AssemblySpec
    app_args: tuple[str, ...] = ()  # more options for each application process


def remote_gpu(opts: RunOptions) -> int:
    """Remote nodes use the second GPU when there is one (the client node has GPU 0)."""
    return 1 if opts.gpus > 1 else 0


def contention(opts: RunOptions) -> list[Point]:
    """Fig. 5/6a: 1..4 vGPUs on one physical GPU, one process each."""
    modes = ("mearas", "native") if opts.native else ("mearas",)
    return [Point({"vgpus_per_gpu": n, "mode": m}, app,
                  AssemblySpec((0,) * n, mode=m, device=opts.device))
            for app in opts.apps for m in modes for n in range(1, 5)]


def demo(opts: RunOptions) -> list[Point]:
    return [Point({"vgpus_per_gpu": n, "mode": "mearas"}, app,
                  AssemblySpec((0,) * n, device=opts.device))
            for app in opts.apps for n in (1, 2)]


def remote_share(opts: RunOptions) -> list[Point]:
    """Fig. 6b: a 4-vGPU assembly with 0..4 of its vGPUs remote."""
    r = remote_gpu(opts)
    return [Point({"remote": m, "local": 4 - m}, app,
                  AssemblySpec((0,) * (4 - m), (r,) * m, device=opts.device))
            for app in opts.apps for m in range(0, 5)]


def network_classes(opts: RunOptions) -> list[Point]:
    """One vGPU: local, then remote over each network class."""
    r = remote_gpu(opts)
    pts = [Point({"network": "local"}, app, AssemblySpec((0,), device=opts.device))
           for app in opts.apps]
    return pts + [Point({"network": net}, app, AssemblySpec((), (r,), network=net, device=opts.device))
                  for app in opts.apps for net in NETWORKS]


BATCH_SIZES = tuple(2 ** i for i in range(11))  # 1, 2, 4, ..., 1024
# launch-heavy: BlackScholes on 64 Ki options runs each kernel in about a
# microsecond on a current GPU, so the call path, not the GPU, sets the pace
BATCH_APP_ARGS = {"blackscholes": ("--size", "65536")}


def batch(opts: RunOptions) -> list[Point]:
    """One remote vGPU with the link's batch size varied, where mearasd exposes it."""
    opt = batch_option(opts.paths.mearasd) if opts.paths.mearasd.is_file() else None
    if opt is None:
        raise Unavailable("batch size: not available (mearasd --help shows no link batch-size "
                          "option such as --link-batch)")
    r = remote_gpu(opts)
    return [Point({"batch": b, "app_args": " ".join(BATCH_APP_ARGS.get(app, ()))}, app,
                  AssemblySpec((), (r,), device=opts.device, client_extra=(f"{opt}={b}",)),
                  BATCH_APP_ARGS.get(app, ()))
            for app in opts.apps for b in BATCH_SIZES]


SCALING_VGPUS = (1, 2, 4, 8)


def scaling(opts: RunOptions) -> list[Point]:
    """Issue 7: aggregate throughput against vGPU count, all vGPUs local on the
    client node (GPU i % gpus) versus mixed (1 local + n-1 remote nodes, one a
    vGPU, on GPU i % gpus)."""
    g = max(opts.gpus, 1)
    pts = []
    for app in opts.apps:
        for n in SCALING_VGPUS:
            pts.append(Point({"vgpus": n, "layout": "local"}, app,
                             AssemblySpec(tuple(i % g for i in range(n)), device=opts.device)))
            if n > 1:
                pts.append(Point({"vgpus": n, "layout": "mixed"}, app,
                                 AssemblySpec((0,), tuple(i % g for i in range(1, n)), device=opts.device)))
    return pts


SWEEPS: dict[str, Callable[[RunOptions], list[Point]]] = {
    "demo": demo, "contention": contention, "remote-share": remote_share,
    "network": network_classes, "batch": batch, "scaling": scaling,
}


def node_info(n: Node) -> dict[str, Any]:
    try:
        cpus = format_cpus(os.sched_getaffinity(n.pid))
    except OSError:
        cpus = "gone"
    return {"name": n.name, "pid": n.pid, "cpus": cpus, "netns": n.netns or "", "args": n.args,
            "env": n.env}


def node_complaints(nodes: list[Node], per_node: int = 3) -> list[str]:
    """The last warning and error lines of each node's log: what a failed
    point's nodes said, kept in the result where the logs may not be."""
    out = []
    for n in nodes:
        try:
            lines = n.log.read_text(errors="replace").splitlines()
        except OSError:
            continue
        said = [ln for ln in lines if ": error: " in ln or ": warning: " in ln][-per_node:]
        if said:
            out.append(f"node {n.name} said: " + " | ".join(said))
    return out


def run_point(sweep: str, index: int, pt: Point, opts: RunOptions) -> PointResult:
    workdir = opts.logs / sweep / f"p{index:03d}"
    workdir.mkdir(parents=True, exist_ok=True)
    res = PointResult(sweep, pt.params, pt.app, pt.spec.describe(), "ok")
    start = time.monotonic()
    try:
        program = opts.paths.app(pt.app)
        with start_assembly(pt.spec, opts.paths, workdir) as asm:
            res.procs = run_apps(asm, program, list(pt.app_args), seconds=opts.seconds, pin=opts.pin,
                                 workdir=workdir, timeout=opts.seconds * 4 + 120,
                                 check=opts.check, tag=pt.app)
            dead = [n.name for n in asm.nodes if not n.alive()]
            res.nodes = [node_info(n) for n in asm.nodes]
        bad = [f"vGPU {p.vgpu}: {p.error}" for p in res.procs if p.error]
        if dead:
            bad.append(f"node(s) {', '.join(dead)} died during the run (logs in {workdir})")
        if bad:
            bad.extend(node_complaints(asm.nodes))
            res.status, res.error = "failed", "; ".join(bad)
    except Unavailable as e:
        res.status, res.error = "unavailable", str(e)
    except HarnessError as e:
        res.status, res.error = "failed", str(e)
    res.wall_s = time.monotonic() - start
    return res


def run_sweep(sweep: str, points: list[Point], opts: RunOptions) -> list[PointResult]:
    results = []
    for i, pt in enumerate(points, 1):
        res = run_point(sweep, i, pt, opts)
        progress(res.progress_line(i, len(points)))
        results.append(res)
    return results
