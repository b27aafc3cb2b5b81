#!/usr/bin/env python3
"""Checks the JSONL logs that probe_test left (see run-tests.sh).

    check_log.py PLAIN.jsonl WRAP.jsonl SELF.jsonl ERRORS.jsonl

Prints one PASS/FAIL line per check and exits 1 if any failed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import summarize  # noqa: E402

Event = dict[str, Any]

PLAIN = "112233445566778899aabbccddeef001"
CLS = "c693336e1121df11a8c368f355d89593"
CUDART = "6bd5fb6c5bf4e74a8987d93912fd9df9"
INTEG = "d4082055bde6704b8d34ba123c66e1f2"
COMP = "f8cff95121468b4eb9e2fb469e7c0dd9"
UNKNOWN = "ee" * 16

failures = 0


def check(name: str, cond: Callable[[], bool], detail: str = "") -> None:
    global failures
    try:
        ok = bool(cond())
    except (KeyError, IndexError, StopIteration, TypeError, ValueError) as exc:
        ok = False
        detail = f"{detail} ({type(exc).__name__}: {exc})"
    if ok:
        print(f"PASS log: {name}")
    else:
        failures += 1
        print(f"FAIL log: {name}{': ' + detail if detail else ''}")


def read(path: str) -> tuple[list[Event], int]:
    events: list[Event] = []
    bad = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                bad += 1
    return events, bad


def find(events: list[Event], **kw: Any) -> list[Event]:
    return [e for e in events if all(e.get(k) == v for k, v in kw.items())]


def first(events: list[Event], **kw: Any) -> Event:
    found = find(events, **kw)
    if not found:
        raise KeyError(f"no event {kw}")
    return found[0]


def slot_of(table: Event, i: int) -> Event:
    return next(s for s in table["slots"] if s["i"] == i)


def ptr(e: Event, a: int) -> Event:
    return next(p for p in e["ptrs"] if p["a"] == a)


def check_plain(path: str) -> None:
    ev, bad = read(path)
    main_pid = ev[0]["pid"] if ev else -1
    main = [e for e in ev if e["pid"] == main_pid]
    check("every line is JSON", lambda: bad == 0 and len(ev) > 20, f"{bad} bad of {len(ev)}")
    seqs = [e["seq"] for e in main]
    check("sequence numbers unique and gap-free", lambda: sorted(seqs) == list(range(len(seqs))))
    hdr = ev[0]
    check(
        "header first: real driver path, its version, export count",
        lambda: hdr["ev"] == "header"
        and hdr["real"].endswith("/libfakecuda.so")
        and hdr["real_loaded"] is True
        and hdr["driver_version"] == 13000
        and hdr["n_exports"] == 637,
        str(hdr)[:300],
    )
    check(
        "cuInit logged with flags and both results",
        lambda: first(ev, ev="call", fn="cuInit", flags=0)["rc"] == 0
        and first(ev, ev="call", fn="cuInit", flags=7)["rc"] == 101,
    )
    check(
        "cuDriverGetVersion / cuDeviceGetCount logged with outputs",
        lambda: first(ev, ev="call", fn="cuDriverGetVersion")["version"] == 13000
        and first(ev, ev="call", fn="cuDeviceGetCount")["count"] == 3,
    )
    check(
        "caller is module+offset(symbol) of the test program",
        lambda: first(ev, ev="call", fn="cuInit")["caller"].startswith("probe_test+0x")
        and "(main+0x" in first(ev, ev="call", fn="cuInit")["caller"],
    )
    check(
        "proc: cuMemAlloc@12000 -> cuMemAlloc_v2, real pointer handed",
        lambda: (lambda e: e["rc"] == 0 and e["status"] == 0 and e["real_sym"] == "cuMemAlloc_v2"
                 and e["ret"] == "real")(first(ev, ev="proc", sym="cuMemAlloc", ver=12000)),
    )
    check(
        "proc: unknown name logged as NULL with SYMBOL_NOT_FOUND",
        lambda: (lambda e: e["ptr"] == "0x0" and e["status"] == 1 and e["rc"] == 0)(
            first(ev, ev="proc", sym="cuNoSuchThing")
        ),
    )
    check(
        "proc: cuGetProcAddress answered with the probe's own (v2 at 12000, v1 at 11080)",
        lambda: first(ev, ev="proc", sym="cuGetProcAddress", ver=12000)["ret"] == "own"
        and first(ev, ev="proc", sym="cuGetProcAddress", ver=12000)["real_sym"]
        == "cuGetProcAddress_v2"
        and first(ev, ev="proc", sym="cuGetProcAddress", ver=11080)["real_sym"]
        == "cuGetProcAddress",
    )
    check(
        "proc: non-exported variant located by module+offset",
        lambda: (lambda e: e["flags"] == 2 and e["real_sym"] == ""
                 and e["real_where"].startswith("libfakecuda.so+0x"))(
            first(ev, ev="proc", sym="cuLaunchKernel")
        ),
    )
    t = first(ev, ev="export_table", uuid=PLAIN, repeat=False)
    check(
        "export_table: size, layout, mode, 5 named slots with code bytes",
        lambda: t["word0"] == "0x30"
        and t["layout"] == "sized"
        and t["n_slots"] == 6
        and t["mode"] == "copy"
        and all(
            f"(fake_a{i}+0x0)" in slot_of(t, i)["where"]
            and len(slot_of(t, i)["code"]) == 16
            and slot_of(t, i)["wrapped"]
            for i in range(1, 6)
        ),
        json.dumps(t)[:400],
    )
    check("repeat request logged as repeat", lambda: len(find(ev, ev="export_table", uuid=PLAIN,
                                                              repeat=True)) == 1)
    c1 = first(ev, ev="xt_call", uuid=PLAIN, slot=1)
    r1 = first(ev, ev="xt_ret", call_seq=c1["seq"])
    check(
        "slot 1 call: arguments and the out pointer's bytes before",
        lambda: c1["args"][1] == "0x5" and ptr(c1, 0)["kind"] == "rw"
        and ptr(c1, 0)["bytes"].startswith("0000000000000000"),
    )
    check(
        "slot 1 return: rax and the out pointer's bytes after, marked changed",
        lambda: r1["rax"] == "0x11" and r1["rc"] == 17
        and ptr(r1, 0)["bytes"].startswith("1000000000000000") and ptr(r1, 0)["changed"],
    )
    c2 = first(ev, ev="xt_call", uuid=PLAIN, slot=2)
    check(
        "slot 2: six register arguments logged, result 204",
        lambda: c2["args"] == ["0x1", "0x2", "0x3", "0x4", "0x5", "0x6"]
        and first(ev, ev="xt_ret", call_seq=c2["seq"])["rax"] == "0xcc",
    )
    r3 = first(ev, ev="xt_ret", call_seq=first(ev, ev="xt_call", uuid=PLAIN, slot=3)["seq"])
    check("slot 3: out-param 1500 seen after", lambda: ptr(r3, 0)["bytes"].startswith("dc05"))
    put = first(ev, ev="xt_call", uuid=CLS, slot=0)
    check(
        "callback argument classified as code and named",
        lambda: ptr(put, 3)["kind"] == "code" and "test_cls_dtor" in ptr(put, 3)["sym"],
    )
    cls = first(ev, ev="export_table", uuid=CLS)
    check(
        "header-less table: layout, 3 slots, terminator shown",
        lambda: cls["layout"] == "headerless" and cls["n_slots"] == 3
        and slot_of(cls, 3)["val"] == "0x0",
    )
    cud = first(ev, ev="export_table", uuid=CUDART)
    check(
        "6bd5fb6c patched in place (handed == table)",
        lambda: cud["mode"] == "patch" and cud["handed"] == cud["table"]
        and slot_of(cud, 1)["wrapped"] and not slot_of(cud, 3)["wrapped"],
    )
    integ = first(ev, ev="export_table", uuid=INTEG)
    check(
        "d4082055 patched, slot 1 left real, slot 2 wrapped",
        lambda: integ["mode"] == "patch" and not slot_of(integ, 1)["wrapped"]
        and slot_of(integ, 2)["wrapped"]
        and not find(ev, ev="xt_call", uuid=INTEG, slot=1)
        and len(find(ev, ev="xt_call", uuid=INTEG, slot=2)) == 1,
    )
    comp = first(ev, ev="export_table", uuid=COMP)
    check(
        "composite table: 3 slots by header, 2 more taken, slot 4 called",
        lambda: comp["n_slots"] == 3 and comp["n_ext"] == 2
        and slot_of(comp, 4)["beyond_hdr"] and len(find(ev, ev="xt_call", uuid=COMP, slot=4)) == 1,
    )
    unk = first(ev, ev="export_table", uuid=UNKNOWN)
    check("unknown UUID: rc 500, no table", lambda: unk["rc"] == 500 and unk["table"] == "0x0")
    tids = {e["tid"] for e in find(ev, ev="xt_call", uuid=PLAIN, slot=1)}
    check("thread test: slot 1 called from 5 threads", lambda: len(tids) == 5, str(tids))
    counts = first(ev, ev="xt_counts")
    check(
        "xt_counts at exit: slot 1 called 201 times",
        lambda: any(c["uuid"] == PLAIN and c["slot"] == 1 and c["n"] == 201
                    for c in counts["counts"]),
    )
    miss = find(ev, ev="missing")
    check(
        "missing symbol logged by the child that called it",
        lambda: len(miss) == 1 and miss[0]["sym"] == "cuCtxCreate_v4"
        and miss[0]["pid"] != main_pid,
    )
    events, nbad = summarize.load(path)
    s = summarize.summarize(path, events, nbad)
    order = [t.uuid for t in s.tables]
    check(
        "summarize: table order, exact slot counts, NULL lookups",
        lambda: order == [PLAIN, PLAIN, CLS, CUDART, INTEG, COMP, UNKNOWN]
        and s.slot_counts[PLAIN][1] == 201
        and s.slot_counts_source.startswith("xt_counts")
        and any(n.startswith('"cuNoSuchThing"') for n in s.proc_null)
        and s.proc_distinct_names == 6
        and "probe_test" in s.callers,
        f"{order} {s.proc_distinct_names}",
    )
    check("summarize: text renders", lambda: "CONTEXT_LOCAL_STORAGE_V0301" in summarize.render(s))


def check_wrap(path: str) -> None:
    ev, bad = read(path)
    check("wrap: every line is JSON", lambda: bad == 0 and len(ev) > 20)
    check(
        "wrap: cuGetProcAddress hands counting thunks",
        lambda: first(ev, ev="proc", sym="cuMemAlloc", ver=12000)["ret"] == "count",
    )
    pc = first(ev, ev="proc_counts")
    by = {c["real_sym"]: c["n"] for c in pc["counts"]}
    check(
        "wrap: per-function call counts at exit (forwarders and lookups)",
        lambda: by.get("cuMemAlloc_v2") == 2 and by.get("cuMemFree_v2") == 4
        and by.get("cuLaunchKernel") == 1,
        str(by),
    )


def check_errors(path: str) -> None:
    ev, bad = read(path)
    check("errors: every line is JSON", lambda: bad == 0 and len(ev) > 20)
    frees = find(ev, ev="proc_error", sym="cuMemFree_v2")
    check(
        "errors: a forwarder's failing call is logged with its name and result",
        lambda: len(frees) >= 1 and all(e["rc"] == 1 for e in frees),
        str(frees[:2]),
    )
    check(
        "errors: calls that succeed are not logged",
        lambda: not find(ev, ev="proc_error", sym="cuMemAlloc_v2"),
    )
    pc = first(ev, ev="proc_counts")
    by = {c["real_sym"]: c["n"] for c in pc["counts"]}
    check(
        "errors: calls are still counted",
        lambda: by.get("cuMemAlloc_v2") == 2 and by.get("cuMemFree_v2") == 4,
        str(by),
    )


def check_self(path: str) -> None:
    ev, bad = read(path)
    hdr = first(ev, ev="header")
    check(
        "self: PROBE_REAL_LIBCUDA naming the probe is refused",
        lambda: hdr["real_loaded"] is False and "probe itself" in hdr["error"],
    )
    check(
        "self: first call aborts with a 'missing' line",
        lambda: first(ev, ev="missing")["sym"] == "cuInit",
    )


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    check_plain(argv[1])
    check_wrap(argv[2])
    check_self(argv[3])
    check_errors(argv[4])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
