"""Adversarial coverage of the PTO IR front end against the census of real ``.pto`` files.

Every spelling, type form, attribute style, sync form, control-flow form and op syntax
variant that /work/shared/reference/pto-ir-in-the-wild.md (and pto-as-syntax.md) mentions
gets a small snippet here, grouped by the section of pto-ir-in-the-wild.md that mentions
it (the test id starts with that section, e.g. ``s2.5-set_flag-quoted``):

* in scope: ``parse_text`` accepts it and ``parse_text(print_program(p)) == p`` (the
  printed form is also a fixed point of print o parse);
* out of scope (§4.2 "Defer / reject"): ``parse_text`` raises a ``ParseError`` whose
  message names the construct (``unsupported op 'X'``, ``unsupported type``, ...) — never
  any other exception.
"""

from __future__ import annotations

import itertools
import random

import pytest

from sim.frontend import ParseError, parse_text, print_program
from sim.isa.opcodes import OPCODES
from sim.isa.program import Alloc, Barrier, Function, Instr, Program, RawAttr, SetFlag, WaitFlag
from sim.isa.tile import Tile, TileType

TB = "!pto.tile_buf<vec, 16x64xf32>"
TBH = "!pto.tile_buf<vec, 16x64xf16>"
PV = "!pto.partition_tensor_view<16x64xf32>"
TV = "!pto.tensor_view<?x?xf32>"
ARGS = "%p: !pto.ptr<f32>, %q: !pto.ptr<f32>, %n: index, %s: f32, %i32: i32, %flag: i1"
KV = (
    "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, "
    "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
)
MAT = "!pto.tile_buf<mat, 64x64xf16, blayout=col_major, slayout=row_major>"
LEFT = "!pto.tile_buf<left, 64x64xf16, slayout=row_major>"
RIGHT = "!pto.tile_buf<right, 64x64xf16, slayout=col_major>"
ACC = "!pto.tile_buf<acc, 64x64xf32, blayout=col_major, slayout=row_major, fractal=1024>"


def kernel(body: str = "", args: str = ARGS, fattrs: str = "", head: str = "module") -> str:
    fa = f" attributes {{{fattrs}}}" if fattrs else ""
    return f"{head} {{\n  func.func @k({args}){fa} {{\n{body}\n    return\n  }}\n}}\n"


def tiles(*names, t=TB) -> str:
    return "".join(f"    %{n} = pto.alloc_tile : {t}\n" for n in names)


C = (
    "    %c0 = arith.constant 0 : index\n"
    "    %c1 = arith.constant 1 : index\n"
    "    %c16 = arith.constant 16 : index\n"
    "    %c64 = arith.constant 64 : index\n"
)
VIEWS = (
    C + f"    %tv = pto.make_tensor_view %p, shape = [%c16, %c64], strides = [%c64, %c1] : {TV}\n"
    f"    %pv = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c16, %c64] : {TV} -> {PV}\n"
)


def accepts(text: str):
    """Parse, print, parse again: equal programs, and the printed text is a fixed point."""
    p = parse_text(text, "cov.pto")
    printed = print_program(p)
    q = parse_text(printed, "printed.pto")
    assert q == p, printed
    assert print_program(q) == printed
    return p


def rejects(text: str, what: str) -> ParseError:
    with pytest.raises(ParseError) as e:
        parse_text(text, "cov.pto")
    assert what in e.value.message, str(e.value)
    assert str(e.value).startswith("cov.pto:")
    return e.value


OK: list = []  # (id, text)
BAD: list = []  # (id, text, message fragment)


def ok(sid: str, text: str) -> None:
    OK.append(pytest.param(text, id=sid))


def bad(sid: str, text: str, what: str = "unsupported") -> None:
    BAD.append(pytest.param(text, what, id=sid))


# === §2.1 dialects and non-pto ops =======================================================

_INT_BIN = [
    "muli",
    "addi",
    "subi",
    "divsi",
    "remsi",
    "ceildivsi",
    "maxsi",
    "minsi",
    "minui",
    "divui",
    "ori",
    "remui",
    "andi",
    "xori",
    "floordivsi",
    "shli",
    "shrsi",
    "shrui",
    "maxui",
    "ceildivui",
]
for _op in _INT_BIN:
    ok(
        f"s2.1-arith.{_op}",
        kernel(f"    %r = arith.{_op} %n, %n : index\n    %r32 = arith.{_op} %i32, %i32 : i32"),
    )
for _op in ["addf", "subf", "mulf", "divf", "maximumf", "minimumf", "maxnumf", "minnumf"]:
    ok(f"s2.1-arith.{_op}", kernel(f"    %r = arith.{_op} %s, %s : f32"))
ok(
    "s2.1-arith.addf-fastmath",
    kernel(
        "    %r = arith.addf %s, %s fastmath<fast> : f32\n"
        "    %t = arith.mulf %s, %r fastmath<nnan, ninf> : f32"
    ),
)
ok("s2.1-arith.addi-overflow", kernel("    %r = arith.addi %n, %n overflow<nsw, nuw> : index"))
ok("s2.1-arith.negf", kernel("    %r = arith.negf %s : f32"))
for _pred in ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]:
    ok(
        f"s2.1-arith.cmpi-{_pred}",
        kernel(
            f"    %r = arith.cmpi {_pred}, %n, %n : index\n"
            f"    %t = arith.cmpi {_pred}, %i32, %i32 : i32"
        ),
    )
for _pred in [
    "false",
    "oeq",
    "ogt",
    "oge",
    "olt",
    "ole",
    "one",
    "ord",
    "ueq",
    "ugt",
    "uge",
    "ult",
    "ule",
    "une",
    "uno",
    "true",
]:
    ok(f"s2.1-arith.cmpf-{_pred}", kernel(f"    %r = arith.cmpf {_pred}, %s, %s : f32"))
ok(
    "s2.1-arith.select",
    kernel(
        "    %c = arith.cmpi slt, %n, %n : index\n"
        "    %r = arith.select %c, %n, %n : index\n"
        "    %f = arith.select %flag, %s, %s : f32\n"
        "    %g = arith.select %flag, %i32, %i32 : i1, i32"
    ),
)
ok(
    "s2.1-arith.casts",
    kernel(
        "    %a = arith.index_cast %n : index to i32\n"
        "    %b2 = arith.index_cast %i32 : i32 to index\n"
        "    %c = arith.index_castui %n : index to i64\n"
        "    %d = arith.trunci %c : i64 to i16\n"
        "    %e = arith.extsi %d : i16 to i32\n"
        "    %f = arith.extui %flag : i1 to i32\n"
        "    %g = arith.sitofp %a : i32 to f32\n"
        "    %h = arith.uitofp %a : i32 to f16\n"
        "    %i = arith.fptosi %s : f32 to i32\n"
        "    %j = arith.fptoui %s : f32 to i64\n"
        "    %k2 = arith.bitcast %s : f32 to i32\n"
        "    %l = arith.truncf %s : f32 to f16\n"
        "    %m = arith.extf %l : f16 to f32\n"
        "    %o = arith.truncf %s : f32 to bf16"
    ),
)
ok(
    "s2.1-func.return-values",
    "module {\n  func.func private @f(%x: index) -> (index, f32) {\n"
    "    %y = arith.constant 1.5 : f32\n    func.return %x, %y : index, f32\n  }\n"
    "  func.func @k(%n: index) {\n    %r:2 = func.call @f(%n) : (index) -> (index, f32)\n"
    "    func.return\n  }\n}\n",
)
ok("s2.1-builtin.module", "builtin.module {\n  func.func @k() {\n    return\n  }\n}\n")
ok(
    "s2.1-builtin.unrealized_conversion_cast",
    kernel("    %r = builtin.unrealized_conversion_cast %n : index to i64"),
)
bad(
    "s2.1-func.call_indirect",
    kernel("    %r = func.call_indirect %n(%n) : (index) -> index"),
    "unsupported op 'func.call_indirect'",
)
bad("s2.1-cf.br", kernel("    cf.br ^bb1"), "unsupported op 'cf.br'")
bad("s2.1-cf.cond_br", kernel("    cf.cond_br %flag, ^bb1, ^bb2"), "unsupported op 'cf.cond_br'")
bad(
    "s2.1-cf.switch",
    kernel("    cf.switch %i32 : i32, [\n      default: ^bb1,\n      42: ^bb2\n    ]"),
    "unsupported op 'cf.switch'",
)
bad(
    "s2.1-llvm.alloca",
    kernel("    %a = llvm.alloca %n x i32 : (index) -> !llvm.ptr"),
    "unsupported op 'llvm.alloca'",
)
bad(
    "s2.1-llvm.load",
    kernel("    %v = llvm.load %p : !llvm.ptr -> f32"),
    "unsupported op 'llvm.load'",
)
bad(
    "s2.1-memref.alloc",
    kernel("    %m = memref.alloc() : memref<16xf32>"),
    "unsupported type 'memref<...>'",
)
ok(
    "s2.1-memref.alloc-on-chip",
    kernel("    %m = memref.alloc() : memref<16x16xf32, #pto.address_space<vec>>"),
)
bad(
    "s2.1-memref.subview",
    kernel("    %m = memref.subview %p[0] [16] [1] : memref<64xf32> to memref<16xf32>"),
    "unsupported op 'memref.subview'",
)
bad(
    "s2.1-memref.reinterpret_cast",
    kernel(
        "    %m = memref.reinterpret_cast %p to offset: [0], sizes: [16], strides: [1] : memref<?xf32> to memref<16xf32>"
    ),
    "unsupported op 'memref.reinterpret_cast'",
)
bad(
    "s2.1-affine.apply",
    kernel("    %r = affine.apply affine_map<(d0) -> (d0 * 2)>(%n)"),
    "unsupported op 'affine.apply'",
)
bad(
    "s2.1-a5vm",
    kernel('    a5vm.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]'),
    "unsupported op 'a5vm.set_flag'",
)
bad(
    "s2.1-a5vm.vabs", kernel("    %v = a5vm.vabs %n : index -> index"), "unsupported op 'a5vm.vabs'"
)
bad(
    "s2.1-scf.while",
    kernel(
        "    %r = scf.while (%a = %n) : (index) -> index {\n"
        "      scf.condition(%flag) %a : index\n    } do {\n"
        "    ^bb0(%x: index):\n      scf.yield %x : index\n    }"
    ),
    "unsupported op 'scf.while'",
)
ok(
    "s2.1-scf.execute_region",
    kernel("    %r = scf.execute_region -> index {\n      scf.yield %n : index\n    }"),
)
bad(
    "s2.1-scf.index_switch",
    kernel(
        "    %r = scf.index_switch %n -> index\n    case 0 {\n"
        "      scf.yield %n : index\n    }\n    default {\n"
        "      scf.yield %n : index\n    }"
    ),
    "unsupported op 'scf.index_switch'",
)
bad(
    "s2.1-scf.condition",
    kernel("    scf.condition(%flag) %n : index"),
    "unsupported op 'scf.condition'",
)


