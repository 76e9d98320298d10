"""Functional units: the exact numeric effect of each tile instruction, in numpy.

The engine resolves an instruction's operands into a ``FnContext`` (views of the tile
bytes cut to the iteration domain, cast scalars, the target's quirk flags) and calls
``execute``, which dispatches on the opcode to one unit. Units live in one module per
instruction family; the value rules they share (integer wrap-around, how narrow floats
are rounded, integer division by zero) are described in ``arith``.
"""

from __future__ import annotations

from typing import Callable

from sim.errors import SimulationError
from sim.functional import (activation, bitwise, combine, compare, convert, cube,
                            elementwise, expand, gather, movement, reduce, reduce_ext, remainder,
                            scalar, sort)
from sim.functional.context import FnContext

__all__ = ["KERNELS", "execute", "FnContext"]

KERNELS: dict[str, Callable[[FnContext], None]] = {
    **elementwise.KERNELS,
    **scalar.KERNELS,
    **remainder.KERNELS,
    **convert.KERNELS,
    **activation.KERNELS,
    **bitwise.KERNELS,
    **compare.KERNELS,
    **reduce.KERNELS,
    **expand.KERNELS,
    **cube.KERNELS,
    **movement.KERNELS,
    **gather.KERNELS,
    **combine.KERNELS,
    **reduce_ext.KERNELS,
    **sort.KERNELS,
}


def execute(ctx: FnContext) -> None:
    unit = KERNELS.get(ctx.op)
    if unit is None:
        raise SimulationError(f"{ctx.where}: no functional unit for {ctx.op}")
    raw = next((d for d in (ctx.dtype, *ctx.src_dtypes) if d.kind == "raw"), None)
    if raw is not None and ctx.op not in _BYTE_COPIES:
        # ASSUMPTION (sim.isa.dtypes): raw element types have no modelled encoding
        raise SimulationError(f"{ctx.where}: {ctx.op} computes on {raw} values, whose encoding "
                              f"the simulator does not model; run with --timing-only")
    unit(ctx)


# units that only copy elements, so they work on raw bytes too
_BYTE_COPIES = {"TMOV", "TEXTRACT", "TINSERT", "TCONCAT", "TRESHAPE"}
