"""The `mearas` command line."""

from __future__ import annotations

import argparse
import getpass
import os
import pwd
import sys
import time
from collections import Counter

from . import VERSION_FULL, booking, slurm, vmdomain
from .agent import run_agent
from .config import load_config
from .errors import MearasError, RequestError
from .hook import run_hook
from .install import DEFAULT_HOOK, install_hook
from .manager import Manager
from .model import AssemblyRequest, GpuRef
from .policies import POLICIES, validate_request
from .render import (assemblies_table, candidates_text, node_views, nodes_json, nodes_table,
                     to_json)
from .runner import run_app, user_identity
from .top import run_top
from .units import parse_cc, parse_size


def _request_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vgpus", type=int, required=True, help="number of vGPUs")
    p.add_argument("--policy", choices=POLICIES, default="local-first")
    p.add_argument("--memory", help="memory quota per vGPU, e.g. 8GiB (default: GPU memory "
                   "divided by the node's sharing factor)")
    p.add_argument("--min-cc", help="minimum compute capability, e.g. 8.0")
    p.add_argument("--local-only", action="store_true", help="only GPUs of this node")
    p.add_argument("--max-remote", type=int, help="at most this many remote vGPUs")
    p.add_argument("--nodes", help="comma-separated node names to use")
    p.add_argument("--placement", help="policy exact: NODE:GPU per vGPU, comma-separated")


def _request(a: argparse.Namespace) -> AssemblyRequest:
    try:
        return AssemblyRequest(
            vgpus=a.vgpus, policy=a.policy,
            memory_per_vgpu=parse_size(a.memory) if a.memory else None,
            min_cc=parse_cc(a.min_cc) if a.min_cc else None,
            local_only=a.local_only, max_remote=a.max_remote,
            nodes=tuple(n.strip() for n in (a.nodes or "").split(",") if n.strip()),
            placement=tuple(GpuRef.parse(p.strip()) for p in (a.placement or "").split(",")
                            if p.strip()))
    except ValueError as e:
        raise RequestError(str(e)) from None


