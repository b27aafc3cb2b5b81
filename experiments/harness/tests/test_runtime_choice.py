"""experiments/microbench/runtime_choice.py: each metric's best run per
side, the ratios against native, and which side is better."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CHOICE = REPO / "experiments/microbench/runtime_choice.py"


def run_file(tmp: Path, name: str, sync_us: float, rate: float) -> Path:
    p = tmp / name
    p.write_text(f"DEVICE Test GPU\nMETRIC sync_roundtrip_us us {sync_us}\nMETRIC launch_rate launches/s {rate}\n")
    return p


def test_sides_compared_per_metric(tmp_path: Path) -> None:
    out = tmp_path / "choice.json"
    native = [run_file(tmp_path, "n1", 7.0, 280000), run_file(tmp_path, "n2", 6.0, 290000)]
    ours = [run_file(tmp_path, "o1", 7.5, 285000), run_file(tmp_path, "o2", 7.2, 280000)]
    theirs = [run_file(tmp_path, "t1", 9.0, 300000)]
    r = subprocess.run([sys.executable, str(CHOICE), "--native", *map(str, native), "--ours", *map(str, ours),
                        "--theirs", *map(str, theirs), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    recs = {x["metric"]: x for x in json.loads(out.read_text())}
    sync = recs["sync_roundtrip_us"]
    assert (sync["native"], sync["ours"], sync["theirs"]) == (6.0, 7.2, 9.0)
    assert sync["ratio_ours"] == 1.2 and sync["better"] == "ours"
    assert recs["launch_rate"]["better"] == "theirs"
    assert r.stdout.splitlines()[-1].startswith("runtime choice: ours better on 1, NVIDIA's over ours on 1")
