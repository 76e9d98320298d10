"""The verifier against the A2/A3 and A5 legality tables (models/<target>/ops.toml)."""

from __future__ import annotations

import re

import attrs
import pytest

from sim.base.errors import UserError, VerifyError
from sim.isa.dtypes import DTYPES
from sim.isa.opcodes import OPCODES
from sim.isa.ops_table import check_ops_table
from sim.isa.program import (
    Alloc,
    Const,
    Function,
    GmPtr,
    Instr,
    MakeTensorView,
    PartitionView,
    PartView,
    Program,
    Scalar,
    SetValidShape,
    SourceLoc,
    TensorView,
)
from sim.isa.tile import Tile, TileType
from sim.isa.verify import verify_instr, verify_program
from sim.target import load_target

A2, A5 = load_target("a2a3"), load_target("a5")
WHERE = "instruction #3 TEST (kern.py:14)"


def vec(name, dt="f32", rows=16, cols=64, **kw):
    return Tile(name, TileType("vec", dt, rows, cols, **kw))


def declared(t):
    return t.type.valid_rows, t.type.valid_cols


def check(target, op, outs, ins, valid_of=declared, **attrs_):
    """Verify one instruction; returns its warnings (a VerifyError propagates)."""
    return verify_instr(Instr(op, outs, ins, attrs_), target, valid_of, WHERE)


def clean(target, op, outs, ins, **kw):
    """The instruction is legal and draws no warning."""
    assert check(target, op, outs, ins, **kw) == []


def rejects(target, op, outs, ins, match, valid_of=declared):
    with pytest.raises(VerifyError, match=match) as info:
        check(target, op, outs, ins, valid_of)
    assert str(info.value).startswith(WHERE + ": operand ") or "not available" in str(info.value)
    return info.value


# --- dtypes from the seed pages and the §2 table -------------------------------------------


def test_trem_f16_rejected_on_a2a3_accepted_on_a5():
    d, a, b = vec("d", "f16"), vec("a", "f16"), vec("b", "f16")
    rejects(
        A2,
        "TREM",
        [d],
        [a, b],
        r"operand dst \(%d\): dtype: expected one of f32, i32 on a2a3, found f16",
    )
    check(A5, "TREM", [d], [a, b])


def test_trem_tmp_rules_on_a2a3_only():
    d, a, b = vec("d"), vec("a"), vec("b")
    check(A2, "TREM", [d], [a, b, vec("t", rows=2)])
    rejects(
        A2,
        "TREM",
        [d],
        [a, b, vec("t", rows=1)],
        r"operand tmp \(%t\): tmp valid rows: expected >= 2, found 1",
    )
    rejects(
        A2,
        "TREM",
        [d],
        [a, b, vec("t", rows=2, cols=32)],
        r"operand tmp \(%t\): tmp valid cols: expected >= 64 \(valid cols of dst\), found 32",
    )
    rejects(
        A2,
        "TREM",
        [d],
        [a, b, vec("t", "i32", rows=2)],
        r"operand tmp \(%t\): tmp dtype: expected f32 \(dtype of dst\), found i32",
    )
    check(A5, "TREM", [d], [a, b, vec("t", "f16", rows=1, cols=32)])


TREM_REASON = (
    "writes intermediates into dst before the last reads of src0 and src1, and its "
    "i32 path converts src0 and src1 in place (instructions.md §3.1) "
    "[inferred from code]"
)


def test_trem_in_place_warns_on_a2a3():
    a, b = vec("a"), vec("b")
    warnings = check(A2, "TREM", [a], [a, b])  # no VerifyError: still issued
    assert warnings == [
        f"{WHERE}: warning: operands dst and src0 are the same tile (%a): "
        f"TREM on a2a3 {TREM_REASON}"
    ]
    assert check(A2, "TREM", [b], [a, b]) == [
        f"{WHERE}: warning: operands dst and src1 are the same tile (%b): TREM on a2a3 "
        f"{TREM_REASON}"
    ]
    clean(A2, "TREM", [vec("d")], [a, b])
    clean(A5, "TREM", [a], [a, b])


