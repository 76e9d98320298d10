"""Auto-mode tile placement: live ranges, double buffering, first fit with reuse.

Positions number the statements of the entry function in program order (nested bodies
included, pre-order). A tile is live from its first access to its last; a tile used
inside a loop it was not allocated in is live for the whole loop (its bytes must survive
every iteration). A tile allocated inside a loop body is *fresh per iteration* when the
first access to it in the body is an unconditional pure write (every read in the body
follows a write in the same iteration); otherwise its value is carried into the next
iteration and it is live for the whole loop too.

Double buffering: a fresh-per-iteration tile of a loop body gets two copies when both
fit; iteration ``i`` uses copy ``((iv - lower) / step) % 2``, so iteration i+1 can fill
one copy while iteration i still reads the other. Both copies are reserved for the whole
loop.

FIFO buffers (``reserve_buffer``) hold their bytes over the region they are reserved in
(``fifo_spans``): a tile whose live range overlaps that region is placed around them.

First fit: tiles are placed in order of their live-range start (then declaration order)
at the lowest ``alignment_bytes``-aligned address of their buffer that is free of the
target's reserved ranges and of every placed tile whose live range overlaps — so tiles
with disjoint live ranges share bytes (the sync pass then orders their accesses). In UB,
when the target has a bank model (``sim.timing.banks``), an address whose bank equals
the bank of a tile read together with this one by a binary vector op is skipped while a
gap still offers another (a stagger of at most ``bank_count - 1`` blocks).
"""

from __future__ import annotations

import attrs

from sim.base.errors import PlacementError
from sim.base.vclock import join
from sim.isa.comm import CommOp
from sim.isa.opcodes import opcode as _opcode
from sim.isa.program import Alloc, For, If, Instr, PipeOp, Section
from sim.isa.tile import Loc, Tile
from sim.placement.comm import comm_tiles
from sim.placement.ir import Aliases, tile_roles
from sim.timing.banks import ub_banks

__all__ = ["Slot", "allocate", "fifo_spans", "held_during"]


@attrs.frozen
class Slot:
    """Where auto mode puts one tile: one address, or two alternated by ``loop``'s parity."""

    tile: Tile
    buffer: str
    addrs: tuple
    live: tuple  # (first, last) statement position
    loop: For | None = None  # the loop whose iterations alternate the copies

    @property
    def double(self) -> bool:
        return len(self.addrs) == 2

    @property
    def nbytes(self) -> int:
        return self.tile.type.nbytes


class _Use:
    __slots__ = ("pos", "reads", "writes", "loops", "cond")

    def __init__(self, pos, reads, writes, loops, cond):
        self.pos, self.reads, self.writes, self.loops, self.cond = pos, reads, writes, loops, cond


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


class _Scan:
    """Positions, loop spans, allocations and uses of one function body."""

    def __init__(self, fn):
        self.root = Aliases(fn)
        self.pos = -1
        self.loop_span: dict[int, tuple] = {}
        self.allocs: dict[Tile, tuple] = {}  # tile -> (pos, loops, order)
        self.uses: dict[Tile, list] = {}
        self.partners: dict[Tile, set] = {}
        self._roles: dict[int, tuple] = {}  # id(Instr) -> _instr_roles
        self._visit(fn.body, (), 0)

    def _instr_roles(self, st: Instr) -> tuple:
        """((tile, (reads, writes)), ...) of an instruction's tiles, subviews as their
        source; notes the two sources of a binary vector op as placement partners."""
        roles: dict[Tile, list] = {}
        for t, r, w in tile_roles(st):  # an in-place op reads and writes
            rw = roles.setdefault(self.root(t), [False, False])
            rw[0] |= r
            rw[1] |= w
        spec = _opcode(st.opcode)
        srcs = [self.root(t) for t in st.tiles_in]
        if (
            spec.family == "binary"
            and len(srcs) >= 2
            and srcs[0] != srcs[1]
            and srcs[0].loc is Loc.VEC
            and srcs[1].loc is Loc.VEC
        ):
            self.partners.setdefault(srcs[0], set()).add(srcs[1])
            self.partners.setdefault(srcs[1], set()).add(srcs[0])
        return tuple((t, tuple(rw)) for t, rw in roles.items())

    def _visit(self, body, loops, cond):
        for st in body:
            self.pos += 1
            p = self.pos
            if isinstance(st, Alloc):
                self.allocs.setdefault(st.tile, (p, loops, len(self.allocs)))
            elif isinstance(st, Instr):
                if st.opcode == "TASSIGN":
                    continue
                roles = self._roles.get(id(st))  # a builder kernel repeats a statement
                if roles is None:
                    roles = self._roles[id(st)] = self._instr_roles(st)
                for t, (r, w) in roles:
                    self.uses.setdefault(t, []).append(_Use(p, r, w, loops, cond))
            elif isinstance(st, CommOp):  # staging tiles: written and read by the op
                for t in comm_tiles(st):
                    self.uses.setdefault(self.root(t), []).append(_Use(p, True, True, loops, cond))
            elif isinstance(st, For):
                self._visit(st.body, loops + (st,), cond)
                self.loop_span[id(st)] = (p, self.pos)
            elif isinstance(st, If):
                self._visit(st.then_body, loops, cond + 1)
                self._visit(st.else_body, loops, cond + 1)
            elif isinstance(st, Section):
                self._visit(st.body, loops, cond)


