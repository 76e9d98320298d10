"""Value rules shared by every functional unit.

The vector unit computes integers in two's complement: a result that does not fit the
element type keeps its low bits (no saturation). The units model that by computing in a
wide integer (int64, or uint64 for u64) and casting back, which wraps exactly like the
hardware for every width up to 32 bits and like a 64-bit ALU for i64/u64.

Floats are computed in the element type with IEEE-754 results: overflow gives inf,
0/0 and other invalid operations give NaN, and numpy's warnings about them are
suppressed because they are data, not errors. Units run under
``np.errstate(all="ignore")`` set by their caller (``sim.functional.execute`` per call,
the engine once per run), so these helpers, on every unit's path, set none of their own.
Types narrower than f32 (f16, bf16, the fp8 formats) are computed in f32 and rounded
once to the element type; for +, -, *, / and sqrt f32 carries more than twice their
precision, so that single rounding equals a native operation in the narrow type.
Denormals are kept (the hardware's flush-to-zero is not modelled).

Integer division by zero (TDIV, TDIVS, TRECIP, TREM, TREMS, TFMOD, TFMODS on integer
types) has no defined hardware result. The reference CPU simulator asserts on it in
debug builds, so in strict mode the simulator raises a SimulationError naming the first
offending element; in non-strict mode the element's result is 0 and the run goes on.
Integer quotients truncate toward zero (C division, not Python floor division);
``INT_MIN / -1`` wraps back to ``INT_MIN``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sim.base.errors import SimulationError
from sim.functional.context import ValueOutOfRange
from sim.isa.dtypes import DType


def work_type(dt: DType) -> np.dtype:
    """The numpy type a unit computes ``dt`` values in."""
    wt = _WORK_TYPES.get(dt.name)
    if wt is None:
        if dt.is_float:
            wt = np.dtype(np.float32) if dt.bits < 32 else dt.np_type
        else:
            wt = np.dtype(np.uint64) if dt.name == "u64" else np.dtype(np.int64)
        _WORK_TYPES[dt.name] = wt
    return wt


_WORK_TYPES: dict[str, np.dtype] = {}

# Ufuncs whose every element is one exactly rounded IEEE operation (or an exact integer
# one). Their values do not depend on how numpy loops over the operands; which of two NaN
# operands a result carries does (numpy's contiguous, strided and in-place loops pick
# differently), so ``compute_into`` runs them on the operands themselves only when those
# are contiguous, which is the loop the widened copies would run.
_EXACT_ANY = frozenset(
    {np.add, np.subtract, np.multiply, np.maximum, np.minimum, np.negative, np.absolute}
)
_EXACT_FLOAT = _EXACT_ANY | {np.divide, np.sqrt}


def widen(dt: DType, x) -> np.ndarray:
    return np.asarray(x).astype(work_type(dt))


def narrow(dt: DType, x) -> np.ndarray:
    """Round (floats) or wrap (integers) a work-type result back to ``dt``."""
    x = np.asarray(x)
    if x.dtype == _F64 and dt.is_float and dt.bits < 32 and dt.np_type != _F16:
        x = _f32_round_to_odd(x)  # ml_dtypes casts f64 through f32: two roundings
    return x.astype(dt.np_type)


_F64, _F16 = np.dtype(np.float64), np.dtype(np.float16)


def _f32_round_to_odd(x: np.ndarray) -> np.ndarray:
    """f64 values rounded to f32 toward zero, the last bit set when that dropped anything
    (round-to-odd). ml_dtypes converts f64 to bf16 and the fp8 formats through f32, and
    an f64 value just above a bf16 midpoint would first round onto it in f32 and then to
    even; from a round-to-odd f32, which keeps at least two bits more than those formats,
    the second rounding equals one correct rounding of the f64 value (a compiler's
    conversion of the literal). NaN and infinities pass unchanged."""
    r = x.astype(np.float32)
    wide = r.astype(np.float64)
    inexact = (wide != x) & ~np.isnan(x)
    r = np.where(inexact & (np.abs(wide) > np.abs(x)), np.nextafter(r, np.float32(0)), r)
    return (np.asarray(r, np.float32).view(np.uint32) | inexact).view(np.float32)


def compute(dt: DType, fn: Callable, *operands) -> np.ndarray:
    """``fn`` applied in ``dt``'s work type, the result rounded or wrapped to ``dt``."""
    return narrow(dt, fn(*(widen(dt, x) for x in operands)))