def _identity(a: argparse.Namespace) -> str:
    """Who mearasd lets use a composed assembly: --vm, --user, else the caller's uid."""
    if a.vm and a.user:
        raise RequestError("--user and --vm exclude each other")
    if a.vm:
        return f"vm:{a.vm}"
    if a.user is None:
        return user_identity(os.getuid())
    if a.user.isdigit():
        return user_identity(int(a.user))
    try:
        return user_identity(pwd.getpwnam(a.user).pw_uid)
    except KeyError:
        raise RequestError(f"--user {a.user}: no such user") from None


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="mearas", description="mearas GPU assembly manager")
    ap.add_argument("--config", help="config file (default $MEARAS_CONFIG or /etc/mearas/am.toml)")
    ap.add_argument("--version", action="version", version=f"mearas {VERSION_FULL}")
    out = argparse.ArgumentParser(add_help=False)
    out.add_argument("--json", action="store_true", help="machine-readable output")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("nodes", parents=[out], help="live nodes and their GPU profiles")
    p = sub.add_parser("assemblies", parents=[out], help="booked assemblies")
    p.add_argument("--owner")
    p = sub.add_parser("compose", parents=[out], help="book (and instantiate) an assembly")
    _request_args(p)
    p.add_argument("--dry-run", action="store_true", help="only show candidate placements")
    p.add_argument("--owner", help="owner recorded with the booking (default manual:<user>)")
    p.add_argument("--user", help="user (name or uid) whose processes may use it (default: you)")
    p.add_argument("--vm", help="the VM (libvirt domain name) that may use it, instead of a user")
    p = sub.add_parser("release", parents=[out], help="release assemblies")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("assembly_id", nargs="?")
    g.add_argument("--owner")
    p = sub.add_parser("run", help="run a program on a freshly booked assembly")
    _request_args(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    p = sub.add_parser("node-agent", help="publish this node's profile and keep it alive")
    p.add_argument("--version", action="version", version=f"mearas node-agent {VERSION_FULL}")
    p.add_argument("--once", action="store_true")
    p.add_argument("--interval", type=float, help="seconds between publications")
    p = sub.add_parser("vm", help="a libvirt domain's assembly: its metadata and mearas device")
    vsub = p.add_subparsers(dest="vm_cmd", required=True)
    q = vsub.add_parser("attach", help="put the assembly request and the ivshmem-doorbell device "
                        "into the domain's persistent XML (used from its next start)")
    q.add_argument("domain")
    _request_args(q)
    q.add_argument("--shared-memory", default="256MiB", help="the device's shared memory (a "
                   "power of two, 4MiB..1TiB; default 256MiB)")
    q = vsub.add_parser("detach", help="remove both from the domain's persistent XML")
    q.add_argument("domain")
    p = sub.add_parser("top", help="live view of mearasd's metrics: nodes, GPUs, vGPUs, links")
    p.add_argument("--url", action="append", default=[],
                   help="a mearasd metrics endpoint (repeatable; default: [mearasd] metrics_url)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes (2)")
    p.add_argument("--once", action="store_true", help="print one view and exit")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = sub.add_parser("install-hook", help="install the libvirt qemu hook")
    p.add_argument("--hook-path", default=DEFAULT_HOOK)
    p.add_argument("--force", action="store_true")
    p.add_argument("--pythonpath", help="run the hook with this PYTHONPATH (uninstalled tree)")
    p = sub.add_parser("hook-qemu", help=argparse.SUPPRESS)
    p.add_argument("hook_args", nargs=argparse.REMAINDER)
    slurm.add_parsers(sub)
    return ap


def _dispatch(a: argparse.Namespace) -> int:
    if a.cmd == "hook-qemu":
        return run_hook(a.hook_args, sys.stdin, a.config)
    if a.cmd in slurm.COMMANDS:
        return slurm.dispatch(a)
    if a.cmd == "install-hook":
        cfg = a.config or "/etc/mearas/am.toml"
        print(f"installed {install_hook(a.hook_path, cfg, a.force, a.pythonpath)} (config {cfg})")
        return 0
    if a.cmd == "vm":
        return _vm(a)
    config = load_config(a.config)
    for w in config.warnings:
        print(f"mearas: warning: {w}", file=sys.stderr)
    if a.cmd == "top":
        md = config.mearasd
        return run_top(a.url or ([md.metrics_url] if md.metrics_url else []), a.interval, a.once,
                       a.json)
    mgr = Manager(config)
    try:
        if a.cmd == "nodes":
            snap = mgr.registry.snapshot()
            views = node_views(snap, time.time())
            booked = Counter({(r.node, r.index): len(led) for r, led in snap.ledgers.items()})
            print(nodes_json(views) if a.json else nodes_table(views, dict(booked), time.time()))
            if not views and not a.json:
                print(f"mearas: no nodes in the registry ({config.registry.backend} registry of "
                      f"{config.source}): is a node agent running?", file=sys.stderr)
        elif a.cmd == "assemblies":
            asms = booking.list_assemblies(mgr.registry, a.owner)
            print(to_json(asms) if a.json else assemblies_table(asms, mgr.attachments()))
        elif a.cmd == "compose":
            req = _request(a)
            if a.dry_run:
                cands = mgr.dry_run(req)
                print(to_json(cands) if a.json else candidates_text(cands))
            else:
                asm = mgr.start(req, a.owner or f"manual:{getpass.getuser()}", _identity(a))
                print(to_json(asm) if a.json else assemblies_table([asm]))
        elif a.cmd == "release":
            if a.owner:
                done, problems = mgr.stop_owner(a.owner)
            else:
                one, problems = mgr.stop(a.assembly_id)
                if one is None:
                    raise MearasError(f"no assembly {a.assembly_id} in the registry")
                done = [one]
            for p in problems:
                print(f"mearas: warning: {p}", file=sys.stderr)
            print(to_json(done) if a.json else assemblies_table(done))
        elif a.cmd == "run":
            cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
            return run_app(mgr, _request(a), cmd)
        elif a.cmd == "node-agent":
            return run_agent(mgr, a.interval, a.once)
    finally:
        mgr.close()
    return 0


def _vm(a: argparse.Namespace) -> int:
    vm = load_config(a.config).vm
    if a.vm_cmd == "attach":
        req = _request(a)
        validate_request(req)
        try:
            size = parse_size(a.shared_memory)
        except ValueError as e:
            raise RequestError(f"--shared-memory: {e}") from None
        sock = vmdomain.attach(vm, a.domain, req, size)
        print(f"domain {a.domain}: {req.vgpus} vGPU(s) ({req.policy}), ivshmem-doorbell on {sock}, "
              f"{size >> 20} MiB; from its next start")
    elif vmdomain.detach(vm, a.domain):
        print(f"domain {a.domain}: mearas assembly and device removed; from its next start")
    else:
        print(f"domain {a.domain} had no mearas assembly or device")
    return 0


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        return _dispatch(a)
    except MearasError as e:
        print(f"mearas: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
