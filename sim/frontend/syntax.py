"""Vocabulary shared by the PTO IR parser and printer: value types, their canonical
spelling, literals, pipes and sync endpoints.

Types of values (what ``value_type`` returns):

* ``TileType``                               ``!pto.tile_buf<...>``
* ``PtrType(dtype)``                         ``!pto.ptr<T>`` (a memory space is accepted, not kept)
* ``ViewType("tensor_view" | "partition_tensor_view", dtype, shape)``   ``None`` dims are ``?``
* ``str``                                    a builtin scalar type: ``index``, ``i32``, ``f32`` ...
"""

from __future__ import annotations

import math
import re

import attrs
import ml_dtypes
import numpy as np

from sim.isa.dtypes import DType
from sim.isa.opcodes import PIPES
from sim.isa.program import Const, GmPtr, PartView, Scalar, TensorView
from sim.isa.tile import BLayout, Pad, SLayout, Tile, TileType

__all__ = [
    "PtrType",
    "ViewType",
    "value_type",
    "make_value",
    "format_type",
    "format_dtype",
    "format_literal",
    "is_scalar_type",
    "is_int_type",
    "is_float_type",
    "SYNC_PIPES",
    "ENDPOINT_PIPE",
    "ENUM_ATTR_KINDS",
    "BARE_KEY",
]


@attrs.frozen(cache_hash=True)
class PtrType:
    dtype: DType
    space: str | None = attrs.field(default=None, eq=False)


@attrs.frozen(cache_hash=True)
class ViewType:
    kind: str  # "tensor_view" | "partition_tensor_view"
    dtype: DType
    shape: tuple


def value_type(v):
    """The type of an IR value (see the module docstring)."""
    if isinstance(v, Tile):
        return v.type
    if isinstance(v, (Scalar, Const)):
        return v.type
    if isinstance(v, GmPtr):
        return PtrType(v.dtype)
    if isinstance(v, TensorView):
        return ViewType("tensor_view", v.dtype, v.shape)
    if isinstance(v, PartView):
        return ViewType("partition_tensor_view", v.dtype, v.shape)
    raise TypeError(f"not an IR value: {v!r}")


def make_value(name: str, t):
    """The IR value named ``name`` (without ``%``) of type ``t``."""
    if isinstance(t, TileType):
        return Tile(name, t)
    if isinstance(t, PtrType):
        return GmPtr(name, t.dtype)
    if isinstance(t, ViewType):
        cls = TensorView if t.kind == "tensor_view" else PartView
        return cls(name, t.dtype, t.shape)
    return Scalar(name, t)


# --- spelling ----------------------------------------------------------------------------

_IR_DTYPE = {
    "u8": "ui8",
    "u16": "ui16",
    "u32": "ui32",
    "u64": "ui64",
    "f8e4m3": "f8E4M3FN",
    "f8e5m2": "f8E5M2",
    "hif8": "!pto.hif8",
    "f4e1m2x2": "!pto.f4E1M2x2",
    "f4e2m1x2": "!pto.f4E2M1x2",
}


def format_dtype(d: DType) -> str:
    """PTO IR spelling of an element type (``u32`` -> ``ui32``, ``f8e4m3`` -> ``f8E4M3FN``)."""
    return _IR_DTYPE.get(d.name, d.name)


def _dim(x) -> str:
    return "?" if x is None else str(x)


def format_tile_type(t: TileType) -> str:
    """The compact form the compiler prints; keys at their default are dropped."""
    parts = [t.loc.value, f"{t.rows}x{t.cols}x{format_dtype(t.dtype)}"]
    if (t.valid_rows, t.valid_cols) != (t.rows, t.cols):
        parts.append(f"valid={_dim(t.valid_rows)}x{_dim(t.valid_cols)}")
    if t.blayout is not BLayout.ROW_MAJOR:
        parts.append(f"blayout={t.blayout.value}")
    if t.slayout is not SLayout.NONE_BOX:
        parts.append(f"slayout={t.slayout.value}")
    if t.fractal != 512:
        parts.append(f"fractal={t.fractal}")
    if t.pad is not Pad.NULL:
        parts.append(f"pad={int(t.pad)}")
    if t.compact:
        parts.append(f"compact={t.compact}")
    return f"!pto.tile_buf<{', '.join(parts)}>"


