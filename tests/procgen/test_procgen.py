"""scripts/procgen.py: the shipped measured table generates; equal answers
collapse into one rule; a symbol outside the export list, a line the table
cannot express and a table without its driver line are refused, with the
line, and leave no output behind."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROCGEN = ROOT / "scripts/procgen.py"
TABLE = ROOT / "experiments/drvapi-probe/results/h100-580.159.04-proctable.tsv.gz"
SYMBOLS = ROOT / "guest/libcuda/cuda13.symbols"
HEAD = "# driver 13000\n# name\tversion\tflags\trc\tstatus\tsymbol\n"


def gen(tmp_path: Path, table: Path, symbols: Path = SYMBOLS) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PROCGEN), str(table), str(symbols), str(tmp_path / "out.c")],
                          capture_output=True, text=True, check=False)


def tsv(tmp_path: Path, body: str, head: str = HEAD) -> Path:
    p = tmp_path / "t.tsv"
    p.write_text(head + body)
    return p


def rows(name: str, answers: dict[int, str]) -> str:
    """Lines for name at each version, the same answer for flags 0, 1, 2."""
    out = []
    for v, sym in answers.items():
        status = 0 if sym != "NULL" else 2
        out += [f"{name}\t{v}\t{f}\t0\t{status}\t{sym}\n" for f in (0, 1, 2)]
    return "".join(out)


def rule_lines(tmp_path: Path) -> list[str]:
    text = (tmp_path / "out.c").read_text()
    body = text.split("cu_proc_rules[] = {", 1)[1]
    return [ln for ln in body.splitlines() if ln.startswith("\t{")]


def test_shipped_table_generates(tmp_path: Path) -> None:
    r = gen(tmp_path, TABLE)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "out.c").read_text()
    assert "_Static_assert(CU_DRIVER_VERSION == 13000" in text
    assert "\tcuMemcpyHtoD_v2_ptds,\n" in text


def test_equal_versions_collapse(tmp_path: Path) -> None:
    body = rows("cuInit", {2000: "cuInit", 3000: "cuInit", 13000: "cuInit"})
    body += rows("cuMemAlloc", {2000: "cuMemAlloc", 3020: "cuMemAlloc_v2", 13000: "cuMemAlloc_v2"})
    assert gen(tmp_path, tsv(tmp_path, body)).returncode == 0
    assert [ln.split("/*")[0].strip() for ln in rule_lines(tmp_path)] == \
        ["{ 2000, 0, 7 },", "{ 2000, 1, 7 },", "{ 3020, 2, 7 },"]


def test_symbol_outside_the_list_fails(tmp_path: Path) -> None:
    r = gen(tmp_path, tsv(tmp_path, rows("cuInit", {2000: "cuInit_v9"})))
    assert r.returncode != 0
    assert "t.tsv:3: the driver handed out cuInit_v9 for 'cuInit', which is not in the symbol list" in r.stderr
    assert not (tmp_path / "out.c").exists()


@pytest.mark.parametrize("line,why", [
    ("cuInit\t2000\t0\t999\t0\tNULL\n", "rc 999 at a version the driver supports"),
    ("cuInit\t2000\t7\t0\t0\tcuInit\n", "flags 7"),
    ("cuInit\t13010\t0\t0\t0\tcuInit\n", "above the driver's version 13000"),
    ("cuInit\t2000\t0\t0\t0\tNULL\n", "status 0 with symbol NULL"),
    ("cuInit\t2000\t0\n", "expected 6 tab-separated fields"),
])
def test_inexpressible_line_fails(tmp_path: Path, line: str, why: str) -> None:
    r = gen(tmp_path, tsv(tmp_path, line))
    assert r.returncode != 0
    assert why in r.stderr and "t.tsv:3:" in r.stderr


def test_table_without_driver_line_fails(tmp_path: Path) -> None:
    r = gen(tmp_path, tsv(tmp_path, rows("cuInit", {2000: "cuInit"}), head=""))
    assert r.returncode != 0
    assert "no '# driver N' line" in r.stderr
