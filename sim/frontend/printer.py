"""Program IR -> PTO IR text, in one canonical spelling.

* tile buffers in the compact form the compiler prints (``!pto.tile_buf<vec, 32x64xf32>``,
  keys at their default dropped);
* sync as the compiler prints it: ``pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]``,
  ``pto.set_flag_dyn[...]`` for a dynamic id, ``pto.barrier <PIPE_V>``; cross-core
  ``pto.sync.set #pto.pipe<PIPE_MTE3>, 0 {ffts_mode = 2 : i32}`` (no dict when the mode
  was not written), ``pto.set_intra_block #pto.pipe<PIPE_MTE3>, 1``, ``pto.set_ffts %a : T``,
  ``pto.syncall(%w : T) mode = #pto.sync_all_mode<soft>, core_type =
  #pto.sync_core_type<mix>``;
* every attribute of an instruction inline in ``ins(... {attrs} : types)``;
* values keep their names; literal operands (the builder makes them; parsed text names
  an ``arith.constant`` instead) are written in place, typed by the type list.

``parse_text(print_program(p)) == p`` for any program the parser or the builder makes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sim.base.errors import UserError
from sim.frontend.syntax import BARE_KEY, ENUM_ATTR_KINDS, format_literal, format_type, value_type
from sim.isa.comm import CommOp
from sim.isa.memorder import CACHE_LINE, CacheInvalid, Dsb
from sim.isa.opcodes import OPCODES
from sim.isa.precision import Precision
from sim.isa.program import (
    Alloc,
    Arith,
    Barrier,
    Call,
    Const,
    For,
    Function,
    If,
    Instr,
    MakeTensorView,
    PartitionView,
    PipeOp,
    Program,
    RawAttr,
    Reshape,
    Return,
    ScalarOp,
    Section,
    SetFfts,
    SetFlag,
    SetValidShape,
    Subview,
    SyncAll,
    SyncSet,
    SyncWait,
    WaitFlag,
    Yield,
)

if TYPE_CHECKING:
    from sim.isa.program import KernelLike


__all__ = ["print_program", "print_function", "print_statement"]

_IND = "  "
_ENUM_WORD = re.compile(r"\w+")


def _v(x) -> str:
    """A value reference: ``%name`` or a literal."""
    if isinstance(x, Const):
        return format_literal(x.value, x.type)
    return f"%{x.name}"


def _t(x) -> str:
    return format_type(value_type(x))


def _typed(values) -> str:
    """``%a, %b : T1, T2`` (empty string for no values)."""
    if not values:
        return ""
    return f"{', '.join(map(_v, values))} : {', '.join(map(_t, values))}"


def _str(s: str) -> str:
    """An MLIR string literal (the parser reads these escapes back)."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _attr_value(key: str, v) -> str:
    if isinstance(v, (RawAttr, Precision)):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_literal(v, "f64")
    if isinstance(v, str):
        kind = ENUM_ATTR_KINDS.get(key)
        # an enum value the parser normalised; any other string stays a quoted string
        return f"#pto<{kind} {v}>" if kind and _ENUM_WORD.fullmatch(v) else _str(v)
    return _str(str(v))


def _attr_dict(attrs) -> str:
    parts = []
    for key, v in attrs:
        k = key if BARE_KEY.fullmatch(key) else _str(key)
        parts.append(k if v == RawAttr("unit") else f"{k} = {_attr_value(key, v)}")
    return "{" + ", ".join(parts) + "}"


def _kept(st) -> str:
    """`` {attributes}`` a statement keeps without reading them ("" when none)."""
    return f" {_attr_dict(st.attrs)}" if st.attrs else ""


def _results(values) -> str:
    """``%r = `` / ``%r:2 = `` / ``%a, %b = `` (empty for none)."""
    if not values:
        return ""
    names = [v.name for v in values]
    base = names[0].rsplit("#", 1)[0]
    if all(n == f"{base}#{i}" for i, n in enumerate(names)):
        return f"%{base}:{len(names)} = "
    if len(names) == 1:
        return f"%{names[0]} = "
    return ", ".join(f"%{n}" for n in names) + " = "


