"""The suite's bookkeeping (suitelib.py) on canned run outputs and log lines."""
from __future__ import annotations

from typing import Any

import suitelib as sl
from suitelib import Config, RunResult

DEV, DATE = "Test GPU", "2026-11-26"


def run(place: str, median: float | None = 0.01, loss: float = 6.25, ok: bool = True,
        **more: Any) -> RunResult:
    out: dict[str, Any] = {"ok": ok, "steps": 30, "loss_finite": True, **more}
    if median is not None:
        out["median_step_s"] = median
    out["final_loss"] = loss
    return RunResult(name="x", place=place, rc=0 if ok else 1, out=out, error=None if ok else "boom")


def test_records_served_reads_both_label_forms_behind_any_prefix() -> None:
    log = "\n".join([
        "mearasd[10]: info: client uid 0 pid 4242: 1 vGPU(s), data area 1024 MiB",
        "mearasd[11]: info: client uid 0 pid 4242 vGPU 0: 1234 records served",
        "2026-11-26T00:01:02.345Z mearasd[12] info: client pid 77 vGPU 1: 5 records served (client misbehaved)",
        "mearasd[13]: info: client uid 0 pid 999 vGPU 0: 8 records served",
    ])
    got = sl.records_served(log, [4242, 77, 5])
    assert got == {4242: {0: 1234}, 77: {1: 5}, 5: {}}


def test_vm_records_served_by_guest_pid_of_that_vm() -> None:
    log = "\n".join([
        "2026-11-26T09:04:53.718Z mearasd[18416]: info: VM g: slot 0 claimed (token 0xfda78b99, guest pid 124): "
        "slot worker 18505",
        "2026-11-26T09:04:53.845Z mearasd[18505]: info: VM g slot 0 vGPU 0: 812 records served, 40 synchronizing "
        "in 12.500 us of host time each; freed (guest pid 124)",
        "mearasd[18505]: info: VM g slot 0 vGPU 1: 0 records served, 0 synchronizing in 0.000 us of host time each; "
        "freed (guest pid 124)",
        "mearasd[18506]: info: VM g slot 1 vGPU 0: 5 records served, 1 synchronizing in 1.000 us of host time each "
        "(client misbehaved); freed (guest pid 136)",
        # another VM's guest has its own pids; a process client is no guest
        "mearasd[18507]: info: VM h slot 0 vGPU 0: 99 records served, 9 synchronizing in 1.000 us of host time "
        "each; freed (guest pid 124)",
        "mearasd[13]: info: client uid 0 pid 136 vGPU 0: 8 records served",
    ])
    assert sl.vm_records_served(log, "g", [124, 136, 150]) == {124: {0: 812, 1: 0}, 136: {0: 5}, 150: {}}


def test_through_mearas_wants_each_vgpu_served_enough() -> None:
    assert sl.through_mearas({0: 500, 1: 300}, [0, 1], 300) is None
    assert "no records served to vGPU 1" in str(sl.through_mearas({0: 500}, [0, 1], 10))
    assert "only 9 records served to vGPU 0, at least 10" in str(sl.through_mearas({0: 9}, [0], 10))


def test_failure_names_the_calls_mearas_did_not_serve() -> None:
    lines = sl.unsupported_lines("\n".join([
        "mearas[7]: warning: cuMemCreate is not supported by mearas yet: returning CUDA_ERROR_NOT_SUPPORTED",
        "something else",
        "mearas[7]: error: export table 6e163fbe slot 7 was called: not supported by mearas, returning X",
        "mearas[7]: warning: cuMemCreate is not supported by mearas yet: returning CUDA_ERROR_NOT_SUPPORTED",
    ]))
    assert len(lines) == 3
    text = sl.failure_text("RuntimeError: CUDA error: operation not supported", lines)
    assert text.startswith("cuMemCreate, export table 6e163fbe slot 7 not supported by mearas;")
    assert text.endswith("the framework said: RuntimeError: CUDA error: operation not supported")
    # nothing logged: the framework's error, and a word that no call was named
    assert sl.failure_text("CuFFTError: CUFFT_INTERNAL_ERROR", []) == \
        "CuFFTError: CUFFT_INTERNAL_ERROR (no unsupported CUDA call was logged)"


