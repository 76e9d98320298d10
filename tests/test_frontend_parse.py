"""The PTO IR parser: every construct of pto-ir-in-the-wild.md §4.2 in a small snippet,
the IR it builds, and the diagnostics (FILE:LINE:COL, source line, caret) for mistakes
and for constructs out of scope."""

from __future__ import annotations

import ast
import itertools
import random
from pathlib import Path

import pytest

from sim.base.errors import UserError
from sim.frontend import ParseError, parse_text, print_program, target_from_attrs
from sim.frontend.syntax import ENDPOINT_PIPE
from sim.isa.dtypes import dtype
from sim.isa.program import (
    Alloc,
    Arith,
    Barrier,
    Call,
    Const,
    For,
    GmPtr,
    If,
    Instr,
    MakeTensorView,
    PartitionView,
    PartView,
    PipeOp,
    RawAttr,
    Return,
    Scalar,
    ScalarOp,
    Section,
    SetFlag,
    SetValidShape,
    SourceLoc,
    Subview,
    TensorView,
    WaitFlag,
    Yield,
)
from sim.isa.tile import BLayout, Loc, Pad, SLayout, Tile, TileType

ROOT = Path(__file__).resolve().parent.parent

TB = "!pto.tile_buf<vec, 16x64xf32>"
KV = (
    "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, "
    "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
)
PV = "!pto.partition_tensor_view<16x64xf32>"
TV = "!pto.tensor_view<?x?xf32>"
ARGS = "%p: !pto.ptr<f32>, %q: !pto.ptr<f32>, %n: index, %s: f32"


def kernel(body: str, args: str = ARGS, attrs: str = "", module: str = "module") -> str:
    fa = f" attributes {{{attrs}}}" if attrs else ""
    return f"{module} {{\n  func.func @k({args}){fa} {{\n{body}\n    return\n  }}\n}}\n"


def body_of(text: str, args: str = ARGS):
    return parse_text(kernel(text, args), "t.pto").main.body


def error(text: str, filename: str = "t.pto") -> ParseError:
    with pytest.raises(ParseError) as e:
        parse_text(text, filename)
    return e.value


def tile(name="a", t=TB):
    return f"    %{name} = pto.alloc_tile : {t}\n"


VIEWS = (
    "    %c0 = arith.constant 0 : index\n"
    "    %c1 = arith.constant 1 : index\n"
    "    %c16 = arith.constant 16 : index\n"
    "    %c64 = arith.constant 64 : index\n"
    f"    %tv = pto.make_tensor_view %p, shape = [%c16, %c64], strides = [%c64, %c1] : {TV}\n"
    f"    %pv = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c16, %c64] : {TV} -> {PV}\n"
)


# --- the MLIR skeleton ----------------------------------------------------------------------


def test_module_function_and_arguments():
    text = kernel("", attrs="pto.kernel_kind = #pto.kernel_kind<vector>")
    p = parse_text(text, "t.pto")
    f = p.main
    assert p.entry == "k" and f.name == "k" and not f.private
    assert f.args == (
        GmPtr("p", "f32"),
        GmPtr("q", "f32"),
        Scalar("n", "index"),
        Scalar("s", "f32"),
    )
    assert f.attrs == (("pto.kernel_kind", RawAttr("#pto.kernel_kind<vector>")),)
    assert f.body == ()  # the bare trailing return is implicit


def test_module_attributes_and_forms_of_the_module():
    p = parse_text(
        'module attributes {pto.target_arch = "a5", "pto.device-spec" = "Ascend950"} {\n'
        "  func.func @k() {\n    return\n  }\n}",
        "t.pto",
    )
    assert dict(p.attrs) == {"pto.target_arch": "a5", "pto.device-spec": "Ascend950"}
    assert parse_text("module @m {\n func.func @k() { return }\n}").main.name == "k"
    # no module wrapper at all (39 files in the census)
    assert parse_text("func.func @k() {\n  return\n}\n").main.name == "k"


def test_comments_and_statements_over_several_lines():
    body = (
        VIEWS + tile("a") + "    // a comment line\n"
        "    pto.tload   // trailing comment\n"
        f"      ins(%pv\n        : {PV})\n"
        f"      outs(\n        %a\n        : {TB}\n      )\n"
    )
    st = body_of(body)[-1]
    assert isinstance(st, Instr) and st.opcode == "TLOAD"
    assert st.loc == SourceLoc("t.pto", 11, 5)


def test_ssa_names_and_literals():
    body = (
        "    %normed_kv_inline69_inline1485__ssa_v4_view = arith.constant 1.00000000000000000e+20 : f32\n"
        "    %0 = arith.constant 0.000000e+00 : f32\n"
        "    %t = arith.constant true\n"
        "    %f = arith.constant false\n"
        "    %neg = arith.constant -7 : i32\n"
        "    %h = arith.constant 0x7F800000 : f32\n"
        "    %big = arith.constant 65536 : i64\n"
    )
    b = body_of(body)
    vals = [st.operands[0] for st in b]
    assert vals[0] == Const(1e20, "f32") and isinstance(vals[0].value, float)
    assert vals[1] == Const(0.0, "f32")
    assert vals[2] == Const(True, "i1") and vals[3] == Const(False, "i1")
    assert vals[4] == Const(-7, "i32")
    assert vals[5].value == float("inf")
    assert b[0].result == Scalar("normed_kv_inline69_inline1485__ssa_v4_view", "f32")


