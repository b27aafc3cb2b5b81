#!/usr/bin/env python3
"""Generates the cuGetProcAddress table of mearas's libcuda.so.1 from the
real driver's measured answers.

    procgen.py TABLE.tsv[.gz] SYMBOLS OUT.c

TABLE is what experiments/drvapi-probe/tables/proctable printed on a GPU
machine: a '# driver N' line, then one line per question,
'name version flags rc status symbol' (tab-separated; the empty name is
written '(empty)', no pointer 'NULL', a status the driver left alone -1).
SYMBOLS is the list of driver exports (guest/libcuda/cuda13.symbols).

OUT.c holds, per base name (sorted, for a binary search), rules 'from this
version on, for these flags values, the answer is this export (or not
found, or version not sufficient)': consecutive versions with the same
answer make one rule, and flags values with the same rules share them.
guest/libcuda/proctable.h describes the layout and procaddr.c reads it.

The table must reproduce every measured line: the generator replays each
one through the lookup the C code does and fails on any difference, on a
line it cannot express, and on a symbol that is not in SYMBOLS.
"""
from __future__ import annotations

import argparse
import bisect
import gzip
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# CUdriverProcAddressQueryResult and the CUresult values the table holds
SUCCESS = 0
NOT_FOUND = 1
TOO_OLD = 2
UNTOUCHED = -1                 # the probe's initial status: not written
CUDA_ERROR_INVALID_VALUE = 1
FLAGS = (0, 1, 2)              # default, legacy stream, per-thread stream

# rule.sym values that are not an export (proctable.h)
SYM_NOT_FOUND = 0xFFFF
SYM_TOO_OLD = 0xFFFE
U16_MAX = 0xFFFF

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# An answer: the exported symbol handed out, or a status (NOT_FOUND, TOO_OLD).
Answer = str | int


class GenError(Exception):
    pass


@dataclass(frozen=True)
class Row:
    line: int
    name: str
    version: int
    flags: int
    rc: int
    status: int
    symbol: str | None


@dataclass(frozen=True)
class Rule:
    start: int        # first version it applies to
    answer: Answer
    mask: int         # bit f: applies to flags value f


@dataclass
class Table:
    driver: int
    names: list[str]                 # sorted
    rules: dict[str, list[Rule]]     # per name, by start


def read_symbols(path: Path) -> list[str]:
    syms: set[str] = set()
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        if not IDENT.match(s):
            raise GenError(f"{path}:{n}: '{s}' is not a C identifier")
        syms.add(s)
    if not syms:
        raise GenError(f"{path}: no symbols")
    return sorted(syms)


def open_text(path: Path) -> list[str]:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return f.read().splitlines()
    return path.read_text(encoding="utf-8").splitlines()


def read_table(path: Path) -> tuple[int, list[Row]]:
    driver: int | None = None
    rows: list[Row] = []
    for n, line in enumerate(open_text(path), 1):
        if not line.strip():
            continue
        m = re.match(r"#\s*driver\s+(\d+)\s*$", line)
        if m:
            driver = int(m.group(1))
            continue
        if line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) != 6:
            raise GenError(f"{path}:{n}: expected 6 tab-separated fields, got {len(f)}")
        try:
            version, flags, rc, status = (int(x) for x in f[1:5])
        except ValueError:
            raise GenError(f"{path}:{n}: version, flags, rc and status must be integers") from None
        name = "" if f[0] == "(empty)" else f[0]
        rows.append(Row(n, name, version, flags, rc, status, None if f[5] == "NULL" else f[5]))
    if driver is None:
        raise GenError(f"{path}: no '# driver N' line")
    if not rows:
        raise GenError(f"{path}: no rows")
    return driver, rows


