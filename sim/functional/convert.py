"""TCVT: element type conversion with a rounding mode and a saturation mode.

Rounding modes (``ctx.attrs["round"]``): RINT rounds to nearest with ties to even,
ROUND to nearest with ties away from zero, FLOOR toward -inf, CEIL toward +inf, TRUNC
toward zero, ODD to the neighbour whose last significand bit is 1 (round-to-odd, exact
values unchanged). NONE means "RINT when the conversion loses precision, otherwise no
rounding": it behaves as RINT everywhere except f32 -> f32, which is a plain copy.
Every mode applies to float -> int, to narrowing float -> float (f32 -> f16/bf16) and to
int -> float conversions that are inexact (i32 -> f16, large i32 -> f32 ...).

Saturation (``ctx.attrs["sat"]``): True clamps to the destination range, False wraps,
None picks the A2/A3 default, which is OFF only for the narrowing pairs f16 -> u8,
f16 -> i8, f32 -> i16, f16 -> i16, i64 -> i32 and i32 -> i16 (the PyTorch-compatible
wrap-around) and ON for everything else.

* float -> int, saturating: round, then clamp to [min, max]; +-inf clamp too.
* float -> int, wrapping: round, convert to int64 (saturating at the int64 range), keep
  the destination's low bits (so f32 40000.0 -> i16 is -25536). Going through int64
  rather than the hardware's own intermediate is an assumption; the two agree for every
  value that fits 32 bits.
* NaN -> 0 for float -> int in both modes (assumption: the hardware result is not
  documented).
* int -> int: clamp, or keep the low bits.
* float -> float and int -> float: the exact source value (in float64) is rounded to the
  destination with the requested mode. Saturating narrowing turns a finite overflow into
  +-max finite; inf and NaN pass through. Without saturation overflow follows IEEE
  (inf for nearest, max finite for rounding toward zero ...). i64/u64 sources are exact
  only up to 2**53.

numpy's casts only round to nearest, and ml_dtypes' f64 -> bf16 cast even rounds twice
(through f32). The unit therefore takes the cast only as a first guess, finds the two
representable neighbours of the exact value by stepping the bit pattern (ordered
sign-magnitude integers, which also works for bf16 where ``np.nextafter`` does not),
and picks between them per mode.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from sim.base.errors import SimulationError
from sim.isa.dtypes import DType

ROUND_MODES = ("NONE", "RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD")

WRAP_BY_DEFAULT = frozenset(
    {("f16", "u8"), ("f16", "i8"), ("f32", "i16"), ("f16", "i16"), ("i64", "i32"), ("i32", "i16")}
)

_BITS_TYPE = {1: np.uint8, 2: np.uint16, 4: np.uint32}


# ---- float -> integral value ----------------------------------------------------------


def round_integral(x: np.ndarray, mode: str) -> np.ndarray:
    """Round float64 values to integral float64 values (inf and NaN pass through)."""
    with np.errstate(invalid="ignore"):
        if mode in ("NONE", "RINT"):
            return np.rint(x)
        if mode == "FLOOR":
            return np.floor(x)
        if mode == "CEIL":
            return np.ceil(x)
        t = np.trunc(x)
        if mode == "TRUNC":
            return t
        if mode == "ROUND":
            return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0)
        inexact_even = (x != t) & (np.fmod(t, 2) == 0)
        return np.where(inexact_even, t + np.sign(x), t)


def _clamp_to_int(r: np.ndarray, np_type) -> np.ndarray:
    """Integral float64 values to ``np_type``, saturating; NaN -> 0."""
    info = np.iinfo(np_type)
    high = r >= float(info.max)
    low = r <= float(info.min)
    out = np.where(high | low | np.isnan(r), 0, r).astype(np_type)
    out[high] = info.max
    out[low] = info.min
    return out


def _float_to_int(x: np.ndarray, dst: DType, mode: str, sat: bool) -> np.ndarray:
    r = round_integral(x, mode)
    if sat:
        return _clamp_to_int(r, dst.np_type)
    return _clamp_to_int(r, np.int64).astype(dst.np_type)


def _int_to_int(src: np.ndarray, dst: DType, sat: bool) -> np.ndarray:
    if not sat:
        return src.astype(dst.np_type)
    src_info, dst_info = np.iinfo(src.dtype), np.iinfo(dst.np_type)
    lo, hi = max(src_info.min, dst_info.min), min(src_info.max, dst_info.max)
    return np.clip(src, lo, hi).astype(dst.np_type)


# ---- exact value -> float type --------------------------------------------------------


def _step(v: np.ndarray, direction: int) -> np.ndarray:
    """The representable neighbour of each ``v`` toward +inf (1) or -inf (-1)."""
    bits_type = _BITS_TYPE[v.dtype.itemsize]
    sign_bit = 1 << (8 * v.dtype.itemsize - 1)
    bits = v.view(bits_type).astype(np.int64)
    magnitude = bits & (sign_bit - 1)
    # Ordered key: -0 and +0 share 0, negative numbers count down from it.
    key = np.where(bits & sign_bit, -magnitude, magnitude) + direction
    out_bits = np.where(key < 0, sign_bit | -key, key)
    return out_bits.astype(bits_type).view(v.dtype)


def _as_float64(v: np.ndarray, overflow_edge: float) -> np.ndarray:
    """float64 value of ``v`` with +-inf standing for the overflow threshold."""
    f = v.astype(np.float64)
    return np.where(np.isinf(f), np.copysign(overflow_edge, f), f)


def _odd(v: np.ndarray) -> np.ndarray:
    return (v.view(_BITS_TYPE[v.dtype.itemsize]) & 1).astype(bool)


def _pick(x, lo, hi, mode, overflow_edge) -> np.ndarray:
    below = x - _as_float64(lo, overflow_edge)
    above = _as_float64(hi, overflow_edge) - x
    positive = x > 0
    if mode == "FLOOR":
        return lo
    if mode == "CEIL":
        return hi
    if mode == "TRUNC":
        return np.where(positive, lo, hi)
    if mode == "ODD":
        return np.where(_odd(lo), lo, hi)
    if mode == "ROUND":
        tie_to_hi = positive
    else:
        tie_to_hi = _odd(lo)
    take_hi = (above < below) | ((above == below) & tie_to_hi)
    return np.where(take_hi, hi, lo)


def _to_float(x: np.ndarray, dst: DType, mode: str, sat: bool) -> np.ndarray:
    t = dst.np_type
    with np.errstate(all="ignore"):
        guess = x.astype(t)
    guess_f = guess.astype(np.float64)
    lo = np.where(guess_f <= x, guess, _step(guess, -1)).astype(t)
    hi = np.where(guess_f >= x, guess, _step(guess, 1)).astype(t)
    finfo = ml_dtypes.finfo(t)
    max_finite = np.asarray(finfo.max, dtype=t)
    # Overflow is decided against max + one ulp, the value inf stands for in IEEE rounding.
    overflow_edge = 2 * float(max_finite) - float(_step(max_finite, -1))
    with np.errstate(invalid="ignore"):
        out = np.where(
            (guess_f == x) | np.isnan(x), guess, _pick(x, lo, hi, mode, overflow_edge)
        ).astype(t)
    if sat:
        overflow = np.isinf(out.astype(np.float64)) & np.isfinite(x)
        out = np.where(overflow, np.copysign(max_finite, x).astype(t), out).astype(t)
    return out


# ---- the unit -------------------------------------------------------------------------


def _saturates(ctx, src: DType) -> bool:
    sat = ctx.attrs.get("sat")
    if sat is None:
        return (src.name, ctx.dtype.name) not in WRAP_BY_DEFAULT
    return bool(sat)


def convert(src: np.ndarray, src_dt: DType, dst_dt: DType, mode: str, sat: bool) -> np.ndarray:
    if dst_dt.is_int:
        if src_dt.is_int:
            return _int_to_int(src, dst_dt, sat)
        return _float_to_int(src.astype(np.float64), dst_dt, mode, sat)
    if src_dt == dst_dt:
        # Same float type: the conversion rounds to an integral value (NONE: a copy).
        if mode == "NONE":
            return src
        return round_integral(src.astype(np.float64), mode).astype(dst_dt.np_type)
    return _to_float(src.astype(np.float64), dst_dt, mode, sat)


def _tcvt(ctx) -> None:
    (src,) = ctx.srcs
    (src_dt,) = ctx.src_dtypes
    # Accept the C++ spelling (CAST_RINT) and any case as well as the bare mode name.
    mode = str(ctx.attrs.get("round", "NONE")).upper().removeprefix("CAST_")
    if mode not in ROUND_MODES:
        raise SimulationError(
            f"{ctx.where}: unknown TCVT rounding mode {mode!r}; "
            f"expected one of {', '.join(ROUND_MODES)}"
        )
    ctx.dst[...] = convert(src, src_dt, ctx.dtype, mode, _saturates(ctx, src_dt))


KERNELS = {"TCVT": _tcvt}
