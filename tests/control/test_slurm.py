"""The SLURM generic resource `vgpu` end to end: munged, slurmctld and slurmd (Debian's
slurm-wlm) started by hand on loopback with a generated munge key, the Prolog/Epilog/TaskProlog
scripts written by `mearas slurm-install`, mearasd on the sim device, a file registry.
Skipped only when slurm-wlm or munge is not installed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mearas_am.config import load_config
from mearas_am.control.client import SocketMearasdClient
from mearas_am.model import Assembly
from mearas_am.registry import open_registry

from .conftest import LIBDIR, MEARASD, NODE, PROBE, TOP, free_port, stop_process, wait_listening

SLURM_NODE = "mtest"
GiB = 1 << 30

pytestmark = pytest.mark.skipif(
    not all(shutil.which(b, path="/usr/sbin:/usr/bin:" + os.environ.get("PATH", ""))
            for b in ("slurmctld", "slurmd", "srun", "munged", "mungekey")),
    reason="SKIP: slurm-wlm (slurmctld, slurmd, slurm-client) or munge is not installed "
           "(scripts/deps/apt-slurm.txt)")


@dataclass
class Cluster:
    dir: Path
    config: Path  # the manager's am.toml
    env: dict[str, str]  # for srun/sbatch/scontrol
    data_socket: str
    control_socket: str
    logs: list[Path]

    def slurm(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True,
                              timeout=timeout, cwd=self.dir)

    def booked(self) -> list[Assembly]:
        reg = open_registry(load_config(str(self.config)))
        try:
            return list(reg.snapshot().assemblies.values())
        finally:
            reg.close()

    def instantiated(self) -> list[str]:
        return [a for a, _, _ in SocketMearasdClient(self.control_socket, 10).list_assemblies()]

    def wait_released(self, timeout: float = 30) -> None:
        """The epilog runs after the job ends, srun does not wait for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.booked() and not self.instantiated():
                return
            time.sleep(0.2)
        raise AssertionError(f"still booked {self.booked()}, instantiated {self.instantiated()}")

    def final_state(self, job: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while (st := self.job_field(job, "JobState")) in ("PENDING", "CONFIGURING", "RUNNING",
                                                           "COMPLETING"):
            assert time.monotonic() < deadline, f"job {job} still {st}"
            time.sleep(0.2)
        return st

    def job_field(self, job: str, key: str) -> str:
        out = self.slurm("scontrol", "show", "job", job).stdout
        for tok in out.replace("\n", " ").split(" "):
            if tok.startswith(key + "="):
                return tok.split("=", 1)[1]
        return ""


def slurm_conf(d: Path, scripts: Path) -> str:
    host = socket.gethostname().split(".")[0]
    return "\n".join([
        "ClusterName=mearastest", f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
        "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={d}/munge/munge.sock",
        f"StateSaveLocation={d}/ctld", f"SlurmdSpoolDir={d}/spool",
        f"SlurmctldPidFile={d}/slurmctld.pid", f"SlurmdPidFile={d}/slurmd.pid",
        f"SlurmctldLogFile={d}/slurmctld.log", f"SlurmdLogFile={d}/slurmd.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "SelectType=select/cons_tres", "SchedulerType=sched/builtin", "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "ReturnToService=2", "SlurmdParameters=config_overrides",
        # what an operator adds (assembly-manager/slurm/slurm.conf.example)
        "GresTypes=vgpu", "PrologFlags=Alloc",
        f"Prolog={scripts}/prolog", f"Epilog={scripts}/epilog",
        f"TaskProlog={scripts}/task-prolog",
        f"NodeName={SLURM_NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs=2 Gres=vgpu:8",
        "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    d = tmp_path_factory.mktemp("slurm")
    d.chmod(0o755)
    for sub in ("munge", "ctld", "spool", "state", "scripts"):
        (d / sub).mkdir(mode=0o755)
    procs: list[subprocess.Popen[bytes]] = []
    logs = [d / "mearasd.log", d / "munge" / "munged.log", d / "slurmctld.log",
            d / "slurmd.log"]
    data, control = d / "d.sock", d / "c.sock"
    try:
        with open(logs[0], "wb") as out:
            procs.append(subprocess.Popen(
                [str(MEARASD), "--device=sim", f"--socket={data}", f"--control={control}",
                 f"--node-name={NODE}", "--quota-mb=1024"], stdout=out,
                stderr=subprocess.STDOUT))
        wait_listening(str(control), procs[0])
        wait_listening(str(data), procs[0])

        cfg = d / "am.toml"
        gpu = ['[[node.gpus]]', 'name = "mearas-sim"', 'compute_capability = "9.0"',
               'memory = "16GiB"', "sm_count = 132", 'interconnect = "pcie"']
        cfg.write_text("\n".join([
            "[node]", f'name = "{NODE}"', 'address = "127.0.0.1:7100"',
            "max_vgpus_per_gpu = 2", "use_nvml = false", *gpu, "index = 0", *gpu, "index = 1",
            "[registry]", 'backend = "file"', f'path = "{d / "registry.json"}"',
            "node_ttl = 3600",
            "[mearasd]", f'control_socket = "{control}"', "timeout = 10",
            "[runtime]", f'libdir = "{LIBDIR}"']) + "\n")
        am = TOP / "assembly-manager"
        menv = dict(os.environ, PYTHONPATH=str(am))
        for args in (["node-agent", "--once"],
                     ["slurm-install", "--dir", str(d / "scripts"), "--state-dir",
                      str(d / "state"), "--client-socket", str(data), "--pythonpath", str(am)]):
            r = subprocess.run([sys.executable, "-m", "mearas_am.cli", "--config", str(cfg),
                                *args], env=menv, capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr

        key = d / "munge" / "munge.key"
        subprocess.run(["mungekey", "--create", "--keyfile", str(key)], check=True)
        key.chmod(0o600)
        procs.append(subprocess.Popen(
            ["munged", "--foreground", "--force", f"--socket={d}/munge/munge.sock",
             f"--key-file={key}", f"--pid-file={d}/munge/munged.pid",
             f"--log-file={logs[1]}", f"--seed-file={d}/munge/seed"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_listening(f"{d}/munge/munge.sock", procs[-1])

        conf = d / "slurm.conf"
        conf.write_text(slurm_conf(d, d / "scripts"))
        (d / "gres.conf").write_text(f"NodeName={SLURM_NODE} Name=vgpu Count=8\n")
        env = dict(os.environ, SLURM_CONF=str(conf), MEARAS_DATA_MB="16")
        for k in ("LD_LIBRARY_PATH", "MEARAS_SOCKET", "MEARAS_ASSEMBLY", "MEARAS_VGPUS"):
            env.pop(k, None)
        procs.append(subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen(["slurmd", "-D", "-f", str(conf), "-N", SLURM_NODE],
                                      env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        c = Cluster(d, cfg, env, str(data), str(control), logs)
        deadline = time.monotonic() + 30
        while c.slurm("sinfo", "-h", "-o", "%t").stdout.strip() != "idle":
            for p in procs:
                assert p.poll() is None, f"{p.args!r} exited with {p.returncode}"
            assert time.monotonic() < deadline, "slurmd did not register as idle in 30 s"
            time.sleep(0.2)
        yield c
    finally:
        for p in reversed(procs):
            stop_process(p, 10)
        for log in logs:
            if log.exists():
                sys.stderr.write(f"---- {log.name}\n{log.read_text(errors='replace')[-6000:]}")


@pytest.fixture
def idle(cluster: Cluster) -> Cluster:
    """The cluster once the epilogs of earlier tests' jobs have run."""
    cluster.wait_released()
    return cluster


def kv(out: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_srun_gres_vgpu_sees_its_vgpus(idle: Cluster) -> None:
    r = idle.slurm("srun", "--gres=vgpu:2", str(PROBE))
    assert r.returncode == 0, r.stdout + r.stderr
    out = kv(r.stdout)
    assert out["count"] == "2"
    # quota: GPU memory / sharing factor; mearasd enforces it
    assert out["dev0_total"] == out["dev1_total"] == str(8 * GiB)
    assert out["dev0_within_quota_status"] == out["dev1_memset_status"] == "0"


def test_job_environment_names_its_assembly(idle: Cluster) -> None:
    r = idle.slurm("srun", "--gres=vgpu:2", "sh", "-c",
                      'echo job=$SLURM_JOB_ID; echo asm=$MEARAS_ASSEMBLY; '
                      'echo n=$MEARAS_VGPUS; echo lib=$LD_LIBRARY_PATH; echo sock=$MEARAS_SOCKET')
    assert r.returncode == 0, r.stdout + r.stderr
    out = kv(r.stdout)
    assert out["n"] == "2" and out["lib"] == str(LIBDIR) and out["sock"] == idle.data_socket
    log = idle.logs[0].read_text()
    assert f"assembly {out['asm']} instantiated for uid {os.getuid()} " \
        f"(slurm:{out['job']}): 2 vGPU(s)" in log


def test_ended_job_releases_its_assembly(idle: Cluster) -> None:
    r = idle.slurm("srun", "--gres=vgpu:4", "sh", "-c", "echo asm=$MEARAS_ASSEMBLY")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(kv(r.stdout)["asm"]) == 16
    idle.wait_released()


def test_request_options_from_the_job_comment(idle: Cluster) -> None:
    r = idle.slurm("srun", "--gres=vgpu:1", "--comment=mearas: --memory 1GiB --policy pack",
                      str(PROBE))
    assert r.returncode == 0, r.stdout + r.stderr
    out = kv(r.stdout)
    assert out["count"] == "1" and out["dev0_total"] == str(GiB)


@pytest.mark.parametrize("args, reason", [
    (["--gres=vgpu:5"], "cannot compose 5 vGPU(s) for job {job}: cannot place 5 vGPU(s)"),
    (["--gres=vgpu:1", "--comment=mearas: --policy nosuch"],
     "cannot compose 1 vGPU(s) for job {job}: job comment: argument --policy: invalid choice"),
])
def test_failed_prolog_fails_the_job_with_its_reason(idle: Cluster, args: list[str],
                                                     reason: str) -> None:
    name = f"fail-{time.monotonic_ns()}"
    r = idle.slurm("srun", f"--job-name={name}", *args, "sh", "-c", "echo started")
    assert r.returncode != 0
    assert "started" not in r.stdout
    [job] = idle.slurm("squeue", "-h", "-t", "all", "-n", name, "-o", "%i").stdout.split()
    assert f"mearas: error: {reason.format(job=job)}" in r.stdout, r.stdout
    assert idle.job_field(job, "AdminComment").startswith("mearas:")
    assert idle.final_state(job) == "FAILED"
    assert idle.booked() == [] and idle.instantiated() == []
    # one job's request does not drain the node
    assert idle.slurm("sinfo", "-h", "-o", "%t").stdout.strip() == "idle"


def test_cancelled_job_releases_its_assembly(idle: Cluster) -> None:
    r = idle.slurm("sbatch", "--parsable", "--gres=vgpu:2", "--output=/dev/null",
                      "--wrap=sleep 600")
    assert r.returncode == 0, r.stderr
    job = r.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 30
    while not idle.instantiated():
        assert time.monotonic() < deadline, "the batch job's assembly never came"
        time.sleep(0.2)
    [a] = idle.booked()
    assert a.owner == f"slurm:{job}" and len(a.vgpus) == 2
    assert idle.instantiated() == [a.id]
    assert idle.slurm("scancel", job).returncode == 0
    idle.wait_released()
    assert idle.final_state(job) == "CANCELLED"


def test_job_without_vgpu_gets_no_assembly(idle: Cluster) -> None:
    r = idle.slurm("srun", "sh", "-c", 'echo "asm=${MEARAS_ASSEMBLY-unset}"')
    assert r.returncode == 0, r.stdout + r.stderr
    assert kv(r.stdout)["asm"] == "unset"
    assert idle.booked() == []
