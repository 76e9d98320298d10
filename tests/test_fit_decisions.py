"""Per-op decisions between the decomposition and the formula fits (sim.timing.fits),
``validate --explain`` and the leave-shapes-out cross-validation (sim.studies.crossval)."""

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sim.base.errors import UserError
from sim.isa.opcodes import OPCODES
from sim.studies.calibrate import load_cases, validate
from sim.studies.crossval import cross_validate
from sim.target import load_target
from sim.timing import Shape, lower
from sim.timing.fits import decision, fit_estimate, fit_table, mark_restarts
from sim.timing.plan import evaluate

A2 = load_target("a2a3")
A5 = load_target("a5")
REFERENCE_CSV = Path("/work/shared/reference/data/a2a3_formula_params.csv")
# ops with barriers inside, each decided one way or the other
MULTI_STEP = ("TDIVS", "TROWSUM", "TROWEXPAND", "TCOLMAX", "TCOLSUM", "TREM", "TSEL", "TGATHER")


def _plan(op, dt, rows, cols, target=A2, valid=None):
    vr, vc = valid or (rows, cols)
    return lower(Shape(op, dt, rows, cols, vc, vr, vc), "PIPE_V", target)


def _readings(op, dt, rows, cols):
    """(the fits' reading, the mechanism) of one op: its plan costed with every restart
    inside the op as a tail and as a full latency."""
    p = _plan(op, dt, rows, cols)
    floor = A2.vector["count_mode_floor_cycles"]
    return tuple(evaluate(mark_restarts(p.items, r), A2.cce, floor)[0] for r in ("tail", "latency"))


def test_every_decided_op_is_an_opcode_with_a_reading():
    path = A2.path / A2.vector["fit_decisions"]
    rows = list(csv.DictReader(line for line in path.open() if not line.startswith("#")))
    assert rows
    for r in rows:
        assert r["op"] in OPCODES, r["op"]
        assert r["reading"] in ("fit", "mechanism"), r
        assert r["evidence"].strip(), r["op"]


def test_the_decision_follows_the_table_and_defaults_to_the_mechanism():
    assert decision(A2, "TDIVS").rule == A2.vector["barrier_restart"] == "tail"
    assert decision(A2, "TCOLMAX").rule == A2.vector["mechanism_restart"] == "latency"
    # an op the table does not list: the mechanism
    d = decision(A2, "TREM")
    assert (d.reading, d.rule) == ("mechanism", "latency")
    # a target without the table (A5) keeps its own costing
    assert decision(A5, "TCOLMAX") is None
    assert fit_estimate("TCOLMAX", "f32", (16, 64), (16, 64), A5) is None


@pytest.mark.parametrize("op", MULTI_STEP)
def test_model_is_the_decided_reading_at_every_shape(op):
    # the reading is the op's, not the shape's: inside and outside the fitted widths
    rule = decision(A2, op).rule
    for dt, rows, cols in (("f32", 16, 64), ("f32", 64, 64), ("f16", 15, 192), ("f32", 8, 256)):
        fit_reading, mechanism = _readings(op, dt, rows, cols)
        assert fit_reading <= mechanism  # a full latency is never cheaper than a tail
        want = fit_reading if rule == "tail" else mechanism
        assert _plan(op, dt, rows, cols).cold_cycles == math.floor(want + 0.5), (dt, rows, cols)


@pytest.mark.parametrize("op", ("TCOLMAX", "TREM", "TSEL", "TGATHER", "TROWEXPAND", "TDIVS"))
def test_cost_grows_with_rows(op):
    for dt, cols in (("f32", 64), ("f16", 192)):
        costs = [_plan(op, dt, r, cols).cold_cycles for r in (1, 2, 4, 8, 16, 32)]
        assert costs == sorted(costs) and costs[0] < costs[-1], (dt, costs)


def test_column_reduction_rows_add_up_under_the_mechanism():
    # TCOLMAX f32 C = 64 (one repeat per row, count mode): each further row is one count-
    # mode vmax restarting after the previous row's barrier (its latency, the floor, one
    # repeat) and its own barrier
    vmax = A2.cce("vmax")
    per_row = (
        vmax.head_cycles
        + vmax.tail_cycles
        + A2.vector["count_mode_floor_cycles"]
        + vmax.slope_cycles_per_repeat
        + A2.vector["barrier_cycles"]
    )
    c = [_plan("TCOLMAX", "f32", r, 64).cold_cycles for r in (8, 9, 40)]
    assert c[1] - c[0] == per_row
    assert c[2] - c[0] == 32 * per_row


def test_tgather_per_row_marginal_matches_the_910b3_measurement():
    # timing-model.md §2.4: TGATHER's per-row marginal measured on a 910B3 is 46.6 cycles
    # (one vgather + vmuls + barrier per row); the mechanism gives it within 10 %
    one, two = (_plan("TGATHER", "f32", r, 64).cold_cycles for r in (16, 17))
    assert abs((two - one) - 46.6) / 46.6 < 0.1


