"""Placing tiles the program did not place by hand (auto mode).

Tiles declared with an address (``TASSIGN`` at declaration / ``alloc_tile addr=``) keep
it. Every other tile gets the lowest 32-byte-aligned gap in its buffer that is free of
hand-placed tiles, of earlier auto-placed tiles and of the target's reserved ranges
(first fit, no reuse: every auto tile is live for the whole kernel). A cube<->vector
FIFO buffer (``reserve_buffer``) is kept out of the way the same way: at its ``base`` when
``auto = false``, placed first (key ``("reserve", name)``) when ``auto = true``.
"""

from __future__ import annotations

import re

from sim.errors import UserError
from sim.isa.program import Alloc, Const, PipeOp, walk
from sim.isa.tile import Loc

__all__ = ["place_tiles"]


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _allocs(body):
    return (st for st in walk(body) if isinstance(st, Alloc))


def place_tiles(program_or_body, target) -> dict:
    """Tile -> byte address for every ``Alloc`` without a constant address, in every
    function of a program (or in one body)."""
    bodies = ([f.body for f in program_or_body.functions] if hasattr(program_or_body, "functions")
              else [program_or_body])
    allocs = [a for b in bodies for a in _allocs(b)]
    taken: dict[str, list[tuple[int, int]]] = {}
    for buf in target.buffers.values():
        taken[buf.name] = [(s, e) for _, s, e in buf.reserved]
    reserves = []
    for st in (st for b in bodies for st in walk(b)
               if isinstance(st, PipeOp) and st.op == "pto.reserve_buffer"):
        a = dict(st.attrs)
        m = re.search(r"<(\w+)>", str(a.get("location", "")))
        try:
            bufname = Loc(m.group(1)).buffer if m else "UB"
        except ValueError:
            raise UserError(f"pto.reserve_buffer ({st.loc}): location: expected "
                            f"#pto.address_space<vec|mat|...>, found {a.get('location')}") from None
        size = int(a.get("size", 0) or 0)
        if a.get("auto") is True:
            reserves.append((("reserve", a.get("name")), bufname, size))
        else:
            base = int(a.get("base", 0) or 0)
            taken.setdefault(bufname, []).append((base, base + size))
    pending = []
    seen = set()
    for st in allocs:
        if st.tile in seen:
            continue
        seen.add(st.tile)
        bufname = st.tile.loc.buffer
        if isinstance(st.addr, Const):
            taken.setdefault(bufname, []).append((int(st.addr.value), int(st.addr.value) + st.tile.type.nbytes))
        elif st.addr is None:
            pending.append(st.tile)
    placed = {}
    todo = reserves + [(t, t.loc.buffer, t.type.nbytes) for t in pending]
    for tile, bufname, size in todo:
        buf = target.buffer(bufname)
        what = f"tile %{tile.name}" if not isinstance(tile, tuple) else f"FIFO buffer {tile[1]!r}"
        addr = 0
        for s, e in sorted(taken[buf.name]):
            if addr + size <= s:
                break
            addr = max(addr, _align(e, buf.alignment_bytes))
        if addr + size > buf.capacity_bytes:
            raise UserError(
                f"auto placement: {what} ({size} B) does not fit in {buf.name} "
                f"({buf.capacity_bytes} B on {target.name}); the first free aligned address "
                f"is {addr}")
        taken[buf.name].append((addr, addr + size))
        placed[tile] = addr
    return placed
