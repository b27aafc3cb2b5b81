"""SLURM: a generic resource `vgpu` (`srun --gres=vgpu:N`) backed by mearas assemblies.

slurmd's Prolog (`mearas slurm-prolog`, root) reads how many vgpu the job holds on this node
from `scontrol show job -d` and the request options from the job's comment
(`--comment="mearas: --policy spread --memory 8GiB"`), books and instantiates an assembly owned
by `slurm:<jobid>` for the job's uid, and leaves a state file for the job. The TaskProlog
(`mearas slurm-task-prolog`, the job's user) turns that file into `export NAME=value` lines:
MEARAS_ASSEMBLY, MEARAS_VGPUS, LD_LIBRARY_PATH and MEARAS_SOCKET. The Epilog
(`mearas slurm-epilog`, root, also after a cancel or a failure) releases the job's
assemblies of this node and removes the state file.

A prolog that cannot compose the assembly does not exit non-zero (slurmd would drain the
node for one job's request); it books nothing, records the reason in the state file and in
the job's AdminComment, and the TaskProlog prints the reason into the job's output and exits
1, so every task of the job fails before it starts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, NoReturn

from . import booking
from .config import Config, load_config
from .errors import MearasError, RequestError
from .manager import Manager
from .model import Assembly, AssemblyRequest

COMMANDS = ("slurm-prolog", "slurm-epilog", "slurm-task-prolog", "slurm-install")
DEFAULT_STATE_DIR = "/run/mearas-slurm"
DEFAULT_SCRIPT_DIR = "/etc/slurm/mearas"
COMMENT_MARK = "mearas:"
MAX_COMMENT = 1024  # bytes of job comment we look at; a longer one is refused
MAX_VGPUS = 64  # per node and job
MAX_STATE = 4096
MARKER = "# installed by mearas slurm-install"
SCONTROL_TIMEOUT = 30.0

_JOB_ID = re.compile(r"[0-9]{1,10}")
_NODE_LINE = re.compile(r"^\s*Nodes=(\S+)\s.*\bGRES=(\S*)")
_VGPU = re.compile(r"(?:^|,)vgpu(?::[^(,:]+)?(?::\d+)?\((CNT:\d+|IDX:[0-9,\-]*)\)")


class SlurmError(MearasError):
    """What the Slurm side gave us (environment, scontrol) is missing or malformed."""


def job_owner(job_id: str) -> str:
    return f"slurm:{job_id}"


def state_path(state_dir: str, job_id: str) -> Path:
    return Path(state_dir) / f"job-{job_id}.json"


def _env_job_id(env: Mapping[str, str]) -> str:
    job = env.get("SLURM_JOB_ID", "")
    if not _JOB_ID.fullmatch(job):
        raise SlurmError(f"SLURM_JOB_ID={job!r} is not a job id (run me as slurmd's "
                         "Prolog/Epilog/TaskProlog)")
    return job


def _env_uid(env: Mapping[str, str]) -> int:
    uid = env.get("SLURM_JOB_UID", "")
    if not _JOB_ID.fullmatch(uid):
        raise SlurmError(f"SLURM_JOB_UID={uid!r} is not a uid")
    return int(uid)


# ---- what the job asked for

def _idx_count(idx: str) -> int:
    n = 0
    for part in filter(None, idx.split(",")):
        lo, _, hi = part.partition("-")
        n += int(hi) - int(lo) + 1 if hi else 1
    return n


def gres_vgpus(gres: str) -> int:
    """vGPUs in one node's GRES detail of `scontrol show job -d`, e.g. `vgpu(CNT:2)`,
    `gpu:a100:1(IDX:0),vgpu(CNT:4)`."""
    n = 0
    for m in _VGPU.finditer(gres):
        kind, _, val = m.group(1).partition(":")
        n += int(val) if kind == "CNT" else _idx_count(val)
    return n


def vgpus_on_node(show_job: str, node: str, expand: Callable[[str], list[str]]) -> int:
    """The vgpu count the job holds on NODE, from `scontrol show job -d` output (its per-node
    lines `Nodes=EXPR CPU_IDs=... GRES=...`); EXPAND turns a hostlist into names."""
    for line in show_job.splitlines():
        m = _NODE_LINE.match(line)
        if m and node in expand(m.group(1)):
            return gres_vgpus(m.group(2))
    return 0


def _scontrol(*args: str) -> str:
    try:
        r = subprocess.run(["scontrol", *args], capture_output=True, text=True,
                           timeout=SCONTROL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SlurmError(f"scontrol {' '.join(args)}: {e}") from None
    if r.returncode != 0:
        raise SlurmError(f"scontrol {' '.join(args)}: {r.stderr.strip() or r.returncode}")
    return r.stdout


def expand_hostlist(expr: str) -> list[str]:
    if "[" not in expr:
        return expr.split(",")
    return _scontrol("show", "hostnames", expr).split()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise RequestError(f"job comment: {message}")


def request_from_comment(comment: str, vgpus: int) -> AssemblyRequest:
    """The request options of `mearas compose` (all but --vgpus, which is the job's vgpu
    count) from the part of the job comment after `mearas:`; no mark, the defaults."""
    from .cli import _request, _request_args  # cli registers this module's commands

    if len(comment.encode()) > MAX_COMMENT:
        raise RequestError(f"job comment longer than {MAX_COMMENT} bytes")
    _, mark, opts = comment.partition(COMMENT_MARK)
    try:
        argv = shlex.split(opts) if mark else []
    except ValueError as e:
        raise RequestError(f"job comment: {e}") from None
    if any(a == "--vgpus" or a.startswith("--vgpus=") for a in argv):
        raise RequestError("job comment: --vgpus is not an option here; the count is the "
                           "job's --gres=vgpu:N")
    p = _Parser(prog=COMMENT_MARK, add_help=False, allow_abbrev=False)
    _request_args(p)
    a = p.parse_args([*argv, "--vgpus", str(vgpus)])
    return _request(a)


# ---- the job's state file (prolog writes, task prolog reads, epilog removes)

def _write_state(path: Path, uid: int, state: dict[str, Any]) -> None:
    """Atomically, owned by the job's user (its TaskProlog runs as that user), mode 0400."""
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
    try:
        os.write(fd, json.dumps(state).encode())
        os.fchown(fd, uid, -1)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _clean(text: str) -> str:
    """One line fit for TaskProlog's `print`/`export` (a newline would start a new command)."""
    return " ".join(text.split())


