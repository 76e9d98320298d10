"""The scalar operands a builder call takes, and how the key it is looked up by holds them.

A loop issues the same call from one line over and over; the builder looks the call up by
its operands before building any IR (``Kernel._instr``). A scalar goes into that key by
type and value, a float by its bit pattern: ``-0.0 == 0.0`` in Python, and a NaN's payload
takes no part in comparison, but either is another instruction (``x / -0.0`` is -inf)."""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["SCALARS", "FLOATS", "float_bits"]

# scalar operands an instruction takes, keyed by type and value when looking up a call
SCALARS = frozenset(
    {
        bool,
        int,
        float,
        np.bool_,
        np.float16,
        np.float32,
        np.float64,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
    }
)
FLOATS = frozenset({float, np.float16, np.float32, np.float64})  # keyed by bit pattern
_PACK_F64 = struct.Struct("<d").pack


def float_bits(value) -> bytes:
    """A float scalar's bit pattern (a numpy scalar's at its own width: its payload bits
    are what the run sees)."""
    return _PACK_F64(value) if type(value) is float else value.tobytes()
