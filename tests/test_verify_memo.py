"""Verdicts of the verifier are kept per process (``sim.isa.verify.verify_instr``).

A verdict depends on the instruction by value, the target and its tiles' valid regions;
these tests run an instruction twice with one of them changed in between and check that
the second run gets its own verdict and its own message location. A clean verdict is also
shared by every instruction with the same facts (``sim.isa.verify._facts``: the operands
without their names); for each part of those facts a pair of instructions differing only
there checks that a clean verdict does not answer for a broken one.
"""

from __future__ import annotations

import re

import pytest

import sim
from sim.base.errors import VerifyError
from sim.isa import verify
from sim.isa.program import Const, GmPtr, Instr, PartView, Scalar
from sim.isa.tile import Tile, TileType
from sim.target import load_target

R, C = 16, 64


def _kernel(src_valid, extra_loads: int = 0):
    """TADD of a and b, b's valid region ``src_valid``, behind ``extra_loads`` more TLOADs."""
    k = sim.Kernel("memo")
    ga, gb, gc = (k.gm(n, "f32", (R, C)) for n in "abc")
    a, b, c = (k.tile("vec", "f32", R, C, valid=(None, None), name=n) for n in "abc")
    for t in (a, c):
        k.set_valid(t, R, C)
    k.set_valid(b, *src_valid)
    for _ in range(1 + extra_loads):
        k.TLOAD(a, ga)
    k.TLOAD(b, gb)
    k.TADD(c, a, b)
    k.TSTORE(gc, c)
    return k


def test_a_valid_kernel_then_an_equal_instruction_on_other_valid_regions():
    sim.simulate(_kernel((R, C)), functional=False)  # clean: verdict kept
    with pytest.raises(VerifyError, match="valid"):
        sim.simulate(_kernel((8, 32)), functional=False)


def test_an_invalid_verdict_does_not_stick_to_the_valid_case():
    with pytest.raises(VerifyError):
        sim.simulate(_kernel((8, 32)), functional=False)
    assert sim.simulate(_kernel((R, C)), functional=False).total_cycles > 0


def _failing_seq(k) -> int:
    with pytest.raises(VerifyError) as e:
        sim.simulate(k, functional=False)
    m = re.search(r"instruction #(\d+) TADD", str(e.value))
    assert m, str(e.value)
    return int(m.group(1))


def test_a_kept_verdict_names_the_instruction_that_breaks_the_rule_now():
    first = _failing_seq(_kernel((8, 32)))
    assert _failing_seq(_kernel((8, 32), extra_loads=3)) >= first + 3


# --- clean verdicts shared by instructions with equal facts (sim.isa.verify._facts) --------


def _t(name, dtype="f32", loc="vec", rows=R, cols=C, **kw):
    return Tile(name, TileType(loc, dtype, rows, cols, **kw))


def _declared(t):
    return t.type.valid_rows, t.type.valid_cols


A2A3, A5 = load_target("a2a3"), load_target("a5")
_a, _b, _c = _t("a"), _t("b"), _t("c")
_i32 = [_t(n, "i32") for n in "abc"]

