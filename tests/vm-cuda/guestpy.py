#!/usr/bin/env python3
"""Host side of guest/hostpy.sh: boots the tests/vm-cuda guest (TCG) with this
machine's root shared read-only over virtio-9p, on a running `mearasd --vm`
socket, and runs host programs (its Python and whatever that imports) inside
the guest, chrooted into the share, with the guest's mearas libraries first
on the library path. Their stdout, stderr, exit status, guest pid and time
come back over the serial console.

  guestpy.py --guest DIR --vm-socket SOCK --work DIR [--qemu PATH]
             [--qemu-data DIR]... [--qemu-lib DIR] [--memory-mb N] [--smp N]
             [--timeout-s S] [--run-limit-s S] [--env VAR=VALUE]...
             [--pass-env VAR]... [--no-share]
             --run NAME 'PROGRAM ARG...' [--run NAME '...']...

DIR holds vmlinux or vmlinuz and initramfs.cpio.gz (make -C tests/vm-cuda, or
a gpu-bundle.sh bundle's guest/ with --qemu-lib and --qemu-data pointing into
it). WORK (on this machine's root, so inside the share) gets the job folder,
console.log, qemu.err, runs/NAME.{out,err,rc} and result.json. PROGRAM is a
path on this machine (the guest sees its root); the environment of a run is
PATH, HOME and TMPDIR (in the guest's tmpfs), LANG, LD_LIBRARY_PATH (mearas's
libraries first), the --pass-env variables set here and the --env ones.
--no-share boots without the share (the failure test). Prints one line per
run and the guest's errors; exit status 0 when the guest and every run
exited 0.

suite.py (experiments/frameworks) imports it: run_guest().
"""
from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

TAG = "hostroot"
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class GuestRun:
    """A program to run in the guest: argv as on this machine."""
    name: str
    argv: list[str]
    limit_s: int = 3600


@dataclass
class Qemu:
    """QEMU and where its files are: the system's by default, or a
    gpu-bundle.sh bundle's (bin/, lib/ with lib/qemu, share/qemu and share/seabios)."""
    binary: str = "qemu-system-x86_64"
    data_dirs: list[Path] = field(default_factory=list)
    lib_dir: Path | None = None

    @staticmethod
    def from_bundle(root: Path) -> Qemu:
        return Qemu(str(root / "bin/qemu-system-x86_64"), [root / "share/qemu", root / "share/seabios"],
                    root / "lib")

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.lib_dir is not None:
            env["LD_LIBRARY_PATH"] = str(self.lib_dir)
            env["QEMU_MODULE_DIR"] = str(self.lib_dir / "qemu")
        return env


@dataclass
class GuestSpec:
    guest: Path                  # vmlinux or vmlinuz, initramfs.cpio.gz
    vm_socket: Path              # mearasd --vm=NAME:SOCK:...
    work: Path                   # on this machine's root (the guest reads the job there)
    memory_mb: int = 1024
    smp: int = 2
    timeout_s: float = 600.0
    share: bool = True


@dataclass
class RunOutcome:
    name: str
    rc: int | None = None        # None: it did not finish (guest timed out or stopped)
    stdout: bytes = b""
    stderr: bytes = b""
    seconds: float | None = None  # guest time from start to exit (/proc/uptime)
    guest_pid: int | None = None


@dataclass
class GuestResult:
    runs: list[RunOutcome]
    qemu_rc: int | None          # None: killed after timeout_s
    guest_exit: int | None       # the guest command's (hostpy.sh) exit status
    kernel_clean: bool
    errors: list[str]            # hostpy.sh's, the modules', the console's, QEMU's
    seconds: float               # QEMU's wall time
    console: Path

    @property
    def ok(self) -> bool:
        return (self.qemu_rc == 0 and self.guest_exit == 0 and self.kernel_clean and not self.errors
                and all(r.rc == 0 for r in self.runs))

    def run(self, name: str) -> RunOutcome | None:
        return next((r for r in self.runs if r.name == name), None)


def run_env(job: Path, variables: dict[str, str]) -> dict[str, str]:
    """A run's environment: a sane base in the guest's tmpfs (job/rw), then
    the given variables, mearas's libraries first on the library path (a
    given LD_LIBRARY_PATH goes after them)."""
    rw = job / "rw"
    env = {"PATH": DEFAULT_PATH, "HOME": str(rw / "home"), "TMPDIR": str(rw / "tmp"), "LANG": "C.UTF-8"}
    env.update(variables)
    rest = env.get("LD_LIBRARY_PATH", "")
    env["LD_LIBRARY_PATH"] = str(rw / "lib") + (":" + rest if rest else "")
    return env


