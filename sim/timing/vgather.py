"""Index, gather and pad ops: TGATHER, TFILLPAD (PIPE_V) and TCI (PIPE_S).

The reference gives one cost figure for these (timing-model.md §2.4, row ``vgather``:
head 24, slope 2, tail 0, uncalibrated; "per-row marginal 46.6 cyc for TGATHER (one
vgather + vmuls + barrier per row)") and their pipes (programming-model.md §6.1). The
instruction sequences below are ASSUMPTIONs built from those two facts and from the
lowerings of neighbouring ops.

* TGATHER(dst, src, indices) — dst's valid region R x C, E = 256/sizeof(dst) lanes per
  ``vgather`` repeat, Ei = 64 lanes of the 4-byte indices per ``vmuls`` repeat. One
  count-mode bracket (4 cfg, as TEXPANDS), then per row: a count-mode ``vmuls`` over
  the row's C indices (index * sizeof(T): element index -> byte offset, the form
  ``vgather`` reads), a ``pipe_barrier(PIPE_V)`` (the gather reads those offsets), one
  ``vgather`` of ceil(C/E) repeats (masked when C % E != 0). ASSUMPTION on the order
  (vmuls before the barrier, the gather after it) and on count mode for the vmuls,
  which therefore pays the count-mode floor (vmuls is an F-op in vector_costs.csv).
  Under the "latency" restart rule a row costs (ri + 16) + 1 + (24 + 2r) cycles (ri =
  ceil(C/64) index repeats, r = ceil(C/E)): f32 44 at C = 64, 47 at C = 128, against
  §2.4's 46.6.
* TFILLPAD(dst, src) — costed on the *source's* geometry (registry domain "src"):
  capacity Rows x Cols (dst's when it is larger: the expand form, Shape hint
  ``dst_capacity``), src valid R x C.
  (1) unless dst and src share their address (Shape.variant "inplace"), one
  ``copy_ubuf_to_ubuf`` of the valid region: R bursts of ceil(C*sizeof/32) 32-byte
  blocks, costed by the UB->UB bandwidth like TCOLEXPAND's row copies (§5.1); (2) a
  count-mode bracket (4 cfg) and count-mode ``vector_dup``s of the pad value: one per
  valid row over its right strip of Cols - C elements (when C < Cols), one over the
  (Rows - R) * Cols contiguous elements of the bottom rows (when R < Rows). No barrier:
  the copy and the fills write disjoint bytes and issue in order on one pipe.
  ASSUMPTION on the exact instruction split. The Shape does not carry the pad value, so
  a Null pad (nothing to fill) is costed like the others; a Mat destination (PIPE_MTE2)
  is costed with the same sequence, as the lowering does not see the location.
* TCI(dst, start) — a loop on the scalar unit writing R*C elements (PIPE_S, §6.1).
  Per element one add, one UB store and the loop control: machine.toml [scalar_loops]
  has no store figure, so the ``row_fold`` figure (UB load 4 + ALU 1 + loop 2 = 7
  cycles) stands in — ASSUMPTION, one memory access + one ALU op + loop, over by the
  2 cycles a posted store (2) saves against a load (4). A target without
  [scalar_loops] leaves the loop untimed (0 cycles), as for the other scalar loops.
"""

from __future__ import annotations

import math

from sim.timing.hints import hint
from sim.timing.plan import Item
from sim.timing.vpath import BAR, cfg, copy_ub, count_row, scalar_loop, v

__all__ = ["tgather", "tfillpad", "tci", "INDEX_LANES", "TCI_LOOP"]

INDEX_LANES = 64  # 4-byte (i32/u32) indices per 256-byte repeat
TCI_LOOP = "row_fold"  # [scalar_loops] figure standing in for add + store + loop


def tgather(s, dtype) -> list[Item]:
    E = 256 // dtype.size_bytes
    R, C = s.valid_rows, s.valid_cols
    row = (
        v("vmuls", count_row(C, INDEX_LANES))
        + [BAR]
        + v("vgather", [(math.ceil(C / E), C % E != 0)])
    )
    return cfg(4) + row * R


def tfillpad(s, dtype) -> list[Item]:
    size = dtype.size_bytes
    E = 256 // size
    Rows, Cols = hint(s, "dst_capacity", (s.rows, s.cols))  # a larger dst: the expand form
    R, C = s.valid_rows, s.valid_cols
    items = []
    if s.variant != "inplace":
        items.append(copy_ub(R * math.ceil(C * size / 32) * 32))
    fills = []
    if C < Cols:
        fills += count_row(Cols - C, E) * R
    if R < Rows:
        fills += count_row((Rows - R) * Cols, E)
    if fills:
        items += cfg(4) + v("vector_dup", fills)
    return items


def tci(s) -> list[Item]:
    return [scalar_loop(TCI_LOOP, s.valid_rows * s.valid_cols)]
