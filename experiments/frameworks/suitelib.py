"""The framework suite's bookkeeping, apart from running anything (suite.py
runs): the runs' specifications, reading their outputs and mearasd's log, the
records of frameworks.json (microbench.json's format), the targets of issue 14
and the closing table. Everything here works on text and numbers, so the CPU
lane tests it with canned outputs and a real mearasd log.
"""
from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass, field
from typing import Any, Iterable

# ratio = mearas / native median step time (training, both precisions)
TARGETS: dict[str, float] = {
    "torch_small_step_ratio_local": 1.05,
    "torch_small_step_ratio_remote": 1.15,
    "torch_gpt2_step_ratio_local": 1.01,
    "torch_gpt2_step_ratio_remote": 1.02,
}
TARGETS.update({f"{k}_fp32": v for k, v in list(TARGETS.items())})

PLACES = ("native", "local", "remote")
NOT_RUN_GUEST = ("not run: no --vm-bundle (PyTorch in a VM guest needs QEMU and the guest image: "
                 "tests/vm-cuda/gpu-bundle.sh makes the bundle; experiments/frameworks/README.md)")

# mearasd's line when a client's worker ends (host-backend/core/client.c):
#   client uid U pid P vGPU N: K records served[ (client misbehaved)]
# ("uid U " is there when the kernel gave the peer's credentials); a log
# prefix (component, pid, level, time) may come before it
RECORDS_RE = re.compile(r"client (?:uid \d+ )?pid (\d+) vGPU (\d+): (\d+) records served")
# its line when a client connects: "client uid U pid P: N vGPU(s), ..."
HELLO_RE = re.compile(r"client (?:uid \d+ )?pid (\d+): \d+ vGPU")
# mearasd --vm's line when a guest process's slot is freed (host-backend/vm/vm_slot.c):
#   VM NAME slot S vGPU N: K records served, ... ; freed (guest pid P)
VM_RECORDS_RE = re.compile(r"VM (\S+) slot \d+ vGPU (\d+): (\d+) records served.*; freed \(guest pid (-?\d+)\)")
# names of CUDA calls (driver, runtime, libraries) and export-table slots in
# mearas's "not supported" lines and in frameworks' errors
CALL_RE = re.compile(r"\b(?:cu|cuda|cublas|cublasLt|cudnn|cufft|curand|cusparse|cusolver|nvrtc|nccl|nvml)"
                     r"[A-Z][A-Za-z0-9_]*\b|export table \S+ slot \d+")


@dataclass(frozen=True)
class Config:
    """A model configuration of gpt.py."""
    shape: str
    precision: str
    mode: str = "train"

    @property
    def label(self) -> str:
        return f"{self.shape} {self.precision}" + ("" if self.mode == "train" else " infer")

    def metric(self, place: str) -> str:
        """The record's name: issue 14's for training; inference is extra."""
        kind = "step" if self.mode == "train" else "infer"
        return f"torch_{self.shape}_{kind}_ratio_{place}" + ("_fp32" if self.precision == "fp32" else "")


# issue 14's table: training steps; inference is a capability of its own
# (INFER_CONFIGS, natively and on a local vGPU: its step time is in the
# record, with no target), which keeps the suite within the GPU lane's time
RATIO_CONFIGS: tuple[Config, ...] = (
    Config("small", "bf16"), Config("small", "fp32"), Config("gpt2", "bf16"), Config("gpt2", "fp32"),
)
INFER_CONFIGS: tuple[Config, ...] = (Config("small", "bf16", "infer"), Config("gpt2", "bf16", "infer"))