# === §2.2 !pto.* types ===================================================================

for _t in [
    "f32",
    "f16",
    "bf16",
    "i8",
    "i16",
    "i32",
    "i64",
    "ui8",
    "ui16",
    "ui32",
    "ui64",
    "si8",
    "si16",
    "si32",
    "si64",
    "f8E4M3FN",
    "f8E5M2",
    "!pto.hif8",
]:
    ok(f"s2.2-ptr-{_t}", kernel("", f"%a: !pto.ptr<{_t}>"))
for _sp in [
    "ub",
    "gm",
    "l1",
    "l0c",
    "l0a",
    "l0b",
    "fb",
    "bt",
    "mat",
    "vec",
    "left",
    "right",
    "acc",
    "bias",
    "scaling",
]:
    ok(f"s2.2-ptr-space-{_sp}", kernel("", f"%a: !pto.ptr<f16, {_sp}>, %b: !pto.ptr<f32,{_sp}>"))
for _t in ["!pto.f4E1M2x2", "!pto.f4E2M1x2"]:  # FP4 pairs: raw bytes (sim.isa.dtypes)
    ok(f"s2.2-ptr-fp4-{_t.strip('!')}", kernel("", f"%a: !pto.ptr<{_t}>"))
for _t in ["!pto.f8E8M0", "!pto.bf16x2", "vector<2xbf16>", "f64"]:
    bad(
        f"s2.2-ptr-special-{_t.strip('!').replace('<', '_').rstrip('>')}",
        kernel("", f"%a: !pto.ptr<{_t}>"),
        "unsupported element type",
    )
for _shape in [
    "1024x",
    "?x",
    "32x64x",
    "?x?x",
    "?x64x",
    "4x32x64x",
    "?x?x?x",
    "2x4x32x64x",
    "?x?x?x?x",
    "1x1x1x32x64x",
    "?x?x?x?x?x",
    "1x1x1x1x32x64x",
]:
    ok(
        f"s2.2-tensor_view-rank{_shape.count('x')}-{_shape.replace('?', 'Q')}",
        kernel(
            "", f"%t: !pto.tensor_view<{_shape}f32>, %v: !pto.partition_tensor_view<{_shape}f16>"
        ),
    )
for _rank in (1, 2, 3, 4, 5):
    _dims = ", ".join(["%c1"] * (_rank - 1) + ["%c16"])
    _zero = ", ".join(["%c0"] * _rank)
    _st = "1x" * (_rank - 1) + "16x"
    _dyn = "?x" * _rank
    ok(
        f"s2.2-make_tensor_view-rank{_rank}",
        kernel(
            C + f"    %tv = pto.make_tensor_view %p, shape = [{_dims}], strides = [{_dims}] : "
            f"!pto.tensor_view<{_dyn}f32>\n"
            f"    %ts = pto.make_tensor_view %q, shape = [{_dims}], strides = [{_dims}] : "
            f"!pto.tensor_view<{_st}f32>\n"
            f"    %pv = pto.partition_view %tv, offsets = [{_zero}], sizes = [{_dims}] : "
            f"!pto.tensor_view<{_dyn}f32> -> !pto.partition_tensor_view<{_st}f32>\n"
            f"    %pd = pto.partition_view %ts, offsets = [{_zero}], sizes = [{_dims}] : "
            f"!pto.tensor_view<{_st}f32> -> !pto.partition_tensor_view<{_dyn}f32>"
        ),
    )
ok(
    "s2.2-tload-rank5",
    kernel(
        C + "    %tv = pto.make_tensor_view %p, shape = [%c1, %c1, %c1, %c16, %c64], strides = "
        "[%c16, %c16, %c16, %c64, %c1] : !pto.tensor_view<1x1x1x16x64xf32>\n"
        "    %pv = pto.partition_view %tv, offsets = [%c0, %c0, %c0, %c0, %c0], sizes = "
        "[%c1, %c1, %c1, %c16, %c64] : !pto.tensor_view<1x1x1x16x64xf32> -> "
        "!pto.partition_tensor_view<1x1x1x16x64xf32>\n"
        + tiles("a")
        + f"    pto.tload ins(%pv : !pto.partition_tensor_view<1x1x1x16x64xf32>) outs(%a : {TB})\n"
        f"    pto.tstore ins(%a : {TB}) outs(%pv : !pto.partition_tensor_view<1x1x1x16x64xf32>)"
    ),
)
bad(
    "s2.2-level1-tile",
    kernel("    %a = pto.alloc_tile : !pto.tile<16x64xf32>"),
    "unsupported type '!pto.tile<16x64xf32>'",
)
for _t in [
    "!pto.vreg<64xf32>",
    "!pto.mask<b32>",
    "!pto.align",
    "!pto.vmi<64xf32>",
    "!pto.pipe<vec>",
    "!pto.struct<i32, f32>",
    "!pto.local_array<8xi32>",
    "!pto.tile_view<16x64xf32>",
    "!pto.eventid_array<4>",
    "!pto.async_session",
    "!pto.async_event",
    "!pto.prefetch_async_context",
]:
    bad(f"s2.2-type-{_t[5:].split('<')[0]}", kernel("", f"%a: {_t}"), "unsupported type")
# a static GM memref argument is its whole tensor (instructions-more.md §3.10)
ok("s2.2-builtin-memref-arg", kernel("", "%m: memref<16xf32, #pto.address_space<gm>>"))
bad(
    "s2.2-builtin-memref-arg-dynamic",
    kernel("", "%m: memref<?xf32, #pto.address_space<gm>>"),
    "unsupported type 'memref<...>'",
)
bad(
    "s2.2-memref-like-tile_buf",
    kernel(
        "    %a = pto.alloc_tile : !pto.tile_buf<32x32xf32, strided<[32,1], offset:[?,?]>, "
        "#pto.address_space<vec>>"
    ),
    "the obsolete memref-like tile_buf",
)


# === §2.3 !pto.tile_buf spellings ========================================================

_KV_ORDERS = {
    "canonical": "loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
    "slayout=none_box, fractal=512, pad=0",
    "compact-key": "loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
    "slayout=none_box, fractal=512, pad=0, compact=1",
    "compact-2": "loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
    "slayout=none_box, fractal=512, pad=0, compact=2",
    "blayout-before-v_row": "loc=mat, dtype=f16, rows=64, cols=64, blayout=col_major, v_row=64, "
    "v_col=64, slayout=row_major, fractal=512, pad=0",
    "valid-in-kv": "loc=mat, dtype=f16, rows=64, cols=64, blayout=col_major, valid=32x32, "
    "slayout=row_major, fractal=512, pad=0",
    "valid-1x32": "loc=vec, dtype=f32, rows=16, cols=64, blayout=row_major, valid=1x32, "
    "slayout=none_box, fractal=512, pad=0",
    "loc-ub": "loc=ub, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
    "slayout=none_box, fractal=512, pad=0",
    "dynamic-valid": "loc=vec, dtype=f32, rows=16, cols=64, v_row=?, v_col=?, blayout=row_major, "
    "slayout=none_box, fractal=512, pad=0",
    "dynamic-v_row": "loc=vec, dtype=f32, rows=16, cols=64, v_row=?, v_col=64, blayout=row_major, "
    "slayout=none_box, fractal=512, pad=0",
    "v_row-minus-1": "loc=vec, dtype=f32, rows=16, cols=64, v_row=-1, v_col=-1, blayout=row_major, "
    "slayout=none_box, fractal=512, pad=0",
    "spaces": "loc = vec , dtype = f32 , rows = 16 , cols = 64 , v_row = 16 , v_col = 64 , "
    "blayout = row_major , slayout = none_box , fractal = 512 , pad = 0",
    "multiline": "loc=vec,\n      dtype=f32, rows=16,\n      cols=64, v_row=16, v_col=64,\n"
    "      blayout=row_major, slayout=none_box, fractal=512, pad=0",
    "acc": "loc=acc, dtype=f32, rows=64, cols=64, v_row=64, v_col=64, blayout=col_major, "
    "slayout=row_major, fractal=1024, pad=0",
    "left": "loc=left, dtype=f16, rows=64, cols=64, v_row=64, v_col=64, blayout=row_major, "
    "slayout=row_major, fractal=512, pad=0",
    "right": "loc=right, dtype=f16, rows=64, cols=64, v_row=64, v_col=64, blayout=row_major, "
    "slayout=col_major, fractal=512, pad=0",
    "bias": "loc=bias, dtype=f32, rows=1, cols=64, v_row=1, v_col=64, blayout=row_major, "
    "slayout=none_box, fractal=512, pad=0",
    "scaling": "loc=scaling, dtype=ui8, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
    "slayout=none_box, fractal=512, pad=0",
    "scaling-fractal32": "loc=scaling, dtype=f8E5M2, rows=16, cols=64, v_row=16, v_col=64, "
    "blayout=row_major, slayout=row_major, fractal=32, pad=0",
}
for _name, _kv in _KV_ORDERS.items():
    ok(f"s2.3-kv-{_name}", kernel(f"    %a = pto.alloc_tile : !pto.tile_buf<{_kv}>"))
for _pad in range(4):
    ok(
        f"s2.3-kv-pad{_pad}",
        kernel(
            f"    %a = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, "
            f"rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
            f"slayout=none_box, fractal=512, pad={_pad}>"
        ),
    )