def test_in_place_warnings_name_operands_and_reason():
    a, b = vec("a"), vec("b")
    (w,) = check(A2, "TRECIP", [a], [a])
    assert w == (
        f"{WHERE}: warning: operands dst and src are the same tile (%a): TRECIP on "
        f"a2a3 fills dst with 1.0 before dividing by src (instructions.md §3.1)"
    )
    (w,) = check(A2, "TREMS", [a], [a, Const(3.0, "f32")])
    assert "operands dst and src are the same tile (%a): TREMS on a2a3 " in w
    assert w.endswith("[inferred from code]")
    (w,) = check(A2, "TFMODS", [a], [a, Const(3.0, "f32")])
    assert "operands dst and src are the same tile (%a): TFMODS on a2a3 overwrites dst" in w
    (w,) = check(A2, "TFMOD", [a], [a, b])
    assert "operands dst and src0 are the same tile (%a): TFMOD on a2a3 " in w
    clean(A2, "TFMOD", [vec("d")], [a, a])  # only dst must stay apart
    d = vec("d", "i16")
    warnings = check(A2, "TXOR", [d], [d, d, vec("t", "i16")])
    assert [w.split(": warning: ")[1].split(":")[0] for w in warnings] == [
        "operands dst and src0 are the same tile (%d)",
        "operands dst and src1 are the same tile (%d)",
        "operands src0 and src1 are the same tile (%d)",
    ]
    mask = vec("m", "u8", rows=17, cols=32)
    clean(A2, "TPRELU", [vec("d")], [a, b, mask])
    (w,) = check(A2, "TPRELU", [b], [a, b, mask])
    assert "operands dst and src1 are the same tile (%b): TPRELU on a2a3 " in w
    clean(A5, "TRECIP", [a], [a])
    clean(A5, "TREMS", [a], [a, Const(3.0, "f32")])
    clean(A5, "TXOR", [d], [d, d])


def test_errors_still_raise_and_carry_the_warnings():
    a = vec("a", "f16")
    with pytest.raises(VerifyError) as info:
        check(A2, "TREM", [a], [a, vec("b", "f16")])
    assert "dtype" in str(info.value)
    assert info.value.warnings == [
        f"{WHERE}: warning: operands dst and src0 are the same tile "
        f"(%a): TREM on a2a3 {TREM_REASON}"
    ]


def test_tfmods_is_float_only_on_a2a3():
    rejects(
        A2,
        "TFMODS",
        [vec("d", "i32")],
        [vec("s", "i32"), Const(3, "i32")],
        r"operand dst \(%d\): dtype: expected one of f32 on a2a3, found i32",
    )
    rejects(A2, "TFMODS", [vec("d", "f16")], [vec("s", "f16"), Const(3.0, "f16")], "found f16")
    check(A5, "TFMODS", [vec("d", "f16")], [vec("s", "f16"), Const(3.0, "f16")])
    check(A2, "TFMODS", [vec("d")], [vec("s"), Const(3.0, "f32")])


def test_tfmods_needs_positive_valid_extents_on_a2a3():
    zero_rows = lambda t: (0, 64)  # noqa: E731  a run-time extent the engine could report
    rejects(
        A2,
        "TFMODS",
        [vec("d")],
        [vec("s"), Const(3.0, "f32")],
        r"operand dst \(%d\): valid region: expected rows > 0 and cols > 0, found 0x64",
        valid_of=zero_rows,
    )


def test_tdivs_i8_rejected_on_a2a3_accepted_on_a5():
    d, s = vec("d", "i8"), vec("s", "i8")
    rejects(
        A2,
        "TDIVS",
        [d],
        [s, Const(2, "i8")],
        r"operand dst \(%d\): dtype: expected one of i32, i16, f16, f32 on a2a3, found i8",
    )
    check(A5, "TDIVS", [d], [s, Const(2, "i8")])
    check(A5, "TDIVS", [d], [Const(2, "i8"), s])  # scalar / tile form


def test_trelu_i16_rejected_on_both_targets():
    for target in (A2, A5):
        rejects(
            target,
            "TRELU",
            [vec("d", "i16")],
            [vec("s", "i16")],
            rf"operand dst \(%d\): dtype: expected one of f16, f32, i32 on {target.name}, "
            r"found i16",
        )


def test_tsub_bf16_rejected_on_a2a3():
    rejects(
        A2,
        "TSUB",
        [vec("d", "bf16")],
        [vec("a", "bf16"), vec("b", "bf16")],
        r"dtype: expected one of i32, i16, f16, f32 on a2a3, found bf16",
    )
    check(A5, "TSUB", [vec("d", "i8")], [vec("a", "i8"), vec("b", "i8")])