@dataclass
class RunResult:
    """One process of the suite: what ran where, and what came of it."""
    name: str                    # e.g. "small bf16", "cupy"
    place: str                   # native | local | remote
    rc: int | None = None        # None: not started
    out: dict[str, Any] | None = None   # its JSON line
    records: dict[int, int] = field(default_factory=dict)  # vGPU -> records served to it
    unsupported: list[str] = field(default_factory=list)   # "not supported" lines of this run
    error: str | None = None     # why the run failed (None: it passed its own checks)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.rc == 0 and self.out is not None

    def median(self) -> float | None:
        m = self.out.get("median_step_s") if self.out else None
        return float(m) if isinstance(m, (int, float)) else None

    def loss(self) -> float | None:
        x = self.out.get("final_loss") if self.out else None
        return float(x) if isinstance(x, (int, float)) else None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 just now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def last_json(text: str) -> dict[str, Any] | None:
    """The last line of text that is a JSON object (the scripts print one)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict):
                return d
    return None


def records_served(log: str, pids: Iterable[int]) -> dict[int, dict[int, int]]:
    """pid -> {vGPU: records served} from mearasd's log, for the given pids."""
    want = set(pids)
    out: dict[int, dict[int, int]] = {p: {} for p in want}
    for m in RECORDS_RE.finditer(log):
        pid, vgpu, n = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if pid in want:
            out[pid][vgpu] = out[pid].get(vgpu, 0) + n
    return out


def vm_records_served(log: str, vm: str, guest_pids: Iterable[int]) -> dict[int, dict[int, int]]:
    """guest pid -> {vGPU: records served} from mearasd's log, for the VM
    named vm (a guest's pids are its own: another VM's may be the same)."""
    want = set(guest_pids)
    out: dict[int, dict[int, int]] = {p: {} for p in want}
    for m in VM_RECORDS_RE.finditer(log):
        name, vgpu, n, pid = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        if name == vm and pid in want:
            out[pid][vgpu] = out[pid].get(vgpu, 0) + n
    return out


def connected(log: str) -> set[int]:
    """The pids of the clients whose connection mearasd logged."""
    return {int(m.group(1)) for m in HELLO_RE.finditer(log)}


def through_mearas(records: dict[int, int], vgpus: Iterable[int], minimum: int) -> str | None:
    """None when each of the vGPUs was served at least minimum records, else
    why not: a run whose framework reached the GPU around mearas leaves no
    records (or only its setup's)."""
    for v in vgpus:
        if v not in records:
            return f"mearasd logged no records served to vGPU {v} for this client (did it bypass mearas?)"
        if records[v] < minimum:
            return f"only {records[v]} records served to vGPU {v}, at least {minimum} expected (did it bypass mearas?)"
    return None


# libcuda's refusals, logged at debug level (MEARAS_LOG=debug, which the suite
# sets for capability checks): "debug: cuXxx: CUDA_ERROR_YYY (file.c:N fn)"
REFUSAL_RE = re.compile(r"debug: (cu[A-Za-z0-9_]+): (CUDA_ERROR_[A-Z_]+) \(")


def refusals(text: str) -> list[str]:
    """The driver calls libcuda refused and how ("cuXxx: CUDA_ERROR_YYY"),
    each once, in the order of their last refusal (the latest last: nearest
    to the failure)."""
    seen: dict[str, None] = {}
    for m in REFUSAL_RE.finditer(text):
        key = f"{m.group(1)}: {m.group(2)}"
        seen.pop(key, None)
        seen[key] = None
    return list(seen)


def unsupported_lines(text: str) -> list[str]:
    """mearas's lines naming calls it does not serve."""
    return [ln.strip() for ln in text.splitlines() if "not supported" in ln]


def cuda_calls(lines: Iterable[str]) -> list[str]:
    """The CUDA calls (and export-table slots) named in lines, first seen first."""
    seen: list[str] = []
    for ln in lines:
        for m in CALL_RE.finditer(ln):
            if m.group(0) not in seen:
                seen.append(m.group(0))
    return seen


def failure_text(error: str, unsupported: list[str], refused: list[str] | None = None) -> str:
    """A failure's error for the record: the CUDA calls mearas did not serve
    first (the likely cause), else the last calls it refused, then the
    framework's own error."""
    calls = cuda_calls(unsupported)
    if calls:
        return f"{', '.join(calls[:5])} not supported by mearas; the framework said: {error}"
    if refused:
        return f"mearas refused {', '.join(refused[-5:])}; the framework said: {error}"
    named = cuda_calls([error])
    return error if named else f"{error} (no unsupported CUDA call was logged)"