for _dt in [
    "f32",
    "bf16",
    "f16",
    "i32",
    "i8",
    "i16",
    "ui32",
    "ui8",
    "f8E4M3FN",
    "f8E5M2",
    "ui16",
    "ui64",
    "f8E4M3",
    "si8",
    "i64",
    "si32",
    "si64",
    "si16",
    "!pto.hif8",
]:
    ok(
        f"s2.3-kv-dtype-{_dt}",
        kernel(
            f"    %a = pto.alloc_tile : !pto.tile_buf<loc=vec, "
            f"dtype={_dt}, rows=16, cols=256, v_row=16, v_col=256, "
            f"blayout=row_major, slayout=none_box, fractal=512, pad=0>"
        ),
    )
    ok(
        f"s2.3-compact-dtype-{_dt}",
        kernel(f"    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x256x{_dt}>"),
    )
for _dt in ["!pto.f4E1M2x2", "!pto.f4E2M1x2"]:
    ok(
        f"s2.3-kv-dtype-{_dt.lstrip('!')}",
        kernel(
            f"    %a = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype={_dt}, rows=16, cols=256, "
            f"v_row=16, v_col=256, blayout=row_major, slayout=none_box, fractal=512, pad=0>"
        ),
    )
for _dt in ["!pto.f8E8M0", "f64"]:
    bad(
        f"s2.3-kv-dtype-{_dt.lstrip('!')}",
        kernel(
            f"    %a = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype={_dt}, rows=16, cols=256, "
            f"v_row=16, v_col=256, blayout=row_major, slayout=none_box, fractal=512, pad=0>"
        ),
        "unsupported element type",
    )
    bad(
        f"s2.3-compact-dtype-{_dt.lstrip('!')}",
        kernel(f"    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x256x{_dt}>"),
        "unsupported element type",
    )
_COMPACT = {
    "vec": "vec, 16x64xf32",
    "mat": "mat, 64x64xf16, blayout=col_major, slayout=row_major",
    "acc": "acc, 64x64xf32, blayout=col_major, slayout=row_major, fractal=1024",
    "left": "left, 64x64xf16, slayout=row_major",
    "right": "right, 64x64xf16, slayout=col_major",
    "scaling": "scaling, 16x64xui8",
    "bias": "bias, 1x64xf32",
    "valid-static": "vec, 16x64xf32, valid=8x32",
    "valid-dyn": "vec, 16x64xf32, valid=?x?",
    "valid-dyn-row": "vec, 16x64xf32, valid=?x64",
    "valid-dyn-col": "vec, 16x64xf32, valid=16x?",
    "pad": "vec, 16x64xf32, pad=2",
    "fractal-32": "vec, 16x64xui8, slayout=row_major, fractal=32",
    "compact": "vec, 16x64xf32, compact=2",
    "defaults-spelled": "vec, 16x64xf32, valid=16x64, blayout=row_major, slayout=none_box, "
    "fractal=512, pad=0, compact=0",
}
for _name, _c in _COMPACT.items():
    ok(f"s2.3-compact-{_name}", kernel(f"    %a = pto.alloc_tile : !pto.tile_buf<{_c}>"))
bad(
    "s2.3-kv-rows-minus-1",
    kernel(
        "    %a = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, "
        "rows=-1, cols=64, v_row=16, v_col=64, blayout=row_major, "
        "slayout=none_box, fractal=512, pad=0>"
    ),
    "invalid tile_buf",
)
bad(
    "s2.3-kv-fractal-16",
    kernel(
        "    %a = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, "
        "rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
        "slayout=none_box, fractal=16, pad=0>"
    ),
    "fractal",
)
bad("s2.3-bare-loc-not-a-type", kernel("    %a = pto.alloc_tile : <loc=vec, dtype=f32>"), "")
ok(
    "s2.3-multi_tile_buf",
    kernel("    %m = pto.alloc_multi_tile : !pto.multi_tile_buf<vec, 16x16xf16, count=2>"),
)
ok("s2.2-multi_tile_buf-arg", kernel("", f"%a: !pto.multi_tile_buf<{TB}, count=2>"))
bad(
    "s2.2-multi_tile_buf-count0",
    kernel("", "%a: !pto.multi_tile_buf<vec, 16x16xf16, count=0>"),
    "count=N> with N > 0",
)


def test_s2_3_compact_tile_buf_every_optional_key_in_every_order():
    opts = [
        "valid=?x?",
        "blayout=col_major",
        "slayout=row_major",
        "fractal=512",
        "pad=1",
        "compact=1",
    ]
    first = None
    for items in itertools.permutations(opts):
        p = accepts(
            kernel(f"    %a = pto.alloc_tile : !pto.tile_buf<mat, 32x64xf16, {', '.join(items)}>")
        )
        t = p.main.body[0].tile.type
        first = first or t
        assert t == first


def test_s2_3_kv_tile_buf_keys_in_any_order_with_compact_and_valid():
    items = [
        "loc=mat",
        "dtype=f16",
        "rows=64",
        "cols=64",
        "v_row=?",
        "v_col=32",
        "blayout=col_major",
        "slayout=row_major",
        "fractal=512",
        "pad=3",
        "compact=1",
    ]
    perms = list(itertools.islice(itertools.permutations(items), 0, None, 99991))
    perms += [tuple(random.Random(i).sample(items, len(items))) for i in range(40)]
    types = {
        accepts(kernel(f"    %a = pto.alloc_tile : !pto.tile_buf<{', '.join(it)}>"))
        .main.body[0]
        .tile.type
        for it in perms
    }
    assert len(types) == 1
    t = types.pop()
    assert (t.valid_rows, t.valid_cols, int(t.pad), t.compact) == (None, 32, 3, 1)


# === §2.4 op syntax variants ===============================================================

_DPS_FORMS = {
    "one-line": f"    pto.tadd ins(%a, %b : {TB}, {TB}) outs(%c : {TB})",
    "ins-outs-on-two-lines": f"    pto.tadd ins(%a, %b : {TB}, {TB})\n        outs(%c : {TB})",
    "one-type-per-line": f"    pto.tadd ins(\n      %a,\n      %b\n      :\n      {TB},\n      {TB}\n"
    f"    )\n    outs(\n      %c\n      : {TB}\n    )",
    "ins-alone-on-a-line": f"    pto.tadd\n      ins(\n        %a, %b : {TB}, {TB})\n"
    f"      outs(%c : {TB})",
    "comments-inside": f"    pto.tadd // add\n      ins(%a, // lhs\n %b : {TB}, // types\n {TB})"
    f" // end ins\n      outs(%c : {TB}) // done",
    "scalar-f32": f"    pto.tadds ins(%a, %s : {TB}, f32) outs(%c : {TB})",
    "scalar-first": f"    pto.tdivs ins(%s, %a : f32, {TB}) outs(%c : {TB})",
    "scalar-i32": f"    pto.tshls ins(%a, %i32 : {TB}, i32) outs(%c : {TB})",
    "scalar-index": f"    pto.textract ins(%a, %n, %n : {TB}, index, index) outs(%c : {TB})",
    "literal-float": f"    pto.tmuls ins(%a, 1.00000000000000000e+20 : {TB}, f32) outs(%c : {TB})",
    "literal-int": f"    pto.tadds ins(%a, 3 : {TB}, f32) outs(%c : {TB})",
    "literal-neg": f"    pto.tadds ins(%a, -0.5 : {TB}, f32) outs(%c : {TB})",
    "literal-hex": f"    pto.tmaxs ins(%a, 0xFF800000 : {TB}, f32) outs(%c : {TB})",
    "inline-rmode": f"    pto.tcvt ins(%a {{rmode = #pto<round_mode ROUND>}} : {TB}) outs(%h : {TBH})",
    "inline-rmode-all": "".join(
        f"    pto.tcvt ins(%a {{rmode = #pto<round_mode {m}>}} : {TB}) outs(%h : {TBH})\n"
        for m in ["NONE", "RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD", "CAST_RINT"]
    ),
    "inline-cmpMode": "".join(
        f"    pto.tcmp ins(%a, %b {{cmpMode = #pto<cmp {m}>}} : {TB}, {TB}) outs(%m : "
        f"!pto.tile_buf<vec, 16x64xui8>)\n"
        for m in ["eq", "ne", "lt", "le", "gt", "ge"]
    ),
    "inline-exhausted": f"    pto.tmax ins(%a, %b {{exhausted = false}} : {TB}, {TB}) outs(%c : {TB})",
    "inline-isBinary": f"    pto.texpands ins(%s {{isBinary = true}} : f32) outs(%c : {TB})",
    "inline-maskPattern": f"    pto.tgather ins(%a {{maskPattern = #pto.mask_pattern<P0101>}} : "
    f"{TB}) outs(%c : {TB})",
    "trailing": f"    pto.tstore ins(%a : {TB}) outs(%pv : {PV}) "
    f"{{atomicType = #pto<atomic_type atomic_add>}}",
    "inline-and-trailing": f"    pto.tcvt ins(%a {{rmode = #pto<round_mode RINT>}} : {TB}) "
    f"outs(%h : {TBH}) {{sat = #pto<saturation_mode ON>}}",
    "trailing-on-next-line": f"    pto.tcvt ins(%a : {TB})\n      outs(%h : {TBH})\n"
    f"      {{rmode = #pto<round_mode TRUNC>}}",
    "inline-dict-no-types": "    pto.texpands ins(%s {isBinary = true} : f32) outs(%c : "
    f"{TB}) {{}}",
    "empty-dicts": f"    pto.trelu ins(%a {{}} : {TB}) outs(%c : {TB}) {{}}",
    "dict-in-outs": f"    pto.trelu ins(%a : {TB}) outs(%c {{note = 1}} : {TB})",
    "kv-type": f"    pto.trelu ins(%k : {KV}) outs(%k : {KV})",
}
_DPS_PRE = (
    VIEWS
    + tiles("a", "b", "c")
    + tiles("h", t=TBH)
    + tiles("k", t=KV)
    + "    %m = pto.alloc_tile : !pto.tile_buf<vec, 16x64xui8>\n"
)
for _name, _body in _DPS_FORMS.items():
    ok(f"s2.4-dps-{_name}", kernel(_DPS_PRE + _body))