def _admin_comment(job: str, reason: str) -> None:
    """Best effort: the reason where `scontrol show job` shows it."""
    try:
        _scontrol("update", f"JobId={job}", f"AdminComment=mearas: {_clean(reason)[:400]}")
    except SlurmError as e:
        print(f"mearas slurm-prolog: job {job}: {e}", file=sys.stderr)


def _client_socket(cfg: Config, given: str | None) -> str:
    return given if given is not None else cfg.mearasd.client_socket


def release_job(mgr: Manager, job: str) -> tuple[list[Assembly], list[str]]:
    """Releases the assemblies of JOB composed on this node (a job on several nodes has one
    per node, all owned by slurm:<jobid>; each node's epilog frees its own)."""
    done: list[Assembly] = []
    problems: list[str] = []
    for a in booking.list_assemblies(mgr.registry, job_owner(job)):
        if a.origin != mgr.node:
            continue
        r, p = mgr.stop(a.id)
        problems += p
        if r is not None:
            done.append(r)
    return done, problems


def prolog(config_path: str | None, state_dir: str, client_socket: str | None,
           env: Mapping[str, str]) -> int:
    job = _env_job_id(env)
    uid = _env_uid(env)
    path = state_path(state_dir, job)
    path.unlink(missing_ok=True)
    n = 0
    try:
        n = vgpus_on_node(_scontrol("show", "job", "-d", job), env.get("SLURMD_NODENAME", ""),
                          expand_hostlist)
        if n == 0:
            return 0  # no vgpu asked for: nothing to do
        if n > MAX_VGPUS:
            raise RequestError(f"at most {MAX_VGPUS} vGPUs per node and job")
        request = request_from_comment(env.get("SLURM_JOB_COMMENT", ""), n)
        cfg = load_config(config_path)
        mgr = Manager(cfg)
        try:
            _, problems = release_job(mgr, job)  # left over from an earlier run of this job
            for p in problems:
                print(f"mearas slurm-prolog: job {job}: warning: {p}", file=sys.stderr)
            a = mgr.start(request, job_owner(job), f"uid:{uid}")
            try:
                _write_state(path, uid, {"job": job, "assembly": a.id, "vgpus": len(a.vgpus),
                                         "libdir": cfg.libdir,
                                         "socket": _client_socket(cfg, client_socket)})
            except OSError as e:
                mgr.stop(a.id)
                raise MearasError(f"cannot write {path}: {e} (assembly released)") from None
        finally:
            mgr.close()
        print(f"mearas slurm-prolog: job {job}: assembly {a.id} with {n} vGPU(s) for uid {uid}",
              file=sys.stderr)
        return 0
    except MearasError as e:
        reason = f"cannot compose {n} vGPU(s) for job {job}: {e}" if n else \
            f"cannot read job {job}: {e}"
        print(f"mearas slurm-prolog: {reason}", file=sys.stderr)
        try:
            _write_state(path, uid, {"job": job, "error": reason})
        except OSError as w:
            print(f"mearas slurm-prolog: cannot write {path}: {w}", file=sys.stderr)
            return 1  # the job could not be told: better a drained node than a job without
        _admin_comment(job, reason)
        return 0


