"""scripts/drvapi_programs.py: the records it writes from run-suite.sh
comparisons, one behaviour per test."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "drvapi_programs.py"

TABLE = """PROGRAM              A              B              OUTPUT
vector_add           PASS           PASS           identical
misuse               PASS           FAIL(rc=1)     DIFFERS
graph_capture        PASS           PASS           DIFFERS
--- misuse: diff a/misuse.out b/misuse.out (first 20 lines)
1 passed, 2 failed
"""


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--device", "GPU X", *args],
                          capture_output=True, text=True, cwd=tmp)


def records(path: Path) -> dict[tuple[str, str, str], bool]:
    return {(r["program"], r["build"], r["place"]): r["pass"] for r in json.loads(path.read_text())}


def test_a_program_passes_only_when_both_pass_with_identical_output(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text(TABLE)
    r = run(tmp_path, "--out", "p.json", "static:local:c.txt")
    assert records(tmp_path / "p.json") == {("vector_add", "static", "local"): True,
                                             ("misuse", "static", "local"): False,
                                             ("graph_capture", "static", "local"): False}
    assert r.returncode == 1


def test_every_record_names_the_device_and_date(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text(TABLE)
    run(tmp_path, "--out", "p.json", "shared:remote:c.txt")
    for rec in json.loads((tmp_path / "p.json").read_text()):
        assert rec["device"] == "GPU X" and len(rec["date"]) == 10


def test_merge_replaces_only_the_runs_given_again(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text(TABLE)
    (tmp_path / "ok.txt").write_text("PROGRAM A B OUTPUT\nmisuse PASS PASS identical\n1 passed, 0 failed\n")
    run(tmp_path, "--out", "p.json", "static:local:c.txt", "static:guest:c.txt")
    run(tmp_path, "--merge", "--out", "p.json", "static:guest:ok.txt")
    got = records(tmp_path / "p.json")
    assert got[("misuse", "static", "guest")] is True
    assert got[("misuse", "static", "local")] is False
    assert ("vector_add", "static", "guest") in got


def test_a_missing_comparison_fails_clearly(tmp_path: Path) -> None:
    r = run(tmp_path, "--out", "p.json", "static:local:nowhere.txt")
    assert r.returncode == 1 and "did not run" in r.stderr


def test_an_unknown_build_or_place_is_refused(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text(TABLE)
    assert run(tmp_path, "--out", "p.json", "fat:local:c.txt").returncode == 2
    assert run(tmp_path, "--out", "p.json", "static:moon:c.txt").returncode == 2