bad(
    "s2.4-tprint-ins-only",
    kernel(tiles("a") + f"    pto.tprint ins(%a : {TB})"),
    "unsupported op 'pto.tprint'",
)
ok(
    "s2.4-tgetval-outs-type",
    kernel(
        C + tiles("a") + f"    %v = pto.tgetval ins(%a, %n : {TB}, index) outs : f32\n"
        f"    %w = pto.tgetval ins(%a, %c1 : {TB}, index)\n      outs : f32"
    ),
)
bad(
    "s2.4-dps-with-result",
    kernel(tiles("a", "b") + f"    %r = pto.tmov ins(%a : {TB}) outs(%b : {TB}) -> {TB}"),
    "returns no values",
)
bad(
    "s2.4-level1-ssa",
    kernel(tiles("a", "b") + f"    %c = pto.tadd %a, %b : {TB}"),
    "unsupported: the level-1 SSA form of 'pto.tadd'",
)
bad(
    "s2.4-level1-ssa-functional-type",
    kernel(tiles("a", "b") + f"    %c = pto.tadd %a, %b : ({TB}, {TB}) -> {TB}"),
    "unsupported",
)
ok(
    "s2.4-treshape",
    kernel(
        tiles("a") + f"    %r = pto.treshape %a : {TB} -> {TB}\n"
        f"    %r2 = pto.treshape %r : {TB} -> !pto.tile_buf<vec, 1x1024xf32>"
    ),
)
bad(
    "s2.4-treshape-size",
    kernel(tiles("a") + f"    %r = pto.treshape %a : {TB} -> {TBH}"),
    "expected the same total size",
)
ok(
    "s2.4-get_tensor_view_dim",
    kernel(VIEWS + f"    %d = pto.get_tensor_view_dim %tv, %c0 : {TV} -> index"),
)

_ALLOC = {
    "plain": f"    %t = pto.alloc_tile : {TB}",
    "addr": f"    %t = pto.alloc_tile addr = %addr : {TB}",
    "addr-literal": f"    %t = pto.alloc_tile addr = 4096 : {TB}",
    "valid": "    %t = pto.alloc_tile valid_row = %n valid_col = %n : !pto.tile_buf<vec, 16x64xf32, valid=?x?>",
    "addr-valid": "    %t = pto.alloc_tile addr = %addr valid_row = %n valid_col = %n : "
    "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=?, v_col=?, "
    "blayout=row_major, slayout=none_box, fractal=512, pad=0>",
    "valid-then-addr": "    %t = pto.alloc_tile valid_row = %n valid_col = %n addr = %addr : "
    "!pto.tile_buf<vec, 16x64xf32, valid=?x?>",
    "valid-literal": "    %t = pto.alloc_tile valid_row = 8 valid_col = 32 : "
    "!pto.tile_buf<vec, 16x64xf32, valid=?x?>",
    "multiline": "    %t = pto.alloc_tile\n      addr = %addr\n      valid_row = %n\n"
    "      valid_col = %n\n      : !pto.tile_buf<vec, 16x64xf32, valid=?x?>",
}
for _name, _body in _ALLOC.items():
    ok(f"s2.4-alloc_tile-{_name}", kernel("    %addr = arith.constant 4096 : i64\n" + _body))
ok(
    "s2.4-set_validshape",
    kernel(
        "    %t = pto.alloc_tile valid_row = %n valid_col = %n : "
        "!pto.tile_buf<vec, 16x64xf32, valid=?x?>\n"
        "    pto.set_validshape %t, %n, %n : !pto.tile_buf<vec, 16x64xf32, valid=?x?>\n"
        "    pto.set_validshape %t, 8, 16 : !pto.tile_buf<vec, 16x64xf32, valid=?x?>"
    ),
)
for _name, _sep, _attr in [
    ("comma", ",", ""),
    ("no-comma", "", ""),
    ("layout-nd", ",", " {layout = #pto.layout<nd>}"),
    ("layout-dn", "", " {layout = #pto.layout<dn>}"),
    ("layout-nz", ",", " {layout = #pto.layout<nz>}"),
]:
    ok(
        f"s2.4-make_tensor_view-{_name}",
        kernel(
            C + f"    %tv = pto.make_tensor_view %p, shape = [%n, %c64]{_sep} strides = [%c64, %c1]"
            f"{_attr} : {TV}"
        ),
    )
ok(
    "s2.4-make_tensor_view-literals",
    kernel(f"    %tv = pto.make_tensor_view %p, shape = [16, 64], strides = [64, 1] : {TV}"),
)
ok(
    "s2.4-make_tensor_view-static-type",
    kernel(
        C + "    %tv = pto.make_tensor_view %p, shape = [%c16, %c64], strides = [%c64, %c1] : "
        "!pto.tensor_view<16x64xf32>"
    ),
)
ok(
    "s2.4-partition_view-ssa-offsets",
    kernel(
        C + f"    %tv = pto.make_tensor_view %p, shape = [%n, %c64], strides = [%c64, %c1] : {TV}\n"
        f"    %o = arith.muli %n, %c16 : index\n"
        f"    %pv = pto.partition_view %tv, offsets = [%o, %c0], sizes = [%c16, %c64] : {TV} -> {PV}\n"
        f"    %pd = pto.partition_view %tv, offsets = [%o, %c0], sizes = [%n, %c64] : {TV} -> "
        f"!pto.partition_tensor_view<?x64xf32>"
    ),
)
_BIG = "!pto.tile_buf<vec, 32x64xf32>"
ok(
    "s2.4-subview-and-subset",
    kernel(
        C
        + tiles("t", t=_BIG)
        + f"    %s1 = pto.subview %t[%c0, %c0] sizes [16, 64] : {_BIG} -> {TB}\n"
        f"    %s2 = pto.subview %t[%c16, %c0] sizes [16, 64] valid [%n, %n] : {_BIG} -> "
        "!pto.tile_buf<vec, 16x64xf32, valid=?x?>\n"
        f"    %s3 = pto.subset %t[%c0, %c0] sizes [16, 64] : {_BIG}\n"
        f"    %s4 = pto.subset %t[%c16, %c0] sizes [16, 64] : {_BIG} -> {TB}"
    ),
)
ok(
    "s2.4-load_store_scalar",
    kernel(
        C + "    %x = pto.load_scalar %p[%c0] : !pto.ptr<f32> -> f32\n"
        "    %y = pto.load_scalar %p[%n] : !pto.ptr<f32>\n"
        "    pto.store_scalar %x, %q[%c1] : !pto.ptr<f32>, f32\n"
        "    pto.store_scalar %y, %q[%n] : !pto.ptr<f32>"
    ),
)
ok(
    "s2.4-block-getters",
    kernel(
        "    %a = pto.get_block_idx\n    %b1 = pto.get_block_num\n    %c = pto.get_subblock_idx\n"
        "    %d = pto.get_subblock_num\n    %e = pto.get_block_idx : i32\n"
        "    %f = pto.get_block_num : i64\n    %g = arith.index_cast %a : i64 to index"
    ),
)
ok(
    "s2.4-sections",
    kernel(
        "    pto.section.cube {\n      %x = arith.addi %n, %n : index\n    }\n"
        "    pto.section.vector {\n      %y = pto.get_subblock_idx\n    }\n"
        "    pto.section.vector {\n    }"
    ),
)
ok(
    "s2.4-pipe-ops",
    kernel(
        tiles("t") + '    %buf = pto.reserve_buffer {name = "c2v_fifo", size = 8192, location = '
        "#pto.address_space<mat>, auto = false, base = 0} -> i32\n"
        '    %imp = pto.import_reserved_buffer {name = "c2v_fifo", peer_func = @k} -> i32\n'
        "    pto.aic_initialize_pipe {id = 0, dir_mask = 1, slot_size = 8192} "
        "(c2v_consumer_buf = %buf : i32, v2c_consumer_buf = %imp : i32)\n"
        "    pto.aiv_initialize_pipe {id = 0, dir_mask = 1, slot_size = 8192} (c2v_consumer_buf = %buf : i32)\n"
        f"    pto.tpush_to_aiv(%t : {TB}) {{split = 1}}\n"
        f"    pto.tpush_to_aic(%t : {TB}) {{split = 0}}\n"
        f"    %u = pto.tpop_from_aic {{split = 1}} -> {TB}\n"
        f"    %v = pto.tpop_from_aiv {{split = 1}} -> {TB}\n"
        "    pto.tfree_from_aic {split = 1}\n    pto.tfree_from_aiv {split = 1}"
    ),
)
bad(
    "s2.4-generic-op-form",
    kernel(
        tiles("a", "b") + f'    "pto.tmov"(%a, %b) <{{operandSegmentSizes = '
        f"array<i32: 1, 1>}}> : ({TB}, {TB}) -> ()"
    ),
    "generic MLIR operation form",
)
bad(
    "s2.4-generic-op-form-result",
    kernel('    %r = "arith.addi"(%n, %n) : (index, index) -> index'),
    "generic MLIR operation form",
)
bad(
    "s2.4-blocks",
    "module {\n  func.func @k(%n: index) {\n  ^bb0:\n    return\n  }\n}\n",
    "unsupported: MLIR blocks",
)
ok(
    "s2.4-loc-trailers",
    '#loc = loc("k.py":1:0)\n#loc1 = loc("k.py":3:4)\nmodule {\n'
    '  func.func @k(%n: index loc("k.py":1:10)) {\n'
    "    %c1 = arith.constant 1 : index loc(#loc1)\n"
    '    %r = arith.addi %n, %c1 : index loc(callsite("f"(#loc) at #loc1))\n'
    f"    %t = pto.alloc_tile : {TB} loc(fused[#loc, #loc1])\n"
    f"    pto.trelu ins(%t : {TB}) outs(%t : {TB}) loc(unknown)\n"
    '    return loc(#loc)\n  } loc(#loc)\n} loc(#loc)\n#loc2 = loc("k.py":9:1)\n',
)