def fifo_spans(fn) -> dict:
    """id(statement) -> (first, last) statement position over which each ``reserve_buffer``
    of ``fn`` holds its bytes (positions as ``allocate`` numbers them). A FIFO buffer is
    the peer's to fill at any time while this unit may still pop from it, so it is held
    for the whole region it is reserved in: the outermost loop around it (the FIFO
    carries data from one iteration to the next), else the ``scf.if`` branch it sits in,
    else the whole function. Branches of one ``scf.if`` are mutually exclusive (the peer
    takes the same branch: a FIFO's two ends are reserved and imported in matching
    branches), so the buffers and tiles of one branch may share bytes with the other's."""
    spans: dict = {}
    found: list = []  # (id(statement), region key)
    pos = -1

    def visit(body, region):
        nonlocal pos
        for st in body:
            pos += 1
            p = pos
            t = type(st)
            if t is For:
                inner = region if region and region[0] == "loop" else ("loop", id(st))
                visit(st.body, inner)
                spans[("loop", id(st))] = (p, pos)
            elif t is If:
                for k, branch in enumerate((st.then_body, st.else_body)):
                    inner = region if region and region[0] == "loop" else ("branch", id(st), k)
                    first = pos + 1
                    visit(branch, inner)
                    spans[("branch", id(st), k)] = (first, max(first, pos))
            elif t is Section:
                visit(st.body, region)
            elif t is PipeOp and st.op == "pto.reserve_buffer":
                found.append((id(st), region))

    visit(fn.body, None)
    whole = (0, max(pos, 0))
    return {i: spans[r] if r else whole for i, r in found}


def held_during(reserved: dict, name: str, live: tuple) -> list:
    """The byte ranges of ``reserved`` in buffer ``name`` held during ``live``: a
    ``(start, end)`` for the whole kernel, a ``(start, end, (first, last))`` over those
    positions (``fifo_spans``)."""
    return [
        (r[0], r[1])
        for r in reserved.get(name, ())
        if len(r) == 2 or (r[2][0] <= live[1] and live[0] <= r[2][1])
    ]


def allocate(
    fn,
    target,
    *,
    double_buffer: bool = True,
    pinned: dict | None = None,
    reserved: dict | None = None,
    hb=None,
    where: str = "auto placement",
) -> dict:
    """Tile -> ``Slot`` for every allocated tile of ``fn`` (subviews alias their source).
    ``pinned`` maps tiles placed by hand to their address: they keep it (placed first,
    never double-buffered) and the others fit around them while they are live.
    ``reserved`` (buffer name -> [(start, end)]) are bytes held for the whole kernel (the
    FIFO buffers of cube<->vector pipes); an entry ``(start, end, (first, last))`` holds
    them only over those statement positions (``fifo_spans``). ``hb``
    (``sim.placement.reuse.ProgramOrder``), when given, must also let two tiles with
    disjoint live ranges share bytes (a manual kernel: its own flags must order them,
    ``_Frontier``); ``where`` starts the messages.

    The UB bank stagger is a preference, never a reason to refuse: when the tiles only fit
    packed (a kernel that asks for exactly the buffer), placement runs again without it."""
    args = (fn, target, double_buffer, pinned or {}, reserved or {}, hb, where)
    try:
        return _allocate(*args, stagger=True)
    except PlacementError:
        if ub_banks(target) is None:
            raise
        return _allocate(*args, stagger=False)


