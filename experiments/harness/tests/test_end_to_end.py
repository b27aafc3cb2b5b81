"""The harness end to end on mearasd --device=sim (apps with --no-check; the
sim runs no kernels, so only orchestration and accounting are checked)."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mearas_exp.config import Paths, remote_supported
from mearas_exp.netns import list_ours
from mearas_exp.resultline import find_result

HARNESS = Path(__file__).resolve().parents[1]


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mearas_exp", *args, "--device", "sim",
                           "--out", str(tmp / "out"), "--logs", str(tmp / "logs")],
                          cwd=HARNESS, capture_output=True, text=True, timeout=300)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def load(tmp: Path, name: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    doc = json.loads((tmp / "out" / f"{name}.json").read_text())
    with open(tmp / "out" / f"{name}.csv") as f:
        return doc, list(csv.DictReader(f))


def assert_cleaned_up(doc: dict[str, Any]) -> None:
    pids = [v["pid"] for p in doc["points"] for v in p["vgpus"]]
    pids += [n["pid"] for p in doc["points"] for n in p["nodes"]]
    assert pids and not [p for p in pids if alive(p)]
    assert list_ours() == []


def test_contention_sweep(tmp_path: Path) -> None:
    r = run(tmp_path, "contention", "--apps", "blackscholes", "--seconds", "0.2")
    assert r.returncode == 0, r.stderr
    progress = [ln for ln in r.stderr.splitlines() if ln.startswith("[")]
    assert [ln.split()[0] for ln in progress] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    doc, rows = load(tmp_path, "contention")
    assert doc["device"].startswith("sim") and "mean nothing" in doc["note"]
    ncpu = len(os.sched_getaffinity(0))
    for n, point in enumerate(doc["points"], 1):
        assert point["status"] == "ok" and point["params"]["vgpus_per_gpu"] == n
        procs = point["vgpus"]
        # one process per vGPU, each on its own device ordinal, pinned to one CPU
        assert [v["vgpu"] for v in procs] == list(range(n))
        assert [v["app_device"] for v in procs] == list(range(n))
        assert len({v["pid"] for v in procs}) == n
        assert all(len(v["cpus"].split(",")) == 1 for v in procs)
        assert len({v["cpus"] for v in procs}) == min(n, ncpu)
        assert all(v["throughput"] > 0 and v["check"] == "skipped" for v in procs)
        assert point["aggregate"]["throughput"] == pytest.approx(sum(v["throughput"] for v in procs))
        [client] = point["nodes"]
        assert client["args"] == ["--device=sim", f"--vgpus={n}", "--gpu-map=" + ",".join(["0"] * n)]
    assert len([x for x in rows if x["scope"] == "vgpu"]) == 1 + 2 + 3 + 4
    assert len([x for x in rows if x["scope"] == "aggregate"]) == 4
    png = tmp_path / "out" / "fig5-6a-contention.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert_cleaned_up(doc)


def test_demo_two_apps(tmp_path: Path) -> None:
    r = run(tmp_path, "demo", "--apps", "binomialoptions,matrixmul", "--seconds", "0.2", "--no-pin")
    assert r.returncode == 0, r.stderr
    doc, rows = load(tmp_path, "demo")
    units = {p["app"]: p["aggregate"]["unit"] for p in doc["points"]}
    assert units == {"binomialoptions": "options/s", "matrixmul": "flop/s"}
    mm = [p for p in doc["points"] if p["app"] == "matrixmul"]
    assert all(p["aggregate"]["gflops"] > 0 for p in mm)
    binom = [p for p in doc["points"] if p["app"] == "binomialoptions"]
    assert all(p["aggregate"]["kernels_per_s"] > 0 for p in binom)
    assert (tmp_path / "out" / "fig5-demo.png").is_file()
    assert_cleaned_up(doc)


@pytest.mark.skipif(remote_supported(Paths.default().mearasd), reason="mearasd has remote vGPUs")
def test_remote_mix_reports_unavailable(tmp_path: Path) -> None:
    r = run(tmp_path, "remote-share", "--apps", "cp", "--seconds", "0.2")
    assert r.returncode == 0, r.stderr  # the all-local point ran
    doc, _ = load(tmp_path, "remote-share")
    status = [(p["params"]["remote"], p["status"]) for p in doc["points"]]
    assert status == [(0, "ok")] + [(m, "unavailable") for m in range(1, 5)]
    assert "h-remote" in doc["points"][1]["error"]
    r = run(tmp_path, "assembly", "--seconds", "0.2")
    assert r.returncode == 3 and "h-remote" in r.stderr
    assert not (tmp_path / "out" / "assembly.json").exists()
    assert (tmp_path / "out" / "assembly-runs.json").is_file()
    assert list_ours() == []


@pytest.mark.skipif(not remote_supported(Paths.default().mearasd), reason="needs mearasd remote vGPUs")
def test_assembly_metric_on_sim(tmp_path: Path) -> None:
    r = run(tmp_path, "assembly", "--seconds", "0.3")
    assert r.returncode == 0, r.stderr
    recs = json.loads((tmp_path / "out" / "assembly.json").read_text())
    assert [x["metric"] for x in recs] == ["binomial_2gpu_speedup", "blackscholes_2gpu_speedup"]
    assert all(x["ratio"] > 0 and x["device"].startswith("sim") for x in recs)
    doc, _ = load(tmp_path, "assembly-runs")
    kinds = [[v["kind"] for v in p["vgpus"]] for p in doc["points"]]
    assert kinds == [["local"], ["local", "remote"]] * 2
    assert_cleaned_up(doc)


@pytest.mark.skipif(not remote_supported(Paths.default().mearasd), reason="needs mearasd remote vGPUs")
def test_scaling_on_sim(tmp_path: Path) -> None:
    r = run(tmp_path, "scaling", "--apps", "binomialoptions", "--seconds", "0.2")
    assert r.returncode == 0, r.stderr
    doc, _ = load(tmp_path, "scaling-runs")
    layout = [(p["params"]["vgpus"], p["params"]["layout"]) for p in doc["points"]]
    assert layout == [(1, "local"), (2, "local"), (2, "mixed"), (4, "local"), (4, "mixed"),
                      (8, "local"), (8, "mixed")]
    mixed8 = doc["points"][-1]
    assert [v["kind"] for v in mixed8["vgpus"]] == ["local"] + ["remote"] * 7
    assert len(mixed8["nodes"]) == 8  # the client node and one node per remote vGPU
    recs = json.loads((tmp_path / "out" / "scaling.json").read_text())
    assert {x["metric"] for x in recs} == {"binomial_8vgpu_efficiency", "binomial_8vgpu_efficiency_local"}
    assert all(x["ratio"] > 0 for x in recs)
    assert (tmp_path / "out" / "scaling.png").is_file()
    assert_cleaned_up(doc)


def test_latency_local_on_sim(tmp_path: Path) -> None:
    r = run(tmp_path, "latency")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "out" / "latency.json").read_text())
    local = [p for p in doc["points"] if p["config"] == "local"][0]
    assert local["status"] == "ok" and local["sync_roundtrip_us"] > 0
    assert doc["breakdown_us"]["local"]["client+marshalling+server"] == local["sync_roundtrip_us"]
    assert (tmp_path / "out" / "fig10-latency.png").is_file()
    assert list_ours() == []


@pytest.mark.skipif(not remote_supported(Paths.default().mearasd), reason="needs mearasd remote vGPUs")
def test_batch_sweep_on_sim(tmp_path: Path) -> None:
    r = run(tmp_path, "batch", "--apps", "blackscholes", "--seconds", "0.2")
    assert r.returncode == 0, r.stderr
    doc, _ = load(tmp_path, "batch")
    sizes = [p["params"]["batch"] for p in doc["points"]]
    assert sizes == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    for p in doc["points"]:
        assert p["status"] == "ok" and p["params"]["app_args"] == "--size 65536"
        assert [v["kind"] for v in p["vgpus"]] == ["remote"]
        client = [n for n in p["nodes"] if n["name"] == "client"][0]
        assert f"--link-batch={p['params']['batch']}" in client["args"]
    # the launch-heavy setting reached the app: 64 Ki options per launch
    out = (tmp_path / "logs/batch/p001/blackscholes-v0.out").read_text()
    res = find_result(out)
    assert res.items == 65536 * res.iterations
    assert (tmp_path / "out" / "batch-size.png").is_file()
    assert_cleaned_up(doc)


@pytest.mark.parametrize("args,msg", [(["demo", "--apps", "nosuch"], "unknown app"),
                                      (["demo", "--seconds", "0"], "--seconds")])
def test_bad_input(tmp_path: Path, args: list[str], msg: str) -> None:
    r = run(tmp_path, *args)
    assert r.returncode == 1 and msg in r.stderr
