"""Installs the libvirt qemu hook: a small shell script that runs this package's hook with
the python that installed it and a fixed config path (libvirt clears the environment)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from .errors import MearasError

DEFAULT_HOOK = "/etc/libvirt/hooks/qemu"
MARKER = "# installed by mearas install-hook"


def hook_script(config_path: str, python: str = sys.executable,
                pythonpath: str | None = None) -> str:
    env = f"PYTHONPATH={shlex.quote(pythonpath)} " if pythonpath else ""
    return ("#!/bin/sh\n"
            f"{MARKER}\n"
            "# libvirt: prepare begin books the assembly, release end frees it\n"
            f"{env}exec {shlex.quote(python)} -m mearas_am.cli --config "
            f'{shlex.quote(config_path)} hook-qemu "$@"\n')


def install_hook(hook_path: str, config_path: str, force: bool = False,
                 pythonpath: str | None = None) -> str:
    p = Path(hook_path)
    if p.exists() and MARKER not in p.read_text(errors="replace") and not force:
        raise MearasError(f"{p} exists and was not installed by mearas; "
                          "refusing to overwrite it (use --force)")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".mearas-tmp")
        tmp.write_text(hook_script(os.path.abspath(config_path), pythonpath=pythonpath))
        tmp.chmod(0o755)
        os.replace(tmp, p)
    except OSError as e:
        raise MearasError(f"cannot install hook {p}: {e}") from None
    return str(p)
