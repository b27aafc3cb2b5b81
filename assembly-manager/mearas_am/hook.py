"""libvirt's qemu hook. `prepare begin` (before QEMU starts): checks that the domain's
<mearas:assembly> metadata and its <shmem> device agree, books and instantiates the assembly,
then has mearasd serve the domain's VM socket with it (AttachVm); a non-zero exit with the
message on stderr makes `virsh start` fail with it, and nothing stays booked or served.
`release end` (after QEMU is gone, however it ended, and after a failed start): DetachVm, then
the release of everything the domain holds. libvirt passes DOMAIN OPERATION SUB-OPERATION
EXTRA, and the XML on stdin."""

from __future__ import annotations

import sys
from typing import TextIO

from .config import load_config
from .errors import MearasError
from .manager import Manager
from .metadata import XMLNS
from .vmdomain import vm_request


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
        if not _mentions_mearas(xml_text):
            if op == "prepare":
                return 0  # nothing of ours: the domain starts whatever our config says
            mgr = Manager(load_config(config_path))
            try:  # leftovers of a domain whose XML changed since it was booked
                _, problems = mgr.stop_owner(vm_owner(domain))
            finally:
                mgr.close()
        else:
            config = load_config(config_path)
            if op == "prepare":
                want = vm_request(config.vm, xml_text)
                if want is None:
                    return 0
                mgr = Manager(config)
                try:
                    a, vgpus, slots = mgr.start_vm(want.request, want.domain, want.socket,
                                                   want.shared_memory)
                    print(f"mearas: assembly {a.id} for {vm_owner(want.domain)}: "
                          + ", ".join(f"vgpu{v.ordinal}={v.node}:{v.gpu_index}"
                                      for v in a.vgpus)
                          + f"; served on {want.socket} ({vgpus} vGPU(s) to each of up to "
                          f"{slots} guest processes)")
                finally:
                    mgr.close()
                return 0
            mgr = Manager(config)
            try:  # whatever the domain holds, whatever its XML says now
                _, problems = mgr.stop_vm(domain)
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


def _mentions_mearas(xml_text: str) -> bool:
    """The domain has assembly metadata or an ivshmem-doorbell device (which may be ours: the
    configuration says where mearas' sockets are)."""
    return XMLNS in xml_text or "ivshmem-doorbell" in xml_text
