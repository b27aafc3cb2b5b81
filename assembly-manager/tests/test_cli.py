"""The `mearas` command line, run as a separate process like a user would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from procs import kill_if_running

from .conftest import write_config
from .etcd_harness import EtcdCluster
from .fake_mearasd import FakeMearasd

PKG_ROOT = Path(__file__).resolve().parents[1]


def mearas(cfg: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(PKG_ROOT))
    r = subprocess.run([sys.executable, "-m", "mearas_am.cli", "--config", str(cfg), *args],
                       capture_output=True, text=True, env=env, timeout=60)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def cluster_configs(tmp: Path, sock: str, backend: str = "file",
                    endpoints: tuple[str, ...] = (),
                    peers: dict[str, FakeMearasd] | None = None) -> list[Path]:
    """Configs of node-a (mearasd on SOCK), node-b and node-c (on PEERS' sockets, else SOCK:
    their agents would find mearasd serving another node)."""
    reg = tmp / "registry.json"
    socks = {n: p.path for n, p in (peers or {}).items()}
    return [write_config(tmp / f"{n}.toml", node=n, registry_path=reg,
                         socket_path=socks.get(n, sock), backend=backend, endpoints=endpoints,
                         prefix=f"/{tmp.name}/")
            for n in ("node-a", "node-b", "node-c")]


def published_cluster(tmp: Path, fake: FakeMearasd) -> list[Path]:
    """cluster_configs on FAKE's socket, node-a's agent run once (the node published)."""
    cfgs = cluster_configs(tmp, fake.path)
    mearas(cfgs[0], "node-agent", "--once")
    return cfgs


def test_nodes_compose_assemblies_release(tmp_path: Path, fake_mearasd: FakeMearasd,
                                          fake_peers: dict[str, FakeMearasd]) -> None:
    cfgs = cluster_configs(tmp_path, fake_mearasd.path, peers=fake_peers)
    for c in cfgs:
        mearas(c, "node-agent", "--once")
    out = mearas(cfgs[0], "nodes").stdout
    assert out.splitlines()[0].split()[:4] == ["NODE", "GPU", "NAME", "CC"]
    assert out.count("Fake GPU") == 6 and "node-c" in out
    nodes = json.loads(mearas(cfgs[0], "nodes", "--json").stdout)
    assert [n["name"] for n in nodes] == ["node-a", "node-b", "node-c"]
    assert nodes[0]["gpus"][1]["load"]["utilization_percent"] == 10  # reported by mearasd
    assert nodes[0]["source"] == "mearasd" and nodes[0]["state"] == "ready"

    dry = json.loads(mearas(cfgs[0], "compose", "--vgpus", "4", "--policy", "spread",
                            "--dry-run", "--json").stdout)
    assert len(dry[0]) == 4
    assert json.loads(mearas(cfgs[0], "assemblies", "--json").stdout) == []  # nothing booked

    asm = json.loads(mearas(cfgs[0], "compose", "--vgpus", "3", "--policy", "local-first",
                            "--owner", "vm:demo", "--json").stdout)
    assert asm["state"] == "active" and asm["owner"] == "vm:demo"
    assert [v["node"] for v in asm["vgpus"]].count("node-a") == 3
    assert asm["id"] in fake_mearasd.assemblies  # instantiated through the control socket
    # bound to the caller's uid by default (only that user's processes may use it)
    assert fake_mearasd.identities[asm["id"]] == f"uid:{os.getuid()}" == asm["identity"]
    table = mearas(cfgs[1], "assemblies").stdout
    assert asm["id"] in table and "vm:demo" in table and "active" in table
    assert table.splitlines()[0].split()[:3] == ["ID", "OWNER", "FOR"]
    assert f"uid:{os.getuid()}" in table
    assert "1/2" in mearas(cfgs[0], "nodes").stdout  # bookings show in the profile table

    mearas(cfgs[0], "release", asm["id"])
    assert asm["id"] not in fake_mearasd.assemblies
    assert json.loads(mearas(cfgs[0], "assemblies", "--json").stdout) == []
    r = mearas(cfgs[0], "release", asm["id"], check=False)
    assert r.returncode == 1 and f"no assembly {asm['id']}" in r.stderr


def test_compose_binds_the_named_user_or_vm(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    cfgs = published_cluster(tmp_path, fake_mearasd)
    a = json.loads(mearas(cfgs[0], "compose", "--vgpus", "1", "--user", "4242", "--json").stdout)
    b = json.loads(mearas(cfgs[0], "compose", "--vgpus", "1", "--user", "nobody", "--json").stdout)
    c = json.loads(mearas(cfgs[0], "compose", "--vgpus", "1", "--vm", "guest7", "--json").stdout)
    assert fake_mearasd.identities[a["id"]] == "uid:4242"
    assert fake_mearasd.identities[b["id"]] == "uid:65534"
    assert fake_mearasd.identities[c["id"]] == "vm:guest7"
    r = mearas(cfgs[0], "compose", "--vgpus", "1", "--user", "no-such-user-x", check=False)
    assert r.returncode == 1 and "--user no-such-user-x: no such user" in r.stderr


def test_compose_errors_are_clear(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    cfgs = cluster_configs(tmp_path, fake_mearasd.path)
    r = mearas(cfgs[0], "compose", "--vgpus", "2", check=False)
    assert r.returncode == 1 and "no live nodes in the registry" in r.stderr
    mearas(cfgs[0], "node-agent", "--once")
    r = mearas(cfgs[0], "compose", "--vgpus", "9", check=False)
    assert r.returncode == 1 and "cannot place 9 vGPU(s)" in r.stderr
    r = mearas(cfgs[0], "compose", "--vgpus", "1", "--memory", "huge", check=False)
    assert r.returncode == 1 and "bad size 'huge'" in r.stderr
    fake_mearasd.refuse_instantiate = "remote link to node-b down"
    r = mearas(cfgs[0], "compose", "--vgpus", "1", check=False)
    assert r.returncode == 1 and "ERROR_NO_RESOURCES: remote link to node-b down" in r.stderr
    assert "booking" in r.stderr and "released" in r.stderr
    assert json.loads(mearas(cfgs[0], "assemblies", "--json").stdout) == []


def test_compose_without_mearasd_releases_booking(tmp_path: Path,
                                                  fake_mearasd: FakeMearasd) -> None:
    cfgs = published_cluster(tmp_path, fake_mearasd)
    fake_mearasd.close()  # gone after its node was published: booked, then not instantiated
    r = mearas(cfgs[0], "compose", "--vgpus", "2", check=False)
    assert r.returncode == 1 and "is mearasd running?" in r.stderr
    assert json.loads(mearas(cfgs[0], "assemblies", "--json").stdout) == []


def test_run_sets_env_and_releases(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    cfgs = published_cluster(tmp_path, fake_mearasd)
    env_out = tmp_path / "env.txt"
    os.environ["LD_LIBRARY_PATH"] = "/opt/prev"
    try:
        r = mearas(cfgs[0], "run", "--vgpus", "2", "--", "sh", "-c",
                   f'echo "$MEARAS_ASSEMBLY $MEARAS_VGPUS $LD_LIBRARY_PATH" > {env_out}; exit 3',
                   check=False)
    finally:
        del os.environ["LD_LIBRARY_PATH"]
    assert r.returncode == 3, r.stderr
    asm_id, n, ld = env_out.read_text().split()
    # mearasd gets the uid `mearas run` runs as: the program's uid
    assert fake_mearasd.identity_log[asm_id] == f"uid:{os.getuid()}"
    assert n == "2" and ld == "/usr/local/lib/mearas:/opt/prev" and len(asm_id) == 16
    assert "instantiate" in fake_mearasd.requests and "release" in fake_mearasd.requests
    assert fake_mearasd.assemblies == {}
    assert json.loads(mearas(cfgs[0], "assemblies", "--json").stdout) == []
    r = mearas(cfgs[0], "run", "--vgpus", "1", "--", str(tmp_path / "no-such-app"),
               check=False)
    assert r.returncode == 127 and "cannot execute" in r.stderr
    assert json.loads(mearas(cfgs[0], "assemblies", "--json").stdout) == []


def test_run_releases_on_signal(tmp_path: Path, fake_mearasd: FakeMearasd) -> None:
    cfgs = published_cluster(tmp_path, fake_mearasd)
    marker = tmp_path / "got-term"
    script = f"trap 'echo term > {marker}; exit 0' TERM; while :; do sleep 0.1; done"
    p = subprocess.Popen([sys.executable, "-m", "mearas_am.cli", "--config", str(cfgs[0]),
                          "run", "--vgpus", "2", "--", "sh", "-c", script],
                         env=dict(os.environ, PYTHONPATH=str(PKG_ROOT)))
    t0 = time.monotonic()
    while not fake_mearasd.assemblies:
        assert time.monotonic() - t0 < 20, "assembly never instantiated"
        time.sleep(0.1)
    time.sleep(0.5)  # let the shell set its trap
    (asm_id,) = fake_mearasd.assemblies
    p.send_signal(signal.SIGTERM)
    assert p.wait(20) == 0  # the app handled the forwarded SIGTERM and exited 0
    assert marker.read_text().strip() == "term"
    assert fake_mearasd.assemblies == {}
    assert json.loads(mearas(cfgs[0], "assemblies", "--json").stdout) == []


def test_agent_reaps_bookings_of_dead_processes(tmp_path: Path,
                                                fake_mearasd: FakeMearasd) -> None:
    cfgs = published_cluster(tmp_path, fake_mearasd)
    dead = subprocess.Popen(["true"])
    dead.wait()
    mearas(cfgs[0], "compose", "--vgpus", "1", "--owner", f"pid:{dead.pid}@node-a")
    mearas(cfgs[0], "compose", "--vgpus", "1", "--owner", f"pid:{os.getpid()}@node-a")
    r = mearas(cfgs[0], "node-agent", "--once")
    assert "owner process gone" in r.stdout
    owners = [a["owner"] for a in json.loads(mearas(cfgs[0], "assemblies", "--json").stdout)]
    assert owners == [f"pid:{os.getpid()}@node-a"]


def test_cli_with_etcd(tmp_path: Path, etcd: EtcdCluster, fake_mearasd: FakeMearasd,
                      fake_peers: dict[str, FakeMearasd]) -> None:
    cfgs = cluster_configs(tmp_path, fake_mearasd.path, "etcd", etcd.endpoints, fake_peers)
    for c in cfgs:
        mearas(c, "node-agent", "--once")
    asm = json.loads(mearas(cfgs[2], "compose", "--vgpus", "4", "--policy", "exact",
                            "--placement", "node-a:0,node-a:0,node-b:1,node-c:0",
                            "--json").stdout)
    assert [(v["node"], v["gpu_index"], v["remote_address"] != "") for v in asm["vgpus"]] == [
        ("node-a", 0, True), ("node-a", 0, True), ("node-b", 1, True), ("node-c", 0, False)]
    r = mearas(cfgs[0], "compose", "--vgpus", "1", "--policy", "exact", "--placement",
               "node-a:0", check=False)
    assert r.returncode == 1 and "GPU node-a:0 is full (2/2 vGPUs" in r.stderr
    assert asm["id"] in mearas(cfgs[0], "assemblies").stdout


def test_agents_keep_nodes_alive_and_dead_agent_degrades(
        tmp_path: Path, etcd: EtcdCluster, fake_mearasd: FakeMearasd,
        fake_peers: dict[str, FakeMearasd]) -> None:
    socks = {"node-a": fake_mearasd.path, "node-b": fake_peers["node-b"].path}
    cfgs = [write_config(tmp_path / f"{n}.toml", node=n, backend="etcd",
                         endpoints=etcd.endpoints, prefix=f"/{tmp_path.name}/", ttl=2,
                         socket_path=socks[n]) for n in ("node-a", "node-b")]
    env = dict(os.environ, PYTHONPATH=str(PKG_ROOT))
    agents = [subprocess.Popen([sys.executable, "-m", "mearas_am.cli", "--config", str(c),
                                "node-agent", "--interval", "0.5"], env=env) for c in cfgs]
    try:
        t0 = time.monotonic()
        while len(json.loads(mearas(cfgs[0], "nodes", "--json").stdout)) < 2:
            assert time.monotonic() - t0 < 20, "agents never published"
            time.sleep(0.2)
        time.sleep(3)  # past the TTL: only the agents' refreshes keep the nodes listed
        assert len(json.loads(mearas(cfgs[0], "nodes", "--json").stdout)) == 2
        asm = json.loads(mearas(cfgs[0], "compose", "--vgpus", "6", "--policy", "spread",
                                "--json").stdout)
        assert {v["node"] for v in asm["vgpus"]} == {"node-a", "node-b"}
        agents[1].kill()  # node-b's agent dies without withdrawing
        agents[1].wait()
        t0 = time.monotonic()
        while "node-b" in mearas(cfgs[0], "nodes").stdout:
            assert time.monotonic() - t0 < 15, "node-b never expired"
            time.sleep(0.3)
        out = mearas(cfgs[0], "assemblies").stdout
        assert asm["id"] in out and "degraded (lost node-b)" in out
        agents[0].send_signal(signal.SIGTERM)  # clean stop withdraws node-a at once
        assert agents[0].wait(10) == 0
        assert json.loads(mearas(cfgs[0], "nodes", "--json").stdout) == []
    finally:
        for a in agents:
            kill_if_running(a)
