#!/usr/bin/env python3
"""Reads include/mearas/ops.spec and writes the code every side derives from it.

  opgen.py SPEC OUTDIR

Writes into OUTDIR (see the spec's header for what each file holds):
  mearas/ops.gen.h  mearas/ops_inline.gen.h  mearas/ops_seeds.gen.h
  rt_ops.gen.h  rt_ops.gen.c  exec_ops.gen.h  exec_ops.gen.c  mdev_ops.gen.h
A file is rewritten only when its text changes, so make rebuilds what depends
on it only then. Errors name the spec line.
"""
from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

CTYPE = {"u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
         "i32": "int32_t", "i64": "int64_t", "f32": "float"}
FLAGS = {"sync", "deferred", "pends", "pends_sync", "urgent", "kernel", "wait", "capture"}
ARG_WORDS = 7          # union mearas_sqe_args: 7 64-bit words
NAME_MAX = 4096        # payload strings (kernel and symbol names)
HEADER = "/* Generated from include/mearas/ops.spec by scripts/opgen.py: do not edit. */\n"


class SpecError(Exception):
    pass


@dataclass
class Arg:
    ctype: str
    name: str
    count: int            # array length, 1 for a scalar
    kind: str             # "", handle, handle?, id, new, dptr, data
    hkind: str            # handle kind for handle/id/new


@dataclass
class Item:
    """One line of an op's argument list, in checking order."""
    what: str             # arg, stream, payload
    arg: Arg | None = None
    payload: str = ""     # string, bytes
    name: str = ""


@dataclass
class Span:
    write: bool
    shape: str            # data, rows
    params: list[str]
    cond: tuple[str, str] | None


@dataclass
class Out:
    ctype: str
    tname: str
    name: str


@dataclass
class Op:
    name: str
    flags: set[str]
    line: int
    items: list[Item] = field(default_factory=list)
    outs: list[Out] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    dev: str = ""
    destroy: str = ""

    @property
    def args(self) -> list[Arg]:
        return [i.arg for i in self.items if i.arg is not None]

    @property
    def has_stream(self) -> bool:
        return any(i.what == "stream" for i in self.items)

    @property
    def payload(self) -> Item | None:
        return next((i for i in self.items if i.what == "payload"), None)


@dataclass
class Spec:
    kinds: dict[str, str] = field(default_factory=dict)
    devices: list[str] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)


def parse(path: Path) -> Spec:
    spec = Spec()
    op: Op | None = None
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{lineno}"
        words = line.split()
        try:
            if words[0] == "kind":
                spec.kinds[words[1]] = words[2]
            elif words[0] == "devices":
                spec.devices = words[1:]
            elif words[0] == "op":
                bad = set(words[2:]) - FLAGS
                if bad:
                    raise SpecError(f"unknown flag(s) {sorted(bad)}")
                if any(o.name == words[1] for o in spec.ops):
                    raise SpecError(f"op {words[1]} twice")
                op = Op(words[1], set(words[2:]), lineno)
                spec.ops.append(op)
            elif op is None:
                raise SpecError("a line before the first op")
            else:
                parse_op_line(spec, op, words)
        except (SpecError, IndexError, ValueError) as e:
            raise SpecError(f"{where}: {e or 'malformed line'}: {raw.strip()}") from None
    for o in spec.ops:
        check_op(spec, o)
    return spec


