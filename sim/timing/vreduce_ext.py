"""Lowerings of the reductions beyond sum / max / min: TROWARGMAX/MIN, TCOLARGMAX/MIN,
TROWPROD, TCOLPROD. instructions.md gives none; each is costed as the nearest modelled
reduction (``sim.timing.vreduce``), with the ASSUMPTIONS stated here:

* TROWARGMAX/MIN: the cross-lane ``vcmax``/``vcmin`` already returns (value, index)
  pairs, so the sequence of TROWMAX/TROWMIN;
* TCOLARGMAX/MIN: TCOLMAX/TCOLMIN's row-by-row sequence plus, per row after the first, one
  count-mode ``vsel`` over the row that keeps the index of the running extreme;
* TROWPROD / TCOLPROD: TROWSUM's / TCOLSUM's sequence with every ``vadd`` a ``vmul``
  (the final cross-lane ``vcadd`` of a row product stands in for the lane products, the
  hardware having no multiplying cross-lane instruction).
"""

from __future__ import annotations

import attrs

from sim.timing import vreduce
from sim.timing.vpath import BAR, cfg, count_row, v

__all__ = ["lowerings"]


def _as(s, opcode):
    return attrs.evolve(s, opcode=opcode)


def _products(items):
    return [
        attrs.evolve(it, name="vmul") if it.kind == "v" and it.name == "vadd" else it
        for it in items
    ]


def col_arg(s, dtype):
    base = vreduce.col_reduce(_as(s, "TCOLMAX" if s.opcode == "TCOLARGMAX" else "TCOLMIN"), dtype)
    E = 256 // dtype.size_bytes
    track = []
    for _ in range(max(0, s.valid_rows - 1)):
        track += cfg(4) + v("vsel", count_row(s.valid_cols, E)) + [BAR]
    return base + track


def lowerings(elementwise) -> dict:
    """Opcode -> lowering ``(shape, dtype, src_dtype, maxrep) -> items``."""
    return {
        "TROWARGMAX": lambda s, d, src, m: vreduce.row_reduce(_as(s, "TROWMAX"), d, m),
        "TROWARGMIN": lambda s, d, src, m: vreduce.row_reduce(_as(s, "TROWMIN"), d, m),
        "TCOLARGMAX": lambda s, d, src, m: col_arg(s, d),
        "TCOLARGMIN": lambda s, d, src, m: col_arg(s, d),
        "TROWPROD": lambda s, d, src, m: _products(vreduce.row_reduce(_as(s, "TROWSUM"), d, m)),
        "TCOLPROD": lambda s, d, src, m: _products(vreduce.col_reduce(_as(s, "TCOLSUM"), d)),
    }
