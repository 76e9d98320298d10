"""How well a calibrated model generalises to shapes it was not calibrated on.

``ptosim validate`` scores the model on the very cases its figures were read off, which
says little about a shape it has not seen. ``cross_validate`` holds shapes out: the cases
are split into folds by a geometry key (the column count, which sets repeats per row,
partial repeats and the count-mode switch; the row count; or the element type), and for
each fold the model's vector cost table is refitted (``calibrate.fit``) on the other
folds and scored on the held-out one. Two more readings of the held-out cases are scored
beside it:

* ``in_sample`` — the model as it is (its figures were chosen with every case in view);
* ``nearest_fit`` — what a model that extrapolates a per-op formula fit would predict:
  the line ``slope * rows * cols + bias`` of the nearest column count of the same op and
  element type (formula CSV rows, ``sim.timing.fits``) among the (element type, width)
  pairs the training cases cover; None when there is none (a fit says nothing about
  another element type). It shows which ops' fits do not carry past the shapes they
  were fitted on.

Shares are "within 15 %" (``sim.studies.accuracy``) per op family and overall.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from sim.isa.opcodes import opcode
from sim.studies.accuracy import WITHIN, accuracy
from sim.studies.calibrate import Case, fit, validate, write_model
from sim.studies.ops import parse_dtype_pair
from sim.target import load_target
from sim.target.model import Target
from sim.timing.fits import fit_table

__all__ = ["cross_validate", "format_cross_validation", "KEYS"]

_FIT_DTYPE = {"f32": "fp32", "f16": "fp16"}


def _fit_key(c: Case) -> tuple:
    """(formula-fit dtype key, cols) of a case: the shape a fit line is keyed by."""
    return _FIT_DTYPE.get(parse_dtype_pair(c.op.dtype)[1], ""), c.op.shape[1]


KEYS = {
    "cols": lambda c: c.op.shape[1],
    "rows": lambda c: c.op.shape[0],
    "dtype": lambda c: parse_dtype_pair(c.op.dtype)[1],
}


def _folds(cases, by: str, k: int) -> list[list[Case]]:
    """The cases in ``k`` folds: each distinct value of the key in one fold (sorted
    values dealt out in turn), so a held-out value is never seen in training."""
    key = KEYS[by]
    values = sorted({key(c) for c in cases})
    fold_of = {v: i % k for i, v in enumerate(values)}
    out: list[list[Case]] = [[] for _ in range(min(k, len(values)))]
    for c in cases:
        out[fold_of[key(c)]].append(c)
    return out


def _lines(target) -> dict:
    """``{(op, fp dtype): {cols: (slope, bias)}}`` of the target's formula fits."""
    table: dict = {}
    for (op, dt, cols), sb in fit_table(target).items():
        table.setdefault((op, dt), {})[cols] = sb
    return table


def _nearest_fit(case: Case, lines: dict, seen: set) -> float | None:
    """The nearest-width line of the case's op and dtype among the (dtype, cols) the
    training cases cover (``seen``; "any" lines always), evaluated at the case."""
    dt, _ = _fit_key(case)
    rows, cols = case.op.shape
    for key in ((case.op.op, dt), (case.op.op, "any")):
        by_cols = {c: sb for c, sb in lines.get(key, {}).items() if c == 0 or (key[1], c) in seen}
        if by_cols:
            c = min(by_cols, key=lambda x: (abs(x - cols), x))
            slope, bias = by_cols[c]
            return max(0.0, slope * rows * cols + bias)
    return None


def _share(accs) -> float | None:
    accs = [a for a in accs if a is not None]
    return round(sum(a >= WITHIN for a in accs) / len(accs), 4) if accs else None


def cross_validate(
    cases: list[Case], target: str | Path | Target, by: str = "cols", k: int = 5
) -> dict:
    """Leave-shapes-out scores of ``cases`` on ``target`` (module docstring):
    ``{"by", "folds", "families": {family: {cases, cross_validated, in_sample,
    nearest_fit}}, "overall": {...}}``; shares within 15 % (None when nothing scored)."""
    if by not in KEYS:
        raise ValueError(f"by must be one of {', '.join(KEYS)}")
    tgt = load_target(target)
    lines = _lines(tgt)
    inside = {
        c.line: r["accuracy"] for c, r in zip(cases, validate(cases, tgt)["cases"], strict=True)
    }
    scores: list[tuple[str, float | None, float | None, float | None]] = []
    folds = _folds(cases, by, k)
    with tempfile.TemporaryDirectory(prefix="ptosim_cv_") as tmp:
        for i, held in enumerate(folds):
            train = [c for j, f in enumerate(folds) if j != i for c in f]
            model = write_model(
                tgt, fit(train, tgt), Path(tmp) / f"fold{i}", f"fold {i} of {len(folds)}"
            )
            report = validate(held, model)
            seen = {_fit_key(c) for c in train}
            for c, r in zip(held, report["cases"], strict=True):
                near = _nearest_fit(c, lines, seen)
                scores.append(
                    (
                        opcode(c.op.op).family,
                        r["accuracy"],
                        inside[c.line],
                        None if near is None else accuracy(near, c.measured),
                    )
                )

    def summary(rows) -> dict:
        return {
            "cases": len(rows),
            "cross_validated": _share(r[1] for r in rows),
            "in_sample": _share(r[2] for r in rows),
            "nearest_fit": _share(r[3] for r in rows),
            "nearest_fit_cases": sum(r[3] is not None for r in rows),
        }

    families = sorted({s[0] for s in scores})
    return {
        "by": by,
        "folds": len(folds),
        "families": {f: summary([s for s in scores if s[0] == f]) for f in families},
        "overall": summary(scores),
    }


def format_cross_validation(report: dict, target_name: str = "") -> str:
    def pct(x) -> str:
        return "-" if x is None else f"{x:.0%}"

    head = (
        f"leave-{report['by']}-out cross-validation, {report['folds']} folds"
        f"{' on ' + target_name if target_name else ''}: share within 15%"
    )
    lines = [
        head,
        f"  {'family':<18} {'cases':>6} {'cross-val':>10} {'in-sample':>10} {'nearest fit':>12}",
    ]
    rows = list(report["families"].items()) + [("overall", report["overall"])]
    for name, s in rows:
        lines.append(
            f"  {name:<18} {s['cases']:>6} {pct(s['cross_validated']):>10} "
            f"{pct(s['in_sample']):>10} {pct(s['nearest_fit']):>8} ({s['nearest_fit_cases']})"
        )
    return "\n".join(lines)
