"""Auto mode: the simulator places every tile and inserts every flag, as the compiler's
auto mode does (programming-model.md §5; PTOAS ``--enable-insert-sync``,
pto-as-syntax.md §1).

``to_auto(program, target)`` returns the program rewritten in three steps; ``plan_auto``
returns the same program with what was decided (addresses, counts).

**(a) Strip.** Every ``set_flag`` / ``wait_flag`` / ``pipe_barrier`` and every ``TASSIGN``
is removed and every ``alloc_tile`` loses its address: in auto mode the toolchain decides
(TASSIGN compiles to nothing, §5). Programs that rely on two tiles *aliasing* the same
bytes on purpose (reinterpreting data through a second tile) are manual-only: auto mode
gives every tile its own bytes. ``func.call`` is inlined first (``sim.placement.inline``).

**(b) Place** (``sim.placement.alloc``). A tile is live from its first access to its last,
over the statements in program order; a tile used inside a loop it was not allocated in is
live for the whole loop. A tile allocated inside a loop body whose first access in the body
is an unconditional write is double-buffered when two copies fit: iteration i uses copy
``((iv - lower) / step) % 2``, computed at the top of the body with ``arith`` ops, and the
``alloc_tile`` takes that scalar as its address — no IR extension is needed, since an
``alloc_tile`` address may be an SSA value. Tiles are placed first-fit per buffer, in
order of their live-range start, at ``alignment_bytes``-aligned addresses free of the
target's reserved ranges (the TMP_UB_OFFSET scratch on A2/A3) and of every tile live at the
same time, so tiles with disjoint live ranges share bytes. In UB the allocator staggers
the two sources of a binary vector op into different banks when a gap allows it (the UB
bank ASSUMPTION of ``machine.toml``). When double buffering leaves a later tile without
room, placement is redone with single copies. Too little space is a ``UserError`` naming
the tile and the tiles that hold the buffer. With ``keep_addresses`` (the default run of
a kernel without sync), tiles allocated at a constant address keep it and the others fit
around them.

**Chip kernels.** Every unit has its own buffers and pipes, and each buffer belongs to one
unit kind (``[buffers.*] unit``), so placing per buffer is placing per unit; a kernel in
PTOAS's two-function form (a cube entry importing a vector function's reserved buffer, or
the reverse) is placed and synchronised function by function. A FIFO's reserved buffer
(``reserve_buffer``) keeps its bytes over the region it is reserved in — the outermost
loop around it, else its ``scf.if`` branch, else the whole kernel
(``sim.placement.alloc.fifo_spans``; the branches of one ``scf.if`` are exclusive, so the
tiles of one branch may take the bytes of another branch's buffers): tiles live there
are placed around it, and one with ``auto = true`` is placed first, at the lowest
address free of the buffers held at the same time (its statement then says
``auto = false`` with that ``base``). The FIFO ops take part in the hazards as
``sim.placement.ir.Fifos`` says: a push reads its tile on the pipe that moves it out, a
free must follow every access of the popped tile on another pipe.

**(c) Synchronise** (``sim.placement.sync``). Every instruction's pipe comes from the
opcode registry and its bytes from the placement: a tile access covers the tile's whole
capacity (conservative may-alias), GM views the hull of their window. Going through the
program in order, each access is checked against the earlier accesses of overlapping bytes
(RAW, WAR, WAW) and a hazard is skipped when it is already ordered by the syncs inserted so
far, transitively (static vector clocks over the pipe queues). Otherwise:

* cross-pipe (P -> Q): one ``set_flag(P, Q, id)`` right after the latest unordered P
  producer (it fires when all earlier P work is done, so it covers older ones) and one
  ``wait_flag`` right before the consumer. The id comes from the (P, Q) pool of
  ``event_ids_per_pipe_pair`` (8) by live range: free over [set, wait], and when reused,
  the previous wait of that id must already be ordered before the new set (so no id is
  ever set while still pending). No free id: ``pipe_barrier(PIPE_ALL)`` before the
  consumer instead, counted as a fallback barrier.
* same pipe: ``pipe_barrier(Q)`` right before the consumer (RAW, WAR and WAW alike, as
  PTOAS does).
* a ``load_scalar`` / ``store_scalar`` (the scalar unit reads or writes buffer / GM
  bytes at dispatch) gets ``pipe_barrier(PIPE_ALL)`` before it.

Loops, branches and sections are synchronised inside first; from outside, a loop is one
step of every pipe it uses: hazards from earlier code are ordered before the loop, hazards
into later code after it. Hazards *carried* from one iteration to a later one are found by
walking three iterations of the synchronised body: a same-pipe one gets a barrier before
its consumer; a cross-pipe one a loop flag — ``set_flag`` after the last producer in the
body, ``wait_flag`` before the first consumer (or at the top / bottom of the body), primed
by a ``set_flag`` before the loop and drained by a ``wait_flag`` after it (the idiom of
pto-as-syntax.md §8 Example 3). When only double-buffered copies carry the hazard (distance
2), the flag alternates two ids by parity and is primed twice. A body flag whose id could
be set again by the next iteration before its wait ran also alternates two ids. When ids
run out, one ``pipe_barrier(PIPE_ALL)`` at the bottom of the body orders the iterations
instead (counted as a fallback barrier). The result is correct and conservative.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import attrs

from sim.base.errors import PlacementError, UserError
from sim.isa.comm import CommOp
from sim.isa.program import (
    Alloc,
    Barrier,
    Const,
    For,
    If,
    Instr,
    PipeOp,
    Program,
    Scalar,
    Section,
    SetFlag,
    WaitFlag,
    walk,
)
from sim.placement.alloc import allocate, fifo_spans, held_during
from sim.placement.inline import inline_calls
from sim.placement.ir import (
    Aliases,
    Fifos,
    Views,
    check_supported,
    constant_addresses,
    fifo_reserves,
    pipe_of,
)
from sim.placement.order import Ctx, SyncStats
from sim.placement.sync import _parity_scalar, _parity_value, synchronise
from sim.target import load_target

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from sim.isa.program import KernelLike
    from sim.target.model import Target


__all__ = ["AutoPlan", "plan_auto", "to_auto", "program_of"]


def program_of(program_or_kernel) -> Program:
    if hasattr(program_or_kernel, "program") and callable(program_or_kernel.program):
        return program_or_kernel.program()
    if isinstance(program_or_kernel, Program):
        return program_or_kernel
    raise UserError(f"expected a Program or a sim.Kernel, found {type(program_or_kernel).__name__}")


@attrs.frozen
class AutoPlan:
    """An auto-mode program and what was decided for it."""

    program: Program
    slots: dict  # Tile -> Slot (addresses, live range, double buffering)
    stats: SyncStats
    double_buffered: tuple = ()  # names of double-buffered tiles
    first_access: dict = attrs.Factory(dict)  # DB tile name -> (opcode, operands text)

    @property
    def addresses(self) -> dict:
        """Tile name -> (buffer, address, ...) — two addresses for double-buffered tiles."""
        return {t.name: (s.buffer, *s.addrs) for t, s in self.slots.items()}


def _strip(body, keep: frozenset = frozenset()) -> list:
    """``body`` without sync and TASSIGN; allocations lose their address unless their
    tile is in ``keep``."""
    out = []
    for st in body:
        if isinstance(st, (SetFlag, WaitFlag)) or (type(st) is Barrier and not st.fence):
            continue  # a fence stays: it drains the pipes for other cores' sake
        if isinstance(st, Instr) and st.opcode == "TASSIGN":
            continue
        if isinstance(st, Alloc):
            if st.tile not in keep:
                st = attrs.evolve(st, addr=None)
        elif isinstance(st, For):
            st = attrs.evolve(st, body=tuple(_strip(st.body, keep)))
        elif isinstance(st, If):
            st = attrs.evolve(
                st,
                then_body=tuple(_strip(st.then_body, keep)),
                else_body=tuple(_strip(st.else_body, keep)),
            )
        elif isinstance(st, Section):
            st = attrs.evolve(st, body=tuple(_strip(st.body, keep)))
        out.append(st)
    return out


def _allocate(fn, tgt, double_buffer: bool, pinned: dict, reserved: dict) -> dict:
    """Placement; when double buffering leaves a later tile without room, placement
    again with single copies (liveness reuse alone may fit where two copies do not)."""
    try:
        return allocate(fn, tgt, double_buffer=double_buffer, pinned=pinned, reserved=reserved)
    except UserError:
        if not double_buffer:
            raise
        return allocate(fn, tgt, double_buffer=False, pinned=pinned, reserved=reserved)


def _fifo_buffers(fn, tgt, pinned: dict):
    """The byte ranges the FIFO buffers of ``fn`` hold (buffer -> [(start, end, (first,
    last))], over the statement positions of ``fifo_spans``) and ``fn`` with every
    ``reserve_buffer {auto = true}`` placed: at the lowest aligned address clear of the
    target's reserved ranges, the FIFO buffers held at the same time and the hand-placed
    tiles."""
    spans = fifo_spans(fn)
    held: dict[str, list] = {}
    todo = []
    for st, buf, size, base in fifo_reserves(fn.body):
        if base is None:
            todo.append((st, buf, size))
        else:
            held.setdefault(buf, []).append((base, base + size, spans[id(st)]))
    placed = {}
    for st, bufname, size in todo:
        buf = tgt.buffer(bufname)
        live = spans[id(st)]
        busy = sorted(
            [(s, e) for _, s, e in buf.reserved]
            + held_during(held, bufname, live)
            + [(a, a + t.type.nbytes) for t, a in pinned.items() if t.loc.buffer == bufname]
        )
        addr = 0
        for s, e in busy:
            if addr + size <= s:
                break
            addr = max(addr, -(-e // buf.alignment_bytes) * buf.alignment_bytes)
        if addr + size > buf.capacity_bytes:
            raise PlacementError(
                f"auto placement: FIFO buffer {dict(st.attrs).get('name')!r} "
                f"({size} B) does not fit in {buf.name} ({buf.capacity_bytes} B "
                f"on {tgt.name})"
            )
        held.setdefault(bufname, []).append((addr, addr + size, live))
        placed[id(st)] = attrs.evolve(
            st,
            attrs=tuple((k, False if k == "auto" else v) for k, v in st.attrs) + (("base", addr),),
        )
    if placed:
        fn = attrs.evolve(fn, body=_replace(fn.body, placed))
    return held, fn


def _replace(body, new: dict) -> tuple:
    """``body`` with the statements keyed by ``id`` in ``new`` replaced (at any depth)."""
    out = []
    for st in body:
        if id(st) in new:
            st = new[id(st)]
        elif isinstance(st, For):
            st = attrs.evolve(st, body=_replace(st.body, new))
        elif isinstance(st, If):
            st = attrs.evolve(
                st, then_body=_replace(st.then_body, new), else_body=_replace(st.else_body, new)
            )
        elif isinstance(st, Section):
            st = attrs.evolve(st, body=_replace(st.body, new))
        out.append(st)
    return tuple(out)


def _unit_functions(prog) -> list:
    """The functions a launch starts units in: the entry and, in PTOAS's two-function form,
    the peer of the other kind whose reserved buffer it imports."""
    fns = [prog.main]
    for st in walk(prog.main.body):
        if isinstance(st, PipeOp) and st.op == "pto.import_reserved_buffer":
            name = str(dict(st.attrs).get("peer_func", "")).lstrip("@")
            peer = next((f for f in prog.functions if f.name == name), None)
            if peer is not None and peer not in fns:
                fns.append(peer)
    return fns


def _names(fn):
    taken = {a.name for a in fn.args}
    for st in walk(fn.body):
        for f in ("result", "iv"):
            v = getattr(st, f, None)
            if isinstance(v, Scalar):
                taken.add(v.name)
        for f in ("results", "iter_args"):
            for v in getattr(st, f, ()) or ():
                if isinstance(v, Scalar):
                    taken.add(v.name)
    counter = itertools.count()

    def fresh(prefix: str) -> str:
        while True:
            name = f"auto_{prefix}{next(counter)}"
            if name not in taken:
                taken.add(name)
                return name

    return fresh


def _place(body, slots, ctx) -> list:
    out = []
    for st in body:
        if isinstance(st, Alloc) and st.tile in slots:
            slot = slots[st.tile]
            if slot.double:
                par = _parity_scalar(ctx, slot.loop)
                stmts, addr = _parity_value(ctx, par, slot.addrs[0], slot.addrs[1], "addr")
                out += stmts
                st = attrs.evolve(st, addr=addr)
            else:
                st = attrs.evolve(st, addr=Const(slot.addrs[0], "i64"))
        elif isinstance(st, For):
            new = attrs.evolve(st, body=tuple(_place(st.body, slots, ctx)))
            ctx.loop_alias[id(new)] = ctx.key(st)
            st = new
        elif isinstance(st, If):
            st = attrs.evolve(
                st,
                then_body=tuple(_place(st.then_body, slots, ctx)),
                else_body=tuple(_place(st.else_body, slots, ctx)),
            )
        elif isinstance(st, Section):
            st = attrs.evolve(st, body=tuple(_place(st.body, slots, ctx)))
        out.append(st)
    return out


def plan_auto(
    program: Program | KernelLike,
    target: str | Path | Target = "a2a3",
    *,
    double_buffer: bool = True,
    keep_addresses: bool = False,
    tick: Callable[[int], object] | None = None,
) -> AutoPlan:
    """The auto-mode version of ``program`` (a Program or a builder Kernel) and its plan.
    ``keep_addresses`` keeps the constant ``alloc_tile addr=`` of hand-placed tiles (the
    default run of a kernel without sync: placement by hand, sync by the toolchain);
    otherwise every tile is placed anew. ``tick(n)``, when given, hears every few
    thousand instructions how many the sync pass has ordered (a progress line)."""
    prog = inline_calls(program_of(program))
    tgt = load_target(target)
    new, slots, stats = {}, {}, SyncStats()
    for fn in _unit_functions(prog):
        new[fn.name], got, st = _plan_function(fn, tgt, double_buffer, keep_addresses, tick)
        slots.update(got)
        for f in attrs.fields(SyncStats):
            setattr(stats, f.name, getattr(stats, f.name) + getattr(st, f.name))
    functions = tuple(new.get(f.name, f) for f in prog.functions)
    db = tuple(t.name for t, s in slots.items() if s.double)
    first = {}
    for fn in new.values():
        for st in walk(fn.body):
            if isinstance(st, Instr):
                for o in st.outs + st.ins:
                    if getattr(o, "name", None) in db and o.name not in first:
                        first[o.name] = (st.opcode, st.operand_text)
    return AutoPlan(attrs.evolve(prog, functions=functions), slots, stats, db, first)


def _plan_function(fn, tgt, double_buffer: bool, keep_addresses: bool, tick=None):
    """One function placed and synchronised: (new function, slots, SyncStats)."""
    check_supported(fn, "auto mode")
    pinned = constant_addresses(fn) if keep_addresses else {}
    fn1 = attrs.evolve(fn, body=tuple(_strip(fn.body, frozenset(pinned))))
    held, fn1 = _fifo_buffers(fn1, tgt, pinned)
    slots = _allocate(fn1, tgt, double_buffer, pinned, held)
    # each statement once: a builder kernel repeats them
    pipes = {
        pipe_of(st) for st in {id(s): s for s in walk(fn1.body) if isinstance(s, Instr)}.values()
    }
    fifos = Fifos(fn1)
    pipes |= {
        s[0]
        for st in walk(fn1.body)
        if isinstance(st, PipeOp)
        for s in [fifos.step(st)]
        if s is not None
    }
    ctx = Ctx(tgt, slots, Aliases(fn1), Views(fn1), _names(fn1), pipes, {}, fifos, tick)
    for st in walk(fn1.body):  # the pipes of the communication instructions' sides
        if isinstance(st, CommOp):
            pipes |= {q for q, _, _ in ctx.comm_steps(st)}
    body = _place(fn1.body, slots, ctx)
    body = synchronise(body, ctx)
    return attrs.evolve(fn1, body=tuple(body)), slots, ctx.stats


def to_auto(
    program: Program | KernelLike,
    target: str | Path | Target = "a2a3",
    *,
    double_buffer: bool = True,
    keep_addresses: bool = False,
    tick: Callable[[int], object] | None = None,
) -> Program:
    """``program`` in auto mode: placed by the simulator, synchronised by the simulator
    (the policy is this module's documentation); ``tick`` as for ``plan_auto``."""
    return plan_auto(
        program, target, double_buffer=double_buffer, tick=tick, keep_addresses=keep_addresses
    ).program
