"""Fig. 10: per-call latency of a synchronizing call (4-byte D2H cudaMemcpy),
natively, through a local vGPU and through a remote vGPU, with the network's
own round trip measured beside it. Totals are measured; the parts are derived
by difference (see breakdown())."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .assembly import AssemblySpec, start_assembly
from .config import HarnessError, Unavailable
from .netns import Topology, network, remote_addr
from .netprobe import tcp_rtt_us
from .nodes import free_port
from .records import progress
from .runner import run_apps
from .sweeps import RunOptions, remote_gpu


@dataclass
class LatencyPoint:
    config: str
    network: str
    status: str
    sync_roundtrip_us: float | None = None
    launch_rate: float | None = None
    tcp_rtt_us: float | None = None
    error: str = ""


def parse_metrics(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "METRIC":
            out[parts[1]] = float(parts[3])
    return out


def configs(opts: RunOptions) -> list[tuple[str, AssemblySpec]]:
    r = remote_gpu(opts)
    cfgs = [("native", AssemblySpec((0,), mode="native", device=opts.device))] if opts.native else []
    cfgs.append(("local", AssemblySpec((0,), device=opts.device)))
    for net in ("loopback", "veth", "veth-1gbit"):
        cfgs.append((f"remote-{net}", AssemblySpec((), (r,), network=net, device=opts.device)))
    return cfgs


def measure_network(net: str) -> float:
    cls = network(net)
    if not cls.netns:
        return tcp_rtt_us("127.0.0.1", free_port(), None, None)
    topo = Topology(1, cls.rate)
    topo.create()
    try:
        return tcp_rtt_us(remote_addr(0), 7700, topo.remote_ns(0), topo.client_ns)
    finally:
        topo.destroy()


def run_latency(opts: RunOptions) -> list[LatencyPoint]:
    cfgs = configs(opts)
    points = []
    for i, (name, spec) in enumerate(cfgs, 1):
        pt = LatencyPoint(name, spec.network if spec.remote_gpus else "-", "ok")
        workdir = opts.logs / "latency" / name
        workdir.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        try:
            program = opts.paths.app("microbench")
            with start_assembly(spec, opts.paths, workdir) as asm:
                [rec] = run_apps(asm, program, [], seconds=None, pin=opts.pin, workdir=workdir,
                                 timeout=300, tag="microbench", parse=False)
            if rec.error:
                raise HarnessError(rec.error)
            m = parse_metrics((workdir / "microbench-v0.out").read_text())
            if "sync_roundtrip_us" not in m:
                raise HarnessError("microbench printed no sync_roundtrip_us")
            pt.sync_roundtrip_us, pt.launch_rate = m["sync_roundtrip_us"], m.get("launch_rate")
            if spec.remote_gpus:
                pt.tcp_rtt_us = measure_network(spec.network)
        except Unavailable as e:
            pt.status, pt.error = "unavailable", str(e)
        except HarnessError as e:
            pt.status, pt.error = "failed", str(e)
        line = (f"sync round trip {pt.sync_roundtrip_us:.2f} us" if pt.status == "ok"
                else f"{pt.status.upper()} {pt.error}")
        progress(f"[{i}/{len(cfgs)}] latency {name}: {line} ({time.monotonic() - start:.1f} s)")
        points.append(pt)
    return points


PARTS = ("cuda", "client+marshalling+server", "network", "link+remote server")


def breakdown(points: list[LatencyPoint]) -> dict[str, dict[str, float]]:
    """Per configuration, the parts of one synchronizing call (us).
    cuda = native round trip (measured); client+marshalling+server = local -
    native (derived: the library, the rings and mearasd together, not split);
    network = 64-byte TCP round trip between the nodes (measured with Python,
    so an upper bound); link+remote server = remote - local - network (derived).
    Without a native point (sim) the local part holds the whole local round trip."""
    by = {p.config: p for p in points if p.status == "ok" and p.sync_roundtrip_us is not None}
    native = by["native"].sync_roundtrip_us if "native" in by else 0.0
    out: dict[str, dict[str, float]] = {}
    if "native" in by:
        out["native"] = {"cuda": native or 0.0}
    if "local" not in by:
        return out
    local = by["local"].sync_roundtrip_us or 0.0
    base = {"cuda": native or 0.0, "client+marshalling+server": local - (native or 0.0)}
    out["local"] = dict(base)
    for name, p in by.items():
        if name.startswith("remote-") and p.sync_roundtrip_us is not None:
            net = p.tcp_rtt_us or 0.0
            out[name] = {**base, "network": net,
                         "link+remote server": p.sync_roundtrip_us - local - net}
    return out


def write_latency(out: Path, points: list[LatencyPoint], info: dict[str, object]) -> tuple[Path, Path]:
    import csv
    import json
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / "latency.csv", out / "latency.json"
    fields = ["config", "network", "status", "sync_roundtrip_us", "launch_rate", "tcp_rtt_us", "error"]
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for p in points:
            w.writerow(p.__dict__)
    doc = {**info, "sweep": "latency", "points": [p.__dict__ for p in points],
           "breakdown_us": breakdown(points), "breakdown_note": breakdown.__doc__}
    json_path.write_text(json.dumps(doc, indent=1) + "\n")
    return csv_path, json_path
