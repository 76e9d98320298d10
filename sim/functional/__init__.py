"""Functional units: the exact numeric effect of each tile instruction, in numpy.

The engine resolves an instruction's operands into a ``FnContext`` (views of the tile
bytes cut to the iteration domain, cast scalars, the target's quirk flags) and runs the
unit of its opcode on it. It does so once per instruction and tile state
(``sim.engine.operands``): ``unit_for`` picks and checks the unit when the operands are
bound, and later executions call it again on the same context. ``execute`` does both
in one call, for callers outside the engine. Units live in one module per instruction
family; the value rules they share (integer wrap-around, how narrow floats are rounded,
integer division by zero) are described in ``arith``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sim.base.errors import SimulationError
from sim.functional import (
    activation,
    bitwise,
    combine,
    compare,
    convert,
    cube,
    elementwise,
    expand,
    gather,
    movement,
    quant,
    reduce,
    reduce_ext,
    remainder,
    scalar,
    scatter,
    sort,
)
from sim.functional.context import FnContext

__all__ = ["KERNELS", "execute", "unit_for", "FnContext"]

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
    **scatter.KERNELS,
    **quant.KERNELS,
}


def execute(ctx: FnContext) -> None:
    """Run the unit of ``ctx.op`` on ``ctx``, numpy's floating-point warnings off."""
    unit = unit_for(ctx)
    with np.errstate(all="ignore"):
        unit(ctx)


def unit_for(ctx: FnContext) -> Callable[[FnContext], None]:
    """The unit that executes ``ctx.op`` on ``ctx``'s element types (checked here, once).

    The engine binds it once per instruction and calls it on every execution, under
    ``np.errstate(all="ignore")`` set once for the whole run; other callers use
    ``execute``."""
    unit = KERNELS.get(ctx.op)
    if unit is None:
        raise SimulationError(f"{ctx.where}: no functional unit for {ctx.op}")
    raw = next((d for d in (ctx.dtype, *ctx.src_dtypes) if d.kind == "raw"), None)
    if raw is not None and ctx.op not in _BYTE_COPIES:
        # ASSUMPTION (sim.isa.dtypes): raw element types have no modelled encoding
        raise SimulationError(
            f"{ctx.where}: {ctx.op} computes on {raw} values, whose encoding "
            f"the simulator does not model; run with --timing-only"
        )
    bind = getattr(unit, "bind", None)  # a form bound to ctx's arrays, checked once
    if bind is not None:
        return bind(ctx) or unit
    return unit


# units that only copy elements, so they work on raw bytes too
_BYTE_COPIES = {"TMOV", "TEXTRACT", "TINSERT", "TCONCAT", "TRESHAPE"}
