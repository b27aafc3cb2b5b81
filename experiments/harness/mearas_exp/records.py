"""Point results, their aggregate, and the CSV + JSON files of a sweep."""
from __future__ import annotations

import csv
import datetime
import json
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runner import ProcRecord

Param = str | int | float


@dataclass
class PointResult:
    sweep: str
    params: dict[str, Param]
    app: str
    assembly: str
    status: str  # ok | failed | unavailable
    error: str = ""
    procs: list[ProcRecord] = field(default_factory=list)
    wall_s: float = 0.0
    nodes: list[dict[str, Any]] = field(default_factory=list)  # mearasd processes and their CPUs

    def aggregate(self) -> dict[str, float | str | None]:
        """Sum over the vGPUs (each ran the same app concurrently for the same time)."""
        done = [p.result for p in self.procs if p.result is not None]
        if not done or self.status != "ok":
            return {"throughput": None, "unit": "", "kernels_per_s": None, "gflops": None}
        kps = [r.kernels_per_s for r in done]
        gfl = [r.gflops for r in done]
        return {"throughput": sum(r.throughput for r in done), "unit": done[0].unit,
                "kernels_per_s": sum(k for k in kps if k is not None) if any(
                    k is not None for k in kps) else None,
                "gflops": sum(g for g in gfl if g is not None) if any(
                    g is not None for g in gfl) else None}

    def progress_line(self, index: int, total: int) -> str:
        params = " ".join(f"{k}={v}" for k, v in self.params.items())
        head = f"[{index}/{total}] {self.sweep} {params} app={self.app}: "
        if self.status != "ok":
            return head + f"{self.status.upper()} {self.error}"
        agg = self.aggregate()
        return head + (f"aggregate {agg['throughput']:.4g} {agg['unit']} over {len(self.procs)} "
                       f"process(es) [{self.assembly}] {self.wall_s:.1f} s")


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _proc_row(p: ProcRecord) -> dict[str, Any]:
    r = p.result
    return {"vgpu": p.vgpu, "kind": p.kind, "gpu": p.gpu, "node": p.node, "pid": p.pid,
            "cpus": p.cpus, "rc": p.rc,
            "throughput": r.throughput if r else None, "unit": r.unit if r else "",
            "kernels_per_s": r.kernels_per_s if r else None, "gflops": r.gflops if r else None,
            "seconds": r.seconds if r else None, "iterations": r.iterations if r else None,
            "check": r.check if r else "", "app_device": r.device if r else None,
            "error": p.error}


CSV_FIXED = ["sweep", "app", "assembly", "status", "scope", "vgpu", "kind", "gpu", "node", "pid",
             "cpus", "rc", "throughput", "unit", "kernels_per_s", "gflops", "seconds",
             "iterations", "check", "app_device", "error"]


def csv_rows(points: list[PointResult]) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per process (scope=vgpu) and one per point (scope=aggregate)."""
    keys: list[str] = []
    for pt in points:
        keys += [k for k in pt.params if k not in keys]
    rows = []
    for pt in points:
        base = {"sweep": pt.sweep, "app": pt.app, "assembly": pt.assembly, "status": pt.status,
                **pt.params}
        for p in pt.procs:
            rows.append({**base, "scope": "vgpu", **_proc_row(p)})
        rows.append({**base, "scope": "aggregate", **pt.aggregate(), "error": pt.error,
                     "vgpu": "all"})
    return keys + CSV_FIXED, rows


def run_info(device: str, note: str) -> dict[str, Any]:
    return {"device": device, "date": datetime.datetime.now().astimezone().isoformat(
        timespec="seconds"), "host": platform.node(), "note": note}


def write_sweep(out: Path, name: str, points: list[PointResult], info: dict[str, Any]) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    header, rows = csv_rows(points)
    csv_path, json_path = out / f"{name}.csv", out / f"{name}.json"
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, restval="")
        w.writeheader()
        w.writerows(rows)
    doc = {**info, "sweep": name, "points": [
        {"params": pt.params, "app": pt.app, "assembly": pt.assembly, "status": pt.status,
         "error": pt.error, "wall_s": round(pt.wall_s, 3), "aggregate": pt.aggregate(), "nodes": pt.nodes,
         "vgpus": [_proc_row(p) for p in pt.procs]} for pt in points]}
    json_path.write_text(json.dumps(doc, indent=1) + "\n")
    return csv_path, json_path
