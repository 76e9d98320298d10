"""Vector lowering (sim/timing/vector.py and the family modules) against the reference.

Expected figures are derived by hand from timing-model.md §2-4 with the cost table in
models/a2a3/vector_costs.csv; each test writes the arithmetic out. Notation: lat = head +
tail, F = 16-cycle count-mode floor of F-ops (vadd, vsub, vmul, vdiv, vmax, vmin, vand,
vor, and — CSV evidence, see vector_costs.csv — vadds, vmuls, vmaxs, vmins), r =
ceil(C/E). Costs used: vadd/vsub/vmax/vmin 24+2r, vmul 25+2r, vdiv 30+4r, vand/vor/vnot
20+2r, vadds 25+r, vmuls 26+r, vmaxs 23+r, vmins 23+r, vexp 31+2r, vln 33+2r, vsqrt 39+2r,
vrsqrt 24+r, vector_dup 24+r, vconv 27+r (f16: vdiv 30+8r, vsqrt
39+4r per 128-lane repeat), vsel 27+2r, vcadd 46+7r, vcmax 32+7r, vcgadd
38+r, vcgmax 31+r, vcmpv_eq/lt 6+2r, vcmpv_ge 36+2r, vcmpvs 6+2r, vbrcb 18 flat; cfg, bar
and flag items 1 cycle each.

Two rules for the first vector instruction after a barrier (machine.toml [vector]
``barrier_restart``; a V->S wait inside an op counts as a barrier):

* ``"latency"`` — it pays head + tail (+F) again, like a cold start. This is exactly
  timing-model.md §4's Variant S arithmetic: the tests that pin the reference's worked
  examples and per-row figures (TDIVS 135, TREM ≈329/row, TFMOD ≈167/row,
  TSEL 59 + 35/row, DN TROWSUM 255, ...) run on a copy of a2a3 with that rule (fixture
  ``lat``). One worked example is departed from on purpose: TROWSUM 16x128 (§4: 240)
  runs its whole-repeat steps in norm mode (216 under this rule; sim.timing.vreduce).
* ``"tail"`` (the a2a3 default) — its head and the count-mode floor overlap the drain:
  it pays slope*r + max(tail, F if masked F-op else 0). Restart costs used below (tails
  from vector_costs.csv): vadd/vsub/vmax/vmin 2r+14 (masked 2r+16), vmul 2r+15 (masked
  2r+16), vdiv 4r+19 (19 > F either way), vand/vor 2r+12 (masked 2r+16), vnot 2r+12,
  vadds 15+r / vmuls 15+r (masked 16+r), vconv 13+r, vector_dup 13+r, vsel 14+2r, vcadd
  32+7r, vcmax 22+7r, vcgadd 24+r, vcgmax 17+r, vcmpvs / vcmpv_eq 2r (placeholder tail 0),
  vbrcb 18. These tests use the bundled target (``cold`` / ``plan``).

An intra-op barrier switches the stream to "restart" whatever came before it
(sim.timing.plan.timeline): a barrier after a ``copy_ubuf_to_ubuf`` or a V->S wait at the
very start of an op also makes the next vector instruction a restart.
"""

from __future__ import annotations

import csv
import math
import re
import shutil
import statistics
import tempfile
from pathlib import Path

import pytest

import sim
from sim.base.errors import VerifyError
from sim.target import load_target
from sim.timing import Shape, lower

T = load_target("a2a3")
FORMULA_CSV = Path("/work/shared/reference/data/a2a3_formula_params.csv")


def S(op, dtype, rows, cols, vr=None, vc=None, vcols="static", **kw) -> Shape:
    """A Shape with capacity rows x cols, valid vr x vc; ``vcols`` is the static valid
    cols (default: = vc, a static tile; None = dynamic)."""
    vr = rows if vr is None else vr
    vc = cols if vc is None else vc
    static = vc if vcols == "static" else vcols
    return Shape(op, dtype, rows, cols, static, vr, vc, **kw)


class At:
    """``plan`` / ``cold`` of a Shape on one target."""

    def __init__(self, target):
        self.target = target

    def plan(self, *a, **kw):
        return lower(S(*a, **kw), "PIPE_V", self.target)

    def cold(self, *a, **kw) -> int:
        return self.plan(*a, **kw).cold_cycles


def _fit_reading_target():
    """a2a3 with every op in its fits' reading of a barrier (``barrier_restart``, "tail"):
    a copy of the bundled target without the per-op ``fit_decisions`` table. The
    ``*_tail_rule`` tests below derive that reading's arithmetic; which ops the bundled
    target costs that way is ``test_bundled_target_follows_fit_decisions``."""
    copy = Path(tempfile.mkdtemp(prefix="a2a3_fit_reading_")) / "a2a3"
    shutil.copytree(T.path, copy)
    machine = copy / "machine.toml"
    text, n = re.subn(r"(?m)^fit_decisions\s*=.*\n", "", machine.read_text())
    assert n == 1, "machine.toml must set [vector] fit_decisions exactly once"
    machine.write_text(text)
    return load_target(copy)


TFIT = _fit_reading_target()
_DEFAULT = At(TFIT)
plan, cold = _DEFAULT.plan, _DEFAULT.cold


@pytest.fixture(scope="module")
def lat(tmp_path_factory) -> At:
    """a2a3 with ``barrier_restart = "latency"``: a copy of the bundled target directory
    with that one key of machine.toml rewritten (timing-model.md §4's arithmetic)."""
    copy = tmp_path_factory.mktemp("a2a3_latency") / "a2a3"
    shutil.copytree(load_target("a2a3").path, copy)
    machine = copy / "machine.toml"
    text, n = re.subn(
        r'(?m)^barrier_restart\s*=\s*"[a-z]+"', 'barrier_restart = "latency"', machine.read_text()
    )
    assert n == 1, "machine.toml must set [vector] barrier_restart exactly once"
    machine.write_text(text)
    target = load_target(copy)
    assert target.vector["barrier_restart"] == "latency"
    assert {k: v for k, v in target.vector.items() if k != "barrier_restart"} == {
        k: v for k, v in T.vector.items() if k != "barrier_restart"
    }
    return At(target)


def test_default_rule_is_tail():
    assert T.vector["barrier_restart"] == "tail"


# --- §4 worked examples -----------------------------------------------------------------


def test_worked_examples(lat):
    # §4's worked examples are exactly the "latency" rule's arithmetic (see the module doc)
    assert lat.cold("TADD", "f32", 16, 64) == 56  # flat: one vadd rep 16: 24 + 32
    assert lat.cold("TADD", "f32", 16, 16) == 74  # small shape: 1 + (24+32+16) + 1
    assert lat.cold("TADD", "f32", 16, 72) == 80  # count n=1152 (18 reps): 4+24+36+16
    assert lat.cold("TDIVS", "f32", 16, 64) == 135  # dup (24+16) + bar + vdiv (30+64)
    # TROWSUM 16x128: §4 writes 240 (count vadd 4+24+32+16, bar, count vcadd 4+46+112,
    # bar); the model runs both steps in norm mode with a full mask (sim.timing.vreduce:
    # the 910B3 fits carry neither the 8 cfg nor the floor): vadd 24+32, bar, vcadd
    # 46+112, bar
    assert lat.cold("TROWSUM", "f32", 16, 128) == 216
    # back to back: TEXP cold (31+32) then TADD warm (32) = 95
    assert (
        lat.plan("TEXP", "f32", 16, 64).cold_cycles + lat.plan("TADD", "f32", 16, 64).warm_cycles
        == 95
    )


def test_dn_special_rowsum(lat):
    dn = (("dst_layout", "DN"),)
    # 64x128: vcgadd(128) 38+128, bar, vadd(8) 24+16, bar, vcgadd(8) 38+8, bar = 255
    assert lat.cold("TROWSUM", "f32", 64, 128, extra=dn) == 255
    # 32x256: 166 +1+ 40 +1+ (24+8) +1+ (38+4) +1 = 284
    assert lat.cold("TROWSUM", "f32", 32, 256, extra=dn) == 284
    # 16x512: 166 +1+ (38+16) +1+ (38+2) +1 = 263
    assert lat.cold("TROWSUM", "f32", 16, 512, extra=dn) == 263
    # 8x1024: 166 +1+ 54 +1+ (24+2) +1+ (38+1) +1 = 289
    assert lat.cold("TROWSUM", "f32", 8, 1024, extra=dn) == 289
    # TROWMAX 64x128: vcgmax (31+128) +1+ vmax (24+16) +1+ vcgmax (31+8) +1 = 241
    assert lat.cold("TROWMAX", "f32", 64, 128, extra=dn) == 241
    # same geometry without a DN destination: general path (pair vadd + final vcadd,
    # norm mode) 24+128 +1+ 46+448 +1 = 648
    assert lat.cold("TROWSUM", "f32", 64, 128) == 648


