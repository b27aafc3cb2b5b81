"""PNG figures beside the CSV files (matplotlib, Agg backend)."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from .latency import PARTS, breakdown, LatencyPoint  # noqa: E402
from .records import PointResult  # noqa: E402

SIM_NOTE = "sim device: timings mean nothing"


def _title(ax: Axes, text: str, device: str) -> None:
    ax.set_title(text + (f"\n({SIM_NOTE})" if device.startswith("sim") else f"\n({device})"),
                 fontsize=10)


def _finish(fig: Figure, ax: Axes, title: str, device: str, path: Path) -> Path:
    """Titles the figure, writes it to path (PNG) and closes it."""
    _title(ax, title, device)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _series(points: list[PointResult], x_key: str, group: tuple[str, ...]
            ) -> dict[tuple[str, ...], list[tuple[float, float]]]:
    """(app, *group values) -> [(x, aggregate throughput)], ok points only."""
    out: dict[tuple[str, ...], list[tuple[float, float]]] = defaultdict(list)
    for p in points:
        thr = p.aggregate()["throughput"]
        if p.status == "ok" and isinstance(thr, float):
            key = (p.app, *(str(p.params[g]) for g in group))
            out[key].append((float(p.params[x_key]), thr))
    return {k: sorted(v) for k, v in out.items()}


def relative_plot(points: list[PointResult], x_key: str, group: tuple[str, ...], path: Path,
                  title: str, xlabel: str, device: str, log2x: bool = False,
                  base_per_app: bool = False) -> Path | None:
    """Aggregate throughput relative to the series' first point, one line per series;
    base_per_app: relative to the app's smallest-x point over all its series (a
    series that does not start there, e.g. mixed assemblies from 2 vGPUs, is
    still measured against the one-vGPU run)."""
    series = _series(points, x_key, group)
    if not series:
        return None
    app_base: dict[str, tuple[float, float]] = {}
    for key, pts in series.items():
        if key[0] not in app_base or pts[0][0] < app_base[key[0]][0]:
            app_base[key[0]] = pts[0]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for key, pts in sorted(series.items()):
        base = app_base[key[0]][1] if base_per_app else pts[0][1]
        style = "--" if "native" in key else "-"
        ax.plot([x for x, _ in pts], [y / base if base else 0 for _, y in pts], style, marker="o",
                label=" ".join(key))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"aggregate throughput / at {x_key}={int(min(x for s in series.values() for x, _ in s))}")
    if log2x:
        ax.set_xscale("log", base=2)
    xs = sorted({x for s in series.values() for x, _ in s})
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _finish(fig, ax, title, device, path)


def network_plot(points: list[PointResult], path: Path, device: str) -> Path | None:
    """Per app, each network class's throughput relative to the local vGPU."""
    by: dict[str, dict[str, float]] = defaultdict(dict)
    for p in points:
        thr = p.aggregate()["throughput"]
        if p.status == "ok" and isinstance(thr, float):
            by[p.app][str(p.params["network"])] = thr
    by = {app: v for app, v in by.items() if "local" in v and v["local"] > 0}
    if not by:
        return None
    classes = ["local", "loopback", "veth", "veth-10gbit", "veth-1gbit"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    width = 0.8 / len(classes)
    for i, net in enumerate(classes):
        ys = [by[app].get(net, 0.0) / by[app]["local"] for app in by]
        ax.bar([a + i * width for a in range(len(by))], ys, width, label=net)
    ax.set_xticks([a + 0.4 - width / 2 for a in range(len(by))], list(by), fontsize=8)
    ax.set_ylabel("throughput / local vGPU")
    ax.legend(fontsize=7)
    return _finish(fig, ax, "one vGPU: local vs remote per network class", device, path)


def latency_plot(points: list[LatencyPoint], path: Path, device: str) -> Path | None:
    parts = breakdown(points)
    if not parts:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    names = list(parts)
    bottom = [0.0] * len(names)
    for part in PARTS:
        vals = [max(parts[n].get(part, 0.0), 0.0) for n in names]
        ax.bar(names, vals, bottom=bottom, label=part)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("4-byte D2H cudaMemcpy round trip (us)")
    ax.tick_params(axis="x", labelsize=8)
    ax.legend(fontsize=7)
    return _finish(fig, ax, "Fig. 10: per-call latency (totals measured, parts derived)", device, path)


FIGURES = {"demo": "fig5-demo.png", "contention": "fig5-6a-contention.png",
           "remote-share": "fig6b-remote-share.png", "network": "network-classes.png",
           "batch": "batch-size.png", "assembly": "assembly-2gpu.png",
           "latency": "fig10-latency.png", "scaling": "scaling.png"}


def plot_sweep(sweep: str, points: list[PointResult], out: Path, device: str) -> Path | None:
    path = out / FIGURES[sweep]
    if sweep in ("demo", "contention"):
        return relative_plot(points, "vgpus_per_gpu", ("mode",), path,
                             "Fig. 5/6a: vGPUs sharing one GPU", "vGPUs (processes) per physical GPU",
                             device)
    if sweep == "remote-share":
        return relative_plot(points, "remote", (), path, "Fig. 6b: remote vGPUs of a 4-vGPU assembly",
                             "remote vGPUs (of 4)", device)
    if sweep == "network":
        return network_plot(points, path, device)
    if sweep == "batch":
        return relative_plot(points, "batch", (), path, "one remote vGPU: link batch size",
                             "mearasd --link-batch (records per link batch, at most)", device, log2x=True)
    if sweep == "scaling":
        return relative_plot(points, "vgpus", ("layout",), path,
                             "aggregate throughput against vGPUs: all local vs mixed", "vGPUs", device,
                             base_per_app=True)
    if sweep == "assembly":
        for p in points:
            p.params["vgpus"] = 1 if p.params["assembly"] == "1 local" else 2
        return relative_plot(points, "vgpus", (), path, "1 local vs 1 local + 1 remote (2 GPUs)",
                             "vGPUs in the assembly", device)
    return None
