"""Parsing, option composition and metric arithmetic (no processes)."""
from __future__ import annotations

from pathlib import Path

import pytest

from mearas_exp.config import HarnessError
from mearas_exp.metric import metric_records
from mearas_exp.records import PointResult, csv_rows
from mearas_exp.remote import RemoteVgpu, remote_link_args, write_cluster_key
from mearas_exp.resultline import ResultLineError, find_result, parse_result_line
from mearas_exp.runner import ProcRecord

LINE = ("RESULT app=blackscholes items=1000 iterations=10 seconds=0.5 throughput=2000 "
        "unit=options/s per_iteration_us=50.000 device=1 launches=10 check=skipped")


def test_parse_result_line() -> None:
    r = parse_result_line(LINE)
    assert (r.app, r.throughput, r.unit, r.device, r.check) == ("blackscholes", 2000.0, "options/s", 1,
                                                                "skipped")
    assert r.kernels_per_s == pytest.approx(20.0)
    assert r.gflops is None
    mm = parse_result_line(LINE.replace("unit=options/s", "unit=flop/s").replace("2000", "3e9"))
    assert mm.gflops == pytest.approx(3.0)


@pytest.mark.parametrize("bad", ["RESULT app=x", "RESULT " + LINE[7:].replace("items=1000", "items=ten"),
                                 "RESULT junk " + LINE[7:], "nothing"])
def test_bad_result_lines(bad: str) -> None:
    with pytest.raises(ResultLineError):
        parse_result_line(bad)


def test_find_result_needs_exactly_one() -> None:
    assert find_result("hello\n" + LINE + "\n").app == "blackscholes"
    with pytest.raises(ResultLineError):
        find_result(LINE + "\n" + LINE)
    with pytest.raises(ResultLineError):
        find_result("no result\n")


def test_remote_link_args(tmp_path: Path) -> None:
    key = write_cluster_key(tmp_path / "k")
    text = key.read_text().strip()
    assert len(text) == 64 and int(text, 16) >= 0
    assert key.stat().st_mode & 0o777 == 0o600
    assert remote_link_args(key, link_port=7600) == ["--link-port=7600", f"--cluster-key-file={key}"]
    assert remote_link_args(key, remotes=(RemoteVgpu(1, "10.250.2.10", 7600),
                                          RemoteVgpu(2, "127.0.0.1", 4000))) == [
        "--remote=1=10.250.2.10:7600", "--remote=2=127.0.0.1:4000", f"--cluster-key-file={key}"]
    assert remote_link_args(key) == []


def _point(app: str, label: str, thr: list[float], status: str = "ok") -> PointResult:
    procs = [ProcRecord(i, "local", 0, "client", 100 + i, "1", 0,
                        parse_result_line(LINE.replace("throughput=2000", f"throughput={t}")), "")
             for i, t in enumerate(thr)]
    return PointResult("assembly", {"assembly": label}, app, label, status, procs=procs)


def test_metric_records_ratio_and_aggregate() -> None:
    pts = [_point("binomialoptions", "1 local", [100.0]),
           _point("binomialoptions", "1 local + 1 remote", [90.0, 80.0]),
           _point("blackscholes", "1 local", [10.0]),
           _point("blackscholes", "1 local + 1 remote", [10.0, 9.0])]
    recs = metric_records(pts, "dev")
    assert [r["metric"] for r in recs] == ["binomial_2gpu_speedup", "blackscholes_2gpu_speedup"]
    assert recs[0]["baseline"] == 100.0 and recs[0]["mearas"] == 170.0 and recs[0]["ratio"] == 1.7
    assert recs[1]["ratio"] == 1.9
    assert set(recs[0]) == {"metric", "unit", "baseline", "mearas", "ratio", "device", "date"}
    pts[3].status = "unavailable"
    with pytest.raises(HarnessError, match="blackscholes_2gpu_speedup"):
        metric_records(pts, "dev")


def test_csv_has_row_per_process_and_aggregate() -> None:
    header, rows = csv_rows([_point("cp", "x", [1.0, 2.0, 3.0])])
    assert "cpus" in header and "assembly" in header
    assert [r["scope"] for r in rows] == ["vgpu", "vgpu", "vgpu", "aggregate"]
    assert rows[-1]["throughput"] == 6.0


def test_node_complaints_quote_warnings_and_errors(tmp_path: Path) -> None:
    from mearas_exp.nodes import Node
    from mearas_exp.sweeps import node_complaints

    log = tmp_path / "node-remote0.log"
    log.write_text("mearasd[1]: info: ready\n"
                   "mearasd[1]: warning: link from 127.0.0.1:5 refused: 4 connections from that host\n"
                   "mearasd[1]: info: link open\n"
                   "mearasd[1]: error: remote vGPU 0: bad record\n")
    quiet = tmp_path / "node-client.log"
    quiet.write_text("mearasd[2]: info: ready\n")
    nodes = [Node("remote0", [], tmp_path / "s0", log), Node("client", [], tmp_path / "s1", quiet),
             Node("gone", [], tmp_path / "s2", tmp_path / "missing.log")]
    said = node_complaints(nodes)
    assert said == ["node remote0 said: mearasd[1]: warning: link from 127.0.0.1:5 refused: 4 connections "
                    "from that host | mearasd[1]: error: remote vGPU 0: bad record"]
