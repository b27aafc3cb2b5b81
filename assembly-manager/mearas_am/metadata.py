"""The assembly request a domain XML carries in <metadata><mearas:assembly .../></metadata>."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from .errors import RequestError
from .model import AssemblyRequest, GpuRef
from .policies import validate_request
from .units import parse_cc, parse_size

XMLNS = "https://mearas.dev/xmlns/assembly/1"
_ATTRS = ("vgpus", "policy", "memory-per-vgpu", "min-compute-capability", "local-only",
          "max-remote", "nodes", "placement",
          "shared-memory")  # the VM's <shmem> device's memory (vmdomain.py), not the booking's


def _bool(name: str, v: str) -> bool:
    if v.lower() in ("yes", "true", "1"):
        return True
    if v.lower() in ("no", "false", "0"):
        return False
    raise RequestError(f"attribute {name}={v!r}: expected yes/no")


def _int(name: str, v: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise RequestError(f"attribute {name}={v!r}: expected an integer") from None


def parse_domain(xml_text: str) -> tuple[str, AssemblyRequest | None]:
    """(domain name, request or None when the domain asks for no assembly)."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as e:
        raise RequestError(f"domain XML does not parse: {e}") from None
    name = root.findtext("name") or ""
    el = root.find(f"metadata/{{{XMLNS}}}assembly")
    if el is None:
        return name, None
    unknown = sorted(set(el.attrib) - set(_ATTRS))
    if unknown:
        raise RequestError(f"mearas:assembly: unknown attribute(s) {', '.join(unknown)}; "
                           f"known: {', '.join(_ATTRS)}")
    a = el.attrib
    if "vgpus" not in a:
        raise RequestError("mearas:assembly: attribute vgpus is required")
    try:
        mem = parse_size(a["memory-per-vgpu"]) if "memory-per-vgpu" in a else None
        cc = parse_cc(a["min-compute-capability"]) if "min-compute-capability" in a else None
        placement = tuple(GpuRef.parse(p.strip()) for p in a.get("placement", "").split(",")
                          if p.strip())
    except ValueError as e:
        raise RequestError(f"mearas:assembly: {e}") from None
    req = AssemblyRequest(
        vgpus=_int("vgpus", a["vgpus"]),
        policy=a.get("policy", "local-first"),
        memory_per_vgpu=mem,
        min_cc=cc,
        local_only=_bool("local-only", a.get("local-only", "no")),
        max_remote=_int("max-remote", a["max-remote"]) if "max-remote" in a else None,
        nodes=tuple(n.strip() for n in a.get("nodes", "").split(",") if n.strip()),
        placement=placement,
    )
    try:
        validate_request(req)
    except RequestError as e:
        raise RequestError(f"mearas:assembly: {e}") from None
    return name, req