def test_private_functions_and_calls():
    text = (
        "module {\n"
        "  func.func private @decl(!pto.ptr<f32>, index) -> i32\n"
        "  func.func private @helper(%x: index, %y: index) -> index {\n"
        "    %z = arith.addi %x, %y : index\n"
        "    return %z : index\n"
        "  }\n"
        "  func.func @main(%n: index) {\n"
        "    %r = func.call @helper(%n, %n) : (index, index) -> index\n"
        "    call @helper(%r, %n) : (index, index) -> index\n"
        "    return\n"
        "  }\n"
        "}\n"
    )
    p = parse_text(text)
    assert p.entry == "main"
    decl, helper, main = p.functions
    assert decl.private and decl.body == () and decl.result_types == ("i32",)
    assert [a.name for a in decl.args] == ["arg0", "arg1"]
    assert helper.private and helper.result_types == ("index",)
    assert helper.body[-1] == Return((Scalar("z", "index"),))
    c1, c2 = main.body
    assert c1 == Call("helper", (Scalar("n"), Scalar("n")), (Scalar("r"),))
    assert c2 == Call("helper", (Scalar("r"), Scalar("n")), ())


def test_entry_attribute_selects_the_kernel():
    text = (
        "module {\n func.func @a() { return }\n func.func @b() attributes {pto.entry} { return }\n}"
    )
    p = parse_text(text)
    assert p.entry == "b"
    assert dict(p.function("b").attrs)["pto.entry"] == RawAttr("unit")


def test_type_aliases():
    text = f"!T = {TB}\n!V = {PV}\n" + kernel(
        VIEWS + "    %a = pto.alloc_tile : !T\n    pto.tload ins(%pv : !V) outs(%a : !T)\n"
    )
    st = parse_text(text).main.body[-1]
    assert st.outs[0].type == TileType("vec", "f32", 16, 64)


# --- arith ---------------------------------------------------------------------------------

ARITH_BINARY = [
    "muli",
    "addi",
    "subi",
    "divsi",
    "remsi",
    "ceildivsi",
    "maxsi",
    "minsi",
    "minui",
    "ori",
    "remui",
    "andi",
    "xori",
    "divui",
    "floordivsi",
    "shli",
    "shrsi",
]


@pytest.mark.parametrize("op", ARITH_BINARY)
def test_arith_integer_binary_ops(op):
    st = body_of(f"    %r = arith.{op} %n, %n : index")[0]
    assert st == Arith(Scalar("r", "index"), f"arith.{op}", (Scalar("n"), Scalar("n")))


@pytest.mark.parametrize("op", ["addf", "subf", "mulf", "divf", "maximumf", "minimumf"])
def test_arith_float_binary_ops(op):
    st = body_of(f"    %r = arith.{op} %s, %s : f32")[0]
    assert st == Arith(Scalar("r", "f32"), f"arith.{op}", (Scalar("s", "f32"), Scalar("s", "f32")))


def test_arith_compare_select_and_casts():
    body = (
        "    %c = arith.cmpi slt, %n, %n : index\n"
        "    %f = arith.cmpf olt, %s, %s : f32\n"
        "    %m = arith.select %c, %n, %n : index\n"
        "    %i = arith.index_cast %n : index to i32\n"
        "    %t = arith.trunci %i : i32 to i16\n"
        "    %x = arith.sitofp %i : i32 to f32\n"
        "    %y = arith.fptosi %s : f32 to i32\n"
        "    %b = arith.bitcast %s : f32 to i32\n"
        "    %e = arith.extsi %t : i16 to i64\n"
        "    %u = arith.index_castui %e : i64 to index\n"
        "    %g = arith.negf %s : f32\n"
        "    %w = arith.addi %n, %n overflow<nsw> : index\n"
    )
    b = body_of(body)
    assert b[0] == Arith(
        Scalar("c", "i1"), "arith.cmpi", (Scalar("n"), Scalar("n")), {"predicate": "slt"}
    )
    assert b[1].attr if False else dict(b[1].attrs) == {"predicate": "olt"}
    assert b[2].result == Scalar("m", "index") and b[2].operands[0] == Scalar("c", "i1")
    assert b[3] == Arith(Scalar("i", "i32"), "arith.index_cast", (Scalar("n"),))
    assert [st.result.type for st in b[4:11]] == ["i16", "f32", "i32", "i32", "i64", "index", "f32"]
    assert dict(b[11].attrs) == {"flags": RawAttr("overflow<nsw>")}


def test_arith_unsupported_op_and_wrong_forms():
    assert "unsupported op 'arith.frobnicate'" in str(
        error(kernel("    %r = arith.frobnicate %n : index"))
    )
    assert "takes 2 operands" in str(error(kernel("    %r = arith.addi %n : index")))
    assert "needs ': T1 to T2'" in str(error(kernel("    %r = arith.index_cast %n : index")))
    assert "unknown predicate 'less'" in str(
        error(kernel("    %r = arith.cmpi less, %n, %n : index"))
    )


