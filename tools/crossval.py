"""Leave-shapes-out cross-validation of the single-op model (sim.studies.crossval).

    .venv/bin/python tools/crossval.py [CASES.csv] [--target a2a3] [--by cols|rows|dtype] [-k 5]

CASES.csv defaults to models/a2a3/calibration/reference_cases.csv (the reference's fits
evaluated at a few shapes). Prints, per op family, the share of held-out cases within
15 % for the model refitted without them, for the model as it is, and for the nearest
training column count's formula fit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.studies.calibrate import load_cases  # noqa: E402
from sim.studies.crossval import KEYS, cross_validate, format_cross_validation  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "cases", nargs="?", default=str(ROOT / "models/a2a3/calibration/reference_cases.csv")
    )
    ap.add_argument("--target", default="a2a3")
    ap.add_argument("--by", choices=sorted(KEYS), default="cols")
    ap.add_argument("-k", type=int, default=5, help="number of folds")
    a = ap.parse_args(argv)
    report = cross_validate(load_cases(a.cases), a.target, by=a.by, k=a.k)
    print(format_cross_validation(report, a.target))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
