"""Leaky activation units: TPRELU (per-element slope tile) and TLRELU (scalar slope).

Both compute ``a > 0 ? a : a * slope`` with the product rounded to the element type.
A2/A3 builds TPRELU from TMUL, TCMPS(GT 0) and TSEL; the select keeps ``a`` exactly
where ``a > 0``, so NaN inputs take the product branch (and stay NaN). TPRELU's ``tmp``
(the compare mask) is scratch and left alone.
"""

from __future__ import annotations

import numpy as np

from sim.functional.arith import compute, scalar


def _leaky(ctx, a, slope) -> np.ndarray:
    return np.where(a > 0, a, compute(ctx.dtype, np.multiply, a, slope))


def _tprelu(ctx) -> None:
    a, slope = ctx.srcs
    ctx.dst[...] = _leaky(ctx, a, slope)


def _tlrelu(ctx) -> None:
    (a,) = ctx.srcs
    ctx.dst[...] = _leaky(ctx, a, scalar(ctx.dtype, ctx.scalars[0]))


KERNELS = {"TPRELU": _tprelu, "TLRELU": _tlrelu}
