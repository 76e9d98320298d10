"""Cube and data-movement units: TMATMUL family, TGEMV, TMOV, TEXTRACT.

The cube multiplies in the accumulator's precision: f16 / bf16 / f32 inputs accumulate
in f32, i8 inputs in i32 (instructions.md §3.7). ``m``, ``k``, ``n`` come from the valid
regions: ``m`` = A's valid rows, ``k`` = A's valid cols, ``n`` = B's valid cols. TMOV
copies (with the destination's element type: an Acc -> Mat move converts), TEXTRACT
copies the window starting at (indexRow, indexCol) of its source.
"""

from __future__ import annotations

import numpy as np

from sim.errors import SimulationError
from sim.functional.context import FnContext

__all__ = ["KERNELS"]


def _acc_type(ctx: FnContext):
    return np.int64 if ctx.dtype.is_int else np.float64


def _product(ctx: FnContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m, k = a.shape
    if b.shape[0] < k:
        raise SimulationError(f"{ctx.where}: B has {b.shape[0]} valid rows, A's valid cols k = {k}")
    n = ctx.dst.shape[1]
    acc = _acc_type(ctx)
    # one rounding at the end: the f32 accumulator holds exact products of f16 inputs
    return a.astype(acc) @ b[:k, :n].astype(acc)


def _store(ctx: FnContext, value: np.ndarray) -> None:
    m, n = ctx.dst.shape
    ctx.dst[...] = value[:m, :n].astype(ctx.dtype.np_type)


def tmatmul(ctx: FnContext) -> None:
    a, b = ctx.srcs[-2], ctx.srcs[-1]
    _store(ctx, _product(ctx, a, b))


def tmatmul_acc(ctx: FnContext) -> None:
    """C_out = C_in + A.B (with c_in the first source, or dst itself in the 3-operand form)."""
    if len(ctx.srcs) == 3:
        c_in, a, b = ctx.srcs
    else:
        c_in, (a, b) = ctx.dst, ctx.srcs
    base = np.array(c_in[:ctx.dst.shape[0], :ctx.dst.shape[1]], dtype=_acc_type(ctx))
    _store(ctx, base + _product(ctx, a, b))


def tmatmul_bias(ctx: FnContext) -> None:
    a, b, bias = ctx.srcs
    out = _product(ctx, a, b) + np.asarray(bias[0, :ctx.dst.shape[1]], dtype=_acc_type(ctx))
    _store(ctx, out)


def tgemv(ctx: FnContext) -> None:
    a, b = ctx.srcs
    _store(ctx, _product(ctx, a[:1], b))


def tmov(ctx: FnContext) -> None:
    src = ctx.srcs[0]
    m, n = ctx.dst.shape
    ctx.dst[...] = src[:m, :n].astype(ctx.dtype.np_type)


def textract(ctx: FnContext) -> None:
    src = ctx.srcs[0]
    r0, c0 = (int(x) for x in (tuple(ctx.scalars) + (0, 0))[:2])
    m, n = ctx.dst.shape
    if r0 < 0 or c0 < 0 or r0 + m > src.shape[0] or c0 + n > src.shape[1]:
        raise SimulationError(f"{ctx.where}: window [{r0}:{r0 + m}, {c0}:{c0 + n}] is outside "
                              f"the {src.shape[0]}x{src.shape[1]} source")
    ctx.dst[...] = src[r0:r0 + m, c0:c0 + n].astype(ctx.dtype.np_type)


KERNELS = {"TMATMUL": tmatmul, "TMATMUL_ACC": tmatmul_acc, "TMATMUL_BIAS": tmatmul_bias,
           "TGEMV": tgemv, "TMOV": tmov, "TEXTRACT": textract}