def test_failure_names_the_calls_mearas_refused_last() -> None:
    err = "\n".join([
        "2026-11-26T09:02:00.119Z mearas[461]: debug: cls_get: CUDA_ERROR_INVALID_HANDLE (exptables.c:378 cls_get)",
        "2026-11-26T09:02:00.121Z mearas[461]: debug: cuMemcpyDtoHAsync_v2: CUDA_ERROR_INVALID_VALUE (copy.c:25 copy)",
        "2026-11-26T09:02:00.122Z mearas[461]: debug: cuStreamQuery: CUDA_ERROR_INVALID_HANDLE (stream.c:17 x)",
        "2026-11-26T09:02:00.123Z mearas[461]: debug: cuMemcpyDtoHAsync_v2: CUDA_ERROR_INVALID_VALUE (copy.c:25 copy)",
        "2026-11-26T09:02:00.124Z mearas[461]: debug: cuGetProcAddress(cuFoo, 13000, 0) = cuFoo",
    ])
    refused = sl.refusals(err)
    # each once, the latest last; lines that are no refusal are not taken
    assert refused == ["cuStreamQuery: CUDA_ERROR_INVALID_HANDLE", "cuMemcpyDtoHAsync_v2: CUDA_ERROR_INVALID_VALUE"]
    assert sl.run_error(1, {"pass": False, "error": "jit: NOT_FOUND"}, None, [], "", refused) == \
        ("mearas refused cuStreamQuery: CUDA_ERROR_INVALID_HANDLE, cuMemcpyDtoHAsync_v2: CUDA_ERROR_INVALID_VALUE; "
         "the framework said: jit: NOT_FOUND")
    # a call mearas does not serve at all is named first, as before
    assert sl.failure_text("E", ["cuMemCreate is not supported by mearas"], refused).startswith(
        "cuMemCreate not supported by mearas")


def test_run_error_from_exit_status_and_json_line() -> None:
    assert sl.run_error(0, {"ok": True}, None, [], "") is None
    assert sl.run_error(0, {"pass": True}, None, [], "") is None
    assert sl.run_error(1, {"pass": False, "error": "fft: CuFFTError: X"}, None, [], "") == \
        "fft: CuFFTError: X (no unsupported CUDA call was logged)"
    # a zero exit without ok in its line is no pass
    assert sl.run_error(0, {"ok": False}, None, [], "") is not None
    assert str(sl.run_error(-11, None, None, [], "Segmentation fault")).startswith("exit -11, no JSON line: Segm")
    assert str(sl.run_error(-9, None, "timed out after 5 s", [], "")).startswith("timed out after 5 s")


def test_last_json_takes_the_last_object_line() -> None:
    assert sl.last_json('noise\n{"a": 1}\n{"b": 2}\ntrailing text\n') == {"b": 2}
    assert sl.last_json("{broken\n[1, 2]\n") is None


def test_metric_names_are_issue_14s() -> None:
    names = {c.metric(p) for c in sl.RATIO_CONFIGS for p in ("local", "remote")}
    assert names == {f"torch_{s}_step_ratio_{p}{x}" for s in ("small", "gpt2") for p in ("local", "remote")
                     for x in ("", "_fp32")}
    assert names == set(sl.TARGETS)
    assert sl.TARGETS["torch_small_step_ratio_remote"] == 1.15 and sl.TARGETS["torch_gpt2_step_ratio_local_fp32"] == 1.01
    assert [c.label for c in sl.INFER_CONFIGS] == ["small bf16 infer", "gpt2 bf16 infer"]


def test_ratio_record_best_medians_and_target() -> None:
    cfg = Config("small", "bf16")
    native = [run("native", 0.0100), run("native", 0.0102)]
    local = [run("local", 0.0104), run("local", 0.0103)]
    rec = sl.ratio_record(cfg, "local", native, local, DEV, DATE)
    assert rec["metric"] == "torch_small_step_ratio_local" and rec["unit"] == "s"
    assert rec["native"] == 0.0100 and rec["mearas"] == 0.0103 and rec["ratio"] == 1.03
    assert rec["device"] == DEV and rec["date"] == DATE and "error" not in rec
    assert "loss 6.25 in every run (identical)" in rec["note"] and "target <= 1.05" in rec["note"]
    assert sl.record_ok(rec) is True
    slow = sl.ratio_record(cfg, "local", native, [run("local", 0.0111)], DEV, DATE)
    assert slow["ratio"] == 1.11 and sl.record_ok(slow) is False


