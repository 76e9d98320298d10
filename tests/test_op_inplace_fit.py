"""Single ops whose separate tiles do not fit in UB run in place (sim.studies.ops.run_case).

A hardware test of an element-wise op on tiles of ~100 KiB can only run with the
destination aliasing the first source: three 100 KiB f32 tiles do not fit in A5's 256 KiB
UB, two do not fit in A2/A3's 184 KiB of usable UB. ``ptosim op`` and ``ptosim validate``
place such a case in place, say so, and cost what the in-place instruction costs; a case
that does not fit even in place, or whose destination cannot alias src0, stays an error
(``op``) or an unpredicted case (``validate``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sim.base.errors import PlacementError
from sim.studies.calibrate import load_cases, validate
from sim.studies.ops import OpCase, simulate_case
from sim.target import load_target

HEADER = "op,dtype,rows,cols,valid_rows,valid_cols,variant,measured_cycles\n"
# tiles the op needs as separate tiles: binary ops dst + 2 sources, the rest dst + 1
_TILES = {
    "TADD": 3,
    "TMUL": 3,
    "TMAX": 3,
    "TDIV": 3,
    "TEXP": 2,
    "TABS": 2,
    "TADDS": 2,
    "TMULS": 2,
    "TDIVS": 2,
}


def _usable(target) -> int:
    """UB bytes a tile can take: capacity minus the reserved ranges (machine.toml)."""
    ub = load_target(target).buffer("UB")
    return ub.capacity_bytes - sum(end - start for _, start, end in ub.reserved)


def _tile_bytes(dtype, rows, cols):
    return rows * cols * (4 if dtype in ("f32", "i32") else 2)


def _shapes():
    """(target, op, dtype, rows, cols, expected) over a family: tiles that fit separately
    (False), only in place (True) and not even in place (None)."""
    out = []
    for target in ("a2a3", "a5"):
        for op, n in _TILES.items():
            for dtype in ("f32", "f16"):
                for rows, cols in (
                    (16, 64),
                    (64, 128),
                    (100, 256),
                    (120, 256),
                    (200, 256),
                    (80, 256),
                    (150, 128),
                    (250, 128),
                ):
                    if dtype == "f16":
                        cols *= 2
                    b = _tile_bytes(dtype, rows, cols)
                    u = _usable(target)
                    want = False if n * b <= u else (True if (n - 1) * b <= u else None)
                    out.append((target, op, dtype, rows, cols, want))
    return out


@pytest.mark.parametrize("target, op, dtype, rows, cols, want", _shapes())
def test_in_place_exactly_when_separate_tiles_do_not_fit(target, op, dtype, rows, cols, want):
    if want is None:
        with pytest.raises(PlacementError, match="in place .* does not fit either"):
            simulate_case(op, dtype, (rows, cols), target=target)
        return
    run = simulate_case(op, dtype, (rows, cols), target=target)
    assert (run.case.variant == "inplace") is want
    assert bool(run.in_place_reason) is want
    if want:
        # the same cost as the explicit in-place case
        explicit = simulate_case(op, dtype, (rows, cols), variant="inplace", target=target)
        assert run.value.total_cycles == explicit.value.total_cycles
        assert "does not fit" in run.in_place_reason


def test_families_without_an_in_place_form_stay_errors():
    # a reduction's dst is a column, a conversion's dst another type: no aliasing form
    assert not OpCase("TROWSUM", "f32", (250, 128), (250, 128)).may_alias()
    assert not OpCase("TCVT", "f32>f16", (250, 128), (250, 128)).may_alias()
    assert not OpCase("TCMPS", "f32", (250, 128), (250, 128)).may_alias()
    assert OpCase("TADD", "f32", (250, 128), (250, 128)).may_alias()
    with pytest.raises(PlacementError):
        simulate_case("TCVT", "f32>f16", (400, 128), target="a2a3")
    # an explicit variant is run as given, never re-placed
    assert not OpCase("TDIVS", "f32", (250, 128), (250, 128), "scalar_tile").may_alias()


def test_in_place_tdivs_is_the_in_place_lowering():
    # A2/A3 float TDIVS in place is one vmuls by 1/s (timing-model.md §4), for every
    # height that only fits in place
    for rows, cols in ((100, 256), (120, 256), (180, 256)):
        run = simulate_case("TDIVS", "f32", (rows, cols), target="a2a3")
        row = run.value.trace[run.value.trace["kind"] == "op"].iloc[-1]
        assert run.case.variant == "inplace"
        assert row["cce"].startswith("cfg x4; vmuls") or row["cce"].startswith("vmuls"), row["cce"]


def test_validate_predicts_and_marks_in_place_cases(tmp_path):
    p = tmp_path / "cases.csv"
    p.write_text(
        HEADER + "TADD,f32,100,256,,,,600\nTADD,f32,16,64,,,,56\n"
        "TMUL,f16,100,512,,,,600\nTROWSUM,f32,250,128,,,,900\n"
    )
    r = validate(load_cases(p), "a5")
    big, small, half, red = r["cases"]
    assert big["in_place"] and half["in_place"] and not small["in_place"]
    assert big["predicted"] is not None and half["predicted"] is not None
    assert "does not fit" in big["note"]
    assert red["predicted"] is None and not red["in_place"]
    out = subprocess.run(
        [sys.executable, "-m", "sim", "validate", str(p), "--target", "a5"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("(in place: dst = src0, separate tiles do not fit)") == 2


def test_cli_op_reports_in_place():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim",
            "op",
            "TADD",
            "--dtype",
            "f32",
            "--shape",
            "100x256",
            "--target",
            "a5",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["variant"] == "inplace" and "does not fit" in d["note"]
    out = subprocess.run(
        [sys.executable, "-m", "sim", "op", "TADD", "--dtype", "f32", "--shape", "100x256"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "does not fit either" in out.stderr
