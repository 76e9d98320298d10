"""Remainder units: TREM / TREMS (floor remainder) and TFMOD / TFMODS (C ``fmod``).

TFMOD keeps the sign of the dividend: ``r = a - trunc(a/b)*b`` (``-7 fmod 3 = -1``).
TREM keeps the sign of the divisor, the CPU reference algorithm: ``r = fmod(a, b)``, then
``r += b`` when ``r`` is non-zero and its sign differs from ``b``'s (``-7 rem 3 = 2``,
``7 rem -3 = -2``; Python's ``%``). Floats use the exact ``fmod`` of the element values
(narrow floats in f32), so ``x rem 0`` and ``x fmod 0`` are NaN; integers use the same
definitions on exact integers with the integer division-by-zero rule of ``arith``.
The ``tmp`` operand is scratch on every target and is left alone.

A2/A3 has no integer remainder instruction: i32 TREM and TREMS convert their operands to
f32, run the float algorithm and truncate the result back. Modelled behind quirk flags:

* ``trem_i32_via_f32`` / ``trems_i32_via_f32`` — operands (including the TREMS scalar)
  must lie in [-2**24, 2**24], where f32 holds them exactly. Outside, strict mode raises
  a SimulationError naming the element; non-strict mode computes the remainder of the
  f32-rounded operands, which is what the f32 pipeline sees.
* ``trem_i32_clobbers_src1`` — the lowering converts src1 in place and leaves it as f32:
  afterwards src1's processed region holds the f32 bit patterns of its former values.
  The unit writes that pattern back into ``ctx.srcs[1]``.
"""

from __future__ import annotations

import numpy as np

from sim.functional.arith import compute, first_index, narrow, scalar, widen, zero_divisors
from sim.functional.context import ValueOutOfRange

F32_EXACT = 2**24


def _floor_fix(r: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


def _float_rem(a, b):
    return _floor_fix(np.fmod(a, b), b)


def _int_result(ctx, a, b, fn) -> np.ndarray:
    """``fn`` on wide integers, with zero divisors giving 0 (or raising in strict mode)."""
    dt = ctx.dtype
    a, b = np.broadcast_arrays(widen(dt, a), widen(dt, b))
    zero = zero_divisors(ctx, a, b)
    with np.errstate(all="ignore"):
        r = fn(a, np.where(zero, 1, b))
    return narrow(dt, np.where(zero, 0, r))


def _check_f32_exact(ctx, name: str, values) -> None:
    values = np.asarray(values)
    outside = np.abs(values.astype(np.int64)) > F32_EXACT
    if not (ctx.strict and outside.any()):
        return
    if values.ndim:
        at = first_index(outside)
        found = f"at element {at}: {name} = {values[at]}"
    else:
        found = f"{name} = {values}"
    raise ValueOutOfRange(
        f"{ctx.where}: i32 {ctx.op} operand out of the f32-exact range [-2**24, 2**24] "
        f"{found} (the A2/A3 lowering computes through f32)"
    )


def _rem_via_f32(a, b):
    """Floor remainder of the f32-rounded operands, truncated back to an integer."""
    r = _float_rem(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32))
    return r.astype(np.int64)


def _remainder(ctx, a, b, via_f32_quirk: str) -> np.ndarray:
    if ctx.dtype.is_float:
        return compute(ctx.dtype, _float_rem, a, b)
    if ctx.dtype.name == "i32" and via_f32_quirk in ctx.quirks:
        _check_f32_exact(ctx, "src0" if ctx.op == "TREM" else "src", a)
        _check_f32_exact(ctx, "src1" if ctx.op == "TREM" else "scalar", b)
        return _int_result(ctx, a, b, _rem_via_f32)
    return _int_result(ctx, a, b, lambda x, y: _floor_fix(np.fmod(x, y), y))


def _fmod(ctx, a, b) -> np.ndarray:
    if ctx.dtype.is_float:
        return compute(ctx.dtype, np.fmod, a, b)
    return _int_result(ctx, a, b, np.fmod)


def _trem(ctx) -> None:
    a, b = ctx.srcs
    ctx.dst[...] = _remainder(ctx, a, b, "trem_i32_via_f32")
    if ctx.dtype.name == "i32" and "trem_i32_clobbers_src1" in ctx.quirks:
        b[...] = b.astype(np.float32).view(np.int32)


def _trems(ctx) -> None:
    (a,) = ctx.srcs
    ctx.dst[...] = _remainder(ctx, a, scalar(ctx.dtype, ctx.scalars[0]), "trems_i32_via_f32")


def _tfmod(ctx) -> None:
    a, b = ctx.srcs
    ctx.dst[...] = _fmod(ctx, a, b)


def _tfmods(ctx) -> None:
    (a,) = ctx.srcs
    ctx.dst[...] = _fmod(ctx, a, scalar(ctx.dtype, ctx.scalars[0]))


KERNELS = {
    "TREM": _trem,
    "TREMS": _trems,
    "TFMOD": _tfmod,
    "TFMODS": _tfmods,
}