def parse_op_line(spec: Spec, op: Op, w: list[str]) -> None:
    if w[0] == "stream":
        op.items.append(Item("stream"))
    elif w[0] == "payload":
        if w[1] not in ("string", "bytes") or op.payload:
            raise SpecError("payload string|bytes NAME, once")
        op.items.append(Item("payload", payload=w[1], name=w[2]))
    elif w[0] == "out":
        if w[1] not in CTYPE or len(op.outs) >= 2:
            raise SpecError("out TYPE NAME (two at most: val[0], val[1])")
        op.outs.append(Out(CTYPE[w[1]], w[1], w[2]))
    elif w[0] in ("reads", "writes"):
        m = re.fullmatch(r"(data|rows)\(([^)]*)\)(?:\s+if\s+(\w+)\s*==\s*(\w+))?", " ".join(w[1:]))
        if not m:
            raise SpecError("reads|writes data(OFF, LEN)|rows(OFF, PITCH, WIDTH, HEIGHT) [if ARG == CONST]")
        params = [p.strip() for p in m.group(2).split(",")]
        if len(params) != (2 if m.group(1) == "data" else 4):
            raise SpecError(f"{m.group(1)} takes {2 if m.group(1) == 'data' else 4} arguments")
        cond = (m.group(3), m.group(4)) if m.group(3) else None
        op.spans.append(Span(w[0] == "writes", m.group(1), params, cond))
    elif w[0] == "dev":
        op.dev = w[1]
    elif w[0] == "destroy":
        op.destroy = w[1]
    elif w[0] in CTYPE:
        m = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", w[1])
        if not m:
            raise SpecError("argument name")
        kind, hkind = "", ""
        if len(w) > 2:
            k = re.fullmatch(r"(handle\??|id|new)\((\w+)\)|(dptr|data)", w[2])
            if not k:
                raise SpecError(f"unknown argument kind {w[2]}")
            kind, hkind = (k.group(1), k.group(2)) if k.group(1) else (k.group(3), "")
            if hkind and hkind not in spec.kinds:
                raise SpecError(f"unknown handle kind {hkind}")
        op.items.append(Item("arg", Arg(CTYPE[w[0]], m.group(1), int(m.group(2) or 1), kind, hkind)))
    else:
        raise SpecError(f"unknown line kind {w[0]}")


def sizeof(a: Arg) -> int:
    return {"uint8_t": 1, "uint16_t": 2, "uint32_t": 4, "float": 4, "int32_t": 4}.get(a.ctype, 8) * a.count


def check_op(spec: Spec, op: Op) -> None:
    where = f"op {op.name} (line {op.line})"
    names = [a.name for a in op.args]
    if len(set(names)) != len(names):
        raise SpecError(f"{where}: an argument name twice")
    off = 0
    for a in op.args:
        align = min(sizeof(a) // a.count, 8)
        off = (off + align - 1) // align * align + sizeof(a)
    if off > ARG_WORDS * 8:
        raise SpecError(f"{where}: arguments take {off} bytes, a record holds {ARG_WORDS * 8}")
    for s in op.spans:
        for p in s.params + ([s.cond[0]] if s.cond else []):
            if p not in names:
                raise SpecError(f"{where}: span names {p}, not an argument")
    if op.dev and (op.payload or any(a.count > 1 for a in op.args)):
        raise SpecError(f"{where}: dev ops take scalar arguments only")
    if op.dev and not spec.devices:
        raise SpecError(f"{where}: dev op, but no devices line")
    if op.destroy and (op.dev or not any(a.name == op.destroy and a.kind == "id" for a in op.args)):
        raise SpecError(f"{where}: destroy names an id(KIND) argument, in an op without a dev line")


# ---- mearas/ops.gen.h: types ----

def layout_fingerprint(spec: Spec) -> int:
    """24 bits over what both sides of a ring must read alike: each op's
    number and name, and its arguments' types, names and counts."""
    text = "\n".join(f"{i} {o.name} " + " ".join(f"{a.ctype}:{a.name}:{a.count}" for a in o.args)
                     for i, o in enumerate(spec.ops))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:3], "big")


def gen_types(spec: Spec) -> str:
    out = [HEADER, "#ifndef MEARAS_OPS_GEN_H\n#define MEARAS_OPS_GEN_H\n\n#include <stdint.h>\n\n"]
    out.append("/* a fingerprint of every record's layout: part of the protocol version\n"
               " * (region.h), so a front end built from another ops.spec is refused */\n")
    out.append(f"#define MEARAS_OPS_LAYOUT 0x{layout_fingerprint(spec):06x}u\n\n")
    out.append("enum mearas_op {\n")
    out += [f"\tMEARAS_OP_{o.name},\n" for o in spec.ops]
    out.append("\tMEARAS_OP_COUNT\n};\n\n")
    out.append("/* handle kinds: each vGPU keeps one table of client ids per kind */\n")
    out.append("enum mearas_handle_kind {\n")
    out += [f"\tMEARAS_KIND_{k.upper()},\n" for k in spec.kinds]
    out.append("\tMEARAS_KIND_COUNT\n};\n\n")
    for o in spec.ops:
        if not o.args:
            continue
        out.append(f"struct mearas_args_{o.name} {{\n")
        for a in o.args:
            dim = f"[{a.count}]" if a.count > 1 else ""
            note = f" /* {a.kind}{'(' + a.hkind + ')' if a.hkind else ''} */" if a.kind else ""
            out.append(f"\t{a.ctype} {a.name}{dim};{note}\n")
        out.append("};\n")
    out.append("\n/* the members of union mearas_sqe_args: raw words, then one struct per op */\n")
    out.append("#define MEARAS_SQE_ARGS_MEMBERS \\\n\tuint64_t a[7]; \\\n")
    members = [f"\tstruct mearas_args_{o.name} {o.name};" for o in spec.ops if o.args]
    out.append(" \\\n".join(members) + "\n\n")
    out.append("#define MEARAS_SQE_ARGS_CHECKS \\\n")
    checks = [f"\t_Static_assert(sizeof(struct mearas_args_{o.name}) <= 7 * sizeof(uint64_t), "
              f"\"{o.name}'s arguments fit a record\");" for o in spec.ops if o.args]
    out.append(" \\\n".join(checks) + "\n\n#endif\n")
    return "".join(out)


