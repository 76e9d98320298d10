"""Placing tiles the program did not place by hand, in a run as written.

Only the functions a run can reach are placed: the entry, the peer function whose
reserved buffer it imports (PTOAS's two-function cube + vector form) and what they call,
transitively. A file of independent kernels runs one of them; the tiles of the others
take no bytes.

Tiles declared with an address (``TASSIGN`` at declaration / ``alloc_tile addr=``) keep
it. Every other tile gets the lowest 32-byte-aligned gap in its buffer that is free of
hand-placed tiles, of earlier auto-placed tiles and of the target's reserved ranges
(first fit, no reuse: every auto tile is live for the whole kernel, so placement adds no
hazard the kernel's own flags do not order). When that does not fit, the tiles of the
entry function are placed by liveness instead (``sim.placement.alloc``), as the
toolchain's allocator would (those of its two-function peer too, on their own: the two
run on different units) — but two tiles share bytes only where their live ranges are
disjoint *and* the kernel's own flags and barriers order every access of the one before
every access of the other (``sim.placement.reuse``): placement never adds a hazard the
program does not order. When that does not fit either, the run says which tiles hold the
buffer (the ones the flags do not order marked so); ``--sync auto`` lets the simulator
synchronise the reuse instead.
A cube<->vector FIFO buffer (``reserve_buffer``) is kept out of the way of first-fit
placement: at its ``base`` when ``auto = false``, placed first (key ``("reserve", name)``)
when ``auto = true``.
"""

from __future__ import annotations

import attrs

from sim.base.errors import PlacementError, UserError
from sim.engine.scan import kept, scan
from sim.isa.program import Call, Const, PipeOp, walk

__all__ = ["place_tiles", "root_functions"]


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def place_tiles(program_or_body, target) -> dict:
    """Tile -> byte address for every ``Alloc`` without a constant address, in every
    function a run of a program can reach (or in one body); by liveness, where the
    kernel's flags order the reuse, when one address per tile does not fit (see the
    module doc)."""
    try:
        return _first_fit_all(program_or_body, target)
    except UserError:
        if not hasattr(program_or_body, "functions"):
            raise
        return _by_liveness(program_or_body, target)


def root_functions(program) -> tuple:
    """The functions units start in: the entry, and the peer whose reserved buffer it
    imports (PTOAS's two-function form: the peer runs on the other kind of unit)."""
    if len(program.functions) == 1:
        # nothing else to start in or call (a builder kernel: its 10^5 statements unwalked)
        return (program.main,)

    def compute():
        main = program.main
        roots = [main]
        for st in walk(main.body):
            if isinstance(st, PipeOp) and st.op == "pto.import_reserved_buffer":
                name = str(dict(st.attrs).get("peer_func", "")).lstrip("@")
                peer = next((f for f in program.functions if f.name == name), None)
                if peer is not None and peer not in roots:
                    roots.append(peer)
        return tuple(roots)

    return kept(program, ("roots",), compute)


def _reachable(program) -> tuple:
    """The functions a run of ``program`` can execute (module doc), the roots first."""
    if len(program.functions) == 1:
        return (program.main,)

    def compute():
        seen = {f.name: f for f in root_functions(program)}
        todo = list(seen.values())
        while todo:
            fn = todo.pop()
            for st in walk(fn.body):
                if isinstance(st, Call) and st.callee not in seen:
                    f = next((g for g in program.functions if g.name == st.callee), None)
                    if f is not None:
                        seen[f.name] = f
                        todo.append(f)
        return tuple(seen.values())

    return kept(program, ("reachable",), compute)


def _facts(program_or_body):
    """``scan`` facts of a body, or of the functions of a program a run can reach."""
    if not hasattr(program_or_body, "functions"):
        return scan(program_or_body)
    fns = _reachable(program_or_body)
    if len(fns) == len(program_or_body.functions):
        return scan(program_or_body)
    return kept(
        program_or_body, ("reachable-facts",), lambda: scan(tuple(st for f in fns for st in f.body))
    )


