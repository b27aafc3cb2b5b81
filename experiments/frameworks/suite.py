#!/usr/bin/env python3
"""The framework suite of issue 14, on a GPU machine (the GPU lane): PyTorch,
CuPy and JAX natively and through mearas, in one call.

It starts its own mearasd nodes (a local one; for remote vGPUs a remote node
serving the GPU over remote-link on loopback TCP and a client node whose vGPU 0
is that remote GPU, with a fresh cluster key), then runs:
  - gpt.py (small and GPT-2-small shapes, fp32 and bf16 autocast, training)
    natively, on a local vGPU and on a remote vGPU, alternating, --repeats
    times each: step-time ratios and the final losses; bf16 inference of both
    natively and on a local vGPU;
  - torch.compile, CUDA graphs (whole step, make_graphed_callables), the
    caching allocator with expandable_segments, the cudaMallocAsync backend
    with the whole step captured (graph memory nodes), two vGPUs in one process,
    torch.distributed/NCCL across two vGPUs, CuPy and JAX: one pass/fail each;
  - with --vm-bundle (tests/vm-cuda/gpu-bundle.sh's QEMU and guest image),
    the small model's bf16 training and inference in a TCG guest served by
    mearasd --vm, the guest running this machine's Python over a read-only
    virtio-9p share of its root (tests/vm-cuda/guestpy.py): guest_torch.
Every run through mearas must show in mearasd's log ("client ... vGPU N: K
records served") with enough records, or it fails: a framework that reached
the GPU around mearas would leave none. Failures name the CUDA calls that
mearas logged as not supported (the framework's stderr and mearasd's log).

Writes experiments/results/frameworks.json (microbench.json's record format)
and frameworks.png (step time per configuration), logs under --work, prints
one progress line per run and a table last; exit status 1 when a run failed
or a target was missed, 2 when mearasd could not start.
  python3 experiments/frameworks/suite.py [--repeats N] [--only PART,...] [--no-remote]
                                         [--vm-bundle vmgpu.tar.gz]
Without --vm-bundle the VM-guest part (guest_torch) is not run: its record says so.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
TOP = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(TOP / "tests/vm-cuda"))

import guestpy  # noqa: E402
import suitelib as sl  # noqa: E402
from suitelib import Config, RunResult  # noqa: E402

PARTS = ("ratios", "inference", "compile", "graphs", "expandable", "async_alloc", "two_vgpus", "nccl", "cupy", "jax",
         "guest")
# the guest part: the small model's training, then its inference (gpt.py)
GUEST_CONFIGS: tuple[Config, ...] = (Config("small", "bf16"), Config("small", "bf16", "infer"))
# variables of this process that a guest run gets too (guestpy.run_env adds PATH, HOME, ...)
GUEST_PASS_ENV = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=2, help="runs per configuration and place (default 2)")
    ap.add_argument("--small-warmup", type=int, default=5)
    ap.add_argument("--small-steps", type=int, default=30)
    ap.add_argument("--gpt2-warmup", type=int, default=3)
    ap.add_argument("--gpt2-steps", type=int, default=10)
    ap.add_argument("--only", default=",".join(PARTS),
                    help=f"comma-separated parts to run (default all: {','.join(PARTS)})")
    ap.add_argument("--no-remote", action="store_true", help="no remote vGPU runs (their records fail)")
    ap.add_argument("--deadline-s", type=float, default=480.0,
                    help="start no run after this many seconds (default 480: the GPU lane's command "
                         "limit is 10 minutes); the runs left out fail")
    ap.add_argument("--run-timeout-s", type=float, default=180.0, help="one process at most (default 180)")
    ap.add_argument("--min-records-per-step", type=int, default=10,
                    help="records mearasd must have served per model step (default 10; CUDA-graph "
                         "steps: 2) for a run to count as having gone through mearas")
    ap.add_argument("--min-records-check", type=int, default=10,
                    help="records a capability check's process must have been served (default 10)")
    ap.add_argument("--data-mb", type=int, default=1024, help="MEARAS_DATA_MB of the runs (default 1024)")
    ap.add_argument("--python", default=sys.executable, help="python running the frameworks")
    ap.add_argument("--mearasd", type=Path, default=TOP / "build/bin/mearasd")
    ap.add_argument("--lib", type=Path, default=TOP / "build/lib", help="mearas's libcuda.so.1 and friends")
    ap.add_argument("--work", type=Path, default=TOP / "build/frameworks", help="logs and run outputs")
    ap.add_argument("--out", type=Path, default=TOP / "experiments/results/frameworks.json")
    ap.add_argument("--plot", type=Path, default=TOP / "experiments/results/frameworks.png")
    ap.add_argument("--mearasd-device", choices=["cuda", "sim"], default="cuda",
                    help="sim: mearasd on the host-memory model, a dry run of the orchestration on a "
                         "machine without a GPU (the CPU lane's tests; nothing it measures means anything)")
    ap.add_argument("--device-name", default=None, help="device named in the records (default: nvidia-smi)")
    ap.add_argument("--vm-bundle", type=Path, default=None,
                    help="guest part: tests/vm-cuda/gpu-bundle.sh's vmgpu.tar.gz (or a folder of its layout); "
                         "without it guest_torch is not run")
    ap.add_argument("--guest-warmup", type=int, default=1)
    ap.add_argument("--guest-steps", type=int, default=3)
    ap.add_argument("--guest-memory-mb", type=int, default=8192, help="guest RAM (default 8192)")
    ap.add_argument("--guest-smp", type=int, default=4, help="guest CPUs (default 4)")
    ap.add_argument("--guest-bar-mb", type=int, default=2048,
                    help="mearasd --vm BAR size in MiB (a power of two; default 2048: 250 MiB data area a slot)")
    ap.add_argument("--guest-timeout-s", type=float, default=500.0,
                    help="boot to power-off at most (default 500; the guest's CPU is emulated)")
    ap.add_argument("--pack", type=Path, default=Path(os.environ["OUT"]) if os.environ.get("OUT") else None,
                    help="also copy the results, the table and a tarball of the logs here (default $OUT)")
    a = ap.parse_args(argv)
    parts = [p for p in a.only.split(",") if p]
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        ap.error(f"--only: unknown part(s) {bad}; choose from {','.join(PARTS)}")
    if a.repeats < 1 or min(a.small_steps, a.gpt2_steps, a.guest_steps) < 1 or \
            min(a.small_warmup, a.gpt2_warmup, a.guest_warmup) < 0:
        ap.error("--repeats and the step counts must be >= 1, warmups >= 0")
    if min(a.guest_memory_mb, a.guest_smp, a.guest_bar_mb) < 1 or a.guest_bar_mb & (a.guest_bar_mb - 1):
        ap.error("--guest-memory-mb and --guest-smp must be >= 1, --guest-bar-mb a power of two")
    a.parts = parts
    return a


class Daemons:
    """mearasd nodes of the suite: "local" (vGPUs of this machine's GPU) and,
    with remote, a remote node serving GPU 0 over remote-link on loopback and
    a client node ("remote") whose vGPU 0 is that GPU. Sockets live in a
    private /tmp folder (a unix socket's path is short), logs in work."""

    def __init__(self, mearasd: Path, work: Path, device: str = "cuda", remote: bool = True,
                 max_data_mb: int = 4096) -> None:
        self.mearasd, self.work, self.device, self.remote = mearasd, work, device, remote
        self.max_data_mb = max_data_mb
        self.dir = Path(tempfile.mkdtemp(prefix="mearas-fw."))
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.errors: dict[str, str] = {}

    def socket(self, place: str) -> Path:
        return self.dir / f"{place}.sock"

    def log(self, place: str) -> Path:
        return self.work / f"mearasd-{place}.log"

    def _start(self, name: str, args: list[str]) -> None:
        log = open(self.work / f"mearasd-{name}.log", "wb")
        cmd = [str(self.mearasd), f"--device={self.device}", f"--socket={self.socket(name)}",
               f"--control={self.dir / (name + '-ctl.sock')}", f"--max-data-mb={self.max_data_mb}", *args]
        log.write((" ".join(cmd) + "\n").encode())
        log.flush()
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()

    def _wait(self, name: str, ready: Callable[[], bool], seconds: float = 15.0) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if ready():
                return True
            if self.procs[name].poll() is not None:
                break
            time.sleep(0.1)
        tail = (self.work / f"mearasd-{name}.log").read_text(errors="replace").strip().splitlines()[-3:]
        rc = self.procs[name].poll()
        self.errors[name] = (f"mearasd ({name}) {'exited ' + str(rc) if rc is not None else 'not ready'}: "
                             + " | ".join(tail))
        return False

    def start(self) -> None:
        """Starts the nodes; a node that does not come up is in errors (its
        runs fail with that text)."""
        self.work.mkdir(parents=True, exist_ok=True)
        self._start("local", [])
        self._wait("local", lambda: self.socket("local").exists())
        if not self.remote:
            return
        key = self.dir / "cluster.key"
        key.write_text(os.urandom(32).hex() + "\n")
        key.chmod(0o600)
        port = sl.free_port()

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                return True
            except OSError:
                return False

        self._start("remote-node", [f"--link-port={port}", "--link-bind=127.0.0.1", f"--cluster-key-file={key}"])
        if not self._wait("remote-node", listening):
            self.errors["remote"] = self.errors["remote-node"]
            return
        self._start("remote", ["--vgpus=1", f"--remote=0=127.0.0.1:{port}/0", f"--cluster-key-file={key}"])
        self._wait("remote", lambda: self.socket("remote").exists())

    def env(self, place: str, lib: Path, vgpus: int = 1, data_mb: int | None = None) -> dict[str, str]:
        """The environment of a run on place: mearas's libraries first on the
        library path, its socket, the vGPUs wanted; nothing else changes
        (native: unchanged)."""
        env = dict(os.environ)
        if place == "native":
            return env
        env["LD_LIBRARY_PATH"] = f"{lib}:{env['LD_LIBRARY_PATH']}" if env.get("LD_LIBRARY_PATH") else str(lib)
        env["MEARAS_SOCKET"] = str(self.socket(place))
        env["MEARAS_VGPUS"] = str(vgpus)
        if data_mb is not None:
            env["MEARAS_DATA_MB"] = str(data_mb)
        return env

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def served_records(log: Path, offset: int, pids: list[int], vgpus: list[int], seconds: float = 15.0
                   ) -> dict[int, dict[int, int]]:
    """Records served to each pid, from mearasd's log past offset. Called when
    the processes have exited: waits (up to seconds) until each pid that
    connected has a line for each vGPU (its worker logs them once it notices
    that the client has gone); a pid that never connected has none."""
    end = time.monotonic() + seconds
    while True:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        got = sl.records_served(text, pids)
        came = sl.connected(text)
        if all(v in got[p] for p in pids if p in came for v in vgpus) or time.monotonic() > end:
            return got
        time.sleep(0.2)


class Runner:
    """Runs the suite's processes one at a time, with its bookkeeping."""

    def __init__(self, a: argparse.Namespace, daemons: Daemons) -> None:
        self.a, self.d = a, daemons
        self.t0 = time.monotonic()
        self.n = 0
        self.runs: list[RunResult] = []
        self.runs_dir = a.work / "runs"
        self.runs_dir.mkdir(parents=True, exist_ok=True)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def progress(self, text: str) -> None:
        print(f"[{self.elapsed():6.1f}s] {text}", flush=True)

    def run(self, name: str, place: str, script: str, args: list[str], vgpus: int = 1,
            min_records: int = 10, pid_key: str | None = None, env_extra: dict[str, str] | None = None,
            vgpus_used: list[int] | None = None) -> RunResult:
        """One process: python script args, natively or through mearas
        (place local or remote, MEARAS_VGPUS=vgpus). Through
        mearas, each pid (the process's, or those in its JSON under pid_key)
        must have been served min_records on each of vgpus_used (default: all)."""
        r = RunResult(name=name, place=place)
        self.runs.append(r)
        self.n += 1
        tag = f"{self.n:02d}-{name.replace(' ', '-')}-{place}"
        if self.elapsed() > self.a.deadline_s:
            r.error = f"not run: past the suite's time budget (--deadline-s {self.a.deadline_s:.0f})"
            self.progress(f"{name} [{place}]: {r.error}")
            return r
        if place != "native" and place in self.d.errors:
            r.error = self.d.errors[place]
            self.progress(f"{name} [{place}]: FAILED {r.error}")
            return r
        env = self.d.env(place, self.a.lib, vgpus, self.a.data_mb)
        env.update(env_extra or {})
        log = self.d.log(place) if place != "native" else None
        offset = log.stat().st_size if log and log.exists() else 0
        out_path, err_path = self.runs_dir / f"{tag}.out", self.runs_dir / f"{tag}.err"
        cmd = [self.a.python, str(HERE / script), *args]
        start = time.monotonic()
        with open(out_path, "wb") as so, open(err_path, "wb") as se:
            se.write((f"# {place}: " + " ".join(cmd) + "\n").encode())
            se.flush()
            p = subprocess.Popen(cmd, env=env, stdout=so, stderr=se, stdin=subprocess.DEVNULL,
                                 start_new_session=True, cwd=str(self.a.work))
            try:
                r.rc = p.wait(timeout=self.a.run_timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                r.rc = -9
                r.error = f"timed out after {self.a.run_timeout_s:.0f} s"
        r.seconds = time.monotonic() - start
        stdout = out_path.read_text(errors="replace")
        stderr = err_path.read_text(errors="replace")
        r.out = sl.last_json(stdout)
        r.unsupported = sl.unsupported_lines(stderr)
        if log is not None and log.exists():
            with open(log, "rb") as f:
                f.seek(offset)
                r.unsupported += sl.unsupported_lines(f.read().decode(errors="replace"))
        tail = [ln for ln in stderr.strip().splitlines() if " debug: " not in ln][-1:]
        r.error = sl.run_error(r.rc, r.out, r.error, r.unsupported, tail[0] if tail else "", sl.refusals(stderr))
        if log is not None:
            pids = [int(x) for x in (r.out or {}).get(pid_key, [])] if pid_key else [p.pid]
            used = vgpus_used if vgpus_used is not None else list(range(vgpus))
            got = served_records(log, offset, pids or [p.pid], used)
            # each pid's own vGPUs: a rank of a distributed run uses its own
            per_pid = [(pid, [used[i % len(used)]] if pid_key else used) for i, pid in enumerate(pids or [p.pid])]
            r.records = {}
            for served in got.values():
                for v, n in served.items():
                    r.records[v] = r.records.get(v, 0) + n
            for pid, vs in per_pid:
                why = sl.through_mearas(got.get(pid, {}), vs, min_records)
                if why and r.error is None:
                    r.error = f"pid {pid}: {why}"
        med = r.median()
        loss = r.loss()
        what = ("ok" if r.ok else f"FAILED {r.error}")
        extra = (f", median {sl.fmt_s(med)}" if med is not None else "") + \
                (f", loss {loss!r}" if loss is not None else "") + \
                (f", records {r.records}" if log is not None else "")
        self.progress(f"{name} [{place}]: {what} ({r.seconds:.1f} s{extra})")
        return r


def gpt_args(a: argparse.Namespace, cfg: Config, *more: str) -> list[str]:
    warm, steps = ((a.small_warmup, a.small_steps) if cfg.shape == "small" else (a.gpt2_warmup, a.gpt2_steps))
    return ["--shape", cfg.shape, "--precision", cfg.precision, "--mode", cfg.mode, "--warmup", str(warm),
            "--steps", str(steps), *more]


def gpu_count() -> int:
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for ln in r.stdout.splitlines() if ln.startswith("GPU "))


def device_name() -> str:
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        first = r.stdout.strip().splitlines()[0].split(",")
        return f"{first[0].strip()} (driver {first[1].strip()})"
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "unknown"


def run_suite(a: argparse.Namespace, runner: Runner, device: str, date: str, ngpus: int
              ) -> list[dict[str, Any]]:
    """Every part asked for, in order; the records of frameworks.json."""
    records: list[dict[str, Any]] = []
    places = ["native", "local", "remote"]
    per_step = a.min_records_per_step
    small = Config("small", "bf16")

    def steps_of(cfg: Config) -> int:
        return int(a.small_warmup + a.small_steps) if cfg.shape == "small" else int(a.gpt2_warmup + a.gpt2_steps)

    ratio_runs: dict[tuple[Config, str], list[RunResult]] = {}
    if "ratios" in a.parts:
        runner.progress(f"== step-time ratios: {len(sl.RATIO_CONFIGS)} configurations x {places} x "
                        f"{a.repeats} (alternating)")
        for rep in range(a.repeats):
            order = places[rep % 3:] + places[:rep % 3]
            for cfg in sl.RATIO_CONFIGS:
                for place in order:
                    r = runner.run(cfg.label, place, "gpt.py", gpt_args(a, cfg), min_records=per_step * steps_of(cfg))
                    ratio_runs.setdefault((cfg, place), []).append(r)
        for cfg in sl.RATIO_CONFIGS:
            for place in ("local", "remote"):
                records.append(sl.ratio_record(cfg, place, ratio_runs.get((cfg, "native"), []),
                                               ratio_runs.get((cfg, place), []), device, date))
        records.append(sl.loss_identity_record("torch_bf16_loss_identical", "bf16", ratio_runs, device, date))
        records.append(sl.loss_identity_record("torch_fp32_loss_identical", "fp32", ratio_runs, device, date))

    def pair(name: str, args: list[str], mearas_first: bool = False, min_records: int = per_step * steps_of(small),
             **kw: Any) -> tuple[list[RunResult], list[RunResult]]:
        order = ["local", "native"] if mearas_first else ["native", "local"]
        got = {p: [runner.run(name, p, "gpt.py", args, min_records=min_records, **kw)] for p in order}
        return got["native"], got["local"]

    if "inference" in a.parts:
        runner.progress("== inference (bf16 autocast, torch.inference_mode)")
        for cfg in sl.INFER_CONFIGS:
            n, m = pair(cfg.label, gpt_args(a, cfg), min_records=per_step * steps_of(cfg) // 2)
            rec = sl.torch_capability(f"torch_{cfg.shape}_inference", n, m, device, date,
                                      f"{cfg.shape} model, bf16 autocast, forward passes on a local vGPU")
            nv, mv = rec["native"], rec["mearas"]
            if nv and mv:
                rec["note"] += f"; step time ratio {mv / nv:.4f} (no target: not in issue 14's table)"
            records.append(rec)

    if "compile" in a.parts:
        runner.progress("== torch.compile (Inductor's cache shared: the run through mearas compiles, native reuses)")
        # fresh caches, outside the work folder (they are big): the private /tmp folder
        cache = {"TORCHINDUCTOR_CACHE_DIR": str(runner.d.dir / "inductor-cache"),
                 "TRITON_CACHE_DIR": str(runner.d.dir / "triton-cache")}
        n, m = pair("compile", gpt_args(a, small, "--compile"), mearas_first=True, env_extra=cache)
        records.append(sl.torch_capability("torch_compile", n, m, device, date,
                                           "torch.compile of the small model, bf16 training (Triton kernels "
                                           "loaded as modules)"))
    if "graphs" in a.parts:
        runner.progress("== CUDA graphs: the whole training step captured; make_graphed_callables")
        n1, m1 = pair("graphs whole", gpt_args(a, small, "--cuda-graphs", "whole"),
                      min_records=2 * steps_of(small))
        n2, m2 = pair("graphs callables", gpt_args(a, small, "--cuda-graphs", "callables"),
                      min_records=2 * steps_of(small))
        records.append(sl.torch_capability("torch_cuda_graphs", n1 + n2, m1 + m2, device, date,
                                           "small model, bf16 training: the whole step in one torch.cuda.graph "
                                           "(capturable AdamW) and forward/backward by "
                                           "torch.cuda.make_graphed_callables"))
    if "expandable" in a.parts:
        runner.progress("== caching allocator with expandable_segments (VMM)")
        n, m = pair("expandable segments", gpt_args(a, small, "--expandable-segments"))
        records.append(sl.torch_capability("torch_expandable_segments", n, m, device, date,
                                           "small model, bf16 training, PYTORCH_CUDA_ALLOC_CONF="
                                           "expandable_segments:True (segments checked expandable in the "
                                           "allocator's snapshot)", extra_check="expandable_segments"))
    if "async_alloc" in a.parts:
        runner.progress("== cudaMallocAsync allocator backend, the whole step captured (graph memory nodes)")
        n, m = pair("async allocator graphs", gpt_args(a, small, "--async-allocator", "--cuda-graphs", "whole"),
                    min_records=2 * steps_of(small))
        records.append(sl.torch_capability("torch_async_alloc_graphs", n, m, device, date,
                                           "small model, bf16 training, PYTORCH_CUDA_ALLOC_CONF=backend:"
                                           "cudaMallocAsync, the whole step in one torch.cuda.graph: the "
                                           "allocator's stream-ordered allocations captured as the graph's "
                                           "memory nodes", extra_check="async_allocator"))
    if "two_vgpus" in a.parts:
        runner.progress("== two vGPUs in one process (model split over cuda:0 and cuda:1)")
        args = gpt_args(a, small, "--devices", "2")
        native = [runner.run("two devices", "native", "gpt.py", args)] if ngpus >= 2 else []
        m = [runner.run("two devices", "local", "gpt.py", args, vgpus=2,
                        min_records=per_step * steps_of(small) // 2)]
        ok_moves = all(r.out is not None and r.out.get("moved_exact") is True for r in m if r.ok)
        rec = sl.torch_capability("torch_two_vgpus", native, m, device, date,
                                  "small model, bf16 training, blocks split over two vGPUs of one assembly "
                                  "(MEARAS_VGPUS=2), activations moved between them; a tensor moved "
                                  "cuda:0 -> cuda:1 -> cuda:0 compared",
                                  compare_loss=bool(native), extra_check="moved_exact")
        one = ratio_runs.get((small, "native"), [])
        if not native:
            same, text = sl.losses_equal(one, m)
            rec["note"] += (f"; no native two-device run ({ngpus} GPU); against native's one-device run: "
                            f"{text} ({'identical' if same else 'different'})")
        if not ok_moves and rec["pass"]:
            rec.update({"pass": False, "error": "tensor moved between vGPUs came back different"})
        records.append(rec)
    if "nccl" in a.parts:
        runner.progress("== torch.distributed, NCCL, two ranks on two vGPUs")
        native = [runner.run("nccl", "native", "nccl_check.py", [], pid_key="pids")] if ngpus >= 2 else []
        m = [runner.run("nccl", "local", "nccl_check.py", [], vgpus=2, pid_key="pids",
                        min_records=a.min_records_check, vgpus_used=[0, 1])]
        rec = sl.check_capability("torch_nccl_two_vgpus", native, m, device, date,
                                  "2 processes, rank r on cuda:r (MEARAS_VGPUS=2), all_reduce, broadcast, barrier")
        if not native:
            rec["note"] += f" (no native run: {ngpus} GPU; NCCL refuses two ranks on one GPU)"
        warn = [w for r in m if r.out for w in r.out.get("nccl_warnings", [])]
        if warn:
            rec["note"] += "; NCCL: " + " | ".join(warn[:3])
        records.append(rec)
    for part, script, what in (("cupy", "cupy_check.py", "matmul, FFT, RawKernel and ElementwiseKernel (NVRTC), "
                                                        "memory pool, checked against NumPy"),
                               ("jax", "jax_check.py", "jit of a matmul and its grad on the CUDA backend, "
                                                      "XLA command buffers on (min graph size 1)")):
        if part in a.parts:
            runner.progress(f"== {part}")
            n = [runner.run(part, "native", script, [])]
            # debug level: a failure's record names the calls libcuda refused
            m = [runner.run(part, "local", script, [], min_records=a.min_records_check,
                            env_extra={"MEARAS_LOG": "debug"})]
            records.append(sl.check_capability(part, n, m, device, date, what))
    if "guest" in a.parts:
        records.append(guest_part(a, runner, device, date))
    return records


def open_bundle(bundle: Path, into: Path) -> Path:
    """The bundle's folder: bundle itself, or the tarball unpacked into into."""
    if not bundle.is_dir():
        r = subprocess.run(["tar", "-C", str(into), "-xzf", str(bundle)], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"cannot unpack {bundle}: {r.stderr.strip()}")
        bundle = into
    for f in ("bin/qemu-system-x86_64", "bin/mearasd", "guest/initramfs.cpio.gz"):
        if not (bundle / f).exists():
            raise RuntimeError(f"{f} missing from the bundle {bundle} (tests/vm-cuda/gpu-bundle.sh)")
    return bundle


def guest_part(a: argparse.Namespace, runner: Runner, device: str, date: str) -> dict[str, Any]:
    """guest_torch: the small model natively, then in one TCG boot of the
    bundle's guest served by the bundle's mearasd --vm (its log
    mearasd-guest.log), the guest running this machine's python and gpt.py
    over a read-only virtio-9p share of / (tests/vm-cuda/guestpy.py)."""
    if a.vm_bundle is None:
        return sl.capability_record("guest_torch", None, sl.NOT_RUN_GUEST, "not run", device, date)
    runner.progress("== PyTorch in a VM guest (TCG), this machine's Python over a virtio-9p share of /")
    steps = ["--warmup", str(a.guest_warmup), "--steps", str(a.guest_steps)]

    def args(cfg: Config) -> list[str]:
        return ["--shape", cfg.shape, "--precision", cfg.precision, "--mode", cfg.mode, *steps]

    def label(cfg: Config) -> str:
        return f"{cfg.label}, {a.guest_warmup}+{a.guest_steps} steps"

    native = [runner.run(label(c), "native", "gpt.py", args(c)) for c in GUEST_CONFIGS]
    guest = run_in_guest(a, runner, [(label(c), args(c)) for c in GUEST_CONFIGS])
    what = (f"small model, bf16 autocast, training then inference ({a.guest_warmup} warm-up + {a.guest_steps} "
            f"timed steps) in a QEMU TCG guest (-cpu max, -smp {a.guest_smp}, {a.guest_memory_mb} MiB; the CPU "
            "is emulated: times reported, not targeted) running this machine's python over a read-only "
            f"virtio-9p share of / with the guest's mearas libraries, served by mearasd --vm "
            f"(BAR {a.guest_bar_mb} MiB)")
    return sl.guest_torch_record(native, guest, device, date, what)


def run_in_guest(a: argparse.Namespace, runner: Runner, runs: list[tuple[str, list[str]]]) -> list[RunResult]:
    """The runs (name, gpt.py arguments) in one boot of the guest; each
    RunResult's records are those mearasd --vm served to its guest pid."""
    results = [RunResult(name=n, place="guest") for n, _ in runs]
    runner.runs += results

    def fail_all(why: str) -> list[RunResult]:
        for r in results:
            r.error = why
            runner.progress(f"{r.name} [guest]: FAILED {why}")
        return results

    if runner.elapsed() > a.deadline_s:
        return fail_all(f"not run: past the suite's time budget (--deadline-s {a.deadline_s:.0f})")
    python = shutil.which(a.python) or a.python
    tmp = Path(tempfile.mkdtemp(prefix="mearas-fwvm."))  # short: socket paths must fit sun_path
    gwork = a.work / "guest"
    shutil.rmtree(gwork, ignore_errors=True)
    gwork.mkdir(parents=True)
    log = a.work / "mearasd-guest.log"
    mearasd: subprocess.Popen[bytes] | None = None
    try:
        try:
            bundle = open_bundle(a.vm_bundle.resolve(), tmp)
        except RuntimeError as e:
            return fail_all(str(e))
        sock = tmp / "g.sock"
        cmd = [str(bundle / "bin/mearasd"), f"--device={a.mearasd_device}", f"--socket={tmp / 'm.sock'}",
               f"--control={tmp / 'c.sock'}", f"--vm=g:{sock}:{a.guest_bar_mb}:1"]
        with open(log, "wb") as lf:
            lf.write((" ".join(cmd) + "\n").encode())
            lf.flush()
            mearasd = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env={**os.environ, "LD_LIBRARY_PATH": str(bundle / "lib")})
        end = time.monotonic() + 20
        while not ("VM g: serving" in log.read_text(errors="replace") and sock.exists()):
            if mearasd.poll() is not None or time.monotonic() > end:
                tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
                return fail_all(f"mearasd --vm did not serve the VM: {tail}")
            time.sleep(0.1)
        limit = max(60, int((a.guest_timeout_s - 30) / len(runs)))
        spec = guestpy.GuestSpec(bundle / "guest", sock, gwork, a.guest_memory_mb, a.guest_smp, a.guest_timeout_s)
        gruns = [guestpy.GuestRun(f"run{i}", [python, str(HERE / "gpt.py"), *args], limit)
                 for i, (_, args) in enumerate(runs)]
        variables = {k: os.environ[k] for k in GUEST_PASS_ENV if k in os.environ}
        runner.progress(f"guest: booting (QEMU TCG, -smp {a.guest_smp}, {a.guest_memory_mb} MiB, "
                        f"at most {a.guest_timeout_s:.0f} s; {len(runs)} runs of {python})")
        try:
            res = guestpy.run_guest(guestpy.Qemu.from_bundle(bundle), spec, gruns, variables)
        except (OSError, ValueError) as e:
            return fail_all(f"the guest did not start: {e}")
        guestpy.save(res, gwork)
        for line in guestpy.describe(res):
            runner.progress(line)
    finally:
        if mearasd is not None:
            time.sleep(0.5)  # the slot worker logs its report when it sees the slot given back
            mearasd.send_signal(signal.SIGTERM)
            try:
                mearasd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                mearasd.kill()
                mearasd.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    text = log.read_text(errors="replace")
    pids = [o.guest_pid for o in res.runs if o.guest_pid is not None]
    served = sl.vm_records_served(text, "g", pids)
    vm_unsupported = sl.unsupported_lines(text)
    per_step = a.min_records_per_step
    for (name, _args), r, g in zip(runs, results, gruns):
        o = res.run(g.name) or guestpy.RunOutcome(g.name)
        (runner.runs_dir / f"guest-{g.name}.out").write_bytes(o.stdout)
        (runner.runs_dir / f"guest-{g.name}.err").write_bytes(o.stderr)
        stderr = o.stderr.decode(errors="replace")
        r.rc, r.seconds = o.rc, o.seconds or 0.0
        r.out = sl.last_json(o.stdout.decode(errors="replace"))
        r.unsupported = sl.unsupported_lines(stderr) + vm_unsupported
        unfinished = None if o.rc is not None else "did not finish in the guest: " + "; ".join(res.errors)
        last = stderr.strip().splitlines()[-1:]
        r.error = sl.run_error(r.rc, r.out, unfinished, r.unsupported, last[0] if last else "")
        if o.guest_pid is not None:
            r.records = served.get(o.guest_pid, {})
            need = per_step * (a.guest_warmup + a.guest_steps) // (2 if "infer" in name else 1)
            why = sl.through_mearas(r.records, [0], need)
            if why and r.error is None:
                r.error = f"guest pid {o.guest_pid}: {why}"
        if r.error is None and res.errors:
            r.error = "the guest: " + "; ".join(res.errors)
        med, loss = r.median(), r.loss()
        runner.progress(f"{name} [guest]: {'ok' if r.ok else 'FAILED ' + str(r.error)} ({r.seconds:.1f} s"
                        + (f", median {sl.fmt_s(med)}" if med is not None else "")
                        + (f", loss {loss!r}" if loss is not None else "") + f", records {r.records})")
    return results


def plot(records: list[dict[str, Any]], path: Path, device: str) -> None:
    """Step time per configuration: native and through mearas, one bar each
    (log scale: the small model's steps are ms, GPT-2's a hundred times more)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in records if isinstance(r.get("native"), (int, float)) or isinstance(r.get("mearas"), (int, float))]
    fig, ax = plt.subplots(figsize=(9, 0.45 * max(len(rows), 4) + 1.5))
    ax.set_title(f"PyTorch step time per configuration\n({device})", fontsize=10)
    if not rows:
        ax.text(0.5, 0.5, "no step times: no PyTorch run passed", ha="center", va="center")
        ax.set_axis_off()
    else:
        ys = list(range(len(rows)))
        nat = [float(r["native"]) * 1e3 if isinstance(r.get("native"), (int, float)) else 0.0 for r in rows]
        mea = [float(r["mearas"]) * 1e3 if isinstance(r.get("mearas"), (int, float)) else 0.0 for r in rows]
        ax.barh([y - 0.2 for y in ys], nat, height=0.4, label="native", color="#888888")
        ax.barh([y + 0.2 for y in ys], mea, height=0.4, label="mearas (vGPU)", color="#1f77b4")
        ax.set_yticks(ys)
        ax.set_yticklabels([str(r["metric"]) for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("median step time (ms, log scale; a missing bar: that run failed)")
        ax.legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def pack(a: argparse.Namespace, table_text: str) -> None:
    """Results, the table and a tarball of the work folder into a.pack."""
    assert a.pack is not None
    a.pack.mkdir(parents=True, exist_ok=True)
    (a.pack / "frameworks-table.txt").write_text(table_text + "\n")
    for f in (a.out, a.plot):
        if f.exists():
            shutil.copy(f, a.pack / f.name)
    with tarfile.open(a.pack / "frameworks-logs.tar.gz", "w:gz") as t:
        t.add(a.work, arcname="frameworks")


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    for f in (a.mearasd, a.lib / "libcuda.so.1"):
        if not f.exists():
            print(f"frameworks: {f} missing (make gpu-build first)", file=sys.stderr)
            return 2
    a.work = a.work.resolve()
    shutil.rmtree(a.work / "runs", ignore_errors=True)
    a.work.mkdir(parents=True, exist_ok=True)
    sim = a.mearasd_device == "sim"
    device = a.device_name or ("sim dry run" if sim else device_name())
    ngpus = 0 if sim else gpu_count()
    date = datetime.date.today().isoformat()
    print(f"frameworks: {device}, {ngpus} GPU(s), parts {','.join(a.parts)}, repeats {a.repeats}, "
          f"python {a.python}", flush=True)
    d = Daemons(a.mearasd, a.work, device=a.mearasd_device, remote=not a.no_remote and "ratios" in a.parts)
    try:
        d.start()
        if "local" in d.errors:
            print(f"frameworks: {d.errors['local']}", file=sys.stderr)
            return 2
        if a.no_remote:
            d.errors["remote"] = "not run: --no-remote"
        runner = Runner(a, d)
        records = run_suite(a, runner, device, date, ngpus)
    finally:
        d.stop()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(records, indent=1) + "\n")
    (a.work / "runs.json").write_text(json.dumps([r.__dict__ for r in runner.runs], indent=1, default=str) + "\n")
    plot_error = None
    try:
        plot(records, a.plot, device)
    except Exception as e:  # the plot is a result of its own: say why it is missing
        plot_error = f"plot not made: {type(e).__name__}: {e}"
    text, _, failed = sl.table(records, [plot_error] if plot_error else [])
    print(f"\n== frameworks: {device} (suite took {runner.elapsed():.0f} s; results {a.out}, plot {a.plot})")
    print(text, flush=True)
    if a.pack is not None:
        pack(a, text)
    return 1 if failed or plot_error else 0


if __name__ == "__main__":
    sys.exit(main())
