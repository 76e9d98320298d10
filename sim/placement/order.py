"""The static happens-before model of auto mode's synchronisation pass, and its context.

``Order`` models the pipe queues: an item of pipe P (an op or a wait) has an index in P's
queue; every pipe keeps a vector clock of the items of other pipes *known to have
completed* before its next item starts. A ``set_flag`` carries its pipe's clock (all
earlier work of its pipe done) to the matching ``wait_flag``; ``pipe_barrier(P)`` makes
P's own earlier items complete; ``pipe_barrier(PIPE_ALL)`` makes every issued item
complete. ``Ctx`` is what the pass knows of one function: where each tile was placed,
its aliases and views, the FIFOs, each statement's pipe and its symbolic accesses (a
double-buffered loop's accesses depend on the iteration's parity), worked out once per
statement. ``sim.placement.sync`` inserts the flags and barriers with them.
"""

from __future__ import annotations

import functools
from collections import deque
from typing import Any

import attrs

from sim.base.vclock import join
from sim.isa.comm import CommOp
from sim.isa.program import Barrier, For, If, Instr, PartView, PipeOp, Section, SetFlag, WaitFlag
from sim.placement.comm import comm_sides
from sim.placement.ir import Access, pipe_of, tile_roles

__all__ = [
    "Order",
    "SyncStats",
    "Summary",
    "Ctx",
    "Rec",
    "stmt",
    "steps_of",
    "pipes_of_stmt",
    "raw_accesses",
]


@functools.cache
def stmt(kind, *args):
    """One object per distinct set / wait flag or barrier the passes insert: they insert
    one at every point that needs it, equal ones are interchangeable (frozen, no source
    line), and a 10^5-instruction kernel needs ~2 * 10^5 of them."""
    return kind(*args)


class Order:
    """Static happens-before over the pipe queues (see the module doc)."""

    def __init__(self):
        self.n: dict[str, int] = {}
        self.vc: dict[str, dict] = {}
        self.floor: dict = {}
        self.fifo: dict = {}
        self.last_wait: dict = {}

    def clock(self, pipe: str) -> dict:
        return join(self.vc.get(pipe, {}), self.floor)

    def knows(self, q: str, p: str, k: int) -> bool:
        return max(self.vc.get(q, {}).get(p, 0), self.floor.get(p, 0)) >= k

    def op(self, pipe: str):
        k = self.n.get(pipe, 0) + 1
        self.n[pipe] = k
        clock = self.clock(pipe)  # a fresh dict: the item's own index joins it
        if clock.get(pipe, 0) < k:
            clock[pipe] = k
        return k, clock

    def set(self, pipe: str, key, clock=None) -> None:
        if clock is None:
            clock = join(self.clock(pipe), {pipe: self.n.get(pipe, 0)})
        self.fifo.setdefault(key, deque()).append(clock)

    def wait(self, dst: str, key, clock=None) -> int:
        k = self.n.get(dst, 0) + 1
        self.n[dst] = k
        if clock is None:
            q = self.fifo.get(key)
            clock = q.popleft() if q else {}
        self.vc[dst] = join(self.clock(dst), clock)
        self.last_wait[key] = (dst, k)
        return k

    def barrier(self, pipe: str) -> None:
        self.vc[pipe] = join(self.clock(pipe), {pipe: self.n.get(pipe, 0)})

    def barrier_all(self) -> None:
        self.floor = join(self.floor, self.n)


@attrs.define
class SyncStats:
    pairs: int = 0  # set/wait pairs inserted (static)
    barriers: int = 0  # same-pipe barriers inserted
    fallback_barriers: int = 0  # PIPE_ALL barriers: event pool exhausted / unsafe reuse
    scalar_barriers: int = 0  # PIPE_ALL barriers before scalar-unit memory accesses
    loop_flags: int = 0  # loop-carried flags (primed before, drained after a loop)


@attrs.define
class Summary:
    """What a compound statement (loop, branch, section) looks like from outside."""

    pipes: set = attrs.Factory(set)
    accesses: dict = attrs.Factory(dict)  # pipe -> [symbolic access]
    keys: set = attrs.Factory(set)  # (P, Q, id) used inside (busy during it)
    primes: list = attrs.Factory(list)  # loop-level flags: (P, Q, id) set before
    drains: list = attrs.Factory(list)  # ... and waited after

    def merge(self, other: Summary) -> None:
        self.pipes |= other.pipes
        for p, a in other.accesses.items():
            self.accesses.setdefault(p, []).extend(a)
        self.keys |= other.keys


class Rec:
    __slots__ = ("pipe", "k", "snap", "acc", "i", "copy")

    def __init__(self, pipe, k, snap, acc, i, copy=0):
        self.pipe, self.k, self.snap, self.acc, self.i, self.copy = pipe, k, snap, acc, i, copy