def test_dtype_mismatch_between_operands():
    rejects(
        A2,
        "TADD",
        [vec("d")],
        [vec("a"), vec("b", "i32")],
        r"operand src1 \(%b\): same dtype as dst: expected f32 \(dtype of dst\), found i32",
    )


# --- location, layout, valid region ---------------------------------------------------------


def test_col_major_tile_rejected_for_tadd():
    cm = vec("a", blayout="col_major")
    rejects(
        A2,
        "TADD",
        [vec("d")],
        [cm, vec("b")],
        r"operand src0 \(%a\): layout: expected row-major unboxed \(nd\), found dn",
    )


def test_mat_tile_rejected_for_tadd():
    m = Tile("m", TileType("mat", "f32", 16, 64))
    rejects(
        A5,
        "TADD",
        [vec("d")],
        [vec("a"), m],
        r"operand src1 \(%m\): location: expected vec, found mat",
    )


def test_valid_region_mismatch_rejected():
    rejects(
        A2,
        "TADD",
        [vec("d")],
        [vec("a", valid_cols=32), vec("b")],
        r"operand src0 \(%a\): valid region equal to dst: expected 16x64, found 16x32",
    )


def test_dynamic_extents_are_skipped():
    dyn = vec("a", valid_rows=None, valid_cols=None)
    check(A2, "TADD", [vec("d")], [dyn, vec("b")])
    check(A2, "TADD", [vec("d")], [vec("a"), vec("b")], valid_of=lambda t: (16, None))


def test_run_time_extents_are_checked():
    runtime = {"a": (16, 32)}
    rejects(
        A2,
        "TADD",
        [vec("d")],
        [vec("a", valid_cols=None), vec("b")],
        r"operand src0 \(%a\): valid region equal to dst: expected 16x64, found 16x32",
        valid_of=lambda t: runtime.get(t.name, declared(t)),
    )


def test_reductions_compare_rows_only():
    check(A2, "TROWSUM", [vec("d", rows=16, cols=8)], [vec("s"), vec("t")])
    rejects(
        A2,
        "TROWSUM",
        [vec("d", rows=8, cols=8)],
        [vec("s")],
        r"operand src \(%s\): valid rows equal to dst: expected 8, found 16",
    )
    check(A2, "TCOLSUM", [vec("d", rows=1)], [vec("s")])


# --- conversions, scalars, compares ---------------------------------------------------------


def test_tcvt_pairs():
    check(A2, "TCVT", [vec("d", "f16")], [vec("s", "f32")], rmode="RINT")
    rejects(
        A2,
        "TCVT",
        [vec("d", "f32")],
        [vec("s", "i8")],
        r"operand dst \(%d\): conversion from i8: expected one of f16 on a2a3, found f32",
    )
    rejects(
        A2,
        "TCVT",
        [vec("d", "f32")],
        [vec("s", "u32")],
        r"operand src \(%s\): conversion source dtype: expected one of f32, .* on a2a3, "
        r"found u32",
    )
    check(A5, "TCVT", [vec("d", "i32")], [vec("s", "i8")])


def test_trems_constant_scalar_range_on_a2a3():
    d, s = vec("d", "i32"), vec("s", "i32")
    check(A2, "TREMS", [d], [s, Const(16777216, "i32")])
    rejects(
        A2,
        "TREMS",
        [d],
        [s, Const(16777217, "i32")],
        r"operand scalar \(16777217\): i32 input range: expected within "
        r"\[-16777216, 16777216\] on a2a3, found 16777217",
    )
    rejects(A2, "TREMS", [d], [s, Const(-(2**25), "i32"), vec("t", "i32")], "found -33554432")
    check(A2, "TREMS", [d], [s, Scalar("n", "i32")])  # run-time value: engine checks
    check(A2, "TREMS", [vec("d")], [vec("s"), Const(2.0**30, "f32")])
    check(A5, "TREMS", [d], [s, Const(16777217, "i32")])


def test_tcmp_packed_output_type_per_target():
    a, b = vec("a"), vec("b")
    check(A2, "TCMP", [vec("m", "u8", cols=64)], [a, b], cmpMode="lt")
    rejects(A2, "TCMP", [vec("m", "u32")], [a, b], r"operand dst \(%m\): dtype: expected one of u8")
    check(A5, "TCMP", [vec("m", "u32", cols=8)], [a, b], cmpMode="lt")
    check(A2, "TCMPS", [vec("m", "u8", cols=64)], [a, Const(0.0, "f32")], cmpMode="gt")