def _types_paren(types) -> str:
    return "(" + ", ".join(types) + ")"


# --- statements --------------------------------------------------------------------------


def _instr(st: Instr) -> str:
    name = OPCODES[st.opcode].ir_name if st.opcode in OPCODES else "pto." + st.opcode.lower()
    attrs = f" {_attr_dict(st.attrs)}" if st.attrs else ""
    ins_vals = ", ".join(map(_v, st.ins))
    ins_types = ", ".join(map(_t, st.ins))
    ins = f"ins({ins_vals}{attrs}" + (f" : {ins_types})" if st.ins else ")")
    return f"{name} {ins} outs({_typed(st.outs)})"


def _sync_event(ev) -> str:
    return f"<EVENT_ID{ev}>" if isinstance(ev, int) else _v(ev)


def _flag(st) -> str:
    kind = "set_flag" if isinstance(st, SetFlag) else "wait_flag"
    dyn = "" if isinstance(st.event, int) else "_dyn"
    return f"pto.{kind}{dyn}[<{st.src}>, <{st.dst}>, {_sync_event(st.event)}]{_kept(st)}"


def _cross_core(st) -> str:
    """``pto.sync.set`` / ``pto.sync.wait`` / ``pto.set_ffts`` / ``pto.syncall``."""
    if isinstance(st, SetFfts):
        return f"pto.set_ffts {_v(st.value)}{_kept(st)} : {_t(st.value)}"
    if isinstance(st, SyncAll):
        return (
            f"pto.syncall({_typed(st.operands)}){_kept(st)} mode = "
            f"#pto.sync_all_mode<{st.mode}>, core_type = #pto.sync_core_type<{st.core_type}>"
        )
    kind = "set" if isinstance(st, SyncSet) else "wait"
    flag = str(st.flag) if isinstance(st.flag, int) else _v(st.flag)
    if st.intra:
        return f"pto.{kind}_intra_block #pto.pipe<{st.pipe}>, {flag}"
    mode = "" if st.mode is None else f" {{ffts_mode = {st.mode} : i32}}"
    return f"pto.sync.{kind} #pto.pipe<{st.pipe}>, {flag}{mode}"


def _arith(st: Arith) -> str:
    short = st.op.removeprefix("arith.")
    res = f"{_results((st.result,))}{st.op}"
    attrs = dict(st.attrs)
    flags = attrs.pop("flags", None)
    pred = attrs.pop("predicate", None)
    tail = (f" {flags}" if flags is not None else "") + (
        f" {_attr_dict(sorted(attrs.items()))}" if attrs else ""
    )
    if short == "constant":
        c = st.operands[0]
        lit = format_literal(c.value, c.type)
        return f"{res} {lit}{tail} : {c.type}"
    ops = ", ".join(map(_v, st.operands))
    if pred is not None:
        return f"{res} {pred}, {ops}{tail} : {_t(st.operands[0])}"
    if short == "select":
        return f"{res} {ops}{tail} : {_t(st.operands[0])}, {st.result.type}"
    if (
        len(st.operands) == 1
        and st.result.type != _t(st.operands[0])
        or short
        in (
            "index_cast",
            "index_castui",
            "trunci",
            "extsi",
            "extui",
            "sitofp",
            "uitofp",
            "fptosi",
            "fptoui",
            "bitcast",
            "truncf",
            "extf",
        )
    ):
        return f"{res} {ops}{tail} : {_t(st.operands[0])} to {st.result.type}"
    return f"{res} {ops}{tail} : {st.result.type}"


