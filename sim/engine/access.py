"""The bytes an instruction reads and writes, for race detection and placement checks.

A tile touches its valid region: in a row-major tile, from its base address to the end of
its last valid row's valid columns (rows in between are stepped over at the capacity
pitch, so the range is a conservative hull). A GM view touches the hull of its window; a
window that is rows of contiguous bytes at a fixed pitch also says so (``GmAccess``), so
the chip's race check (``sim.engine.xraces``) can tell two cores' column blocks of one
matrix apart although their hulls overlap.
"""

from __future__ import annotations

import attrs

from sim.engine.races import Access
from sim.isa.program import PartView
from sim.isa.tile import BLayout, Tile

__all__ = ["GmAccess", "GmShared", "tile_access", "instr_accesses"]


def tile_access(tile: Tile, state, write: bool) -> Access:
    t = tile.type
    rows, cols = state.rows or t.rows, state.cols or t.cols
    if t.blayout is BLayout.ROW_MAJOR:
        elems = (rows - 1) * t.cols + cols
    else:
        elems = (cols - 1) * t.rows + rows
    start = state.addr
    return Access(
        tile.loc.buffer, start, start + elems * t.dtype.size_bytes, write, f"%{tile.name}"
    )


@attrs.frozen
class GmAccess(Access):
    """A GM window of ``rows`` runs of ``width`` bytes, ``pitch`` bytes apart, from
    ``start`` (its hull is ``[start, end)``)."""

    rows: int = 1
    width: int = 0
    pitch: int = 0


def _gm_access(interp, view: PartView, write: bool) -> Access:
    """The access of a GM view: one object per window, shared by the units that load it
    (the cores of a row of blocks load the same tiles of A). Kept by the view's window
    shape, then by where it starts (a loop's views move by their offsets and keep their
    shape: a new window costs no walk of its sizes and strides)."""
    ptr, base, sizes, strides = interp.views[view.name]
    isz = ptr.dtype.size_bytes
    key = (view.name, ptr.name, isz, sizes, strides, write)
    cache = interp.gm_accesses
    entry = cache.get(key)
    if entry is None:
        if len(cache) >= 1 << 12:
            cache.clear()
        entry = cache[key] = (_shape(ptr.name, isz, sizes, strides, view), {})
    (space, name, span, row), by_base = entry
    a = by_base.get(base)
    if a is None:
        if len(by_base) >= 1 << 10:
            by_base.clear()
        start, end = base * isz, (base + span) * isz
        a = by_base[base] = (
            Access(space, start, end, write, name)
            if row is None
            else GmAccess(space, start, end, write, name, *row)
        )
    return a


def _shape(array: str, isz: int, sizes, strides, view: PartView) -> tuple:
    """What a GM access's window is apart from where it starts: (space, name, elements
    from the first to one past the last, and (rows, width, pitch) of a window that is
    rows of contiguous bytes at a fixed pitch, else None)."""
    span = sum((n - 1) * s for n, s in zip(sizes, strides, strict=True)) + 1
    dims = [(n, s) for n, s in zip(sizes, strides, strict=True) if n > 1]
    row = None
    if len(dims) == 2 and dims[1][1] == 1 and dims[0][1] >= dims[1][0]:
        (rows, pitch), (cols, _) = dims
        row = (rows, cols * isz, pitch * isz)
    return f"GM:{array}", f"%{view.name}", span, row


def instr_accesses(interp, instr, srcs, tmp, pipe=None) -> tuple:
    """The accesses of one execution of ``instr``. A tile's access is the same value for
    as long as its address and valid region are, so it is built once per tile state
    (``interp.tile_accesses``, keyed by the tile's identity: a tile lives as long as its
    program): a long run queues millions of them. Where the interpreter keeps a GM
    summary (``interp.gm_pipes``: one unit alone, its race check by proof), a GM view is
    not listed but noted there: which pipes touch each GM array and whether one writes
    (``pipe``: the instruction's); ``GmShared`` when two touch one and one writes."""
    operands = interp.access_operands.get(id(instr))
    if operands is None:
        operands = interp.access_operands[id(instr)] = _operands(instr, tmp)
    cache, tiles = interp.tile_accesses, interp.tiles
    out = []
    for o, write, tile in operands:
        if tile:
            st = tiles[o]
            key = (id(o), st.addr, st.rows, st.cols, write)
            a = cache.get(key)
            if a is None:
                a = cache[key] = tile_access(o, st, write)
            out.append(a)
        elif interp.gm_pipes is None:
            out.append(_gm_access(interp, o, write))
        else:
            array = interp.views[o.name][0].name
            seen = interp.gm_pipes.get(array)
            if seen is None:
                seen = interp.gm_pipes[array] = [set(), False]
            seen[0].add(pipe)
            seen[1] = seen[1] or write
            if seen[1] and len(seen[0]) > 1:
                raise GmShared(array)
    return tuple(out)


class GmShared(Exception):
    """A unit that keeps only a GM summary (``instr_accesses``) met a GM array two of its
    pipes touch and one writes: only there can two of its GM accesses race (a pipe's own
    accesses are in program order; reads never race), and the summary cannot show them
    ordered. Raised at once, so the run that must list its GM accesses starts early."""


def _operands(instr, tmp) -> tuple:
    """(operand, written, is a tile) of the tiles and GM views ``instr`` touches, its
    outputs first."""
    outs = tuple(
        (o, True, isinstance(o, Tile)) for o in instr.outs if isinstance(o, (Tile, PartView))
    )
    ins = tuple(
        (o, o is tmp, True) if isinstance(o, Tile) else (o, False, False)
        for o in instr.ins
        if isinstance(o, (Tile, PartView))
    )
    return outs + ins
