"""Scalar semantics of the MLIR ``arith`` ops a PTO kernel's control code uses.

Integers follow MLIR: values are two's-complement bit patterns of the result type's width
(``index`` is 64-bit); ``divsi`` truncates toward zero, ``remsi`` takes the dividend's
sign, the ``*ui`` ops and unsigned predicates read the operands as unsigned. Floats of
type f32 / f16 / bf16 are rounded to that type after every op.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from sim.base.errors import SimulationError

__all__ = ["evaluate", "compile_op", "coerce"]

_WIDTH = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}
_FLOAT: dict[str, type[np.floating]] = {"f32": np.float32, "f16": np.float16, "f64": np.float64}


def _bits(t: str) -> int:
    if t in _WIDTH:
        return _WIDTH[t]
    if t.startswith(("i", "ui", "si")) and t.lstrip("usi").isdigit():
        return int(t.lstrip("usi"))
    return 64


def _is_float(t: str) -> bool:
    return t in _FLOAT or t == "bf16"


def wrap(v: int, t: str) -> int:
    """``v`` as a signed value of integer type ``t``."""
    n = _bits(t)
    if n == 1:
        return int(v) & 1
    v = int(v) & ((1 << n) - 1)
    return v - (1 << n) if v >> (n - 1) else v


def _unsigned(v: int, t: str) -> int:
    return int(v) & ((1 << _bits(t)) - 1)


def coerce(v, t: str):
    """A Python value of MLIR type ``t``."""
    if _is_float(t):
        if t == "bf16":
            import ml_dtypes

            return float(np.asarray(v, dtype=ml_dtypes.bfloat16))
        return float(_FLOAT[t](v))
    if isinstance(v, float):
        v = int(v)
    return wrap(int(v), t)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _fdiv(a: float, b: float) -> float:
    """IEEE division: x/0 is a signed infinity, 0/0 NaN."""
    if b:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


_CMPI = {
    "eq": lambda a, b, t: a == b,
    "ne": lambda a, b, t: a != b,
    "slt": lambda a, b, t: a < b,
    "sle": lambda a, b, t: a <= b,
    "sgt": lambda a, b, t: a > b,
    "sge": lambda a, b, t: a >= b,
    "ult": lambda a, b, t: _unsigned(a, t) < _unsigned(b, t),
    "ule": lambda a, b, t: _unsigned(a, t) <= _unsigned(b, t),
    "ugt": lambda a, b, t: _unsigned(a, t) > _unsigned(b, t),
    "uge": lambda a, b, t: _unsigned(a, t) >= _unsigned(b, t),
}


def _cmpf(pred: str, a: float, b: float) -> bool:
    unordered = math.isnan(a) or math.isnan(b)
    if pred in ("false", "true"):
        return pred == "true"
    if pred == "ord":
        return not unordered
    if pred == "uno":
        return unordered
    base = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[
        pred[1:]
    ]
    return (unordered or base) if pred[0] == "u" else (not unordered and base)


def _bitcast(v, src_t: str, dst_t: str):
    if _is_float(src_t) and not _is_float(dst_t):
        return wrap(struct.unpack("<I", struct.pack("<f", v))[0], dst_t)
    if not _is_float(src_t) and _is_float(dst_t):
        return struct.unpack("<f", struct.pack("<I", _unsigned(v, src_t)))[0]
    return v


# float and integer binary ops (unary ones ignore ``b``), built once rather than per call
_FOPS: dict[str, Callable[[Any, Any], Any]] = {
    "addf": lambda a, b: a + b,
    "subf": lambda a, b: a - b,
    "mulf": lambda a, b: a * b,
    "divf": lambda a, b: _fdiv(a, b),
    "negf": lambda a, b: -a,
    "maxnumf": max,
    "minnumf": min,
    "maximumf": max,
    "minimumf": min,
    "remf": math.fmod,
}
_IOPS = {
    "addi": lambda a, b, t: a + b,
    "subi": lambda a, b, t: a - b,
    "muli": lambda a, b, t: a * b,
    "andi": lambda a, b, t: a & b,
    "ori": lambda a, b, t: a | b,
    "xori": lambda a, b, t: a ^ b,
    "shli": lambda a, b, t: a << b,
    "shrsi": lambda a, b, t: a >> b,
    "shrui": lambda a, b, t: _unsigned(a, t) >> b,
    "maxsi": lambda a, b, t: max(a, b),
    "minsi": lambda a, b, t: min(a, b),
    "maxui": lambda a, b, t: max(_unsigned(a, t), _unsigned(b, t)),
    "minui": lambda a, b, t: min(_unsigned(a, t), _unsigned(b, t)),
}


def evaluate(op: str, args: list, types: list, result_type: str, attrs: dict):
    """Value of ``%r = <op> args`` where ``types`` are the operands' MLIR types."""
    name = op.removeprefix("arith.")
    t = result_type
    a: Any = args[0] if args else None  # a scalar value of any type; None: absent
    b: Any = args[1] if len(args) > 1 else None
    if name == "constant":
        return coerce(a, t)
    if name in ("index_cast", "index_castui", "extsi", "trunci"):
        return wrap(a, t)
    if name == "extui":
        return wrap(_unsigned(a, types[0]), t)
    if name in ("sitofp",):
        return coerce(float(a), t)
    if name == "uitofp":
        return coerce(float(_unsigned(a, types[0])), t)
    if name in ("fptosi", "fptoui"):
        if math.isnan(a) or math.isinf(a):
            raise SimulationError(f"arith.{name}: cannot convert {a} to an integer")
        return wrap(int(a), t)
    if name == "bitcast":
        return _bitcast(a, types[0], t)
    if name == "select":
        return args[1] if a else args[2]
    if name == "cmpi":
        return int(_CMPI[attrs["predicate"]](a, b, types[0]))
    if name == "cmpf":
        return int(_cmpf(attrs["predicate"], a, b))
    if name.endswith("f") and name not in ("shli",) and _is_float(t):
        f = _FOPS.get(name)
        if f is not None:
            return coerce(f(a, b), t)
    g = _IOPS.get(name)
    if g is not None:
        return wrap(g(a, b, t), t)
    if name in ("divsi", "divui", "remsi", "remui", "ceildivsi", "ceildivui", "floordivsi"):
        if b == 0:
            raise SimulationError(f"arith.{name}: division by zero ({a} / 0)")
        if name == "divsi":
            return wrap(_trunc_div(a, b), t)
        if name == "remsi":
            return wrap(a - _trunc_div(a, b) * b, t)
        if name == "divui":
            return wrap(_unsigned(a, t) // _unsigned(b, t), t)
        if name == "remui":
            return wrap(_unsigned(a, t) % _unsigned(b, t), t)
        if name == "ceildivsi":
            return wrap(-((-a) // b), t)
        if name == "ceildivui":
            return wrap(-(-_unsigned(a, t) // _unsigned(b, t)), t)
        return wrap(a // b, t)
    raise SimulationError(f"unsupported scalar op {op!r}")


def compile_op(op: str, types: list, result_type: str, attrs: dict):
    """``evaluate`` of one statement as a function of its operand values alone: the op's
    name is resolved once, so scalar code run in a loop (index arithmetic of a tiled
    kernel) pays a call, not the name tests. Ops other than the integer binary ops and
    constants keep the generic path."""
    name = op.removeprefix("arith.")
    t = result_type
    if name == "constant":
        return lambda args: coerce(args[0], t)
    f = _IOPS.get(name)
    if f is None:
        return lambda args: evaluate(op, args, types, t, attrs)
    n = _bits(t)
    if n == 1:
        return lambda args: int(f(args[0], args[1] if len(args) > 1 else None, t)) & 1
    mask, sign, full = (1 << n) - 1, 1 << (n - 1), 1 << n

    def run(args):  # wrap(), its width worked out once
        v = int(f(args[0], args[1] if len(args) > 1 else None, t)) & mask
        return v - full if v & sign else v

    return run
