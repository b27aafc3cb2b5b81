#!/usr/bin/env python3
"""Remote vGPU microbenchmarks against native CUDA and raw TCP, measured in
one run: writes experiments/results/remote.json (fields as microbench.json,
plus "network": how the two mearasd nodes were joined, e.g. "veth between
namespaces (busybox)" or "loopback") and prints a table with the issue's
targets."""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from compare import best_of, read_metrics


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--native", type=Path, nargs="+", required=True)
    ap.add_argument("--remote", type=Path, nargs="+", required=True)
    ap.add_argument("--raw-tcp-up", type=Path, nargs="+", required=True,
                    help="tcp_bench --buffer-mb 256, client node to remote node")
    ap.add_argument("--raw-tcp-down", type=Path, nargs="+", required=True,
                    help="tcp_bench --buffer-mb 256, remote node to client node")
    ap.add_argument("--raw-tcp-hot", type=Path, nargs="*", default=[],
                    help="tcp_bench from a 4 MiB buffer (cache-resident): reported only")
    ap.add_argument("--device", required=True)
    ap.add_argument("--network", default="loopback",
                    help="how the nodes were joined (scripts/gpu-remote.sh says)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    nat, _ = best_of(a.native)
    rem, _ = best_of(a.remote)
    up, _ = best_of(a.raw_tcp_up)
    down, _ = best_of(a.raw_tcp_down)
    hot, _ = best_of(a.raw_tcp_hot) if a.raw_tcp_hot else ({}, None)
    date = datetime.date.today().isoformat()
    rows: list[dict[str, object]] = []
    failed = 0

    def rec(metric: str, unit: str, base: float, val: float, ratio: float, target: str, good: bool,
            baseline: str) -> None:
        nonlocal failed
        rows.append({"metric": metric, "unit": unit, "native": base, "mearas": val, "ratio": round(ratio, 4),
                     "baseline": baseline, "network": a.network, "device": a.device,
                     "date": date})
        failed += 0 if good else 1
        print(f"{metric:24} {base:12.3f} {val:12.3f} {ratio:8.3f}  {target:22} {'ok' if good else 'MISSED'}")

    print(f"network: {a.network}")
    print(f"{'metric':24} {'baseline':>12} {'remote':>12} {'ratio':>8}  target")
    if "launch_rate" in rem and "launch_rate" in nat:
        b, v = nat["launch_rate"][1], rem["launch_rate"][1]
        rec("launch_rate", "launches/s", b, v, v / b, ">= 0.9 x native", v / b >= 0.9, "native")
    if "sync_roundtrip_us" in rem and "sync_roundtrip_us" in nat:
        b, v = nat["sync_roundtrip_us"][1], rem["sync_roundtrip_us"][1]
        rec("sync_roundtrip_us", "us", b, v, v / b, "<= native + 30 us", v <= b + 30, "native")
    for m, name, raw in (("h2d_pinned_gbps", "h2d_gbps", up), ("d2h_pinned_gbps", "d2h_gbps", down)):
        tcp = raw["raw_tcp_gbps"][1] if "raw_tcp_gbps" in raw else 0.0
        if m in rem and tcp:
            v = rem[m][1]
            rec(name, "GB/s", tcp, v, v / tcp, ">= 0.9 x raw TCP", v / tcp >= 0.9,
                "raw TCP between the same namespaces in the same run, same direction, "
                "256 MiB buffers like the copy")
    if "raw_tcp_gbps" in hot:
        t = hot["raw_tcp_gbps"][1]
        print(f"(raw TCP from a cache-resident 4 MiB buffer: {t:.3f} GB/s; "
              f"h2d/d2h against it: {rem.get('h2d_pinned_gbps', (0, 0))[1] / t:.3f}/"
              f"{rem.get('d2h_pinned_gbps', (0, 0))[1] / t:.3f})")
    if len(rows) < 4:
        print("remote microbenchmarks incomplete (see the run's output)", file=sys.stderr)
        failed += 4 - len(rows)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"{len(rows) - min(failed, len(rows))} passed, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
