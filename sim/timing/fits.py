"""A2/A3 per-op formula fits (timing-model.md §9) beside the decomposition, and which of
the two readings of a barrier each op's cost follows.

The A2/A3 model costs a tile op by its decomposition into CCE instructions (§3-§4):
instructions, config writes, barriers, UB->UB copies. The reference also carries per-op
linear fits, ``cycles = slope * rows * cols + bias`` per (op, element type, column count)
(``data/a2a3_formula_params.csv``, copied verbatim as the target's ``formula_fits``).
A fit is a line over the shapes it was fitted on: its element type (fp32 / fp16; ``any``
for TEXP and TSQRT), its exact column count (the lookup is an exact match, §9) and whole
tiles (it charges ``rows * cols``, so a partial valid region is another shape). Outside
those shapes the fit says nothing; ``fit_estimate`` returns no number there and the
reason, and the model never uses a fit there.

Where the two disagree the difference is almost always what a barrier inside the op
costs. §7 (and §4's arithmetic) make the instruction after a ``pipe_barrier(PIPE_V)``
pay its full latency again ("latency"); several fits are cheaper, as if its issue
overlapped the drain ("tail", ``sim.timing.plan``). Which one holds is a property of the
op's instruction sequence, not of its shape, so it is decided per op, from the mechanism
and the evidence, in the target's ``fit_decisions`` table: ``fit`` = the op keeps the
reading its fits show (the target's ``barrier_restart``), ``mechanism`` = §7's full
latency (``[vector] mechanism_restart``). Ops the table does not list follow the
mechanism. ``mark_restarts`` stamps the op's reading on every vector instruction that
follows a barrier inside the op; a restart caused by a barrier *between* ops keeps the
target's ``barrier_restart``.

A target without a ``fit_decisions`` table (A5, whose vector functions have their own
fits, ``sim.timing.formula``) is left as it was.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from sim.base.errors import UserError
from sim.target.model import read_csv_rows
from sim.timing.plan import Item

if TYPE_CHECKING:
    from sim.target.model import Target

__all__ = [
    "FitEstimate",
    "Decision",
    "fit_estimate",
    "fit_table",
    "decision",
    "mark_restarts",
    "READINGS",
]

READINGS = ("fit", "mechanism")
_KEY = {"f32": "fp32", "f16": "fp16"}
# §9: TEXP / TSQRT fall back to "any" element type and "any" column count
_ANY_LOOKUP = {"TEXP", "TSQRT"}


@attrs.frozen
class FitEstimate:
    """A fit's cycles at a shape (None outside the shapes it was fitted on) and its line
    or the reason it does not apply."""

    cycles: int | None
    line: str  # "TCOLMAX fp32 cols 64: 0.2734*rows*cols + 17", or "" when none
    reason: str = ""  # why there is no number ("" when there is one)


@attrs.frozen
class Decision:
    reading: str  # "fit" or "mechanism"
    rule: str  # the barrier restart it means: "tail" or "latency"
    evidence: str


@functools.lru_cache(maxsize=8)
def _lines(path: Path) -> dict:
    table: dict = {}
    for r in read_csv_rows(path):
        cols = 0 if r["cols"].strip() == "*" else int(r["cols"])
        table[(r["op"], r["dtype"], cols)] = (float(r["slope"]), float(r["bias"]))
    return table


@functools.lru_cache(maxsize=8)
def _decisions(path: Path) -> dict:
    out = {}
    for r in read_csv_rows(path):
        reading = r["reading"].strip()
        if reading not in READINGS:
            raise UserError(
                f"{path}: op {r['op']}: column reading: expected one of "
                f"{', '.join(READINGS)}, found {reading!r}"
            )
        out[r["op"].strip()] = (reading, r["evidence"].strip())
    return out


def _file(target: Target, key: str) -> Path | None:
    name = target.vector.get(key)
    return (target.path / name).resolve() if name else None


def fit_table(target: Target) -> dict:
    """``{(op, dtype key, cols): (slope, bias)}`` of the target's formula fits (``cols`` 0
    = any column count, dtype key ``fp32`` / ``fp16`` / ``any``); empty without them."""
    path = _file(target, "formula_fits")
    return dict(_lines(path)) if path else {}


def fit_estimate(
    opcode: str, dtype: str, shape: tuple[int, int], valid: tuple[int, int], target: Target
) -> FitEstimate | None:
    """The formula fit of ``opcode`` at a tile of capacity ``shape`` with valid region
    ``valid``, or None when the target has no formula fits (A5) or none for the op."""
    path = _file(target, "formula_fits")
    if path is None:
        return None
    table = _lines(path)
    fitted = sorted({(d, c) for (o, d, c) in table if o == opcode})
    if not fitted:
        return None
    rows, cols = shape
    key = _KEY.get(dtype)
    if key is None:
        dts = sorted({d for d, _ in fitted})
        return FitEstimate(None, "", f"{dtype} is not fitted (fits: {', '.join(dts)})")
    order = [(key, cols)]
    if opcode in _ANY_LOOKUP:
        order += [(key, 0), ("any", cols), ("any", 0)]
    hit = next((k for k in order if (opcode, *k) in table), None)
    if hit is None:
        widths = sorted(c for d, c in fitted if d == key)
        return FitEstimate(
            None,
            "",
            f"cols {cols} is not fitted for {key} "
            f"(fitted: {', '.join(map(str, widths)) or 'none'})",
        )
    slope, bias = table[(opcode, *hit)]
    line = f"{opcode} {hit[0]} cols {hit[1] or '*'}: {slope:g}*rows*cols + {bias:g}"
    if tuple(valid) != (rows, cols):
        return FitEstimate(
            None,
            line,
            f"valid region {valid[0]}x{valid[1]} of a {rows}x{cols} tile: "
            "the fits cover whole tiles",
        )
    return FitEstimate(max(0, round(slope * rows * cols + bias)), line)


def decision(target: Target, opcode: str) -> Decision | None:
    """What a barrier inside ``opcode`` costs on ``target``: its row of the target's
    ``fit_decisions`` table, the mechanism for an op the table does not list, None for a
    target without the table."""
    path = _file(target, "fit_decisions")
    if path is None:
        return None
    vec = target.vector
    reading, evidence = _decisions(path).get(
        opcode, ("mechanism", "no fit speaks for the op: its decomposition (timing-model.md §4)")
    )
    rule = vec.get("barrier_restart", "latency") if reading == "fit" else vec["mechanism_restart"]
    return Decision(reading, rule, evidence)


def mark_restarts(items: Iterable[Item], rule: str) -> list[Item]:
    """``items`` with ``rule`` on every vector instruction and UB->UB copy after the
    first barrier among them (the restarts inside the op)."""
    out, inside = [], False
    for it in items:
        if inside and it.kind in ("v", "copy"):
            it = attrs.evolve(it, restart=rule)
        inside = inside or it.breaks_stream
        out.append(it)
    return out
