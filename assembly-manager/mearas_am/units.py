"""Parsing of sizes ("16GiB", "512MiB", 1024) and compute capabilities ("8.6")."""

import re

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: object) -> int:
    """Bytes from an int or a string with an optional unit (KiB, MiB, GiB, TiB, KB, MB...)."""
    if isinstance(value, bool):
        raise ValueError(f"bad size {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"bad size {value!r}: negative")
        return value
    if not isinstance(value, str):
        raise ValueError(f"bad size {value!r}")
    m = _SIZE.match(value)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"bad size {value!r}: expected e.g. 16GiB, 512MiB or a byte count")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n: int) -> str:
    for unit, div in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f}{unit}"
    return f"{n}B"


def parse_cc(value: object) -> tuple[int, int]:
    """Compute capability "8.6" -> (8, 6)."""
    m = re.match(r"^\s*(\d+)\.(\d+)\s*$", str(value))
    if not m:
        raise ValueError(f"bad compute capability {value!r}: expected MAJOR.MINOR, e.g. 8.0")
    return int(m.group(1)), int(m.group(2))