def answer_of(row: Row, driver: int, where: str) -> Answer | None:
    """The row's answer; None for a version above the driver's (answered by
    the version check, not the table). Lines the table cannot express fail."""
    r = row
    if r.version > driver:
        if (r.rc, r.status, r.symbol) != (CUDA_ERROR_INVALID_VALUE, UNTOUCHED, None):
            raise GenError(f"{where}: above the driver's version {driver} the table expresses only "
                           f"rc {CUDA_ERROR_INVALID_VALUE}, status untouched, NULL")
        return None
    if r.flags not in FLAGS:
        raise GenError(f"{where}: flags {r.flags}: only {FLAGS} are expressible")
    if r.rc != 0:
        raise GenError(f"{where}: rc {r.rc} at a version the driver supports is not expressible")
    if r.status == SUCCESS and r.symbol is not None:
        return r.symbol
    if r.status in (NOT_FOUND, TOO_OLD) and r.symbol is None:
        return r.status
    raise GenError(f"{where}: status {r.status} with symbol {r.symbol or 'NULL'} is not expressible")


def build(driver: int, rows: list[Row], symbols: list[str], src: str) -> Table:
    known = set(symbols)
    answers: dict[str, dict[tuple[int, int], Answer]] = {}
    for r in rows:
        where = f"{src}:{r.line}"
        if r.symbol is not None and r.symbol not in known:
            raise GenError(f"{where}: the driver handed out {r.symbol} for '{r.name}', "
                           "which is not in the symbol list")
        a = answer_of(r, driver, where)
        if a is None:
            continue
        per = answers.setdefault(r.name, {})
        old = per.setdefault((r.version, r.flags), a)
        if old != a:
            raise GenError(f"{where}: '{r.name}' {r.version} {r.flags} answered twice, differently")

    rules: dict[str, list[Rule]] = {}
    for name, per in answers.items():
        if all(a == NOT_FOUND for a in per.values()):
            continue                      # absent from the table: not found
        if not IDENT.match(name):
            raise GenError(f"{src}: '{name}' is answered but is not a C identifier")
        starts: dict[tuple[int, Answer], int] = {}
        for fl in FLAGS:
            vs = sorted(v for (v, f) in per if f == fl)
            if not vs:
                raise GenError(f"{src}: '{name}' is not measured with flags {fl}")
            prev: Answer = TOO_OLD        # below the first rule
            for v in vs:
                a = per[(v, fl)]
                if a != prev:
                    if not 0 <= v <= U16_MAX:
                        raise GenError(f"{src}: '{name}' changes at version {v}, beyond 16 bits")
                    starts[(v, a)] = starts.get((v, a), 0) | 1 << fl
                prev = a
        rules[name] = sorted((Rule(v, a, m) for (v, a), m in starts.items()),
                             key=lambda r: (r.start, str(r.answer)))
    return Table(driver, sorted(rules), rules)


def lookup(t: Table, name: str, version: int, flags: int) -> tuple[int, int, str | None]:
    """(rc, status, symbol) as procaddr.c answers; status UNTOUCHED when it
    writes none."""
    if version > t.driver or flags not in FLAGS:
        return CUDA_ERROR_INVALID_VALUE, UNTOUCHED, None
    i = bisect.bisect_left(t.names, name)
    if i == len(t.names) or t.names[i] != name:
        return 0, NOT_FOUND, None
    ans: Answer = TOO_OLD
    for r in t.rules[name]:
        if r.mask & 1 << flags and r.start <= version:
            ans = r.answer
    if isinstance(ans, str):
        return 0, SUCCESS, ans
    return 0, ans, None


def verify(t: Table, rows: list[Row], src: str) -> None:
    for r in rows:
        got = lookup(t, r.name, r.version, r.flags)
        if got != (r.rc, r.status, r.symbol):
            raise GenError(f"{src}:{r.line}: the table answers {got}, the driver answered "
                           f"{(r.rc, r.status, r.symbol)} (generator bug)")


def c_string(s: str) -> str:
    return '"' + s + '\\0"'