@pytest.mark.skipif(not REFERENCE_CSV.exists(), reason="reference formula CSV not available")
def test_fit_estimate_is_the_reference_line_and_only_inside_its_shapes():
    with REFERENCE_CSV.open() as f:
        ref = {(r["op"], r["dtype"], r["cols"]): r for r in csv.DictReader(f)}
    r = ref[("TCOLMAX", "fp32", "64")]
    for rows in (1, 16, 64):
        e = fit_estimate("TCOLMAX", "f32", (rows, 64), (rows, 64), A2)
        assert e.cycles == round(float(r["slope"]) * rows * 64 + float(r["bias"]))
    # another width, an integer type, a partial valid region: no number, a reason
    for dt, shape, valid, why in (
        ("f32", (16, 256), (16, 256), "cols 256 is not fitted"),
        ("i16", (16, 64), (16, 64), "i16 is not fitted"),
        ("f32", (16, 64), (16, 40), "valid region 16x40"),
    ):
        e = fit_estimate("TCOLMAX", dt, shape, valid, A2)
        assert e.cycles is None and why in e.reason, e
    # TEXP / TSQRT fall back to the "any" rows (timing-model.md §9)
    t = ref[("TEXP", "any", "*")]
    e = fit_estimate("TEXP", "f16", (8, 96), (8, 96), A2)
    assert e.cycles == round(float(t["slope"]) * 8 * 96 + float(t["bias"]))
    # the bundled table is the reference's, row for row
    assert len(fit_table(A2)) == len(ref)


def test_a_bad_reading_names_the_file(tmp_path):
    copy = tmp_path / "a2a3"
    shutil.copytree(A2.path, copy)
    (copy / "fit_decisions.csv").write_text("op,reading,evidence\nTDIVS,maybe,none\n")
    with pytest.raises(UserError, match=r"fit_decisions.csv: op TDIVS: column reading"):
        decision(load_target(copy), "TDIVS")


def _cases(tmp_path, text):
    p = tmp_path / "c.csv"
    p.write_text("op,dtype,rows,cols,valid_rows,valid_cols,variant,measured_cycles\n" + text)
    return p


def test_explain_shows_mechanism_fit_and_decision(tmp_path):
    p = _cases(
        tmp_path, "TCOLMAX,f32,16,64,,,,300\nTDIVS,f16,16,512,,,,400\nTADD,f32,16,64,,,,56\n"
    )
    r = validate(load_cases(p), "a2a3", explain=True)["cases"]
    col, div, add = (c["explain"] for c in r)
    # column reduction: the model is the mechanism; its fit is inside (f32, cols 64)
    assert col["model"] == col["mechanism"] == r[0]["predicted"]
    assert (
        col["reading"] == "mechanism" and col["fit"] is not None and col["fit"] < col["mechanism"]
    )
    # TDIVS f16 cols 512: the fits' reading, cheaper than the mechanism; no fit at 512
    assert div["reading"] == "fit" and div["model"] < div["mechanism"]
    assert div["fit"] is None and "cols 512" in div["fit_reason"]
    # a single instruction: both readings agree, no fit for the op
    assert add["model"] == add["mechanism"] and add["fit"] is None
    # without --explain the report carries none
    assert "explain" not in validate(load_cases(p), "a2a3")["cases"][0]


def test_explain_on_the_command_line(tmp_path):
    p = _cases(tmp_path, "TCOLMAX,f32,64,64,,,,2460\n")
    run = [sys.executable, "-m", "sim", "validate", str(p), "--explain"]
    out = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    assert "mechanism" in out and "fit " in out and "model: mechanism" in out
    js = subprocess.run(run + ["--json"], capture_output=True, text=True, check=True).stdout
    e = json.loads(js)["cases"][0]["explain"]
    assert e["model"] == e["mechanism"]


def test_cross_validation_holds_shapes_out(tmp_path):
    # two widths of one op: each fold's model never saw the held-out width, and the
    # nearest-fit reading of a held-out width uses the other width's line
    rows = "".join(
        f"TMULS,f32,{r},{c},,,,{round(0.0156 * r * c + b)}\n"
        for c, b in ((64, 26), (96, 43))
        for r in (8, 16, 32)
    )
    p = _cases(tmp_path, rows)
    rep = cross_validate(load_cases(p), "a2a3", by="cols", k=2)
    assert rep["folds"] == 2
    s = rep["families"]["scalar"]
    assert s["cases"] == 6 and s["nearest_fit_cases"] == 6
    # the model crosses the count-mode switch between the widths (64: a whole repeat, 96:
    # count mode); the line of the other width does not
    assert s["cross_validated"] > s["nearest_fit"]
    with pytest.raises(ValueError):
        cross_validate(load_cases(p), "a2a3", by="shape")


def test_cross_validation_by_element_type_has_no_fit_to_extrapolate(tmp_path):
    # one width in two element types: a held-out type has no formula line of its own in
    # training, and a line of the other type is not used for it
    rows = "".join(
        f"TMULS,{dt},{r},64,,,,{round(s * r * 64 + 26)}\n"
        for dt, s in (("f32", 0.0156), ("f16", 0.0078))
        for r in (8, 16, 32)
    )
    rep = cross_validate(load_cases(_cases(tmp_path, rows)), "a2a3", by="dtype", k=2)
    s = rep["families"]["scalar"]
    assert rep["folds"] == 2 and s["cases"] == 6
    assert s["nearest_fit_cases"] == 0 and s["nearest_fit"] is None
    assert s["cross_validated"] is not None
