"""Lowerings of the index-driven moves of instructions-more.md: TSCATTER (index form) and
TCONCATIDX, from the A2/A3 decompositions of its §4 (Variant S stream rule).

* TSCATTER(dst, src, idx) — §3.3 / §4 "TSCATTER index": a count-mode ``vector_dup`` of 0
  over dst's whole allocation (Rows x Cols of dst, ``ceil(Rows*Cols*sizeof/256)`` repeats:
  ``24 + bytes/256``), the V->S hand-off (2 flag cycles, the wait ends the V stream), a
  loop on the scalar unit over idx's valid region R x C (``dst[idx] = src``), the S->V
  hand-off (2). The reference leaves the scalar loop untimed [silent] and suggests a
  per-element cost: ``[scalar_loops] scatter_cycles_per_element`` of machine.toml
  (ASSUMPTION there). The domain is the source's (registry domain "src"); dst's capacity
  comes in the ``dst_capacity`` hint when it differs from the source's.
* TCONCATIDX(dst, src0, src1, idx0, idx1) — §3.4 / §4 "TCONCATIDX (aligned n0)": per row
  an MTE2->S and an S->V hand-off (4 flag cycles, in stream), the scalar reads of the two
  counts, then ``vcopy`` of src0's ``n0`` and src1's ``n1`` elements (masked last
  repeats) and about 4 config writes: ``24 + sum over rows (4 + r0 + r1 + ~4 cfg)``. The
  counts are data (read from idx0 / idx1 at run time) while a cost is fixed per tile
  state: ASSUMPTION, the two sources share dst's valid columns evenly (``n0 = n1 = C/2``),
  and the scalar copy loop of an ``n0`` that is not a 32-byte multiple is not charged.
* TAXPY is a single ``vaxpy`` pass on the tile-scalar plan (``sim.timing.vector``), with
  the uncalibrated placeholder triple of vector_costs.csv (§0: lat 6, slope 2).
"""

from __future__ import annotations

import math

from sim.timing.hints import hint
from sim.timing.plan import Item
from sim.timing.vpath import count_row, s_to_v, scalar_loop, v, v_to_s

__all__ = ["lowerings", "tscatter", "tconcatidx", "SCATTER_LOOP"]

SCATTER_LOOP = "scatter"  # [scalar_loops] scatter_cycles_per_element


def tscatter(s, dtype) -> list[Item]:
    rows, cols = hint(s, "dst_capacity", (s.rows, s.cols))
    lanes = 256 // dtype.size_bytes
    return (
        v("vector_dup", count_row(rows * cols, lanes))
        + v_to_s()
        + [scalar_loop(SCATTER_LOOP, s.valid_rows * s.valid_cols)]
        + s_to_v()
    )


def _flags(a: str, b: str) -> list[Item]:
    return [
        Item("flag", f"set_flag({a},{b})", cycles=1),
        Item("flag", f"wait_flag({a},{b})", cycles=1),
    ]


def tconcatidx(s, dtype) -> list[Item]:
    E = 256 // dtype.size_bytes
    half = math.ceil(s.valid_cols / 2)
    r = max(1, math.ceil(half / E))
    row = (
        _flags("MTE2", "S")
        + _flags("S", "V")
        + [Item("cfg", "", cycles=4)]
        + v("vcopy", [(r, half % E != 0)])
        + v("vcopy", [(r, half % E != 0)])
    )
    return row * s.valid_rows


def lowerings(elementwise) -> dict:
    """Opcode -> lowering ``(shape, dtype, src_dtype, maxrep) -> items``."""
    return {
        "TSCATTER": lambda s, d, src, m: tscatter(s, d),
        "TCONCATIDX": lambda s, d, src, m: tconcatidx(s, d),
    }
