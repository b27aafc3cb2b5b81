"""scripts/opgen.py: a malformed spec is refused with its line, and what a
new op needs (a handler, a device function) appears in the generated code,
so that forgetting it fails the build."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPGEN = ROOT / "scripts/opgen.py"
SPEC = ROOT / "include/mearas/ops.spec"
BASE = "kind stream cudaErrorInvalidResourceHandle\ndevices sim cuda\n"


def run(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    spec = tmp_path / "ops.spec"
    spec.write_text(text)
    return subprocess.run([sys.executable, str(OPGEN), str(spec), str(tmp_path / "gen")],
                          capture_output=True, text=True, check=False)


def test_shipped_spec_generates(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, str(OPGEN), str(SPEC), str(tmp_path / "gen")],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    for f in ("mearas/ops.gen.h", "mearas/ops_inline.gen.h", "mearas/ops_seeds.gen.h", "rt_ops.gen.h",
              "rt_ops.gen.c", "exec_ops.gen.h", "exec_ops.gen.c", "mdev_ops.gen.h"):
        assert (tmp_path / "gen" / f).stat().st_size > 0, f


@pytest.mark.parametrize("body,why", [
    ("op A bogus\n", "unknown flag"),
    ("op A\nop A\n", "op A twice"),
    ("op A\n  u64 x handle(nokind)\n", "unknown handle kind"),
    ("op A\n  u64 x frobnicate\n", "unknown argument kind"),
    ("op A\n  u64 x\n  u64 x\n", "an argument name twice"),
    ("op A\n" + "".join(f"  u64 a{i}\n" for i in range(8)), "a record holds 56"),
    ("op A\n  u64 x\n  reads data(x, y)\n", "span names y"),
    ("op A\n  out u64 a\n  out u64 b\n  out u64 c\n", "two at most"),
    ("op A\n  payload bytes p\n  dev fn\n", "dev ops take scalar arguments only"),
    ("op A\n  u64 x handle(stream)\n  destroy x\n", "destroy names an id(KIND) argument"),
    ("op A\n  u64 x id(stream)\n  destroy y\n", "destroy names an id(KIND) argument"),
    ("  u64 x\n", "before the first op"),
    ("op A\n  what is this\n", "unknown line kind"),
])
def test_malformed_spec_refused_with_its_line(tmp_path: Path, body: str, why: str) -> None:
    r = run(tmp_path, BASE + body)
    assert r.returncode == 1
    assert why in r.stderr
    assert "ops.spec:" in r.stderr or "(line " in r.stderr


def test_new_op_needs_a_handler_and_a_prep_helper(tmp_path: Path) -> None:
    r = run(tmp_path, BASE + "op NEW_THING sync\n  u64 x handle(stream)\n  out u32 y\n")
    assert r.returncode == 0, r.stderr
    gen = tmp_path / "gen"
    # declared for the back end to define, and referenced by the dispatch table
    assert "int exec_op_NEW_THING(" in (gen / "exec_ops.gen.h").read_text()
    assert "[MEARAS_OP_NEW_THING] = run_NEW_THING" in (gen / "exec_ops.gen.c").read_text()
    assert "mearas_prep_NEW_THING(struct mearas_sqe *e, uint64_t x)" in (gen / "mearas/ops_inline.gen.h").read_text()
    assert "rt_do_NEW_THING(int vgpu, uint64_t x, uint32_t *y_out)" in (gen / "rt_ops.gen.h").read_text()


def test_dev_op_needs_every_device_function(tmp_path: Path) -> None:
    r = run(tmp_path, BASE + "op GET_KNOB sync\n  u32 knob\n  out u64 value\n  dev get_knob\n")
    assert r.returncode == 0, r.stderr
    h = (tmp_path / "gen/mdev_ops.gen.h").read_text()
    assert "int sim_get_knob(struct mdev *d, uint32_t knob, uint64_t *value);" in h
    assert "int cuda_get_knob(struct mdev *d, uint32_t knob, uint64_t *value);" in h
    assert ".get_knob = dev##_get_knob" in h
    # the generated handler calls the device and returns its result in val[0]
    c = (tmp_path / "gen/exec_ops.gen.c").read_text()
    assert "v->ops->op->get_knob(v->dev, in->a->knob, &value)" in c
    assert "exec_op_GET_KNOB" not in (tmp_path / "gen/exec_ops.gen.h").read_text()


def test_destroy_op_gets_its_handler(tmp_path: Path) -> None:
    r = run(tmp_path, BASE + "op THING_DESTROY\n  u64 thing id(stream)\n  destroy thing\n")
    assert r.returncode == 0, r.stderr
    # generated: takes the object out of the stream table and destroys it
    c = (tmp_path / "gen/exec_ops.gen.c").read_text()
    assert "return exec_take_and_destroy(v, MEARAS_KIND_STREAM, in->a->thing);" in c
    assert "exec_op_THING_DESTROY" not in (tmp_path / "gen/exec_ops.gen.h").read_text()


def test_unchanged_output_is_not_rewritten(tmp_path: Path) -> None:
    assert run(tmp_path, BASE + "op A\n").returncode == 0
    f = tmp_path / "gen/mearas/ops.gen.h"
    before = f.stat().st_mtime_ns
    assert run(tmp_path, BASE + "op A\n").returncode == 0
    assert f.stat().st_mtime_ns == before


def test_op_classes_follow_flags_and_arguments(tmp_path: Path) -> None:
    """The accounting class of an op (mearasd's metrics) comes from its flags and arguments."""
    body = BASE + "kind pool cudaErrorInvalidValue\n" + (
        "op K pends_sync kernel capture\n  stream\n"
        "op C deferred pends_sync capture\n  stream\n  u64 dst\n"
        "op S sync deferred pends_sync\n"
        "op M sync\n  u64 p dptr\n"
        "op P\n  u64 pool id(pool)\n"
        "op O sync\n  u64 x\n")
    r = run(tmp_path, body)
    assert r.returncode == 0, r.stderr
    props = (tmp_path / "gen/mearas/ops_inline.gen.h").read_text()
    want = {"K": "LAUNCH", "C": "COPY", "S": "SYNC", "M": "MEMORY", "P": "MEMORY", "O": "OTHER"}
    for op, cls in want.items():
        line = next(x for x in props.splitlines() if f'.name = "{op}"' in x)
        assert f".cls = MEARAS_OPCLASS_{cls} " in line, line
    assert '"launch", "copy", "sync", "memory", "other"' in props