def _scalar_op(st: ScalarOp) -> str:
    attrs = f" {_attr_dict(st.attrs)}" if st.attrs else ""
    if st.op == "pto.load_scalar":
        ptr, off = st.operands
        r = st.results[0]
        return (
            f"{_results((r,))}pto.load_scalar {_v(ptr)}[{_v(off)}]{attrs} : {_t(ptr)} -> {r.type}"
        )
    if st.op == "pto.store_scalar":
        val, ptr, off = st.operands
        return f"pto.store_scalar {_v(val)}, {_v(ptr)}[{_v(off)}]{attrs} : {_t(ptr)}, {_t(val)}"
    if st.op in ("pto.set_quant_vector", "pto.set_quant_scalar"):
        (v,) = st.operands
        return f"{st.op}({_v(v)} : {_t(v)}){attrs}"
    if st.op == "pto.get_validshape":
        (t,) = st.operands
        return f"{_results(st.results)}{st.op} {_v(t)}{attrs} : {_t(t)}"
    if st.op == "pto.addptr":
        ptr, off = st.operands
        return f"{_results(st.results)}{st.op} {_v(ptr)}, {_v(off)}{attrs} : {_t(ptr)} -> {_t(ptr)}"
    r = st.results[0]
    if st.op == "pto.tgetval":
        vals, types = ", ".join(map(_v, st.operands)), ", ".join(map(_t, st.operands))
        return f"{_results((r,))}pto.tgetval ins({vals}{attrs} : {types}) outs : {r.type}"
    if st.op == "pto.get_tensor_view_dim":
        view, dim = st.operands
        return f"{_results((r,))}{st.op} {_v(view)}, {_v(dim)}{attrs} : {_t(view)} -> {r.type}"
    return f"{_results((r,))}{st.op}{attrs} : {r.type}"


def _pipe_op(st: PipeOp) -> str:
    args = []
    for x in st.operands:
        if isinstance(x, tuple):
            name, v = x
            args.append(f"{name} = {_v(v)} : {_t(v)}")
        else:
            args.append(f"{_v(x)} : {_t(x)}")
    paren = f"({', '.join(args)})" if st.operands else ""
    attrs = f" {_attr_dict(st.attrs)}" if st.attrs else ""
    ret = f" -> {_t(st.results[0])}" if st.results else ""
    if st.op.startswith("pto.tpush"):
        text = f"{st.op}{paren}{attrs}{ret}"
    else:
        text = f"{st.op}{attrs}{' ' + paren if paren else ''}{ret}"
    return _results(st.results) + text


def _comm_op(st: CommOp) -> str:
    """``pto.comm.tput(%dst, %src, buf(%ping) : T, T, T) {atomicType = ...}`` (PTOAS)."""
    if st.peer is not None:
        raise UserError(
            f"{st.op} ({st.loc}): a builder peer= has no PTO IR spelling: real files address "
            f"a peer through its window pointer (pto.addptr)"
        )
    ops = list(st.operands)
    text = [_v(o) for o in ops]
    if st.op in ("pto.comm.tput", "pto.comm.tget"):
        text = [*text[:2], f"buf({', '.join(text[2:])})"]
    a = dict(st.attrs)
    if "stages" in a:  # a collective: the view, recv(stages), group(members)
        if a.get("symmetric"):
            raise UserError(
                f"{st.op} ({st.loc}): a builder group (one view on every rank) has no PTO IR "
                f"spelling: real files list each rank's view (group(...))"
            )
        n = int(a["stages"])
        m = 2 if st.op == "pto.comm.treduce" else 1  # treduce: dst and acc come first
        text = [
            *text[:m],
            f"recv({', '.join(text[m : m + n])})",
            f"group({', '.join(text[m + n :])})",
        ]
        attrs = f"root = {a['root']} : i32"
        if "reduceOp" in a:
            attrs = f"reduceOp = #pto<reduce_op {a['reduceOp']}>, {attrs}"
        return f"{st.op}({', '.join(text)} : {', '.join(map(_t, ops))}) {{{attrs}}}"
    kinds = {"atomicType": "atomic_type", "notifyOp": "notify_op", "cmp": "wait_cmp"}
    attrs = ", ".join(
        f"{k} = #pto<{kinds[k]} {v}>" if k in kinds else f"{k} = {v} : i64" for k, v in st.attrs
    )
    if st.results and st.op != "pto.comm.ttest":  # the async ops: their result's type
        attrs_text = f" {{{attrs}}}" if attrs else ""
        return (
            f"{_results(st.results)}{st.op}({', '.join(text)} : {', '.join(map(_t, ops))})"
            f"{attrs_text} -> {_t(st.results[0])}"
        )
    ret = f" -> {_t(st.results[0])}" if st.results else ""
    return (
        f"{_results(st.results)}{st.op}({', '.join(text)} : {', '.join(map(_t, ops))})"
        f"{' {' + attrs + '}' if attrs else ''}{ret}"
    )