# ---- mearas/ops_inline.gen.h: properties, prep helpers, host spans ----

def c_params(op: Op) -> str:
    ps = []
    for a in op.args:
        ps.append(f"const {a.ctype} {a.name}[{a.count}]" if a.count > 1 else f"{a.ctype} {a.name}")
    return ", ".join(ps)


# Op classes for accounting (mearasd's metrics), derived from each op's
# flags and arguments, first rule that matches.
OP_CLASSES = ("launch", "copy", "sync", "memory", "other")


def op_class(o: Op) -> str:
    if "kernel" in o.flags:
        return "launch"                    # kernel work on a stream
    if {"capture", "pends_sync"} <= o.flags:
        return "copy"                      # other stream work the caller may wait for
    if {"sync", "pends_sync"} <= o.flags:
        return "sync"                      # waits for device work
    if any(a.kind == "dptr" or a.hkind == "pool" for a in o.args):
        return "memory"                    # device allocations and pools
    return "other"


def gen_inline(spec: Spec) -> str:
    out = [HEADER, "/* included by mearas/region.h after struct mearas_sqe */\n"
           "#ifndef MEARAS_OPS_INLINE_GEN_H\n#define MEARAS_OPS_INLINE_GEN_H\n\n#include <stdbool.h>\n\n"]
    out.append("/* accounting classes (scripts/opgen.py op_class) */\nenum mearas_op_class {\n")
    for c in OP_CLASSES:
        out.append(f"\tMEARAS_OPCLASS_{c.upper()},\n")
    out.append("\tMEARAS_OPCLASS_COUNT\n};\n\n")
    out.append("static inline const char *mearas_op_class_name(unsigned c)\n{\n\tstatic const char *const names[] = { ")
    out.append(", ".join(f'"{c}"' for c in OP_CLASSES))
    out.append(' };\n\n\treturn c < MEARAS_OPCLASS_COUNT ? names[c] : "invalid";\n}\n\n')
    out.append("struct mearas_op_props {\n\tconst char *name;\n")
    for f in sorted(FLAGS) + ["stream"]:
        out.append(f"\tunsigned char {f};\n")
    out.append("\tunsigned char nargs;\n\tunsigned char cls;\t/* enum mearas_op_class */\n};\n\n")
    out.append("static inline const struct mearas_op_props *mearas_op_props(unsigned op)\n{\n")
    out.append("\tstatic const struct mearas_op_props props[MEARAS_OP_COUNT + 1] = {\n")
    for o in spec.ops:
        fl = ", ".join(f".{f} = 1" for f in sorted(o.flags) + (["stream"] if o.has_stream else []))
        out.append(f"\t\t[MEARAS_OP_{o.name}] = {{ .name = \"{o.name}\", {fl + ', ' if fl else ''}"
                   f".nargs = {len(o.args)}, .cls = MEARAS_OPCLASS_{op_class(o).upper()} }},\n")
    out.append("\t\t[MEARAS_OP_COUNT] = { .name = \"INVALID\", .cls = MEARAS_OPCLASS_OTHER },\n\t};\n")
    out.append("\treturn &props[op < MEARAS_OP_COUNT ? op : MEARAS_OP_COUNT];\n}\n\n")
    out.append("/* Prep helpers: the one place each op's arguments are written. */\n")
    for o in spec.ops:
        params = c_params(o)
        out.append(f"static inline void mearas_prep_{o.name}(struct mearas_sqe *e{', ' + params if params else ''})\n{{\n")
        out.append(f"\te->op = MEARAS_OP_{o.name};\n")
        for a in o.args:
            if a.count > 1:
                out.append(f"\tfor (unsigned i = 0; i < {a.count}; i++)\n"
                           f"\t\te->args.{o.name}.{a.name}[i] = {a.name}[i];\n")
            else:
                out.append(f"\te->args.{o.name}.{a.name} = {a.name};\n")
        out.append("}\n\n")
    for write in (False, True):
        verb = "writes" if write else "reads"
        what = "device-to-host: the bytes the device writes there" if write else \
            "host-to-device: the bytes the device reads there"
        out.append(f"/* The data-area bytes a record {verb} ({what}), as written in the record:\n"
                   " * false when it names none. The caller checks the span against its data area. */\n")
        out.append(f"static inline bool mearas_op_{verb}(const struct mearas_sqe *e, struct mearas_span *s)\n{{\n")
        out.append("\tswitch (e->op) {\n")
        for o in spec.ops:
            spans = [s for s in o.spans if s.write == write]
            if not spans:
                continue
            out.append(f"\tcase MEARAS_OP_{o.name}: {{\n\t\tconst struct mearas_args_{o.name} *a = &e->args.{o.name};\n\n")
            for s in spans:
                ind = "\t\t"
                if s.cond:
                    out.append(f"\t\tif (a->{s.cond[0]} == {s.cond[1]}) {{\n")
                    ind = "\t\t\t"
                p = [f"a->{x}" for x in s.params]
                if s.shape == "data":
                    out.append(f"{ind}*s = (struct mearas_span){{ .off = {p[0]}, .pitch = {p[1]}, "
                               f".width = {p[1]}, .rows = 1 }};\n{ind}return true;\n")
                else:
                    out.append(f"{ind}*s = (struct mearas_span){{ .off = {p[0]}, .pitch = {p[1]}, "
                               f".width = {p[2]}, .rows = {p[3]} }};\n{ind}return true;\n")
                if s.cond:
                    out.append("\t\t}\n")
            out.append("\t\treturn false;\n\t}\n")
        out.append("\tdefault:\n\t\treturn false;\n\t}\n}\n\n")
    out.append("#endif\n")
    return "".join(out)


