"""Where the harness finds its binaries, and what the daemon supports."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
APPS = ("binomialoptions", "blackscholes", "matrixmul", "mri_fhd", "cp")


class HarnessError(RuntimeError):
    """A setup problem the user must fix; printed as one clear line."""


class Unavailable(HarnessError):
    """A point that cannot run with this build or machine (e.g. no remote vGPUs yet)."""


@dataclass(frozen=True)
class Paths:
    mearasd: Path
    libdir: Path
    apps: Path
    microbench: Path

    @staticmethod
    def default() -> "Paths":
        return Paths(mearasd=REPO / "build/bin/mearasd", libdir=REPO / "build/lib",
                     apps=REPO / "experiments/apps/build",
                     microbench=REPO / "build/experiments/microbench")

    def app(self, name: str) -> Path:
        if name not in APPS and name != "microbench":
            raise HarnessError(f"unknown application '{name}' (one of {', '.join(APPS)})")
        path = self.microbench if name == "microbench" else self.apps / name
        if not path.is_file():
            raise HarnessError(f"{path} is missing: run `make gpu-build` first")
        return path

    def check_daemon(self) -> None:
        if not self.mearasd.is_file() or not (self.libdir / "libcudart.so.13").is_file():
            raise HarnessError(f"{self.mearasd} or {self.libdir}/libcudart.so.13 missing: run `make`")


def daemon_help(mearasd: Path) -> str:
    out = subprocess.run([str(mearasd), "--help"], capture_output=True, text=True, timeout=10)
    return out.stdout + out.stderr


def remote_supported(mearasd: Path) -> bool:
    """Remote vGPUs need mearasd's --link-port/--remote options (branch h-remote)."""
    text = daemon_help(mearasd)
    return all(opt in text for opt in ("--link-port", "--remote", "--cluster-key-file"))


def require_remote(mearasd: Path) -> None:
    if not remote_supported(mearasd):
        raise Unavailable(f"{mearasd} has no --link-port/--remote/--cluster-key-file: "
                          "remote vGPUs need the remote-link work in mearasd (branch h-remote)")


def batch_option(mearasd: Path) -> str | None:
    """The link batch-size option of mearasd, if it has one."""
    text = daemon_help(mearasd)
    for opt in ("--link-batch", "--batch"):
        if opt in text:
            return opt
    return None


def gpu_names() -> list[str]:
    if shutil.which("nvidia-smi") is None:
        return []
    out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=30)
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip()] if out.returncode == 0 else []


def driver_version() -> str:
    if shutil.which("nvidia-smi") is None:
        return "?"
    out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=30)
    return out.stdout.splitlines()[0].strip() if out.returncode == 0 and out.stdout else "?"