def test_ratio_record_fails_on_a_different_loss() -> None:
    rec = sl.ratio_record(Config("gpt2", "fp32"), "remote", [run("native", 0.2)],
                          [run("remote", 0.2, loss=6.250000000000001)], DEV, DATE)
    assert rec["ratio"] == 1.0 and rec["loss_identical"] is False
    assert "DIFFERENT" in rec["note"] and "6.250000000000001" in rec["note"]
    assert sl.record_ok(rec) is False


def test_ratio_record_fails_on_a_failed_run() -> None:
    rec = sl.ratio_record(Config("small", "fp32"), "remote", [run("native")],
                          [run("remote", None, ok=False)], DEV, DATE)
    assert rec["ratio"] is None and rec["mearas"] is None and rec["error"] == "remote: boom"
    assert sl.record_ok(rec) is False


def test_torch_capability_verdicts() -> None:
    good = sl.torch_capability("torch_compile", [run("native")], [run("local")], DEV, DATE, "what")
    assert good["pass"] is True and good["error"] is None and "ratio" not in good
    assert good["native"] == 0.01 and good["mearas"] == 0.01 and good["unit"] == "s"
    differs = sl.torch_capability("torch_compile", [run("native")], [run("local", loss=7.0)], DEV, DATE, "w")
    assert differs["pass"] is False and "the loss differs" in differs["error"]
    native_bad = sl.torch_capability("torch_cuda_graphs", [run("native", ok=False)], [run("local")], DEV, DATE, "w")
    assert native_bad["pass"] is False and native_bad["error"] == "fails natively too (native: boom)"
    flag = sl.torch_capability("torch_expandable_segments", [run("native")],
                               [run("local", expandable_segments=False)], DEV, DATE, "w",
                               extra_check="expandable_segments")
    assert flag["pass"] is False and "expandable_segments is not true" in flag["error"]
    nan = sl.torch_capability("torch_two_vgpus", [], [run("local", loss_finite=False)], DEV, DATE, "w",
                              compare_loss=False)
    assert nan["pass"] is False and nan["error"] == "the loss is not finite"


def test_torch_capability_compares_each_configuration_with_its_own_native_run() -> None:
    def named(name: str, place: str, loss: float) -> RunResult:
        r = run(place, loss=loss)
        r.name = name
        return r

    native = [named("graphs whole", "native", 9.25), named("graphs callables", "native", 9.5)]
    same = [named("graphs whole", "local", 9.25), named("graphs callables", "local", 9.5)]
    rec = sl.torch_capability("torch_cuda_graphs", native, same, DEV, DATE, "w")
    assert rec["pass"] is True, rec["error"]
    swapped = [named("graphs whole", "local", 9.5), named("graphs callables", "local", 9.25)]
    rec = sl.torch_capability("torch_cuda_graphs", native, swapped, DEV, DATE, "w")
    assert rec["pass"] is False and "graphs whole: loss native ['9.25'], mearas ['9.5']" in rec["error"]


def test_check_capability_needs_mearas_and_native_passes() -> None:
    ok = RunResult("cupy", "local", rc=0, out={"pass": True})
    bad = RunResult("cupy", "native", rc=1, out={"pass": False}, error="fft: X")
    assert sl.check_capability("cupy", [ok], [ok], DEV, DATE, "w")["pass"] is True
    rec = sl.check_capability("cupy", [ok], [RunResult("cupy", "local", rc=1, error="fft: cufftPlan1d")],
                              DEV, DATE, "w")
    assert rec["pass"] is False and rec["error"] == "local: fft: cufftPlan1d"
    rec = sl.check_capability("jax", [bad], [ok], DEV, DATE, "w")
    assert rec["pass"] is False and "fails natively" in rec["error"]
    assert "native: not run" in sl.check_capability("torch_nccl_two_vgpus", [], [ok], DEV, DATE, "w")["note"]


