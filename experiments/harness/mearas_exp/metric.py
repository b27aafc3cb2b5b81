"""The acceptance metrics: aggregate throughput of an assembly of 1 local +
1 remote vGPU (two GPUs, two nodes) over that of one local vGPU."""
from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from .assembly import AssemblySpec
from .config import HarnessError
from .records import PointResult
from .sweeps import Point, RunOptions

METRIC_APPS = {"binomialoptions": "binomial_2gpu_speedup",
               "blackscholes": "blackscholes_2gpu_speedup"}


def assembly_points(opts: RunOptions) -> list[Point]:
    if opts.gpus < 2 and opts.device == "cuda":
        raise HarnessError(f"the assembly metric needs 2 GPUs, this machine has {opts.gpus}")
    pts = []
    for app in METRIC_APPS:
        pts.append(Point({"assembly": "1 local"}, app, AssemblySpec((0,), device=opts.device)))
        pts.append(Point({"assembly": "1 local + 1 remote"}, app,
                         AssemblySpec((0,), (1,), device=opts.device)))
    return pts


def metric_records(results: list[PointResult], device: str) -> list[dict[str, Any]]:
    """One record per app; raises when a point of the pair did not run."""
    records = []
    date = datetime.date.today().isoformat()
    for app, metric in METRIC_APPS.items():
        pair = [r for r in results if r.app == app]
        if len(pair) != 2 or any(r.status != "ok" for r in pair):
            why = "; ".join(f"{r.params['assembly']}: {r.status} {r.error}" for r in pair)
            raise HarnessError(f"{metric}: cannot compute ({why})")
        base, both = (r.aggregate()["throughput"] for r in pair)
        assert isinstance(base, float) and isinstance(both, float)
        if base <= 0:
            raise HarnessError(f"{metric}: baseline throughput is {base}")
        records.append({"metric": metric, "unit": f"{pair[0].aggregate()['unit']} (aggregate)",
                        "baseline": base, "mearas": both, "ratio": round(both / base, 4),
                        "device": device, "date": date})
    return records


def _write_records(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1) + "\n")
    return path


def write_metric(out: Path, records: list[dict[str, Any]]) -> Path:
    return _write_records(out / "assembly.json", records)


SCALING_APPS = {"binomialoptions": "binomial", "blackscholes": "blackscholes"}


def scaling_records(results: list[PointResult], device: str) -> list[dict[str, Any]]:
    """Efficiency at the largest vGPU count: (aggregate / one local vGPU's) / n,
    for the mixed and the all-local layout; records as in assembly.json."""
    records = []
    date = datetime.date.today().isoformat()
    for app, short in SCALING_APPS.items():
        ok = [r for r in results if r.app == app and r.status == "ok"]
        base = [r for r in ok if r.params["vgpus"] == 1]
        if not base:
            continue
        b = base[0].aggregate()["throughput"]
        assert isinstance(b, float)
        if b <= 0:
            continue
        top = max(int(r.params["vgpus"]) for r in ok)
        for r in ok:
            if r.params["vgpus"] != top or top == 1:
                continue
            agg = r.aggregate()["throughput"]
            assert isinstance(agg, float)
            layout = str(r.params["layout"])
            metric = f"{short}_{top}vgpu_efficiency" + ("" if layout == "mixed" else "_local")
            records.append({"metric": metric, "unit": f"{r.aggregate()['unit']} (aggregate)",
                            "baseline": b * top, "mearas": agg, "ratio": round(agg / b / top, 4),
                            "device": device, "date": date})
    if not records:
        raise HarnessError("scaling: no ok points to compute efficiencies from")
    return records


def write_scaling(out: Path, records: list[dict[str, Any]]) -> Path:
    return _write_records(out / "scaling.json", records)