# --- scf ------------------------------------------------------------------------------------


def test_scf_for_plain_and_with_iter_args():
    body = (
        "    %c0 = arith.constant 0 : index\n"
        "    %c1 = arith.constant 1 : index\n"
        "    scf.for %i = %c0 to %n step %c1 {\n"
        "      %j = arith.addi %i, %c1 : index\n"
        "    }\n"
        "    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0, %b = %s) -> (index, f32) {\n"
        "      %a2 = arith.addi %a, %i : index\n"
        "      scf.yield %a2, %b : index, f32\n"
        "    }\n"
        "    %k = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0) -> index {\n"
        "      scf.yield %a : index\n"
        "    }\n"
        "    %z = arith.addi %r#0, %k : index\n"
    )
    b = body_of(body)
    loop = b[2]
    assert isinstance(loop, For) and loop.iv == Scalar("i") and loop.upper == Scalar("n")
    assert loop.body == (Arith(Scalar("j"), "arith.addi", (Scalar("i"), Scalar("c1"))),)
    assert loop.iter_args == () and loop.results == ()
    carried = b[3]
    assert carried.iter_args == (Scalar("a"), Scalar("b", "f32"))
    assert carried.inits == (Scalar("c0"), Scalar("s", "f32"))
    assert carried.results == (Scalar("r#0"), Scalar("r#1", "f32"))
    assert carried.body[-1] == Yield((Scalar("a2"), Scalar("b", "f32")))
    assert b[4].results == (Scalar("k"),)
    assert b[5].operands == (Scalar("r#0"), Scalar("k"))


def test_scf_for_with_an_integer_induction_type():
    body = (
        "    %c0 = arith.constant 0 : i32\n    %c4 = arith.constant 4 : i32\n"
        "    %c1 = arith.constant 1 : i32\n"
        "    scf.for %i = %c0 to %c4 step %c1 : i32 {\n    }\n"
    )
    assert body_of(body)[-1].iv == Scalar("i", "i32")


def test_scf_if_else_with_and_without_results():
    body = (
        "    %c = arith.cmpi eq, %n, %n : index\n"
        "    scf.if %c {\n"
        "      %x = arith.addi %n, %n : index\n"
        "    }\n"
        "    scf.if %c {\n    } else {\n      %y = arith.addi %n, %n : index\n    }\n"
        "    %r = scf.if %c -> (f32) {\n"
        "      scf.yield %s : f32\n"
        "    } else {\n"
        "      %t = arith.negf %s : f32\n"
        "      scf.yield %t : f32\n"
        "    }\n"
    )
    b = body_of(body)
    assert isinstance(b[1], If) and b[1].else_body == () and len(b[1].then_body) == 1
    assert b[2].then_body == () and len(b[2].else_body) == 1
    assert b[3].results == (Scalar("r", "f32"),)
    assert b[3].then_body == (Yield((Scalar("s", "f32"),)),)
    # names defined in a branch are not visible after it
    assert "undefined value '%x'" in str(
        error(kernel(body + "    %u = arith.addi %x, %n : index\n"))
    )


def test_scf_yield_must_match_the_region():
    bad = (
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        "    %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0) -> (index) {\n"
        "      scf.yield %s : f32\n    }\n"
    )
    assert "type mismatch" in str(error(kernel(bad)))
    missing = bad.replace("      scf.yield %s : f32\n", "")
    assert "must end with scf.yield" in str(error(kernel(missing)))
    assert "outside scf.for" in str(error(kernel("    scf.yield\n")))


# --- types ---------------------------------------------------------------------------------

KV_ITEMS = [
    "loc=vec",
    "dtype=f32",
    "rows=16",
    "cols=64",
    "v_row=16",
    "v_col=64",
    "blayout=row_major",
    "slayout=none_box",
    "fractal=512",
    "pad=0",
]


def _alloc_type(t: str) -> TileType:
    return body_of(f"    %a = pto.alloc_tile : {t}")[0].tile.type


def test_tile_buf_key_value_form_in_any_key_order():
    want = TileType("vec", "f32", 16, 64)
    assert _alloc_type(KV) == want
    orders = list(itertools.permutations(KV_ITEMS))
    for items in random.Random(4).sample(orders, 40):
        assert _alloc_type(f"!pto.tile_buf<{', '.join(items)}>") == want
    # the out-of-order sample of the census, with valid= inside the kv form
    assert _alloc_type(
        "!pto.tile_buf<loc=mat, dtype=f16, rows=64, cols=64, blayout=col_major, "
        "valid=32x32, slayout=row_major, fractal=512, pad=0>"
    ) == TileType("mat", "f16", 64, 64, 32, 32, "col_major", "row_major")