# (what differs, clean (instr, target, valid_of), then one equal to it but for that part,
#  which the verifier rejects or warns about)
_PAIRS = {
    "opcode": (
        (Instr("TADD", [_c], [_a, _b]), A2A3, _declared),
        (Instr("TAND", [_c], [_a, _b]), A2A3, _declared),
    ),
    "target": (
        (Instr("TADD", [_t("c", "u8")], [_t("a", "u8"), _t("b", "u8")]), A5, _declared),
        (Instr("TADD", [_t("c", "u8")], [_t("a", "u8"), _t("b", "u8")]), A2A3, _declared),
    ),
    "dtype": (
        (Instr("TADD", [_c], [_a, _b]), A2A3, _declared),
        (Instr("TADD", [_t("x", "u8")], [_t("y", "u8"), _t("z", "u8")]), A2A3, _declared),
    ),
    "location": (
        (Instr("TADD", [_c], [_a, _b]), A2A3, _declared),
        (
            Instr("TADD", [_t("x", loc="mat")], [_t("y", loc="mat"), _t("z", loc="mat")]),
            A2A3,
            _declared,
        ),
    ),
    "layout": (
        (Instr("TADD", [_c], [_a, _b]), A2A3, _declared),
        (
            Instr(
                "TADD",
                [_t("x", blayout="col_major")],
                [_t("y", blayout="col_major"), _t("z", blayout="col_major")],
            ),
            A2A3,
            _declared,
        ),
    ),
    "capacity": (
        (Instr("TPRELU", [_c], [_a, _b, _t("m", "u8", rows=R + 1, valid_rows=R)]), A2A3, _declared),
        (Instr("TPRELU", [_c], [_a, _b, _t("m", "u8", rows=R, valid_rows=R)]), A2A3, _declared),
    ),
    "valid region": (
        (Instr("TADD", [_c], [_a, _b]), A2A3, _declared),
        (Instr("TADD", [_c], [_a, _b]), A2A3, lambda t: (8, C) if t is _b else _declared(t)),
    ),
    "aliasing": (
        (Instr("TFMOD", [_c], [_a, _b]), A2A3, _declared),
        (Instr("TFMOD", [_c], [_c, _b]), A2A3, _declared),
    ),
    "constant": (
        (Instr("TREMS", [_i32[2]], [_i32[0], Const(3, "i32")]), A2A3, _declared),
        (Instr("TREMS", [_i32[2]], [_i32[0], Const(1 << 25, "i32")]), A2A3, _declared),
    ),
    "GM view dtype": (
        (Instr("TLOAD", [_a], [PartView("v", "f32", (R, C))]), A2A3, _declared),
        (Instr("TLOAD", [_a], [PartView("v", "f16", (R, C))]), A2A3, _declared),
    ),
    "operand kind": (
        (Instr("TADDS", [_c], [_a, Const(1.0, "f32")]), A2A3, _declared),
        (Instr("TADDS", [_c], [_a, _b]), A2A3, _declared),
    ),
    "other operand kind": (
        (Instr("TADDS", [_c], [_a, Scalar("s", "f32")]), A2A3, _declared),
        (Instr("TADDS", [_c], [_a, GmPtr("p", "f32")]), A2A3, _declared),
    ),
    "outputs": (
        (Instr("TADD", [_c], [_a, _b]), A2A3, _declared),
        (Instr("TADD", [_c, _a], [_b]), A2A3, _declared),
    ),
}


@pytest.fixture
def fresh_memo(monkeypatch):
    monkeypatch.setattr(verify, "_VERDICTS", {})
    monkeypatch.setattr(verify, "_CLEAN", set())


@pytest.mark.parametrize("part", list(_PAIRS))
def test_a_clean_verdict_is_not_shared_across_a_part_of_the_facts(part, fresh_memo):
    (clean, t0, v0), (other, t1, v1) = _PAIRS[part]
    assert verify.verify_instr(clean, t0, v0, "first") == []
    errors, warnings = verify.diagnose(other, t1, v1)
    assert errors or warnings, "the pair must differ in its verdict"
    try:
        found = verify.verify_instr(other, t1, v1, "second")
    except VerifyError as e:
        found = e.errors
    assert found and all(m.startswith("second: ") for m in found)


def test_the_same_op_on_other_tiles_of_the_same_types_shares_the_clean_verdict(
    fresh_memo, monkeypatch
):
    assert verify.verify_instr(Instr("TADD", [_c], [_a, _b]), A2A3, _declared, "first") == []
    monkeypatch.setattr(verify, "diagnose", None)  # must not be called again
    assert (
        verify.verify_instr(Instr("TADD", [_t("x")], [_t("y"), _t("z")]), A2A3, _declared, "second")
        == []
    )
