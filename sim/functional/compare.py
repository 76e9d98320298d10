"""Compare and select units: TCMP, TCMPS produce packed predicate tiles, TSEL reads them.

Packing convention (A2/A3, u8 mask tiles): one bit per element, 8 elements per byte,
row by row. The predicate of element (i, j) is bit ``j % 8`` (bit 0 = least significant)
of byte ``j // 8`` of mask row ``i``; a mask row is ``ceil(C / 8)`` bytes long. This is
numpy's ``packbits(..., bitorder="little")`` along each row. Bits past column C in a
row's last byte are written as 0 (the hardware writes whatever the compare produced for
the padding lanes; nothing may rely on them).

Compare modes (``ctx.attrs["cmp"]``): eq, ne, lt, le, gt, ge, with IEEE semantics for
floats (every ordered comparison with NaN is false, ``ne`` is true). Comparisons are
exact in the source element type (narrow floats widen to f32 exactly).

TCMP compares two tiles lane by lane. TCMPS compares a tile with a scalar, or with the
first element ``src1[0, 0]`` of a second tile when no scalar is given.

Quirk ``tcmp_i32_eq_only``: the A2/A3 lowering compares i32 inputs with EQ whatever mode
was asked for; applied to both TCMP and TCMPS.

TSEL takes ``srcs = (mask, src0, src1)`` and writes ``src0`` where the mask bit is 1,
``src1`` where it is 0.
"""

from __future__ import annotations

import numpy as np

from sim.base.errors import SimulationError
from sim.functional.arith import scalar, widen

PREDICATES = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def pack_bits(bits: np.ndarray) -> np.ndarray:
    return np.packbits(bits.astype(bool), axis=1, bitorder="little")


def unpack_bits(mask: np.ndarray, cols: int) -> np.ndarray:
    # a mask tile of any integer type (real kernels use i8 as well as u8) holds bits:
    # read its bytes in storage order
    data = np.ascontiguousarray(mask)
    if data.dtype != np.uint8:
        data = data.view(np.uint8).reshape(data.shape[0], -1)
    return np.unpackbits(data, axis=1, count=cols, bitorder="little").astype(bool)


def _predicate(ctx):
    mode = ctx.attrs.get("cmp", "").lower()
    if mode not in PREDICATES:
        raise SimulationError(
            f"{ctx.where}: unknown compare mode {mode!r}; expected one of {', '.join(PREDICATES)}"
        )
    (src_dt, *_) = ctx.src_dtypes
    if src_dt.name == "i32" and "tcmp_i32_eq_only" in ctx.quirks:
        mode = "eq"
    return PREDICATES[mode]


def _compare(ctx, a, b) -> None:
    src_dt = ctx.src_dtypes[0]
    ctx.dst[...] = pack_bits(_predicate(ctx)(widen(src_dt, a), widen(src_dt, b)))


def _tcmp(ctx) -> None:
    a, b = ctx.srcs
    _compare(ctx, a, b)


def _tcmps(ctx) -> None:
    a = ctx.srcs[0]
    if ctx.scalars:
        b = scalar(ctx.src_dtypes[0], ctx.scalars[0])
    else:
        b = ctx.srcs[1][0, 0]
    _compare(ctx, a, b)


def _tsel(ctx) -> None:
    mask, a, b = ctx.srcs
    ctx.dst[...] = np.where(unpack_bits(mask, ctx.dst.shape[1]), a, b)


KERNELS = {"TCMP": _tcmp, "TCMPS": _tcmps, "TSEL": _tsel}