# === §2.5 level-3 synchronisation ==========================================================

_PIPES = [
    "PIPE_S",
    "PIPE_V",
    "PIPE_M",
    "PIPE_MTE1",
    "PIPE_MTE2",
    "PIPE_MTE3",
    "PIPE_FIX",
    "PIPE_ALL",
    "PIPE_MTE4",
    "PIPE_MTE5",
    "PIPE_V2",
    "VIRTUAL_PIPE_MTE2_L1A",
    "VIRTUAL_PIPE_MTE2_L1B",
]
_ENDPOINTS = [
    "TLOAD",
    "TSTORE_ACC",
    "TSTORE_VEC",
    "TMOV_M2L",
    "TMOV_M2S",
    "TMOV_M2B",
    "TMOV_M2V",
    "TMOV_V2M",
    "TMATMUL",
    "TVEC",
    "TVECWAIT_EVENT",
]
_FLAG_SPELLINGS = {
    "quoted": '["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]',
    "angle": "[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]",
    "attr": "[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID0>]",
    "mixed": '[<PIPE_MTE2>, "PIPE_V", #pto.event<EVENT_ID0>]',
    "space-before-bracket": " [<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]",
    "multiline": "[\n      <PIPE_MTE2>,\n      <PIPE_V>,\n      <EVENT_ID0>\n    ]",
}
for _name, _sp in _FLAG_SPELLINGS.items():
    ok(f"s2.5-set_wait_flag-{_name}", kernel(f"    pto.set_flag{_sp}\n    pto.wait_flag{_sp}"))
for _e in range(8):
    ok(
        f"s2.5-flag-EVENT_ID{_e}",
        kernel(
            f"    pto.set_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID{_e}>]\n"
            f'    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID{_e}"]'
        ),
    )
for _p in _PIPES:
    ok(
        f"s2.5-barrier-{_p}",
        kernel(
            f"    pto.barrier #pto.pipe<{_p}>\n    pto.barrier <{_p}>\n"
            f"    pto.set_flag[<{_p}>, <PIPE_V>, <EVENT_ID1>]\n"
            f"    pto.wait_flag[#pto.pipe<{_p}>, <PIPE_V>, <EVENT_ID1>]"
        ),
    )
ok(
    "s2.5-flag_dyn",
    kernel(
        "    pto.set_flag_dyn [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, %n]\n"
        "    pto.wait_flag_dyn [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, %n]\n"
        "    pto.set_flag_dyn[<PIPE_MTE2>, <PIPE_V>, %n]\n"
        "    pto.wait_flag_dyn[<PIPE_MTE2>, <PIPE_V>, %n]"
    ),
)
for _kind in ["sync_op_type", "pipe_event_type"]:
    for _ev in ["<EVENT_ID0>", "#pto.event<EVENT_ID0>"]:
        ok(
            f"s2.5-record_wait_event-{_kind}-{_ev[:5].strip('<#')}",
            kernel(
                f"    pto.record_event[#pto.{_kind}<TLOAD>, #pto.{_kind}<TVEC>, {_ev}]\n"
                f"    pto.wait_event[#pto.{_kind}<TLOAD>, #pto.{_kind}<TVEC>, {_ev}]\n"
                f"    pto.record_event [#pto.{_kind}<TMATMUL>, #pto.{_kind}<TSTORE_ACC>, {_ev}]\n"
                f"    pto.wait_event [#pto.{_kind}<TMATMUL>, #pto.{_kind}<TSTORE_ACC>, {_ev}]"
            ),
        )
ok(
    "s2.5-record_wait_event-bare",
    kernel(
        "    pto.record_event[<TMOV_M2L>, <TMATMUL>, <EVENT_ID2>]\n"
        "    pto.wait_event[<TMOV_M2L>, <TMATMUL>, <EVENT_ID2>]"
    ),
)
for _e in _ENDPOINTS:
    ok(
        f"s2.5-endpoint-{_e}",
        kernel(
            f"    pto.record_event[#pto.sync_op_type<{_e}>, #pto.pipe_event_type<TVEC>, <EVENT_ID0>]\n"
            f"    pto.wait_event[#pto.pipe_event_type<TVEC>, <{_e}>, #pto.event<EVENT_ID0>]\n"
            f"    pto.barrier_sync[<{_e}>]\n    pto.barrier_sync [<{_e}>]"
        ),
    )
_SYNC_OUT = {
    "set_cross_block": "    pto.set_cross_block <PIPE_MTE3>, 1",
    "wait_cross_block": "    pto.wait_cross_block <PIPE_MTE3>, 1",
    "mem_bar": '    pto.mem_bar "VST_VLD"',
    "get_buf": '    pto.get_buf "PIPE_V", 0, 0',
    "rls_buf": '    pto.rls_buf "PIPE_V", 0, 0',
    "get_buf-bracket": "    pto.get_buf[#pto.pipe_event_type<TVEC>, 0]",
    "rls_buf-bracket": "    pto.rls_buf[#pto.pipe_event_type<TVEC>, 0]",
    "get_buf_dyn": '    pto.get_buf_dyn "PIPE_V", %n, 0',
    "declare_eventid_array": "    %e = pto.declare_eventid_array -> !pto.eventid_array<4>",
    "eventid_array_get": "    %e = pto.eventid_array_get %n[%n] : !pto.eventid_array<4>",
    "eventid_array_set": "    pto.eventid_array_set %n[%n], %n : !pto.eventid_array<4>",
    "syncthreads": "    pto.syncthreads",
    "tsync": "    pto.tsync ins(%n : index)",
    "generic-syncall": '    "pto.syncall"(%n) <{mode = 1 : i32}> : (index) -> ()',
}
# cross-core flags and the all-core barrier (every spelling: tests/test_ffts.py)
_SYNC_CROSS_CORE = {
    "sync.set": "    pto.sync.set <PIPE_M>, 0",
    "sync.set-attr": "    pto.sync.set #pto.pipe<PIPE_M>, 0 {ffts_mode = 2 : i32}",
    "sync.wait": "    pto.sync.wait <PIPE_V>, %n",
    "set_ffts": "    pto.set_ffts %n : index",
    "syncall": "    pto.syncall(%n : index) mode = #pto.sync_all_mode<soft>, core_type = "
    "#pto.sync_core_type<aiv_only>",
    "syncall-empty": "    pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = "
    "#pto.sync_core_type<mix>",
    "set_intra_block": "    pto.set_intra_block <PIPE_MTE3>, 1",
    "wait_intra_block": "    pto.wait_intra_block <PIPE_MTE3>, 1",
}
for _name, _body in _SYNC_CROSS_CORE.items():
    ok(f"s2.5-cross-core-{_name}", kernel(_body))
for _name, _body in _SYNC_OUT.items():
    bad(f"s2.5-out-of-scope-{_name}", kernel(_body), "unsupported")
# the data barrier and the scalar data cache (instructions-more.md §3.9; sim.isa.memorder)
for _kind in ("DDR", "UB", "ALL", "SEQ"):
    ok(f"s2.5-dsb-{_kind}", kernel(f'    pto.dsb "{_kind}"'))
ok("s3.9-cacheinvalid-ptr-typed", kernel("    pto.cmo.cacheinvalid %p : !pto.ptr<f32>"))
ok(
    "s3.9-cacheinvalid-line",
    kernel('    pto.cmo.cacheinvalid %p single_cache_line\n    pto.dsb "DDR"'),
)
ok("s3.9-cacheinvalid-all", kernel("    pto.cmo.cacheinvalid all #pto.address_space<gm>"))
bad(
    "s2.5-dsb-unknown-kind",
    kernel('    pto.dsb "L2"'),
    'pto.dsb: expected one of DDR, UB, ALL, SEQ, found "L2"',
)
bad(
    "s3.9-cacheinvalid-all-ub",
    kernel("    pto.cmo.cacheinvalid all #pto.address_space<ub>"),
    "pto.cmo.cacheinvalid all: expected #pto.address_space<gm>",
)
bad(
    "s3.9-cacheinvalid-not-a-line",
    kernel("    pto.cmo.cacheinvalid %p whole_cache"),
    "expected single_cache_line after the view, found whole_cache",
)
bad(
    "s3.9-cacheinvalid-wrong-type",
    kernel("    pto.cmo.cacheinvalid %p : !pto.ptr<f16>"),
    "!pto.ptr<f16>",
)
bad(
    "s3.9-cacheinvalid-a-scalar",
    kernel("    pto.cmo.cacheinvalid %n"),
    "pto.cmo.cacheinvalid: expected a GM view or pointer, found index",
)
bad("s2.5-unknown-pipe", kernel("    pto.barrier <PIPE_Q>"), "unknown pipe 'PIPE_Q'")
bad(
    "s2.5-event-out-of-range-name",
    kernel("    pto.set_flag[<PIPE_V>, <PIPE_M>, <EVENT_X>]"),
    "EVENT_ID0..EVENT_ID7",
)


# === §2.6 module / function attributes ======================================================

_MODULE_HEADS = {
    "plain": "module",
    "named": "module @m",
    "target_arch-a5": 'module attributes {pto.target_arch = "a5"}',
    "target_arch-a3": 'module attributes {pto.target_arch = "a3"}',
    "target_arch-a2a3": 'module attributes {pto.target_arch = "a2a3"}',
    "target_arch-a2": 'module attributes {pto.target_arch = "a2"}',
    "device-spec-910B1": 'module attributes {"pto.device-spec" = "Ascend910B1"}',
    "device-spec-910B3": 'module attributes {"pto.device-spec" = "Ascend910B3"}',
    "device-spec-950": 'module attributes {"pto.device-spec" = "Ascend950"}',
    "kernel_kind-backend": "module attributes {pto.kernel_kind = #pto.kernel_kind<vector>, "
    'pto.backend = "vpto", pto.target_arch = "a5"}',
    "named-with-attrs": 'module @m attributes {pto.backend = "emitc"}',
    "multiline-attrs": 'module attributes {\n  pto.target_arch = "a5",\n  pto.backend = "emitc"\n}',
}
for _name, _head in _MODULE_HEADS.items():
    ok(f"s2.6-module-{_name}", kernel(head=_head))