def test_loss_identity_over_configurations_and_places() -> None:
    cfg, big = Config("small", "bf16"), Config("gpt2", "bf16")
    runs = {(cfg, "native"): [run("native")], (cfg, "local"): [run("local")], (cfg, "remote"): [run("remote")],
            (big, "native"): [run("native", loss=3.0)], (big, "local"): [run("local", loss=3.0)]}
    rec = sl.loss_identity_record("torch_bf16_loss_identical", "bf16", runs, DEV, DATE)
    assert rec["pass"] is True and "3 configurations" in rec["note"]
    runs[(big, "remote")] = [run("remote", loss=3.5)]
    rec = sl.loss_identity_record("torch_bf16_loss_identical", "bf16", runs, DEV, DATE)
    assert rec["pass"] is False and rec["error"].startswith("gpt2 bf16 remote:")
    assert sl.loss_identity_record("torch_fp32_loss_identical", "fp32", runs, DEV, DATE)["pass"] is False


def test_table_counts_passes_failures_and_not_run() -> None:
    recs = [sl.ratio_record(Config("small", "bf16"), "local", [run("native")], [run("local", 0.0101)], DEV, DATE),
            sl.ratio_record(Config("small", "bf16"), "remote", [run("native")], [run("remote", 0.02)], DEV, DATE),
            sl.capability_record("cupy", False, "fft: cufftPlan1d not supported", "n", DEV, DATE),
            sl.capability_record("guest_torch", None, sl.NOT_RUN_GUEST, "not run", DEV, DATE)]
    text, passed, failed = sl.table(recs, ["plot not made: X"])
    lines = text.splitlines()
    assert (passed, failed) == (1, 2)
    assert lines[-1] == "1 passed, 2 failed, 1 not run"
    row = next(ln for ln in lines if ln.startswith("torch_small_step_ratio_remote"))
    assert row.endswith("MISSED") and "2.000" in row
    assert any(ln.startswith("cupy") and ln.endswith("FAILED") for ln in lines)
    assert "    fft: cufftPlan1d not supported" in lines
    assert any(ln.startswith("guest_torch") and ln.endswith("not run") for ln in lines)
    assert "not run: plot not made: X" in lines


def test_guest_torch_record_compares_each_guest_run_with_native() -> None:
    def named(name: str, place: str, loss: float, mode: str, ok: bool = True, median: float = 0.01) -> RunResult:
        r = run(place, median, loss=loss, ok=ok, mode=mode, step_times_s=[median, median * 2])
        r.name, r.seconds = name, 12.0
        return r

    native = [named("small bf16", "native", 6.5, "train", median=0.004),
              named("small bf16 infer", "native", 7.25, "infer", median=0.002)]
    guest = [named("small bf16", "guest", 6.5, "train", median=0.9),
             named("small bf16 infer", "guest", 7.25, "infer", median=0.5)]
    rec = sl.guest_torch_record(native, guest, DEV, DATE, "in a TCG guest")
    assert rec["metric"] == "guest_torch" and rec["pass"] is True, rec["error"]
    assert rec["native"] == 0.004 and rec["mearas"] == 0.9 and rec["unit"] == "s"  # the training runs
    assert rec["note"].startswith("in a TCG guest; small bf16: loss 6.5 in every run; small bf16 infer: loss 7.25")
    assert "guest small bf16: median step 900.000 ms (steps 900.000 ms, 1800.000 ms), whole run 12.0 s" in rec["note"]
    assert "native small bf16 infer: median step 2.000 ms" in rec["note"]

    differs = [guest[0], named("small bf16 infer", "guest", 7.5, "infer")]
    rec = sl.guest_torch_record(native, differs, DEV, DATE, "w")
    assert rec["pass"] is False and rec["error"].startswith("the loss differs from native's: ")
    assert "small bf16 infer: loss native ['7.25'], mearas ['7.5']" in rec["error"]

    broken = [named("small bf16", "guest", 6.5, "train", ok=False), guest[1]]
    rec = sl.guest_torch_record(native, broken, DEV, DATE, "w")
    assert rec["pass"] is False and rec["error"] == "guest: boom"
    both = sl.guest_torch_record([named("small bf16", "native", 6.5, "train", ok=False)], broken, DEV, DATE, "w")
    assert both["error"] == "guest: boom; fails natively too (native: boom)"
    only_guest = sl.guest_torch_record([named("small bf16", "native", 6.5, "train", ok=False)], guest, DEV, DATE, "w")
    assert only_guest["pass"] is False
    assert only_guest["error"] == "passes in the guest, but fails natively (native: boom)"
    assert sl.guest_torch_record(native, [], DEV, DATE, "w")["error"] == "no run in the guest"