def _subview(st: Subview) -> str:
    if st.op == "pto.multi_tile_get":
        return (
            f"{_results((st.result,))}{st.op} %{st.source.name}[{_v(st.offsets[0])}]"
            f"{_kept(st)} : {_t(st.source)} -> {_t(st.result)}"
        )
    offs = ", ".join(map(_v, st.offsets))
    sizes = ", ".join(str(s) for s in st.sizes)
    valid = f" valid [{', '.join(map(_v, st.valid))}]" if st.valid else ""
    return (
        f"{_results((st.result,))}{st.op} %{st.source.name}[{offs}] sizes [{sizes}]{valid}"
        f"{_kept(st)} : {_t(st.source)} -> {_t(st.result)}"
    )


def print_statement(st, indent: int = 0) -> list[str]:
    """Lines of one statement (regions included) at ``indent`` levels."""
    pad = _IND * indent
    if isinstance(st, Instr):
        return [pad + _instr(st)]
    if isinstance(st, (SetFlag, WaitFlag)):
        return [pad + _flag(st)]
    if isinstance(st, Barrier):
        if st.fence:  # one fence lowers to PIPE_ALL, or to MTE2, MTE3, FIX: printed once
            keep = st.pipe in ("PIPE_ALL", "PIPE_MTE2")
            return [f"{pad}pto.fence.barrier_all #pto.fence_scope<{st.fence}>"] if keep else []
        return [f"{pad}pto.barrier <{st.pipe}>{_kept(st)}"]
    if isinstance(st, Dsb):  # a fence's dsb prints with the fence
        return [] if st.fence else [f'{pad}pto.dsb "{st.kind}"']
    if isinstance(st, CacheInvalid):
        if st.target is None:
            return [f"{pad}pto.cmo.cacheinvalid all #pto.address_space<{st.space}>"]
        return [f"{pad}pto.cmo.cacheinvalid {_v(st.target)} {CACHE_LINE}"]
    if isinstance(st, (SyncSet, SyncWait, SyncAll, SetFfts)):
        return [pad + _cross_core(st)]
    if isinstance(st, Alloc):
        kv = "".join(
            f" {k} = {_v(v)}"
            for k, v in (
                ("addr", st.addr),
                ("valid_row", st.valid_row),
                ("valid_col", st.valid_col),
            )
            if v is not None
        )
        return [f"{pad}{_results((st.tile,))}pto.alloc_tile{kv}{_kept(st)} : {_t(st.tile)}"]
    if isinstance(st, MakeTensorView):
        kept = dict(st.attrs)
        if st.layout != "nd":
            kept["layout"] = RawAttr(f"#pto.layout<{st.layout}>")
        layout = f" {_attr_dict(sorted(kept.items()))}" if kept else ""
        return [
            f"{pad}{_results((st.result,))}pto.make_tensor_view {_v(st.ptr)}, shape = "
            f"[{', '.join(map(_v, st.shape))}], strides = [{', '.join(map(_v, st.strides))}]"
            f"{layout} : {_t(st.result)}"
        ]
    if isinstance(st, PartitionView):
        return [
            f"{pad}{_results((st.result,))}pto.partition_view {_v(st.source)}, offsets = "
            f"[{', '.join(map(_v, st.offsets))}], sizes = [{', '.join(map(_v, st.sizes))}]"
            f"{_kept(st)} : {_t(st.source)} -> {_t(st.result)}"
        ]
    if isinstance(st, SetValidShape):
        return [
            f"{pad}pto.set_validshape {_v(st.tile)}, {_v(st.rows)}, {_v(st.cols)}{_kept(st)} : "
            f"{_t(st.tile)}"
        ]
    if isinstance(st, Arith):
        return [pad + _arith(st)]
    if isinstance(st, ScalarOp):
        return [pad + _scalar_op(st)]
    if isinstance(st, Subview):
        return [pad + _subview(st)]
    if isinstance(st, Reshape):
        return [
            f"{pad}{_results((st.result,))}pto.treshape %{st.source.name}{_kept(st)} : "
            f"{_t(st.source)} -> {_t(st.result)}"
        ]
    if isinstance(st, PipeOp):
        return [pad + _pipe_op(st)]
    if isinstance(st, CommOp):
        return [pad + _comm_op(st)]
    if isinstance(st, Yield):
        return [f"{pad}scf.yield {_typed(st.values)}".rstrip()]
    if isinstance(st, Return):
        return [f"{pad}return {_typed(st.values)}".rstrip()]
    if isinstance(st, Call):
        arg_types = _types_paren([_t(a) for a in st.args])
        res_types = _types_paren([_t(r) for r in st.results])
        return [
            f"{pad}{_results(st.results)}func.call @{st.callee}("
            f"{', '.join(map(_v, st.args))}) : {arg_types} -> {res_types}"
        ]
    if isinstance(st, For):
        head = (
            f"{_results(st.results)}scf.for %{st.iv.name} = {_v(st.lower)} to {_v(st.upper)} "
            f"step {_v(st.step)}"
        )
        if st.iter_args:
            pairs = ", ".join(
                f"%{a.name} = {_v(i)}" for a, i in zip(st.iter_args, st.inits, strict=True)
            )
            head += f" iter_args({pairs}) -> {_types_paren([_t(a) for a in st.iter_args])}"
        if st.iv.type != "index":
            head += f" : {st.iv.type}"
        return [f"{pad}{head} {{", *_body(st.body, indent + 1), pad + "}" + _kept(st)]
    if isinstance(st, If):
        head = f"{_results(st.results)}scf.if {_v(st.cond)}"
        if st.results:
            head += f" -> {_types_paren([_t(r) for r in st.results])}"
        lines = [f"{pad}{head} {{", *_body(st.then_body, indent + 1)]
        if st.else_body or st.results:
            lines += [pad + "} else {", *_body(st.else_body, indent + 1)]
        return lines + [pad + "}" + _kept(st)]
    if isinstance(st, Section):
        body = _body(st.body, indent + 1)
        return [f"{pad}pto.section.{st.kind} {{", *body, pad + "}" + _kept(st)]
    raise TypeError(f"cannot print statement {type(st).__name__}")


