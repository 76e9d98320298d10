"""Units of the ops that combine tiles by a pattern other than lane-by-lane: TCONCAT, the
partial element-wise family TPARTADD/MAX/MIN/MUL, TINSERT, the exp-of-difference expands
TROWEXPANDEXPDIF/TCOLEXPANDEXPDIF, and the scalar forms TSELS and TXORS.

instructions.md has no entries for them; what each does (pto-isa's names) is stated as
an ASSUMPTION per unit:

* TCONCAT(dst, src0, src1): ``dst[:, :C0] = src0``, ``dst[:, C0:C0 + C1] = src1`` — column
  concatenation of the sources' valid regions (C0, C1 their valid cols), rows equal.
* TPART<op>(dst, src0, src1): over dst's valid region, ``src0 op src1`` where both sources
  are valid, the one valid source where only one is, dst left as it was where neither is.
  Arithmetic rounds like the base op (TADD/TMAX/TMIN/TMUL).
* TINSERT(dst, src, r, c): ``dst[r:r + R, c:c + C] = src`` (src's valid region R x C), the
  inverse of TEXTRACT; the window must lie inside dst's capacity.
* TROWEXPANDEXPDIF(dst, src0, src1): ``exp(src0[i, j] - src1[i, 0])``; TCOLEXPANDEXPDIF
  with ``src1[0, j]`` — the subtract rounded to the element type, then the exp, as the
  TROWEXPANDSUB + TEXP pair would.
* TSELS(dst, mask, src, scalar): ``dst = bit ? src : scalar`` with TSEL's packed mask.
* TXORS(dst, src, scalar): ``dst = src ^ scalar`` on the integer bits.
"""

from __future__ import annotations

import numpy as np

from sim.base.errors import SimulationError
from sim.functional.arith import compute, require_float, scalar
from sim.functional.compare import unpack_bits

__all__ = ["KERNELS"]


def _tconcat(ctx) -> None:
    a, b = ctx.srcs
    c0, c1 = a.shape[1], b.shape[1]
    if c0 + c1 > ctx.dst.shape[1] or a.shape[0] != b.shape[0]:
        raise SimulationError(
            f"{ctx.where}: TCONCAT of {a.shape[0]}x{c0} and "
            f"{b.shape[0]}x{c1} needs a destination of {a.shape[0]}x{c0 + c1}, "
            f"found a valid region of {ctx.dst.shape[0]}x{ctx.dst.shape[1]}"
        )
    ctx.dst[: a.shape[0], :c0] = a
    ctx.dst[: b.shape[0], c0 : c0 + c1] = b


def _part(fn):
    def unit(ctx) -> None:
        a, b = ctx.srcs
        R, C = ctx.dst.shape
        ra, ca = min(a.shape[0], R), min(a.shape[1], C)
        rb, cb = min(b.shape[0], R), min(b.shape[1], C)
        ctx.dst[:ra, :ca] = a[:ra, :ca]  # where src0 alone is valid
        ctx.dst[:rb, :cb] = b[:rb, :cb]  # where src1 alone is valid
        r, c = min(ra, rb), min(ca, cb)
        ctx.dst[:r, :c] = compute(ctx.dtype, fn, a[:r, :c], b[:r, :c])

    return unit


def _tinsert(ctx) -> None:
    (src,) = ctx.srcs
    r0, c0 = (int(x) for x in ctx.scalars[:2])
    full = ctx.extra["dst_capacity"]
    R, C = src.shape
    if r0 < 0 or c0 < 0 or r0 + R > full.shape[0] or c0 + C > full.shape[1]:
        raise SimulationError(
            f"{ctx.where}: TINSERT of a {R}x{C} tile at ({r0}, {c0}) leaves "
            f"the {full.shape[0]}x{full.shape[1]} destination"
        )
    full[r0 : r0 + R, c0 : c0 + C] = src


def _expdif(column: bool):
    def unit(ctx) -> None:
        require_float(ctx)
        a, b = ctx.srcs
        R, C = ctx.dst.shape
        other = np.broadcast_to(b[:1, :C] if column else b[:R, :1], (R, C))
        diff = compute(ctx.dtype, np.subtract, a, other)
        ctx.dst[...] = compute(ctx.dtype, np.exp, diff)

    return unit


def _tsels(ctx) -> None:
    mask, src = ctx.srcs[:2]
    s = scalar(ctx.dtype, ctx.scalars[0])
    ctx.dst[...] = np.where(unpack_bits(mask, ctx.dst.shape[1])[: ctx.dst.shape[0]], src, s)


def _txors(ctx) -> None:
    (src,) = ctx.srcs
    if not ctx.dtype.is_int:
        raise SimulationError(f"{ctx.where}: TXORS needs an integer element type, got {ctx.dtype}")
    ctx.dst[...] = np.bitwise_xor(src, scalar(ctx.dtype, ctx.scalars[0]))


KERNELS = {
    "TCONCAT": _tconcat,
    "TPARTADD": _part(np.add),
    "TPARTMAX": _part(np.maximum),
    "TPARTMIN": _part(np.minimum),
    "TPARTMUL": _part(np.multiply),
    "TINSERT": _tinsert,
    "TROWEXPANDEXPDIF": _expdif(column=False),
    "TCOLEXPANDEXPDIF": _expdif(column=True),
    "TSELS": _tsels,
    "TXORS": _txors,
}
