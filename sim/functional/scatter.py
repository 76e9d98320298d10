"""Index-driven moves of instructions-more.md: TSCATTER (index form) and TCONCATIDX.

* TSCATTER(dst, src, idx) — §3.3, as all three implementations do it: the *whole* dst
  allocation (Rows x Cols, not only its valid region) is set to zero, then for every
  (i, j) of idx's valid region ``dst_flat[idx[i, j]] = src[i, j]``, where ``dst_flat`` is
  dst's storage seen flat (row-major ``r * Cols + c``). Duplicate indices: the last in
  row-major order wins (A2/A3 and CPU iteration order). The hardware does no bounds
  check; an index outside dst's allocation is a SimulationError in strict mode (with
  seeded random inputs see ``--inputs plausible``), skipped otherwise. The unit reads
  dst's capacity view from ``ctx.extra["dst_capacity"]`` (the interpreter passes it).
  The mask form (``maskPattern``) is not modelled.
* TCONCATIDX(dst, src0, src1, idx0, idx1) — §3.4, as the A2/A3 and A5 code does it: per
  row i, ``k0 = idx0[i, 0] // sizeof(idx)``, ``k1 = idx1[i, 0] // sizeof(idx)`` (counts
  in bytes of the index type), ``n0 = min(k0, dst valid cols)``, ``n1 = min(k1, dst valid
  cols - n0)``; dst[i, :n0] = src0[i, :n0], dst[i, n0:n0+n1] = src1[i, :n1]; the columns
  after n0 + n1 keep their content. ASSUMPTION (PTOAS's clamp, §3.4 [conflict]): n0 and n1
  are also clamped to the sources' valid cols; a negative count copies nothing.
"""

from __future__ import annotations

import numpy as np

from sim.base.errors import SimulationError
from sim.functional.arith import first_index
from sim.functional.context import ValueOutOfRange

__all__ = ["KERNELS"]


def _tscatter(ctx) -> None:
    src, idx = ctx.srcs
    dst = ctx.extra.get("dst_capacity")
    if dst is None:
        raise SimulationError(f"{ctx.where}: TSCATTER needs the destination's capacity view")
    rows, cols = min(src.shape[0], idx.shape[0]), min(src.shape[1], idx.shape[1])
    k = np.asarray(idx[:rows, :cols]).astype(np.int64).reshape(-1)
    vals = np.asarray(src[:rows, :cols]).reshape(-1)
    dst[...] = 0
    flat = dst.reshape(-1) if dst.flags.c_contiguous else None
    bad = (k < 0) | (k >= dst.size)
    if bad.any() and ctx.strict:
        at = first_index(bad)
        raise ValueOutOfRange(
            f"{ctx.where}: index {int(k[at])} at element {at} is outside the destination's "
            f"{dst.shape[0]}x{dst.shape[1]} = {dst.size} elements"
        )
    keep = ~bad
    if flat is not None:
        flat[k[keep]] = vals[keep]  # numpy keeps the last write of a repeated index
    else:
        r, c = np.divmod(k[keep], dst.shape[1])
        dst[r, c] = vals[keep]


def _tconcatidx(ctx) -> None:
    src0, src1, idx0, idx1 = ctx.srcs
    dst = ctx.dst
    size = idx0.dtype.itemsize
    rows, cols = dst.shape
    for i in range(min(rows, src0.shape[0], src1.shape[0], idx0.shape[0], idx1.shape[0])):
        k0, k1 = int(idx0[i, 0]) // size, int(idx1[i, 0]) // size
        n0 = max(0, min(k0, cols, src0.shape[1]))
        n1 = max(0, min(k1, cols - n0, src1.shape[1]))
        dst[i, :n0] = src0[i, :n0]
        dst[i, n0 : n0 + n1] = src1[i, :n1]


KERNELS = {"TSCATTER": _tscatter, "TCONCATIDX": _tconcatidx}
