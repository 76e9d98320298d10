"""The bytes an instruction reads and writes, for race detection and placement checks.

A tile touches its valid region: in a row-major tile, from its base address to the end of
its last valid row's valid columns (rows in between are stepped over at the capacity
pitch, so the range is a conservative hull). A GM view touches the hull of its window.
"""

from __future__ import annotations

from sim.engine.races import Access
from sim.isa.program import PartView
from sim.isa.tile import BLayout, Tile

__all__ = ["tile_access", "instr_accesses"]


def tile_access(tile: Tile, state, write: bool) -> Access:
    t = tile.type
    rows, cols = state.rows or t.rows, state.cols or t.cols
    if t.blayout is BLayout.ROW_MAJOR:
        elems = (rows - 1) * t.cols + cols
    else:
        elems = (cols - 1) * t.rows + rows
    start = state.addr
    return Access(tile.loc.buffer, start, start + elems * t.dtype.size_bytes, write, f"%{tile.name}")


def _gm_access(interp, view: PartView, write: bool) -> Access:
    ptr, base, sizes, strides = interp.views[view.name]
    isz = ptr.dtype.size_bytes
    last = base + sum((n - 1) * s for n, s in zip(sizes, strides))
    return Access(f"GM:{ptr.name}", base * isz, (last + 1) * isz, write, f"%{view.name}")


def instr_accesses(interp, instr, srcs, tmp) -> tuple:
    """The accesses of one execution of ``instr``. A tile's access is the same value for
    as long as its address and valid region are, so it is built once per tile state
    (``interp.tile_accesses``): a long run queues millions of them."""
    out = []
    cache = interp.tile_accesses
    for o in instr.outs:
        if isinstance(o, Tile):
            out.append(_cached(cache, o, interp.tiles[o], True))
        elif isinstance(o, PartView):
            out.append(_gm_access(interp, o, True))
    for o in instr.ins:
        if isinstance(o, Tile):
            out.append(_cached(cache, o, interp.tiles[o], o is tmp))
        elif isinstance(o, PartView):
            out.append(_gm_access(interp, o, False))
    return tuple(out)


def _cached(cache: dict, tile: Tile, state, write: bool) -> Access:
    key = (tile, state.addr, state.rows, state.cols, write)
    a = cache.get(key)
    if a is None:
        a = cache[key] = tile_access(tile, state, write)
    return a