def run_error(rc: int | None, out: dict[str, Any] | None, error: str | None, unsupported: list[str],
              stderr_tail: str, refused: list[str] | None = None) -> str | None:
    """Why a run failed, from its exit status, its JSON line (gpt.py's "ok",
    a check's "pass", their "error") and the runner's own error (a timeout);
    None when it passed. The CUDA calls mearas logged as not supported come
    first in the text."""
    if error is not None:
        return failure_text(error, unsupported, refused)
    if out is None:
        return failure_text(f"exit {rc}, no JSON line: {stderr_tail}", unsupported, refused)
    if rc != 0 or not (out.get("ok") is True or out.get("pass") is True):
        return failure_text(str(out.get("error") or f"exit {rc}"), unsupported, refused)
    return None


def best_median(runs: list[RunResult]) -> float | None:
    """The best (smallest) of the runs' median step times: runs alternate
    native and mearas, so a slow phase of the machine hits both alike."""
    ms = [m for r in runs if r.ok and (m := r.median()) is not None]
    return min(ms) if ms else None


def losses_equal(native: list[RunResult], mearas: list[RunResult]) -> tuple[bool, str]:
    """Whether every run's final loss is the same float (bit for bit) as the
    first native run's of the same configuration (runs of different
    configurations, e.g. a whole-step graph and graphed callables, need not
    agree with each other); the text says what was compared."""
    names = list(dict.fromkeys(r.name for r in mearas if r.ok))
    if not names:
        return False, "no loss to compare"
    same_all, texts = True, []
    for name in names:
        nat = [r for r in native if r.ok and r.name == name]
        ref = next((r.loss() for r in nat if r.loss() is not None), None)
        got = [r.loss() for r in mearas if r.ok and r.name == name]
        if ref is None or not got:
            return False, f"no loss to compare ({name})" if len(names) > 1 else "no loss to compare"
        same = all(x is not None and x == ref for x in got) and all(r.loss() == ref for r in nat)
        same_all = same_all and same
        what = (f"loss {ref!r} in every run" if same else
                f"loss native {sorted({repr(r.loss()) for r in nat})}, mearas {sorted({repr(x) for x in got})}")
        texts.append(f"{name}: {what}" if len(names) > 1 else what)
    return same_all, "; ".join(texts)


def fmt_s(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.3f} ms"


def first_error(runs: list[RunResult]) -> str | None:
    for r in runs:
        if not r.ok:
            return f"{r.place}: {r.error or f'exit {r.rc}'}"
    return None


def training_error(runs: list[RunResult], none_ran: str, not_finite: str) -> str | None:
    """What is wrong with a place's training runs (none_ran: there are none;
    the first failure; not_finite: a loss that is not finite), or None."""
    if not runs:
        return none_ran
    if not all(r.ok for r in runs):
        return first_error(runs)
    if not all(r.out and r.out.get("loss_finite") for r in runs):
        return not_finite
    return None


def loss_verdict(native: list[RunResult], runs: list[RunResult]) -> tuple[str, str | None]:
    """RUNS' losses against native's: what the note says of them, and the
    error when they differ."""
    same, text = losses_equal(native, runs)
    return f"; {text}", None if same else f"the loss differs from native's: {text}"