def c_array(decl: str, rows: Iterable[str]) -> list[str]:
    """The lines of `DECL = { ROWS };`, a row a line."""
    return [f"{decl} = {{", *(f"\t{r}" for r in rows), "};"]


def emit(t: Table, src: str) -> str:
    # the exports the table hands out, and one string pool for them and the
    # base names (every base name measured so far is itself an export)
    exports = sorted({r.answer for rs in t.rules.values() for r in rs if isinstance(r.answer, str)})
    sym_index = {s: i for i, s in enumerate(exports)}
    pool = sorted(set(exports) | set(t.names))
    offset: dict[str, int] = {}
    at = 0
    for s in pool:
        offset[s] = at
        at += len(s) + 1
    if at > U16_MAX:
        raise GenError(f"the string pool ({at} bytes) outgrew 16-bit offsets")
    nrules = sum(len(rs) for rs in t.rules.values())
    if len(exports) >= SYM_TOO_OLD or nrules > U16_MAX:
        raise GenError("the table outgrew 16-bit indices")

    out: list[str] = []
    w = out.append
    w(f"/* generated by scripts/procgen.py from {src}: do not edit */")
    w("/* No CUDA headers here: the exports are only named, as functions of one")
    w(" * generic type, so that their addresses can be handed out. */")
    w("#include <stdint.h>")
    w("")
    w('#include "proctable.h"')
    w('#include "version.h"')
    w("")
    w(f"_Static_assert(CU_DRIVER_VERSION == {t.driver}, \"the cuGetProcAddress table was measured "
      f"on a driver reporting {t.driver}: regenerate it for CU_DRIVER_VERSION\");")
    w("")
    for s in exports:
        w(f"void {s}(void);")
    w("")
    w("const char cu_proc_strings[] =")
    for s in pool:
        w(f"\t{c_string(s)}")
    w("\t;")
    w("")
    w(f"const unsigned cu_proc_nsyms = {len(exports)};")
    out += c_array("const uint16_t cu_proc_sym_names[]", (f"{offset[s]},\t/* {s} */" for s in exports))
    out += c_array("const cu_proc_fn cu_proc_fns[]", (f"{s}," for s in exports))
    w("")
    w(f"const unsigned cu_proc_nnames = {len(t.names)};")
    w("const struct cu_proc_name cu_proc_names[] = {")
    first = 0
    for n in t.names:
        w(f"\t{{ {offset[n]}, {first} }},\t/* {n} */")
        first += len(t.rules[n])
    w(f"\t{{ 0, {first} }},\t/* the end of the last name's rules */")
    w("};")
    w("")
    w("const struct cu_proc_rule cu_proc_rules[] = {")
    for n in t.names:
        for r in t.rules[n]:
            if isinstance(r.answer, str):
                sym, what = str(sym_index[r.answer]), r.answer
            elif r.answer == NOT_FOUND:
                sym, what = "CU_PROC_NOT_FOUND", "not found"
            else:
                sym, what = "CU_PROC_TOO_OLD", "version not sufficient"
            w(f"\t{{ {r.start}, {sym}, {r.mask} }},\t/* {n}: {what} */")
    w("};")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="Generate the cuGetProcAddress table.")
    p.add_argument("table", type=Path, help="the measured TSV (optionally gzipped)")
    p.add_argument("symbols", type=Path, help="the driver's exports, one per line")
    p.add_argument("out", type=Path, help="the C file to write")
    a = p.parse_args(argv)
    try:
        symbols = read_symbols(a.symbols)
        driver, rows = read_table(a.table)
        src = a.table.name
        t = build(driver, rows, symbols, src)
        verify(t, rows, src)
        text = emit(t, src)
    except (GenError, OSError) as e:
        print(f"procgen: {e}", file=sys.stderr)
        return 1
    # written whole or not at all, so a failed run leaves no table behind
    tmp = a.out.with_name(a.out.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
