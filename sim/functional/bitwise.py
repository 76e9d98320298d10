"""Bitwise units: TAND, TOR, TXOR, TNOT, the shifts TSHL, TSHR and the scalar forms
TANDS, TORS, TSHLS, TSHRS (the scalar, cast to the element type, stands in for src1).

The logic ops act on the raw bit patterns, so they work for any element type: A2/A3
itself reinterprets every tile as 16-bit lanes. They are computed on an unsigned view of
the same width. TXOR's ``tmp`` (A2/A3 builds XOR from OR, AND and NOT through it) is
scratch and is left alone.

TSHL / TSHR shift each element of src0 by the count in the same lane of src1 (TSHLS /
TSHRS: by the scalar). Left shifts drop the bits that leave the element; right shifts
are arithmetic for signed types and logical for unsigned ones (the element's C
semantics, as in the A2/A3 scalar loop). A count outside [0, bit width) is undefined in
C: strict mode raises a SimulationError naming the element; non-strict mode clamps the
count to [0, bit width], so an over-long shift leaves 0 (or -1 for a negative value
shifted right).
"""

from __future__ import annotations

import numpy as np

from sim.functional.arith import first_index, narrow, scalar, widen
from sim.functional.context import ValueOutOfRange


def _bits_view(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _operands(ctx) -> tuple:
    """The source tiles, then the scalar (TANDS, TSHLS ...) in the element type."""
    return tuple(ctx.srcs) + tuple(scalar(ctx.dtype, s) for s in ctx.scalars)


def _logic(fn):
    def unit(ctx) -> None:
        result = fn(*(_bits_view(x) for x in _operands(ctx)))
        _bits_view(ctx.dst)[...] = result

    return unit


def _shift_counts(ctx, counts: np.ndarray) -> np.ndarray:
    bits = ctx.dtype.bits
    wide = widen(ctx.dtype, counts)
    bad = (wide < 0) | (wide >= bits)
    if ctx.strict and bad.any():
        at = first_index(bad)
        raise ValueOutOfRange(
            f"{ctx.where}: shift count {wide[at]} at element {at} is "
            f"outside [0, {bits}) for {ctx.dtype}"
        )
    return np.clip(wide, 0, bits)


def _shift(fn):
    def unit(ctx) -> None:
        a, counts = _operands(ctx)
        counts = np.broadcast_to(counts, a.shape)
        # Widening sign-extends signed values (arithmetic >>) and zero-extends unsigned
        # ones (logical >>); numpy defines 64-bit shifts by up to 64 (0 or sign fill).
        shifted = fn(widen(ctx.dtype, a), _shift_counts(ctx, counts))
        ctx.dst[...] = narrow(ctx.dtype, shifted)

    return unit


KERNELS = {
    "TAND": _logic(np.bitwise_and),
    "TOR": _logic(np.bitwise_or),
    "TXOR": _logic(np.bitwise_xor),
    "TNOT": _logic(np.invert),
    "TSHL": _shift(np.left_shift),
    "TSHR": _shift(np.right_shift),
    "TANDS": _logic(np.bitwise_and),
    "TORS": _logic(np.bitwise_or),
    "TSHLS": _shift(np.left_shift),
    "TSHRS": _shift(np.right_shift),
}