def _allocate(fn, target, double_buffer, pinned, reserved, hb, where, *, stagger: bool) -> dict:
    """``allocate`` with the UB bank stagger on or off."""
    pinned = pinned or {}
    reserved = reserved or {}
    scan = _Scan(fn)
    plans = []  # (start, order, tile, live, loop-or-None, db candidate)
    for tile, (apos, aloops, order) in scan.allocs.items():
        uses = scan.uses.get(tile, [])
        if not uses:
            plans.append((apos, order, tile, (apos, apos), None, False))
            continue
        s = min(u.pos for u in uses)
        e = max(u.pos for u in uses)
        for u in uses:
            for L in u.loops:
                if L not in aloops:
                    ls, le = scan.loop_span[id(L)]
                    s, e = min(s, ls), max(e, le)
        db_loop = None
        if aloops:
            inner = aloops[-1]
            first = min(uses, key=lambda u: u.pos)
            fresh = (
                first.writes
                and not first.reads
                and first.loops == aloops
                and first.cond == 0
                and all(inner in u.loops for u in uses)
            )
            ls, le = scan.loop_span[id(inner)]
            if fresh and double_buffer:
                db_loop = inner
                s, e = min(s, ls), max(e, le)
            elif not fresh:
                s, e = min(s, ls), max(e, le)
        if tile in pinned:
            db_loop = None
        plans.append((s, order, tile, (s, e), db_loop, db_loop is not None))
    plans.sort(key=lambda x: (x[2] not in pinned, x[0], x[1]))

    placed: dict[Tile, Slot] = {}
    by_buffer: dict[str, list] = {}
    frontiers: dict[str, _Frontier] = {}
    exact: set = set()  # id(slot) of the tiles only ProgramOrder.may_share can test
    for _, _, tile, live, loop, db in plans:
        buf = target.buffer(tile.loc.buffer)
        size = tile.type.nbytes
        banks = ub_banks(target) if stagger and buf.name == "UB" else None
        frontiers.setdefault(buf.name, _Frontier())
        mine = by_buffer.get(buf.name, ())
        others = [sl for sl in mine if sl.live[0] <= live[1] and live[0] <= sl.live[1]]
        busy = [(s, e) for _, s, e in buf.reserved] + held_during(reserved, buf.name, live)
        busy += [(a, a + sl.nbytes) for sl in others for a in sl.addrs]
        partner_banks = set()
        if banks is not None:
            for p in scan.partners.get(tile, ()):
                if p in placed:
                    partner_banks |= {banks.bank(a) for a in placed[p].addrs}

        # tiles of disjoint live ranges the kernel does not order may not share bytes:
        # asked only of the bytes a candidate address would take
        dead = (
            [sl for sl in mine if not (sl.live[0] <= live[1] and live[0] <= sl.live[1])]
            if hb is not None
            else []
        )
        key = hb.key(tile) if hb is not None and tile not in pinned else None
        fit = _Fit(tile, size, buf, banks, partner_banks, dead, key, hb, exact, frontiers[buf.name])

        addr = pinned.get(tile)
        if addr is None:
            addr = fit(busy)
        if addr is None:
            unordered = [sl for sl in dead if not hb.may_share(sl.tile, tile)]
            held = sorted(
                ((a, sl) for sl in others + unordered for a in sl.addrs), key=lambda x: x[0]
            )
            late = {id(sl) for sl in unordered}
            desc = ", ".join(
                f"%{sl.tile.name} [{a:#x}, {a + sl.nbytes:#x})"
                + (" (not ordered)" if id(sl) in late else "")
                for a, sl in held
            )
            used = _union_bytes((a, a + sl.nbytes) for a, sl in held)
            whom = (
                "the tiles live at the same time or not ordered before or after it by "
                "the kernel's flags and barriers"
                if hb is not None
                else "the tiles live at the same time"
            )
            raise PlacementError(
                f"{where}: tile %{tile.name} ({size} B) does not fit in {buf.name} "
                f"({buf.capacity_bytes} B on {target.name}, reserved ranges excluded): "
                f"{used} B are held by {whom}"
                + (f": {desc}" if desc else "")
                + ("; --sync auto orders such reuse itself" if unordered else "")
            )
        addrs: tuple[int, ...] = (addr,)
        if db:
            held = [(b, b + sl.nbytes) for sl in fit.unordered for b in sl.addrs]
            second = fit(busy + held + [(addr, addr + size)])
            if second is not None:
                addrs = (addr, second)
            else:
                loop = None
        slot = Slot(tile, buf.name, addrs, live, loop if len(addrs) == 2 else None)
        placed[tile] = slot
        by_buffer.setdefault(buf.name, []).append(slot)
        if hb is not None:
            if key is None:
                exact.add(id(slot))
            else:
                for a in addrs:
                    frontiers[buf.name].add(a, a + size, key[0])
    return placed


