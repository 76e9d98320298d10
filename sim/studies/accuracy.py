"""Scoring predictions against measurements: per case, per op family, overall.

A case's accuracy is ``1 - |predicted - measured| / measured`` (1.0 = exact; it goes
negative when the prediction is off by more than the measurement). A summary of a set of
cases gives the median and mean accuracy and the share of cases within 15 % (accuracy >=
0.85) over the cases that have a prediction, and counts the ones that have none (a case
whose tiles do not fit in the target's buffers, say: ``predicted`` is None and
``reason`` says why). ``ptosim validate`` marks a case run in place because its separate tiles do
not fit (``in_place``) and prints one summary per op family (the
registry's lowering family: ``binary``, ``unary``, ``scalar``, ``rowreduce`` ...) so that
a calibration run shows which family is off, then the overall one.
"""

from __future__ import annotations

import statistics
from typing import Any

__all__ = ["accuracy", "summary", "by_family", "format_report"]

WITHIN = 0.85  # "within 15 %"


def accuracy(predicted: float, measured: float) -> float:
    return 1.0 - abs(predicted - measured) / measured


def summary(cases) -> dict:
    """``{cases, predicted, unpredicted, median_accuracy, mean_accuracy, within_15_percent}``
    of case dicts carrying ``accuracy`` (None when unpredicted)."""
    accs = [c["accuracy"] for c in cases if c["accuracy"] is not None]
    out: dict[str, Any] = {
        "cases": len(cases),
        "predicted": len(accs),
        "unpredicted": len(cases) - len(accs),
        "median_accuracy": None,
        "mean_accuracy": None,
        "within_15_percent": None,
    }
    if accs:
        out.update(
            median_accuracy=round(statistics.median(accs), 4),
            mean_accuracy=round(statistics.fmean(accs), 4),
            within_15_percent=round(sum(a >= WITHIN for a in accs) / len(accs), 4),
        )
    return out


def by_family(cases) -> dict:
    """``{family: summary}`` in family-name order; each case dict carries ``family``."""
    groups: dict = {}
    for c in cases:
        groups.setdefault(c["family"], []).append(c)
    return {f: summary(groups[f]) for f in sorted(groups)}


def _pct(x) -> str:
    return "-" if x is None else f"{x:.0%}"


def _summary_line(label: str, s: dict) -> str:
    none = f", {s['unpredicted']} without a prediction" if s["unpredicted"] else ""
    return (
        f"{label}: median accuracy {s['median_accuracy']}, mean accuracy {s['mean_accuracy']}, "
        f"{_pct(s['within_15_percent'])} within 15% ({s['predicted']} of {s['cases']} "
        f"predicted{none})"
    )


def _case_line(r: dict) -> str:
    shape = f"{r['rows']}x{r['cols']}"
    valid = f"{r['valid_rows']}x{r['valid_cols']}"
    head = (
        f"{r['line']:>4}  {r['op']:<12} {r['dtype']:<8} {shape:>9} {valid:>9} "
        f"{(r['variant'] or '-'):<11} {r['measured_cycles']:>9.0f} "
    )
    if r["predicted"] is None:
        return head + f"{'-':>9} {'-':>8}  no prediction: {r['reason']}"
    return (
        head
        + f"{r['predicted']:>9} {r['accuracy']:>8.3f}"
        + ("" if r["legal"] else "  (outside the target's checks)")
        + ("  (in place: dst = src0, separate tiles do not fit)" if r.get("in_place") else "")
        + "".join(f"\n{'':>6}{w}" for w in r.get("warnings") or ())
        + (_explain_lines(r["explain"]) if r.get("explain") else "")
    )


def _explain_lines(e: dict) -> str:
    """``validate --explain``: the decomposition (mechanism) and the formula fit beside
    the model's figure, and which the model took for the op."""
    fit = f"{e['fit']} ({e['fit_line']})" if e["fit"] is not None else f"- ({e['fit_reason']})"
    took = (
        f"model: {e['reading']}: {e['evidence']}"
        if e["reading"]
        else "model: the target's own cost (no per-op decision)"
    )
    return (
        f"\n{'':>6}mechanism {e['mechanism']} (full latency after each barrier in the op)"
        f"\n{'':>6}fit {fit}"
        f"\n{'':>6}{took}"
    )


def format_report(report: dict) -> str:
    """The case table, one line per op family, then the overall summary (last line)."""
    lines = [
        f"{'line':>4}  {'op':<12} {'dtype':<8} {'shape':>9} {'valid':>9} {'variant':<11} "
        f"{'measured':>9} {'predicted':>9} {'accuracy':>8}"
    ]
    lines += [_case_line(r) for r in report["cases"]]
    lines.append("per op family:")
    lines += [_summary_line(f"  {f:<17}", s) for f, s in report["families"].items()]
    lines.append(
        _summary_line(
            f"{report['summary']['cases']} cases on {report['target']}", report["summary"]
        )
    )
    return "\n".join(lines)