def write_job(job: Path, runs: list[GuestRun], env: dict[str, str]) -> None:
    """job/job for hostpy.sh (a shell fragment of `run NAME LIMIT ARGV...`,
    ARGV starting with /usr/bin/env -i and the environment) and job/rw."""
    (job / "rw").mkdir(parents=True, exist_ok=True)
    lines = ["# written by tests/vm-cuda/guestpy.py, sourced by guest/hostpy.sh in the guest"]
    for r in runs:
        if not NAME_RE.match(r.name):
            raise ValueError(f"run name {r.name!r}: letters, digits, '_', '.', '-' only")
        if not r.argv:
            raise ValueError(f"run {r.name}: no program")
        argv = ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()), *r.argv]
        lines.append(f"run {r.name} {int(r.limit_s)} " + " ".join(shlex.quote(a) for a in argv))
    (job / "job").write_text("\n".join(lines) + "\n")


def qemu_command(q: Qemu, spec: GuestSpec, job: Path, console: Path) -> list[str]:
    kernel = spec.guest / "vmlinux"
    if not kernel.exists():
        kernel = spec.guest / "vmlinuz"
    cmd = [q.binary]
    for d in q.data_dirs:
        cmd += ["-L", str(d)]
    cmd += ["-accel", "tcg", "-cpu", "max", "-m", str(spec.memory_mb), "-smp", str(spec.smp),
            "-nodefaults", "-display", "none", "-no-reboot", "-net", "none", "-serial", f"file:{console}",
            "-kernel", str(kernel), "-initrd", str(spec.guest / "initramfs.cpio.gz"),
            "-append", f"console=ttyS0 quiet panic=-1 mearas_arg=hostpy mearas_job={job} mearas_share={TAG}",
            "-chardev", f"socket,path={spec.vm_socket},id=ivs", "-device", "ivshmem-doorbell,chardev=ivs,vectors=2"]
    if spec.share:
        cmd += ["-virtfs", f"local,path=/,mount_tag={TAG},security_model=none,readonly=on,multidevs=remap"]
    return cmd


def parse_console(text: str) -> tuple[list[RunOutcome], list[str], int | None, bool]:
    """The runs, the errors (hostpy.sh's, modules that did not load, broken
    output), the guest's exit status and whether its kernel stayed clean."""
    runs: list[RunOutcome] = []
    errors: list[str] = []
    exit_rc: int | None = None
    clean = False
    cur: RunOutcome | None = None
    out: list[str] = []
    err: list[str] = []

    def decode(chunks: list[str], what: str) -> bytes:
        try:
            return base64.b64decode("".join(chunks), validate=True)
        except (binascii.Error, ValueError) as e:
            errors.append(f"{what}: bad base64 on the console ({e})")
            return b""

    for raw in text.splitlines():
        line = raw.rstrip("\r")
        word, _, rest = line.partition(" ")
        if word == "MEARAS-BEGIN":
            if cur is not None:
                errors.append(f"run {cur.name} has no end")
            cur, out, err = RunOutcome(rest.strip()), [], []
            runs.append(cur)
        elif word in ("MEARAS-O", "MEARAS-E") and cur is not None:
            (out if word == "MEARAS-O" else err).append(rest.strip())
        elif word in ("MEARAS-PID", "MEARAS-TIME", "MEARAS-END") and cur is not None:
            parts = rest.split()
            try:
                if len(parts) != 2 or parts[0] != cur.name:
                    raise ValueError(line)
                if word == "MEARAS-PID":
                    cur.guest_pid = int(parts[1])
                elif word == "MEARAS-TIME":
                    cur.seconds = float(parts[1])
                else:
                    cur.rc = int(parts[1])
            except ValueError:
                errors.append(f"unexpected line in run {cur.name}: {line[:80]}")
                continue
            if word == "MEARAS-END":
                cur.stdout = decode(out, f"{cur.name} stdout")
                cur.stderr = decode(err, f"{cur.name} stderr")
                cur = None
        elif word in ("MEARAS-HOSTPY-ERROR", "MEARAS-MODULE-FAILED", "MEARAS-INSMOD-FAILED"):
            errors.append(line)
        elif word == "MEARAS-KERNEL-OOPS":
            errors.append(line)
        elif word == "MEARAS-KERNEL-CLEAN":
            clean = True
        elif word == "MEARAS-EXIT" and rest.strip().lstrip("-").isdigit():
            exit_rc = int(rest.strip())
    if cur is not None:
        cur.stdout, cur.stderr = decode(out, f"{cur.name} stdout"), decode(err, f"{cur.name} stderr")
        errors.append(f"run {cur.name} did not finish (the guest stopped or timed out)")
    return runs, errors, exit_rc, clean


