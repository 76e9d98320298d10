"""FIFO slots taken as GM tensor views: ``%v = pto.talloc_to_aiv -> !pto.partition_tensor_view``.

On a target whose cube<->vector FIFOs move data through GM (``[chip] fifo_data_path =
"gm"``, A2/A3: programming-model.md §2.1, no direct AIC->AIV path), a producer can take a
slot as a window of GM and write it itself (a ``pto.tstore`` of its accumulator) before
pushing the view, instead of pushing a tile that the push then writes out. The reference
gives the op no semantics (pto-ir-in-the-wild.md counts it; ``instructions-more.md`` is
silent), so this follows the tile form of ``sim.engine.xunit`` — every rule below that is
not that form's is an ASSUMPTION:

* ``talloc_to_aiv`` with a view result waits for a free slot exactly as the tile form does
  (and the next push of the FIFO does not wait again), then binds the view to slot ``k`` of
  the FIFO's GM workspace: a GM array of its own per core, FIFO and direction, slot ``k``
  (the k-th taken, modulo the slots) at element ``k * R * C``, row-major R x C. The view
  must be a static 2-D window.
* ``tpush_to_aiv`` of the view moves nothing (the data is in GM already): it hands each
  consumer its part of the window's contents (``split`` as for a tile) and sets the "full"
  flags on PIPE_FIX, the cube's L0C->GM store pipe (ASSUMPTION: the slot was written by a
  ``tstore`` of an accumulator; a slot written on another pipe is not waited for).
* The consumer pops a tile as from any GM-path FIFO (``tpop_from_aic``: GM->UB on MTE2).
"""

from __future__ import annotations

import numpy as np

from sim.base.errors import UserError
from sim.engine.items import SET
from sim.isa.program import GmPtr, PartView

__all__ = ["talloc_view", "push_view"]


def _workspace(interp, fifo, direction: int, dtype) -> GmPtr:
    return GmPtr(f"fifo{fifo.id}.{direction}.core{interp.spec.core}.slots", dtype)


def talloc_view(interp, st, fifo, direction: int, view) -> None:
    """Bind the view result of a ``talloc_*`` to its slot's GM window."""
    where = f"{st.op} ({st.loc})"
    if interp.chip.data_path != "gm":
        raise UserError(
            f"{where}: a FIFO slot as a GM view needs FIFO data through GM; on "
            f"{interp.target.name} the FIFO moves data on chip: take a tile"
        )
    shape: tuple = getattr(view, "shape", ())
    if (
        not isinstance(view, PartView)
        or len(shape) != 2
        or not all(isinstance(d, int) for d in shape)
    ):
        raise UserError(f"{where}: the result must be a tile or a static 2-D partition view")
    rows, cols = int(shape[0]), int(shape[1])
    key = ("gm slot", fifo.id, direction)
    k = interp._fifo_moves.get(key, 0)
    interp._fifo_moves[key] = k + 1
    ptr = _workspace(interp, fifo, direction, view.dtype)
    interp._gm_array(ptr, fifo.slots * rows * cols)
    interp.views[view.name] = (ptr, (k % fifo.slots) * rows * cols, (rows, cols), (cols, 1))
    interp._view_layouts[view.name] = "nd"


def push_view(interp, st, fifo, direction: int, view, split: int, part, key_of, item):
    """The items of a push of a slot taken as a view: the consumers' parts, then the
    "full" flags on PIPE_FIX (``key_of(sub)`` / ``item`` are the FIFO's flag helpers)."""
    where = f"{st.op} ({st.loc})"
    if view.name not in interp.views:
        raise UserError(f"{where}: %{view.name} is not a slot taken by talloc")
    rows, cols = interp.views[view.name][2]
    data = (
        np.array(interp._gm_window(view, where)).reshape(rows, cols)
        if interp.functional
        else (rows, cols)
    )
    subs = range(interp.chip.vector_units)
    for s in subs:
        interp.chip.queue(interp.spec.core, fifo.id, direction, s).append(part(data, split, s))
    for s in subs:
        yield item(SET, "PIPE_FIX", *key_of(s), st)