def ratio_record(cfg: Config, place: str, native: list[RunResult], mearas: list[RunResult],
                 device: str, date: str) -> dict[str, Any]:
    """One step-time record: native and mearas = best median step time (s),
    ratio = mearas / native; the note holds each run's median, the losses and
    the target. A failed run fails the record (ratio null, "error")."""
    metric = cfg.metric(place)
    nv, mv = best_median(native), best_median(mearas)
    ratio = round(mv / nv, 4) if nv and mv is not None else None
    same, loss_text = losses_equal(native, mearas)
    meds = (f"native {', '.join(fmt_s(r.median()) for r in native)}; "
            f"{place} {', '.join(fmt_s(r.median()) for r in mearas)}")
    steps = next((r.out.get("steps") for r in native + mearas if r.out and r.out.get("steps")), None)
    bound = TARGETS.get(metric)
    err = first_error(native + mearas)
    rec: dict[str, Any] = {"metric": metric, "unit": "s", "native": nv, "mearas": mv, "ratio": ratio,
                           "device": device, "date": date}
    parts = [f"median step time of {steps} timed steps, best of {len(native)} runs each ({meds})",
             f"{loss_text} ({'identical' if same else 'DIFFERENT'})"]
    if bound is not None:
        parts.append(f"target <= {bound}")
    else:
        parts.append("no target (inference: not in issue 14's table)")
    rec["note"] = "; ".join(parts)
    rec["loss_identical"] = same
    if err is not None:
        rec["error"] = err
    return rec


def record_ok(rec: dict[str, Any]) -> bool | None:
    """Whether a record met its target: True/False, None when not run.
    Ratio records: every run passed, the loss is identical and the ratio is
    within its target (where it has one); capability records: their "pass"."""
    if "pass" in rec:
        return None if rec["pass"] is None else bool(rec["pass"])
    if rec.get("error") or rec.get("ratio") is None or not rec.get("loss_identical"):
        return False
    bound = TARGETS.get(str(rec["metric"]))
    return True if bound is None else float(rec["ratio"]) <= bound


def capability_record(metric: str, passed: bool | None, error: str | None, note: str, device: str, date: str,
                      native: float | None = None, mearas: float | None = None,
                      unit: str | None = None) -> dict[str, Any]:
    """A record with "pass" instead of a ratio (native and mearas: median step
    times in s where the capability is a training run, else null)."""
    return {"metric": metric, "unit": unit, "native": native, "mearas": mearas, "pass": passed,
            "error": error, "device": device, "date": date, "note": note}


def torch_capability(metric: str, native: list[RunResult], mearas: list[RunResult], device: str, date: str,
                     what: str, compare_loss: bool = True, extra_check: str | None = None) -> dict[str, Any]:
    """A torch capability from gpt.py runs: every mearas run passed (its
    records checked by the runner), its loss is finite and, where a native
    run of the same configuration ran (compare_loss), equal to native's bit
    for bit; extra_check names a field of the mearas runs' JSON that must be
    true (e.g. "expandable_segments")."""
    err = training_error(mearas, "no run through mearas", "the loss is not finite")
    if err is None and extra_check and not all(r.out and r.out.get(extra_check) is True for r in mearas):
        err = f"{extra_check} is not true in the run through mearas"
    note = what
    if compare_loss and err is None:
        if not native:
            note += "; no native run to compare with"
        elif not all(r.ok for r in native):
            err = f"fails natively too ({first_error(native)})"
        else:
            said, err = loss_verdict(native, mearas)
            note += said
    return capability_record(metric, err is None, err, note, device, date,
                             best_median(native), best_median(mearas), "s")


def check_capability(metric: str, native: list[RunResult], mearas: list[RunResult], device: str,
                     date: str, what: str) -> dict[str, Any]:
    """A capability from a check script's verdict (cupy_check.py, ...): the
    run through mearas passed; a native failure is named in the note (the
    environment's, not mearas's, but the capability is not shown then)."""
    err = None
    if not mearas:
        err = "no run through mearas"
    elif not all(r.ok for r in mearas):
        err = first_error(mearas)
    nat = "; ".join(f"native: {'pass' if r.ok else 'FAILED ' + str(r.error)}" for r in native) or \
        "native: not run"
    if err is None and native and not all(r.ok for r in native):
        err = f"passes through mearas but fails natively ({first_error(native)})"
    return capability_record(metric, err is None, err, f"{what}; {nat}", device, date)