def run_guest(q: Qemu, spec: GuestSpec, runs: list[GuestRun], variables: dict[str, str]) -> GuestResult:
    """Boots the guest, runs runs in it (their environment: run_env() with
    variables), waits for its power-off (QEMU killed after spec.timeout_s);
    what came back."""
    spec.work.mkdir(parents=True, exist_ok=True)
    job = Path(tempfile.mkdtemp(prefix="job.", dir=spec.work)).resolve()
    if any(c.isspace() for c in str(job)):
        raise ValueError(f"{job}: a path with blanks cannot go on the kernel command line")
    write_job(job, runs, run_env(job, variables))
    console, qerr = spec.work / "console.log", spec.work / "qemu.err"
    console.unlink(missing_ok=True)
    cmd = qemu_command(q, spec, job, console)
    t0 = time.monotonic()
    with open(qerr, "wb") as ef:
        ef.write((" ".join(shlex.quote(c) for c in cmd) + "\n").encode())
        ef.flush()
        p = subprocess.Popen(cmd, env=q.env(), stdin=subprocess.DEVNULL, stdout=ef, stderr=subprocess.STDOUT)
        try:
            qrc: int | None = p.wait(timeout=spec.timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            qrc = None
    seconds = time.monotonic() - t0
    text = console.read_text(errors="replace") if console.exists() else ""
    got, errors, exit_rc, clean = parse_console(text)
    if qrc is None:
        errors.append(f"the guest did not power off within {spec.timeout_s:.0f} s: QEMU killed")
    elif qrc != 0:
        tail = [ln for ln in qerr.read_text(errors="replace").splitlines()[1:] if ln.strip()][-2:]
        errors.append(f"QEMU exited {qrc}: {' | '.join(tail)}")
    names = [r.name for r in got]
    for r in runs:
        if r.name not in names:
            got.append(RunOutcome(r.name))
    return GuestResult(got, qrc, exit_rc, clean, errors, seconds, console)


def save(res: GuestResult, work: Path) -> None:
    """runs/NAME.{out,err,rc} (tests/cuda/run-suite.sh's layout) and result.json."""
    d = work / "runs"
    d.mkdir(parents=True, exist_ok=True)
    for r in res.runs:
        (d / f"{r.name}.out").write_bytes(r.stdout)
        (d / f"{r.name}.err").write_bytes(r.stderr)
        (d / f"{r.name}.rc").write_text(f"{r.rc}\n")
    summary = asdict(res)
    summary["console"] = str(res.console)
    for r in summary["runs"]:
        del r["stdout"], r["stderr"]
    summary["ok"] = res.ok
    (work / "result.json").write_text(json.dumps(summary, indent=1) + "\n")


def describe(res: GuestResult) -> list[str]:
    lines = [f"guest: QEMU {'killed' if res.qemu_rc is None else 'exit ' + str(res.qemu_rc)} after "
             f"{res.seconds:.1f} s, guest exit {res.guest_exit}, kernel {'clean' if res.kernel_clean else 'NOT clean'}"]
    for r in res.runs:
        lines.append(f"guest run {r.name}: " + ("did not finish" if r.rc is None else f"exit {r.rc}") +
                     (f" in {r.seconds:.2f} s" if r.seconds is not None else "") +
                     (f" (guest pid {r.guest_pid})" if r.guest_pid is not None else ""))
    lines += [f"guest error: {e}" for e in res.errors]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--guest", type=Path, required=True)
    ap.add_argument("--vm-socket", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--qemu-data", type=Path, action="append", default=[])
    ap.add_argument("--qemu-lib", type=Path)
    ap.add_argument("--memory-mb", type=int, default=1024)
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--timeout-s", type=float, default=600.0)
    ap.add_argument("--run-limit-s", type=int, default=3600, help="each run at most (killed in the guest)")
    ap.add_argument("--env", action="append", default=[], metavar="VAR=VALUE")
    ap.add_argument("--pass-env", action="append", default=[], metavar="VAR")
    ap.add_argument("--no-share", action="store_true")
    ap.add_argument("--run", nargs=2, action="append", default=[], metavar=("NAME", "COMMAND"))
    a = ap.parse_args(argv)
    if not a.run:
        ap.error("no --run")
    extra: dict[str, str] = {}
    for kv in a.env:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            ap.error(f"--env {kv}: VAR=VALUE")
        extra[k] = v
    passed = {k: os.environ[k] for k in a.pass_env if k in os.environ}
    runs = [GuestRun(n, shlex.split(c), a.run_limit_s) for n, c in a.run]
    spec = GuestSpec(a.guest, a.vm_socket, a.work.resolve(), a.memory_mb, a.smp, a.timeout_s, not a.no_share)
    q = Qemu(a.qemu, a.qemu_data, a.qemu_lib)
    res = run_guest(q, spec, runs, passed | extra)
    save(res, spec.work)
    print("\n".join(describe(res)), flush=True)
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