# --- §3 paths ---------------------------------------------------------------------------


def test_partial_valid_paths():
    # dynamic 16x128 tile, valid 16x100: row-repeat (4): vadd(16) + masked vadd(16) + 2 cfg
    # = 2 + 24 + 32 + 32 + 16
    p = plan("TADD", "f32", 16, 128, 16, 100, vcols=None)
    assert [i.repeats for i in p.items if i.kind == "v"] == [16, 16]
    assert p.cold_cycles == 106
    # dynamic 2x256, valid 2x100: Rows < k+1 (k = 4): per-row count mode, 4 cfg:
    # 4 + (24 + 4 + 16) + (4 + 16)
    p = plan("TADD", "f32", 2, 256, 2, 100, vcols=None)
    assert [i.repeats for i in p.items if i.kind == "v"] == [2, 2]
    assert p.cold_cycles == 68
    # valid 2x128 of the same tile: per-row norm mode, no cfg: 24 + 4 + 4
    assert cold("TADD", "f32", 2, 256, 2, 128, vcols=None) == 32
    # run-time contiguity: dynamic tile whose valid width is the capacity: flat
    assert cold("TADD", "f32", 16, 64, 8, 64, vcols=None) == 24 + 16
    # tile-scalar ops decide contiguity at compile time only: row-repeat, 1 rep per chunk
    assert [
        i.repeats for i in plan("TADDS", "f32", 16, 64, 8, 64, vcols=None).items if i.kind == "v"
    ] == [8]


def test_one_row_shapes():
    assert cold("TADD", "f32", 1, 16) == 44  # small shape: 2 + 24 + 2 + 16
    assert cold("TADD", "f32", 1, 100) == 48  # count (Cols > E, not multiple): 4+24+4+16
    assert cold("TADDS", "f32", 1, 100) == 47  # count: 4 + 25 + 2 + 16
    assert cold("TEXP", "f32", 1, 100) == 37  # unary flat: vexp(1) + masked tail(1): 2+31+2+2
    assert cold("TADD", "f32", 1, 128) == 28  # flat 2 reps: 24 + 4


def test_tall_narrow_binary_costs_per_row():
    # 255x16: small shape, one masked repeat per row: 2 + 24 + 510 + 16
    assert cold("TADD", "f32", 255, 16) == 552
    # 256x16 (64-byte rows): still one repeat per row on hardware (on-board; §3 would go
    # flat, 64 full repeats = 152), split at 255 rows: 2 cfg + (24 + 510 + 16) + (2 + 16)
    p = plan("TADD", "f32", 256, 16)
    assert [(i.repeats, i.masked) for i in p.items if i.kind == "v"] == [(255, True), (1, True)]
    assert p.cold_cycles == 570
    # per row, not per 256 bytes: twice the rows, about twice the cycles
    assert cold("TADD", "f32", 512, 16) == 2 + (24 + 510 + 16) + (510 + 16) + (4 + 16)
    # the unary family keeps the flat path for narrow contiguous rows at any height
    assert cold("TEXP", "f32", 256, 16) == 31 + 2 * 64
    # dynamic 300x128 valid 300x100: (5) per-row heads (300 x rep 1) + tails per 255 rows
    # 2 + 24 + 300*2 + (2*255 + 16) + (2*45 + 16) = 1258
    p = plan("TADD", "f32", 300, 128, 300, 100, vcols=None)
    assert p.cold_cycles == 1258
    assert [i.repeats for i in p.items if i.kind == "v" and i.masked] == [255, 45]


