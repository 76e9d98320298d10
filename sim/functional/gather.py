"""Index, gather and pad units: TCI, TGATHER, TFILLPAD.

The reference names these ops (pto-ir-in-the-wild.md §4.2 counts them among the 54 ops
of 90% of model kernels; programming-model.md §6.1 gives their pipes; §3.6 the pad
values) but gives almost none of their semantics. Every rule below that is not a quote
is an ASSUMPTION.

* TCI(dst, start) — create index: ``dst[i, j] = start + i*C + j`` over dst's valid
  region (R x C) in row-major order, computed in the element type (integers wrap like
  every integer result, see ``arith``). ASSUMPTION: ascending only — no descending form
  or step operand is modelled, the reference has no evidence for one.
* TGATHER(dst, src, indices[, tmp]) — ``dst[i, j] = src_flat[indices[i, j]]`` over dst's
  valid region, where ``src_flat`` is src's *valid region* in row-major order and
  ``indices`` is an i32/u32 tile with dst's valid shape. ASSUMPTION: on hardware
  ``vgather`` takes offsets from the table's base address, i.e. positions in its
  storage (capacity rows); the two readings agree whenever src's valid cols equal its
  capacity cols (a full-width table or a single row). An index outside
  ``[0, src valid elements)`` raises a SimulationError in strict mode; in non-strict
  mode that destination element keeps its previous content. The optional tmp (the
  byte-offset scratch of the lowering) is not written.
* TFILLPAD(dst, src) — dst keeps src's valid region and every other element of dst's
  *capacity* is set to dst's PadValue (programming-model.md §3.6): Null leaves it
  unchanged, Zero writes 0, Max the type's maximum (+inf for floats), Min its minimum
  (-inf for floats); a float format without infinities (fp8 e4m3) gets its finite
  max/min. The unit reads the pad value and a capacity view of dst from
  ``ctx.extra["pad"]`` / ``ctx.extra["dst_capacity"]``, which the interpreter supplies
  for family ``fillpad``; without ``dst_capacity`` it fills dst's valid region only.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from sim.base.errors import SimulationError
from sim.functional.arith import compute, first_index, scalar
from sim.functional.context import ValueOutOfRange
from sim.isa.dtypes import DType
from sim.isa.tile import Pad

__all__ = ["KERNELS", "pad_value"]


def _tci(ctx) -> None:
    rows, cols = ctx.dst.shape
    start = scalar(ctx.dtype, ctx.scalars[0])
    offsets = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    ctx.dst[...] = compute(ctx.dtype, np.add, start, offsets)


def _tgather(ctx) -> None:
    table, indices = ctx.srcs[0], ctx.srcs[1]
    if indices.shape != ctx.dst.shape:
        raise SimulationError(
            f"{ctx.where}: indices cover {indices.shape[0]}x{indices.shape[1]} elements, the "
            f"destination's valid region is {ctx.dst.shape[0]}x{ctx.dst.shape[1]}; they must match"
        )
    flat = np.ascontiguousarray(table).reshape(-1)
    k = np.asarray(indices).astype(np.int64)
    bad = (k < 0) | (k >= flat.size)
    if bad.any() and ctx.strict:
        at = first_index(bad)
        raise ValueOutOfRange(
            f"{ctx.where}: index {int(k[at])} at element {at} is outside the gathered table "
            f"(valid region {table.shape[0]}x{table.shape[1]} of the source = {flat.size} "
            f"elements)"
        )
    gathered = flat[np.where(bad, 0, k)]
    ctx.dst[...] = np.where(bad, ctx.dst, gathered) if bad.any() else gathered


def _mgather(ctx) -> None:
    """MGATHER(dst, view, indices): ``dst[i, j] = GM[view base + indices[i, j]]``.
    ASSUMPTION (no reference entry): indices are element offsets from the view's first
    element, within the reach of the view (``ctx.extra["table"]``, the flat GM elements
    from its first to its last); out-of-range indices behave as TGATHER's."""
    (indices,) = ctx.srcs
    table = ctx.extra["table"]
    k = np.asarray(indices).astype(np.int64)
    bad = (k < 0) | (k >= table.size)
    if bad.any() and ctx.strict:
        at = first_index(bad)
        raise ValueOutOfRange(
            f"{ctx.where}: index {int(k[at])} at element {at} is outside the "
            f"{table.size} GM elements the view reaches"
        )
    gathered = table[np.where(bad, 0, k)]
    ctx.dst[...] = np.where(bad, ctx.dst, gathered) if bad.any() else gathered


def pad_value(dt: DType, pad) -> np.ndarray | None:
    """The fill value of PadValue ``pad`` in element type ``dt`` (None for Null)."""
    pad = Pad(int(pad))
    if pad is Pad.NULL:
        return None
    if pad is Pad.ZERO:
        return np.zeros((), dt.np_type)
    high = pad is Pad.MAX
    if dt.is_float:
        with np.errstate(all="ignore"):
            v = np.asarray(np.inf if high else -np.inf).astype(dt.np_type)
        if not np.isinf(np.float64(v)):  # no infinity in this format
            info = ml_dtypes.finfo(dt.np_type)
            v = np.asarray(info.max if high else info.min).astype(dt.np_type)
        return v
    iinfo = np.iinfo(dt.np_type)
    return np.asarray(iinfo.max if high else iinfo.min).astype(dt.np_type)


def _tfillpad(ctx) -> None:
    (src,) = ctx.srcs
    if "pad" not in ctx.extra:
        raise SimulationError(
            f"{ctx.where}: TFILLPAD needs the destination's PadValue, which "
            f"the interpreter did not pass (FnContext.extra['pad'])"
        )
    dst = ctx.extra.get("dst_capacity", ctx.dst)
    r, c = min(src.shape[0], dst.shape[0]), min(src.shape[1], dst.shape[1])
    dst[:r, :c] = src[:r, :c]
    value = pad_value(ctx.dtype, ctx.extra["pad"])
    if value is not None:
        dst[:r, c:] = value
        dst[r:, :] = value


KERNELS = {
    "MGATHER": _mgather,
    "TCI": _tci,
    "TGATHER": _tgather,
    "TFILLPAD": _tfillpad,
}