ok(
    "s2.6-no-module-wrapper",
    "func.func @k(%n: index) {\n  return\n}\nfunc.func @j() {\n  return\n}\n",
)
_FUNC_ATTRS = {
    "kernel_kind-vector": "pto.kernel_kind = #pto.kernel_kind<vector>",
    "kernel_kind-cube": "pto.kernel_kind = #pto.kernel_kind<cube>",
    "unit-kernel": "pto.kernel",
    "unit-entry": "pto.entry",
    "unit-aicore": "pto.aicore",
    "unit-simt_entry": "pto.simt_entry",
    "func_core_type-hacc": "pto.func_core_type = #pto.func_core_type<AIV>, hacc.entry",
    "auto_sync_tail_hint": 'pto.auto_sync_tail_hint = "mte3-to-s-event0"',
    "many": 'pto.kernel, pto.entry, pto.kernel_kind = #pto.kernel_kind<cube>, "quoted.key" = 3',
}
for _name, _fa in _FUNC_ATTRS.items():
    ok(f"s2.6-func-attrs-{_name}", kernel(fattrs=_fa))
ok(
    "s2.6-kernel-args",
    kernel(
        args="%a: !pto.ptr<f32>, %n: index, %x: i32, %f: i1, %s: f32, "
        "%__pypto_spmd_block_idx: i32, %__pypto_spmd_block_num: i32, "
        "%__pypto_spmd_subblock_idx: i32"
    ),
)
ok("s2.6-arg-attrs", kernel(args="%a: !pto.ptr<f32> {llvm.noalias}, %n: index {pto.foo = 1 : i32}"))
ok(
    "s2.6-private-decl-and-call",
    "module {\n"
    "  func.func private @ext(!pto.ptr<f32>, index) -> i32\n"
    "  func.func private @ext2(%a: index)\n"
    "  func.func @k(%p: !pto.ptr<f32>, %n: index) {\n"
    "    %r = func.call @ext(%p, %n) : (!pto.ptr<f32>, index) -> i32\n"
    "    func.call @ext2(%n) : (index) -> ()\n"
    "    call @ext2(%n) : (index) -> ()\n"
    "    return\n  }\n}\n",
)
ok(
    "s2.6-multi-func-entry",
    "module {\n"
    "  func.func @k_aic(%n: index) attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {\n"
    "    return\n  }\n"
    "  func.func @k_aiv(%n: index) attributes {pto.entry, pto.kernel_kind = #pto.kernel_kind<vector>} {\n"
    "    return\n  }\n}\n",
)
ok(
    "s2.6-call-tile-args",
    "module {\n"
    f"  func.func private @helper(%t: {TB}, %x: index) -> index {{\n"
    f"    pto.trelu ins(%t : {TB}) outs(%t : {TB})\n"
    "    return %x : index\n  }\n"
    "  func.func @k(%n: index) {\n"
    f"    %a = pto.alloc_tile : {TB}\n"
    f"    %r = func.call @helper(%a, %n) : ({TB}, index) -> index\n"
    "    return\n  }\n}\n",
)


# === §2.7 control flow, dynamic shapes ========================================================

ok(
    "s2.7-scf.for",
    kernel(
        C + "    scf.for %i = %c0 to %n step %c1 {\n      %j = arith.muli %i, %c16 : index\n    }"
    ),
)
ok(
    "s2.7-scf.for-nested",
    kernel(
        C + "    scf.for %i = %c0 to %n step %c1 {\n"
        "      scf.for %j = %i to %n step %c16 {\n"
        "        %x = arith.addi %i, %j : index\n      }\n    }"
    ),
)
ok(
    "s2.7-scf.for-i32",
    kernel(
        "    %c0 = arith.constant 0 : i32\n    %c1 = arith.constant 1 : i32\n"
        "    scf.for %i = %c0 to %i32 step %c1 : i32 {\n"
        "      %x = arith.addi %i, %c1 : i32\n    }"
    ),
)
ok(
    "s2.7-scf.for-iter_args",
    kernel(
        C + "    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {\n"
        "      %a2 = arith.addi %acc, %i : index\n      scf.yield %a2 : index\n    }\n"
        "    %r2:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %c0, %y = %s) -> (index, f32) {\n"
        "      %y2 = arith.addf %y, %s : f32\n      scf.yield %x, %y2 : index, f32\n    }\n"
        "    %u = arith.addi %r, %r2#0 : index\n"
        "    %r3 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> index {\n"
        "      scf.yield %acc : index\n    }\n"
        "    scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {\n"
        "      scf.yield %acc : index\n    }"
    ),
)
ok(
    "s2.7-scf.for-iter_args-i32",
    kernel(
        "    %c0 = arith.constant 0 : i32\n    %c1 = arith.constant 1 : i32\n"
        "    %r = scf.for %i = %c0 to %i32 step %c1 iter_args(%acc = %c0) -> (i32) : i32 {\n"
        "      %a2 = arith.addi %acc, %i : i32\n      scf.yield %a2 : i32\n    }"
    ),
)
ok(
    "s2.7-scf.for-tile-iter_args",
    kernel(
        C
        + tiles("a", "b")
        + f"    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a, %y = %b) -> ({TB}, {TB}) {{\n"
        f"      pto.tadd ins(%x, %y : {TB}, {TB}) outs(%x : {TB})\n"
        f"      scf.yield %y, %x : {TB}, {TB}\n    }}"
    ),
)
ok(
    "s2.7-scf.for-explicit-empty-yield",
    kernel(C + "    scf.for %i = %c0 to %n step %c1 {\n      scf.yield\n    }"),
)
ok("s2.7-scf.if", kernel("    scf.if %flag {\n      %x = arith.addi %n, %n : index\n    }"))
ok(
    "s2.7-scf.if-else",
    kernel(
        "    %c = arith.cmpi eq, %n, %n : index\n"
        "    scf.if %c {\n      %x = arith.addi %n, %n : index\n"
        "    } else {\n      %y = arith.subi %n, %n : index\n    }"
    ),
)
ok(
    "s2.7-scf.if-results",
    kernel(
        "    %r = scf.if %flag -> (index) {\n      scf.yield %n : index\n    } else {\n"
        "      %z = arith.addi %n, %n : index\n      scf.yield %z : index\n    }\n"
        "    %r2:2 = scf.if %flag -> (index, f32) {\n      scf.yield %n, %s : index, f32\n"
        "    } else {\n      scf.yield %r, %s : index, f32\n    }\n"
        "    %r3 = scf.if %flag -> index {\n      scf.yield %n : index\n    } else {\n"
        "      scf.yield %n : index\n    }\n"
        "    %u = arith.addf %r2#1, %s : f32"
    ),
)
ok(
    "s2.7-scf.if-nested-in-for",
    kernel(
        C + "    scf.for %i = %c0 to %n step %c1 {\n      %c = arith.cmpi slt, %i, %c16 : index\n"
        "      scf.if %c {\n        pto.barrier <PIPE_V>\n      } else {\n"
        "        pto.barrier <PIPE_ALL>\n      }\n    }"
    ),
)
ok(
    "s2.7-func-nonvoid",
    "module {\n  func.func @k(%a: index, %s: f32) -> (index, f32) {\n"
    "    return %a, %s : index, f32\n  }\n}\n",
)
ok(
    "s2.7-func-nonvoid-single",
    "module {\n  func.func @k(%a: index) -> index {\n    func.return %a : index\n  }\n}\n",
)
ok(
    "s2.7-multi-result-call",
    "module {\n  func.func private @two() -> (index, i32)\n"
    "  func.func @k() {\n    %r:2 = func.call @two() : () -> (index, i32)\n"
    "    %x = arith.index_cast %r#1 : i32 to index\n    %y = arith.addi %r#0, %x : index\n"
    "    return\n  }\n}\n",
)
ok(
    "s2.7-dynamic-shapes",
    kernel(
        C + f"    %tv = pto.make_tensor_view %p, shape = [%n, %n], strides = [%n, %c1] : {TV}\n"
        "    scf.for %i = %c0 to %n step %c16 {\n"
        "      %rem = arith.subi %n, %i : index\n"
        "      %vr = arith.minsi %rem, %c16 : index\n"
        f"      %pv = pto.partition_view %tv, offsets = [%i, %c0], sizes = [%vr, %c64] : {TV} -> "
        "!pto.partition_tensor_view<?x64xf32>\n"
        "      %t = pto.alloc_tile valid_row = %vr valid_col = %c64 : "
        "!pto.tile_buf<vec, 16x64xf32, valid=?x?>\n"
        "      pto.tload ins(%pv : !pto.partition_tensor_view<?x64xf32>) outs(%t : "
        "!pto.tile_buf<vec, 16x64xf32, valid=?x?>)\n"
        "      pto.set_validshape %t, %vr, %c64 : !pto.tile_buf<vec, 16x64xf32, valid=?x?>\n"
        "    }"
    ),
)
bad(
    "s2.7-scf.if-results-without-else",
    kernel("    %r = scf.if %flag -> (index) {\n      scf.yield %n : index\n    }"),
    "needs an else",
)


# === §2.8 other attributes (every kind of the table, inline and trailing) =================

