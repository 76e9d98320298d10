"""Cube unit: the TMATMUL family and TGEMV.

The cube multiplies in the accumulator's precision (instructions.md §2, §3.7): f16 / bf16
/ f32 inputs accumulate in f32, i8 inputs in i32, with one rounding when the result is
written. ``m`` is A's valid rows (TGEMV: 1), ``k`` A's valid cols, ``n`` B's valid cols;
one ``mad`` writes the ``m x n`` corner of the accumulator and nothing else, so a
TMATMUL_ACC whose A has fewer valid rows than the accumulator (a tail block of M) leaves
the accumulator's other rows as they were.

The bytes of L0A / L0B / L0C hold the fractal (NZ / zZ / ZN) arrangement on hardware;
the units work on the logical matrices, which is what the layouts encode, so aliasing
between tiles of the same layout behaves as on hardware.
"""

from __future__ import annotations

import numpy as np

from sim.base.errors import SimulationError
from sim.functional.context import FnContext

__all__ = ["KERNELS"]


def _acc_type(ctx: FnContext):
    # exact products of f16/bf16 inputs and their sums up to k = 4095 fit f64; i8 . i8
    # sums fit i64 — one rounding to the accumulator type at the end
    return np.int64 if ctx.dtype.is_int else np.float64


def _mad(ctx: FnContext, a: np.ndarray, b: np.ndarray):
    """(m, n, A.B) over the valid regions, cut to the destination's region."""
    m, k = a.shape
    if b.shape[0] < k:
        raise SimulationError(
            f"{ctx.where}: B has {b.shape[0]} valid rows, fewer than A's valid cols k = {k}"
        )
    m = min(m, ctx.dst.shape[0])
    n = min(b.shape[1], ctx.dst.shape[1])
    acc = _acc_type(ctx)
    return m, n, a[:m].astype(acc) @ b[:k, :n].astype(acc)


def _write(ctx: FnContext, m: int, n: int, value: np.ndarray) -> None:
    ctx.dst[:m, :n] = value.astype(ctx.dtype.np_type)


def tmatmul(ctx: FnContext) -> None:
    m, n, ab = _mad(ctx, ctx.srcs[-2], ctx.srcs[-1])
    _write(ctx, m, n, ab)


def tmatmul_acc(ctx: FnContext) -> None:
    """C_out = C_in + A.B (C_in the first source, or dst itself in the 3-operand form)."""
    if len(ctx.srcs) == 3:
        c_in, a, b = ctx.srcs
    else:
        c_in, (a, b) = ctx.dst, ctx.srcs
    m, n, ab = _mad(ctx, a, b)
    if c_in.shape[0] < m or c_in.shape[1] < n:
        raise SimulationError(
            f"{ctx.where}: C_in has a {c_in.shape[0]}x{c_in.shape[1]} valid "
            f"region, the product is {m}x{n}"
        )
    _write(ctx, m, n, np.asarray(c_in[:m, :n], dtype=_acc_type(ctx)) + ab)


def tmatmul_bias(ctx: FnContext) -> None:
    a, b, bias = ctx.srcs
    m, n, ab = _mad(ctx, a, b)
    _write(ctx, m, n, ab + np.asarray(bias[0, :n], dtype=_acc_type(ctx)))


def tgemv(ctx: FnContext) -> None:
    """C[0, :] = a[0, :] . B: a mad with m = 1, k = B's valid rows (instructions.md §3.7)."""
    a, b = ctx.srcs
    k = b.shape[0]
    if a.shape[1] < k:
        raise SimulationError(f"{ctx.where}: a has {a.shape[1]} valid cols, B's valid rows k = {k}")
    m, n, ab = _mad(ctx, a[:1, :k], b)
    _write(ctx, m, n, ab)


KERNELS = {
    "TMATMUL": tmatmul,
    "TMATMUL_ACC": tmatmul_acc,
    "TMATMUL_BIAS": tmatmul_bias,
    "TGEMV": tgemv,
}
