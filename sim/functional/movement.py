"""Data movement between on-chip buffers: TMOV, TEXTRACT, TTRANS.

TMOV copies the destination's valid region from the source, in the destination's element
type: an Acc -> Mat / Acc -> Vec move goes through the FIXPIPE, which converts (f32 -> f16
/ bf16, i32 -> f16 ...; instructions.md §3.6); Mat -> Bias widens f16 to f32. TEXTRACT
copies the window starting at (indexRow, indexCol) of its source; the window must lie in
the source's capacity (instructions.md §3.6: ``index + dst capacity <= src capacity``,
checked by the verifier for static shapes, here for the valid region). TTRANS writes the
transpose of the source's valid region (``dst[i, j] = src[j, i]``).
"""

from __future__ import annotations

from sim.base.errors import SimulationError
from sim.functional.context import FnContext

__all__ = ["KERNELS"]


def tmov(ctx: FnContext) -> None:
    src = ctx.srcs[0]
    m, n = ctx.dst.shape
    if src.shape[0] < m or src.shape[1] < n:
        raise SimulationError(
            f"{ctx.where}: source valid region {src.shape[0]}x{src.shape[1]} "
            f"is smaller than the destination's {m}x{n}"
        )
    ctx.dst[...] = src[:m, :n].astype(ctx.dtype.np_type)


def textract(ctx: FnContext) -> None:
    src = ctx.extra.get("src_capacity", ctx.srcs[0])
    r0, c0 = (int(x) for x in (tuple(ctx.scalars) + (0, 0))[:2])
    m, n = ctx.dst.shape
    if r0 < 0 or c0 < 0 or r0 + m > src.shape[0] or c0 + n > src.shape[1]:
        raise SimulationError(
            f"{ctx.where}: window [{r0}:{r0 + m}, {c0}:{c0 + n}] is outside "
            f"the {src.shape[0]}x{src.shape[1]} source"
        )
    ctx.dst[...] = src[r0 : r0 + m, c0 : c0 + n].astype(ctx.dtype.np_type)


def ttrans(ctx: FnContext) -> None:
    src = ctx.srcs[0]
    r, c = src.shape
    if ctx.dst.shape[0] < c or ctx.dst.shape[1] < r:
        raise SimulationError(
            f"{ctx.where}: the transpose of the {r}x{c} source needs a "
            f"{c}x{r} destination, found {ctx.dst.shape[0]}x{ctx.dst.shape[1]}"
        )
    ctx.dst[:c, :r] = src.T.astype(ctx.dtype.np_type)


KERNELS = {"TMOV": tmov, "TEXTRACT": textract, "TTRANS": ttrans}