# ---- mearas/ops_seeds.gen.h: a valid record per op for the fuzzers ----

def gen_seeds(spec: Spec) -> str:
    out = [HEADER, "/* A record per op whose arguments the fuzz fixture's objects make valid:\n"
           " * the includer defines SEED_HANDLE(kind), SEED_NEW(kind), SEED_DPTR, SEED_DATA\n"
           " * and SEED_VALUE (sizes, counts, flags). */\n"
           "#ifndef MEARAS_OPS_SEEDS_GEN_H\n#define MEARAS_OPS_SEEDS_GEN_H\n\n"]
    out.append("static inline void mearas_seed_record(unsigned op, struct mearas_sqe *e)\n{\n")
    out.append("\tswitch (op) {\n")
    for o in spec.ops:
        vals = []
        for a in o.args:
            v = {"handle": f"SEED_HANDLE(MEARAS_KIND_{a.hkind.upper()})",
                 "handle?": f"SEED_HANDLE(MEARAS_KIND_{a.hkind.upper()})",
                 "id": f"SEED_HANDLE(MEARAS_KIND_{a.hkind.upper()})",
                 "new": f"SEED_NEW(MEARAS_KIND_{a.hkind.upper()})",
                 "dptr": "SEED_DPTR", "data": "SEED_DATA"}.get(a.kind, "SEED_VALUE")
            if a.count > 1:
                vals.append(f"(const {a.ctype}[{a.count}]){{ {', '.join(['1'] * a.count)} }}")
            else:
                vals.append(f"({a.ctype})({v})")
        out.append(f"\tcase MEARAS_OP_{o.name}:\n\t\tmearas_prep_{o.name}(e{', ' + ', '.join(vals) if vals else ''});\n"
                   "\t\tbreak;\n")
    out.append("\tdefault:\n\t\te->op = (uint16_t)op;\n\t\tbreak;\n\t}\n}\n\n#endif\n")
    return "".join(out)


# ---- rt_ops.gen.{h,c}: the runtime library's call per op ----