_ATTRS = [
    "#pto.layout<nd>",
    "#pto.kernel_kind<vector>",
    "#pto.vmi<foo>",
    "#pto.address_space<vec>",
    "#pto<round_mode CAST_RINT>",
    "#pto.pipe<PIPE_ALL>",
    "#pto.sync_op_type<TMATMUL>",
    "#pto.acc_push_epilogue<layout = nz2nd, quant = deqf16_vec, relu = false>",
    "#pto<quant_type MXFP8>",
    "#pto<atomic_type atomic_none>",
    "#pto<cmp ge>",
    "#pto<mx_group_axis axis0>",
    "#pto.fence_scope<gm>",
    "#pto<div_precision high_precision>",
    "#pto<relu_pre_mode normal_relu>",
    "#pto<coalesce row>",
    "#pto<notify_op set>",
    "#pto.mask_pattern<P1111>",
    "#pto.sync_all_mode<soft>",
    "#pto.sync_core_type<aiv_only>",
    "#pto<acc_phase partial>",
    "#pto<wait_cmp ge>",
    "#pto.pipe_event_type<TLOAD>",
    "#pto.acc_to_vec_mode<dual_mode_split_m>",
    "#pto.event<EVENT_ID0>",
    "#pto<saturation_mode OFF>",
    "#pto<st_phase final>",
    "#pto<log_precision high_precision>",
    "#pto.func_core_type<AIV>",
    "#pto<reduce_op sum>",
    "#pto<gather_oob zero>",
    "#pto<precision_mode HIGH_PRECISION>",
    "#pto<exp_precision high_precision>",
    "#pto.tinsert_mode<split2>",
    "#pto<scatter_oob skip>",
    "#pto<print_format width10_precision6>",
    "#pto<pow_precision high_precision>",
    "#pto<quant_scale_alg nv>",
    "#pto<scatter_atomic_op add>",
    "#pto<vec_store_mode nz>",
    "#pto<sqrt_precision high_precision>",
    "#pto<scatter_conflict last>",
    "#pto<rsqrt_precision high_precision>",
    "#pto.tile_buf_config<blayout=1 : i32, slayout=1 : i32, s_fractal=512 : i32>",
    "#pto.l1cache<cache>",
    "#pto<fmod_precision high_precision>",
    "#pto<recip_precision high_precision>",
    "#pto<rem_precision high_precision>",
    "#pto.unknown_kind<a<b<c>>>",
    "#pto.nested<x = #pto.inner<y>>",
]
for _i, _a in enumerate(_ATTRS):
    _kind = _a[5:].split("<")[0].split(" ")[0].lstrip(".") or _a.split("<")[1].split(" ")[0]
    _base = VIEWS + tiles("a", "c")
    ok(
        f"s2.8-attr-{_i}-{_kind}",
        kernel(
            _base + f"    pto.trelu ins(%a {{x = {_a}}} : {TB}) outs(%c : {TB})\n"
            f"    pto.trelu ins(%a : {TB}) outs(%c : {TB}) {{x = {_a}}}\n"
            f"    pto.tstore ins(%a {{y = {_a}}} : {TB}) outs(%pv : {PV}) {{z = [{_a}, {_a}]}}",
            fattrs=f"w = {_a}",
        ),
    )
_DICTS = {
    "nested": '{a = [1, [2, 3], []], b = {c = "x", d = {}}, e = "s with \\" quote", f = @sym, '
    "g = 1.5 : f32, h = -3 : i64, i = #pto<cmp gt>, j = !pto.ptr<f32>, k = i32, "
    "l = [#pto.pipe<PIPE_V>], m = unit, n, o = true, p = false, q = 0x10 : i64, "
    'r = 1.00000000000000000e+20 : f32, s = -1.000000e+00, "t-key" = "v"}',
    "builtin-attrs": "{a = dense<[1, 2]> : tensor<2xi32>, b = array<i64: 1, 2>, "
    "c = affine_map<(d0) -> (d0)>, d = dense<1.0> : vector<4xf32>, "
    "e = strided<[1], offset: ?>, f = vector<2xbf16>, g = @a::@b}",
    "enum-values-odd": '{rmode = "RINT", cmpMode = #pto.cmp<lt>, rmode2 = ROUND}',
    "enum-value-spaces": '{rmode = "not an enum", cmpMode = 3}',
}
for _name, _d in _DICTS.items():
    ok(
        f"s2.8-dict-{_name}",
        kernel(
            tiles("a") + f"    pto.trelu ins(%a {_d} : {TB}) outs(%a : {TB})\n"
            f"    pto.tabs ins(%a : {TB}) outs(%a : {TB}) {_d}",
            fattrs=_d[1:-1],
        ),
    )


# === §2 lexical details (§2.4 "statements split over lines", §4.2 "comments") ============

ok(
    "s4.2-comments-everywhere",
    "// leading comment\n// another\nmodule { // after module\n"
    "  // before func\n  func.func @k(%n: index, // arg comment\n"
    "               %s: f32) // before attributes\n"
    "      attributes {pto.kernel_kind = #pto.kernel_kind<vector> // in dict\n      } {\n"
    "    %c = arith.constant 1 : index // trailing\n"
    '    // between statements with } and { and " and %x\n'
    "    scf.for %i = %c to %n step %c { // loop\n    } // end loop\n"
    "    return // ret\n  } // end func\n} // end module\n// trailing comment, no newline",
)
ok(
    "s4.2-crlf-and-tabs",
    "module {\r\n\tfunc.func @k(%n: index) {\r\n\t\t%c = arith.addi %n, %n"
    " : index\r\n\t\treturn\r\n\t}\r\n}\r\n",
)
ok("s4.2-bom", "\ufeffmodule {\n  func.func @k() {\n    return\n  }\n}\n")
ok(
    "s4.2-ssa-names",
    kernel(
        "    %normed_kv_inline69_inline1485__ssa_v4_view = arith.addi %n, %n : index\n"
        "    %0 = arith.constant 0 : index\n    %1 = arith.addi %0, %0 : index\n"
        "    %a.b$c-d = arith.addi %1, %0 : index\n"
        "    %__x = arith.addi %a.b$c-d, %0 : index"
    ),
)
ok(
    "s4.2-literals",
    kernel(
        "    %a = arith.constant 1.00000000000000000e+20 : f32\n"
        "    %b1 = arith.constant 0.000000e+00 : f32\n"
        "    %c = arith.constant -1.000000e+00 : f16\n"
        "    %d = arith.constant 2.5 : bf16\n"
        "    %e = arith.constant 1e5 : f32\n"
        "    %f = arith.constant 3.4028234663852886E+38 : f32\n"
        "    %g = arith.constant 0x7F800000 : f32\n"
        "    %h = arith.constant 0xFF800000 : f32\n"
        "    %j = arith.constant 0x7C00 : f16\n"
        "    %k2 = arith.constant 0xFF80 : bf16\n"
        "    %l = arith.constant 0x7FF0000000000000 : f64\n"
        "    %m = arith.constant true\n    %o = arith.constant false\n"
        "    %t = arith.constant true : i1\n"
        "    %u = arith.constant -2147483648 : i32\n"
        "    %v = arith.constant 18446744073709551615 : i64\n"
        "    %w = arith.constant 0x10 : index\n"
        "    %x = arith.constant 4 : i8\n    %y = arith.constant 1 : f32"
    ),
)
ok(
    "s4.2-type-aliases",
    f"!T = {TB}\n!V = {PV}\n!TV = {TV}\n!P = !pto.ptr<f32>\n"
    + kernel(
        C + "    %tv = pto.make_tensor_view %p, shape = [%c16, %c64], strides = [%c64, %c1] : !TV\n"
        "    %pv = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c16, %c64] : !TV -> !V\n"
        "    %a = pto.alloc_tile : !T\n    pto.tload ins(%pv : !V) outs(%a : !T)",
        args="%p: !P, %n: index",
    ),
)


# === more forms of §2.4–§2.8 (as MLIR / ptoas print them) and §3 ops out of scope ======

