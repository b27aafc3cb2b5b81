"""The GPU lane's remote and batch steps (scripts/gpu-remote.sh,
scripts/gpu-batch.sh) as dry runs on mearasd --device=sim: orchestration only
(namespaces, which process runs where, files written, nothing left behind);
and the lane's verdict (scripts/gpu-lane.sh with GPU_LANE_STEPS): a failed
step fails the lane."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mearas_exp.config import REPO
from mearas_exp.netns import NETNS_DIR

SCRIPTS = REPO / "scripts"


def busybox() -> str | None:
    local = REPO / "build/tools/busybox"
    return str(local) if local.is_file() else shutil.which("busybox")


def ours() -> list[str]:
    return [n for n in os.listdir(NETNS_DIR) if n.startswith("mxg")] if os.path.isdir(NETNS_DIR) else []


def mearasd_pids() -> set[int]:
    exe = str((REPO / "build/bin/mearasd").resolve())
    pids = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/exe") == exe:
                pids.add(int(pid))
        except OSError:
            pass
    return pids


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root")
@pytest.mark.parametrize("tool", ["iproute2", "busybox", "none"])
def test_gpu_remote_dry_run(tool: str, tmp_path: Path) -> None:
    if tool == "iproute2" and shutil.which("ip") is None:
        pytest.skip("no iproute2")
    if tool == "busybox" and busybox() is None:
        pytest.skip("no busybox")
    (tmp_path / "native").mkdir()
    before = mearasd_pids()
    # "none": an unknown tool makes namespaces fail, as on a machine without them
    env = {**os.environ, "MEARAS_REMOTE_DEVICE": "sim", "IPERF3_SECONDS": "1", "GPU_SHAPED_PROGRAMS": "stress_mix",
           "MEARAS_NETNS_TOOL": tool if tool != "none" else "no-such-tool",
           # one run with link options of its own (GPU_LINK_ARGS), recorded with the results
           "GPU_LINK_ARGS": "--link-streams=3" if tool == "none" else ""}
    r = subprocess.run([str(SCRIPTS / "gpu-remote.sh"), str(tmp_path), str(tmp_path / "native"),
                        "/dev/null", "sim dry run"], env=env, capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    network = "loopback" if tool == "none" else f"veth between namespaces ({tool})"
    assert f"network: {network}" in out
    assert ("NO NETWORK NAMESPACES" in out) == (tool == "none")
    # the network, then how the remote node says the link is protected
    rows = json.loads((tmp_path / "remote.json").read_text())  # sim: not experiments/results
    assert rows and all(x["network"].startswith(f"{network}; link encrypted: TLSv1.3") for x in rows)
    rows_off = json.loads((tmp_path / "remote-encryption-off.json").read_text())
    assert rows_off and all(x["network"].startswith(f"{network}; link UNENCRYPTED (link encryption off") for x in rows_off)
    # the raw TCP yardstick and the remote microbenchmarks ran, across the veth pair
    for i in (1, 2):
        for way in ("up", "down", "hot"):
            assert "METRIC raw_tcp_gbps" in (tmp_path / f"raw-tcp-{way}-{i}.txt").read_text()
        assert "METRIC sync_roundtrip_us" in (tmp_path / f"micro-remote-{i}.txt").read_text()
    # the stress mix again with the veth pair shaped (tbf, by the carried tc),
    # or the reason it was not
    if tool == "none":
        assert "remote shaped suite: skipped: no network namespaces" in out
    else:
        assert "remote shaped suite (tbf 1gbit each way on the veth pair): " in out
        assert (tmp_path / "shaped-qdisc.txt").read_text().count("qdisc tbf") == 2
        assert (tmp_path / "remote-shaped/stress_mix.rc").read_text().strip() == "0"
        assert (tmp_path / "remote-shaped/stress_mix.out").read_text().endswith("\nPASS\n")
    # the iperf3 yardstick over the same path (the carried copy of `make tools`,
    # run with its own libraries), one stream and as many as the link used,
    # against the remote copies; every record says its transport
    assert {x["transport"] for x in rows} == {"tls"} and {x["transport"] for x in rows_off} == {"tcp"}
    streams = max(int(ln.split()[3]) for i in (1, 2)
                  for ln in (tmp_path / f"link-streams-{i}.txt").read_text().splitlines()
                  if ln.startswith("METRIC link_streams"))
    assert streams >= 1
    if tool == "none":  # the link's own connection and its 3 data connections
        assert streams == 4
        assert all(x["network"].endswith("; mearasd --link-streams=3") for x in rows + rows_off)
    for doc in (rows, rows_off):
        yard = {x["metric"]: x for x in doc if "iperf3" in x["metric"]}
        assert sorted(yard) == sorted(f"{w}_gbps{p}_vs_iperf3{m}" for w in ("h2d", "d2h") for p, m in
                                      (("", ""), ("_pageable", ""), ("", "_multi")))
        for name, x in yard.items():
            assert "error" not in x and x["native"] > 0 and x["mearas"] > 0, (x.get("error"), x)
            assert x["ratio"] == round(x["mearas"] / x["native"], 4)
            assert x["streams"] == (streams if name.endswith("_multi") else 1)
            assert "plain TCP" in x["baseline"]
    # the first run's address, port and direction: the server in the remote node's namespace
    up = json.loads((tmp_path / "iperf3-up-1.json").read_text())
    assert up["start"]["connecting_to"]["host"] == ("127.0.0.1" if tool == "none" else "10.251.0.1")
    assert up["start"]["test_start"]["reverse"] == 0
    assert json.loads((tmp_path / "iperf3-down-1.json").read_text())["start"]["test_start"]["reverse"] == 1
    # the client node reached the remote node from its own namespace's address
    peer = "127.0.0.1" if tool == "none" else "10.251.0.2"
    assert f"link from {peer}:" in (tmp_path / "remote-node.log").read_text()
    assert ours() == [] and mearasd_pids() <= before, out[-3000:]


def test_gpu_batch_dry_run(tmp_path: Path) -> None:
    r = subprocess.run([str(SCRIPTS / "gpu-batch.sh"), str(tmp_path), "sim"],
                       env={**os.environ, "BATCH_SECONDS": "0.2"}, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines[1:12]] == [str(2 ** i) for i in range(11)]
    assert lines[-1] == "batch points: 11 ok, 0 not ok"
    doc = json.loads((tmp_path / "batch.json").read_text())
    assert doc["device"].startswith("sim") and len(doc["points"]) == 11
    assert (tmp_path / "batch-size.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "batch-logs/batch/p011/node-client.log").is_file()


def test_remote_latency_dry_run() -> None:
    # the quick latency probe of issue 15 on the sim: a round trip and a launch rate through the
    # remote vGPU with the link encrypted and not, and no mearasd of its own left behind
    before = mearasd_pids()
    r = subprocess.run([str(SCRIPTS / "remote-latency.sh"), "1"],
                       env={**os.environ, "MEARAS_LAT_DEVICE": "sim"}, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {ln[:34].strip(): ln[34:].split() for ln in r.stdout.splitlines()[1:]}
    # the sim has no native figures: round trip, its excess, launch rate, its ratio
    assert rows["native"] == ["-", "-", "-", "-"]
    for mode in ("encrypted", "unencrypted"):
        us, over, rate, ratio = rows[f"remote, loopback, {mode}"]
        assert float(us) > 0 and over == "-" and float(rate) > 0 and ratio == "-", r.stdout
    assert mearasd_pids() <= before


def test_carry_tool_iperf3(tmp_path: Path) -> None:
    """iperf3 carried with the libraries a GPU machine may lack (not glibc's, not
    mearasd's) runs from the carried folder with LD_LIBRARY_PATH."""
    iperf3 = shutil.which("iperf3")
    assert iperf3, "Debian's iperf3 is missing (scripts/deps/apt-core.txt)"
    dest = tmp_path / "iperf3"
    r = subprocess.run([str(SCRIPTS / "carry-tool.sh"), iperf3, str(dest)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    carried = sorted(p.name for p in (dest / "lib").iterdir())
    assert "libiperf.so.0" in carried and "libc.so.6" not in carried and "libcrypto.so.3" not in carried
    env = {**os.environ, "LD_LIBRARY_PATH": str(dest / "lib")}
    ldd = subprocess.run(["ldd", str(dest / "iperf3")], env=env, capture_output=True, text=True, timeout=60).stdout
    assert f"libiperf.so.0 => {dest}/lib/libiperf.so.0" in ldd, ldd
    v = subprocess.run([str(dest / "iperf3"), "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert v.returncode == 0 and v.stdout.startswith("iperf 3"), v.stdout + v.stderr


# nvidia-smi as the lane calls it; FAKE_SMI_DIFFERS=1 answers -L differently
# through mearas (MEARAS_SOCKET set), as a broken libnvidia-ml.so.1 would
FAKE_SMI = """#!/bin/sh
case "$*" in
*--query-gpu=name*) echo "Fake GPU" ;;
*--query-gpu=driver_version*) echo "0.0" ;;
-L) if [ -n "$MEARAS_SOCKET" ] && [ "$FAKE_SMI_DIFFERS" = 1 ]; then echo "GPU 0: Another GPU"
    else echo "GPU 0: Fake GPU (UUID: GPU-0)"; fi ;;
*) echo "| 0  Fake GPU |" ;;
esac
"""


def run_lane(tmp_path: Path, steps: str, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    full = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "GPU_LANE_STEPS": steps,
            "GPU_LANE_WORK": str(tmp_path / "lane"), **env}
    full.pop("OUT", None)  # the logs folder keeps table.txt
    return subprocess.run([str(SCRIPTS / "gpu-lane.sh")], env=full, capture_output=True, text=True,
                          timeout=300)


def test_gpu_lane_unknown_step_refused(tmp_path: Path) -> None:
    r = run_lane(tmp_path, "smi,no-such-step")
    assert r.returncode == 2
    assert "gpu-lane: no step 'no-such-step'" in r.stderr and "runtime-choice" in r.stderr


def test_gpu_lane_passes_when_its_steps_pass(tmp_path: Path) -> None:
    r = run_lane(tmp_path, "smi")
    assert r.returncode == 0, r.stdout + r.stderr
    table = (tmp_path / "lane/table.txt").read_text()
    assert "== nvidia-smi -L: ok (GPU 0: Fake GPU (UUID: GPU-0), as native" in table
    assert "== fault isolation: not run (GPU_LANE_STEPS)" in table
    assert table.splitlines()[-1] == "gpu-lane: every step passed (GPU_LANE_STEPS: only smi)"


def test_gpu_lane_fails_when_a_step_fails(tmp_path: Path) -> None:
    r = run_lane(tmp_path, "smi", FAKE_SMI_DIFFERS="1")
    assert r.returncode == 1, r.stdout + r.stderr
    table = (tmp_path / "lane/table.txt").read_text()
    assert "== nvidia-smi -L: FAILED" in table
    assert table.splitlines()[-1].startswith("gpu-lane: FAILED steps: ")