def test_tile_buf_compact_form_and_defaults():
    assert _alloc_type("!pto.tile_buf<vec, 16x64xf32>") == _alloc_type(KV)
    t = _alloc_type(
        "!pto.tile_buf<acc, 64x64xf32, blayout=col_major, slayout=row_major, fractal=1024>"
    )
    assert (t.loc, t.blayout, t.slayout, t.fractal) == (
        Loc.ACC,
        BLayout.COL_MAJOR,
        SLayout.ROW_MAJOR,
        1024,
    )
    opts = ["valid=?x?", "pad=1", "compact=1", "blayout=row_major"]
    for items in itertools.permutations(opts):
        t = _alloc_type(f"!pto.tile_buf<vec, 16x128xf16, {', '.join(items)}>")
        assert (t.valid_rows, t.valid_cols, t.pad, t.compact) == (None, None, Pad.ZERO, 1)


def test_tile_buf_dynamic_valid_compact_key_and_dtypes():
    t = _alloc_type(
        "!pto.tile_buf<loc=vec, dtype=f16, rows=32, cols=128, v_row=?, v_col=?, "
        "blayout=row_major, slayout=none_box, fractal=512, pad=1, compact=2>"
    )
    assert t.is_dynamic and t.compact == 2 and t.pad is Pad.ZERO
    t = _alloc_type("!pto.tile_buf<vec, 16x64xf16, valid=8x?>")
    assert (t.valid_rows, t.valid_cols) == (8, None)
    for ir, name in (("bf16", "bf16"), ("ui8", "u8"), ("i32", "i32"), ("f8E4M3FN", "f8e4m3")):
        assert _alloc_type(f"!pto.tile_buf<vec, 16x64x{ir}>").dtype == dtype(name)
    assert _alloc_type("!pto.tile_buf<loc=ub, dtype=f32, rows=16, cols=64>").loc is Loc.VEC


def test_pointer_and_view_types():
    args = (
        "%a: !pto.ptr<f16>, %b: !pto.ptr<f32, gm>, %t1: !pto.tensor_view<1024xf32>, "
        "%t5: !pto.tensor_view<1x1x1x32x64xf16>, %td: !pto.tensor_view<?x?x?x?xf32>, "
        "%pv: !pto.partition_tensor_view<?x64xf32>"
    )
    f = parse_text(kernel("", args)).main
    assert f.args[0] == GmPtr("a", "f16") and f.args[1] == GmPtr("b", "f32")
    assert f.args[2] == TensorView("t1", "f32", (1024,))
    assert f.args[3] == TensorView("t5", "f16", (1, 1, 1, 32, 64))
    assert f.args[4] == TensorView("td", "f32", (None,) * 4)
    assert f.args[5] == PartView("pv", "f32", (None, 64))


# --- DPS ops --------------------------------------------------------------------------------


def test_dps_ops_build_instructions_with_one_tile_object_per_alloc():
    body = (
        VIEWS
        + tile("a")
        + tile("b")
        + tile("c")
        + f"    pto.tload ins(%pv : {PV}) outs(%a : {TB})\n"
        f"    pto.tadd ins(%a, %b : {TB}, {TB}) outs(%c : {TB})\n"
        f"    pto.tstore ins(%c : {TB}) outs(%pv : {PV})\n"
    )
    b = body_of(body)
    alloc_a, load, add, store = b[6], b[9], b[10], b[11]
    assert isinstance(alloc_a, Alloc) and alloc_a.tile == Tile("a", TileType("vec", "f32", 16, 64))
    assert load == Instr("TLOAD", (alloc_a.tile,), (PartView("pv", "f32", (16, 64)),))
    assert load.outs[0] is alloc_a.tile and add.ins[0] is alloc_a.tile
    assert add.opcode == "TADD" and store.opcode == "TSTORE"
    assert isinstance(b[4], MakeTensorView) and isinstance(b[5], PartitionView)


def test_dps_scalar_operands_both_orders_and_literals():
    body = (
        tile("a") + tile("c") + "    %three = arith.constant 3.0 : f32\n"
        f"    pto.tdivs ins(%a, %three : {TB}, f32) outs(%c : {TB})\n"
        f"    pto.tdivs ins(%s, %a : f32, {TB}) outs(%c : {TB})\n"
        f"    pto.tadds ins(%a, 2.5 : {TB}, f32) outs(%c : {TB})\n"
    )
    b = body_of(body)
    assert b[3].ins[1] == Scalar("three", "f32")
    assert b[4].ins[0] == Scalar("s", "f32") and isinstance(b[4].ins[1], Tile)
    assert b[5].ins[1] == Const(2.5, "f32")


def test_dps_attributes_inline_and_trailing_are_normalised():
    t16 = "!pto.tile_buf<vec, 16x64xf16>"
    m8 = "!pto.tile_buf<vec, 16x64xui8>"
    body = (
        tile("a")
        + tile("b")
        + tile("h", t16)
        + tile("m", m8)
        + f"    pto.tcvt ins(%a {{rmode = #pto<round_mode RINT>}} : {TB}) outs(%h : {t16})\n"
        f"    pto.tcmp ins(%a, %b {{cmpMode = #pto<cmp lt>}} : {TB}, {TB}) outs(%m : {m8})\n"
        f"    pto.tcolsum ins(%a : {TB}) outs(%b : {TB}) {{isBinary = true, depth = 3, "
        f'scale = 0.5, note = "x", mode = #pto<st_phase final>, arr = [1, 2], t = 1 : i32, u}}\n'
    )
    cvt, cmp, colsum = body_of(body)[4:]
    assert cvt.attr("rmode") == "RINT" and cmp.attr("cmpMode") == "lt"
    assert dict(colsum.attrs) == {
        "isBinary": True,
        "depth": 3,
        "scale": 0.5,
        "note": "x",
        "mode": RawAttr("#pto<st_phase final>"),
        "arr": RawAttr("[1, 2]"),
        "t": RawAttr("1 : i32"),
        "u": RawAttr("unit"),
    }


