"""libvirt's qemu hook: `prepare begin` books and instantiates the assembly the domain XML
asks for (non-zero exit + stderr message makes `virsh start` fail with it); `release end`
frees it. libvirt passes: DOMAIN OPERATION SUB-OPERATION EXTRA, and the XML on stdin."""

from __future__ import annotations

import sys
from typing import TextIO

from .config import load_config
from .errors import MearasError
from .manager import Manager
from .metadata import parse_domain


def vm_owner(domain: str) -> str:
    return f"vm:{domain}"


def run_hook(argv: list[str], stdin: TextIO, config_path: str | None) -> int:
    if len(argv) < 3:
        print("mearas hook: expected DOMAIN OPERATION SUB-OPERATION", file=sys.stderr)
        return 2
    domain, op, sub = argv[0], argv[1], argv[2]
    if (op, sub) not in (("prepare", "begin"), ("release", "end")):
        return 0
    xml_text = stdin.read()
    try:
        if op == "prepare":
            name, request = parse_domain(xml_text)
            if request is None:
                return 0
            mgr = Manager(load_config(config_path))
            try:
                owner = vm_owner(name or domain)
                mgr.stop_owner(owner)  # leftovers of a VM that died without release
                a = mgr.start(request, owner, owner)  # bound to the VM: "vm:<domain>"
                print(f"mearas: assembly {a.id} for {owner}: "
                      + ", ".join(f"vgpu{v.ordinal}={v.node}:{v.gpu_index}" for v in a.vgpus))
            finally:
                mgr.close()
        else:  # release whatever the domain holds, whatever its XML says now
            mgr = Manager(load_config(config_path))
            try:
                _, problems = mgr.stop_owner(vm_owner(domain))
            finally:
                mgr.close()
            for p in problems:
                print(f"mearas: warning: releasing {domain}: {p}", file=sys.stderr)
    except MearasError as e:
        if op == "prepare":
            print(f"mearas: cannot start domain {domain}: {e}", file=sys.stderr)
            return 1
        print(f"mearas: releasing the assembly of {domain} failed: {e}", file=sys.stderr)
        return 0  # never block libvirt's cleanup
    return 0
