#!/usr/bin/env python3
"""Summarise drvapi-probe JSONL logs.

    summarize.py LOG.jsonl [LOG.jsonl ...]        text, one block per log
    summarize.py --json LOG.jsonl [...]           the same as JSON

Per log: the real driver and its version; the bootstrap order (cuInit,
cuDriverGetVersion, cuDeviceGetCount and export-table requests, with the
number of cuGetProcAddress lookups before each); the export-table UUIDs
requested, in order, with who asked; the slots called per table with
counts; the cuGetProcAddress lookups (distinct names, those that returned
NULL); which modules called; symbols that were missing in the real driver.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

# Names used in docs/research (export-tables.md); the probe logs raw bytes.
KNOWN_TABLES: dict[str, str] = {
    "6bd5fb6c5bf4e74a8987d93912fd9df9": "CUDART_INTERFACE",
    "a094798c2e742e7493f20800200c0a66": "TOOLS_RUNTIME_CALLBACK_HOOKS",
    "42d85a8123f6cb478298f6e78a3aecdc": "TOOLS_TLS",
    "c693336e1121df11a8c368f355d89593": "CONTEXT_LOCAL_STORAGE_V0301",
    "263e88607cd2614392f6bbd5006dfa7e": "CONTEXT_CHECKS",
    "d4082055bde6704b8d34ba123c66e1f2": "INTEGRITY_CHECK",
    "f8cff95121468b4eb9e2fb469e7c0dd9": "f8cf (skip-init probe / requirements)",
    "21318c60971432488ca641ff7324c8f2": "2131 (Relay8 / context identity)",
    "6e163fbeb958444d835ce182aff1991e": "6e16 (Relay9 / tools module)",
    "0ca50b8c1004929a89a7d0df10e77286": "CTX_CREATE_BYPASS",
    "195bcbf4d67d024aacc51d29cea631ae": "HEAP_ACCESS",
    "b10541e1f7c7c74a9f64f223be99f1e2": "DEVICE_EXTENDED_RT",
}

Event = dict[str, Any]


@dataclass
class TableRequest:
    seq: int
    uuid: str
    name: str
    rc: int
    caller: str
    repeat: bool
    mode: str = ""
    n_slots: int = 0
    n_ext: int = 0
    layout: str = ""


@dataclass
class Summary:
    log: str
    lines: int = 0
    bad_lines: int = 0
    pids: list[int] = field(default_factory=list)
    exe: str = ""
    probe: str = ""
    real: str = ""
    driver_version: int = 0
    bootstrap: list[str] = field(default_factory=list)
    tables: list[TableRequest] = field(default_factory=list)
    slot_counts: dict[str, dict[int, int]] = field(default_factory=dict)
    slot_counts_source: str = ""
    proc_lookups: int = 0
    proc_distinct_names: int = 0
    proc_null: list[str] = field(default_factory=list)
    proc_flags: dict[str, int] = field(default_factory=dict)
    proc_own: list[str] = field(default_factory=list)  # distinct name@version
    callers: dict[str, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    wrapped_counts: list[tuple[str, str, int]] = field(default_factory=list)


def load(path: str) -> tuple[list[Event], int]:
    events: list[Event] = []
    bad = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(obj, dict):
                events.append(obj)
            else:
                bad += 1
    events.sort(key=lambda e: (int(e.get("pid", 0)), int(e.get("seq", 0))))
    return events, bad


def module_of(caller: str) -> str:
    """'libcudart.so.13+0x1234(sym+0x5)' -> 'libcudart.so.13'."""
    return caller.split("+", 1)[0] if caller else "?"


def table_name(uuid: str) -> str:
    return KNOWN_TABLES.get(uuid, "?")


def summarize(path: str, events: list[Event], bad: int) -> Summary:
    s = Summary(log=path, lines=len(events), bad_lines=bad)
    s.pids = sorted({int(e.get("pid", 0)) for e in events})
    names: set[str] = set()
    null_seen: set[str] = set()
    flags: Counter[str] = Counter()
    callers: Counter[str] = Counter()
    xt_calls: dict[str, Counter[int]] = defaultdict(Counter)
    xt_counts: dict[str, Counter[int]] = defaultdict(Counter)
    have_counts = False
    procs_before = 0
    for e in events:
        ev = e.get("ev")
        caller = str(e.get("caller", ""))
        if ev == "header" and not s.real:
            s.exe = str(e.get("exe", ""))
            s.probe = str(e.get("probe", ""))
            s.real = str(e.get("real", ""))
            s.driver_version = int(e.get("driver_version", 0))
        elif ev == "call":
            callers[module_of(caller)] += 1
            s.bootstrap.append(
                f"{e.get('fn')} rc={e.get('rc')} after {procs_before} lookups"
                f" from {module_of(caller)}"
            )
        elif ev == "proc":
            callers[module_of(caller)] += 1
            procs_before += 1
            s.proc_lookups += 1
            sym = str(e.get("sym"))
            names.add(sym)
            flags[str(e.get("flags"))] += 1
            if e.get("ptr") in ("0x0", None) and sym not in null_seen:
                null_seen.add(sym)
                s.proc_null.append(
                    f"{json.dumps(e.get('sym'))} ver={e.get('ver')} flags={e.get('flags')} rc={e.get('rc')}"
                    f" status={e.get('status', '-')}"
                )
            own = f"{sym}@{e.get('ver')}"
            if e.get("ret") == "own" and own not in s.proc_own:
                s.proc_own.append(own)
        elif ev == "export_table":
            callers[module_of(caller)] += 1
            uuid = str(e.get("uuid", ""))
            req = TableRequest(
                seq=int(e.get("seq", 0)),
                uuid=uuid,
                name=table_name(uuid),
                rc=int(e.get("rc", -1)),
                caller=module_of(caller),
                repeat=bool(e.get("repeat", False)),
                mode=str(e.get("mode", "")),
                n_slots=int(e.get("n_slots", 0)),
                n_ext=int(e.get("n_ext", 0)),
                layout=str(e.get("layout", "")),
            )
            s.tables.append(req)
            if not req.repeat:
                s.bootstrap.append(
                    f"export_table {uuid[:8]} ({req.name}) rc={req.rc} after"
                    f" {procs_before} lookups from {req.caller}"
                )
        elif ev == "xt_call":
            xt_calls[str(e.get("uuid"))][int(e.get("slot", -1))] += 1
        elif ev == "xt_counts":
            have_counts = True
            for c in e.get("counts", []):
                xt_counts[str(c.get("uuid"))][int(c.get("slot", -1))] += int(c.get("n", 0))
        elif ev == "missing":
            s.missing.append(str(e.get("sym")))
        elif ev == "proc_counts":
            for c in e.get("counts", []):
                s.wrapped_counts.append(
                    (str(c.get("name")), str(c.get("real_sym")), int(c.get("n", 0)))
                )
    src = xt_counts if have_counts else xt_calls
    s.slot_counts_source = "xt_counts (exact)" if have_counts else "xt_call lines (capped)"
    s.slot_counts = {u: dict(sorted(c.items())) for u, c in src.items()}
    s.proc_distinct_names = len(names)
    s.proc_flags = dict(flags)
    s.callers = dict(callers.most_common())
    s.wrapped_counts.sort(key=lambda t: -t[2])
    return s


def render(s: Summary) -> str:
    out: list[str] = [f"== {s.log}"]
    out.append(
        f"lines {s.lines} (unparsable {s.bad_lines}), pids {s.pids}, exe {s.exe or '?'}"
    )
    out.append(f"real driver {s.real or '?'} version {s.driver_version}; {s.probe or 'probe ?'}")
    out.append("bootstrap order:")
    out += [f"  {b}" for b in s.bootstrap[:40]]
    if len(s.bootstrap) > 40:
        out.append(f"  ... {len(s.bootstrap) - 40} more")
    out.append("export tables requested (in order):")
    for t in s.tables:
        if t.repeat:
            extra = " (repeat)"
        elif t.rc != 0:
            extra = ""
        else:
            extra = f" {t.layout} slots={t.n_slots}+{t.n_ext} {t.mode}"
        out.append(f"  #{t.seq} {t.uuid} {t.name} rc={t.rc} by {t.caller}{extra}")
    out.append(f"slots called ({s.slot_counts_source}):")
    if not s.slot_counts:
        out.append("  none")
    for u, c in s.slot_counts.items():
        calls = ", ".join(f"[{k}]x{v}" for k, v in c.items())
        out.append(f"  {u[:8]} {table_name(u)}: {calls}")
    out.append(
        f"cuGetProcAddress: {s.proc_lookups} lookups, {s.proc_distinct_names} distinct names,"
        f" flags {s.proc_flags}, {len(s.proc_null)} names returned NULL"
    )
    out += [f"  NULL: {n}" for n in s.proc_null]
    if s.proc_own:
        out.append(f"  answered with the probe's own function: {', '.join(s.proc_own)}")
    out.append("callers (events by module): " + ", ".join(f"{k} {v}" for k, v in s.callers.items()))
    if s.missing:
        out.append(f"MISSING in real driver (aborted): {', '.join(s.missing)}")
    if s.wrapped_counts:
        top = ", ".join(
            f"{n}={c}" if n == rs else f"{n}->{rs or '?'}={c}" for n, rs, c in s.wrapped_counts[:25]
        )
        out.append(f"calls per driver function (PROBE_WRAP_PROCS, top 25): {top}")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    paths = [a for a in argv[1:] if a != "--json"]
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    results: list[Summary] = []
    for p in paths:
        try:
            events, bad = load(p)
        except OSError as exc:
            print(f"{p}: {exc}", file=sys.stderr)
            return 1
        results.append(summarize(p, events, bad))
    if as_json:
        print(json.dumps([asdict(r) for r in results], indent=1))
    else:
        print("\n\n".join(render(r) for r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
