"""ptosim validate / calibrate: case files, accuracy, least-squares recovery."""

import csv
import json
import shutil
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.base.errors import UserError
from sim.studies.calibrate import fit, load_cases, validate, write_model
from sim.target import load_target, models_dir
from sim.target.model import CceCost
from sim.timing import Shape, lower
from sim.timing.plan import evaluate, linear_terms

REFERENCE_CASES = models_dir() / "a2a3" / "calibration" / "reference_cases.csv"
HEADER = "op,dtype,rows,cols,valid_rows,valid_cols,variant,measured_cycles\n"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sim", *args], capture_output=True, text=True)


def _write(tmp_path, body, name="cases.csv"):
    p = tmp_path / name
    p.write_text(HEADER + body)
    return p


def test_accuracy_is_one_minus_relative_error(tmp_path):
    # TADD f32 16x64 is one vadd of 16 repeats: 24 + 2*16 = 56 cycles (timing-model.md §4).
    p = _write(tmp_path, "TADD,f32,16,64,,,,70\nTADD,f32,16,64,,,,56\n")
    r = validate(load_cases(p), "a2a3")
    assert [c["predicted"] for c in r["cases"]] == [56, 56]
    assert r["cases"][0]["accuracy"] == pytest.approx(1 - 14 / 70, abs=1e-4)
    assert r["cases"][1]["accuracy"] == 1.0
    assert r["median_accuracy"] == pytest.approx((0.8 + 1.0) / 2, abs=1e-4)


def test_validate_json_contract(tmp_path):
    p = _write(tmp_path, "TDIVS,f32,16,64,,,inplace,40\nTCVT,f32>f16,16,64,8,48,,50,extra\n")
    out = _cli("validate", str(p), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) >= {"cases", "median_accuracy", "mean_accuracy"}
    first = data["cases"][0]
    assert first["op"] == "TDIVS" and first["variant"] == "inplace"
    assert isinstance(first["predicted"], int) and isinstance(first["accuracy"], float)
    # in-place float TDIVS on A2/A3 is one vmuls by 1/s: 26 + 16 repeats
    assert first["predicted"] == 42


@pytest.mark.parametrize(
    "row, reason",
    [
        ("TADD,f32,16,64,,,tile_scalar,60", "variant tile_scalar: the op has no tile/scalar"),
        ("TRELU,f32,16,64,,,binary,50", "variant binary: means nothing for the op"),
        ("TROWSUM,f32,16,64,,,inplace,80", "variant inplace: means nothing for the op"),
    ],
)
def test_a_variant_that_means_nothing_for_the_op_gets_no_prediction(tmp_path, row, reason):
    # it was predicted as the plain op, as if the variant had been measured on it
    op, variant = row.split(",")[0], row.split(",")[6]
    p = _write(tmp_path, f"{row}\n{row.replace(',' + variant + ',', ',,')}\n")
    meant, plain = validate(load_cases(p), "a2a3")["cases"]
    assert meant["predicted"] is None and meant["accuracy"] is None
    assert meant["reason"].startswith(f"{op}: {reason}")
    assert plain["variant"] == "" and plain["predicted"] is not None and plain["reason"] is None