def _by_liveness(program, target) -> dict:
    from sim.placement.alloc import allocate
    from sim.placement.inline import inline_calls
    from sim.placement.ir import constant_addresses
    from sim.placement.reuse import ProgramOrder

    where = "placement"
    roots = root_functions(program)
    rest = [
        st
        for f in _reachable(program)[len(roots) :]
        for st in scan(f.body).allocs
        if st.addr is None
    ]
    if rest:  # callee tiles: one address each, clear of every entry-function tile
        raise UserError(
            f"{where}: the tiles of @{program.main.name} only fit by liveness, "
            f"and tiles allocated in callees (%{rest[0].tile.name}) cannot be "
            f"placed around them; give them addresses or run with --sync auto"
        )
    # FIFO buffers and FIFO slots hold their bytes for the whole kernel: placed first
    facts = _facts(program)
    taken: dict[str, list] = {}
    todo = _reserves(facts.reserves, taken)
    todo += [(t, t.loc.buffer, t.type.nbytes) for t in dict.fromkeys(facts.tallocs)]
    placed = _place_in_gaps(todo, taken, target)
    # each root runs on units of its own, so its tiles are placed on their own; a
    # callee's accesses to the tiles passed to it count: each root is analysed inlined
    for fn in roots:
        flat = inline_calls(attrs.evolve(program, entry=fn.name)).main
        hand = constant_addresses(flat)
        slots = allocate(
            flat,
            target,
            double_buffer=False,
            pinned=hand,
            reserved=taken,
            hb=ProgramOrder(flat),
            where=where,
        )
        placed.update((t, s.addrs[0]) for t, s in slots.items() if t not in hand)
    return placed


def _first_fit_all(program_or_body, target) -> dict:
    facts = _facts(program_or_body)
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
            taken.setdefault(bufname, []).append(
                (int(st.addr.value), int(st.addr.value) + st.tile.type.nbytes)
            )
        elif st.addr is None:
            pending.append(st.tile)
    # a FIFO slot taken with talloc_to_aiv / talloc_to_aic is a tile of the producer's own
    # buffer, placed like an alloc_tile without an address (ASSUMPTION, see sim.engine.xunit)
    for t in facts.tallocs:
        if t not in seen:
            seen.add(t)
            pending.append(t)
    twins, hand = _twins(program_or_body)
    todo = reserves + [(t, t.loc.buffer, t.type.nbytes) for t in pending]
    todo += [(key, key[1].loc.buffer, key[1].type.nbytes) for key in twins]
    placed = _place_in_gaps(todo, taken, target)
    placed.update(dict.fromkeys(hand))  # None: the alloc's own address
    return placed


def _twins(program) -> tuple[list, list]:
    """Tiles that several functions of the program allocate under one name and type:
    ([(function name, tile) placed apart], [(function name, tile) placed by hand]).

    SSA values are the function activation's own: one address for a caller's and a
    callee's tile would let the callee's writes land in the caller's tile, and a hand
    address must not give way to the other's place. Each callee's such tile without an
    address is placed apart, but for the first function allocating it (the root functions
    first): the roots keep one place for theirs (each runs on units of its own), and when
    no root allocates it, the first callee keeps that place. The interpreter looks a tile
    up by (the function running, tile) first (``InstrShapes._placed_addr``)."""
    functions = getattr(program, "functions", None)
    if functions is None or len(functions) == 1:
        return [], []

    def compute():
        roots = root_functions(program)
        allocs = [(f, st) for f in _reachable(program) for st in scan(f.body).allocs]
        users: dict = {}
        for f, st in allocs:
            users.setdefault(st.tile, set()).add(f.name)
        twins: list[tuple] = []
        hand: list[tuple] = []
        plain: dict = {}  # tile -> the function that keeps its one place (roots first)
        for f, st in allocs:
            if len(users[st.tile]) > 1:
                if st.addr is not None:
                    hand.append((f.name, st.tile))
                elif f in roots:
                    plain.setdefault(st.tile, f.name)
                elif plain.setdefault(st.tile, f.name) != f.name:
                    twins.append((f.name, st.tile))
        return list(dict.fromkeys(twins)), list(dict.fromkeys(hand))

    return kept(program, ("twins",), compute)


def _place_in_gaps(todo, taken: dict, target) -> dict:
    """First fit of ``todo`` ((tile or reserve key, buffer name, size)) around ``taken``
    (buffer name -> [(start, end)], the target's reserved ranges added here), which
    takes what is placed."""
    for buf in target.buffers.values():
        taken.setdefault(buf.name, [])
        for _, s, e in buf.reserved:
            if (s, e) not in taken[buf.name]:
                taken[buf.name].append((s, e))
    placed = {}
    for tile, bufname, size in todo:
        buf = target.buffer(bufname)
        if not isinstance(tile, tuple):
            what = f"tile %{tile.name}"
        elif isinstance(tile[1], str):
            what = f"FIFO buffer {tile[1]!r}"
        else:  # a callee's tile named as another function's (_twins)
            what = f"tile %{tile[1].name} of @{tile[0]}"
        addr = 0
        for s, e in sorted(taken[buf.name]):
            if addr + size <= s:
                break
            addr = max(addr, _align(e, buf.alignment_bytes))
        if addr + size > buf.capacity_bytes:
            raise PlacementError(
                f"placement: {what} ({size} B) does not fit in {buf.name} "
                f"({buf.capacity_bytes} B on {target.name}); the first free aligned address "
                f"is {addr}"
            )
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
