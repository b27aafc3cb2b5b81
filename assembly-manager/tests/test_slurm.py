"""The SLURM glue's parsing and its job state file, without Slurm (tests/control/test_slurm.py
runs it under slurmctld and slurmd)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mearas_am import booking, slurm
from mearas_am.config import load_config
from mearas_am.errors import MearasError, RequestError
from mearas_am.manager import Manager
from mearas_am.model import Assembly
from mearas_am.profiles import collect_profile
from mearas_am.registry import open_registry

from .conftest import write_config
from .fake_mearasd import FakeMearasd

SHOW_JOB = """JobId=7 JobName=x
   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A
   JOB_GRES=vgpu:3
     Nodes=n[1-2] CPU_IDs=0 Mem=1 GRES=gpu:a100:1(IDX:0),vgpu(CNT:3)
     Nodes=n3 CPU_IDs=0-1 Mem=1 GRES=vgpu(CNT:1)
     Nodes=n4 CPU_IDs=0 Mem=1 GRES=
   TresPerNode=gres:vgpu:3
"""


def fake_expand(expr: str) -> list[str]:
    return {"n[1-2]": ["n1", "n2"]}.get(expr, expr.split(","))


@pytest.mark.parametrize("node, want", [("n2", 3), ("n3", 1), ("n4", 0), ("n9", 0)])
def test_vgpus_on_node_from_show_job(node: str, want: int) -> None:
    assert slurm.vgpus_on_node(SHOW_JOB, node, fake_expand) == want


@pytest.mark.parametrize("gres, want", [
    ("vgpu(CNT:2)", 2), ("vgpu:fast(CNT:5)", 5), ("vgpu(IDX:0-2,5)", 4),
    ("gpu(IDX:0),vgpu(CNT:2),nic(CNT:1)", 2), ("myvgpu(CNT:9)", 0), ("gpu(CNT:2)", 0), ("", 0),
])
def test_gres_detail_count(gres: str, want: int) -> None:
    assert slurm.gres_vgpus(gres) == want


def test_request_from_comment() -> None:
    r = slurm.request_from_comment("budget x; mearas: --policy spread --memory 8GiB "
                                   "--local-only --min-cc 8.0", 3)
    assert (r.vgpus, r.policy, r.memory_per_vgpu, r.local_only, r.min_cc) == \
        (3, "spread", 8 << 30, True, (8, 0))
    d = slurm.request_from_comment("no options for mearas here", 2)
    assert (d.vgpus, d.policy, d.memory_per_vgpu) == (2, "local-first", None)


@pytest.mark.parametrize("comment, words", [
    ("mearas: --vgpus 7", "--vgpus is not an option"),
    ("mearas: --policy nosuch", "invalid choice"),
    ("mearas: --memory", "expected one argument"),
    ("mearas: --mem 8GiB", "unrecognized arguments"),  # no abbreviations
    ("mearas: --memory 'x", "No closing quotation"),
    ("mearas: --memory lots", "size"),
    ("mearas: " + "x" * 2000, "longer than"),
])
def test_bad_comment_is_a_request_error(comment: str, words: str) -> None:
    with pytest.raises(RequestError, match=words):
        slurm.request_from_comment(comment, 1)


def env(job: str = "42", **kw: str) -> dict[str, str]:
    return {"SLURM_JOB_ID": job, **kw}


def state(tmp: Path, job: str, d: dict[str, object]) -> None:
    p = slurm.state_path(str(tmp), job)
    p.write_text(json.dumps(d))


def run_task_prolog(tmp: Path, e: dict[str, str]) -> tuple[int, str]:
    out = io.StringIO()
    rc = slurm.task_prolog(str(tmp), e, out)
    return rc, out.getvalue()


def test_task_prolog_exports_the_assembly(tmp_path: Path) -> None:
    state(tmp_path, "42", {"job": "42", "assembly": "a" * 16, "vgpus": 2, "libdir": "/l/m",
                           "socket": "/run/m.sock"})
    assert run_task_prolog(tmp_path, env(LD_LIBRARY_PATH="/opt/x")) == (0, (
        f"export MEARAS_ASSEMBLY={'a' * 16}\nexport MEARAS_VGPUS=2\n"
        "export LD_LIBRARY_PATH=/l/m:/opt/x\nexport MEARAS_SOCKET=/run/m.sock\n"))


def test_task_prolog_without_state_prints_nothing(tmp_path: Path) -> None:
    assert run_task_prolog(tmp_path, env()) == (0, "")


def test_task_prolog_reports_the_prolog_failure(tmp_path: Path) -> None:
    state(tmp_path, "42", {"job": "42", "error": "no room\nexport LD_PRELOAD=/x"})
    assert run_task_prolog(tmp_path, env()) == \
        (1, "print mearas: error: no room export LD_PRELOAD=/x\n")


@pytest.mark.parametrize("content", [
    {"job": "41", "assembly": "a", "vgpus": 1},  # another job's
    {"job": "42", "assembly": "a\nexport LD_PRELOAD=/evil.so", "vgpus": 1},
    {"job": "42", "assembly": "", "vgpus": 1},
    "not json", "x" * 5000,
])
def test_task_prolog_refuses_a_bad_state_file(tmp_path: Path, content: object) -> None:
    p = slurm.state_path(str(tmp_path), "42")
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    rc, out = run_task_prolog(tmp_path, env())
    assert rc == 1 and out.startswith("print mearas: error:") and "export" not in out


@pytest.mark.parametrize("job", ["", "12a", "1;2", "9" * 11])
def test_bad_job_id_is_refused(tmp_path: Path, job: str) -> None:
    with pytest.raises(MearasError, match="SLURM_JOB_ID"):
        slurm.epilog(None, str(tmp_path), env(job))


def test_install_writes_three_scripts_and_keeps_foreign_ones(tmp_path: Path) -> None:
    cfg = tmp_path / "am.toml"
    cfg.write_text("")
    d = tmp_path / "scripts"
    pp = str(Path(__file__).resolve().parents[1])
    cli = [sys.executable, "-m", "mearas_am.cli", "--config", str(cfg), "slurm-install",
           "--dir", str(d), "--state-dir", str(tmp_path / "st"), "--pythonpath", pp]
    r = subprocess.run(cli, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in d.iterdir()) == ["epilog", "prolog", "task-prolog"]
    # the TaskProlog script runs in slurmstepd's environment: no PATH, no PYTHONPATH
    (tmp_path / "st").mkdir()
    state(tmp_path / "st", "5", {"job": "5", "assembly": "b" * 16, "vgpus": 1,
                                 "libdir": "", "socket": ""})
    t = subprocess.run([str(d / "task-prolog")], capture_output=True, text=True,
                       env={"SLURM_JOB_ID": "5"})
    assert (t.returncode, t.stdout) == (0, f"export MEARAS_ASSEMBLY={'b' * 16}\n"
                                        "export MEARAS_VGPUS=1\n"), t.stderr
    (d / "prolog").write_text("#!/bin/sh\nsite prolog\n")
    r = subprocess.run(cli, capture_output=True, text=True)
    assert r.returncode == 1 and "not installed by mearas" in r.stderr
    assert (d / "prolog").read_text() == "#!/bin/sh\nsite prolog\n"


# ---- prolog and epilog against the manager, with a stand-in scontrol and FakeMearasd

@pytest.fixture
def scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `scontrol` on PATH: `show job -d 77` prints SHOW_JOB with job 77 on node n3 (one
    vgpu) and on n[1-2] (three); other calls are logged to the returned file."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "scontrol.log"
    (bindir / "scontrol").write_text(
        "#!/bin/sh\n"
        f'if [ "$*" = "show job -d 77" ]; then cat <<"END"\n{SHOW_JOB}END\nexit 0; fi\n'
        f'if [ "$1 $2" = "show hostnames" ]; then echo n1; echo n2; exit 0; fi\n'
        f'echo "$@" >> {log}\n')
    (bindir / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return log


def publish(cfg: Path) -> None:
    mgr = Manager(load_config(str(cfg)))
    try:
        mgr.registry.publish_node(collect_profile(mgr.config, mgr.mearasd))
    finally:
        mgr.close()


def booked(cfg: Path) -> list[Assembly]:
    reg = open_registry(load_config(str(cfg)))
    try:
        return booking.list_assemblies(reg)
    finally:
        reg.close()


def job_env(node: str) -> dict[str, str]:
    return env("77", SLURM_JOB_UID="4242", SLURMD_NODENAME=node,
               SLURM_JOB_COMMENT="mearas: --memory 1GiB")


def test_prolog_books_for_the_job_user_and_epilog_releases(
        tmp_path: Path, scontrol: Path, fake_mearasd: FakeMearasd) -> None:
    # one registry, two nodes of the job: n2 (three vgpu) is node-a, n3 (one) is node-b
    cfgs = [write_config(tmp_path / f"{n}.toml", node=n, registry_path=tmp_path / "reg.json",
                         socket_path=fake_mearasd.path, libdir="/opt/mearas/lib")
            for n in ("node-a", "node-b")]
    for c in cfgs:
        publish(c)
    st = tmp_path / "state"
    assert slurm.prolog(str(cfgs[0]), str(st), "/run/d.sock", job_env("n2")) == 0
    assert slurm.prolog(str(cfgs[1]), str(st / "b"), None, job_env("n3")) == 0
    asms = {a.origin: a for a in booked(cfgs[0])}
    assert {o: (a.owner, a.identity, len(a.vgpus), a.vgpus[0].memory_quota_bytes)
            for o, a in asms.items()} == {"node-a": ("slurm:77", "uid:4242", 3, 1 << 30),
                                          "node-b": ("slurm:77", "uid:4242", 1, 1 << 30)}
    assert fake_mearasd.identities[asms["node-a"].id] == "uid:4242"
    f = slurm.state_path(str(st), "77")
    assert (f.stat().st_uid, f.stat().st_mode & 0o777) == (4242, 0o400)
    assert json.loads(f.read_text()) == {"job": "77", "assembly": asms["node-a"].id,
                                         "vgpus": 3, "libdir": "/opt/mearas/lib",
                                         "socket": "/run/d.sock"}
    # node-a's epilog frees node-a's assembly only
    assert slurm.epilog(str(cfgs[0]), str(st), env("77")) == 0
    assert not f.exists()
    assert [a.origin for a in booked(cfgs[0])] == ["node-b"]
    assert asms["node-a"].id not in fake_mearasd.assemblies
    assert not scontrol.exists()  # no AdminComment: nothing failed


def test_failed_prolog_books_nothing_and_records_why(
        tmp_path: Path, scontrol: Path, fake_mearasd: FakeMearasd) -> None:
    cfg = write_config(tmp_path / "am.toml", socket_path=fake_mearasd.path)
    publish(cfg)
    fake_mearasd.refuse_instantiate = "no room on GPU 0"
    st = tmp_path / "state"
    assert slurm.prolog(str(cfg), str(st), None, job_env("n3")) == 0  # the node stays up
    assert booked(cfg) == []
    why = json.loads(slurm.state_path(str(st), "77").read_text())["error"]
    assert why.startswith("cannot compose 1 vGPU(s) for job 77: ") and "no room" in why
    assert scontrol.read_text() == f"update JobId=77 AdminComment=mearas: {why}\n"