def _body(body, indent: int) -> list[str]:
    out = []
    for st in body:
        out += print_statement(st, indent)
    return out


def print_function(f: Function, indent: int = 1) -> list[str]:
    pad = _IND * indent
    vis = "private " if f.private else ""
    # no body: a declaration (always for results: a body would have to return them)
    declaration = not f.body and (f.private or bool(f.result_types))
    if declaration and all(getattr(a, "name", "") == f"arg{i}" for i, a in enumerate(f.args)):
        args = ", ".join(_t(a) for a in f.args)
    else:
        args = ", ".join(f"%{a.name}: {_t(a)}" for a in f.args)
    head = f"{pad}func.func {vis}@{f.name}({args})"
    if f.result_types:
        head += " -> " + (
            f.result_types[0] if len(f.result_types) == 1 else _types_paren(f.result_types)
        )
    if f.attrs:
        head += f" attributes {_attr_dict(f.attrs)}"
    if declaration:
        return [head]
    lines = [head + " {", *_body(f.body, indent + 1)]
    if not (f.body and isinstance(f.body[-1], Return)):
        lines.append(_IND * (indent + 1) + "return")
    return lines + [pad + "}"]


def print_program(program: Program | KernelLike) -> str:
    """The PTO IR text of ``program`` (a ``Program`` or a builder ``Kernel``)."""
    if hasattr(program, "program") and not isinstance(program, Program):
        program = program.program()
    head = f"module attributes {_attr_dict(program.attrs)} {{" if program.attrs else "module {"
    lines = [head]
    for i, f in enumerate(program.functions):
        if i:
            lines.append("")
        lines += print_function(f, 1)
    lines.append("}")
    return "\n".join(lines) + "\n"
