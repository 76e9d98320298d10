"""Tile-scalar units: one scalar broadcast against every lane of a tile.

The scalar is first cast to the element type (integers wrap like a C cast), then the
operation follows the element-wise value rules of ``arith``. Lowerings that change
values on some targets are modelled behind quirk flags:

* ``tsubs_negate_via_float`` — A2/A3 computes TSUBS as ``vadds`` with the scalar
  ``(T)(-(float)s)``. For integer types the negation goes through f32, so scalars beyond
  +-2**24 lose precision before the add. For float types the negation is exact and the
  flag changes nothing.
* ``tdivs_inplace_reciprocal`` — A2/A3 float TDIVS in the tile/scalar form, when dst and
  src share their bytes, is one ``vmuls`` by ``1/s``: the reciprocal is computed in f32,
  rounded to the element type, and multiplied in. The result can differ from a true
  division in the last bit; ``s == 0`` gives an infinite factor, so ``x/0`` is ``+-inf``
  and ``0/0`` is NaN (``0 * inf``). Without the flag (or out of place) TDIVS is a true
  division in both forms.

TDIVS has two operand orders: ``src / s`` and, when ``ctx.scalar_first``, ``s / src``.
Integer TDIVS is C division on the scalar pipe (truncation toward zero) with the integer
division-by-zero rule of ``arith``. TEXPANDS has no source tile: it fills the valid
region with the scalar.
"""

from __future__ import annotations

import numpy as np

from sim.functional.arith import (
    bound_into,
    compute,
    compute_into,
    divide_into,
    scalar,
    with_binder,
)


def _with_scalar(fn):
    def unit(ctx) -> None:
        (a,) = ctx.srcs
        compute_into(ctx, fn, a, scalar(ctx.dtype, ctx.scalars[0]))

    def bind(ctx):
        (a,) = ctx.srcs
        dt = ctx.dtype
        last: list = [None, None]  # the scalar operand last read and its cast

        def cast():
            raw = ctx.scalars[0]
            if raw is not last[0]:  # a constant is one object on every execution
                last[0], last[1] = raw, scalar(dt, raw)
            return last[1]

        return bound_into(ctx, fn, a, cast)

    return with_binder(unit, bind)


def _tsubs(ctx) -> None:
    (a,) = ctx.srcs
    s = scalar(ctx.dtype, ctx.scalars[0])
    if ctx.dtype.is_int and "tsubs_negate_via_float" in ctx.quirks:
        negated = scalar(ctx.dtype, -np.float32(s))
        compute_into(ctx, np.add, a, negated)
    else:
        compute_into(ctx, np.subtract, a, s)


def _reciprocal_multiply(ctx, a, s) -> np.ndarray:
    with np.errstate(all="ignore"):
        factor = scalar(ctx.dtype, np.float32(1) / np.float32(s))
    return compute(ctx.dtype, np.multiply, a, factor)


def _tdivs(ctx) -> None:
    (a,) = ctx.srcs
    s = scalar(ctx.dtype, ctx.scalars[0])
    if ctx.scalar_first:
        divide_into(ctx, s, a)
    elif ctx.dtype.is_float and ctx.inplace and "tdivs_inplace_reciprocal" in ctx.quirks:
        ctx.dst[...] = _reciprocal_multiply(ctx, a, s)
    else:
        divide_into(ctx, a, s)


def _texpands(ctx) -> None:
    ctx.dst[...] = scalar(ctx.dtype, ctx.scalars[0])


def _taxpy(ctx) -> None:
    """TAXPY (instructions-more.md §3.5): ``dst = a * src + dst``, dst read and written.
    ASSUMPTION: computed as vmuls then vadd, each rounded to dst's type (the reference does
    not say whether ``vaxpy`` rounds once); an f16 source widens exactly to an f32 dst."""
    (a,) = ctx.srcs
    s = scalar(ctx.src_dtypes[0], ctx.scalars[0])
    ctx.dst[...] = compute(ctx.dtype, np.add, compute(ctx.dtype, np.multiply, a, s), ctx.dst)


KERNELS = {
    "TAXPY": _taxpy,
    "TADDS": _with_scalar(np.add),
    "TSUBS": _tsubs,
    "TMULS": _with_scalar(np.multiply),
    "TDIVS": _tdivs,
    "TMAXS": _with_scalar(np.maximum),
    "TMINS": _with_scalar(np.minimum),
    "TEXPANDS": _texpands,
}
