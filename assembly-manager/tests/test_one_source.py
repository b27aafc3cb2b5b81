"""One source of truth, with the real mearasd (build/bin/mearasd --device=sim): the node agent
publishes the GPUs mearasd reports; a node whose mearasd is down, whose link is not served or
whose agent stopped is not booked, and `mearas nodes` says why; `mearas run` hands programs
the client socket the config names; without a config the CLI refuses; read-only commands
create no files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .conftest import write_config
from .real_mearasd import RealMearasd, dump_log, new_mearasd
from .test_cli import PKG_ROOT, mearas

SIM_GPU_MEMORY = 16 << 30  # what the sim device reports per GPU


def node_config(tmp: Path, d: RealMearasd, **kw: Any) -> Path:
    return write_config(tmp / f"{d.node}.toml", node=d.node, socket_path=d.control_socket,
                        registry_path=tmp / "registry.json",
                        address=f"127.0.0.1:{d.link_port}", **kw)


def nodes(cfg: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(mearas(cfg, "nodes", "--json").stdout)
    return out


def test_agent_publishes_the_gpus_mearasd_reports(tmp_path: Path,
                                                  real_mearasd: RealMearasd) -> None:
    cfg = node_config(tmp_path, real_mearasd)
    r = mearas(cfg, "node-agent", "--once")
    assert "node-a ready: 2 GPU(s) from mearasd" in r.stdout
    (n,) = nodes(cfg)
    assert (n["name"], n["source"], n["state"], n["why"]) == ("node-a", "mearasd", "ready", "")
    assert [g["static"]["index"] for g in n["gpus"]] == [0, 1]
    assert all(g["static"]["name"].startswith("mearas-sim") for g in n["gpus"])
    assert {g["static"]["memory_bytes"] for g in n["gpus"]} == {SIM_GPU_MEMORY}
    assert {g["load"]["free_memory_bytes"] for g in n["gpus"]} == {SIM_GPU_MEMORY}
    table = mearas(cfg, "nodes").stdout
    assert table.splitlines()[0].split()[-1] == "STATE" and table.count("ready") == 2


def test_gpus_typed_in_the_config_are_ignored_with_a_warning(
        tmp_path: Path, real_mearasd: RealMearasd) -> None:
    cfg = node_config(tmp_path, real_mearasd)
    cfg.write_text(cfg.read_text().replace("[registry]", "\n".join([
        "use_nvml = false",
        *[f'[[node.gpus]]\nindex = {i}\nname = "Typed GPU"\nmemory = "80GiB"\n'
          'compute_capability = "9.0"' for i in range(3)], "[registry]"])))
    r = mearas(cfg, "node-agent", "--once")
    assert "[node] gpus is ignored: the node agent publishes the GPUs mearasd reports" in r.stderr
    assert "[node] use_nvml is ignored" in r.stderr
    (n,) = nodes(cfg)
    assert len(n["gpus"]) == 2 and "Typed GPU" not in json.dumps(n)


def test_node_whose_mearasd_stopped_is_down_and_not_booked(
        tmp_path: Path, real_mearasd: RealMearasd) -> None:
    cfg = node_config(tmp_path, real_mearasd)
    mearas(cfg, "node-agent", "--once")
    assert mearas(cfg, "compose", "--vgpus", "2", "--dry-run").returncode == 0
    real_mearasd.stop()
    r = mearas(cfg, "node-agent", "--once")
    assert "node-a down: no profile from mearasd" in r.stderr
    (n,) = nodes(cfg)
    assert n["state"] == "down" and "is mearasd running?" in n["why"]
    assert len(n["gpus"]) == 2  # the GPUs mearasd reported last, shown, not booked
    table = mearas(cfg, "nodes").stdout
    assert "node-a: down: no profile from mearasd" in table and "reported them" in table
    for args in (("--dry-run",), ()):
        r = mearas(cfg, "compose", "--vgpus", "1", *args, check=False)
        assert r.returncode == 1
        assert "cannot place 1 vGPU(s)" in r.stderr and "node node-a is down" in r.stderr
    assert json.loads(mearas(cfg, "assemblies", "--json").stdout) == []


def test_node_without_link_server_takes_no_remote_vgpus(tmp_path: Path) -> None:
    d = new_mearasd(tmp_path, link=False).start(tmp_path)
    try:
        cfg = write_config(tmp_path / "node-a.toml", socket_path=d.control_socket,
                           registry_path=tmp_path / "registry.json", address="127.0.0.1:7100")
        mearas(cfg, "node-agent", "--once")
        (n,) = nodes(cfg)
        assert n["state"] == "local-only" and "serves no remote-link port" in n["why"]
        # booked from node-a itself: local vGPUs need no link
        local = json.loads(mearas(cfg, "compose", "--vgpus", "2", "--json").stdout)
        assert {v["remote_address"] for v in local["vgpus"]} == {""}
        mearas(cfg, "release", local["id"])
        # from node-b: node-a's GPUs would be remote
        other = write_config(tmp_path / "node-b.toml", node="node-b",
                             socket_path=d.control_socket,
                             registry_path=tmp_path / "registry.json")
        r = mearas(other, "compose", "--vgpus", "1", "--dry-run", check=False)
        assert r.returncode == 1 and "node node-a takes no remote vGPUs" in r.stderr
        assert "--link-port" in r.stderr
    finally:
        d.stop()
        dump_log(d)


def test_node_whose_heartbeat_lapsed_is_shown_down_and_not_booked(
        tmp_path: Path, real_mearasd: RealMearasd) -> None:
    cfg = node_config(tmp_path, real_mearasd, ttl=2)
    mearas(cfg, "node-agent", "--once")
    assert nodes(cfg)[0]["state"] == "ready"
    subprocess.run(["sleep", "2.2"], check=True)  # past the TTL, no agent refreshing it
    (n,) = nodes(cfg)
    assert n["state"] == "down" and "no heartbeat from its node agent" in n["why"]
    r = mearas(cfg, "compose", "--vgpus", "1", "--dry-run", check=False)
    assert r.returncode == 1 and "no live nodes in the registry" in r.stderr


def test_run_passes_the_configured_client_socket(tmp_path: Path,
                                                 real_mearasd: RealMearasd) -> None:
    cfg = node_config(tmp_path, real_mearasd, client_socket=real_mearasd.client_socket)
    mearas(cfg, "node-agent", "--once")
    prog = ["sh", "-c", 'echo "$MEARAS_SOCKET"']
    env = {k: v for k, v in os.environ.items() if k != "MEARAS_SOCKET"}
    r = subprocess.run([sys.executable, "-m", "mearas_am.cli", "--config", str(cfg), "run",
                        "--vgpus", "1", "--", *prog], capture_output=True, text=True,
                       env=dict(env, PYTHONPATH=str(PKG_ROOT)), timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == real_mearasd.client_socket
    r = subprocess.run([sys.executable, "-m", "mearas_am.cli", "--config", str(cfg), "run",
                        "--vgpus", "1", "--", *prog], capture_output=True, text=True,
                       env=dict(env, PYTHONPATH=str(PKG_ROOT), MEARAS_SOCKET="/mine.sock"),
                       timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "/mine.sock"  # the user's wins


def test_nodes_without_a_config_is_an_error(tmp_path: Path) -> None:
    code = ("import sys, mearas_am.config as c; c.DEFAULT_CONFIG_PATH = sys.argv[1]; "
            "import mearas_am.cli as m; sys.exit(m.main(['nodes']))")
    env = {k: v for k, v in os.environ.items() if k != "MEARAS_CONFIG"}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "am.toml")],
                       capture_output=True, text=True, env=dict(env, PYTHONPATH=str(PKG_ROOT)),
                       timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    assert f"mearas: error: no config: {tmp_path / 'am.toml'} does not exist" in r.stderr


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*")}


READ_ONLY = [("nodes",), ("nodes", "--json"), ("assemblies",), ("assemblies", "--json"),
             ("compose", "--vgpus", "1", "--dry-run")]


def test_read_only_commands_create_no_files(tmp_path: Path, real_mearasd: RealMearasd) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    cfg = write_config(empty / "am.toml", socket_path=real_mearasd.control_socket,
                       registry_path=empty / "state" / "registry.json")
    before = tree(empty)
    for args in READ_ONLY:
        mearas(cfg, *args, check=False)
    assert tree(empty) == before  # no state dir, no registry, no lock
    mearas(cfg, "node-agent", "--once")  # a writer creates them
    assert {"state/registry.json", "state/registry.json.lock"} <= set(tree(empty))
    before = tree(empty)
    for args in READ_ONLY:
        assert mearas(cfg, *args).returncode == 0
    assert tree(empty) == before
