"""Reductions beyond sum / max / min: TROWARGMAX, TROWARGMIN, TCOLARGMAX, TCOLARGMIN,
TROWPROD and TCOLPROD.

Like the other reductions they iterate over the source's valid region; row forms write
``dst[i, 0]``, column forms ``dst[0, j]``. ASSUMPTIONS (instructions.md has no entries):

* an arg-reduction writes the index (0-based, within the valid region) of the *first*
  extreme element, as an unsigned / signed 32-bit integer; NaN counts as the extreme, as
  numpy's argmax / argmin do;
* TROWPROD multiplies a row in the work type (f32 for f16) and rounds once, as TROWSUM's
  unit sums; TCOLPROD multiplies row by row, each product rounded to the element type,
  in TCOLSUM's order (copy row 0, then one row at a time). Integer products wrap.
"""

from __future__ import annotations

import numpy as np

from sim.functional.arith import compute

__all__ = ["KERNELS"]


def _arg(fn, axis: int):
    def unit(ctx) -> None:
        (src,) = ctx.srcs
        if src.size == 0:
            return
        idx = fn(src, axis=axis)
        ctx.dst[...] = (idx.reshape(-1, 1) if axis == 1 else idx.reshape(1, -1)).astype(
            ctx.dtype.np_type
        )

    return unit


def _trowprod(ctx) -> None:
    (src,) = ctx.srcs
    ctx.dst[...] = compute(ctx.dtype, lambda x: np.prod(x, axis=1), src).reshape(-1, 1)


def _tcolprod(ctx) -> None:
    (src,) = ctx.srcs
    if src.size == 0:
        return
    acc = src[0]
    for row in src[1:]:
        acc = compute(ctx.dtype, np.multiply, acc, row)
    ctx.dst[...] = np.asarray(acc).reshape(1, -1)


KERNELS = {
    "TROWARGMAX": _arg(np.argmax, 1),
    "TROWARGMIN": _arg(np.argmin, 1),
    "TCOLARGMAX": _arg(np.argmax, 0),
    "TCOLARGMIN": _arg(np.argmin, 0),
    "TROWPROD": _trowprod,
    "TCOLPROD": _tcolprod,
}
