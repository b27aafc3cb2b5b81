"""mearas_exp.hops: the per-hop table from hop-trace stamp files."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from mearas_exp.hops import CHAIN, CLIENT_ROW, TOTAL_ROW, HopError, chains, load, main, report, runs


def write(folder: Path, pid: int, hop: str, stamps: list[int]) -> None:
    (folder / f"{pid}.{hop}").write_bytes(struct.pack(f"<Q{len(stamps)}Q", len(stamps), *stamps))


def fake_run(folder: Path, calls: int, step_ns: int, start: int = 10**9, tls: bool = True,
             pids: tuple[int, int, int] = (100, 200, 300)) -> None:
    """Calls one at a time: every hop of CHAIN step_ns after the one before,
    an aside half way to the next one, and the client's part 3 * step_ns."""
    role_pid = dict(zip(("fwd", "srv", "wrk"), pids))
    stamps: dict[tuple[int, str], list[int]] = {}
    t = start
    for _ in range(calls):
        stamps.setdefault((role_pid["fwd"], "fwd_pick"), []).append(t)
        for _, role, hop, aside in CHAIN:
            if hop == "send_sealed" and not tls:
                continue
            if not aside:
                t += step_ns
            stamps.setdefault((role_pid[role], hop), []).append(t + step_ns // 2 if aside else t)
        t += 3 * step_ns
    stamps.setdefault((role_pid["fwd"], "fwd_pick"), []).append(t)
    for (pid, hop), v in stamps.items():
        write(folder, pid, hop, v)


def test_each_hop_gets_its_median(tmp_path: Path) -> None:
    fake_run(tmp_path, calls=50, step_ns=1000)
    procs = load(tmp_path)
    (role,) = runs(procs)
    rows = chains(procs, role)
    assert [r.label for r in rows[:-2]] == [c[0] for c in CHAIN]
    assert all(len(r.values_ns) == 50 for r in rows)
    for row, (_, _, _, aside) in zip(rows, CHAIN):
        assert set(row.values_ns) == {500 if aside else 1000}
    client, total = rows[-2:]
    assert (client.label, set(client.values_ns)) == (CLIENT_ROW, {3000})
    assert (total.label, set(total.values_ns)) == (TOTAL_ROW, {1000 * (steps(tls=True) + 3)})


def steps(tls: bool) -> int:
    """The chain's hops that take time of their own."""
    return sum(1 for _, _, hop, aside in CHAIN if not aside and (tls or hop != "send_sealed"))


def test_the_other_node_may_read_before_the_send_returns(tmp_path: Path) -> None:
    fake_run(tmp_path, calls=5, step_ns=1000)
    # every send's end comes after the receive on the other node (loopback)
    procs = load(tmp_path)
    for pid in (100, 200):
        write(tmp_path, pid, "send_end", [t + 2500 for t in procs[pid]["send_end"]])
    procs = load(tmp_path)
    rows = chains(procs, runs(procs)[0])
    assert len(rows[-1].values_ns) == 5
    assert {r.label: set(r.values_ns) for r in rows}["  (aside: its send system call)"] == {3000}


def test_a_link_in_clear_text_has_no_seal_rows(tmp_path: Path) -> None:
    fake_run(tmp_path, calls=5, step_ns=1000, tls=False)
    procs = load(tmp_path)
    rows = chains(procs, runs(procs)[0])
    assert not any("TLS" in r.label for r in rows)
    assert set(rows[-1].values_ns) == {1000 * (steps(tls=False) + 3)}


def test_each_forwarding_process_pairs_with_the_nodes_running_beside_it(tmp_path: Path) -> None:
    fake_run(tmp_path, calls=5, step_ns=1000, start=10**9, pids=(1, 2, 3))
    fake_run(tmp_path, calls=5, step_ns=2000, start=10**12, pids=(4, 5, 6))
    assert runs(load(tmp_path)) == [{"fwd": 1, "srv": 2, "wrk": 3}, {"fwd": 4, "srv": 5, "wrk": 6}]
    assert report(tmp_path).count("== forwarding pid") == 2


def test_calls_that_overlap_give_no_chain(tmp_path: Path) -> None:
    fake_run(tmp_path, calls=5, step_ns=1000)
    picks = load(tmp_path)[100]["fwd_pick"]
    # a record taken every 10 ns: none of its calls ends before the next one
    write(tmp_path, 100, "fwd_pick", [picks[0] + 10 * i for i in range(100)])
    with pytest.raises(HopError, match="no call's chain completes"):
        report(tmp_path)


def test_a_folder_without_stamps_says_what_to_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 1
    assert "make hoptrace" in capsys.readouterr().err


def test_a_truncated_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "7.fwd_pick").write_bytes(b"\x01\x00")
    with pytest.raises(HopError, match="shorter than its count"):
        load(tmp_path)
