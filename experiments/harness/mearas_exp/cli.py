"""python3 -m mearas_exp SWEEP [options]: run one sweep, write CSV + JSON + PNG."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .config import APPS, REPO, HarnessError, Paths, Unavailable, driver_version, gpu_names
from .records import PointResult, progress, run_info, write_sweep
from .sweeps import SWEEPS, RunOptions, run_sweep

ALL = (*SWEEPS, "latency", "assembly")
DEFAULT_APPS = {"demo": ("blackscholes",), "assembly": ("binomialoptions", "blackscholes"),
                "scaling": ("binomialoptions", "blackscholes"), "batch": ("blackscholes",)}


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="mearas_exp", description=__doc__)
    ap.add_argument("sweep", choices=ALL)
    ap.add_argument("--device", choices=("auto", "sim", "cuda"), default="auto",
                    help="mearasd --device (auto: cuda when nvidia-smi sees a GPU)")
    ap.add_argument("--seconds", type=float, help="per point (default 5 on cuda, 0.3 on sim)")
    ap.add_argument("--apps", help=f"comma list of {','.join(APPS)}")
    ap.add_argument("--out", type=Path, help="results folder (default experiments/results, "
                    "experiments/results/sim on the sim)")
    ap.add_argument("--logs", type=Path, default=REPO / "build/experiment-logs")
    ap.add_argument("--no-native", action="store_true", help="skip native baselines")
    ap.add_argument("--no-pin", action="store_true", help="do not pin app processes to CPUs")
    ap.add_argument("--gpus", type=int, help="physical GPUs to use (default: all seen)")
    return ap.parse_args(argv)


def options(a: argparse.Namespace) -> tuple[RunOptions, Path, str]:
    names = gpu_names()
    device = a.device if a.device != "auto" else ("cuda" if names else "sim")
    if device == "cuda" and not names:
        raise HarnessError("--device cuda but nvidia-smi sees no GPU")
    apps = tuple(a.apps.split(",")) if a.apps else DEFAULT_APPS.get(a.sweep, APPS)
    for app in apps:
        if app not in APPS:
            raise HarnessError(f"unknown app '{app}' (one of {', '.join(APPS)})")
    seconds = a.seconds if a.seconds is not None else (5.0 if device == "cuda" else 0.3)
    if not 0 < seconds <= 600:
        raise HarnessError("--seconds must be in (0, 600]")
    gpus = a.gpus if a.gpus is not None else (len(names) if device == "cuda" else 2)
    if device == "cuda":
        label = f"{names[0]} x{len(names)} (driver {driver_version()})"
    else:
        label = "sim (host-memory model; kernels not run, timings mean nothing)"
    out = a.out or (REPO / "experiments/results" / ("" if device == "cuda" else "sim"))
    opts = RunOptions(device=device, seconds=seconds, apps=apps,
                      native=device == "cuda" and not a.no_native, gpus=gpus,
                      pin=not a.no_pin, check=device == "cuda", paths=Paths.default(),
                      logs=a.logs)
    return opts, out, label


def finish(points: list[PointResult]) -> int:
    failed = [p for p in points if p.status == "failed"]
    unavailable = [p for p in points if p.status == "unavailable"]
    ok = len(points) - len(failed) - len(unavailable)
    progress(f"done: {ok} ok, {len(failed)} failed, {len(unavailable)} unavailable")
    if failed:
        return 1
    return 3 if unavailable and ok == 0 else 0


def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        opts, out, label = options(a)
        note = "" if opts.device == "cuda" else "numbers from the sim: they mean nothing"
        info = run_info(label, note)
        progress(f"sweep {a.sweep}: device {label}; {opts.seconds:g} s per point; results in {out}")
        if a.sweep == "latency":
            from .latency import run_latency, write_latency
            lat = run_latency(opts)
            files: list[Path | None] = [*write_latency(out, lat, info)]
            try:
                from .plots import FIGURES, latency_plot
                files.append(latency_plot(lat, out / FIGURES["latency"], label))
            except ImportError as e:
                progress(f"no plot: {e} (pip install matplotlib)")
            progress("wrote " + ", ".join(str(f) for f in files if f))
            bad = [p for p in lat if p.status == "failed"]
            return 1 if bad else (3 if all(p.status != "ok" for p in lat) else 0)
        if a.sweep == "assembly":
            from .metric import assembly_points, metric_records, write_metric
            points = run_sweep("assembly", assembly_points(opts), opts)
        else:
            points = run_sweep(a.sweep, SWEEPS[a.sweep](opts), opts)
        # assembly.json / scaling.json are metric files; the runs behind them go beside
        name = f"{a.sweep}-runs" if a.sweep in ("assembly", "scaling") else a.sweep
        written: list[Path] = list(write_sweep(out, name, points, info))
        if a.sweep == "assembly" and all(p.status == "ok" for p in points):
            written.append(write_metric(out, metric_records(points, label)))
        if a.sweep == "scaling" and any(p.status == "ok" for p in points):
            from .metric import scaling_records, write_scaling
            written.append(write_scaling(out, scaling_records(points, label)))
        try:  # plots last: a missing matplotlib (GPU image) must not lose the numbers
            from .plots import plot_sweep
            written.append(plot_sweep(a.sweep, points, out, label) or Path("(no plot: no ok points)"))
        except ImportError as e:
            progress(f"no plot: {e} (pip install matplotlib)")
        progress("wrote " + ", ".join(map(str, written)))
        rc = finish(points)
        if a.sweep == "assembly" and rc == 0 and any(p.status != "ok" for p in points):
            why = next(p.error for p in points if p.status != "ok")
            progress(f"mearas_exp: assembly metric not written: {why}")
            return 3
        return rc
    except Unavailable as e:
        progress(f"mearas_exp: not available: {e}")
        if "out" in locals() and "info" in locals():
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{a.sweep}.json").write_text(json.dumps(
                {**info, "sweep": a.sweep, "status": "unavailable", "reason": str(e)}, indent=1) + "\n")
        return 3
    except HarnessError as e:
        progress(f"mearas_exp: error: {e}")
        return 1
