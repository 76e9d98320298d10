"""Fills and broadcasts: TEXPANDS, TROWEXPAND, TCOLEXPAND and the expand-and-operate
families TROWEXPAND{ADD,SUB,MUL,DIV,MAX,MIN} / TCOLEXPAND{...} (timing-model.md §4 rows
TEXPANDS, TROWEXPAND fast path / general, TCOLEXPAND; instructions.md §3.4, §3.5).

* TEXPANDS (Vec): one count-mode ``vector_dup`` over R*C (per row when the valid region
  is not contiguous), +4 cfg. 8-bit types are duplicated as 16-bit lanes: the same
  256 bytes per repeat.
* TROWEXPAND: count mode (+4 cfg); per row a V->S hand-off (the wait drains V: the
  stream breaks every row), the scalar read of ``src[i, 0]`` (``[scalar_loops]
  row_read``; [silent] in the reference), an S->V hand-off, one count-mode
  ``vector_dup`` of C. §4: ≈ 4 + 24 + r per row (+ the read). The restarted dup pays
  its tail (5, vector_costs.csv) + r, so a row costs 4 flags + read + 5 + r = 14 at r = 1,
  the formula CSV's per-row figure at every width it covers (f32 C = 8..128, f16
  32..192). §4 also lists a ``vbrcb`` fast path (destination one 32-byte block wide,
  flat 18 cycles per 254 repeats); the CSV's one shape that qualifies (f32 C = 8) costs
  14 per row like the rest (1.76 per element + 33), and HEAD Perf-Sim replaces the CCE
  cost of TROWEXPAND by the formula's when larger (timing-model.md §9) — the fast path
  is not cheaper on hardware, so every TROWEXPAND takes the per-row path here.
* TCOLEXPAND: per destination row one ``copy_ubuf_to_ubuf`` of ceil(C*sizeof/32) blocks,
  costed by the UB->UB bandwidth (§5.1; see ``sim.timing.lower`` for the 1-cycle
  minimum per copy instruction).

ASSUMPTION — expand-and-operate families (the reference gives no lowering; only that the
TROWEXPAND-binary family uses the 8 KiB TMP_UB_OFFSET scratch, programming-model.md §8):

* TROWEXPAND<op>(dst, src0, src1): broadcast the R x 1 column src1 into the scratch
  with ``vbrcb`` (one 32-byte block per row — 8 KiB holds exactly 256 rows of blocks;
  1-byte types: the general per-row TROWEXPAND), barrier, then the binary op reading the
  scratch with block stride 0 / repeat stride 1. Its source row stride differs from
  dst's, so the op takes §3's per-row (5)-style path ("sources with different row
  strides than the destination always take the per-row path").
* TCOLEXPAND<op>(dst, src0, src1): no scratch — the binary op reads the 1 x C row src1
  with repeat stride 0; again a different row stride, so the (5)-style path.
"""

from __future__ import annotations

import math

from sim.timing.plan import Item
from sim.timing.vpath import (
    BAR,
    cfg,
    copy_ub,
    count_row,
    per_row_heads,
    s_to_v,
    scalar_loop,
    split,
    v,
    v_to_s,
)

__all__ = [
    "texpands",
    "trowexpand",
    "tcolexpand",
    "rowexpand_op",
    "colexpand_op",
    "VBRCB_MAX_REPEATS",
]

VBRCB_MAX_REPEATS = 254  # §4 TROWEXPAND fast path: chunks of 254
_BINARY = {"ADD": "vadd", "SUB": "vsub", "MUL": "vmul", "DIV": "vdiv", "MAX": "vmax", "MIN": "vmin"}


def texpands(s, dtype) -> list[Item]:
    E = 256 // dtype.size_bytes
    R, C = s.valid_rows, s.valid_cols
    if s.static_valid_cols == s.cols or s.rows == 1 or C == s.cols or R == 1:
        return cfg(4) + v("vector_dup", count_row(R * C, E))
    return cfg(4) + v("vector_dup", count_row(C, E) * R)


def _vbrcb(n_elements: int) -> list[Item]:
    reps = math.ceil(n_elements / 8)
    return v("vbrcb", [(r, False) for r in split(reps, VBRCB_MAX_REPEATS)])


def _general_rows(s, dtype) -> list[Item]:
    E = 256 // dtype.size_bytes
    row = (
        v_to_s()
        + [scalar_loop("row_read", 1)]
        + s_to_v()
        + v("vector_dup", count_row(s.valid_cols, E))
    )
    return cfg(4) + row * s.valid_rows


def trowexpand(s, dtype, maxrep) -> list[Item]:
    return _general_rows(s, dtype)


def tcolexpand(s, dtype) -> list[Item]:
    row_bytes = math.ceil(s.valid_cols * dtype.size_bytes / 32) * 32
    return [copy_ub(row_bytes) for _ in range(s.valid_rows)]


def _broadcast_op(s, dtype, maxrep) -> list[Item]:
    E, B = 256 // dtype.size_bytes, 32 // dtype.size_bytes
    segs, n_cfg = per_row_heads(s.valid_rows, s.valid_cols, E, s.cols, B, maxrep)
    return cfg(n_cfg) + v(_BINARY[s.opcode[-3:]], segs)


def rowexpand_op(s, dtype, maxrep) -> list[Item]:
    if dtype.size_bytes in (2, 4):
        expand = _vbrcb(s.valid_rows)
    else:
        expand = _general_rows(s, dtype)
    return expand + [BAR] + _broadcast_op(s, dtype, maxrep)


def colexpand_op(s, dtype, maxrep) -> list[Item]:
    return _broadcast_op(s, dtype, maxrep)