ok(
    "s2.7-attrs-after-regions",
    kernel(
        C + "    scf.for %i = %c0 to %n step %c1 {\n    } {pto.unroll = 2 : i64}\n"
        "    scf.if %flag {\n    } else {\n    } {hint}\n"
        "    scf.if %flag {\n    } {hint}\n"
        '    pto.section.vector {\n    } {pto.note = "x"}'
    ),
)
ok(
    "s2.6-func-empty-results-and-dicts",
    "module attributes {} {\n"
    "  func.func private @f() -> ()\n"
    "  func.func @k() -> () attributes {} {\n    func.call @f() : () -> ()\n    return\n  }\n}\n",
)
ok("s2.6-quoted-unit-key", kernel(fattrs='"pto.entry", "pto-x" = 1'))
ok(
    "s2.6-public-declaration-with-results",
    "module {\n  func.func @two() -> (index, i32)\n"
    "  func.func @k() {\n    %r:2 = func.call @two() : () -> (index, i32)\n    return\n  }\n}\n",
)
ok("s2.6-empty-body", "module {\n  func.func @k() {\n  }\n}\n")
ok(
    "s4.2-mlir-printed-names",
    kernel(
        "    %c-1_i32 = arith.constant -1 : i32\n    %c0_i64 = arith.constant 0 : i64\n"
        "    %cst = arith.constant 1.000000e+00 : f32\n    %cst_0 = arith.constant -3.40282347E+38 : f32\n"
        "    %true = arith.constant true\n    %0 = arith.addi %c-1_i32, %c-1_i32 : i32\n"
        "    %1:2 = scf.if %true -> (f32, i32) {\n      scf.yield %cst, %0 : f32, i32\n"
        "    } else {\n      scf.yield %cst_0, %c-1_i32 : f32, i32\n    }\n"
        "    %2 = arith.addf %1#0, %cst : f32"
    ),
)
ok(
    "s2.8-attribute-aliases",
    "#map = affine_map<(d0, d1) -> (d0 * 64 + d1)>\n"
    "#rm = #pto<round_mode RINT>\n#ly = #pto.layout<dn>\n"
    + kernel(
        tiles("a")
        + tiles("h", t=TBH)
        + f"    pto.tcvt ins(%a {{rmode = #rm}} : {TB}) outs(%h : {TBH}) {{m = #map}}\n"
        f"    %tv = pto.make_tensor_view %p, shape = [%n, %n], strides = [%n, %n] {{layout = #ly}} : {TV}"
    ),
)
ok("s2.8-string-escapes", kernel(fattrs=r'a = "q\"b\\s\n\t\22\7F", b = "ünï", c = "C:\\dir"'))
ok(
    "s2.8-keyword-keys",
    kernel(
        tiles("a") + f"    pto.trelu ins(%a {{ins = 1, outs = 2, to = 3, step = 4, "
        f"valid = 5, shape = 6, sizes = 7, true = 8, module = 9, "
        f"attributes = 10, else = 11, loc = 12}} : {TB}) outs(%a : {TB})"
    ),
)
ok(
    "s2.5-sync-with-attribute-dicts",
    kernel(
        "    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>] {note = 1}\n"
        "    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>] {}\n"
        "    pto.barrier <PIPE_V> {note}\n    pto.barrier_sync[<TVEC>] {note}"
    ),
)
ok(
    "s2.5-barrier_sync-attr",
    kernel(
        "    pto.barrier_sync [#pto.pipe_event_type<TVEC>]\n"
        "    pto.barrier_sync[#pto.sync_op_type<TMATMUL>]"
    ),
)
ok(
    "s4.2-comments-inside-attributes-and-types",
    "module {\n"
    '  func.func @k() attributes {a = [1, // one\n      2, "x//y"], b = #pto.acc_push_epilogue<'
    "layout = nz2nd, // layout\n      quant = no_convert>} {\n"
    "    %a = pto.alloc_tile : !pto.tile_buf<loc=vec, // where\n"
    "        dtype=f32, rows=16, cols=64, // capacity\n"
    "        v_row=16, v_col=64, blayout=row_major, slayout=none_box, fractal=512, pad=0>\n"
    "    return\n  }\n}\n",
)
ok(
    "s2.8-strings-and-comments-inside-attribute-brackets",
    kernel(
        fattrs=(
            '"pto..entry", b = #pto.x<a = "x//y>", // c>\n      q = 1>, '
            'd = #pto.z<(d0) -> (d0), e = "->">'
        )
    ),
)
ok(
    "s2.6-visibility",
    "module {\n  func.func public @k() {\n    return\n  }\n"
    "  func.func nested @j() {\n    return\n  }\n}\n",
)
_OUT_OF_SCOPE_OPS = {
    "pointer_cast": "    %t = pto.pointer_cast(%n) : index -> !pto.tile_buf<vec, 16x64xf32>",
    "store_dps": "    pto.store_dps ins(%n : index) outs(%p : !pto.ptr<f32>)",
    "declare_tile": "    %t = pto.declare_tile -> !pto.tile_buf<vec, 16x64xf32>",
    "build_async_session": "    pto.build_async_session ins(%p : !pto.ptr<f32>) outs(%q : !pto.ptr<f32>)",
    "tput_async": "    %e = pto.tput_async ins(%p : !pto.ptr<f32>) outs(%q : !pto.ptr<f32>) -> !pto.async_event",
    "castptr": "    %v = pto.castptr %p : !pto.ptr<f32> -> !pto.ptr<f32, ub>",
    "simt_launch": "    pto.simt_launch @f(%n) : (index) -> ()",
    "vmi.vadd": "    %v = pto.vmi.vadd %n, %n : index",
    "vecscope": "    pto.vecscope {\n    }",
    "section.simt": "    pto.section.simt {\n    }",
    "mte_gm_ub": "    pto.mte_gm_ub %p, %q, %n : !pto.ptr<f32>, !pto.ptr<f32, ub>, index",
    "tprint": "    pto.tprint ins(%n : index)",
    "tile_buf_addr": "    %a = pto.tile_buf_addr %n : index -> i64",
    "tmatmul.mx": "    pto.tmatmul.mx ins(%n : index) outs(%n : index)",
    "thistogram": "    pto.thistogram ins(%n {exhausted = false} : index) outs(%n : index)",
}
for _name, _body in _OUT_OF_SCOPE_OPS.items():
    bad(f"s3-out-of-scope-op-{_name}", kernel(_body), f"unsupported op 'pto.{_name}'")


def test_s2_8_strings_with_control_characters_round_trip():
    a = Tile("a", TileType("vec", "f32", 16, 64))
    attrs = {"s": 'tab\tnl\nctl\x01quote"back\\slash \u00fcn\u00ef', "C:\\x": "\\22"}
    p = Program((Function("k", (), (Alloc(a), Instr("TRELU", (a,), (a,), attrs))),), "k")
    assert accepts(print_program(p)) == p


# === every pto op with a known opcode: inline / trailing / both attribute dicts ===========

_OPCODE_FORMS = {
    "inline": "    {name} ins(%a, %s {{k = 1, e = #pto<cmp gt>}} : {TB}, f32) outs(%c : {TB})",
    "trailing": "    {name} ins(%a, %s : {TB}, f32) outs(%c : {TB}) {{k = 1, e = #pto<cmp gt>}}",
    "both": "    {name} ins(%a, %s {{k = 1}} : {TB}, f32) outs(%c : {TB}) {{e = #pto<cmp gt>}}",
    "split": "    {name}\n      ins(%a, %s {{k = 1}} :\n          {TB}, f32)\n      outs(%c :\n"
    '          {TB})\n      {{e = #pto<round_mode RINT>, f = "x"}}',
    "none": "    {name} ins(%a : {TB}) outs(%c : {TB})",
}


@pytest.mark.parametrize("form", list(_OPCODE_FORMS))
@pytest.mark.parametrize("opcode", sorted(OPCODES))
def test_every_opcode_accepts_inline_and_trailing_attribute_dicts(opcode, form):
    name = OPCODES[opcode].ir_name
    p = accepts(kernel(tiles("a", "c") + _OPCODE_FORMS[form].format(name=name, TB=TB)))
    st = p.main.body[-1]
    assert isinstance(st, Instr) and st.opcode == opcode
    if form != "none":
        assert st.attr("k") == 1 or form == "split"


# === the tests =============================================================================


@pytest.mark.parametrize("text", OK)
def test_accepted_and_round_trips(text):
    accepts(text)


@pytest.mark.parametrize("text, what", BAD)
def test_rejected_with_a_clean_error(text, what):
    rejects(text, what)


def test_sync_spellings_build_the_same_statements():
    want = (SetFlag("PIPE_MTE2", "PIPE_V", 0), WaitFlag("PIPE_MTE2", "PIPE_V", 0))
    for sp in _FLAG_SPELLINGS.values():
        body = parse_text(kernel(f"    pto.set_flag{sp}\n    pto.wait_flag{sp}")).main.body
        assert body == want
    body = parse_text(
        kernel("    pto.barrier_sync [<TMATMUL>]\n    pto.barrier #pto.pipe<PIPE_FIX>")
    ).main.body
    assert body == (Barrier("PIPE_M"), Barrier("PIPE_FIX"))


def test_nan_literals_print_back_unchanged():
    # Const(nan) != Const(nan) (float equality), so compare the printed text instead
    text = kernel("    %i = arith.constant 0x7FC00000 : f32\n    %j = arith.constant 0x7E00 : f16")
    printed = print_program(parse_text(text))
    assert "0x7FC00000 : f32" in printed and "0x7E00 : f16" in printed
    assert print_program(parse_text(printed)) == printed


@pytest.mark.parametrize(
    "spelling, key, value",
    [
        ("{rmode = #pto<round_mode ROUND>}", "rmode", "ROUND"),
        ("{rmode = #pto.round_mode<ROUND>}", "rmode", "ROUND"),
        ('{rmode = "ROUND"}', "rmode", "ROUND"),
        ("{cmpMode = #pto<cmp lt>}", "cmpMode", "lt"),
        ("{cmpMode = #pto.cmp<lt>}", "cmpMode", "lt"),
    ],
)
def test_s2_8_enum_attributes_in_both_spellings_normalise(spelling, key, value):
    for body in (
        f"    pto.tcvt ins(%a {spelling} : {TB}) outs(%a : {TB})",
        f"    pto.tcvt ins(%a : {TB}) outs(%a : {TB}) {spelling}",
    ):
        st = accepts(kernel(tiles("a") + body)).main.body[-1]
        assert st.attr(key) == value


def test_unknown_attributes_are_kept_verbatim():
    p = accepts(
        kernel(
            tiles("a") + f"    pto.trelu ins(%a : {TB}) outs(%a : {TB}) "
            "{x = #pto.unknown_kind<a<b<c>>>, y = dense<[1, 2]> : tensor<2xi32>}"
        )
    )
    st = p.main.body[-1]
    assert st.attr("x") == RawAttr("#pto.unknown_kind<a<b<c>>>")
    assert st.attr("y") == RawAttr("dense<[1, 2]> : tensor<2xi32>")


def test_location_trailers_are_ignored():
    with_loc = OK[[p.id for p in OK].index("s2.4-loc-trailers")].values[0]
    stripped = (
        "module {\n  func.func @k(%n: index) {\n    %c1 = arith.constant 1 : index\n"
        "    %r = arith.addi %n, %c1 : index\n"
        f"    %t = pto.alloc_tile : {TB}\n    pto.trelu ins(%t : {TB}) outs(%t : {TB})\n"
        "    return\n  }\n}\n"
    )
    assert parse_text(with_loc) == parse_text(stripped)


def test_unknown_but_well_formed_type_parameters_never_crash():
    # every outcome is a program or a ParseError: never another exception
    params = [
        "f32",
        "f32, gm",
        "f32, weird_space",
        "f32, gm, extra",
        "x=1",
        "?xf32",
        "16x64xf32, #pto.layout<nd>",
        "vec, 16x64xf32, newkey=3",
        "vec, 16x64xf32, valid=?",
        "vec, 16x64xf32, valid=16",
        "vec, 16x64xf32, blayout=diagonal",
        "vec, ?x64xf32",
        "vec, 16x64xf32, pad=9",
        "vec, 16x64xf32, fractal=abc",
        "vec, 16x64xf32, valid=1x2x3",
        "loc=vec, dtype=f32, rows=16, cols=64, v_row=??",
        "loc=vec, dtype=!pto.ptr<f32>",
        "vec, 16x64x!pto.tile_buf<vec, 16x64xf32>",
        "vec, 16x64xf32, valid=?x?, valid=?x?",
        "loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_row=16",
        "",
        "<>",
        "1",
        "a b c",
        "vec, 16x64xf32, slayout=row_major",
        "vec, 16x64xf32, compact=7",
    ]
    for kind in ["ptr", "tensor_view", "partition_tensor_view", "tile_buf", "mystery"]:
        for prm in params:
            for text in (
                kernel("", f"%a: !pto.{kind}<{prm}>"),
                kernel(f"    %a = pto.alloc_tile : !pto.{kind}<{prm}>"),
            ):
                try:
                    accepts(text)
                except ParseError:
                    pass
