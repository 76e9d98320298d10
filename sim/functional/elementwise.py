"""Element-wise tile-tile and unary units.

Each lane of the destination's valid region gets ``op(src0[i, j], src1[i, j])`` (or
``op(src[i, j])``); the engine has already cut every operand to that region, so the
units only see equally shaped arrays. The value rules (integer wrap-around, narrow floats
computed in f32, integer division by zero) live in ``arith``.

Hardware lowerings that matter for values:

* TNEG is ``TMULS(src, -1)`` on A2/A3; for integers both give the wrapped negation, so
  ``-INT_MIN == INT_MIN``. TABS wraps the same way.
* TRECIP is ``TDIVS(dst, 1, src)``: IEEE ``1/x`` for floats, C division ``1/x`` for
  integers (0 except for +-1, with the integer division-by-zero rule).
* TRSQRT is computed as ``1 / sqrt(x)`` with two roundings, like the A2/A3 three-operand
  form (``vsqrt`` then ``vdiv``); the single-instruction ``vrsqrt`` approximation is not
  modelled.
* TMAX, TMIN and TRELU propagate NaN (numpy ``maximum``/``minimum``); the hardware
  behaviour for NaN operands is not documented.
* TEXP, TLOG, TSQRT give IEEE results for invalid inputs (``log(0) = -inf``,
  ``log(-1) = NaN``, ``sqrt(-1) = NaN``), computed with numpy's f32 routines; the
  hardware's approximations may differ in the last bits.
* TADDC / TSUBC (``a + b + c``, ``a - b + c``) are two dependent adds, each rounded or
  wrapped to the element type.
"""

from __future__ import annotations

import numpy as np

from sim.functional.arith import (
    bound_into,
    compute,
    compute_into,
    divide_into,
    require_float,
    scalar,
    with_binder,
)


def _binary(fn):
    def unit(ctx) -> None:
        a, b = ctx.srcs
        compute_into(ctx, fn, a, b)

    def bind(ctx):
        a, b = ctx.srcs
        return bound_into(ctx, fn, a, b)

    return with_binder(unit, bind)


def _unary(fn, float_only: bool = False):
    def unit(ctx) -> None:
        if float_only:
            require_float(ctx)
        (a,) = ctx.srcs
        compute_into(ctx, fn, a)

    def bind(ctx):
        if float_only:
            require_float(ctx)
        (a,) = ctx.srcs
        return bound_into(ctx, fn, a)

    return with_binder(unit, bind)


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _tdiv(ctx) -> None:
    a, b = ctx.srcs
    divide_into(ctx, a, b)


def _trecip(ctx) -> None:
    (a,) = ctx.srcs
    divide_into(ctx, scalar(ctx.dtype, 1), a)


def _trelu(ctx) -> None:
    (a,) = ctx.srcs
    ctx.dst[...] = compute(ctx.dtype, lambda x: np.maximum(x, 0), a)


def _taddc(ctx) -> None:
    a, b, c = ctx.srcs
    compute_into(ctx, np.add, compute(ctx.dtype, np.add, a, b), c)


def _tsubc(ctx) -> None:
    a, b, c = ctx.srcs
    compute_into(ctx, np.add, compute(ctx.dtype, np.subtract, a, b), c)


KERNELS = {
    "TADD": _binary(np.add),
    "TSUB": _binary(np.subtract),
    "TMUL": _binary(np.multiply),
    "TDIV": _tdiv,
    "TMAX": _binary(np.maximum),
    "TMIN": _binary(np.minimum),
    "TABS": _unary(np.abs),
    "TNEG": _unary(np.negative),
    "TRELU": _trelu,
    "TEXP": _unary(np.exp, float_only=True),
    "TLOG": _unary(np.log, float_only=True),
    "TSQRT": _unary(np.sqrt, float_only=True),
    "TRSQRT": _unary(_rsqrt, float_only=True),
    "TRECIP": _trecip,
    "TADDC": _taddc,
    "TSUBC": _tsubc,
}
