"""Element types of PTO tiles and global tensors.

A tile's element type decides how many lanes one 256-byte vector repeat covers
(64 for 32-bit, 128 for 16-bit, 256 for 8-bit types) and which numpy dtype holds the
functional data. bf16 and the fp8 formats come from ``ml_dtypes``.

Names follow the PTO IR spelling (``f32``, ``f16``, ``bf16``, ``i32``, ``u8`` ...); the
C++ spellings (``float``, ``half``, ``int32_t`` ...) and the ``fp32``/``fp16`` keys of the
calibration tables are accepted as aliases.
"""

from __future__ import annotations

import attrs
import ml_dtypes
import numpy as np

from sim.base.errors import UserError

__all__ = [
    "DType",
    "dtype",
    "DTYPES",
    "F32",
    "F16",
    "BF16",
    "I32",
    "I16",
    "I8",
    "U32",
    "U16",
    "U8",
    "I64",
    "U64",
]


@attrs.frozen
class DType:
    """One element type: its IR name, its numpy storage type and its class."""

    name: str
    np_type: np.dtype = attrs.field(eq=False, repr=False)
    kind: str  # "float" | "int" | "uint" | "raw" (bytes without a modelled encoding)

    @property
    def size_bytes(self) -> int:
        return self.np_type.itemsize

    @property
    def bits(self) -> int:
        return 8 * self.size_bytes

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def lanes_per_repeat(self) -> int:
        """Elements in one 256-byte vector repeat (E)."""
        return 256 // self.size_bytes

    def __str__(self) -> str:
        return self.name


def _d(name: str, np_type, kind: str) -> DType:
    return DType(name, np.dtype(np_type), kind)


F32 = _d("f32", np.float32, "float")
F16 = _d("f16", np.float16, "float")
BF16 = _d("bf16", ml_dtypes.bfloat16, "float")
I32 = _d("i32", np.int32, "int")
I16 = _d("i16", np.int16, "int")
I8 = _d("i8", np.int8, "int")
U32 = _d("u32", np.uint32, "uint")
U16 = _d("u16", np.uint16, "uint")
U8 = _d("u8", np.uint8, "uint")
I64 = _d("i64", np.int64, "int")
U64 = _d("u64", np.uint64, "uint")
FP8_E4M3 = _d("f8e4m3", ml_dtypes.float8_e4m3fn, "float")
FP8_E5M2 = _d("f8e5m2", ml_dtypes.float8_e5m2, "float")
# HiFloat8 (A5): the reference names it as a TCVT / TMATMUL element type but gives no
# encoding, so it is held as raw bytes (kind "raw"): loads, stores and moves copy them;
# ASSUMPTION: a functional unit that would compute on hif8 values refuses (timing-only
# runs time it like any 8-bit type).
HIF8 = _d("hif8", np.uint8, "raw")
# FP4 pairs (A5; instructions-more.md §3.10): one byte holds two 4-bit codes (element 2k in
# the low nibble), and a tile column counts pairs. Held as raw bytes like hif8: loads,
# stores and moves copy them; ASSUMPTION: a unit that would compute on the values (TCVT,
# MX matmul) refuses (the e1m2 value table is given, the rounding into it is not).
F4E1M2X2 = _d("f4e1m2x2", np.uint8, "raw")
F4E2M1X2 = _d("f4e2m1x2", np.uint8, "raw")

DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        F32,
        F16,
        BF16,
        I32,
        I16,
        I8,
        U32,
        U16,
        U8,
        I64,
        U64,
        FP8_E4M3,
        FP8_E5M2,
        HIF8,
        F4E1M2X2,
        F4E2M1X2,
    )
}

_ALIASES = {
    "float": "f32",
    "float32": "f32",
    "float32_t": "f32",
    "fp32": "f32",
    "half": "f16",
    "float16": "f16",
    "float16_t": "f16",
    "fp16": "f16",
    "bfloat16": "bf16",
    "bfloat16_t": "bf16",
    "int32": "i32",
    "int32_t": "i32",
    "int": "i32",
    "si32": "i32",
    "int16": "i16",
    "int16_t": "i16",
    "si16": "i16",
    "int8": "i8",
    "int8_t": "i8",
    "si8": "i8",
    "uint32": "u32",
    "uint32_t": "u32",
    "ui32": "u32",
    "uint16": "u16",
    "uint16_t": "u16",
    "ui16": "u16",
    "uint8": "u8",
    "uint8_t": "u8",
    "ui8": "u8",
    "int64": "i64",
    "int64_t": "i64",
    "si64": "i64",
    "uint64": "u64",
    "uint64_t": "u64",
    "ui64": "u64",
    "f8E4M3FN": "f8e4m3",
    "float8_e4m3_t": "f8e4m3",
    "f8E5M2": "f8e5m2",
    "float8_e5m2_t": "f8e5m2",
    "!pto.hif8": "hif8",
    "hifloat8_t": "hif8",
    "!pto.f4E1M2x2": "f4e1m2x2",
    "float4_e1m2x2_t": "f4e1m2x2",
    "!pto.f4E2M1x2": "f4e2m1x2",
    "float4_e2m1x2_t": "f4e2m1x2",
}


def dtype(value: str | DType) -> DType:
    """Return the DType named ``value`` (IR name, C++ name or calibration key)."""
    if isinstance(value, DType):
        return value
    key = _ALIASES.get(value, value)
    try:
        return DTYPES[key]
    except (KeyError, TypeError):
        known = ", ".join(DTYPES)
        raise UserError(f"unknown element type {value!r}; expected one of: {known}") from None