class _Fit:
    """One tile's first fit in its buffer (``allocate``): the lowest address its bytes fit
    at, in UB off its partners' banks while a gap offers another. In a manual kernel
    (``hb``) the bytes of tiles with disjoint live ranges (``dead``) are taken only when
    the kernel orders the two; those found unordered (``unordered``) are added to the busy
    ranges — and held again for a second copy."""

    def __init__(self, tile, size, buf, banks, partner_banks, dead, key, hb, exact, frontier):
        self.tile = tile
        self.size = size
        self.buf = buf
        self.banks = banks
        self.partner_banks = partner_banks
        self.dead = dead
        self.key = key  # ProgramOrder.key of the tile, or None: asked tile by tile
        self.hb = hb
        self.exact = exact
        self.frontier = frontier
        self.asked: set = set()  # id() of the dead tiles already asked about
        self.unordered: list = []

    def bank_ok(self, a: int) -> bool:
        return self.banks is None or self.banks.bank(a) not in self.partner_banks

    def __call__(self, busy: list) -> int | None:
        size, buf, dead, key = self.size, self.buf, self.dead, self.key
        while True:
            a = _first_fit(
                size,
                busy,
                buf.capacity_bytes,
                buf.alignment_bytes,
                self.bank_ok,
                self.banks.count if self.banks else 1,
            )
            if a is None or not dead:
                return a
            late = []
            if key is not None:  # the one-lifetime tiles there, all at once
                late = self.frontier.unordered(a, a + size, key[1])
            clash = [
                sl
                for sl in dead
                if id(sl) not in self.asked
                and (key is None or id(sl) in self.exact)
                and any(b < a + size and a < b + sl.nbytes for b in sl.addrs)
            ]
            if not clash and not late:
                return a
            busy = busy + late
            for sl in clash:
                self.asked.add(id(sl))
                if not self.hb.may_share(sl.tile, self.tile):
                    self.unordered.append(sl)
                    busy = busy + [(b, b + sl.nbytes) for b in sl.addrs]


class _Frontier:
    """Per buffer: for each byte range, the latest access on each pipe of the one-lifetime
    tiles placed there (pipe by pipe, the maximum). A new tile may take the bytes when it
    knows all of it (``ProgramOrder.key``): the order is transitive, so one test against
    the maximum stands for one against every tile that held the bytes — placement stays
    linear in the tiles instead of asking every pair."""

    def __init__(self):
        self.segs: list = []  # [start, end, {pipe: index}], sorted, disjoint

    def add(self, lo: int, hi: int, last: dict) -> None:
        out, cur = [], lo
        for s, e, m in self.segs:
            if e <= lo or hi <= s:
                out.append([s, e, m])
                continue
            if s < lo:
                out.append([s, lo, m])
            if cur < s:
                out.append([cur, s, dict(last)])
            a, b = max(s, lo), min(e, hi)
            out.append([a, b, join(m, last)])
            if hi < e:
                out.append([hi, e, m])
            cur = max(cur, b)
        if cur < hi:
            out.append([cur, hi, dict(last)])
        out.sort(key=lambda x: x[0])
        self.segs = out

    def unordered(self, lo: int, hi: int, bound) -> list:
        """The byte ranges in [lo, hi) whose tiles a tile of ``bound`` does not know."""
        return [
            (s, e)
            for s, e, m in self.segs
            if s < hi and lo < e and any(k > bound.get(p, 0) for p, k in m.items())
        ]


def _union_bytes(ranges) -> int:
    """Bytes covered by ``[start, end)`` ranges (tiles that share bytes count once)."""
    total, end = 0, None
    for s, e in sorted(ranges):
        if end is None or s >= end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def _first_fit(size, busy, capacity, align, bank_ok, tries):
    """Lowest aligned address of a gap that holds ``size`` bytes and passes ``bank_ok``;
    failing that, the lowest that holds it; None when nothing does."""
    fallback = None
    cursor = 0
    for bs, be in sorted(busy) + [(capacity, capacity)]:
        a = _align(cursor, align)
        for _ in range(max(1, tries)):
            if a + size > min(bs, capacity):
                break
            if fallback is None:
                fallback = a
            if bank_ok(a):
                return a
            a += align
        cursor = max(cursor, be)
    return fallback
