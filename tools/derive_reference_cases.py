"""Derive models/a2a3/calibration/reference_cases.csv from the reference pack alone.

Two sources, both measurement-derived figures quoted in ../shared/reference:

1. timing-model.md §2.4, column "910B3 fit": least-squares lines ``cycles = a*rep + b``
   measured on an Ascend 910B3 for single isolated instructions, repeats 1-128. Each fit
   becomes cases at repeat counts 1, 8, 32 and 128 on a contiguous tile whose rows are
   exactly one 256-byte repeat wide (rows = repeats), so the op lowers to one
   full-mask instruction of ``rep`` repeats.
2. data/a2a3_formula_params.csv: per-op lines ``cycles = slope*rows*cols + bias`` fitted
   per (op, dtype, column count) by the pto-isa lightweight backend. Each row becomes cases
   at rows 8, 16 and 32 (a range the fits cover) with the full tile valid.

measured_cycles = the fitted line evaluated there, rounded to the nearest cycle.

    python tools/derive_reference_cases.py ../shared/reference \\
        > models/a2a3/calibration/reference_cases.csv
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

# (op, dtype, slope per repeat, constant) — timing-model.md §2.4 "910B3 fit" column.
FITS_910B3 = [
    ("TADD", "f32", 2.11, 24),
    ("TSUB", "f32", 2.11, 24),
    ("TMUL", "f32", 2.3, 25),
    ("TDIV", "f32", 4.03, 31),
    ("TMAX", "f32", 2.01, 23),
    ("TAND", "i16", 2.03, 20),
    ("TOR", "i16", 2.03, 20),
    ("TMULS", "f32", 1.0, 26),
    ("TMAXS", "f32", 1.00, 23),
    ("TLRELU", "f32", 1.03, 26),
    ("TRELU", "f32", 1.00, 23),
    ("TEXP", "f32", 2.00, 31),
    ("TLOG", "f32", 2.00, 33),
    ("TRSQRT", "f32", 1.07, 24),
    ("TCVT", "f32>f16", 0.90, 27),
]
_LANES = {"f32": 64, "f16": 128, "i16": 128, "f32>f16": 64}
_FORMULA_DTYPES = {"fp32": "f32", "fp16": "f16"}


def fit_cases():
    for op, dt, a, b in FITS_910B3:
        for rep in (1, 8, 32, 128):
            yield op, dt, rep, _LANES[dt], round(a * rep + b), "910B3 fit (timing-model.md §2.4)"


def formula_cases(path: Path):
    with path.open() as f:
        for row in csv.DictReader(f):
            if row["cols"] == "*" or row["dtype"] not in _FORMULA_DTYPES:
                continue
            cols = int(row["cols"])
            for rows in (8, 16, 32):
                cycles = round(float(row["slope"]) * rows * cols + float(row["bias"]))
                yield (
                    row["op"],
                    _FORMULA_DTYPES[row["dtype"]],
                    rows,
                    cols,
                    cycles,
                    "a2a3_formula_params.csv",
                )


def main(reference: str) -> None:
    ref = Path(reference)
    out = csv.writer(sys.stdout, lineterminator="\n")
    print("# Derived from the reference pack only: see README.md beside this file and")
    print("# tools/derive_reference_cases.py. measured_cycles are fitted lines evaluated at")
    print("# the listed shapes, not new measurements.")
    out.writerow(
        [
            "op",
            "dtype",
            "rows",
            "cols",
            "valid_rows",
            "valid_cols",
            "variant",
            "measured_cycles",
            "source",
        ]
    )
    for op, dt, rows, cols, cycles, source in [
        *fit_cases(),
        *formula_cases(ref / "data" / "a2a3_formula_params.csv"),
    ]:
        out.writerow([op, dt, rows, cols, "", "", "", cycles, source])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference")