def test_tsel_names_the_mask():
    mask = Tile("m", TileType("mat", "u8", 16, 32))
    rejects(
        A2,
        "TSEL",
        [vec("d")],
        [mask, vec("a"), vec("b")],
        r"operand mask \(%m\): location: expected vec, found mat",
    )
    check(A2, "TSEL", [vec("d")], [vec("m", "u8", cols=32), vec("a"), vec("b")])


# --- signature ----------------------------------------------------------------------------


def test_wrong_operand_count():
    rejects(
        A2,
        "TADD",
        [vec("d")],
        [vec("a")],
        r"operand ins \(%a\): operand count: expected 2 \(T T\), found 1",
    )
    rejects(
        A2,
        "TADD",
        [],
        [vec("a"), vec("b")],
        r"operand outs \(\): operand count: expected 1 \(T\), found 0",
    )


def test_scalar_where_a_tile_is_expected():
    rejects(
        A2,
        "TADD",
        [vec("d")],
        [vec("a"), Const(1.0, "f32")],
        r"operand src1 \(1.0\): operand kind: expected a tile, found a scalar",
    )
    rejects(
        A2,
        "TADDS",
        [vec("d")],
        [vec("a"), vec("b")],
        r"operand scalar \(%b\): operand kind: expected a scalar, found a tile",
    )


def test_opcode_not_available_on_target():
    # Every opcode of the registry is now in both tables: drop one to get an unavailable op.
    ops = {k: v for k, v in A2.ops["ops"].items() if k != "TADDC"}
    without = attrs.evolve(A2, ops={**A2.ops, "ops": ops})
    exact = "^" + re.escape(WHERE) + ": opcode TADDC is not available on target a2a3$"
    with pytest.raises(VerifyError, match=exact):
        check(without, "TADDC", [vec("d")], [vec("a"), vec("b"), vec("c")])
    with pytest.raises(VerifyError, match=r"unknown opcode 'TFOO'"):
        check(A2, "TFOO", [vec("d")], [])


# --- ops the reference gives no check list for (ASSUMPTION: rules of the base op) ----------

EXPANDS = ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")
ASSUMED = {
    "TADDC": "TADD",
    "TSUBC": "TSUB",
    "TANDS": "TAND",
    "TORS": "TOR",
    "TSHLS": "TSHL",
    "TSHRS": "TSHR",
    **{f"TROWEXPAND{n}": f"T{n}" for n in EXPANDS},
    **{f"TCOLEXPAND{n}": f"T{n}" for n in EXPANDS},
}


def block_cols(dt):
    return 32 // DTYPES[dt].size_bytes


def assumed_operands(op, dt):
    """A legal (outs, ins) of ``op`` with element type ``dt`` (16x64 data tiles)."""
    d, a = vec("d", dt), vec("a", dt)
    if op in ("TADDC", "TSUBC"):
        return [d], [a, vec("b", dt), vec("c", dt)]
    if op.startswith("TROWEXPAND"):
        return [d], [a, vec("c", dt, cols=block_cols(dt), valid_cols=1)]
    if op.startswith("TCOLEXPAND"):
        return [d], [a, vec("r", dt, rows=1)]
    return [d], [a, Const(3, "i32")]


def legal_and_wrong_dtype(op, target):
    if op in ("TANDS", "TORS", "TSHLS", "TSHRS"):
        return "i16", "f32"  # bitwise: integers only
    if op.endswith("EXPANDDIV"):
        return "f32", "i32"  # DIV: float only
    return "f32", ("u8" if target is A2 else "f8e4m3")


@pytest.mark.parametrize("op", sorted(ASSUMED))
@pytest.mark.parametrize("target", [A2, A5], ids=lambda t: t.name)
def test_assumed_ops_accept_legal_and_reject_wrong_dtype(target, op):
    good, bad = legal_and_wrong_dtype(op, target)
    clean(target, op, *assumed_operands(op, good))
    rejects(
        target,
        op,
        *assumed_operands(op, bad),
        rf"operand dst \(%d\): dtype: expected one of .* on {target.name}, found {bad}",
    )
    entry = target.ops["ops"][op]
    assert entry["source"] == (
        f"ASSUMPTION: by analogy with {ASSUMED[op]}; the reference has no implementation-check list"
    )
    if not op.endswith("EXPANDDIV"):
        assert entry["dtypes"] == target.ops["ops"][ASSUMED[op]]["dtypes"]