def test_dotted_op_names_map_to_opcodes():
    L = "!pto.tile_buf<left, 16x16xf16, slayout=row_major>"
    R = "!pto.tile_buf<right, 16x16xf16, slayout=col_major>"
    A = "!pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>"
    body = (
        tile("l", L)
        + tile("r", R)
        + tile("c", A)
        + f"    pto.tmatmul ins(%l, %r : {L}, {R}) outs(%c : {A})\n"
        f"    pto.tmatmul.acc ins(%c, %l, %r : {A}, {L}, {R}) outs(%c : {A})\n"
    )
    assert [st.opcode for st in body_of(body)[3:]] == ["TMATMUL", "TMATMUL_ACC"]


# --- custom PTO ops -----------------------------------------------------------------------------


def test_alloc_tile_forms():
    dyn = "!pto.tile_buf<vec, 32x128xf16, valid=?x?>"
    body = (
        "    %addr = arith.constant 65536 : i64\n"
        f"    %a = pto.alloc_tile : {TB}\n"
        f"    %b = pto.alloc_tile addr = %addr : {TB}\n"
        f"    %c = pto.alloc_tile valid_row = %n valid_col = %n : {dyn}\n"
        f"    %d = pto.alloc_tile addr = %addr valid_row = %n valid_col = %n : {dyn}\n"
        f"    pto.set_validshape %d, %n, %n : {dyn}\n"
    )
    b = body_of(body)
    assert b[1].addr is None and b[1].valid_row is None
    assert b[2].addr == Scalar("addr", "i64")
    assert (b[3].valid_row, b[3].valid_col) == (Scalar("n"), Scalar("n"))
    assert b[4].addr == Scalar("addr", "i64") and b[4].valid_col == Scalar("n")
    assert b[5] == SetValidShape(b[4].tile, Scalar("n"), Scalar("n"))


def test_make_tensor_view_comma_optional_and_layout():
    body = (
        "    %c1 = arith.constant 1 : index\n"
        f"    %t = pto.make_tensor_view %p, shape = [%n, %n], strides = [%n, %c1] {{layout = #pto.layout<dn>}} : {TV}\n"
        f"    %u = pto.make_tensor_view %p, shape = [%n, %n] strides = [%n, %c1] : {TV}\n"
    )
    b = body_of(body)
    assert b[1].layout == "dn" and b[2].layout == "nd"
    assert b[1].shape == (Scalar("n"), Scalar("n")) and b[2].strides == (Scalar("n"), Scalar("c1"))


def test_subview_subset_and_scalar_ops():
    big = "!pto.tile_buf<vec, 32x64xf32>"
    body = (
        tile("t", big) + "    %c0 = arith.constant 0 : index\n"
        f"    %sv = pto.subview %t[%c0, %c0] sizes [16, 64] valid [%n, %n] : {big} -> {TB}\n"
        f"    %u = pto.subset %t[%c0, %c0] sizes [16, 64] : {big}\n"
        "    %x = pto.load_scalar %p[%c0] : !pto.ptr<f32> -> f32\n"
        "    pto.store_scalar %x, %q[%c0] : !pto.ptr<f32>, f32\n"
        "    %b = pto.get_block_idx\n"
        "    %bn = pto.get_block_num\n"
        "    %sb = pto.get_subblock_idx\n"
        "    %sn = pto.get_subblock_num : i64\n"
    )
    b = body_of(body)
    sv, ss = b[2], b[3]
    assert isinstance(sv, Subview) and sv.source is b[0].tile and sv.sizes == (16, 64)
    assert sv.valid == (Scalar("n"), Scalar("n")) and sv.result.type == TileType(
        "vec", "f32", 16, 64
    )
    assert ss.op == "pto.subset" and ss.result.type.rows == 16
    assert b[4] == ScalarOp(
        (Scalar("x", "f32"),), "pto.load_scalar", (GmPtr("p", "f32"), Scalar("c0"))
    )
    assert b[5] == ScalarOp(
        (), "pto.store_scalar", (Scalar("x", "f32"), GmPtr("q", "f32"), Scalar("c0"))
    )
    assert [st.op for st in b[6:]] == [
        "pto.get_block_idx",
        "pto.get_block_num",
        "pto.get_subblock_idx",
        "pto.get_subblock_num",
    ]
    assert b[6].results == (Scalar("b", "i64"),)