@pytest.mark.parametrize(
    "row, message",
    [
        ("TFOO,f32,16,64,,,,50", r"cases.csv:2: column op: unknown opcode 'TFOO'"),
        ("TADD,f99,16,64,,,,50", r"cases.csv:2: column dtype"),
        (
            "TADD,f32,16,sixty,,,,50",
            r"cases.csv:2: column cols: expected a positive integer, found 'sixty'",
        ),
        ("TADD,f32,16,64,,,sideways,50", r"cases.csv:2: column variant"),
        ("TADD,f32,16,64,,,,-3", r"cases.csv:2: column measured_cycles"),
    ],
)
def test_bad_rows_name_the_line(tmp_path, row, message):
    p = _write(tmp_path, row + "\n")
    with pytest.raises(UserError, match=message):
        load_cases(p)
    out = _cli("validate", str(p))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_missing_column_is_an_error(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("op,dtype,rows,cols\nTADD,f32,16,64\n")
    with pytest.raises(UserError, match=r"c.csv:1: header: .*missing valid_rows"):
        load_cases(p)


def test_reference_cases_validate():
    cases = load_cases(REFERENCE_CASES)
    assert len(cases) > 500
    r = validate(cases, "a2a3")
    assert len(r["cases"]) == len(cases)
    # the 910B3-fitted single instructions (timing-model.md §2.4) are reproduced closely
    with REFERENCE_CASES.open() as f:
        sources = [
            row["source"] for row in csv.DictReader(line for line in f if not line.startswith("#"))
        ]
    fitted = [c for c, s in zip(r["cases"], sources, strict=True) if s.startswith("910B3")]
    assert len(fitted) == 60
    assert min(c["accuracy"] for c in fitted) > 0.85
    assert sorted(c["accuracy"] for c in fitted)[len(fitted) // 2] > 0.95


def _perturbed_model(tmp_path, changes):
    """A copy of a2a3 whose vector cost table has some figures changed: 'the hardware'."""
    hw = tmp_path / "hw"
    shutil.copytree(load_target("a2a3").path, hw)
    rows = list(
        csv.reader(
            line
            for line in (hw / "vector_costs.csv").read_text().splitlines()
            if not line.startswith("#")
        )
    )
    head = rows[0]
    for r in rows[1:]:
        if r[0] in changes:
            for k, v in changes[r[0]].items():
                r[head.index(k)] = str(v)
    with (hw / "vector_costs.csv").open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    return hw


def test_calibrate_recovers_perturbed_figures(tmp_path):
    # "Hardware" where vadd starts slower (head 14 + tail 14 = 28) and streams at 3/repeat,
    # and vmuls costs 2/repeat.
    hw = _perturbed_model(
        tmp_path,
        {
            "vadd": {"head_cycles": 14, "slope_cycles_per_repeat": 3},
            "vmuls": {"slope_cycles_per_repeat": 2},
        },
    )
    shapes = [(r, 64) for r in (1, 4, 16, 64, 128)] + [(8, 128), (16, 96)]
    body = ""
    for op, variant in (("TADD", ""), ("TMULS", ""), ("TDIVS", "inplace")):
        for rows, cols in shapes:
            body += f"{op},f32,{rows},{cols},,,{variant},1\n"
    p = _write(tmp_path, body, "shapes.csv")
    truth = validate(load_cases(p), hw)
    measured = "".join(
        f"{c['op']},f32,{c['rows']},{c['cols']},,,{c['variant']},{c['predicted']}\n"
        for c in truth["cases"]
    )
    m = _write(tmp_path, measured, "measured.csv")
    cases = load_cases(m)
    before = validate(cases, "a2a3")
    assert before["median_accuracy"] < 0.95
    costs = fit(cases, "a2a3")
    assert costs["vadd"].latency_cycles == pytest.approx(28, abs=0.5)
    assert costs["vadd"].slope_cycles_per_repeat == pytest.approx(3, abs=0.05)
    assert costs["vmuls"].slope_cycles_per_repeat == pytest.approx(2, abs=0.05)
    out = write_model("a2a3", costs, tmp_path / "fitted", "test")
    after = validate(cases, out)
    assert after["median_accuracy"] > 0.99
    # the written directory is a complete target
    assert load_target(out).name == "a2a3-calibrated"
    assert (out / "ops.toml").is_file() and (out / "semantics.toml").is_file()


def test_calibrate_recovers_figures_through_barrier_restarts(tmp_path):
    # "Hardware" where vdiv is slower: head 15 + tail 26 = 41 (share of the tail as in the
    # table, 19/30), 5 per repeat. TDIV pays vdiv cold (41 + 5r); TDIVS and TRECIP pay it
    # right after the dup's barrier, which under the default "tail" rule costs tail + 5r:
    # linear_terms gives that restart the coefficient tail/latency on vdiv's latency.
    hw = _perturbed_model(
        tmp_path, {"vdiv": {"head_cycles": 15, "tail_cycles": 26, "slope_cycles_per_repeat": 5}}
    )
    shapes = [(r, 64) for r in (1, 4, 16, 64, 128)] + [(8, 128), (16, 96)]
    body = "".join(
        f"{op},f32,{rows},{cols},,,,1\n"
        for op in ("TDIVS", "TDIV", "TADDC")
        for rows, cols in shapes
    )
    truth = validate(load_cases(_write(tmp_path, body, "shapes.csv")), hw)
    measured = "".join(
        f"{c['op']},f32,{c['rows']},{c['cols']},,,,{c['predicted']}\n" for c in truth["cases"]
    )
    cases = load_cases(_write(tmp_path, measured, "measured.csv"))
    assert validate(cases, "a2a3")["median_accuracy"] < 0.9
    costs = fit(cases, "a2a3")
    assert costs["vdiv"].latency_cycles == pytest.approx(41, abs=0.5)
    assert costs["vdiv"].tail_cycles == pytest.approx(26, abs=0.5)
    assert costs["vdiv"].slope_cycles_per_repeat == pytest.approx(5, abs=0.05)
    assert costs["vadd"].latency_cycles == pytest.approx(24, abs=0.5)  # unchanged
    after = validate(cases, write_model("a2a3", costs, tmp_path / "fitted", "test"))
    assert after["median_accuracy"] > 0.99


# --- linear_terms == evaluate (the calibration's linear form of the cold cost) -------------

_A2A3 = load_target("a2a3")
# (opcode, dst dtype, src dtype, variant): barrier-free ops, intra-op barriers, V->S waits,
# masked F-ops whose floor exceeds the restart tail, copies and scalar loops
_LINEAR_OPS = [
    ("TADD", "f32", "", ""),
    ("TEXP", "f32", "", ""),
    ("TADDS", "f32", "", ""),
    ("TDIV", "f32", "", ""),
    ("TDIVS", "f32", "", ""),
    ("TDIVS", "f16", "", ""),
    ("TDIVS", "f32", "", "inplace"),
    ("TDIVS", "i32", "", ""),
    ("TRECIP", "f32", "", ""),
    ("TADDC", "f32", "", ""),
    ("TXOR", "i32", "", ""),
    ("TCVT", "i16", "f32", ""),
    ("TRSQRT", "f32", "", "tmp"),
    ("TREM", "f32", "", ""),
    ("TREM", "i32", "", ""),
    ("TFMOD", "f32", "", ""),
    ("TFMODS", "f32", "", ""),
    ("TREMS", "f32", "", ""),
    ("TREMS", "i32", "", ""),
    ("TCMP", "f32", "", ""),
    ("TCMPS", "f32", "", ""),
    ("TSEL", "f32", "", ""),
    ("TPRELU", "f32", "", ""),
    ("TROWSUM", "f32", "", ""),
    ("TROWMAX", "f32", "", ""),
    ("TROWSUM", "i32", "", ""),
    ("TROWMIN", "i16", "", ""),
    ("TCOLSUM", "f32", "", ""),
    ("TCOLSUM", "f32", "", "binary"),
    ("TCOLMAX", "f16", "", ""),
    ("TROWEXPAND", "f32", "", ""),
    ("TROWEXPANDADD", "f32", "", ""),
    ("TCOLEXPANDMUL", "f32", "", ""),
    ("TEXPANDS", "f32", "", ""),
]


def _linear_value(items, costs, floor, rule):
    const, coef = linear_terms(items, costs, floor, rule)
    param = {"latency": lambda c: c.latency_cycles, "slope": lambda c: c.slope_cycles_per_repeat}
    return const + sum(v * param[kind](costs(name)) for (kind, name), v in coef.items())


@st.composite
def _shapes(draw):
    op, dt, src, variant = draw(st.sampled_from(_LINEAR_OPS))
    rows = draw(st.sampled_from([1, 2, 3, 8, 16, 17, 64, 255, 256, 300]))
    cols = draw(st.sampled_from([8, 16, 32, 40, 64, 72, 96, 100, 128, 192, 256, 336, 1024]))
    vr = draw(st.integers(1, rows))
    vc = draw(st.integers(1, cols))
    static = draw(st.booleans())
    if static:
        vr, vc = rows, cols
    extra = draw(st.sampled_from([(), (("cmp", "ne"),), (("dst_layout", "DN"),)]))
    return Shape(
        op,
        dt,
        rows,
        cols,
        vc if static else None,
        vr,
        vc,
        src_dtype=src,
        variant=variant,
        extra=extra,
    )


@settings(max_examples=400, deadline=None)
@given(shape=_shapes(), rule=st.sampled_from(["tail", "latency"]))
def test_linear_terms_equal_evaluate_on_the_cost_table(shape, rule):
    items = lower(shape, "PIPE_V", _A2A3).items
    floor = _A2A3.vector["count_mode_floor_cycles"]
    want = evaluate(items, _A2A3.cce, floor, rule)[0]
    assert _linear_value(items, _A2A3.cce, floor, rule) == pytest.approx(want, abs=1e-6)


_FIGURE = st.sampled_from([0.0, 0.5, 1.0, 3.0, 11.0, 14.0, 16.0, 19.0, 32.0])


@settings(max_examples=400, deadline=None)
@given(
    shape=_shapes(),
    rule=st.sampled_from(["tail", "latency"]),
    floor=st.sampled_from([0, 16, 25]),
    data=st.data(),
)
def test_linear_terms_equal_evaluate_on_any_cost_table(shape, rule, floor, data):
    # the same identity whatever the figures: head 0, tail 0, tail below / equal to /
    # above the floor, fractional figures (a calibrated table)
    items = lower(shape, "PIPE_V", _A2A3).items
    table = {}

    def costs(name):
        if name not in table:
            table[name] = CceCost(
                name,
                data.draw(_FIGURE),
                data.draw(_FIGURE),
                data.draw(_FIGURE),
                data.draw(st.booleans()),
            )
        return table[name]

    want = evaluate(items, costs, floor, rule)[0]
    assert _linear_value(items, costs, floor, rule) == pytest.approx(want, abs=1e-6)


def test_calibrate_cli_writes_model_and_prints_before_after(tmp_path):
    p = _write(tmp_path, "TADD,f32,16,64,,,,60\nTADD,f32,64,64,,,,160\nTADD,f32,4,64,,,,36\n")
    out = _cli("calibrate", str(p), "--target", "a2a3", "-o", str(tmp_path / "m"))
    assert out.returncode == 0, out.stderr
    assert "before" in out.stdout and "after" in out.stdout
    again = _cli("validate", str(p), "--target", str(tmp_path / "m"), "--json")
    assert json.loads(again.stdout)["median_accuracy"] > 0.97
    exists = _cli("calibrate", str(p), "-o", str(tmp_path / "m"))
    assert exists.returncode == 2 and "not empty" in exists.stderr


def test_cases_outside_the_target_checks_are_still_predicted(tmp_path):
    # TRELU i16 is not in A2/A3's TRELU type list, but a measured case means the hardware
    # ran it: predict it (one vrelu of 16*64*2/256 = 8 repeats: 23 + 8) and flag it.
    p = _write(tmp_path, "TRELU,i16,16,64,,,,40\nTADD,f32,16,64,,,,56\n")
    r = validate(load_cases(p), "a2a3")
    relu, add = r["cases"]
    assert relu["legal"] is False and relu["predicted"] == 23 + 8
    assert add["legal"] is True and add["predicted"] == 56
    out = _cli("validate", str(p))
    assert out.returncode == 0 and "outside the target's checks" in out.stdout


def test_unpredictable_case_is_reported_not_fatal(tmp_path):
    # three 256x256 f32 tiles (256 KiB each) cannot be placed in A2/A3's 192 KiB UB: that
    # case gets no prediction and a reason; the other cases are still scored
    p = _write(tmp_path, "TADD,f32,256,256,,,,500\nTADD,f32,16,64,,,,56\nTEXP,f32,16,64,,,,70\n")
    r = validate(load_cases(p), "a2a3")
    big, add, exp = r["cases"]
    assert big["predicted"] is None and big["accuracy"] is None
    assert "does not fit in UB" in big["reason"]
    assert add["predicted"] == 56 and add["reason"] is None
    assert r["summary"]["cases"] == 3 and r["summary"]["predicted"] == 2
    assert r["summary"]["unpredicted"] == 1
    assert r["families"]["binary"]["unpredicted"] == 1
    out = _cli("validate", str(p))
    assert out.returncode == 0, out.stderr
    assert (
        "no prediction: " in out.stdout and "1 without a prediction" in out.stdout.splitlines()[-1]
    )


def test_validate_json_numbers_are_numbers(tmp_path):
    p = _write(tmp_path, "TADD,f32,16,64,8,,,56.5\nTADD,f32,256,256,,,,500\n")
    data = json.loads(_cli("validate", str(p), "--json").stdout)
    first, big = data["cases"]
    assert (first["rows"], first["cols"], first["valid_rows"], first["valid_cols"]) == (
        16,
        64,
        8,
        64,
    )
    assert first["measured_cycles"] == 56.5 and big["measured_cycles"] == 500
    assert isinstance(big["measured_cycles"], int) and big["predicted"] is None
    assert isinstance(data["summary"]["unpredicted"], int)


def test_validate_reports_per_op_family(tmp_path):
    # binary: TADD f32 16x64 = 56 (exact) and TSUB predicted 56 vs 100 (0.56);
    # unary: TEXP f32 16x64 = vexp 31 + 2*16 = 63 vs 63 (exact)
    p = _write(tmp_path, "TADD,f32,16,64,,,,56\nTSUB,f32,16,64,,,,100\nTEXP,f32,16,64,,,,63\n")
    r = validate(load_cases(p), "a2a3")
    fam = r["families"]
    assert set(fam) == {"binary", "unary"}
    assert fam["binary"]["median_accuracy"] == pytest.approx((1.0 + 0.56) / 2, abs=1e-4)
    assert fam["binary"]["within_15_percent"] == 0.5
    assert fam["unary"] == {
        "cases": 1,
        "predicted": 1,
        "unpredicted": 0,
        "median_accuracy": 1.0,
        "mean_accuracy": 1.0,
        "within_15_percent": 1.0,
    }
    text = _cli("validate", str(p)).stdout
    assert "per op family:" in text
    assert any(
        line.strip().startswith("binary") and "50% within 15%" in line for line in text.splitlines()
    )


def test_an_internal_error_on_one_case_is_reported_not_fatal(tmp_path, monkeypatch):
    import sim.studies.calibrate as cal

    real = cal._plan

    def flaky(case, tgt):
        if case.op.op == "TSUB":
            raise KeyError("boom")
        return real(case, tgt)

    monkeypatch.setattr(cal, "_plan", flaky)
    p = _write(tmp_path, "TSUB,f32,16,64,,,,56\nTADD,f32,16,64,,,,56\n")
    r = validate(load_cases(p), "a2a3")
    bad, good = r["cases"]
    assert (
        bad["predicted"] is None
        and "internal error" in bad["reason"]
        and "KeyError" in bad["reason"]
    )
    assert good["predicted"] == 56 and r["summary"]["unpredicted"] == 1