def test_taddc_needs_three_sources_of_one_type():
    rejects(A2, "TADDC", [vec("d")], [vec("a"), vec("b")], r"operand count: expected 3")
    rejects(
        A2,
        "TADDC",
        [vec("d")],
        [vec("a"), vec("b"), vec("c", "i32")],
        r"operand src2 \(%c\): same dtype as dst",
    )


def test_rowexpand_ops_take_a_column_tile():
    d, a = vec("d"), vec("a")
    for target in (A2, A5):
        clean(target, "TROWEXPANDMUL", [d], [a, vec("c", cols=8, valid_cols=1)])
        clean(target, "TROWEXPANDMUL", [d], [a, vec("c", cols=8)])  # one 32-byte block
        clean(target, "TROWEXPANDSUB", [d], [a, vec("c", cols=16, valid_cols=8)])
        clean(target, "TROWEXPANDDIV", [d], [a, vec("c", cols=1, blayout="col_major")])  # DN
        clean(target, "TROWEXPANDADD", [d], [a, vec("c", cols=8, valid_cols=1), vec("t")])
    clean(
        A2, "TROWEXPANDMAX", [vec("d", "f16")], [vec("a", "f16"), vec("c", "f16", cols=16)]
    )  # 16 halves = 32 B
    rejects(
        A2,
        "TROWEXPANDMUL",
        [d],
        [a, vec("c", cols=8, valid_cols=4)],
        r"operand src1 \(%c\): valid cols: expected one of 1, 8 \(32 bytes of f32\) on "
        r"a2a3, found 4",
    )
    rejects(
        A5,
        "TROWEXPANDMUL",
        [d],
        [a, vec("c", cols=64)],
        r"operand src1 \(%c\): valid cols: expected one of 1, 8 \(32 bytes of f32\) on a5, "
        r"found 64",
    )
    rejects(
        A2,
        "TROWEXPANDMUL",
        [d],
        [a, vec("c", rows=8, cols=8, valid_cols=1)],
        r"operand src1 \(%c\): valid rows equal to dst: expected 16, found 8",
    )
    rejects(
        A2,
        "TROWEXPANDMUL",
        [d],
        [vec("a", valid_cols=32), vec("c", cols=8, valid_cols=1)],
        r"operand src0 \(%a\): valid region equal to dst: expected 16x64, found 16x32",
    )
    rejects(
        A2,
        "TROWEXPANDMUL",
        [d],
        [vec("a", blayout="col_major"), vec("c", cols=8)],
        r"operand src0 \(%a\): layout: expected row-major unboxed \(nd\), found dn",
    )
    rejects(
        A5,
        "TROWEXPANDDIV",
        [vec("d", "i32")],
        [vec("a", "i32"), vec("c", "i32", cols=8, valid_cols=1)],
        r"dtype: expected one of f16, f32 on a5, found i32",
    )  # though TDIV takes i32
    check(A5, "TDIV", [vec("d", "i32")], [vec("a", "i32"), vec("b", "i32")])


def test_colexpand_ops_take_a_row_tile():
    d, a = vec("d"), vec("a")
    for target in (A2, A5):
        clean(target, "TCOLEXPANDMUL", [d], [a, vec("r", rows=1)])
        clean(target, "TCOLEXPANDADD", [d], [a, vec("r", rows=8, valid_rows=1)])
    rejects(
        A2,
        "TCOLEXPANDMUL",
        [d],
        [a, vec("r", rows=1, valid_cols=32)],
        r"operand src1 \(%r\): valid cols equal to dst: expected 64, found 32",
    )
    rejects(
        A5,
        "TCOLEXPANDSUB",
        [d],
        [a, vec("r", "f16", rows=1)],
        r"operand src1 \(%r\): same dtype as dst",
    )


# --- data movement and cube -----------------------------------------------------------------


def view(name, dt, shape=(16, 64)):
    return PartView(name, dt, shape)


