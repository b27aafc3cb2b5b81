"""The profile the node agent publishes: GPUs and load as mearasd reports them, and whether
the node may be booked (against the test double of mearasd; tests/test_truth.py runs the
same against the real mearasd on the sim device)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mearas_am.config import load_config
from mearas_am.control.client import SocketMearasdClient
from mearas_am.model import LinkServer
from mearas_am.profiles import collect_profile, link_problem

from .conftest import write_config
from .fake_mearasd import FakeMearasd


def test_profile_is_mearasds(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    fake_mearasd.gpus = 3
    cfg = load_config(str(write_config(tmp_path / "c.toml", socket_path=fake_mearasd.path)))
    client = SocketMearasdClient(fake_mearasd.path)
    from .test_control import asm
    client.instantiate(asm())
    p = collect_profile(cfg, client)
    assert p.source == "mearasd" and p.state == "ready" and p.why == ""
    assert [g.static.name for g in p.gpus] == ["Fake GPU"] * 3
    assert p.gpus[0].load is not None and p.gpus[0].load.vgpus[0].assembly_id == "asm1"
    assert p.gpus[1].load is not None and p.gpus[1].load.utilization_percent == 10


def test_mearasd_gone_marks_node_down_keeping_last_gpus(tmp_path: Path,
                                                        fake_mearasd: FakeMearasd) -> None:
    cfg = load_config(str(write_config(tmp_path / "c.toml", socket_path=fake_mearasd.path)))
    client = SocketMearasdClient(fake_mearasd.path)
    first = collect_profile(cfg, client)
    fake_mearasd.close()
    p = collect_profile(cfg, client, first)
    assert p.state == "down" and "no profile from mearasd" in p.down
    assert "is mearasd running?" in p.down
    assert [g.static for g in p.gpus] == [g.static for g in first.gpus]
    assert [g.load for g in p.gpus] == [None, None]  # nothing measured now
    assert p.updated_at == first.updated_at  # when mearasd last answered
    never = collect_profile(cfg, client)  # never reached: no GPUs to show
    assert never.state == "down" and never.gpus == ()


def test_mearasd_of_another_node_marks_down(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    cfg = load_config(str(write_config(tmp_path / "c.toml", node="node-q",
                                       socket_path=fake_mearasd.path)))
    p = collect_profile(cfg, SocketMearasdClient(fake_mearasd.path))
    assert p.state == "down" and "mearasd serves node 'node-a'" in p.down


def test_no_gpus_marks_down(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    fake_mearasd.gpus = 0
    cfg = load_config(str(write_config(tmp_path / "c.toml", socket_path=fake_mearasd.path)))
    p = collect_profile(cfg, SocketMearasdClient(fake_mearasd.path))
    assert p.state == "down" and p.down == "mearasd reports no GPUs"


@pytest.mark.parametrize("address,link,words", [
    ("", LinkServer(7100, "", True), "no [node] address"),
    ("node-a", LinkServer(7100, "", True), "is not HOST:PORT"),
    ("10.0.0.1:7100", LinkServer(0, "", False), "serves no remote-link port"),
    ("10.0.0.1:7100", LinkServer(7200, "", True), "port 7200, but [node] address"),
    ("10.0.0.1:7100", LinkServer(7100, "", False), "no cluster key"),
    ("10.0.0.1:7100", LinkServer(7100, "127.0.0.1", True), "bound to 127.0.0.1"),
    ("10.0.0.1:7100", LinkServer(7100, "10.0.0.1", True), ""),
    ("127.0.0.1:7100", LinkServer(7100, "127.0.0.1", True), ""),
    ("10.0.0.1:7100", None, ""),  # a mearasd too old to say: no judgement
])
def test_link_problem(address: str, link: LinkServer | None, words: str) -> None:
    got = link_problem(address, link)
    assert (words in got) if words else got == ""


def test_link_down_makes_node_local_only(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    fake_mearasd.link = LinkServer(0, "", False)
    cfg = load_config(str(write_config(tmp_path / "c.toml", socket_path=fake_mearasd.path)))
    p = collect_profile(cfg, SocketMearasdClient(fake_mearasd.path))
    assert p.state == "local-only" and "--link-port" in p.link_down and not p.down
