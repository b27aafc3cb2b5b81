#!/usr/bin/env python3
"""Which runtime serves a `-cudart shared` program better through mearas:
mearas's own libcudart.so.13, or NVIDIA's libcudart.so.13 over mearas's
libcuda.so.1. Reads alternating microbench runs of the same binary (native,
ours, NVIDIA's over ours), takes each metric's best per side (compare.py's
best_of), and writes experiments/results/runtime-choice.json: per metric
{metric, unit, native, ours, theirs, ratio_ours, ratio_theirs, better,
device, date}, the ratios against native, `better` the side closer to or
past native. Prints a table and, last, how many metrics each side wins."""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from compare import LOWER_IS_BETTER, TARGETS, EXTRA_TARGETS, best_of


def better_side(metric: str, ours: float, theirs: float) -> str:
    if ours == theirs:
        return "tie"
    lower = metric in LOWER_IS_BETTER
    return "ours" if (ours < theirs) == lower else "theirs"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--native", type=Path, nargs="+", required=True)
    ap.add_argument("--ours", type=Path, nargs="+", required=True, help="mearas's libcudart.so.13")
    ap.add_argument("--theirs", type=Path, nargs="+", required=True, help="NVIDIA's libcudart.so.13 over mearas")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()
    native, dev = best_of(args.native)
    ours, _ = best_of(args.ours)
    theirs, _ = best_of(args.theirs)
    device = args.device or dev
    date = datetime.date.today().isoformat()
    records, wins = [], {"ours": 0, "theirs": 0, "tie": 0}
    print(f"{'metric':22} {'native':>12} {'ours':>12} {'theirs':>12} {'ours/n':>7} {'theirs/n':>8}  better")
    for name in [m for m in list(TARGETS) + list(EXTRA_TARGETS) if m in native]:
        if name not in ours or name not in theirs:
            print(f"{name:22} missing from a run", file=sys.stderr)
            return 1
        unit, nv = native[name]
        ov, tv = ours[name][1], theirs[name][1]
        side = better_side(name, ov, tv)
        wins[side] += 1
        records.append({"metric": name, "unit": unit, "native": nv, "ours": ov, "theirs": tv,
                        "ratio_ours": round(ov / nv, 4) if nv else None,
                        "ratio_theirs": round(tv / nv, 4) if nv else None,
                        "better": side, "device": device, "date": date})
        print(f"{name:22} {nv:12.3f} {ov:12.3f} {tv:12.3f} {ov / nv:7.3f} {tv / nv:8.3f}  {side}")
    if not records:
        print("no metrics in the native runs", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(records, indent=1) + "\n")
    print(f"runtime choice: ours better on {wins['ours']}, NVIDIA's over ours on {wins['theirs']}, "
          f"tied on {wins['tie']} of {len(records)} metrics")
    return 0


if __name__ == "__main__":
    sys.exit(main())