def test_tload_tstore_element_size():
    check(A2, "TLOAD", [vec("d")], [view("v", "f32")])
    check(A2, "TLOAD", [vec("d", "i32")], [view("v", "f32")])  # same size, bit copy
    rejects(
        A2,
        "TLOAD",
        [vec("d")],
        [view("v", "f16")],
        r"operand src \(%v\): element size equal to dst: expected 4 bytes \(f32 of dst\), "
        r"found 2 bytes \(f16\)",
    )
    rejects(
        A2,
        "TLOAD",
        [Tile("l", TileType("left", "f16", 16, 32, slayout="row_major"))],
        [view("v", "f16")],
        r"operand dst \(%l\): location: expected one of vec, mat on a2a3",
    )
    # DN (col-major) vector tiles are legal (pto-isa moves DN windows into them)
    check(A2, "TLOAD", [vec("d", blayout="col_major")], [view("v", "f32")])
    check(A5, "TSTORE", [view("v", "f32")], [vec("d", blayout="col_major")])
    rejects(
        A2,
        "TLOAD",
        [vec("d", slayout="row_major")],
        [view("v", "f32")],
        r"layout: expected nd or dn on a2a3, found zz",
    )


def test_tstore_from_mat_only_on_a2a3():
    nz = TileType("mat", "f16", 16, 32, blayout="col_major", slayout="row_major")
    check(A2, "TSTORE", [view("v", "f16")], [Tile("m", nz)])
    rejects(
        A5,
        "TSTORE",
        [view("v", "f16")],
        [Tile("m", nz)],
        r"operand src \(%m\): location: expected one of vec, acc on a5, found mat",
    )


def acc(name="c", dt="f32", rows=16, cols=64):
    return Tile(
        name,
        TileType("acc", dt, rows, cols, blayout="col_major", slayout="row_major", fractal=1024),
    )


def left(name="a", dt="f16", rows=16, cols=32, a5=False):
    return Tile(
        name,
        TileType(
            "left", dt, rows, cols, slayout="row_major", blayout="col_major" if a5 else "row_major"
        ),
    )


def right(name="b", dt="f16", rows=32, cols=64):
    return Tile(name, TileType("right", dt, rows, cols, slayout="col_major"))


def test_tstore_from_acc_converts():
    check(A2, "TSTORE", [view("v", "f16")], [acc()])
    rejects(
        A2,
        "TSTORE",
        [view("v", "i32")],
        [acc()],
        r"operand dst \(%v\): conversion from f32: "
        r"expected one of f32, f16, bf16, i8, u8 on a2a3",
    )


def test_matmul_dtype_triples_locations_and_shapes():
    check(A2, "TMATMUL", [acc()], [left(), right()])
    check(A2, "TMATMUL", [acc("c", "i32")], [left("a", "i8", cols=64), right("b", "i8", rows=64)])
    rejects(
        A2,
        "TMATMUL",
        [acc()],
        [left(), right("b", "f32", rows=32, cols=64)],
        r"operand dst \(%c\): dtypes of \(dst, a, b\): expected one of \(i32, i8, i8\) .* "
        r"on a2a3, found \(f32, f16, f32\)",
    )
    rejects(A2, "TMATMUL", [acc()], [right("a"), right()], r"operand a \(%a\): location")
    rejects(
        A2,
        "TMATMUL",
        [acc()],
        [left(), right("b", rows=64)],
        r"operand a \(%a\): a.cols == b.rows: expected 64, found 32",
    )
    check(A2, "TMATMUL_ACC", [acc()], [acc("c0"), left(), right()])
    check(A2, "TMATMUL_ACC", [acc()], [left(), right()])
    bias = Tile("bias", TileType("bias", "f32", 1, 64))
    check(A2, "TMATMUL_BIAS", [acc()], [left(), right(), bias])


def test_matmul_fractal_layouts_checked_on_a5():
    check(A5, "TMATMUL", [acc()], [left(a5=True), right()])
    rejects(
        A5,
        "TMATMUL",
        [acc()],
        [left(), right()],
        r"operand a \(%a\): layout: expected nz on a5, found zz",
    )
    check(
        A5,
        "TMATMUL",
        [acc()],
        [left("a", "f8e4m3", cols=64, a5=True), right("b", "f8e5m2", rows=64)],
    )


def test_tmov_pairs():
    mat = Tile("m", TileType("mat", "f16", 16, 32, blayout="col_major", slayout="row_major"))
    check(A2, "TMOV", [left()], [mat])
    bias_src = Tile("mb", TileType("mat", "f16", 1, 64))
    check(A2, "TMOV", [Tile("bias", TileType("bias", "f32", 1, 64))], [bias_src])
    rejects(
        A2,
        "TMOV",
        [left()],
        [vec("v", "f16", cols=32)],
        r"operand dst \(%a\): location: expected one of vec on a2a3, found left",
    )
    check(A5, "TMOV", [Tile("m2", mat.type)], [vec("v", "f16", cols=32)])