class Ctx:
    """Shared state of one to_auto run."""

    def __init__(
        self, target, slots, aliases, views, names, pipes, parity_of_loop, fifos=None, tick=None
    ):
        self.target = target
        self.tick = tick  # tick(instructions ordered), or None
        self.ordered = 0
        self.slots = slots
        self.root = aliases
        self.views = views
        self.fifos = fifos  # Fifos of the function (cube<->vector FIFO ops)
        self.names = names  # fresh scalar-name generator
        self.all_pipes = pipes
        self.n_ids = int(target.sync.get("event_ids_per_pipe_pair", 8))
        self.stats = SyncStats()
        self.parity = parity_of_loop  # id(For) -> Scalar (created on demand)
        self.parity_events: dict[str, tuple] = {}  # scalar name -> (loop id, id0, id1)
        self.summaries: dict[int, Summary] = {}
        self.loop_alias: dict[int, int] = {}  # id(rewritten For) -> id(original)
        self.steps: dict[int, tuple | None] = {}  # id(Instr) -> its step
        self.resolved: dict[int, list] = {}  # id(a step's accesses) -> resolve()

    def key(self, loop) -> int:
        """A loop's identity across rewrites (slots name the loops of the input)."""
        return self.loop_alias.get(id(loop), id(loop))

    # --- accesses ---------------------------------------------------------------------

    def symbolic(self, instr: Instr) -> list:
        out: list[tuple] = []
        for t, _, w in tile_roles(instr):
            out.append(("tile", self.root(t), w))
        for o in instr.outs:
            if isinstance(o, PartView):
                out.append(("gm", self.views.access(o, True)))
        for o in instr.ins:
            if isinstance(o, PartView):
                out.append(("gm", self.views.access(o, False)))
        return out

    def step(self, st) -> tuple | None:
        """``(pipe, symbolic accesses, same_pipe)`` of an instruction or a FIFO push /
        free (``same_pipe`` False: hazards on its own pipe need no order); None for the
        statements hazards do not concern."""
        if isinstance(st, Instr):
            # once per statement: a builder kernel issues one statement from a line over
            # and over, and the passes ask again at every level that sees it
            step: Any = self.steps.get(id(st), self)  # self: not worked out yet
            if step is self:
                step = self.steps[id(st)] = (
                    (pipe_of(st), tuple(self.symbolic(st)), True)
                    if st.opcode != "TASSIGN"
                    else None
                )
            return step
        if isinstance(st, PipeOp) and self.fifos is not None:
            return self.fifos.step(st)
        return None

    def comm_steps(self, st: CommOp) -> tuple:
        """``((pipe, symbolic accesses, True), ...)``: a side per pipe of a UB-staged
        communication instruction (``sim.placement.comm``); () for the others."""
        steps: Any = self.steps.get(id(st), self)
        if steps is self:
            out = []
            for pipe, uses in comm_sides(st):
                sym: list[tuple] = []
                for o, w in uses:
                    if isinstance(o, PartView):
                        sym.append(("gm", self.views.access(o, w)))
                    else:
                        sym.append(("tile", self.root(o), w))
                out.append((pipe, tuple(sym), True))
            steps = self.steps[id(st)] = tuple(out)
        return steps

    def resolve_step(self, sym: tuple, parity: dict) -> list[Access]:
        """``resolve`` of a step's accesses (``step()[1]``, kept as long as this run), once
        per step outside double-buffered loop copies (where ``parity`` picks the copy)."""
        if parity:
            return self.resolve(sym, parity)
        out = self.resolved.get(id(sym))
        if out is None:
            out = self.resolved[id(sym)] = self.resolve(sym, parity)
        return out

    def resolve(self, sym, parity: dict) -> list[Access]:
        """The accesses of symbolic accesses ``sym`` with the copies of double-buffered
        tiles that ``parity`` picks."""
        out = []
        for s in sym:
            if s[0] == "gm":
                out.append(s[1])
                continue
            _, tile, w = s
            slot = self.slots.get(tile)
            if slot is None and self.fifos is not None and tile in self.fifos.popped:
                out.append(Access(self.fifos.popped[tile], 0, 1, w, f"%{tile.name}"))
                continue
            if slot is None:
                # a tile no alloc_tile of this function made (its address is only known
                # at run time): it may touch any byte of its buffer
                buf = self.target.buffer(tile.loc.buffer)
                out.append(Access(buf.name, 0, buf.capacity_bytes, w, f"%{tile.name}"))
                continue
            addrs = slot.addrs
            if slot.double and id(slot.loop) in parity:
                addrs = (addrs[parity[id(slot.loop)]],)
            for a in addrs:
                out.append(Access(slot.buffer, a, a + slot.nbytes, w, f"%{tile.name}"))
        return out


def steps_of(st, ctx) -> tuple:
    """The steps (``Ctx.step``) of a statement the hazards concern: one for an instruction
    or a FIFO op, a side per pipe for a UB-staged communication instruction, () for the
    others (compound statements included)."""
    if isinstance(st, (Instr, PipeOp)):
        step = ctx.step(st)
        return () if step is None else (step,)
    if isinstance(st, CommOp):
        return ctx.comm_steps(st)
    return ()


def pipes_of_stmt(st, ctx) -> set:
    if isinstance(st, (Instr, PipeOp, CommOp)):
        return {step[0] for step in steps_of(st, ctx)}
    if isinstance(st, SetFlag):
        return {st.src}
    if isinstance(st, WaitFlag):
        return {st.dst}
    if isinstance(st, Barrier):
        return set() if st.pipe == "PIPE_ALL" else {st.pipe}
    s = ctx.summaries.get(id(st))
    return set(s.pipes) if s else set()


def raw_accesses(st, ctx) -> dict:
    """pipe -> symbolic accesses of every instruction inside a compound statement."""
    out: dict[str, list] = {}
    bodies = (st.body,) if isinstance(st, (For, Section)) else (st.then_body, st.else_body)
    for body in bodies:
        for s in body:
            steps = steps_of(s, ctx)
            for step in steps:
                out.setdefault(step[0], []).extend(step[1])
            if not steps and isinstance(s, (For, If, Section)):
                for p, a in raw_accesses(s, ctx).items():
                    out.setdefault(p, []).extend(a)
    return out
