"""The suite's runner against real mearasd nodes on the host-memory model
(mearasd --device=sim): the nodes it starts (local, and a remote vGPU over
loopback with a cluster key), the records-served lines it reads from their
logs, and how a run that went around mearas, was served too little, met an
unsupported call or hung fails. The framework stand-in is drv_client.py (a
driver-API client in ctypes) and a tests/sim program."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

import suite
import suitelib as sl

TOP = Path(__file__).resolve().parents[3]
CLIENT = str(Path(__file__).resolve().parent / "drv_client.py")
SIM_PROGRAM = TOP / "tests/sim/build/mem_roundtrip"
GUEST = TOP / "tests/vm-cuda/build/guest"

pytestmark = pytest.mark.skipif(not (TOP / "build/bin/mearasd").exists(), reason="build/bin/mearasd not built")


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[suite.Daemons]:
    d = suite.Daemons(TOP / "build/bin/mearasd", tmp_path_factory.mktemp("nodes"), device="sim", remote=True)
    d.start()
    try:
        assert d.errors == {}, d.errors
        yield d
    finally:
        d.stop()


def runner(d: suite.Daemons, tmp: Path, *more: str) -> suite.Runner:
    a = suite.parse_args(["--work", str(tmp), "--python", sys.executable, "--run-timeout-s", "60", *more])
    return suite.Runner(a, d)


def test_a_tests_sim_program_is_counted_in_the_log(nodes: suite.Daemons) -> None:
    if not SIM_PROGRAM.exists():
        pytest.skip(f"{SIM_PROGRAM} not built (make -C tests/sim build/mem_roundtrip)")
    log = nodes.log("local")
    offset = log.stat().st_size
    p = subprocess.Popen([str(SIM_PROGRAM), "4096"], env=nodes.env("local", TOP / "build/lib"),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert sl.connected(log.read_bytes()[offset:].decode()) == {p.pid}
    got = suite.served_records(log, offset, [p.pid], [0])
    assert got[p.pid][0] > 20  # its copies of 1 B .. 4 KiB, each way, with their syncs


@pytest.mark.parametrize("place", ["local", "remote"])
def test_a_client_through_each_node_is_served(nodes: suite.Daemons, tmp_path: Path, place: str) -> None:
    r = runner(nodes, tmp_path).run("copies", place, CLIENT, ["copies"], min_records=40)
    assert r.ok, r.error
    assert r.records[0] >= 40  # 20 copies each way, and the context's own
    if place == "remote":
        assert "link from 127.0.0.1:" in nodes.log("remote-node").read_text()


def test_a_client_that_bypassed_mearas_fails(nodes: suite.Daemons, tmp_path: Path) -> None:
    r = runner(nodes, tmp_path).run("bypass", "local", CLIENT, ["bypass"], min_records=1)
    assert not r.ok
    assert r.error is not None and "no records served to vGPU 0 for this client (did it bypass mearas?)" in r.error


def test_too_few_records_fail(nodes: suite.Daemons, tmp_path: Path) -> None:
    r = runner(nodes, tmp_path).run("copies", "local", CLIENT, ["copies"], min_records=100000)
    assert r.error is not None and "records served to vGPU 0, at least 100000 expected" in r.error


def test_an_unsupported_call_is_named(nodes: suite.Daemons, tmp_path: Path) -> None:
    r = runner(nodes, tmp_path).run("unsupported", "local", CLIENT, ["unsupported"], min_records=0)
    assert r.error is not None
    assert r.error.startswith("cuCheckpointProcessCheckpoint not supported by mearas; the framework said: "
                              "checkpoint failed with error")
    assert any("cuCheckpointProcessCheckpoint is not supported by mearas" in ln for ln in r.unsupported)


def test_each_rank_is_checked_on_its_own_vgpu(nodes: suite.Daemons, tmp_path: Path) -> None:
    r = runner(nodes, tmp_path).run("ranks", "local", CLIENT, ["ranks"], vgpus=2, pid_key="pids",
                                    min_records=40, vgpus_used=[0, 1])
    assert r.ok, r.error
    assert r.records[0] >= 40 and r.records[1] >= 40
    # the same ranks held to a vGPU each did not use: rank 0 left vGPU 1 idle
    r = runner(nodes, tmp_path).run("ranks", "local", CLIENT, ["ranks"], vgpus=2, pid_key="pids",
                                    min_records=40, vgpus_used=[1, 0])
    assert r.error is not None and "served to vGPU 1" in r.error


def test_a_hung_run_is_killed(nodes: suite.Daemons, tmp_path: Path) -> None:
    r = runner(nodes, tmp_path, "--run-timeout-s", "2").run("hang", "local", CLIENT, ["hang"])
    assert r.rc == -9 and r.error is not None and r.error.startswith("timed out after 2 s")


def test_past_the_deadline_nothing_starts(nodes: suite.Daemons, tmp_path: Path) -> None:
    r = runner(nodes, tmp_path, "--deadline-s", "0").run("copies", "local", CLIENT, ["copies"])
    assert r.rc is None and r.error == "not run: past the suite's time budget (--deadline-s 0)"


def test_suite_dry_run_writes_records_table_and_plot(tmp_path: Path) -> None:
    """The whole driver on sim nodes, with the parts that need no torch: CuPy
    and JAX are missing here, so both fail natively and through mearas, and
    the suite says so and exits 1; guest_torch is not run (no --vm-bundle)."""
    out, png, pack = tmp_path / "frameworks.json", tmp_path / "frameworks.png", tmp_path / "pack"
    r = subprocess.run([sys.executable, str(TOP / "experiments/frameworks/suite.py"), "--mearasd-device", "sim",
                        "--only", "cupy,jax,guest", "--work", str(tmp_path / "work"), "--out", str(out),
                        "--plot", str(png), "--pack", str(pack)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    recs = {x["metric"]: x for x in json.loads(out.read_text())}
    assert set(recs) == {"cupy", "jax", "guest_torch"}
    assert recs["cupy"]["pass"] is False and "No module named 'cupy'" in recs["cupy"]["error"]
    assert recs["guest_torch"]["pass"] is None
    assert recs["guest_torch"]["error"].startswith("not run: no --vm-bundle")
    assert all(x["device"] == "sim dry run" for x in recs.values())
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "0 passed, 2 failed, 1 not run"
    assert any(ln.startswith("[") and "cupy [local]: FAILED" in ln for ln in lines)  # progress lines
    assert png.stat().st_size > 0
    assert {p.name for p in pack.iterdir()} == {"frameworks.json", "frameworks.png", "frameworks-table.txt",
                                                "frameworks-logs.tar.gz"}


def test_guest_part_runs_this_machines_python_in_a_vm(tmp_path: Path) -> None:
    """The guest part on sim: a bundle folder of gpu-bundle.sh's layout made of
    this machine's QEMU and the tests/vm-cuda guest image; gpt.py runs natively
    and in the TCG guest, which reads it and this machine's python over the
    virtio-9p share. torch is not here, so both fail at its import, and the
    record says so for each side."""
    if not (GUEST / "initramfs.cpio.gz").exists():
        pytest.skip(f"no guest image in {GUEST} (make -C tests/vm-cuda all)")
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        pytest.skip("no qemu-system-x86_64 (scripts/deps/apt-vm-cuda.txt)")
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: this dry run expects its import to fail")
    bundle = tmp_path / "bundle"
    for link, target in (("bin/qemu-system-x86_64", Path(qemu)), ("bin/mearasd", TOP / "build/bin/mearasd"),
                         ("share/qemu", Path("/usr/share/qemu")), ("share/seabios", Path("/usr/share/seabios")),
                         ("lib/qemu", Path("/usr/lib/x86_64-linux-gnu/qemu")), ("guest", GUEST)):
        (bundle / link).parent.mkdir(parents=True, exist_ok=True)
        (bundle / link).symlink_to(target)
    out, work = tmp_path / "frameworks.json", tmp_path / "work"
    r = subprocess.run([sys.executable, str(TOP / "experiments/frameworks/suite.py"), "--mearasd-device", "sim",
                        "--only", "guest", "--vm-bundle", str(bundle), "--guest-memory-mb", "1024",
                        "--guest-smp", "2", "--guest-bar-mb", "256", "--work", str(work), "--out", str(out),
                        "--plot", str(tmp_path / "frameworks.png")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    (rec,) = json.loads(out.read_text())
    assert rec["metric"] == "guest_torch" and rec["pass"] is False
    assert rec["error"].startswith("guest: ModuleNotFoundError: No module named 'torch'"), rec["error"]
    assert "; fails natively too (native: ModuleNotFoundError: No module named 'torch'" in rec["error"]
    assert "guest: QEMU exit 0 after" in r.stdout and ", guest exit 0, kernel clean" in r.stdout
    result = json.loads((work / "guest/result.json").read_text())
    assert [(x["name"], x["rc"]) for x in result["runs"]] == [("run0", 1), ("run1", 1)]
    assert all(isinstance(x["guest_pid"], int) for x in result["runs"])
    # the guest's python read gpt.py from this machine's root
    gpt = TOP / "experiments/frameworks/gpt.py"
    for n in ("run0", "run1"):
        assert f'File "{gpt}"' in (work / f"runs/guest-{n}.err").read_text()
    assert "VM g: serving" in (work / "mearasd-guest.log").read_text()
