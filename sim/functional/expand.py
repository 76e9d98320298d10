"""Broadcast units: TROWEXPAND, TCOLEXPAND and the fused expand-and-operate forms.

TROWEXPAND copies ``src[i, 0]`` across row i of the destination (src is an R x 1 view);
TCOLEXPAND copies ``src[0, j]`` down column j (src is a 1 x C view).

TROWEXPAND{ADD,SUB,MUL,DIV,MAX,MIN} compute ``src0[i, j] OP src1[i, 0]`` and
TCOLEXPAND{ADD,SUB,MUL,DIV,MAX,MIN} compute ``src0[i, j] OP src1[0, j]``: the second operand is
broadcast first, then the element-wise value rules apply unchanged (wrap-around for
integers, IEEE floats, the integer division-by-zero rule for DIV, with errors naming
the destination element).
"""

from __future__ import annotations

import numpy as np

from sim.functional.arith import compute, divide


def _row_source(src: np.ndarray, shape) -> np.ndarray:
    return np.broadcast_to(src[:, :1], shape)


def _col_source(src: np.ndarray, shape) -> np.ndarray:
    return np.broadcast_to(src[:1, :], shape)


def _expand(source):
    def unit(ctx) -> None:
        (src,) = ctx.srcs
        ctx.dst[...] = source(src, ctx.dst.shape)

    return unit


def _expand_op(source, op):
    def unit(ctx) -> None:
        a, b = ctx.srcs
        ctx.dst[...] = op(ctx, a, source(b, a.shape))

    return unit


def _elementwise(fn):
    return lambda ctx, a, b: compute(ctx.dtype, fn, a, b)


_OPS = {
    "ADD": _elementwise(np.add),
    "SUB": _elementwise(np.subtract),
    "MUL": _elementwise(np.multiply),
    "DIV": divide,
    "MAX": _elementwise(np.maximum),
    "MIN": _elementwise(np.minimum),
}

KERNELS = {
    "TROWEXPAND": _expand(_row_source),
    "TCOLEXPAND": _expand(_col_source),
    **{f"TROWEXPAND{name}": _expand_op(_row_source, op) for name, op in _OPS.items()},
    **{f"TCOLEXPAND{name}": _expand_op(_col_source, op) for name, op in _OPS.items()},
}