def test_sections():
    body = (
        "    pto.section.cube {\n      %x = arith.addi %n, %n : index\n    }\n"
        "    pto.section.vector {\n    }\n"
    )
    cube, vec = body_of(body)
    assert cube == Section("cube", (Arith(Scalar("x"), "arith.addi", (Scalar("n"), Scalar("n"))),))
    assert vec == Section("vector", ())


# --- sync -----------------------------------------------------------------------------------------

SPELLINGS = [
    "[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID3>]",
    '["PIPE_MTE2", "PIPE_V", "EVENT_ID3"]',
    "[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID3>]",
    ' [<PIPE_MTE2>, "PIPE_V", #pto.event<EVENT_ID3>]',
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_set_and_wait_flag_in_every_spelling(spelling):
    s, w = body_of(f"    pto.set_flag{spelling}\n    pto.wait_flag{spelling}\n")
    assert s == SetFlag("PIPE_MTE2", "PIPE_V", 3) and w == WaitFlag("PIPE_MTE2", "PIPE_V", 3)


def test_dynamic_event_ids():
    s, w = body_of(
        "    pto.set_flag_dyn [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, %n]\n"
        "    pto.wait_flag_dyn[<PIPE_MTE2>, <PIPE_V>, %n]\n"
    )
    assert s == SetFlag("PIPE_MTE2", "PIPE_V", Scalar("n")) and w.event == Scalar("n")


@pytest.mark.parametrize("kind", ["pipe_event_type", "sync_op_type", None])
def test_record_and_wait_event_map_op_classes_to_pipes(kind):
    def e(k):
        return f"#pto.{kind}<{k}>" if kind else f"<{k}>"

    ev = "#pto.event<EVENT_ID1>" if kind else "<EVENT_ID1>"
    for src, dst in (
        ("TLOAD", "TVEC"),
        ("TMOV_M2L", "TMATMUL"),
        ("TMATMUL", "TSTORE_ACC"),
        ("TVEC", "TSTORE_VEC"),
        ("TMOV_M2B", "TMOV_M2S"),
        ("TMOV_V2M", "TVECWAIT_EVENT"),
    ):
        r, w = body_of(
            f"    pto.record_event [{e(src)}, {e(dst)}, {ev}]\n"
            f"    pto.wait_event[{e(src)}, {e(dst)}, {ev}]\n"
        )
        assert r == SetFlag(ENDPOINT_PIPE[src], ENDPOINT_PIPE[dst], 1)
        assert w == WaitFlag(ENDPOINT_PIPE[src], ENDPOINT_PIPE[dst], 1)
    assert ENDPOINT_PIPE["TLOAD"] == "PIPE_MTE2" and ENDPOINT_PIPE["TVEC"] == "PIPE_V"


def test_barriers():
    b = body_of(
        "    pto.barrier #pto.pipe<PIPE_V>\n    pto.barrier <PIPE_ALL>\n"
        "    pto.barrier_sync [<TVEC>]\n    pto.barrier_sync[<TMATMUL>]\n"
    )
    assert b == (Barrier("PIPE_V"), Barrier("PIPE_ALL"), Barrier("PIPE_V"), Barrier("PIPE_M"))


def test_sync_mistakes():
    assert "unknown pipe 'PIPE_Q'" in str(
        error(kernel("    pto.set_flag[<PIPE_Q>, <PIPE_V>, <EVENT_ID0>]"))
    )
    assert "EVENT_ID0..EVENT_ID7" in str(
        error(kernel("    pto.set_flag[<PIPE_V>, <PIPE_M>, <EVENTX>]"))
    )


# --- cube <-> vector pipes ----------------------------------------------------------------------


def test_pipe_ops_are_kept_verbatim():
    body = (
        tile("t")
        + '    %buf = pto.reserve_buffer {name = "c2v", size = 8192, location = #pto.address_space<mat>, auto = false, base = 0} -> i32\n'
        '    %imp = pto.import_reserved_buffer {name = "c2v", peer_func = @k} -> i32\n'
        "    pto.aic_initialize_pipe {id = 0, dir_mask = 1, slot_size = 8192} (c2v_consumer_buf = %buf : i32, v2c_consumer_buf = %imp : i32)\n"
        "    pto.aiv_initialize_pipe {id = 0, dir_mask = 1, slot_size = 8192} (c2v_consumer_buf = %buf : i32)\n"
        f"    pto.tpush_to_aiv(%t : {TB}) {{split = 1}}\n"
        f"    pto.tpush_to_aic(%t : {TB}) {{split = 0}}\n"
        f"    %u = pto.tpop_from_aic {{split = 1}} -> {TB}\n"
        f"    %v = pto.tpop_from_aiv {{split = 1}} -> {TB}\n"
        "    pto.tfree_from_aic {split = 1}\n"
        "    pto.tfree_from_aiv {split = 1}\n"
    )
    b = body_of(body)[1:]
    assert all(isinstance(st, PipeOp) for st in b)
    rb = b[0]
    assert rb.results == (Scalar("buf", "i32"),) and rb.op == "pto.reserve_buffer"
    assert dict(rb.attrs) == {
        "name": "c2v",
        "size": 8192,
        "auto": False,
        "base": 0,
        "location": RawAttr("#pto.address_space<mat>"),
    }
    assert dict(b[1].attrs)["peer_func"] == RawAttr("@k")
    assert b[2].operands == (
        ("c2v_consumer_buf", Scalar("buf", "i32")),
        ("v2c_consumer_buf", Scalar("imp", "i32")),
    )
    assert b[4].operands == (Tile("t", TileType("vec", "f32", 16, 64)),)
    assert b[6].results == (Tile("u", TileType("vec", "f32", 16, 64)),)
    assert [st.op for st in b] == [
        "pto.reserve_buffer",
        "pto.import_reserved_buffer",
        "pto.aic_initialize_pipe",
        "pto.aiv_initialize_pipe",
        "pto.tpush_to_aiv",
        "pto.tpush_to_aic",
        "pto.tpop_from_aic",
        "pto.tpop_from_aiv",
        "pto.tfree_from_aic",
        "pto.tfree_from_aiv",
    ]


# --- locations ----------------------------------------------------------------------------------


def test_every_statement_has_a_location():
    text = kernel(
        VIEWS + tile("a") + "    scf.for %i = %c0 to %n step %c1 {\n"
        f"      pto.tload ins(%pv : {PV}) outs(%a : {TB})\n    }}\n"
    )
    body = parse_text(text, "loc.pto").main.body
    assert body[0].loc == SourceLoc("loc.pto", 3, 5)
    assert body[-1].loc == SourceLoc("loc.pto", 10, 5)
    assert body[-1].body[0].loc == SourceLoc("loc.pto", 11, 7)
    # locations never take part in equality
    assert parse_text("\n\n" + text, "other.pto") == parse_text(text, "loc.pto")


# --- diagnostics --------------------------------------------------------------------------------


def _check_diagnostic(e: ParseError, line: int, col: int, text: str, what: str):
    lines = str(e).splitlines()
    assert lines[0].startswith(f"t.pto:{line}:{col}: error: "), lines[0]
    assert what in lines[0], lines[0]
    assert lines[1] == text.splitlines()[line - 1]
    assert lines[2] == " " * (col - 1) + "^"
    assert (e.line, e.col) == (line, col)
    assert isinstance(e, UserError)


def test_syntax_error_has_line_column_and_caret():
    text = kernel(tile("a") + f"    pto.tadd ins(%a %a : {TB}, {TB}) outs(%a : {TB})")
    _check_diagnostic(error(text), 4, 21, text, "unexpected '%a'")


def test_unexpected_character_and_end_of_input():
    text = kernel("    %x = arith.constant 1 : index $")
    _check_diagnostic(error(text), 3, 35, text, "unexpected character '$'")
    e = error("module {\n  func.func @k() {\n")
    assert "unexpected end of input" in str(e)


def test_type_mismatch_tile_used_as_scalar():
    text = kernel(tile("a") + f"    pto.tadds ins(%a, %a : {TB}, f32) outs(%a : {TB})")
    _check_diagnostic(error(text), 4, 23, text, "type mismatch: %a has type")


def test_type_mismatch_declared_operand_type():
    other = "!pto.tile_buf<vec, 16x32xf32>"
    text = kernel(tile("a") + f"    pto.trelu ins(%a : {other}) outs(%a : {TB})")
    e = error(text)
    _check_diagnostic(e, 4, 19, text, "type mismatch")
    assert other in e.message and TB in e.message


def test_type_mismatch_in_scalar_code_and_views():
    text = kernel("    %c = arith.constant 1 : i32\n    %d = arith.addi %c, %n : index")
    _check_diagnostic(error(text), 4, 21, text, "type mismatch: %c has type i32")
    text = kernel(f"    %t = pto.make_tensor_view %n, shape = [%n], strides = [%n] : {TV}")
    assert "but a !pto.ptr is expected" in str(error(text))
    text = kernel(
        "    %t = pto.make_tensor_view %p, shape = [%n], strides = [%n] : !pto.tensor_view<?xf16>"
    )
    assert "points to f32" in str(error(text))


def test_undefined_and_redefined_values():
    text = kernel(f"    pto.trelu ins(%zz : {TB}) outs(%zz : {TB})")
    _check_diagnostic(error(text), 3, 19, text, "use of undefined value '%zz'")
    text = kernel("    %n = arith.constant 1 : index")
    _check_diagnostic(error(text), 3, 5, text, "redefinition of SSA value '%n'")


def test_malformed_tile_types_point_inside_the_type():
    text = kernel("    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32, bogus=1>")
    _check_diagnostic(error(text), 3, 57, text, "unknown tile_buf key 'bogus'")
    text = kernel("    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x3xf32>")
    assert "multiple of 32 bytes" in str(error(text))
    text = kernel("    %a = pto.alloc_tile : !pto.tile_buf<loc=vec, rows=16, cols=64>")
    assert "missing key 'dtype'" in str(error(text))
    text = kernel("    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32, pad=1, pad=2>")
    assert "given twice" in str(error(text))


@pytest.mark.parametrize(
    "snippet, col, what",
    [
        (
            "    %v = pto.vlds %p[%n] : !pto.ptr<f32> -> !pto.vreg<64xf32>",
            10,
            "unsupported op 'pto.vlds'",
        ),
        (
            "    %v = pto.vmi.vload %p : !pto.ptr<f32> -> !pto.vmi<64xf32>",
            10,
            "unsupported op 'pto.vmi.vload'",
        ),
        ("    pto.vecscope {\n    }", 5, "unsupported op 'pto.vecscope'"),
        (
            "    pto.tgatherb ins(%p : !pto.ptr<f32>) outs(%p : !pto.ptr<f32>)",
            5,
            "unsupported op 'pto.tgatherb'",
        ),
        ('    "pto.tmov"(%p) : (!pto.ptr<f32>) -> ()', 5, "generic MLIR operation form"),
        (
            "    %r = scf.while (%a = %n) : (index) -> index {\n    }",
            10,
            "unsupported op 'scf.while'",
        ),
        ("    %m = memref.alloc() : memref<16xf32>", 27, "unsupported type 'memref<...>'"),
        ("    cf.br ^bb1", 5, "unsupported op 'cf.br'"),
        ("  ^bb0:", 3, "unsupported: MLIR blocks"),
        (
            "    %a = pto.alloc_tile : !pto.tile<16x16xf32>",
            27,
            "unsupported type '!pto.tile<16x16xf32>'",
        ),
        ("    %a = pto.alloc_tile : !pto.local_array<8xi32>", 27, "unsupported type"),
        ('    pto.mem_bar "VST_VLD"', 5, "unsupported op 'pto.mem_bar'"),
    ],
)
def test_out_of_scope_constructs_are_clear_errors(snippet, col, what):
    text = kernel(snippet)
    e = error(text)
    assert e.line == 3 and e.col == col, str(e)
    assert what in e.message, str(e)


def test_memref_types_other_than_static_gm_arguments_are_unsupported():
    e = error(kernel("", "%m: memref<?xf32, #pto.address_space<gm>>"))
    assert "unsupported type 'memref<...>'" in e.message


# --- targets ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, target",
    [
        ({"pto.target_arch": "a5"}, "a5"),
        ({"pto.target_arch": "a3"}, "a2a3"),
        ({"pto.target_arch": "a2"}, "a2a3"),
        ({"pto.target_arch": "a2a3"}, "a2a3"),
        ({"pto.device-spec": "Ascend910B1"}, "a2a3"),
        ({"pto.device-spec": "Ascend910B3"}, "a2a3"),
        ({"pto.device-spec": "Ascend910_9392"}, "a2a3"),
        ({"pto.device-spec": "Ascend950"}, "a5"),
        ({"pto.device-spec": "Ascend950PR_9599"}, "a5"),
        ({"pto.target_arch": "a5", "pto.device-spec": "Ascend950"}, "a5"),
        ({"pto.target_arch": "a3", "pto.device-spec": "Ascend910_9392"}, "a2a3"),
        ({}, None),
    ],
)
def test_target_from_module_attributes(attrs, target):
    assert target_from_attrs(attrs.items()) == target


