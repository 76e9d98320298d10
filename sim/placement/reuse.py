"""Which tiles a hand-synchronised kernel's own flags let share bytes.

A kernel that synchronises by hand (manual mode) but gives some tiles no address leaves
the simulator to place them. When they do not fit side by side, tiles whose live ranges do
not overlap may take each other's bytes (``sim.placement.alloc``) — but only if the
kernel itself orders every access of the earlier tile before every access of the later
one. Otherwise the reuse is a write-after-read (or -after-write) hazard that no flag of
the program covers: the run would race because of where the simulator put the tiles,
and the race check would blame the kernel. So placement asks ``ProgramOrder.may_share``.

The order is the race detector's (``sim.engine.races``), computed statically over the
program text with the vector clocks of ``sim.base.vclock``: every pipe queue runs in
order (an item follows every earlier item of its own pipe); a ``set_flag(P, Q, id)``
carries what P knows, P's own earlier items included, to the matching ``wait_flag`` (the
k-th set of a ``(P, Q, id)`` to its k-th wait); a wait on ``PIPE_S`` and a
``pipe_barrier(PIPE_ALL)`` hold the scalar dispatcher, so every item issued after them
knows what they know (the barrier: every item issued before it); a ``load_scalar`` /
``store_scalar`` runs on the dispatcher itself.

The walk never claims more order than the program has:

* a loop body is walked three times (iterations i, i+1, i+2: a tile allocated in the body
  is a new *instance* in each), as the auto sync pass checks loop-carried hazards; after
  the loop, only what was known before it is kept, and the flags of the (P, Q) pairs the
  loop used carry nothing any more (their queue of pending sets depends on the trip
  count);
* the two branches of an ``scf.if`` are walked from the same state; after it, only what
  was known before is kept, and the pairs either branch used carry nothing;
* an event id known only at run time makes its (P, Q) pair carry nothing; cross-core
  flags, ``syncall`` and the FIFO hand-offs order nothing here; a tile a FIFO op or a
  communication instruction touches never shares bytes.

Two tiles may share bytes when, for every instance X of one and Y of the other (X first),
every access of Y knows every access of X on another pipe. A walk that would exceed
``MAX_STEPS`` statements (deeply nested loops) gives up: then no tile shares.
"""

from __future__ import annotations

from collections import deque

from sim.base.vclock import join
from sim.isa.comm import CommOp
from sim.isa.program import (
    Alloc,
    Barrier,
    Const,
    For,
    If,
    Instr,
    PipeOp,
    ScalarOp,
    Section,
    SetFlag,
    SyncWait,
    WaitFlag,
)
from sim.isa.tile import Tile
from sim.placement.comm import comm_tiles
from sim.placement.ir import Aliases, pipe_of, tile_roles

__all__ = ["ProgramOrder", "MAX_STEPS"]

MAX_STEPS = 2_000_000  # statements walked (loops three times) before giving up
_COPIES = 3  # iterations of a loop body walked
_DISPATCH = "PIPE_S"


class _Instance:
    """One lifetime of a tile: its first access (walk step), the clock each pipe had at
    its first access of it, and the index of its last access on each pipe."""

    __slots__ = ("t0", "first", "last")

    def __init__(self, t0):
        self.t0 = t0
        self.first: dict[str, dict] = {}
        self.last: dict[str, int] = {}


class _GaveUp(Exception):
    pass