def compute_into(ctx, fn: Callable, *operands) -> None:
    """``compute(ctx.dtype, fn, *operands)`` written into ``ctx.dst``, without the copies
    where they change nothing.

    When the element type is its own work type (f32, f64, i64, u64), ``fn`` is an exact
    element-wise ufunc and every operand is a contiguous array of that type shaped like
    ``dst`` (or a 0-d one), ``fn`` runs on the operands as they are: straight into ``dst``
    when the engine found it contiguous and apart from every operand (``ctx.dst_apart``),
    else into a fresh array copied in."""
    dt, dst = ctx.dtype, ctx.dst
    if direct(ctx, fn, operands):
        if ctx.dst_apart:
            fn(*operands, out=dst)
        else:
            dst[...] = fn(*operands)
    else:
        dst[...] = narrow(dt, fn(*(widen(dt, x) for x in operands)))


def direct(ctx, fn: Callable, operands) -> bool:
    """Whether ``compute_into`` runs ``fn`` on ``operands`` as they are (see there)."""
    dst = ctx.dst
    wt = work_type(ctx.dtype)
    return (
        dst.dtype == wt
        and fn in (_EXACT_FLOAT if wt.kind == "f" else _EXACT_ANY)
        and all(
            getattr(x, "dtype", None) == wt
            and x.flags.c_contiguous
            and (x.shape == dst.shape or not x.shape)
            for x in operands
        )
    )


def with_binder(unit: Callable, bind: Callable) -> Callable:
    """``unit`` carrying ``bind`` as ``unit.bind``: ``bind(ctx)`` gives the unit bound to
    ctx's arrays (``bound_into``), which ``sim.functional.unit_for`` prefers."""
    unit.bind = bind  # type: ignore[attr-defined]  # mypy types functions without attributes
    return unit


def bound_into(ctx, fn: Callable, a, b=None) -> Callable | None:
    """``compute_into(ctx, fn, a[, b])`` as a unit bound to these operand arrays, for the
    engine to call on every execution while they stay the tile views it bound (the
    checks of ``compute_into`` made once); None when it would not run ``fn`` directly.
    ``b`` may be a callable giving the operand per execution (a scalar read at run
    time), of the type it had here."""
    operands = (a,) if b is None else (a, b() if callable(b) else b)
    if not direct(ctx, fn, operands):
        return None
    dst = ctx.dst
    if b is None:
        if ctx.dst_apart:
            return lambda ctx: fn(a, out=dst)

        def run(ctx) -> None:
            dst[...] = fn(a)
    elif callable(b):
        if ctx.dst_apart:
            return lambda ctx: fn(a, b(), out=dst)

        def run(ctx) -> None:
            dst[...] = fn(a, b())
    else:
        if ctx.dst_apart:
            return lambda ctx: fn(a, b, out=dst)

        def run(ctx) -> None:
            dst[...] = fn(a, b)

    return run


def scalar(dt: DType, value) -> np.ndarray:
    """A scalar operand as a 0-d array of ``dt``; integers wrap like a C cast."""
    if dt.is_int:
        return np.asarray(int(value)).astype(dt.np_type)
    return narrow(dt, np.float64(value))


def require_float(ctx) -> None:
    if not ctx.dtype.is_float:
        raise SimulationError(
            f"{ctx.where}: {ctx.op} needs a floating-point element type, got {ctx.dtype}"
        )


def first_index(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def zero_divisors(ctx, dividend: np.ndarray, divisor: np.ndarray) -> np.ndarray:
    """Mask of integer zero divisors; raises on the first one in strict mode."""
    dividend, divisor = np.broadcast_arrays(dividend, divisor)
    zero = divisor == 0
    if ctx.strict and zero.any():
        at = first_index(zero)
        raise ValueOutOfRange(
            f"{ctx.where}: integer division by zero at element {at}: {dividend[at]} / 0"
        )
    return zero


def trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C integer division (toward zero) of wide integers; ``b`` must be non-zero."""
    q = a // b
    # Floor division rounds the other way when the quotient is negative and inexact.
    fix = (q * b != a) & ((a < 0) != (b < 0))
    return q + fix


def divide(ctx, a, b) -> np.ndarray:
    """``a / b`` in ``ctx.dtype``: IEEE for floats, C truncating division for integers."""
    dt = ctx.dtype
    if dt.is_float:
        return compute(dt, np.divide, a, b)
    a, b = np.broadcast_arrays(widen(dt, a), widen(dt, b))
    zero = zero_divisors(ctx, a, b)
    return narrow(dt, np.where(zero, 0, trunc_divide(a, np.where(zero, 1, b))))


def divide_into(ctx, a, b) -> None:
    """``divide(ctx, a, b)`` written into ``ctx.dst`` (floats as ``compute_into`` does)."""
    if ctx.dtype.is_float:
        compute_into(ctx, np.divide, a, b)
    else:
        ctx.dst[...] = divide(ctx, a, b)
