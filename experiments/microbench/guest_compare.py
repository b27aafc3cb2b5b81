#!/usr/bin/env python3
"""Combine native microbench runs with runs inside a VM guest (through mearas'
VM transport) into experiments/results/guest.json, in microbench.json's
record format ("mearas" holds the guest's value) plus a "note" and a "vgpu"
field ("local": runs on a vGPU of the node serving the VM; "remote": runs on
a vGPU that node forwards to another mearasd, --remote-guest), and add the
host-side time per synchronizing call that mearasd's VM worker logged (local
vGPU). Prints a table; exits non-zero when a value is missing."""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path
from typing import Any

from compare import LOWER_IS_BETTER, best_of

METRICS = ["sync_roundtrip_us", "sync_roundtrip_mean_us", "launch_rate", "h2d_pinned_gbps",
           "d2h_pinned_gbps", "h2d_pageable_gbps", "d2h_pageable_gbps"]
TCG_NOTE = ("guest is a QEMU TCG (emulated CPU, no KVM) VM: the guest-side CPU work of every call "
            "(runtime library, pageable staging copies, timing) is emulated and slow, so these "
            "ratios include emulation costs a KVM guest would not have")
# written by host-backend/vm/vm_slot.c when a slot stops
SLOT_LINE = re.compile(r"VM (\S+) slot (\d+) vGPU 0: (\d+) records served, (\d+) synchronizing in "
                       r"([0-9.]+) us of host time each")


def sync_run_report(log: Path, min_calls: int) -> tuple[int, float] | None:
    """(calls, host us per call) of the first guest process that made at least
    min_calls synchronizing calls: tests/vm-cuda/guest/suite.sh runs the
    sync-only microbench right after a short warm-up, before anything else."""
    for line in log.read_text(errors="replace").splitlines():
        m = SLOT_LINE.search(line)
        if m and int(m.group(4)) >= min_calls:
            return int(m.group(4)), float(m.group(5))
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--native", type=Path, nargs="+", required=True, help="native runs")
    ap.add_argument("--guest", type=Path, nargs="+", required=True,
                    help="runs inside the guest on a local vGPU")
    ap.add_argument("--remote-guest", type=Path, nargs="+", default=[],
                    help="runs inside the guest on a remote vGPU (records with \"vgpu\": \"remote\")")
    ap.add_argument("--remote-note", default="", help="added to the remote records' note")
    ap.add_argument("--mearasd-log", type=Path, required=True, help="log of mearasd --vm")
    ap.add_argument("--min-sync-calls", type=int, default=3000,
                    help="synchronizing calls of the sync-only run at least (it makes 3000)")
    ap.add_argument("--device", default="unknown")
    ap.add_argument("--note", default="", help="added to every record's note")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    native, _ = best_of(args.native)
    date = datetime.date.today().isoformat()
    note = TCG_NOTE + (f"; {args.note}" if args.note else "")
    records: list[dict[str, Any]] = []
    missing = 0
    sets = [("local", args.guest, note)]
    if args.remote_guest:
        sets.append(("remote", args.remote_guest, note + (f"; {args.remote_note}" if args.remote_note else "")))
    label = "" if len(sets) == 1 else " (vgpu)"
    w = 24 if not label else 31
    print(f"{'metric' + label:{w}} {'native':>12} {'guest':>12} {'guest/native':>12}")
    for vgpu, runs, vnote in sets:
        guest, _ = best_of(runs)
        for name in METRICS:
            nv = native.get(name)
            gv = guest.get(name)
            unit = (nv or gv or ("?", 0.0))[0]
            ratio = round(gv[1] / nv[1], 4) if nv and gv and nv[1] else None
            records.append({"metric": name, "unit": unit, "native": nv[1] if nv else None,
                            "mearas": gv[1] if gv else None, "ratio": ratio, "device": args.device,
                            "date": date, "vgpu": vgpu,
                            "note": vnote + ("; lower is better" if name in LOWER_IS_BETTER
                                             or name.endswith("_us") else "")})
            missing += nv is None or gv is None
            shown = name + (f" ({vgpu})" if label else "")
            print(f"{shown:{w}} {fmt(nv[1] if nv else None):>12} {fmt(gv[1] if gv else None):>12} {fmt(ratio):>12}")
    report = sync_run_report(args.mearasd_log, args.min_sync_calls)
    host_us = None
    if report is None:
        print(f"host_us_per_sync_call: no slot report with >= {args.min_sync_calls} synchronizing "
              "calls in the mearasd log", file=sys.stderr)
        missing += 1
    else:
        host_us = report[1]
    records.append({"metric": "host_us_per_sync_call", "unit": "us", "native": None, "mearas": host_us,
                    "ratio": None, "device": args.device, "date": date, "vgpu": "local",
                    "sync_calls": report[0] if report else None,
                    "note": "mean host time (mearasd VM worker) from taking a synchronizing record off "
                            "the ring to posting its completion, device time included, over the guest's "
                            "sync-only microbench run; the rest of sync_roundtrip_mean_us is guest "
                            "(TCG) and doorbell/interrupt time"})
    print(f"{'host_us_per_sync_call':{w}} {'-':>12} {fmt(host_us):>12} {'-':>12}"
          + (f"  ({report[0]} calls)" if report else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(records, indent=1) + "\n")
    print(f"{len(records) - missing} complete, {missing} incomplete")
    return 1 if missing else 0


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


if __name__ == "__main__":
    sys.exit(main())