class ProgramOrder:
    """The static happens-before of one function's flags and barriers (module doc)."""

    def __init__(self, fn):
        self.root = Aliases(fn)
        self.n: dict[str, int] = {}  # pipe -> items issued
        self.vc: dict[str, dict] = {}  # pipe -> what it knows (besides its own queue)
        self.floor: dict = {}  # what the dispatcher knows
        self.fifo: dict[tuple, deque] = {}  # (P, Q, id) -> clocks of pending sets
        self.dead: set = set()  # (P, Q) pairs whose flags carry nothing
        self.instances: dict[Tile, list] = {}
        self.unshared: set = set()  # tiles a FIFO op touches
        self.steps = 0
        self.gave_up = False
        self._cache: dict = {}
        try:
            self._walk(fn.body)
        except _GaveUp:
            self.gave_up = True

    # --- the walk ------------------------------------------------------------------------

    def _clock(self, pipe: str) -> dict:
        return join(self.vc.get(pipe, {}), self.floor)

    def _item(self, pipe: str) -> int:
        k = self.n.get(pipe, 0) + 1
        self.n[pipe] = k
        return k

    def _walk(self, body) -> None:
        for st in body:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise _GaveUp
            t = type(st)
            if t is Instr:
                if st.opcode != "TASSIGN":
                    self._instr(st)
            elif t is Alloc:
                self.instances.setdefault(self.root(st.tile), []).append(None)
            elif t is SetFlag:
                self._set(st)
            elif t is WaitFlag:
                self._wait(st)
            elif t is Barrier:
                if st.pipe == "PIPE_ALL":
                    self.floor = join(self.floor, self.n)
            elif t is ScalarOp:
                if st.op.removeprefix("pto.") in ("load_scalar", "store_scalar"):
                    self._item(_DISPATCH)
                    self.floor = join(self.floor, self.n)
            elif t is SyncWait:
                self._item(st.pipe)
            elif t is PipeOp:
                for x in (*st.operands, *st.results):
                    if isinstance(x, Tile):
                        self.unshared.add(self.root(x))
            elif t is CommOp:  # a communication instruction's staging tiles: never shared
                for x in comm_tiles(st):
                    self.unshared.add(self.root(x))
            elif t is For:
                self._loop(st)
            elif t is If:
                self._branches(st)
            elif t is Section:
                self._walk(st.body)

    def _instr(self, st: Instr) -> None:
        pipe = pipe_of(st)
        k = self._item(pipe)
        snap = None
        for tile, _, _ in tile_roles(st):
            tile = self.root(tile)
            lst = self.instances.setdefault(tile, [None])
            inst = lst[-1]
            if inst is None:
                inst = lst[-1] = _Instance(self.steps)
            if pipe not in inst.first:
                if snap is None:
                    snap = self._clock(pipe)
                inst.first[pipe] = snap
            inst.last[pipe] = k

    def _key(self, st):
        ev = st.event
        if isinstance(ev, Const):
            ev = ev.value
        if not isinstance(ev, int) or isinstance(ev, bool):
            self.dead.add((st.src, st.dst))
            return None
        return (st.src, st.dst, ev)

    def _set(self, st: SetFlag) -> None:
        k = self._item(st.src)
        key = self._key(st)
        if key is not None and key[:2] not in self.dead:
            clock = self._clock(st.src)
            clock[st.src] = max(clock.get(st.src, 0), k)
            self.fifo.setdefault(key, deque()).append(clock)

    def _wait(self, st: WaitFlag) -> None:
        self._item(st.dst)
        key = self._key(st)
        got: dict = {}
        if key is not None and key[:2] not in self.dead:
            q = self.fifo.get(key)
            got = q.popleft() if q else {}
        if st.dst == _DISPATCH:
            self.floor = join(self.floor, got)
        else:
            self.vc[st.dst] = join(self.vc.get(st.dst, {}), got)

    def _save(self) -> tuple:
        return dict(self.vc), dict(self.floor), {k: deque(q) for k, q in self.fifo.items()}

    def _restore(self, saved: tuple, used: set) -> None:
        """Back to what was known at ``saved``, with the flag pairs in ``used`` dead."""
        self.vc, self.floor, self.fifo = dict(saved[0]), dict(saved[1]), dict(saved[2])
        self.dead |= used
        for key in list(self.fifo):
            if key[:2] in self.dead:
                del self.fifo[key]

    def _loop(self, st: For) -> None:
        saved = self._save()
        for _ in range(_COPIES):
            self._walk(st.body)
        self._restore(saved, _flag_pairs(st.body))

    def _branches(self, st: If) -> None:
        saved = self._save()
        n = dict(self.n)
        ends = []
        for body in (st.then_body, st.else_body):
            self._restore(saved, set())
            self._walk(body)
            ends.append(self.n)
            self.n = dict(n)
        self.n = join(*ends)
        self._restore(saved, _flag_pairs(st.then_body) | _flag_pairs(st.else_body))

    # --- the question --------------------------------------------------------------------

    def may_share(self, a: Tile, b: Tile) -> bool:
        """Whether the program orders every access of ``a`` and every access of ``b``
        one way or the other, instance by instance (module doc)."""
        if self.gave_up:
            return False
        a, b = self.root(a), self.root(b)
        if a in self.unshared or b in self.unshared:
            return False
        key = (a, b) if id(a) <= id(b) else (b, a)
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = self._ordered(a, b)
        return got

    def key(self, tile: Tile):
        """What placement needs to test a one-lifetime tile against many at once:
        ``(last, bound)`` — ``last`` the index of its last access on each pipe, ``bound``
        for each pipe P the index of P that every access of it on another pipe knows —
        so that X is before Y exactly when ``last_X[P] <= bound_Y[P]`` for every P
        (``_before``), and against the latest of many earlier tiles at once by taking
        their ``last`` pipe by pipe. None when only ``may_share`` can tell (a tile of
        several lifetimes, one a FIFO op touches, or a walk that gave up)."""
        tile = self.root(tile)
        if self.gave_up or tile in self.unshared:
            return None
        insts = [i for i in self.instances.get(tile, ()) if i is not None]
        if len(insts) > 1:
            return None
        if not insts:
            return {}, _Always()
        x = insts[0]
        bound = {
            p: min((snap.get(p, 0) for q, snap in x.first.items() if q != p), default=_INF)
            for p in (*self.n, *x.first)
        }
        return dict(x.last), bound

    def _ordered(self, a: Tile, b: Tile) -> bool:
        xs = [i for i in self.instances.get(a, ()) if i is not None]
        ys = [i for i in self.instances.get(b, ()) if i is not None]
        for x in xs:
            for y in ys:
                first, then = (x, y) if x.t0 <= y.t0 else (y, x)
                if not _before(first, then):
                    return False
        return True


_INF = float("inf")


class _Always(dict):
    """The bound of a tile nobody accesses: every index."""

    def get(self, key, default=None):
        return _INF


def _before(x: _Instance, y: _Instance) -> bool:
    """Every access of ``y`` knows every access of ``x`` on another pipe."""
    for q, snap in y.first.items():
        for p, k in x.last.items():
            if p != q and snap.get(p, 0) < k:
                return False
    return True


def _flag_pairs(body) -> set:
    from sim.isa.program import walk

    return {(st.src, st.dst) for st in walk(body) if isinstance(st, (SetFlag, WaitFlag))}