def rt_signature(o: Op) -> str:
    ps = ["int vgpu"]
    if o.has_stream:
        ps.append("const struct rt_stream_ref *st")
    for a in o.args:
        ps.append(f"const {a.ctype} {a.name}[{a.count}]" if a.count > 1 else f"{a.ctype} {a.name}")
    if o.payload:
        ps += ["const void *payload", "uint32_t payload_len"]
    if "sync" not in o.flags and "pends_sync" in o.flags:
        ps.append("bool wait")
    for r in o.outs:
        ps.append(f"{r.ctype} *{r.name}_out")
    return f"cudaError_t rt_do_{o.name}({', '.join(ps)})"


def outs_and_words(o: Op, words: str, to_words: bool) -> list[str]:
    """The lines that carry an op's outputs in the completion's value words
    (WORDS[i]: a float's bits, any other type widened to uint64_t): into the
    words (the back end, from its locals) or out of them (the runtime, into
    the caller's NAME_out)."""
    lines = []
    for i, r in enumerate(o.outs):
        word = f"{words}[{i}]"
        if r.ctype == "float":
            lines.append(f"\tmemcpy(&{word}, &{r.name}, sizeof(float));\n" if to_words
                         else f"\tmemcpy({r.name}_out, &{word}, sizeof(float));\n")
        else:
            lines.append(f"\t{word} = (uint64_t){r.name};\n" if to_words
                         else f"\t*{r.name}_out = ({r.ctype}){word};\n")
    return lines


def gen_rt(spec: Spec) -> tuple[str, str]:
    h = [HEADER, "/* included by guest/core/core.h: rt_do_NAME posts op NAME on vGPU vgpu\n"
         " * (on the stream st where it has one); ops that always complete wait for\n"
         " * the completion and store its results, `wait` asks for one. */\n"
         "#ifndef MEARAS_RT_OPS_GEN_H\n#define MEARAS_RT_OPS_GEN_H\n\n"]
    c = [HEADER, "#include <string.h>\n\n#include \"core.h\"\n\n"]
    for o in spec.ops:
        sig = rt_signature(o)
        h.append(f"CORE_API {sig};\n")
        c.append(f"{sig}\n{{\n\tstruct rt_call c;\n")
        if o.outs:
            c.append("\tstruct mearas_cqe cqe = { 0 };\n\tcudaError_t e;\n")
        c.append(f"\n\trt_call_init(&c, MEARAS_OP_{o.name}, {'st->id' if o.has_stream else '0'});\n")
        if o.has_stream:
            c.append("\tc.sqe.flags |= st->sqe_flags;\n")
        names = ", ".join(a.name for a in o.args)
        c.append(f"\tmearas_prep_{o.name}(&c.sqe{', ' + names if names else ''});\n")
        if o.payload:
            c.append("\tc.payload = payload;\n\tc.payload_len = payload_len;\n")
        if "sync" in o.flags:
            call = "rt_call(vgpu, &c, &cqe)" if o.outs else "rt_call(vgpu, &c, NULL)"
        elif "pends_sync" in o.flags:
            call = "wait ? rt_call(vgpu, &c, NULL) : rt_post(vgpu, &c)"
        else:
            call = "rt_post(vgpu, &c)"
        if o.outs:
            c.append(f"\te = {call};\n\tif (e)\n\t\treturn e;\n")
            c += outs_and_words(o, "cqe.val", to_words=False)
            c.append("\treturn cudaSuccess;\n}\n\n")
        else:
            c.append(f"\treturn {call};\n}}\n\n")
    h.append("\n#endif\n")
    return "".join(h), "".join(c)


# ---- exec_ops.gen.inc: the back end's decoding, validation and dispatch ----

RETURN_R = "\tif (r)\n\t\treturn r;\n"


