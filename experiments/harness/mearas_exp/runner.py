"""One application process per vGPU, run concurrently, pinned and recorded."""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .assembly import RunningAssembly
from .resultline import AppResult, ResultLineError, find_result


@dataclass
class ProcRecord:
    vgpu: int
    kind: str
    gpu: int
    node: str
    pid: int
    cpus: str  # affinity read back from the running process
    rc: int
    result: AppResult | None
    error: str


def cpu_plan(count: int, pin: bool) -> list[set[int] | None]:
    """CPUs for `count` processes: one CPU each from the top of our affinity set
    (mearasd, started unpinned, tends to the low ones), wrapping around."""
    if not pin:
        return [None] * count
    cpus = sorted(os.sched_getaffinity(0), reverse=True)
    return [{cpus[i % len(cpus)]} for i in range(count)]


def format_cpus(cpus: set[int]) -> str:
    return ",".join(map(str, sorted(cpus)))


def run_apps(asm: RunningAssembly, program: Path, app_args: list[str], *, seconds: float | None,
             pin: bool, workdir: Path, timeout: float, check: bool = False,
             tag: str = "run", parse: bool = True) -> list[ProcRecord]:
    """Start one process of `program` per vGPU of the assembly at once (each with
    --device i, or --device GPU in native mode), wait for all, parse RESULT lines."""
    env = {**os.environ, **asm.client_env()}
    if asm.spec.mode == "native":  # make sure the real CUDA runtime is used
        for k in [k for k in env if k.startswith("MEARAS_")]:
            del env[k]
        lib = str(asm.paths.libdir)
        env["LD_LIBRARY_PATH"] = ":".join(d for d in env.get("LD_LIBRARY_PATH", "").split(":")
                                          if d and os.path.realpath(d) != os.path.realpath(lib))
    plan = cpu_plan(len(asm.placements), pin)
    procs: list[tuple[subprocess.Popen[bytes], Path, Path, str]] = []
    for p, cpus in zip(asm.placements, plan):
        args = [str(program), *app_args]
        if parse:
            device = p.gpu if p.kind == "native" else p.vgpu
            args += ["--device", str(device)]
            if seconds is not None:
                args += ["--seconds", f"{seconds:g}"]
            if not check:
                args.append("--no-check")
        out, err = workdir / f"{tag}-v{p.vgpu}.out", workdir / f"{tag}-v{p.vgpu}.err"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            proc = subprocess.Popen(
                args, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, env=env,
                preexec_fn=(lambda c=cpus: os.sched_setaffinity(0, c)) if cpus else None)
        try:
            seen = format_cpus(os.sched_getaffinity(proc.pid))
        except OSError:  # already gone: report the plan
            seen = format_cpus(cpus) if cpus else "unknown"
        procs.append((proc, out, err, seen))
    deadline = time.monotonic() + timeout
    records = []
    for p, (proc, out, err, seen) in zip(asm.placements, procs):
        error = ""
        try:
            rc = proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            error = f"timed out after {timeout:.0f} s"
        result = None
        text = out.read_text(errors="replace")
        if not error and rc != 0:
            tail = err.read_text(errors="replace").strip().splitlines()[-3:]
            error = f"exit {rc}: {' | '.join(tail)}"
        if not error and parse:
            try:
                result = find_result(text)
            except ResultLineError as e:
                error = str(e)
        records.append(ProcRecord(p.vgpu, p.kind, p.gpu, p.node, proc.pid, seen, rc, result, error))
    return records
