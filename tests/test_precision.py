"""Precision modes (``precisionType = #pto<div_precision high_precision>`` ...):
parsed into the IR, printed back, verified per target, costed and computed
(sim/isa/precision.py, models/*/ops.toml ``high_precision``, sim/timing/formula.py).

Reference: instructions.md §3.1 / §3.4 (the precision argument "only has effect on A5";
A5 high-precision division is an IEEE-754 routine; TREM / TFMOD high precision f32 only),
pto-ir-in-the-wild.md §2.8 (the kinds real code writes), data/a5_formula_params.csv
(TRECIP ``high_precision`` rows: f32 1-D 345.21788 per loop + 48.715084, f16 1-D
168.14754 per loop + 40.213115; default f32 1.9081456 + 64.516464, f16 3.5491803 +
68.737705).
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from sim.base.errors import UserError, VerifyError
from sim.engine.run import simulate
from sim.frontend import ParseError, print_program
from sim.frontend import parse_text as parse_program
from sim.isa.precision import KINDS, Precision
from sim.studies.calibrate import load_cases, validate

HEADER = "op,dtype,rows,cols,valid_rows,valid_cols,variant,measured_cycles\n"
_BIN = {"TDIV", "TREM", "TFMOD"}
_SCALAR = {"TDIVS", "TREMS", "TFMODS"}


def _kernel(op: str, dtype: str, rows: int, cols: int, attr: str = "", valid=None) -> str:
    """One op between a TLOAD of its sources and a TSTORE of its result."""
    vr, vc = valid or (rows, cols)
    tb = f"!pto.tile_buf<vec, {rows}x{cols}x{dtype}, valid={vr}x{vc}>"
    pv = f"!pto.partition_tensor_view<1x1x1x{rows}x{cols}x{dtype}>"
    d = f" {{{attr}}}" if attr else ""
    if op in _BIN:
        body = f"pto.{op.lower()} ins(%x, %y : {tb}, {tb}) outs(%z : {tb}){d}"
    elif op in _SCALAR:
        body = f"pto.{op.lower()} ins(%x, %s : {tb}, {dtype}) outs(%z : {tb}){d}"
    else:
        body = f"pto.{op.lower()} ins(%x : {tb}) outs(%z : {tb}){d}"
    return f"""module {{
  func.func @k(%a: {pv}, %b: {pv}, %out: {pv}) attributes {{pto.kernel}} {{
    %s = arith.constant 3.0 : {dtype}
    %x = pto.alloc_tile : {tb}
    %y = pto.alloc_tile : {tb}
    %z = pto.alloc_tile : {tb}
    pto.tload ins(%a : {pv}) outs(%x : {tb})
    pto.tload ins(%b : {pv}) outs(%y : {tb})
    {body}
    pto.tstore ins(%z : {tb}) outs(%out : {pv})
    return
  }}
}}
"""


def _attr(op: str, value: str = "high_precision") -> str:
    kind = next(k for k, ops in KINDS.items() if op in ops and k != "precision_mode")
    return f"precisionType = #pto<{kind} {value}>"


def _op_row(result):
    return result.trace[result.trace["kind"] == "op"].set_index("opcode").loc


def _cycles(src: str, target: str, op: str, functional: bool = False, **kw) -> int:
    r = simulate(parse_program(src, "k.pto"), target, functional=functional, **kw)
    return int(_op_row(r)[op]["duration_cycles"]), r


# --- front end: parsed into the IR and printed back ---------------------------------------

_PAIRS = [(op, kind) for kind, ops in KINDS.items() for op in ops]


@pytest.mark.parametrize("op, kind", _PAIRS)
@pytest.mark.parametrize("value", ["high_precision", "default", "HIGH_PRECISION"])
def test_parsed_into_the_ir_and_printed_back(op, kind, value):
    src = _kernel(op, "f32", 16, 64, f"precisionType = #pto<{kind} {value}>")
    prog = parse_program(src, "k.pto")
    instr = next(s for s in prog.main.body if getattr(s, "opcode", "") == op)
    assert dict(instr.attrs)["precisionType"] == Precision(kind, value)
    text = print_program(prog)
    assert f"#pto<{kind} {value}>" in text
    again = parse_program(text, "k2.pto")
    instr2 = next(s for s in again.main.body if getattr(s, "opcode", "") == op)
    assert dict(instr2.attrs) == dict(instr.attrs)


def test_unknown_precision_value_is_a_parse_error(tmp_path):
    p = tmp_path / "k.pto"
    p.write_text(_kernel("TDIV", "f32", 16, 64, "precisionType = #pto<div_precision medium>"))
    out = subprocess.run(
        [sys.executable, "-m", "sim", "run", str(p)], capture_output=True, text=True
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert (
        "k.pto:" in out.stderr
        and "expected high_precision or default, found 'medium'" in out.stderr
    )


@pytest.mark.parametrize(
    "kind, near",
    [
        ("div_precison", "div_precision"),
        ("dvi_precision", "div_precision"),
        ("precisionMode", "precision_mode"),
        ("accuracy_precision", ""),
    ],
)
def test_a_misspelt_precision_kind_is_an_error_not_an_ignored_attribute(kind, near):
    src = _kernel("TDIV", "f32", 16, 64, f"precisionType = #pto<{kind} high_precision>")
    with pytest.raises(ParseError) as e:
        parse_program(src, "k.pto")
    said = str(e.value)
    assert said.startswith("k.pto:") and f"unknown precision kind {kind!r}" in said
    assert ("did you mean " + near) in said if near else "did you mean" not in said
    assert "div_precision, recip_precision" in said  # the kinds it knows


def test_an_attribute_that_is_no_precision_stays_a_warning():
    src = _kernel("TDIV", "f32", 16, 64, "zz_mode = #pto<fast_math on>")
    r = simulate(parse_program(src, "k.pto"), "a2a3", functional=False)
    (w,) = [w for w in r.warnings if "zz_mode" in w]
    assert w.endswith(
        "warning: attribute zz_mode = #pto<fast_math on> is not modelled for TDIV: ignored "
        "(its timing and values are those without it)"
    )


@pytest.mark.parametrize(
    "op, attr",
    [
        ("TDIV", "#pto<exp_precision high_precision>"),
        ("TEXP", "#pto<div_precision default>"),
        ("TSQRT", "#pto<pow_precision high_precision>"),
        ("TLOG", "#pto<rem_precision high_precision>"),
    ],
)
@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_a_kind_that_does_not_belong_to_the_op_is_an_error(op, attr, target):
    src = _kernel(op, "f32", 16, 64, f"precisionType = {attr}")
    with pytest.raises(
        VerifyError, match=f"precisionType = {attr.replace('<', '.').replace('>', '.')}"
    ):
        simulate(parse_program(src, "k.pto"), target, functional=False)


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_unmodelled_attributes_are_report_warnings(target):
    src = _kernel("TEXP", "f32", 16, 64, "fastMath = true")
    r = simulate(parse_program(src, "k.pto"), target, functional=False)
    assert any("attribute fastMath = True is not modelled for TEXP" in w for w in r.warnings)
    # attributes the engine reads are not warned about
    src = _kernel("TEXP", "f32", 16, 64)
    assert not simulate(parse_program(src, "k.pto"), target, functional=False).warnings


# --- A2/A3: ignored (costed and computed as the default), with a warning ------------------


@pytest.mark.parametrize("op", sorted({o for ops in KINDS.values() for o in ops}))
@pytest.mark.parametrize("shape", [(16, 64), (8, 128), (32, 64), (16, 48)])
def test_a2a3_ignores_the_mode(op, shape):
    dt = "f32"
    rows, cols = shape
    plain, r0 = _cycles(_kernel(op, dt, rows, cols), "a2a3", op)
    high, r1 = _cycles(_kernel(op, dt, rows, cols, _attr(op)), "a2a3", op)
    assert high == plain
    assert not r0.warnings
    assert any("A2/A3 ignores the precision argument" in w for w in r1.warnings)


# --- A5: costed from the TRECIP high_precision fits ----------------------------------------


def _recip_fit(dt: str, loops: int, high: bool) -> float:
    """data/a5_formula_params.csv, TRECIP 1-D rows (the reference's numbers)."""
    p = {
        ("f32", True): (345.21788, 48.715084),
        ("f32", False): (1.9081456, 64.516464),
        ("f16", True): (168.14754, 40.213115),
        ("f16", False): (3.5491803, 68.737705),
    }
    a, b = p[(dt, high)]
    return a * loops + b


@pytest.mark.parametrize("dt, lanes", [("f32", 64), ("f16", 128)])
@pytest.mark.parametrize("rows", [1, 4, 16, 40])
def test_a5_trecip_high_precision_is_the_fit(dt, lanes, rows):
    cols = lanes * 2
    loops = math.ceil(rows * cols / lanes)
    high, r = _cycles(_kernel("TRECIP", dt, rows, cols, _attr("TRECIP")), "a5", "TRECIP")
    low, _ = _cycles(_kernel("TRECIP", dt, rows, cols), "a5", "TRECIP")
    assert high == round(_recip_fit(dt, loops, True))
    assert low == round(_recip_fit(dt, loops, False))
    assert not r.warnings
    # at least 3x the default, at most the ratio of the slopes
    assert 3 <= high / low <= (345.22 / 1.908 if dt == "f32" else 168.15 / 3.549)


@pytest.mark.parametrize("op", ["TDIV", "TDIVS"])
@pytest.mark.parametrize("dt, lanes", [("f32", 64), ("f16", 128)])
@pytest.mark.parametrize(
    "rows, cols, valid", [(16, 2, None), (8, 4, None), (16, 2, (10, 1)), (3, 1, None)]
)
def test_a5_division_adds_the_ieee_routine(op, dt, lanes, rows, cols, valid):
    cols *= lanes
    if valid is not None:
        valid = (valid[0], valid[1] * lanes - 8)  # 2-D: rows not contiguous
    plain, _ = _cycles(_kernel(op, dt, rows, cols, valid=valid), "a5", op)
    high, r = _cycles(_kernel(op, dt, rows, cols, _attr(op), valid=valid), "a5", op)
    rp, _ = _cycles(_kernel("TRECIP", dt, rows, cols, valid=valid), "a5", "TRECIP")
    rh, _ = _cycles(_kernel("TRECIP", dt, rows, cols, _attr("TRECIP"), valid=valid), "a5", "TRECIP")
    assert not r.warnings
    # the routine's extra cycles are TRECIP's (same loops), within rounding
    assert abs((high - plain) - (rh - rp)) <= 1
    assert high > 3 * plain


@pytest.mark.parametrize(
    "op, dt",
    [
        ("TREM", "f16"),
        ("TFMOD", "f16"),
        ("TEXP", "f32"),
        ("TLOG", "f16"),
        ("TSQRT", "f32"),
        ("TRSQRT", "f32"),
    ],
)
def test_a5_modes_it_cannot_cost_warn_and_cost_the_default(op, dt):
    plain, _ = _cycles(_kernel(op, dt, 16, 128), "a5", op)
    high, r = _cycles(_kernel(op, dt, 16, 128, _attr(op)), "a5", op)
    assert high == plain
    assert len(r.warnings) == 1 and "on a5" in r.warnings[0]


def test_a5_trem_f32_high_precision_is_dearer():
    for rows in (4, 16):
        plain, _ = _cycles(_kernel("TREM", "f32", rows, 64), "a5", "TREM")
        high, r = _cycles(_kernel("TREM", "f32", rows, 64, _attr("TREM")), "a5", "TREM")
        assert not r.warnings and high > plain + 300 * rows


# --- computed: IEEE division ---------------------------------------------------------------


@pytest.mark.parametrize("target", ["a2a3", "a5"])
@pytest.mark.parametrize("op", ["TDIV", "TDIVS", "TRECIP"])
@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_high_precision_division_is_ieee(target, op, dt):
    rng = np.random.default_rng(7)
    rows, cols = 16, 64
    npdt = np.float32 if dt == "f32" else np.float16
    a = (rng.standard_normal(rows * cols) * 10).astype(npdt)
    b = (rng.standard_normal(rows * cols) * 3 + 0.5).astype(npdt)
    src = _kernel(op, dt, rows, cols, _attr(op))
    _, r = _cycles(src, target, op, functional=True, inputs={"a": a, "b": b})
    got = r.output("out")
    if op == "TDIV":
        want = (a.astype(np.float64) / b.astype(np.float64)).astype(npdt)
    elif op == "TDIVS":
        want = (a.astype(np.float64) / 3.0).astype(npdt)
    else:
        want = (1.0 / a.astype(np.float64)).astype(npdt)
    np.testing.assert_array_equal(got, want)


def test_a2a3_in_place_tdivs_keeps_its_reciprocal_multiply_with_the_mode():
    # A2/A3 ignores the mode: float TDIVS in place is still vmuls by 1/s (the quirk)
    src = (
        _kernel("TDIVS", "f32", 16, 64, _attr("TDIVS"))
        .replace("outs(%z : ", "outs(%x : ")
        .replace("pto.tstore ins(%z", "pto.tstore ins(%x")
    )
    plain = src.replace(" {" + _attr("TDIVS") + "}", "")
    a = np.random.default_rng(3).standard_normal(16 * 64).astype(np.float32) * 100
    outs = [
        simulate(parse_program(s, "k.pto"), "a2a3", inputs={"a": a}).output("out")
        for s in (src, plain)
    ]
    np.testing.assert_array_equal(outs[0], outs[1])


# --- validate: the variant high_precision ---------------------------------------------------


def test_validate_accepts_high_precision(tmp_path):
    p = tmp_path / "cases.csv"
    p.write_text(
        HEADER + "TRECIP,f32,16,64,,,high_precision,5600\nTRECIP,f32,16,64,,,,95\n"
        "TDIV,f16,16,128,,,high_precision,2800\nTADD,f32,16,64,,,high_precision,60\n"
    )
    r = validate(load_cases(p), "a5")
    hp, plain, div, add = r["cases"]
    assert hp["predicted"] == round(_recip_fit("f32", 16, True))
    assert plain["predicted"] == round(_recip_fit("f32", 16, False))
    assert div["predicted"] > 10 * 94 and not div["warnings"]
    assert add["predicted"] is None and "no precision mode" in add["reason"]
    r2 = validate(load_cases(p), "a2a3")
    assert r2["cases"][0]["predicted"] == r2["cases"][1]["predicted"]
    assert "ignores the precision argument" in r2["cases"][0]["warnings"][0]


def test_bad_variant_names_high_precision(tmp_path):
    p = tmp_path / "cases.csv"
    p.write_text(HEADER + "TDIV,f32,16,64,,,highprec,60\n")
    with pytest.raises(UserError, match="high_precision"):
        load_cases(p)


def test_python_builder_takes_the_mode():
    from sim.kernel.builder import Kernel

    def run(target, op, mode):
        k = Kernel("x")
        a, b, c = (k.tile("vec", "f32", 16, 64) for _ in range(3))
        k.instr(op, c, a, b, precisionType=mode) if op == "TDIV" else k.instr(
            op, c, a, precisionType=mode
        )
        return simulate(k, target, functional=False)

    for op in ("TDIV", "TRECIP"):
        assert (
            run("a5", op, "high_precision").total_cycles
            > 10 * run("a5", op, "default").total_cycles
        )
        r = run("a2a3", op, "high_precision")
        assert r.total_cycles == run("a2a3", op, "default").total_cycles and r.warnings
    with pytest.raises(UserError, match="expected high_precision or default, found 'fast'"):
        run("a5", "TDIV", "fast")