def exec_in_item(spec: Spec, it: Item) -> tuple[str, str]:
    """What a record's item adds to struct exec_in_OP (a field) and to
    decode_OP (the lines that fill or check it); either may be empty."""
    if it.what == "stream":
        return "\tvoid *stream;\n", "\tr = exec_resolve_stream(v, e, &in->stream);\n" + RETURN_R
    if it.what == "payload" and it.payload == "string":
        return (f"\tchar {it.name}[{NAME_MAX}];\n",
                f"\tr = exec_payload_string(v, e, in->{it.name}, sizeof(in->{it.name}));\n" + RETURN_R)
    if it.what == "payload":
        return (f"\tconst uint8_t *{it.name};\n\tuint32_t {it.name}_len;\n",
                f"\tr = exec_payload(v, e, &in->{it.name}, &in->{it.name}_len);\n" + RETURN_R)
    a = it.arg
    if not a or not a.hkind:
        return "", ""
    table = f"&v->htab[MEARAS_KIND_{a.hkind.upper()}]"
    err = spec.kinds[a.hkind]
    if a.kind == "handle":
        return (f"\tstruct hslot *{a.name};\n",
                f"\tin->{a.name} = htab_get({table}, in->a->{a.name});\n"
                f"\tif (!in->{a.name})\n\t\treturn {err};\n")
    if a.kind == "handle?":
        return (f"\tstruct hslot *{a.name};\n",
                f"\tin->{a.name} = in->a->{a.name} ? htab_get({table}, in->a->{a.name}) : NULL;\n"
                f"\tif (in->a->{a.name} && !in->{a.name})\n\t\treturn {err};\n")
    if a.kind == "new":
        return "", f"\tif (!exec_id_free({table}, in->a->{a.name}))\n\t\treturn cudaErrorInvalidValue;\n"
    return "", ""


def exec_in_struct(spec: Spec, o: Op) -> str:
    s = [f"struct exec_in_{o.name} {{\n"]
    if o.args:
        s.append(f"\tconst struct mearas_args_{o.name} *a;\n")
    s += [f for f in (exec_in_item(spec, it)[0] for it in o.items) if f]
    if len(s) == 1:
        s.append("\tchar unused;\n")
    s.append("};\n")
    return "".join(s)


def exec_decode(spec: Spec, o: Op) -> str:
    d = [f"static int decode_{o.name}(struct vgpu *v, const struct mearas_sqe *e, struct exec_in_{o.name} *in)\n{{\n"]
    uses_r = any(it.what in ("stream", "payload") for it in o.items)
    if uses_r:
        d.append("\tint r;\n\n")
    if o.args:
        d.append(f"\tin->a = &e->args.{o.name};\n")
    d += [f for f in (exec_in_item(spec, it)[1] for it in o.items) if f]
    if not o.args and not uses_r:
        d.append("\t(void)v, (void)e, (void)in;\n")
    elif not uses_r and not any(it.arg and it.arg.hkind for it in o.items):
        d.append("\t(void)v;\n")
    d.append("\treturn 0;\n}\n\n")
    return "".join(d)


def dev_params(o: Op, proto: bool) -> list[str]:
    """The device function's parameters after the device (declaration or call)."""
    ps = []
    for it in o.items:
        if it.what == "stream":
            ps.append("void *stream" if proto else "in->stream")
        elif it.arg:
            a = it.arg
            if a.kind in ("handle", "handle?"):
                ps.append(f"void *{a.name}" if proto else f"in->{a.name} ? in->{a.name}->obj : NULL")
            else:
                ps.append(f"{a.ctype} {a.name}" if proto else f"in->a->{a.name}")
    for r in o.outs:
        ps.append(f"{r.ctype} *{r.name}" if proto else f"&{r.name}")
    return ps