def test_texpands_on_vec_and_mat():
    check(A2, "TEXPANDS", [vec("d")], [Const(0.0, "f32")])
    nz = TileType("mat", "f16", 16, 32, blayout="col_major", slayout="row_major")
    check(A2, "TEXPANDS", [Tile("m", nz)], [Const(0.0, "f16")])
    rejects(A2, "TEXPANDS", [acc()], [Const(0.0, "f32")], "location")


# --- the tables themselves -----------------------------------------------------------------


def _dtype_names(entry: dict):
    for key, value in entry.items():
        if key == "dtypes":
            yield from (
                [d for ds in value.values() for d in ds] if isinstance(value, dict) else value
            )
        elif key == "cvt_pairs":
            yield from list(value) + [d for ds in value.values() for d in ds]
        elif key == "dtype_combos":
            yield from (d for combo in value["allowed"] for d in combo)
        elif key == "tmp":
            yield from value.get("dtypes", ())
        elif key == "cases":
            for case in value:
                yield from _dtype_names(case)


@pytest.mark.parametrize("target", [A2, A5], ids=lambda t: t.name)
def test_ops_tables_parse_and_name_known_things(target):
    check_ops_table(target)
    ops = target.ops["ops"]
    assert ops and set(ops) <= set(OPCODES)
    for name, entry in ops.items():
        assert entry.get("source"), f"ops.{name} has no source"
        unknown = set(_dtype_names(entry)) - set(DTYPES)
        assert not unknown, f"ops.{name}: unknown dtypes {unknown}"


def test_documented_seed_ops_are_on_both_targets():
    for op in ("TREM", "TFMODS", "TDIVS", "TRELU", "TSUB", "TADD", "TLOAD", "TSTORE", "TMATMUL"):
        assert op in A2.ops["ops"] and op in A5.ops["ops"]


def test_bad_table_is_reported():
    bad = {
        "defaults": {},
        "vector_only": True,
        "ops": {
            "TADD": {"dtype": ["f32"], "same_dtype": ["dst", "srcx"]},
            "TREM": {"dtypes": ["float32"], "equal_extents": [["dst.width", 1]]},
            "TNOPE": {},
        },
    }
    with pytest.raises(UserError) as info:
        check_ops_table(attrs.evolve(A2, ops=bad))
    text = str(info.value)
    for part in (
        "unknown rule key 'dtype'",
        "unknown role 'srcx'",
        "unknown element type 'float32'",
        "unknown extent 'dst.width'",
        "ops.TNOPE: unknown opcode",
        "unknown top-level key 'vector_only'",
    ):
        assert part in text


def test_table_needs_a_reason_for_each_warning_rule():
    bad = {
        "ops": {
            "TREM": {"source": "x", "distinct": ["dst", "src0"]},
            "TFMOD": {"source": "x", "distinct": [["dst", "srcq"]], "distinct_reason": "y"},
            "TROWEXPANDADD": {"source": "x", "valid_cols_in": {"src1": [0, "blk"]}},
        }
    }
    with pytest.raises(UserError) as info:
        check_ops_table(attrs.evolve(A2, ops=bad))
    text = str(info.value)
    for part in (
        "ops.TREM: distinct needs a distinct_reason",
        "unknown role 'srcq'",
        "valid_cols_in: unknown extent 0",
        "valid_cols_in: unknown extent 'blk'",
    ):
        assert part in text


# --- whole programs -------------------------------------------------------------------------


def _program(*body, loc_from=0):
    body = [attrs.evolve(s, loc=SourceLoc("k.py", loc_from + i)) for i, s in enumerate(body)]
    return Program([Function("k", [GmPtr("x", "f32"), GmPtr("y", "f32")], body)], entry="k")


def _io():
    tv = TensorView("tx", "f32", (16, 64))
    pv = PartView("px", "f32", (16, 64))
    return [
        MakeTensorView(tv, GmPtr("x", "f32"), (16, 64), (64, 1)),
        PartitionView(pv, tv, (0, 0), (16, 64)),
    ], pv


