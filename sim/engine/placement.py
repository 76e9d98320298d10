"""Placing tiles the program did not place by hand, in a run as written.

Tiles declared with an address (``TASSIGN`` at declaration / ``alloc_tile addr=``) keep
it. Every other tile gets the lowest 32-byte-aligned gap in its buffer that is free of
hand-placed tiles, of earlier auto-placed tiles and of the target's reserved ranges
(first fit, no reuse: every auto tile is live for the whole kernel, so placement adds no
hazard the kernel's own flags do not order). When that does not fit, the tiles of the
entry function are placed by liveness instead (``sim.placement.alloc``: tiles whose live
ranges do not overlap share bytes), as the toolchain's allocator would; the bytes a dead
tile hands over are then ordered only by the kernel's flags (race checking shows it).
A cube<->vector FIFO buffer (``reserve_buffer``) is kept out of the way of first-fit
placement: at its ``base`` when ``auto = false``, placed first (key ``("reserve", name)``)
when ``auto = true``.
"""

from __future__ import annotations

from sim.engine.scan import scan
from sim.base.errors import UserError
from sim.isa.program import Const

__all__ = ["place_tiles"]


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def place_tiles(program_or_body, target) -> dict:
    """Tile -> byte address for every ``Alloc`` without a constant address, in every
    function of a program (or in one body); by liveness when one address per tile does
    not fit (see the module doc)."""
    try:
        return _first_fit_all(program_or_body, target)
    except UserError:
        if not hasattr(program_or_body, "functions"):
            raise
        return _by_liveness(program_or_body, target)


def _by_liveness(program, target) -> dict:
    from sim.placement.alloc import allocate
    from sim.placement.ir import constant_addresses
    fn = program.main
    hand = constant_addresses(fn)
    try:
        slots = allocate(fn, target, double_buffer=False, pinned=hand)
    except UserError as e:     # the allocator speaks for auto mode; this run is as written
        raise UserError(str(e).replace("auto placement", "placement of the tiles without "
                                       "an address", 1)) from None
    placed = {t: s.addrs[0] for t, s in slots.items() if t not in hand}
    rest = [st for f in program.functions if f is not fn for st in scan(f.body).allocs
            if st.addr is None]
    if rest:        # callee tiles: one address each, clear of every entry-function tile
        raise UserError(f"placement of the tiles without an address: the tiles of @{fn.name} "
                        f"only fit by liveness, and "
                        f"tiles allocated in callees (%{rest[0].tile.name}) cannot be placed "
                        f"around them; give them addresses or run with --sync auto")
    return placed


def _first_fit_all(program_or_body, target) -> dict:
    facts = scan(program_or_body)
    taken: dict[str, list[tuple[int, int]]] = {}
    for buf in target.buffers.values():
        taken[buf.name] = [(s, e) for _, s, e in buf.reserved]
    reserves = _reserves(facts.reserves, taken)
    pending = []
    seen = set()
    for st in facts.allocs:
        if st.tile in seen:
            continue
        seen.add(st.tile)
        bufname = st.tile.loc.buffer
        if isinstance(st.addr, Const):
            taken.setdefault(bufname, []).append((int(st.addr.value), int(st.addr.value) + st.tile.type.nbytes))
        elif st.addr is None:
            pending.append(st.tile)
    # a FIFO slot taken with talloc_to_aiv / talloc_to_aic is a tile of the producer's own
    # buffer, placed like an alloc_tile without an address (ASSUMPTION, see sim.engine.xunit)
    for t in facts.tallocs:
        if t not in seen:
            seen.add(t)
            pending.append(t)
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
                f"placement of the tiles without an address: {what} ({size} B) does not fit "
                f"in {buf.name} "
                f"({buf.capacity_bytes} B on {target.name}); the first free aligned address "
                f"is {addr}")
        taken[buf.name].append((addr, addr + size))
        placed[tile] = addr
    return placed


def _reserves(statements, taken) -> list:
    """FIFO buffers: fixed ones join ``taken``; auto ones come back to be placed."""
    from sim.placement.ir import reserve_of
    reserves = []
    for st in statements:
        bufname, size, base = reserve_of(st)
        if base is None:
            reserves.append((("reserve", dict(st.attrs).get("name")), bufname, size))
        else:
            taken.setdefault(bufname, []).append((base, base + size))
    return reserves