def gen_exec(spec: Spec) -> tuple[str, str]:
    h = [HEADER, "/* included by host-backend/core/exec_internal.h: per op, what its record\n"
         " * decodes to (struct exec_in_NAME: the typed arguments, resolved objects,\n"
         " * the stream, the payload) and its handler, exec_op_NAME, which the\n"
         " * back end defines for every op without a `dev` or `destroy` line. */\n"
         "#ifndef MEARAS_EXEC_OPS_GEN_H\n#define MEARAS_EXEC_OPS_GEN_H\n\n"]
    for o in spec.ops:
        h.append(exec_in_struct(spec, o))
    h.append("\n")
    for o in spec.ops:
        if not o.dev and not o.destroy:
            h.append(f"int exec_op_{o.name}(struct vgpu *v, const struct mearas_sqe *e, "
                     f"const struct exec_in_{o.name} *in, struct mearas_cqe *c, struct fence_req *f);\n")
    h.append("\n#endif\n")
    c = [HEADER, "#include <string.h>\n\n#include \"core/exec_internal.h\"\n\n"]
    for o in spec.ops:
        c.append(exec_decode(spec, o))
        if o.dev:
            c.append(f"static int exec_op_{o.name}(struct vgpu *v, const struct mearas_sqe *e, "
                     f"const struct exec_in_{o.name} *in, struct mearas_cqe *c, struct fence_req *f)\n{{\n")
            for r in o.outs:
                c.append(f"\t{r.ctype} {r.name} = 0;\n")
            call = f"v->ops->op->{o.dev}(v->dev{''.join(', ' + p for p in dev_params(o, False))})"
            c.append("\tint r;\n\n\t(void)e, (void)c, (void)f, (void)in;\n")
            c.append(f"\tr = {call};\n")
            c += outs_and_words(o, "c->val", to_words=True)
            c.append("\treturn r;\n}\n\n")
        if o.destroy:
            kind = next(a.hkind for a in o.args if a.name == o.destroy)
            c.append(f"static int exec_op_{o.name}(struct vgpu *v, const struct mearas_sqe *e, "
                     f"const struct exec_in_{o.name} *in, struct mearas_cqe *c, struct fence_req *f)\n{{\n"
                     f"\t(void)e, (void)c, (void)f;\n"
                     f"\treturn exec_take_and_destroy(v, MEARAS_KIND_{kind.upper()}, in->a->{o.destroy});\n}}\n\n")
        init = "" if (o.args or o.has_stream or o.payload) else " = { 0 }"
        c.append(f"static int run_{o.name}(struct vgpu *v, const struct mearas_sqe *e, struct mearas_cqe *c, "
                 f"struct fence_req *f)\n{{\n\tstruct exec_in_{o.name} in{init};\n"
                 f"\tint r = decode_{o.name}(v, e, &in);\n\n"
                 f"\treturn r ? r : exec_op_{o.name}(v, e, &in, c, f);\n}}\n\n")
    c.append("const exec_run_fn exec_handlers[MEARAS_OP_COUNT] = {\n")
    c += [f"\t[MEARAS_OP_{o.name}] = run_{o.name},\n" for o in spec.ops]
    c.append("};\n")
    return "".join(h), "".join(c)


# ---- mdev_ops.gen.{h,c}: device functions of `dev` ops ----

def gen_mdev(spec: Spec) -> str:
    devs = [o for o in spec.ops if o.dev]
    h = [HEADER, "/* included by host-backend/device/device.h: the device functions of the ops\n"
         " * with a `dev` line. Each device defines DEV_FN for every one of them and\n"
         " * its table as MEARAS_MDEV_OP_TABLE(DEV) (a missing one fails the link). */\n"
         "#ifndef MEARAS_MDEV_OPS_GEN_H\n#define MEARAS_MDEV_OPS_GEN_H\n\n#include <stdint.h>\n\n"
         "struct mdev;\n\nstruct mdev_op_table {\n"]
    fns: dict[str, Op] = {}
    for o in devs:
        fns.setdefault(o.dev, o)
    for name, o in fns.items():
        h.append(f"\tint (*{name})(struct mdev *d{''.join(', ' + p for p in dev_params(o, True))});\n")
    h.append("};\n\n")
    for dv in spec.devices:
        h.append(f"extern const struct mdev_op_table mdev_{dv}_op_table;\n")
        for name, o in fns.items():
            h.append(f"int {dv}_{name}(struct mdev *d{''.join(', ' + p for p in dev_params(o, True))});\n")
    h.append("\n#define MEARAS_MDEV_OP_TABLE(dev) \\\n")
    h.append("\tconst struct mdev_op_table mdev_##dev##_op_table = { \\\n")
    h += [f"\t\t.{name} = dev##_{name}, \\\n" for name in fns]
    h.append("\t}\n\n#endif\n")
    return "".join(h)


def write(path: Path, text: str) -> None:
    if path.exists() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        spec = parse(Path(argv[1]))
    except SpecError as e:
        print(f"opgen: {e}", file=sys.stderr)
        return 1
    out = Path(argv[2])
    write(out / "mearas/ops.gen.h", gen_types(spec))
    write(out / "mearas/ops_inline.gen.h", gen_inline(spec))
    write(out / "mearas/ops_seeds.gen.h", gen_seeds(spec))
    rh, rc = gen_rt(spec)
    write(out / "rt_ops.gen.h", rh)
    write(out / "rt_ops.gen.c", rc)
    eh, ec = gen_exec(spec)
    write(out / "exec_ops.gen.h", eh)
    write(out / "exec_ops.gen.c", ec)
    write(out / "mdev_ops.gen.h", gen_mdev(spec))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
