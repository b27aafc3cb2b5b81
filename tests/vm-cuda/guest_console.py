#!/usr/bin/env python3
"""Decodes the runs that tests/vm-cuda/guest/suite.sh printed on the guest's
serial console into OUTDIR/NAME.out, NAME.err and NAME.rc (the layout of
tests/cuda/run-suite.sh --run, so --compare works on it).

    guest_console.py SERIAL_LOG OUTDIR [--expect NAME]...

Prints one line per run and exits non-zero if the log is malformed or an
expected run is missing or unfinished."""
from __future__ import annotations

import argparse
import base64
import binascii
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Run:
    name: str
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    rc: int | None = None


class ConsoleError(Exception):
    pass


def parse(text: str) -> list[Run]:
    runs: list[Run] = []
    cur: Run | None = None
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith("MEARAS-BEGIN "):
            if cur is not None:
                raise ConsoleError(f"run {cur.name} has no MEARAS-END")
            cur = Run(line.split(" ", 1)[1].strip())
        elif line.startswith("MEARAS-O ") or line.startswith("MEARAS-E "):
            if cur is None:
                raise ConsoleError(f"output outside a run: {line[:40]}")
            (cur.out if line[7] == "O" else cur.err).append(line[9:].strip())
        elif line.startswith("MEARAS-END "):
            parts = line.split()
            if cur is None or len(parts) != 3 or parts[1] != cur.name or not parts[2].isdigit():
                raise ConsoleError(f"unexpected end marker: {line}")
            cur.rc = int(parts[2])
            runs.append(cur)
            cur = None
    if cur is not None:
        raise ConsoleError(f"run {cur.name} has no MEARAS-END (guest stopped or timed out)")
    return runs


def decode(chunks: list[str], what: str) -> bytes:
    try:
        return base64.b64decode("".join(chunks), validate=True)
    except (binascii.Error, ValueError) as e:
        raise ConsoleError(f"{what}: bad base64 ({e})") from e


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("serial_log", type=Path)
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--expect", action="append", default=[], help="a run that must be present")
    args = ap.parse_args()
    try:
        runs = parse(args.serial_log.read_text(errors="replace"))
        args.outdir.mkdir(parents=True, exist_ok=True)
        for r in runs:
            (args.outdir / f"{r.name}.out").write_bytes(decode(r.out, f"{r.name} stdout"))
            (args.outdir / f"{r.name}.err").write_bytes(decode(r.err, f"{r.name} stderr"))
            (args.outdir / f"{r.name}.rc").write_text(f"{r.rc}\n")
            print(f"guest run {r.name}: exit {r.rc}")
    except (OSError, ConsoleError) as e:
        print(f"guest_console: {e}", file=sys.stderr)
        return 1
    missing = [n for n in args.expect if n not in {r.name for r in runs}]
    if missing:
        print(f"guest_console: runs missing from the console log: {' '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
