#!/usr/bin/env python3
"""Remote vGPU microbenchmarks against native CUDA and raw TCP, measured in
one run: writes experiments/results/remote.json (fields as microbench.json,
plus "network": how the two mearasd nodes were joined, e.g. "veth between
namespaces (busybox)" or "loopback", and "transport": tls where the link was
encrypted, tcp where not) and prints a table with the issue's targets. With
iperf3's JSON outputs (scripts/gpu-remote.sh), also the remote copies against
iperf3 over the same path: *_vs_iperf3 with one stream, *_vs_iperf3_multi with
as many streams as the link used ("streams"); where iperf3 did not run, the
record has no baseline figure and says why ("error")."""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import NamedTuple

from compare import best_of, read_metrics, write_results


class Yardstick(NamedTuple):
    """Best iperf3 figure of several runs, or why there is none."""
    gbps: float | None
    streams: int | None
    version: str
    seconds: float | None
    error: str


def read_iperf3(path: Path) -> Yardstick:
    """One iperf3 -J output (bytes received per second, as the copies count
    them: GB = 1e9 bytes), or the line scripts/gpu-remote.sh wrote instead."""
    try:
        text = path.read_text()
    except OSError as e:
        return Yardstick(None, None, "", None, f"{path.name}: {e.strerror}")
    try:
        doc = json.loads(text)
    except ValueError:
        return Yardstick(None, None, "", None, text.strip().splitlines()[0] if text.strip() else f"{path.name} is empty")
    if not isinstance(doc, dict):
        return Yardstick(None, None, "", None, f"{path.name}: not iperf3's JSON")
    if doc.get("error"):
        return Yardstick(None, None, "", None, f"iperf3: {doc['error']}")
    try:
        start, end = doc["start"], doc["end"]
        bps = float(end["sum_received"]["bits_per_second"])
        return Yardstick(round(bps / 8e9, 6), int(start["test_start"]["num_streams"]), str(start.get("version", "iperf3")),
                         float(start["test_start"]["duration"]), "")
    except (KeyError, TypeError, ValueError):
        return Yardstick(None, None, "", None, f"{path.name}: no result in iperf3's JSON")


def best_iperf3(paths: list[Path]) -> Yardstick:
    runs = [read_iperf3(p) for p in paths]
    good = [r for r in runs if r.gbps is not None]
    if good:
        return max(good, key=lambda r: r.gbps or 0.0)
    return runs[0] if runs else Yardstick(None, None, "", None, "iperf3 not run (no output given)")


def link_streams(paths: list[Path]) -> int | None:
    """Most TCP connections the link used at once (link_streams.py)."""
    seen = [int(m["link_streams"][1]) for m in (read_metrics(p)[0] for p in paths) if "link_streams" in m]
    return max(seen) if seen and max(seen) > 0 else None


class Loopback(NamedTuple):
    """Issue 15's latency measure (scripts/remote-latency.sh's table): the
    medians of the native and the remote round trip in one run, or why not."""
    native: float | None
    remote: float | None
    error: str


