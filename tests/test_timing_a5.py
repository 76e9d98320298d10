"""A5 vector timing: the per-op vector-function fits of timing-model.md §11.1."""

import csv

import pytest

from sim.target import load_target, models_dir
from sim.timing import Shape, lower

A5 = load_target("a5")


def cycles(op, dt, rows, cols, vrows=None, vcols=None, src=""):
    vr, vc = vrows or rows, vcols or cols
    return lower(Shape(op, dt, rows, cols, cols, vr, vc, src), "PIPE_V", A5).cold_cycles


def test_reference_worked_examples():
    # §11.1: TADD f32 64x64 1-D: 1.247*64 + 55.07 ≈ 135
    assert cycles("TADD", "f32", 64, 64) == 135
    # TADD 2-D, 64 rows, 48 of 64 cols: (1.875*1 + 2.876)*64 + 44.34 ≈ 348
    assert cycles("TADD", "f32", 64, 64, 64, 48) == 348
    # TDIVS f32 1-D: 1.908*loops + 64.5; 16x64 -> 16 loops -> 95
    assert cycles("TDIVS", "f32", 16, 64) == round(1.908 * 16 + 64.5)
    # TEXP f32 1-D: 1.967*loops + 62.7; 32x64 -> 32 loops
    assert abs(cycles("TEXP", "f32", 32, 64) - (1.967 * 32 + 62.7)) <= 1


def test_fits_are_per_lane_count_not_per_shape():
    # f16 has 128 lanes: a 16x128 f16 TADD is 16 loops, the same as 16x64 f32 (1-D fits
    # of TADD are identical for fp16 and fp32 in the table)
    assert cycles("TADD", "f16", 16, 128) == cycles("TADD", "f32", 16, 64)
    # one row is always 1-D, whatever the valid width
    assert cycles("TSUB", "f32", 1, 256, 1, 200) < cycles("TSUB", "f32", 4, 256, 4, 200)


def test_ops_without_a_fit_or_a_vf_program_fall_back_to_the_cce_lowering():
    # integer TREM has no VF program (vf_programs.csv: float only)
    p = lower(Shape("TREM", "i32", 16, 64, 64, 16, 64), "PIPE_V", A5)
    assert any(i.name == "vdiv" for i in p.items)
    q = lower(Shape("TADD", "f32", 16, 64, 64, 16, 64), "PIPE_V", A5)
    assert [i.name for i in q.items] == ["TADD VF fit"]


def test_unfitted_ops_use_the_vf_model():
    # TABS f32 16x64 (no fit): start-up 23 - 2 + loop dispatch 2 + chain (VLDS->VABS
    # forwarding 6 - 1, VABS->VSTS 3, store 9) + drain 12 = 52; 16 iterations at II 1 (one
    # store port) -> 68
    p = lower(Shape("TABS", "f32", 16, 64, 64, 16, 64), "PIPE_V", A5)
    assert [i.name for i in p.items] == ["TABS VF model"]
    assert p.cold_cycles == 52 + 16
    # TADDS has no fit at all; its i16 form runs like fp16 (same lanes and form): compare
    # with the fitted fp16 TMINS, a one-load one-store ALU op like TADDS
    assert cycles("TADDS", "i16", 16, 128) == pytest.approx(cycles("TMINS", "f16", 16, 128), abs=3)
    # the SFU rate: f16 VEXP-class ops take II 8 per port (vfsim initiation_interval.csv),
    # so a TLOG f16 costs 4 per 128-lane iteration, f32 2 per 64-lane one
    f32 = [cycles("TLOG", "f32", r, 64) for r in (16, 32)]
    f16 = [cycles("TLOG", "f16", r, 128) for r in (16, 32)]
    assert (f32[1] - f32[0], f16[1] - f16[0]) == (32, 64)


def test_vf_model_reproduces_the_fitted_ops():
    # The analytic VF model, run on the ops that do have fits, against those fits: 1-D and
    # 2-D, f32 and f16, several heights and widths. Its figures come from the VfSim tables
    # (and two 2-D row constants), not from these fits' parameters.
    from sim.timing.formula import formula_cycles
    from sim.timing.vf import vf_cycles

    accs = []
    for op in (
        "TADD",
        "TSUB",
        "TMUL",
        "TDIVS",
        "TEXP",
        "TSQRT",
        "TRSQRT",
        "TRECIP",
        "TNEG",
        "TMINS",
    ):
        for dt, E in (("f32", 64), ("f16", 128)):
            for rows in (1, 4, 16, 64):
                for cols, vc in (
                    (E, E),
                    (2 * E, 2 * E),
                    (4 * E, 4 * E),
                    (2 * E, E + E // 2),
                    (4 * E, 3 * E),
                ):
                    s = Shape(op, dt, rows, cols, cols, rows, vc)
                    f, v = formula_cycles(s, A5), vf_cycles(s, A5)
                    accs.append(1 - abs(v - f) / f)
    assert len(accs) == 10 * 2 * 4 * 5
    assert sorted(accs)[len(accs) // 2] > 0.95
    assert sum(a >= 0.85 for a in accs) / len(accs) >= 0.95
    assert min(accs) > 0.8


def test_every_vf_program_resolves():
    from sim.timing.vf import _core, program_instructions

    vec = A5.vector
    core = _core(
        (A5.path / vec["vf_isa"]).resolve(),
        (A5.path / vec["vf_isa_extra"]).resolve(),
        (A5.path / vec["vf_programs"]).resolve(),
    )
    assert len(core.programs) > 50
    for prog in core.programs.values():
        for form in ("fp32", "fp16"):
            assert program_instructions(core, prog, form, ("f32", "f16")) is not None, (
                prog.op,
                form,
            )


def test_every_fitted_op_and_dtype_is_reachable():
    path = models_dir() / "a5" / "vector_formulas.csv"
    rows = list(
        csv.DictReader(line for line in path.read_text().splitlines() if not line.startswith("#"))
    )
    names = {"fp32": "f32", "fp16": "f16", "bf16": "bf16", "int8": "i8"}
    seen = set()
    for r in rows:
        if r["op"] in ("TCVT", "TRECIP") or r["src_dtype"] not in names:
            continue
        dt = names[r["src_dtype"]]
        lanes = 256 // {"f32": 4, "f16": 2, "bf16": 2, "i8": 1}[dt]
        key = (r["op"], dt)
        if key in seen:
            continue
        seen.add(key)
        full = lower(Shape(r["op"], dt, 8, lanes, lanes, 8, lanes), "PIPE_V", A5)
        assert [i.kind for i in full.items] == ["vf"], key
    assert {"TADD", "TSUB", "TMUL", "TDIVS", "TEXP", "TSQRT", "TNEG", "TMINS", "TSEL"} <= {
        o for o, _ in seen
    }


def test_a2a3_is_unaffected():
    a2 = load_target("a2a3")
    assert lower(Shape("TADD", "f32", 16, 64, 64, 16, 64), "PIPE_V", a2).cold_cycles == 56