@pytest.mark.parametrize("attrs", [{"pto.target_arch": "a9"}, {"pto.device-spec": "Ascend310P"}])
def test_unknown_target_attributes_are_errors_naming_the_value(attrs):
    with pytest.raises(UserError) as e:
        target_from_attrs(attrs.items())
    assert list(attrs.values())[0] in str(e.value) and "--target" in str(e.value)


# --- layering -----------------------------------------------------------------------------------


def test_the_front_end_imports_neither_the_engine_nor_simpy():
    for path in sorted((ROOT / "sim" / "frontend").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            bad = [n for n in names if n == "simpy" or n.startswith(("simpy.", "sim.engine"))]
            assert not bad, (path.name, bad)


def test_printing_uses_the_canonical_spellings():
    text = kernel(
        tile("a", KV) + '    pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]\n'
        "    pto.barrier #pto.pipe<PIPE_V>\n"
    )
    printed = print_program(parse_text(text))
    assert "!pto.tile_buf<vec, 16x64xf32>" in printed and "loc=" not in printed
    assert "pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]" in printed
    assert "pto.barrier <PIPE_V>" in printed


@pytest.mark.parametrize(
    "arch, blayout",
    [
        ("a3", BLayout.ROW_MAJOR),
        ("a2a3", BLayout.ROW_MAJOR),
        ("a5", BLayout.COL_MAJOR),
        (None, BLayout.COL_MAJOR),
    ],
)
def test_left_tiles_take_the_outer_layout_of_the_module_target(arch, blayout):
    # the PTO compiler's parser overrides blayout of loc=left per target arch
    L = (
        "!pto.tile_buf<loc=left, dtype=f16, rows=64, cols=64, v_row=64, v_col=64, "
        "blayout=col_major, slayout=row_major, fractal=512, pad=0>"
    )
    head = f'module attributes {{pto.target_arch = "{arch}"}}' if arch else "module"
    p = parse_text(f"{head} {{\n func.func @k() {{\n %a = pto.alloc_tile : {L}\n return\n }}\n}}")
    assert p.main.body[0].tile.type.blayout is blayout
    assert parse_text(print_program(p)) == p
