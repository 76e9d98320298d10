"""Reduction units: TROWSUM/TROWMAX/TROWMIN and TCOLSUM/TCOLMAX/TCOLMIN.

Reductions iterate over the *source* valid region. Row reductions write ``dst[i, 0]``
(``dst`` is an R x 1 view), column reductions write ``dst[0, j]`` (a 1 x C view).
Integer sums wrap in the element type; since wrap-around addition is associative the
summation order does not matter for them. Max and min propagate NaN. ``tmp`` operands
are scratch and left alone.

Float summation order follows what is known of the A2/A3 lowering:

* TROWSUM reduces through a tree of vector adds and a final cross-lane ``vcadd`` whose
  exact order is not documented. The unit sums each row in f32 (numpy's pairwise sum)
  and rounds once to the element type, so f16 results can differ from the hardware in
  the last bits.
* TCOLSUM copies row 0 and adds the following rows one at a time, each add rounded to
  the element type; the unit does exactly that. With ``ctx.attrs["isBinary"]`` rows are
  added pairwise and the halving repeats until one row is left. Which rows are paired is
  not documented; the unit pairs neighbours (row 2k + row 2k+1, an odd last row carried
  over).
"""

from __future__ import annotations

import numpy as np

from sim.functional.arith import compute


def _row_sum(ctx, src) -> np.ndarray:
    return compute(ctx.dtype, lambda x: np.sum(x, axis=1), src)


def _row_reduce(fn):
    def unit(ctx) -> None:
        (src,) = ctx.srcs
        ctx.dst[...] = fn(ctx, src).reshape(-1, 1)

    return unit


def _sequential(ctx, src, fn) -> np.ndarray:
    acc = src[0]
    for row in src[1:]:
        acc = compute(ctx.dtype, fn, acc, row)
    return acc


def _pairwise(ctx, src, fn) -> np.ndarray:
    rows = src
    while len(rows) > 1:
        even = len(rows) // 2 * 2
        paired = compute(ctx.dtype, fn, rows[0:even:2], rows[1:even:2])
        rows = np.concatenate([paired, rows[even:]])
    return rows[0]


def _col_reduce(fn, has_binary_form: bool = False):
    def unit(ctx) -> None:
        (src,) = ctx.srcs
        if src.size == 0:
            return
        combine = _pairwise if has_binary_form and ctx.attrs.get("isBinary") else _sequential
        ctx.dst[...] = combine(ctx, src, fn).reshape(1, -1)

    return unit


KERNELS = {
    "TROWSUM": _row_reduce(_row_sum),
    "TROWMAX": _row_reduce(lambda ctx, src: np.max(src, axis=1)),
    "TROWMIN": _row_reduce(lambda ctx, src: np.min(src, axis=1)),
    "TCOLSUM": _col_reduce(np.add, has_binary_form=True),
    "TCOLMAX": _col_reduce(np.maximum),
    "TCOLMIN": _col_reduce(np.minimum),
}