def loopback_latency(path: Path, mode: str) -> Loopback:
    """The native row and the "remote, loopback, MODE" row of
    scripts/remote-latency.sh's table (MODE: encrypted or unencrypted)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        return Loopback(None, None, f"{path.name}: {e.strerror}")
    native = remote = None
    for line in lines:
        parts = line.split()
        try:
            if len(parts) >= 2 and parts[0] == "native":
                native = float(parts[1])
            elif line.startswith(f"remote, loopback, {mode} "):
                remote = float(line[len(f"remote, loopback, {mode} "):].split()[0])
        except ValueError:
            continue
    if native is None or remote is None:
        last = lines[-1].strip() if lines else f"{path.name} is empty"
        return Loopback(None, None, f"scripts/remote-latency.sh gave no {'native' if native is None else mode} "
                                    f"figure: {last}")
    return Loopback(native, remote, "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--native", type=Path, nargs="+", required=True)
    ap.add_argument("--remote", type=Path, nargs="+", required=True)
    ap.add_argument("--raw-tcp-up", type=Path, nargs="+", required=True,
                    help="tcp_bench --buffer-mb 256, client node to remote node")
    ap.add_argument("--raw-tcp-down", type=Path, nargs="+", required=True,
                    help="tcp_bench --buffer-mb 256, remote node to client node")
    # outputs a run may go without
    for flag, what in (
            ("--raw-tcp-hot", "tcp_bench from a 4 MiB buffer (cache-resident): reported only"),
            ("--iperf3-up", "iperf3 -J, one stream, client node to remote node"),
            ("--iperf3-down", "iperf3 -J -R, one stream, remote node to client node"),
            ("--iperf3-up-multi", "iperf3 -J -P N, N = the link's streams, client node to remote node"),
            ("--iperf3-down-multi", "iperf3 -J -R -P N, remote node to client node"),
            ("--link-streams", "link_streams.py outputs of the remote runs")):
        ap.add_argument(flag, type=Path, nargs="*", default=[], help=what)
    ap.add_argument("--transport", choices=("tcp", "tls"), required=True,
                    help="the link of the remote runs: tls (encrypted) or tcp (clear)")
    ap.add_argument("--device", required=True)
    ap.add_argument("--network", default="loopback",
                    help="how the nodes were joined (scripts/gpu-remote.sh says)")
    ap.add_argument("--loopback-latency", type=Path,
                    help="scripts/remote-latency.sh's table: issue 15's round trip as the issue measures it (two "
                         "mearasd over loopback TCP, native in the same run); with it, the round trip over "
                         "--network is reported beside it, not held to the target")
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

    def rec(metric: str, unit: str, base: float | None, val: float | None, ratio: float | None, target: str,
            good: bool | None, baseline: str, **extra: object) -> None:
        """One record; good None: reported beside a target, not held to one (never failed)."""
        nonlocal failed
        network = str(extra.pop("network", a.network))
        rows.append({"metric": metric, "unit": unit, "native": base, "mearas": val,
                     "ratio": None if ratio is None else round(ratio, 4), "baseline": baseline, **extra,
                     "transport": a.transport, "network": network, "device": a.device, "date": date})
        failed += 0 if good is None or good else 1
        if base is None or ratio is None or val is None:
            shown = "-" if val is None else f"{val:.3f}"
            print(f"{metric:28} {'-':>12} {shown:>12} {'-':>8}  {target:22} NOT MEASURED: {extra.get('error')}")
        else:
            verdict = "reported" if good is None else "ok" if good else "MISSED"
            print(f"{metric:28} {base:12.3f} {val:12.3f} {ratio:8.3f}  {target:22} {verdict}")

    print(f"network: {a.network}")
    print(f"{'metric':28} {'baseline':>12} {'remote':>12} {'ratio':>8}  target")
    if "launch_rate" in rem and "launch_rate" in nat:
        b, v = nat["launch_rate"][1], rem["launch_rate"][1]
        rec("launch_rate", "launches/s", b, v, v / b, ">= 0.9 x native", v / b >= 0.9, "native")
    lb = loopback_latency(a.loopback_latency, "encrypted" if a.transport == "tls" else "unencrypted") \
        if a.loopback_latency else None
    if "sync_roundtrip_us" in rem and "sync_roundtrip_us" in nat:
        b, v = nat["sync_roundtrip_us"][1], rem["sync_roundtrip_us"][1]
        # issue 15's target for the synchronous 4-byte D2H copy: measured as the
        # issue does (over loopback) where that figure is given, and this path's
        # round trip (e.g. veth between namespaces) reported beside it
        if lb is None:
            rec("sync_roundtrip_us", "us", b, v, v / b, "<= native + 15 us", v <= b + 15, "native")
        else:
            rec("sync_roundtrip_us", "us", b, v, v / b, f"reported (+{v - b:.1f} us)", None, "native",
                note="reported: issue 15's target is measured over loopback (sync_roundtrip_loopback_us)")
    if lb is not None:
        what = ("native, same run: scripts/remote-latency.sh, the median of 3 runs' medians of microbench "
                "--only sync_roundtrip each, native then remote")
        network = (f"loopback TCP, two mearasd in the host's namespace (issue 15's measure); link "
                   f"{'encrypted' if a.transport == 'tls' else 'UNENCRYPTED'}")
        if lb.native is not None and lb.remote is not None:
            rec("sync_roundtrip_loopback_us", "us", lb.native, lb.remote, lb.remote / lb.native,
                "<= native + 15 us", lb.remote <= lb.native + 15, what, network=network)
        else:
            rec("sync_roundtrip_loopback_us", "us", None, None, None, "<= native + 15 us", False, what,
                network=network, error=lb.error)
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
    core = len(rows)
    # the standard yardstick: iperf3 over the same path in the same run. It
    # sends clear TCP; with transport tls the link also encrypts, so the ratio
    # includes TLS's cost (remote-encryption-off.json: the link in clear too)
    streams = link_streams(a.link_streams)
    link = "encrypted link (TLS)" if a.transport == "tls" else "link in clear (no encryption)"
    if a.iperf3_up or a.iperf3_down:
        one = {"up": best_iperf3(a.iperf3_up), "down": best_iperf3(a.iperf3_down)}
        multi = {"up": best_iperf3(a.iperf3_up_multi), "down": best_iperf3(a.iperf3_down_multi)}
        for m, name, way, multiple in (
                ("h2d_pinned_gbps", "h2d_gbps_vs_iperf3", "up", False),
                ("d2h_pinned_gbps", "d2h_gbps_vs_iperf3", "down", False),
                ("h2d_pageable_gbps", "h2d_gbps_pageable_vs_iperf3", "up", False),
                ("d2h_pageable_gbps", "d2h_gbps_pageable_vs_iperf3", "down", False),
                ("h2d_pinned_gbps", "h2d_gbps_vs_iperf3_multi", "up", True),
                ("d2h_pinned_gbps", "d2h_gbps_vs_iperf3_multi", "down", True)):
            if m not in rem:
                continue
            y = multi[way] if multiple else one[way]
            error = y.error
            if multiple and not error:
                if streams is None:
                    error = "the link's TCP connections were not counted (link_streams.py)"
                elif y.streams != streams:
                    error = f"iperf3 ran with {y.streams} streams, the link used {streams}"
            bound = 0.9 if multiple else 0.95
            v = rem[m][1]
            n = streams if multiple else 1
            what = (f"{y.version or 'iperf3'}, {n if n else '?'} stream(s), plain TCP (iperf3 does not encrypt; "
                    f"mearas: {link}), {y.seconds or 0:g} s, between the same namespaces and addresses as the "
                    f"link, same direction, same run; mearas: 256 MiB {'pinned' if 'pinned' in m else 'pageable'}"
                    " copies")
            extra: dict[str, object] = {"streams": n}
            if error:
                extra["error"] = error
            g = y.gbps if not error else None
            rec(name, "GB/s", g, v, v / g if g else None, f">= {bound} x iperf3", bool(g) and v / (g or 1) >= bound,
                what, **extra)
    if core < 4:
        print("remote microbenchmarks incomplete (see the run's output)", file=sys.stderr)
        failed += 4 - core
    write_results(a.out, rows, len(rows) - min(failed, len(rows)), failed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