def format_type(t) -> str:
    if isinstance(t, TileType):
        return format_tile_type(t)
    if isinstance(t, PtrType):
        return f"!pto.ptr<{format_dtype(t.dtype)}>"
    if isinstance(t, ViewType):
        dims = "".join(f"{_dim(d)}x" for d in t.shape)
        return f"!pto.{t.kind}<{dims}{format_dtype(t.dtype)}>"
    return str(t)


_FLOAT_NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16}
_INT_BITS = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32}


def float_from_bits(bits: int, type_: str) -> float:
    """A float literal written as its bit pattern (``0x7F800000 : f32``)."""
    np_t = np.dtype(_FLOAT_NP.get(type_, np.float32))
    uint = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np_t.itemsize]
    return float(np.array(bits & ((1 << (8 * np_t.itemsize)) - 1), dtype=uint).view(np_t))


def format_literal(value, type_: str = "index") -> str:
    """A literal as MLIR writes it: ``true``, ``42``, ``2.5``, ``1.0e+20``, ``0x7F800000``."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)) and not is_float_type(type_):
        return str(int(value))
    x = float(value)
    if not math.isfinite(x):
        np_t = np.dtype(_FLOAT_NP.get(type_, np.float32))
        uint = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np_t.itemsize]
        bits = int(np.array(x, dtype=np_t).view(uint))
        return f"0x{bits:0{2 * np_t.itemsize}X}"
    r = repr(x)
    if "e" in r:
        mant, exp = r.split("e")
        if "." not in mant:
            mant += ".0"
        r = f"{mant}e{exp}"
    return r


# --- scalar types ------------------------------------------------------------------------

_SCALAR_RE = re.compile(r"(index|[su]?i\d+|u\d+|bf16|tf32|f\d+|f8E\w+|f8e\w+)")


def is_scalar_type(name: str) -> bool:
    return bool(_SCALAR_RE.fullmatch(name))


def is_int_type(t) -> bool:
    return isinstance(t, str) and (t == "index" or bool(re.fullmatch(r"[su]?i\d+|u\d+", t)))


def is_float_type(t) -> bool:
    return isinstance(t, str) and is_scalar_type(t) and not is_int_type(t)


# --- pipes and sync endpoints --------------------------------------------------------------

SYNC_PIPES = tuple(PIPES) + (
    "PIPE_ALL",
    "PIPE_MTE4",
    "PIPE_MTE5",
    "PIPE_V2",
    "VIRTUAL_PIPE_MTE2_L1A",
    "VIRTUAL_PIPE_MTE2_L1B",
)

# pto-as-syntax.md §4: record_event / wait_event / barrier_sync name op classes
ENDPOINT_PIPE = {
    "TLOAD": "PIPE_MTE2",
    "TSTORE_VEC": "PIPE_MTE3",
    "TSTORE_ACC": "PIPE_FIX",
    "TMOV_M2L": "PIPE_MTE1",
    "TMOV_M2B": "PIPE_MTE1",
    "TMOV_M2S": "PIPE_FIX",
    "TMOV_M2V": "PIPE_V",
    "TMOV_V2M": "PIPE_FIX",
    "TMATMUL": "PIPE_M",
    "TVEC": "PIPE_V",
    "TVECWAIT_EVENT": "PIPE_V",
}

# attributes the engine reads, normalised to their enum value: key -> #pto<KIND value>
ENUM_ATTR_KINDS = {"rmode": "round_mode", "cmpMode": "cmp"}

BARE_KEY = re.compile(r"[A-Za-z_][\w$]*(?:\.[\w$]+)*")  # a NAME or OPNAME token