def guest_torch_record(native: list[RunResult], guest: list[RunResult], device: str, date: str,
                       what: str) -> dict[str, Any]:
    """guest_torch: every run in the VM guest passed (its records through
    mearasd --vm checked by the caller) with a finite loss equal, bit for
    bit, to the native run's of the same configuration (the same name).
    native/mearas: the training runs' median step times (the guest's CPU is
    emulated: reported, not targeted); the note holds the guest's step times."""
    err = training_error(guest, "no run in the guest", "the loss is not finite in the guest")
    note = what
    if err is None:
        if not native or not all(r.ok for r in native):
            err = f"passes in the guest, but fails natively ({first_error(native) or 'no native run'})"
        else:
            said, err = loss_verdict(native, guest)
            note += said
    elif native and not all(r.ok for r in native):
        err += f"; fails natively too ({first_error(native)})"
    for r in guest:
        times = r.out.get("step_times_s") if r.out else None
        if isinstance(times, list) and times:
            note += (f"; guest {r.name}: median step {fmt_s(r.median())} "
                     f"(steps {', '.join(fmt_s(float(t)) for t in times)}), whole run {r.seconds:.1f} s")
    for r in native:
        if r.ok:
            note += f"; native {r.name}: median step {fmt_s(r.median())}, whole run {r.seconds:.1f} s"
    train = [r for r in guest if r.out and r.out.get("mode") == "train"]
    n_train = [r for r in native if r.out and r.out.get("mode") == "train"]
    return capability_record("guest_torch", err is None, err, note, device, date,
                             best_median(n_train), best_median(train), "s")


def loss_identity_record(metric: str, precision: str, ratio_runs: dict[tuple[Config, str], list[RunResult]],
                         device: str, date: str) -> dict[str, Any]:
    """Whether every training run of that precision through mearas (local
    and remote) ended with native's loss, bit for bit."""
    bad: list[str] = []
    compared = 0
    for cfg in RATIO_CONFIGS:
        if cfg.precision != precision:
            continue
        native = ratio_runs.get((cfg, "native"), [])
        for place in ("local", "remote"):
            mearas = ratio_runs.get((cfg, place), [])
            if not mearas:
                continue
            same, text = losses_equal(native, mearas)
            compared += 1
            if not same:
                bad.append(f"{cfg.label} {place}: {text}")
    if compared == 0:
        return capability_record(metric, False, "no runs to compare", "", device, date)
    err = "; ".join(bad) if bad else None
    return capability_record(metric, err is None, err,
                             f"final loss of {compared} configurations x places, {precision}, against native's "
                             "(torch.use_deterministic_algorithms, CUBLAS_WORKSPACE_CONFIG=:4096:8)",
                             device, date)


def table(records: list[dict[str, Any]], not_run: list[str]) -> tuple[str, int, int]:
    """The closing table, and the counts of records passed and failed
    (records not run count in neither)."""
    lines = [f"{'metric':36} {'native':>11} {'mearas':>11} {'ratio':>7}  {'target':8} result"]
    passed = failed = 0
    for r in records:
        ok = record_ok(r)
        if ok is None:
            res = "not run"
        elif ok:
            res, passed = "ok", passed + 1
        else:
            res, failed = "FAILED" if "pass" in r or r.get("error") else "MISSED", failed + 1
        bound = TARGETS.get(str(r["metric"]))
        if "pass" in r:
            mid = f"{'pass' if r['pass'] else '-' if r['pass'] is None else 'fail':>7}"
        else:
            mid = f"{r['ratio']:7.3f}" if r.get("ratio") is not None else f"{'-':>7}"
        nv = r.get("native")
        mv = r.get("mearas")
        lines.append(f"{r['metric']:36} {fmt_s(nv) if isinstance(nv, (int, float)) else '-':>11} "
                     f"{fmt_s(mv) if isinstance(mv, (int, float)) else '-':>11} {mid}  "
                     f"{('<= ' + str(bound)) if bound else '':8} {res}")
        why = r.get("error")
        if why and ok is not True:
            lines.append(f"    {why}")
    for n in not_run:
        lines.append(f"not run: {n}")
    lines.append(f"{passed} passed, {failed} failed" + (f", {sum(1 for r in records if record_ok(r) is None)}"
                                                         " not run" if any(record_ok(r) is None for r in records)
                                                         else ""))
    return "\n".join(lines), passed, failed