def _read_state(path: Path, job: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_STATE + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise SlurmError(f"cannot read {path}: {e}") from None
    try:
        st = json.loads(raw) if len(raw) <= MAX_STATE else None
    except ValueError:
        st = None
    if not isinstance(st, dict) or st.get("job") != job:
        raise SlurmError(f"{path} is not this job's state file")
    return st


def task_prolog(state_dir: str, env: Mapping[str, str], out: IO[str]) -> int:
    """Prints TaskProlog commands: the assembly's environment, or the prolog's failure
    (`print`, then exit 1: slurmstepd does not start the task)."""
    try:
        job = _env_job_id(env)
        st = _read_state(state_path(state_dir, job), job)
        if st is None:
            return 0  # the job holds no vgpu here
        if "error" in st:
            raise MearasError(str(st["error"]))
        asm, vgpus, libdir, sock = (str(st.get(k, "")) for k in
                                    ("assembly", "vgpus", "libdir", "socket"))
        if not asm or not vgpus.isdigit() or any(_clean(v) != v for v in (asm, libdir, sock)):
            raise SlurmError(f"bad state file for job {job}")
    except MearasError as e:
        out.write(f"print mearas: error: {_clean(str(e))}\n")
        return 1
    old = env.get("LD_LIBRARY_PATH", "")
    out.write(f"export MEARAS_ASSEMBLY={asm}\nexport MEARAS_VGPUS={vgpus}\n")
    if libdir:
        out.write(f"export LD_LIBRARY_PATH={libdir}:{old}\n" if old and _clean(old) == old
                  else f"export LD_LIBRARY_PATH={libdir}\n")
    if sock:
        out.write(f"export MEARAS_SOCKET={sock}\n")
    return 0


def epilog(config_path: str | None, state_dir: str, env: Mapping[str, str]) -> int:
    """Releases the job's assemblies of this node. Non-zero (slurmd drains the node) only
    when the registry cannot be updated, i.e. a booking may be left behind."""
    job = _env_job_id(env)
    state_path(state_dir, job).unlink(missing_ok=True)
    mgr = Manager(load_config(config_path))
    try:
        done, problems = release_job(mgr, job)
    finally:
        mgr.close()
    for p in problems:
        print(f"mearas slurm-epilog: job {job}: warning: {p}", file=sys.stderr)
    for a in done:
        print(f"mearas slurm-epilog: job {job}: released assembly {a.id}", file=sys.stderr)
    return 0


# ---- wrapper scripts for slurm.conf (Prolog= etc. take a path, no arguments)

def wrapper_scripts(config_path: str, state_dir: str, client_socket: str | None,
                    python: str = sys.executable, pythonpath: str | None = None
                    ) -> dict[str, str]:
    env = f"PYTHONPATH={shlex.quote(pythonpath)} " if pythonpath else ""
    base = (f"{env}exec {shlex.quote(python)} -m mearas_am.cli --config "
            f"{shlex.quote(config_path)}")
    sd = f"--state-dir {shlex.quote(state_dir)}"
    sock = f" --client-socket {shlex.quote(client_socket)}" if client_socket is not None else ""
    what = {"prolog": ("Prolog (slurmd, root)", f"slurm-prolog {sd}{sock}"),
            "epilog": ("Epilog (slurmd, root)", f"slurm-epilog {sd}"),
            "task-prolog": ("TaskProlog (the job's user)", f"slurm-task-prolog {sd}")}
    return {name: f"#!/bin/sh\n{MARKER}\n# slurm.conf {role}\n{base} {cmd}\n"
            for name, (role, cmd) in what.items()}


def install_scripts(directory: str, config_path: str, state_dir: str,
                    client_socket: str | None, pythonpath: str | None, force: bool
                    ) -> list[str]:
    d = Path(directory)
    scripts = wrapper_scripts(os.path.abspath(config_path), state_dir, client_socket,
                              pythonpath=pythonpath)
    done = []
    try:
        d.mkdir(parents=True, exist_ok=True)
        for name, text in scripts.items():
            p = d / name
            if p.exists() and MARKER not in p.read_text(errors="replace") and not force:
                raise MearasError(f"{p} exists and was not installed by mearas; refusing to "
                                  "overwrite it (use --force)")
            tmp = p.with_name(p.name + ".mearas-tmp")
            tmp.write_text(text)
            tmp.chmod(0o755)
            os.replace(tmp, p)
            done.append(str(p))
    except OSError as e:
        raise MearasError(f"cannot install {d}: {e}") from None
    return done


# ---- command line (registered by cli.py)

def add_parsers(sub: Any) -> None:
    state = argparse.ArgumentParser(add_help=False)
    state.add_argument("--state-dir", default=DEFAULT_STATE_DIR,
                       help=f"per-job state files (default {DEFAULT_STATE_DIR})")
    sock = argparse.ArgumentParser(add_help=False)
    sock.add_argument("--client-socket", help="mearasd's client socket handed to jobs as "
                      "MEARAS_SOCKET (default: the config's, else the runtime's default)")
    sub.add_parser("slurm-prolog", parents=[state, sock],
                   help="slurmd Prolog: compose the job's vgpu assembly")
    sub.add_parser("slurm-epilog", parents=[state], help="slurmd Epilog: release it")
    sub.add_parser("slurm-task-prolog", parents=[state],
                   help="TaskProlog: hand the assembly to the job's environment")
    p = sub.add_parser("slurm-install", parents=[state, sock],
                       help="write the Prolog/Epilog/TaskProlog scripts for slurm.conf")
    p.add_argument("--dir", default=DEFAULT_SCRIPT_DIR,
                   help=f"where to write them (default {DEFAULT_SCRIPT_DIR})")
    p.add_argument("--pythonpath", help="run them with this PYTHONPATH (uninstalled tree)")
    p.add_argument("--force", action="store_true")


def dispatch(a: argparse.Namespace) -> int:
    env = os.environ
    if a.cmd == "slurm-task-prolog":
        return task_prolog(a.state_dir, env, sys.stdout)
    if a.cmd == "slurm-prolog":
        return prolog(a.config, a.state_dir, a.client_socket, env)
    if a.cmd == "slurm-epilog":
        return epilog(a.config, a.state_dir, env)
    cfg = a.config or os.environ.get("MEARAS_CONFIG") or "/etc/mearas/am.toml"
    for p in install_scripts(a.dir, cfg, a.state_dir, a.client_socket, a.pythonpath, a.force):
        print(f"installed {p}")
    return 0