def test_tall_narrow_tile_scalar_costs_per_row():
    # A tile-scalar op on a capacity row narrower than one repeat: flat while Rows <= 255
    # (formula CSV: TADDS fp32 cols 32 costs 1 cycle per 64 elements), one masked repeat per
    # row past 255 rows (on-board ≈3x the flat figure), split at 255 rows. Family
    # over ops, dtypes (E = 64 / 128 lanes), widths and heights.
    # integer lanes: the .int rows, 4 cycles under the float latency and no floor
    # (vector_costs.csv, fitted to on-board ratios)
    costs = {"TADDS": 25, "TMULS": 26, "TMINS": 23, "TMAXS": 23}
    for op, flat_lat in costs.items():
        for dt, E in (("f32", 64), ("f16", 128), ("i32", 64), ("i16", 128)):
            lat0, F = (flat_lat, 16) if dt.startswith("f") else (flat_lat - 4, 0)
            for cols in (8 * (E // 64), E // 2, E - 16):
                # short: flat over the contiguous tile
                n = 64 * cols
                flat = lat0 + n // E + (2 + 1 + F if n % E else 0)
                assert cold(op, dt, 64, cols) == flat, (op, dt, cols)
                for rows in (256, 300, 511, 700):
                    p = plan(op, dt, rows, cols)
                    segs = [(i.repeats, i.masked) for i in p.items if i.kind == "v"]
                    want = [(min(255, rows - r), True) for r in range(0, rows, 255)]
                    assert segs == want, (op, dt, rows, cols)
                    # 2 cfg + first instruction cold + the rest in stream, floor each
                    assert p.cold_cycles == 2 + lat0 + rows + F * len(want), (op, dt, rows, cols)
    # a tile at least one repeat wide is not narrow: still flat past 255 rows
    assert cold("TADDS", "f32", 256, 64) == 4 + 25 + 256 + 16  # > 255 repeats: count mode
    # the valid region does not matter, the capacity row does: 300 rows of a 16-wide f32
    # tile with 200 valid rows cost per valid row
    p = plan("TADDS", "f32", 300, 16, 200, 16)
    assert [(i.repeats, i.masked) for i in p.items if i.kind == "v"] == [(200, True)]


def test_over_255_repeats_switch_to_count_mode():
    assert cold("TADD", "f32", 128, 256) == 4 + 24 + 1024 + 16  # 512 repeats
    assert cold("TEXP", "f32", 128, 256) == 4 + 31 + 1024  # unary: count, no F
    assert cold("TADDS", "f32", 128, 256) == 4 + 25 + 512 + 16  # vadds: F (CSV evidence)


def test_over_255_boundary():
    # exactly 255 repeats stays in norm mode; 256 switches to count mode
    assert cold("TADD", "f32", 255, 64) == 24 + 510
    assert cold("TADD", "f32", 256, 64) == 4 + 24 + 512 + 16


# --- element-wise families --------------------------------------------------------------


def test_single_instruction_ops():
    # 16x64 f32: flat, 16 repeats
    expected = {
        "TSUB": 24 + 32,
        "TMUL": 25 + 32,
        "TDIV": 30 + 64,
        "TMAX": 24 + 32,
        "TMIN": 24 + 32,
        "TABS": 29 + 16,
        "TEXP": 31 + 32,
        "TLOG": 33 + 32,
        "TSQRT": 39 + 32,
        "TRSQRT": 24 + 16,
        "TRELU": 23 + 16,
        "TNEG": 26 + 16,
        "TADDS": 25 + 16,
        "TSUBS": 25 + 16,
        "TMULS": 26 + 16,
        "TMAXS": 23 + 16,
        "TMINS": 23 + 16,
        "TLRELU": 26 + 16,
    }
    for op, want in expected.items():
        assert cold(op, "f32", 16, 64) == want, op


def test_tile_scalar_count_mode_pays_floor():
    # capacity 96 > E and not a multiple: count mode n = 16*96 (24 reps), 4 cfg + F
    assert cold("TADDS", "f32", 16, 96) == 4 + 25 + 24 + 16
    assert cold("TMULS", "f32", 16, 96) == 4 + 26 + 24 + 16
    assert cold("TMINS", "f32", 16, 96) == 4 + 23 + 24 + 16
    # f16 capacity 96 < E = 128: flat (no small-shape step for tile-scalar ops), 12 reps
    assert cold("TADDS", "f16", 16, 96) == 25 + 12


def test_bitwise_16bit_lanes(lat):
    assert lat.cold("TAND", "i32", 16, 64) == 20 + 32  # 4096 B = 16 Rep16
    assert lat.cold("TOR", "i32", 16, 64) == 20 + 32
    assert lat.cold("TNOT", "i32", 16, 64) == 20 + 32
    # i16 16x64: a 128-byte row is narrower than one repeat -> small shape: 2 + 20 + 32 + 16
    assert lat.cold("TAND", "i16", 16, 64) == 70
    # TXOR: vor bar vand bar vnot bar vand, each pays its latency: 4 * 52 + 3
    assert lat.cold("TXOR", "i32", 16, 64) == 211


def test_taddc_assumption(lat):
    # ASSUMPTION: vadd bar vadd (TSUBC: vsub bar vadd): 56 + 1 + 56
    assert lat.cold("TADDC", "f32", 16, 64) == 113
    assert lat.cold("TSUBC", "f32", 16, 64) == 113


def test_tdivs_forms(lat):
    # float tile/scalar: dup (24+16) bar vdiv (30+64) = 135; scalar/tile the same; TRECIP too
    assert lat.cold("TDIVS", "f32", 16, 64, variant="scalar_tile") == 135
    assert lat.cold("TRECIP", "f32", 16, 64) == 135
    # in place: vmuls by 1/s = 26 + 16
    assert lat.cold("TDIVS", "f32", 16, 64, variant="inplace") == 42
    # f16 vdiv / vsqrt run at the f32 per-element rate (vdiv.f16 8, vsqrt.f16 4 cycles per
    # 128-lane repeat, vector_costs.csv): the same elements cost what f32 costs, over a
    # family of heights; vexp stays native (2 per 128-lane repeat)
    for rows in (1, 8, 16, 40):
        assert (
            lat.cold("TDIV", "f16", rows, 128)
            == lat.cold("TDIV", "f32", rows, 128)
            == 30 + 8 * rows
        )
        assert (
            lat.cold("TSQRT", "f16", rows, 128)
            == lat.cold("TSQRT", "f32", rows, 128)
            == 39 + 4 * rows
        )
        assert lat.cold("TEXP", "f16", rows, 128) == 31 + 2 * rows
        # TDIVS: dup (24 + 1/rep) bar vdiv (30 + 8/rep)
        assert lat.cold("TDIVS", "f16", rows, 128) == (24 + rows) + 1 + (30 + 8 * rows)


def test_trsqrt_three_arg(lat):
    # 5 cfg + dup (24+1) + 16 vsqrt in-stream (16*2) + bar + vdiv cold (30+4+16) + 15 x (4+16)
    assert lat.cold("TRSQRT", "f32", 16, 64, variant="tmp") == 5 + 25 + 32 + 1 + 50 + 15 * 20


def test_tcvt(lat):
    assert lat.cold("TCVT", "f16", 16, 64, src_dtype="f32") == 27 + 16  # E = 64: 16 reps
    assert lat.cold("TCVT", "f32", 16, 128, src_dtype="f16") == 27 + 32  # E = 64: 32 reps
    assert lat.cold("TCVT", "f32", 16, 64, src_dtype="i32") == 27 + 16
    # non-saturating f32 -> i16 (default): vconv(->i32) bar vand(16-bit lanes) bar vconv
    # (27+16) + 1 + (20+32) + 1 + (27+16) = 140; saturating: one vconv
    assert lat.cold("TCVT", "i16", 16, 64, src_dtype="f32") == 140
    assert lat.cold("TCVT", "i16", 16, 64, src_dtype="f32", extra=(("sat", "on"),)) == 43


def test_texpands():
    assert cold("TEXPANDS", "f32", 16, 64) == 4 + 24 + 16
    # dynamic, not contiguous: one count-mode dup per row: 4 + (24+1) + 15*1
    assert cold("TEXPANDS", "f32", 16, 128, 16, 50, vcols=None) == 44


# --- scalar-pipe loops (ASSUMPTION figures from [scalar_loops]) --------------------------


def test_scalar_loops():
    k = T.scalar_loops
    # 4 flags + R*C * per-element figure, not the reference's flat 4
    assert cold("TDIVS", "i32", 16, 64) == 4 + 1024 * k["int_div_cycles_per_element"]
    assert cold("TDIVS", "i32", 16, 64) > 16 * 64 * 10
    assert cold("TRECIP", "i32", 16, 64) == cold("TDIVS", "i32", 16, 64)
    assert cold("TSHL", "i16", 8, 32) == 4 + 256 * k["shift_cycles_per_element"]
    assert cold("TSHR", "i32", 16, 64) == 4 + 1024 * k["shift_cycles_per_element"]


# --- remainder family (§4) ---------------------------------------------------------------


def test_trem_f32_per_row(lat):
    # per row (C <= 64, r = 1): 8 cfg + vdiv 50 + vconv 28 + vmul 43 + vsub 42 + vmul 43
    # + dup 25 + set_cmpmask 1 + vcmpvs 8 + vadd 42 + vsel 29 + 10 bars = 329; + 2 cfg once
    assert lat.cold("TREM", "f32", 1, 64) == 2 + 329
    assert lat.cold("TREM", "f32", 16, 16) == 2 + 16 * 329  # §4: ≈ 5.3k
    # C = 128: count steps r = 2 (vdiv +4, vconv +1, vmul/vsub/vmul/vadd +2 each, vsel +2),
    # vcmpvs ceil(128/64) = 2 (+2): 329 + 4 + 1 + 8 + 2 + 2 = 346
    assert lat.cold("TREM", "f32", 1, 128) == 2 + 346


def test_trem_i32_per_row(lat):
    # 8 cfg; 2x vconv 29, vdiv 50, vconv 28, 2x vconv 29, vmul 43, vsub 42, 2x vconv 29,
    # vmul 43, dup 25, set_cmpmask 1, vcmpvs 8, vadd 42, vsel 29, vconv 28; 14 bars = 448
    assert lat.cold("TREM", "i32", 16, 64) == 2 + 16 * 448


def test_tfmod_per_row(lat):
    # 46+4r + 27+r + 41+2r + 40+2r + 4 bars = 167 at r = 1; + 4 cfg once
    assert lat.cold("TFMOD", "f32", 1, 64) == 4 + 167
    assert lat.cold("TFMOD", "f32", 16, 16) == 4 + 16 * 167  # §4: ≈ 2.7k


def test_tfmods_per_row(lat):
    # §4 ≈ 177: dup 25 + vdiv 50 + vconv 28 + vmuls 27 + vsub 42 + 5 bars. vmuls is an F-op
    # here (CSV evidence), so its count-mode step adds 16: 193 per row; + 4 cfg once
    assert lat.cold("TFMODS", "f32", 1, 64) == 4 + 177 + 16
    assert lat.cold("TFMODS", "f32", 16, 64) == 4 + 16 * 193


def test_trems_per_row(lat):
    # §4 ≈ 280 (table vadds 31, vmuls/vadds without floor): dup 25 + vdiv 50 + vconv 28 +
    # vmuls 27 + vsub 42 + vmuls 27 + vcmpvs 8 + set_cmpmask 1 + vadds 32 + vsel 29 +
    # 10 bars = 279. Here vadds is 25+r and vmuls/vadds pay F: 279 - 6 + 3*16 = 321
    assert lat.cold("TREMS", "f32", 1, 64) == 4 + 321
    assert lat.cold("TREMS", "f32", 16, 64) == 4 + 16 * 321


# --- compare / select (§4) ---------------------------------------------------------------


def test_tcmp(lat):
    # lat once + 2r per row: 6 + 16*2
    assert lat.cold("TCMP", "f32", 16, 64) == 38
    assert lat.cold("TCMP", "f32", 16, 64, extra=(("cmp", "lt"),)) == 38
    assert lat.cold("TCMP", "f32", 16, 64, extra=(("cmp", "ge"),)) == 36 + 32
    # NE: EQ 38 + bar + 4 cfg + count vnot over 16 rows x 32 B (256 16-bit lanes = 2 reps): 20+4
    assert lat.cold("TCMP", "f32", 16, 64, extra=(("cmp", "ne"),)) == 38 + 1 + 4 + 24
    # i32 compares EQ whatever the mode (A2/A3 quirk)
    assert lat.cold("TCMP", "i32", 16, 64, extra=(("cmp", "ge"),)) == 38
    # r = 3 per row (f32 C = 160): 6 + 8*6
    assert lat.cold("TCMP", "f32", 8, 160) == 54
    # split at 240 repeats: one f16 row of 241 repeats -> 2 instructions: 6 + 2*241
    p = lat.plan("TCMP", "f16", 1, 241 * 128)
    assert [i.repeats for i in p.items if i.kind == "v"] == [240, 1]
    assert p.cold_cycles == 6 + 482


def test_tcmps(lat):
    assert lat.cold("TCMPS", "f32", 16, 64) == 6 + 32
    assert lat.cold("TCMPS", "f32", 16, 64, extra=(("cmp", "ne"),)) == 38 + 1 + 4 + 24


def test_tsel(lat):
    # first row: 2 cfg + dup (24+1) + bar + set_cmpmask + bar + vsel (27+2) = 59
    assert lat.cold("TSEL", "f32", 1, 64) == 59
    # further rows: 2 cfg + dup 1 (in stream) + bar + 1 + bar + vsel 29 (after a barrier) = 35
    assert lat.cold("TSEL", "f32", 16, 64) == 59 + 15 * 35
    # C = 128: vsel r = 2 (+2 per row)
    assert lat.cold("TSEL", "f32", 4, 128) == 61 + 3 * 37


def test_tprelu(lat):
    # TMUL 57 + bar + TCMPS(GT) (6+2 + 15*2) + bar + TSEL 584
    assert lat.cold("TPRELU", "f32", 16, 64) == 57 + 1 + 38 + 1 + 584


# --- reductions (§4) ---------------------------------------------------------------------


def test_trowsum_paths(lat):
    # C <= E: final vcadd only (rep = R): 46 + 7*16 + bar
    assert lat.cold("TROWSUM", "f32", 16, 64) == 159
    # C < E: masked vcadd: 2 cfg + 46 + 112 + floor 16 + bar (§2.4 marks vcadd F = no;
    # the formula CSV's masked rows show the floor: models/a2a3/vector_costs.csv)
    assert lat.cold("TROWSUM", "f32", 16, 32) == 177
    # E < C < 2E: copy_ubuf_to_ubuf (16 rows x 256 B = 4096 B / 594.3 B/cyc = 6, + its
    # start-up 13 + 14 as the first of the stream) + bar; masked tail vadd rep 16:
    # 2 + 24 + 32 + 16, bar; vcadd over tmp (norm mode) 46 + 112, bar
    p = lat.plan("TROWSUM", "f32", 16, 96)
    assert [i.kind for i in p.items][:2] == ["copy", "bar"]
    assert p.cold_cycles == 27 + 6 + 1 + 74 + 1 + 158 + 1
    # C = 4E: 2 pair vadds (56 each, norm mode) + bar, tree step (56) + bar, vcadd 158 + bar
    assert lat.cold("TROWSUM", "f32", 16, 256) == 3 * 57 + 159
    # C = 5E + 16: 2 pairs + odd repeat + masked tail (2+24+32+16) + tree + final
    assert lat.cold("TROWSUM", "f32", 16, 336) == 3 * 57 + 75 + 57 + 159


def test_trowmax_paths(lat):
    assert lat.cold("TROWMAX", "f32", 16, 64) == 32 + 112 + 1  # vcmax rep 16
    # C = 3E: vmax(rep0, rep1) 56 + bar, vmax(rep2) 56 + bar, vcmax 32+112 + bar (norm mode)
    assert lat.cold("TROWMAX", "f32", 16, 192) == 57 + 57 + 145
    assert lat.cold("TROWMIN", "f32", 16, 192) == lat.cold("TROWMAX", "f32", 16, 192)


def test_int_row_reduce(lat):
    # per row: 1 cfg + dup (24+1) + bar + 8 blocks x (vadd masked + bar) + 4 flags + scalar
    # fold of 8 partials (ASSUMPTION figure). The block ops compute on integers: the
    # vadd.int / vmax.int rows (20 + 2, no floor; vector_costs.csv), not §4's 24 + 2 + 16
    fold = 8 * lat.target.scalar_loops["row_fold_cycles_per_element"]
    assert lat.cold("TROWSUM", "i32", 16, 64) == 16 * (1 + 25 + 1 + 8 * 23 + 4 + fold)
    # i16: 16 partials per block; C = 64 i16 = 4 blocks
    fold16 = 16 * lat.target.scalar_loops["row_fold_cycles_per_element"]
    assert lat.cold("TROWMAX", "i16", 4, 64) == 4 * (1 + 25 + 1 + 4 * 23 + 4 + fold16)


def test_tcol_reduce(lat):
    # copy row 0 (256 B -> 0 cycles by bandwidth, 1 minimum, + the copy's start-up 13 + 14)
    # + bar + 4 cfg + 15 x (count vadd 24+2+16 + bar) + final bar = (R-1)*(lat+16+2r+1) + 34
    assert lat.cold("TCOLSUM", "f32", 16, 64) == 28 + 1 + 4 + 15 * 43 + 1
    assert lat.cold("TCOLMAX", "f32", 16, 64) == 679
    # one row: the copy alone (+ its two barriers)
    assert lat.cold("TCOLMAX", "f16", 1, 256) == 27 + 1 + 2
    # C = 96 (1.5 repeats), §4's split: 4 cfg + 15 x (count vmin over the aligned 64: 24 + 2
    # + 16, bar), 2 cfg + 15 x (masked vmin rep 1 for the 32-element tail: 24 + 2 + 16, bar)
    assert lat.cold("TCOLMIN", "f32", 16, 96) == 28 + 1 + 4 + 15 * 43 + 2 + 15 * 43 + 1
    # TCOLSUM does not split (formula-CSV evidence in vreduce.py): one count-mode vadd over
    # the 96 elements (2 effective repeats) per row: 15 x (24 + 2*2 + 16 + 1)
    assert lat.cold("TCOLSUM", "f32", 16, 96) == 28 + 1 + 4 + 15 * 45 + 1
    # binary (ASSUMPTION granularity, sim.timing.vreduce): one pass per tree level, a
    # full-mask vadd of 1 repeat per destination row (sources two rows apart: §3's per-row
    # path): level 1: 8 rows (cold 26, then 7 x 2) + bar; level 2: 4 rows (26 + 3*2) + bar;
    # level 3: 2 (26+2) + bar; level 4: 1 (26) + bar; copy tmp row 0 (1 + 27) + bar
    want = (26 + 7 * 2 + 1) + (26 + 3 * 2 + 1) + (26 + 2 + 1) + (26 + 1) + 28 + 1
    assert lat.cold("TCOLSUM", "f32", 16, 64, variant="binary") == want == 159


# --- broadcasts (§4) ---------------------------------------------------------------------


def test_trowexpand(lat):
    read = lat.target.scalar_loops["row_read_cycles_per_element"]
    # one path for every shape (no vbrcb fast path, evidence in vexpand.py): 4 cfg + per
    # row 4 flags + read + count dup (24 + r); the V->S wait breaks the stream every row
    assert lat.cold("TROWEXPAND", "f32", 16, 8) == 4 + 16 * (4 + read + 25)
    assert lat.cold("TROWEXPAND", "f32", 16, 64) == 4 + 16 * (4 + read + 25)
    assert lat.cold("TROWEXPAND", "f32", 16, 128) == 4 + 16 * (4 + read + 26)


def test_tcolexpand():
    # one copy_ubuf_to_ubuf per row; 256 B rows round to 0 cycles: 1-cycle minimum each;
    # the first copy opens the stream: + its start-up 13 + 14
    assert cold("TCOLEXPAND", "f32", 16, 64) == 27 + 16
    # 4096-byte rows: floor(4096 / 594.33) = 6 per row
    assert cold("TCOLEXPAND", "f32", 16, 1024) == 27 + 96


def test_expand_binary_assumption(lat):
    # TROWEXPANDMUL: vbrcb (18) + bar + per-row vmul (rep 1): 25+2 then 15 x 2
    assert lat.cold("TROWEXPANDMUL", "f32", 16, 64) == 18 + 1 + 27 + 30
    # TCOLEXPANDMUL: per-row vmul only: 25 + 16*2
    assert lat.cold("TCOLEXPANDMUL", "f32", 16, 64) == 57
    # TROWEXPANDADD on 16x100 (dynamic): per-row heads (1 rep) + one masked tail over 16
    # rows: 18 + 1 + 2 cfg + 24 + 16*2 + (32 + 16)
    assert (
        lat.cold("TROWEXPANDADD", "f32", 16, 128, 16, 100, vcols=None) == 18 + 1 + 2 + 24 + 32 + 48
    )


# --- the default "tail" rule (restart after a barrier = slope*r + max(tail, F)) --------------
# Fresh derivations from vector_costs.csv; restart costs are listed in the module doc.


def test_tdivs_tail_rule():
    # dup cold (24+16) + bar 1 + vdiv restart (tail 19 + 4*16) = 40 + 1 + 83 = 124 (§4: 135)
    assert cold("TDIVS", "f32", 16, 64) == 124
    assert cold("TDIVS", "f32", 16, 64, variant="scalar_tile") == 124
    assert cold("TRECIP", "f32", 16, 64) == 124
    assert cold("TDIVS", "f32", 16, 64, variant="inplace") == 42  # one vmuls, no barrier
    # f16 16x128 (16 reps of 128 lanes, vdiv.f16 8 per repeat): dup 40 + 1 + (19 + 128);
    # the formula CSV's TDIVS fp16 cols 128 line gives 0.0703*2048 + 45 = 189
    assert cold("TDIVS", "f16", 16, 128) == 188
    # formula CSV TDIVS fp32 cols 32/64 bias 45: the constant part is dup lat 24 + bar 1 +
    # vdiv tail 19 = 44 (+ slopes 1 + 4 per repeat)
    p = plan("TDIVS", "f32", 16, 64)
    assert p.cold_cycles - 16 * (1 + 4) == 24 + 1 + 19


def test_two_step_ops_tail_rule():
    # TADDC: vadd cold (24+32) + bar + vadd restart (14+32) = 56 + 1 + 46 = 103 (TSUBC alike)
    assert cold("TADDC", "f32", 16, 64) == 103
    assert cold("TSUBC", "f32", 16, 64) == 103
    # TXOR i32 16x64 (16 reps of 16-bit lanes, full mask): vor cold 20+32, then vand, vnot,
    # vand each restart 12+32 = 44 after a barrier: 52 + 3*44 + 3 bars = 187
    assert cold("TXOR", "i32", 16, 64) == 187
    # TCVT f32->i16 non-saturating: vconv (27+16) + bar + vand restart (12+32) + bar
    # + vconv restart (13+16) = 43 + 1 + 44 + 1 + 29 = 118
    assert cold("TCVT", "i16", 16, 64, src_dtype="f32") == 118
    # TCMP NE: 16 vcmpv_eq (6+2, then 15*2) = 38 + bar + 4 cfg + vnot (2 reps, not an F-op)
    # restart 12+4 = 16 -> 59; TCMPS NE the same with vcmpvs
    assert cold("TCMP", "f32", 16, 64, extra=(("cmp", "ne"),)) == 38 + 1 + 4 + 16
    assert cold("TCMPS", "f32", 16, 64, extra=(("cmp", "ne"),)) == 38 + 1 + 4 + 16
    # TRSQRT (tmp): 5 cfg + dup (24+1) + 16 vsqrt in stream (32) + bar + vdiv restart
    # (4 + max(19, 16)) + 15 masked vdiv in stream (4+16 each) = 5+25+32+1+23+300 = 386
    assert cold("TRSQRT", "f32", 16, 64, variant="tmp") == 386


def test_trem_tail_rule():
    # Per row (C <= 64, r = 1), every step after a barrier: 8 cfg + vdiv 4+19 + vconv 1+13
    # + vmul 2+16 + vsub 2+16 + vmul 2+16 + dup(full) 1+5 + set_cmpmask 1 + vcmpvs 2+0
    # + vadd 2+16 + vsel 2+14 + 10 bars = 8+23+14+18+18+18+6+1+2+18+16+10 = 152 (§4: 329).
    # Row 0 enters cold: its vdiv pays 30+4+16 = 50 instead of 23 (+27) -> 179; + 2 cfg once
    assert cold("TREM", "f32", 1, 64) == 2 + 179
    assert cold("TREM", "f32", 16, 16) == 2 + 179 + 15 * 152
    # C = 128 (r = 2): vdiv +4, vconv +1, vmul/vsub/vmul/vadd +2 each, vcmpvs +2, vsel +2
    # -> 169 per row; row 0: vdiv cold 54 vs restart 27 -> 196
    assert cold("TREM", "f32", 1, 128) == 2 + 196
    assert cold("TREM", "f32", 2, 128) == 2 + 196 + 169
    # i32: 8 cfg; (vconv 14 + vconv in stream 1) | vdiv 23 | vconv 14 | (14 + 1) | vmul 18 |
    # vsub 18 | (14 + 1) | vmul 18 | dup 6 | cfg 1 | vcmpvs 2 | vadd 18 | vsel 16 | vconv 14 |
    # 14 bars = 215 per row; row 0's first vconv cold 27+1 (+14) -> 229
    assert cold("TREM", "i32", 16, 64) == 2 + 229 + 15 * 215


def test_tfmod_family_tail_rule():
    # TFMOD per row: vdiv 23 + vconv 14 + vmul 18 + vsub 18 + 4 bars = 77 (§4: 167);
    # row 0: vdiv cold 50 -> 104; + 4 cfg once
    assert cold("TFMOD", "f32", 1, 64) == 4 + 104
    assert cold("TFMOD", "f32", 16, 16) == 4 + 104 + 15 * 77
    # TFMODS per row: dup 1+5 + vdiv 23 + vconv 14 + vmuls 1+max(15,16) + vsub 18 + 5 bars
    # = 6+23+14+17+18+5 = 83; row 0: dup cold 25 (+19) -> 102
    assert cold("TFMODS", "f32", 1, 64) == 4 + 102
    assert cold("TFMODS", "f32", 16, 64) == 4 + 102 + 15 * 83
    # TREMS per row: dup 6 + vdiv 23 + vconv 14 + vmuls 17 + vsub 18 + vmuls 17 + vcmpvs 2
    # + set_cmpmask 1 + vadds 1+max(15,16) + vsel 16 + 10 bars = 141; row 0: dup 25 -> 160
    assert cold("TREMS", "f32", 1, 64) == 4 + 160
    assert cold("TREMS", "f32", 16, 64) == 4 + 160 + 15 * 141


def test_tsel_tprelu_tail_rule():
    # row 0: 2 cfg + dup cold (24+1) + bar + set_cmpmask + bar + vsel restart (14+2) = 46;
    # further rows: 2 cfg + dup in stream 1 + 1 + 1 + 1 + vsel 16 = 22 (§4: 59 + 35/row)
    assert cold("TSEL", "f32", 1, 64) == 46
    assert cold("TSEL", "f32", 16, 64) == 46 + 15 * 22
    # C = 128: vsel r = 2 (+2): 48 + 3 * 24
    assert cold("TSEL", "f32", 4, 128) == 48 + 3 * 24
    # TPRELU: TMUL cold 25+32 = 57 + bar + vcmpvs restart 2 (tail 0) then 15 x 2 = 32
    # + bar + TSEL whose first dup restarts (5+1): 2+6+1+1+1+16 = 27, then 15 x 22
    assert cold("TPRELU", "f32", 16, 64) == 57 + 1 + 32 + 1 + 27 + 15 * 22


def test_row_reduce_tail_rule():
    # TROWSUM 16x128: vadd cold (24+32) + bar = 57; vcadd restart (32 + 7*16) + bar =
    # 145; total 202 (§4: 240; formula CSV 189.5)
    assert cold("TROWSUM", "f32", 16, 128) == 202
    # C <= E: a single vcadd, no restart: unchanged
    assert cold("TROWSUM", "f32", 16, 64) == 46 + 112 + 1
    # 16x96: copy (6 + its start-up 27) + bar; the masked tail vadd after that barrier
    # restarts: 2 cfg + 32 + max(14, 16) + bar; vcadd 144 + bar
    # = 33+1+2+48+1+145 = 230
    assert cold("TROWSUM", "f32", 16, 96) == 230
    # C = 4E: pair vadd 57, pair vadd restart (32 + 14 + 1 = 47), tree 47, final 145
    assert cold("TROWSUM", "f32", 16, 256) == 57 + 47 + 47 + 145
    # C = 5E + 16: 2 pairs + odd repeat (57 + 47 + 47), masked tail (2 + 48 + 1), tree 47,
    # final 145
    assert cold("TROWSUM", "f32", 16, 336) == 57 + 47 + 47 + 51 + 47 + 145
    # TROWMAX 16x192: vmax 57, vmax restart 47, vcmax (22 + 7*16) + 1 = 135
    assert cold("TROWMAX", "f32", 16, 192) == 57 + 47 + 135
    assert cold("TROWMIN", "f32", 16, 192) == 239
    # DN special 64x128: vcgadd cold 38+128 + bar + vadd(8) restart 14+16 + bar + vcgadd(8)
    # restart 24+8 + bar = 166+1+30+1+32+1 = 231 (§4: 255)
    dn = (("dst_layout", "DN"),)
    assert cold("TROWSUM", "f32", 64, 128, extra=dn) == 231
    # 16x512: 166 + 1 + vcgadd(16) 24+16 + 1 + vcgadd(2) 24+2 + 1 = 235
    assert cold("TROWSUM", "f32", 16, 512, extra=dn) == 235
    # TROWMAX 64x128 DN: vcgmax 31+128 + 1 + vmax(8) 14+16 + 1 + vcgmax(8) 17+8 + 1 = 217
    assert cold("TROWMAX", "f32", 64, 128, extra=dn) == 217


def test_int_row_reduce_tail_rule():
    # per row: 1 cfg + dup + bar + 8 x (masked integer vadd after a barrier: 2 + tail 12,
    # no floor (vadd.int), + bar) + 4 flags + fold. Row 0's dup is cold (24+1); every
    # later row starts after the previous row's V->S wait, so its dup restarts (5+1)
    fold = 8 * T.scalar_loops["row_fold_cycles_per_element"]
    row0, row = 1 + 25 + 1 + 8 * 15 + 4 + fold, 1 + 6 + 1 + 8 * 15 + 4 + fold
    assert cold("TROWSUM", "i32", 16, 64) == row0 + 15 * row
    # i16 C = 64: 4 blocks, 16 partials each
    fold16 = 16 * T.scalar_loops["row_fold_cycles_per_element"]
    assert cold("TROWMAX", "i16", 4, 64) == (1 + 25 + 1 + 4 * 15 + 4 + fold16) + 3 * (
        1 + 6 + 1 + 4 * 15 + 4 + fold16
    )


def test_col_reduce_tail_rule():
    # copy row 0 (1 + its cold start-up 13 + 14) + bar + 4 cfg + 15 x (count vadd after a
    # barrier: 2 + max(14, 16) = 18, + bar) + final bar: each row ≈ 1 + max(14, 16) + 2 = 19
    # (§4: 43; CSV ≈ 19.5)
    assert cold("TCOLSUM", "f32", 16, 64) == 28 + 1 + 4 + 15 * 19 + 1 == 319
    assert cold("TCOLMAX", "f32", 16, 64) == 319
    # C = 96 TCOLSUM: one count-mode op of 2 effective repeats per row, a restart after the
    # previous row's barrier: 1 + max(14, 16) + 2*2 = 21 per row (CSV: 21.0 per row);
    # copy of 384 B -> 1-cycle minimum + 27
    assert cold("TCOLSUM", "f32", 16, 96) == 28 + 1 + 4 + 15 * 21 + 1
    # TCOLMIN / TCOLMAX split it (§4; CSV TCOLMAX f32 96 ≈ 35 per row): 4 cfg + 15 x
    # (aligned vmin 2 + 16, bar) + 2 cfg + 15 x (masked tail vmin 2 + 16, bar)
    assert cold("TCOLMIN", "f32", 16, 96) == 28 + 1 + 4 + 15 * 19 + 2 + 15 * 19 + 1
    # binary: one full-mask vadd pass per tree level (1 repeat per destination row, no
    # floor): level 1: 8 rows, first cold 26 then 7 x 2 in stream, bar; level 2: restart
    # tail 14 + 2, then 3 x 2, bar; level 3: 16 + 2, bar; level 4: 16, bar; copy 1
    # restarting (+ tail 14) + bar
    want = (26 + 7 * 2 + 1) + (16 + 3 * 2 + 1) + (16 + 2 + 1) + (16 + 1) + 15 + 1
    assert cold("TCOLSUM", "f32", 16, 64, variant="binary") == want == 116


def test_expand_tail_rule():
    read = T.scalar_loops["row_read_cycles_per_element"]
    # TROWEXPAND: 4 cfg + per row 4 flags + read + count dup after the V->S wait.
    # Row 0's wait drains an idle pipe, so its dup is a cold start (24 + r); every later
    # row's wait drains the previous dup, so that dup restarts (tail 5 + r): 14 per row at
    # r = 1 with the 4-cycle read, the formula CSV's per-row figure
    assert cold("TROWEXPAND", "f32", 16, 64) == 4 + (4 + read + 25) + 15 * (4 + read + 6)
    assert cold("TROWEXPAND", "f32", 16, 128) == 4 + (4 + read + 26) + 15 * (4 + read + 7)
    # a destination one 32-byte block wide takes the same path (no vbrcb: vexpand.py)
    assert cold("TROWEXPAND", "f32", 16, 8) == 4 + (4 + read + 25) + 15 * (4 + read + 6)
    # TROWEXPANDMUL: vbrcb 18 + bar + per-row vmul (rep 1): restart 15+2, then 15 x 2
    assert cold("TROWEXPANDMUL", "f32", 16, 64) == 18 + 1 + 17 + 30
    # TROWEXPANDADD 16x100 of 16x128: 18 + 1 + 2 cfg + vadd restart (14+2) + 15 x 2 + masked
    # tail over 16 rows in stream (32 + 16)
    assert cold("TROWEXPANDADD", "f32", 16, 128, 16, 100, vcols=None) == 18 + 1 + 2 + 16 + 30 + 48
    # no barrier: unchanged
    assert cold("TCOLEXPANDMUL", "f32", 16, 64) == 57


def test_barrier_free_ops_do_not_depend_on_the_rule(lat):
    # without an intra-op barrier the two rules give the same cold and warm costs (the
    # restart cost, the plan entered after a kernel-level barrier, differs by design)
    for args, kw in [
        (("TADD", "f32", 16, 64), {}),
        (("TADD", "f32", 16, 72), {}),
        (("TEXP", "f32", 1, 100), {}),
        (("TADDS", "f32", 128, 256), {}),
        (("TCMP", "f32", 8, 160), {}),
        (("TROWSUM", "f32", 16, 32), {}),
        (("TDIVS", "f32", 16, 64), {"variant": "inplace"}),
        (("TADD", "f32", 300, 128, 300, 100), {"vcols": None}),
    ]:
        a, b = plan(*args, **kw), lat.plan(*args, **kw)
        assert (a.cold_cycles, a.warm_cycles) == (b.cold_cycles, b.warm_cycles), args


def test_restart_cycles_of_a_plan():
    # a plan entered right after a kernel-level barrier on a busy pipe: TADD 16x64 =
    # tail 14 + 2*16 = 46 (cold 56, warm 32); TDIVS: dup restart 5+16 + 1 + vdiv 83 = 105
    p = plan("TADD", "f32", 16, 64)
    assert (p.cold_cycles, p.warm_cycles, p.restart_cycles) == (56, 32, 46)
    assert plan("TDIVS", "f32", 16, 64).restart_cycles == 21 + 1 + 83
    # masked F-op: the floor is larger than the tail: TADD 16x16 (small shape, masked rep 16)
    # 2 cfg + 32 + max(14, 16) = 50 (cold 74 = 2 + 24 + 32 + 16)
    p = plan("TADD", "f32", 16, 16)
    assert (p.cold_cycles, p.restart_cycles) == (74, 50)


def test_restart_cycles_latency_rule(lat):
    # under "latency" a restart costs the same as a cold start
    for args in [("TADD", "f32", 16, 64), ("TADD", "f32", 16, 16), ("TDIVS", "f32", 16, 64)]:
        p = lat.plan(*args)
        assert p.restart_cycles == p.cold_cycles, args


# --- the lightweight formula fits (data/a2a3_formula_params.csv) ------------------------

# Scored on the bundled target (barrier_restart = "tail"). Under §4's "latency" rule every
# barrier-separated step re-pays head + tail and the reductions miss the fits (TCOLMAX
# 41/row at C=64 vs CSV ≈ 17.5/row); under "tail" TCOLMAX (19/row at C <= 64: 1 + max(14,
# 16) + 2) and TROWSUM reach 0.9 (see test_formula_csv_tail_rule_beats_latency). Ops that
# still miss for reasons the restart rule does not touch go here (reason = the median
# measured). None now: TROWMAX (median 0.882, min 0.714 while its whole-repeat steps ran
# in count mode) reaches 0.94 with them in norm mode (sim.timing.vreduce).
# TCOLMAX / TCOLSUM: the bundled target costs column reductions by the mechanism (a full
# latency after each row's barrier, models/a2a3/fit_decisions.csv), which the fits' 17.5-28
# cycles per row contradict; under the fits' reading (TFIT) they reach 0.9
# (test_formula_csv_tail_rule_beats_latency).
_CONFLICT: dict = {
    "TCOLMAX": "fit_decisions.csv: the mechanism, not the fits",
    "TCOLSUM": "fit_decisions.csv: the mechanism, not the fits",
}


# Rows of the formula CSV the model rejects on purpose: f16 vexp runs natively at the f32
# per-repeat rate (reasoning in models/a2a3/vector_costs.csv), where the CSV's TEXP "any"
# row charges it per element like f32 (0.0314 per element = 4 per 128-lane repeat).
_REJECTED = {("TEXP", "f16")}


def _formula_cases(variant="", target=T):
    cases = {}
    with FORMULA_CSV.open() as f:
        for r in csv.DictReader(f):
            op, dt = r["op"], r["dtype"]
            slope, bias = float(r["slope"]), float(r["bias"])
            dtypes = ["f32", "f16"] if dt == "any" else [{"fp32": "f32", "fp16": "f16"}[dt]]
            cols_list = [64, 128, 256] if r["cols"] == "*" else [int(r["cols"])]
            for d in [d for d in dtypes if (op, d) not in _REJECTED]:
                for c in cols_list:
                    for rows in (8, 16, 32, 64):
                        m = round(slope * rows * c + bias)
                        p = lower(
                            Shape(op, d, rows, c, c, rows, c, variant=variant), "PIPE_V", target
                        ).cold_cycles
                        cases.setdefault(op, []).append(1 - abs(p - m) / m)
    return cases


_ACC = _formula_cases() if FORMULA_CSV.exists() else {}


# The ops of the formula CSV the per-op accuracy test covers; every op the CSV fits is one
_FORMULA_OPS = (
    "TADDS",
    "TCOLMAX",
    "TCOLSUM",
    "TDIVS",
    "TEXP",
    "TMINS",
    "TMUL",
    "TMULS",
    "TROWEXPAND",
    "TROWMAX",
    "TROWSUM",
    "TSQRT",
    "TSUB",
)


def test_formula_csv_every_op_is_scored():
    # an op the CSV fits and the accuracy test below does not list would go unscored
    if not _ACC:
        pytest.skip("reference formula CSV not available")
    assert sorted(_ACC) == sorted(_FORMULA_OPS)


@pytest.mark.parametrize(
    "op",
    [
        pytest.param(op, marks=pytest.mark.xfail(strict=True, reason=_CONFLICT[op]))
        if op in _CONFLICT
        else op
        for op in _FORMULA_OPS
    ],
)
def test_formula_csv_accuracy(op):
    if not _ACC:
        pytest.skip("reference formula CSV not available")
    assert statistics.median(_ACC[op]) >= 0.9


def test_formula_csv_tcolsum_is_the_sequential_form():
    # The TCOLSUM fits (R - 1 dependent adds: their cost grows linearly in the rows) are
    # the default sequential form (instructions.md: TCOLSUM's tmp / isBinary is optional);
    # the binary tree (ceil(log2 R) levels, sim.timing.vreduce) is far cheaper than them
    if not FORMULA_CSV.exists():
        pytest.skip("reference formula CSV not available")
    assert statistics.median(_formula_cases(target=TFIT)["TCOLSUM"]) >= 0.9
    assert statistics.median(_formula_cases("binary", target=TFIT)["TCOLSUM"]) < 0.7


def test_formula_csv_tail_rule_beats_latency(lat):
    # the machine.toml evidence for "tail": on the reductions it scores better than §4's rule
    if not _ACC:
        pytest.skip("reference formula CSV not available")
    latency = _formula_cases(target=lat.target)
    fit = _formula_cases(target=TFIT)
    for op in ("TCOLMAX", "TCOLSUM", "TROWMAX", "TROWSUM"):
        assert statistics.median(fit[op]) > statistics.median(latency[op]), op
    assert statistics.median(latency["TCOLMAX"]) < 0.9 <= statistics.median(fit["TCOLMAX"])


# --- row reductions: whole-repeat steps in norm mode --------------------------------


def _row_fit(op, dt, cols):
    """(slope, bias) of the formula CSV row for (op, dtype, cols), or None."""
    key = {"f32": "fp32", "f16": "fp16"}[dt]
    with FORMULA_CSV.open() as f:
        for r in csv.DictReader(f):
            if (r["op"], r["dtype"], r["cols"]) == (op, key, str(cols)):
                return float(r["slope"]), float(r["bias"])
    return None


@pytest.mark.parametrize("op", ["TROWSUM", "TROWMAX", "TROWMIN"])
@pytest.mark.parametrize("dt", ["f32", "f16"])
@pytest.mark.parametrize("reps", [2, 3.25, 5.5])  # C in repeats of E lanes
@pytest.mark.parametrize(
    "R,Rows,Cols", [(1, 1, 0), (16, 16, 0), (37, 64, 0), (300, 300, 0), (8, 32, 1024), (4, 8, 4096)]
)
def test_row_reduce_whole_repeat_steps_norm_mode(op, dt, reps, R, Rows, Cols):
    # Every step of a row reduction over whole repeats (pair / further-repeat ops, tree,
    # final cross-lane op) walks all valid rows in norm mode: full mask, R repeats (split
    # at 255; one instruction per row past a 255-block row stride: 4096 cols), no
    # count-mode cfg; only the C % E tail is masked.
    E = 64 if dt == "f32" else 128
    C = int(reps * E)
    cols = Cols or C
    items = lower(Shape(op, dt, Rows, cols, C, R, C), "PIPE_V", T).items
    vs = [it for it in items if it.kind == "v"]
    masked = [it for it in vs if it.masked]
    assert sum(it.repeats for it in masked) == (R if C % E else 0)
    assert all(it.repeats <= 255 for it in vs)
    cfgs = sum(it.cycles for it in items if it.kind == "cfg")
    assert cfgs == (2 if C % E else 0), [it.describe() for it in items]
    # each unmasked step covers the R rows once (per reps_per_row for the sum's tree)
    steps = [it for it in vs if not it.masked]
    assert sum(it.repeats for it in steps) % R == 0


@pytest.mark.parametrize("op", ["TROWSUM", "TROWMAX"])
@pytest.mark.parametrize(
    "dt,cols",
    [
        ("f32", 96),
        ("f32", 128),
        ("f32", 176),
        ("f32", 240),
        ("f32", 336),
        ("f16", 160),
        ("f16", 304),
        ("f16", 432),
        ("f16", 560),
        ("f16", 656),
    ],
)
def test_row_reduce_wide_rows_near_the_formula_fits(op, dt, cols):
    # C > E rows, 8..64 rows, against the 910B3 per-shape fits: within 15 % up to 16 rows
    # (count mode: TROWMAX f32 16x128 216 vs 176, +23 %); beyond, the fits' smaller
    # per-row slope (≈1.2-1.6 per extra repeat against vmax / vadd's 2) may take the
    # longest rows to 20 % (documented in sim.timing.vreduce). A
    # valid region inside a wider capacity costs the same as the full tile.
    if not FORMULA_CSV.exists():
        pytest.skip("reference formula CSV not available")
    slope, bias = _row_fit(op, dt, cols)
    for rows in (8, 16, 32, 64):
        fit = slope * rows * cols + bias
        got = lower(Shape(op, dt, rows, cols, cols, rows, cols), "PIPE_V", T).cold_cycles
        assert abs(got - fit) / fit <= (0.15 if rows <= 16 else 0.2), (rows, got, fit)
        wide = lower(Shape(op, dt, 2 * rows, 2 * cols, cols, rows, cols), "PIPE_V", T)
        assert wide.cold_cycles == got


@pytest.mark.parametrize("op", ["TROWSUM", "TROWMAX", "TROWMIN"])
@pytest.mark.parametrize("dt", ["f32", "f16"])
@pytest.mark.parametrize("rows", [1, 8, 16, 64, 300])
def test_masked_cross_lane_reduction_pays_the_floor(op, dt, rows):
    # C < E: one masked vcadd / vcmax / vcmin per 255 rows, cold: 2 cfg + the 16-cycle
    # floor per instruction over the full-mask C = E cost (F-ops pay the floor in the
    # stream too, §2.2); a valid region narrower than the capacity
    # (C < Cols = E) is masked the same way
    E = 64 if dt == "f32" else 128
    full = lower(Shape(op, dt, rows, E, E, rows, E), "PIPE_V", T).cold_cycles
    for C in (1, 8, E // 2 + 3, E - 1):
        p = lower(Shape(op, dt, rows, C, C, rows, C), "PIPE_V", T)
        assert p.cold_cycles == full + 2 + 16 * math.ceil(rows / 255), (C, p.detail)
        q = lower(Shape(op, dt, rows, E, C, rows, C), "PIPE_V", T)
        assert q.cold_cycles == p.cold_cycles


def test_masked_row_reductions_near_the_formula_fits():
    # every C < E row of the CSV (TROWSUM / TROWMAX f32 cols 8, 32; f16 32, 64, 96) within
    # 10 % at 8..64 rows (without the floor: 11-13 % cheap at 8 rows)
    if not FORMULA_CSV.exists():
        pytest.skip("reference formula CSV not available")
    seen = 0
    with FORMULA_CSV.open() as f:
        for r in csv.DictReader(f):
            if r["op"] not in ("TROWSUM", "TROWMAX") or r["cols"] == "*":
                continue
            dt = {"fp32": "f32", "fp16": "f16"}[r["dtype"]]
            cols = int(r["cols"])
            if cols >= (64 if dt == "f32" else 128):
                continue
            for rows in (8, 16, 32, 64):
                fit = float(r["slope"]) * rows * cols + float(r["bias"])
                got = lower(Shape(r["op"], dt, rows, cols, cols, rows, cols), "PIPE_V", T)
                assert abs(got.cold_cycles - fit) / fit <= 0.10, (r, rows, got.cold_cycles)
                seen += 1
    assert seen == 40


# --- every op of the list runs end to end ------------------------------------------------

_OPS = [
    ("TADD", "f32", ""),
    ("TSUB", "f32", ""),
    ("TMUL", "f32", ""),
    ("TDIV", "f32", ""),
    ("TMAX", "f32", ""),
    ("TMIN", "f32", ""),
    ("TAND", "i32", ""),
    ("TOR", "i32", ""),
    ("TNOT", "i32", ""),
    ("TXOR", "i32", ""),
    ("TSHL", "i32", ""),
    ("TSHR", "i32", ""),
    ("TREM", "f32", ""),
    ("TREM", "i32", ""),
    ("TFMOD", "f32", ""),
    ("TREMS", "f32", ""),
    ("TREMS", "i32", ""),
    ("TFMODS", "f32", ""),
    ("TDIVS", "f32", ""),
    ("TDIVS", "f32", "inplace"),
    ("TDIVS", "f32", "scalar_tile"),
    ("TDIVS", "i32", ""),
    ("TRECIP", "f32", ""),
    ("TEXP", "f32", ""),
    ("TLOG", "f32", ""),
    ("TSQRT", "f32", ""),
    ("TRSQRT", "f32", ""),
    ("TABS", "f32", ""),
    ("TRELU", "f32", ""),
    ("TNEG", "f32", ""),
    ("TLRELU", "f32", ""),
    ("TADDS", "f32", ""),
    ("TSUBS", "f32", ""),
    ("TMULS", "f32", ""),
    ("TMAXS", "f32", ""),
    ("TMINS", "f32", ""),
    ("TEXPANDS", "f32", ""),
    ("TCVT", "f32>f16", ""),
    ("TCVT", "f32>i16", ""),
    ("TCMP", "f32", ""),
    ("TCMPS", "f32", ""),
    ("TSEL", "f32", ""),
    ("TPRELU", "f32", ""),
    ("TADDC", "f32", ""),
    ("TSUBC", "f32", ""),
    ("TROWSUM", "f32", ""),
    ("TROWMAX", "f32", ""),
    ("TROWMIN", "f32", ""),
    ("TROWSUM", "i32", ""),
    ("TCOLSUM", "f32", ""),
    ("TCOLSUM", "f32", "binary"),
    ("TCOLMAX", "f32", ""),
    ("TCOLMIN", "f32", ""),
    ("TROWEXPAND", "f32", ""),
    ("TCOLEXPAND", "f32", ""),
    *[(f"TROWEXPAND{n}", "f32", "") for n in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")],
    *[(f"TCOLEXPAND{n}", "f32", "") for n in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")],
]


@pytest.mark.parametrize("op,dtype,variant", _OPS)
@pytest.mark.parametrize("shape,valid", [((16, 64), None), ((16, 128), (16, 100))])
def test_simulate_op_runs(op, dtype, variant, shape, valid):
    try:
        r = sim.simulate_op(op, dtype, shape, valid, variant=variant)
    except VerifyError as e:
        if "not available on target" in str(e):
            pytest.skip(str(e))
        raise
    assert r.total_cycles > 0


def test_simulate_op_uses_the_lowering(lat):
    def run(*a, **kw):
        return sim.simulate_op(*a, target=lat.target, **kw).total_cycles

    assert run("TADD", "f32", (16, 64)) == 56
    assert run("TCOLSUM", "f32", (16, 64)) == 679
    assert run("TCOLSUM", "f32", (16, 64), variant="binary") == lat.cold(
        "TCOLSUM", "f32", 16, 64, variant="binary"
    )
    assert run("TDIVS", "f32", (16, 64), variant="inplace") == 42
    assert run("TSEL", "f32", (16, 64)) == 59 + 15 * 35
    # TROWEXPAND on a 1-block dst: the per-row path (4 cfg + 16 x (4 flags + read 4 + 25))
    assert run("TROWEXPAND", "f32", (16, 8)) == 4 + 16 * 33
    # the compare mode reaches the lowering (ops.py uses LT)
    assert run("TCMP", "f32", (16, 64)) == 38


def test_simulate_op_uses_the_lowering_tail_rule():
    # ops the bundled target costs in their fits' reading; derivations in test_*_tail_rule
    assert sim.simulate_op("TADD", "f32", (16, 64)).total_cycles == 56
    assert sim.simulate_op("TDIVS", "f32", (16, 64)).total_cycles == 124
    assert sim.simulate_op("TDIVS", "f32", (16, 64), variant="inplace").total_cycles == 42
    assert sim.simulate_op("TROWEXPAND", "f32", (16, 8)).total_cycles == 4 + 33 + 15 * 14
    assert sim.simulate_op("TCMP", "f32", (16, 64)).total_cycles == 38


def test_bundled_target_follows_fit_decisions(lat):
    # each op with intra-op barriers costs what its row of fit_decisions.csv says: "fit"
    # as the fits' reading (TFIT), the mechanism as the full latency (lat); the table
    # decides, not the shape
    from sim.timing.fits import decision

    shapes = [(16, 64, "f32"), (64, 64, "f16"), (15, 192, "f16"), (16, 256, "f32")]
    seen = set()
    for op in (
        "TDIVS",
        "TRECIP",
        "TROWSUM",
        "TROWMAX",
        "TROWEXPAND",
        "TCOLSUM",
        "TCOLMAX",
        "TSEL",
        "TREM",
        "TFMOD",
        "TXOR",
        "TPRELU",
    ):
        reading = decision(T, op).reading
        seen.add(reading)
        want = TFIT if reading == "fit" else lat.target
        # the two readings differ for the op at one shape at least (it has a restart)
        assert any(cold(op, dt, r, c) != lat.cold(op, dt, r, c) for r, c, dt in shapes), op
        for r, c, dt in shapes:
            assert At(T).cold(op, dt, r, c) == At(want).cold(op, dt, r, c), (op, r, c, dt)
    assert seen == {"fit", "mechanism"}
    # a barrier between ops keeps the target's barrier_restart whatever the op's reading
    assert (
        plan("TADD", "f32", 16, 64).restart_cycles
        == At(T).plan("TADD", "f32", 16, 64).restart_cycles
    )


def test_every_emitted_instruction_has_a_cost_row():
    for op, dtype, variant in _OPS:
        src, dst = (dtype.split(">") + [dtype])[:2] if ">" in dtype else (dtype, dtype)
        for shape in ((16, 64), (3, 100), (300, 40)):
            p = lower(S(op, dst, *shape, src_dtype=src, variant=variant), "PIPE_V", T)
            for it in p.items:
                if it.kind == "v":
                    assert it.name in T.vector_costs, (op, it.name)


def test_texpands_mat_tile_fills_l1():
    # create_cbuf_matrix over the whole tile on MTE2: 32 KiB / 18.57 B/cycle (32 GiB/s)
    # = 1764, after the on-chip start-up of 1 cycle (ASSUMPTION in machine.toml)
    p = lower(S("TEXPANDS", "f16", 128, 128), "PIPE_MTE2", T)
    assert p.cold_cycles == 1 + 1764 and p.bytes == 32768