def test_valid_vector_program_passes():
    io, pv = _io()
    a, b, d, t = vec("a"), vec("b"), vec("d"), vec("t", rows=2)
    prog = _program(
        *io,
        Alloc(a),
        Alloc(b),
        Alloc(d),
        Alloc(t),
        Instr("TLOAD", [a], [pv]),
        Instr("TLOAD", [b], [pv]),
        Instr("TADD", [d], [a, b]),
        Instr("TREM", [d], [a, b, t]),
        Instr("TMULS", [d], [d, Const(2.0, "f32")]),
        Instr("TSTORE", [pv], [d]),
    )
    assert verify_program(prog, A2) == []
    assert verify_program(prog, A5) == []


def test_program_returns_warnings_with_locations():
    io, pv = _io()
    a, b = vec("a"), vec("b")
    prog = _program(
        *io,
        Alloc(a),
        Alloc(b),
        Instr("TLOAD", [a], [pv]),
        Instr("TLOAD", [b], [pv]),
        Instr("TREM", [a], [a, b]),
        Instr("TSTORE", [pv], [a]),
        loc_from=1,
    )
    assert verify_program(prog, A2) == [
        f"instruction #2 TREM (k.py:7): warning: operands dst and src0 are the same tile (%a): "
        f"TREM on a2a3 {TREM_REASON}"
    ]
    assert verify_program(prog, A5) == []


def test_valid_cube_program_passes():
    tv = TensorView("tx", "f16", (16, 32))
    pa = PartView("pa", "f16", (16, 32))
    pc = PartView("pc", "f32", (16, 64))
    ma = Tile("ma", TileType("mat", "f16", 16, 32, blayout="col_major", slayout="row_major"))
    mb = Tile("mb", TileType("mat", "f16", 32, 64, blayout="col_major", slayout="row_major"))
    a, b, c = left(), right(), acc()
    prog = _program(
        MakeTensorView(tv, GmPtr("x", "f16"), (16, 32), (32, 1)),
        PartitionView(pa, tv, (0, 0), (16, 32)),
        Alloc(ma),
        Alloc(mb),
        Alloc(a),
        Alloc(b),
        Alloc(c),
        Instr("TLOAD", [ma], [pa]),
        Instr("TLOAD", [mb], [pa]),
        Instr("TEXTRACT", [a], [ma, Const(0), Const(0)]),
        Instr("TMOV", [b], [mb]),
        Instr("TMATMUL", [c], [a, b]),
        Instr("TSTORE", [pc], [c]),
    )
    verify_program(prog, A2)


def test_program_errors_are_collected_with_locations():
    io, pv = _io()
    a, d = vec("a", "f16"), vec("d", "f16")
    prog = _program(
        *io,
        Alloc(a),
        Alloc(d),
        Instr("TREM", [d], [a, a]),  # #0: f16 on a2a3 (x3 operands)
        Instr("TADD", [d], [a, Const(1.0)]),  # #1: scalar for a tile
        loc_from=1,
    )
    with pytest.raises(VerifyError) as info:
        verify_program(prog, A2)
    err = info.value
    assert str(err).startswith(
        "instruction #0 TREM (k.py:5): operand dst (%d): dtype: "
        "expected one of f32, i32 on a2a3, found f16"
    )
    assert str(err).endswith(f"(and {len(err.errors) - 1} more)")
    assert any(
        e.startswith("instruction #1 TADD (k.py:6): operand src1 (1.0): operand kind")
        for e in err.errors
    )


def test_program_tracks_set_validshape():
    a, b = vec("a", valid_rows=None, valid_cols=None), vec("b")
    d = vec("d")
    ok = _program(Alloc(a), Alloc(b), Alloc(d), Instr("TADD", [d], [a, b]))
    verify_program(ok, A2)  # dynamic: skipped
    bad = _program(
        Alloc(a),
        Alloc(b),
        Alloc(d),
        SetValidShape(a, Const(16), Const(32)),
        Instr("TADD", [d], [a, b]),
    )
    with pytest.raises(
        VerifyError,
        match=r"instruction #0 TADD \(k.py:4\): operand src0 \(%a\): "
        r"valid region equal to dst: "
        r"expected 16x64, found 16x32",
    ):
        verify_program(bad, A2)
    unknown = _program(
        Alloc(a),
        SetValidShape(a, Scalar("r"), Scalar("c")),
        Alloc(b),
        Alloc(d),
        Instr("TADD", [d], [a, b]),
    )
    verify_program(unknown, A2)


def test_verify_module_stays_out_of_the_engine():
    import sim.isa.verify as mod

    text = open(mod.__file__).read()
    assert "simpy" not in text and "sim.engine" not in text and "sim.timing" not in text
