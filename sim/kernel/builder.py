"""The Python builder: write a kernel the way the C++ intrinsics read.

::

    k = Kernel("vadd")
    ga, gc = k.gm("a", "f32", (16, 64)), k.gm("c", "f32", (16, 64))
    a, c = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    e = k.TLOAD(a, ga)                 # returns a RecordEvent token
    e = k.TADDS(c, a, 1.0, e)          # waits on it: set_flag/wait_flag MTE2 -> V
    k.TSTORE(gc, c, e)
    print(sim.simulate(k).total_cycles)

Every opcode of the registry is a method spelled as the ISA spells it, taking the
destination(s) first, then sources and scalars, then any RecordEvent tokens to wait on —
the C++ order. Each returns a new token. Waiting on a token from another pipe inserts
``set_flag`` right after the producer and ``wait_flag`` right before the consumer, with
an event id drawn from that pipe pair's pool of 8 (the lowest id whose last wait the
producer's pipe has itself waited for, through the kernel's flags: program order alone
does not stop a pipe running ahead from setting an id again while it is pending; when
none is, round robin); waiting on a token from the same pipe
inserts ``pipe_barrier`` (the C++ same-pipe Event); a token already waited on by the
consumer's pipe adds nothing, since that pipe's queue order covers it.

The builder produces the same ``Program`` IR as the PTO IR parser.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sim.base.errors import UserError
from sim.isa.dtypes import DType
from sim.isa.dtypes import dtype as _dtype
from sim.isa.known import HAND_PLACEMENTS, note
from sim.isa.opcodes import OPCODES
from sim.isa.opcodes import opcode as _opcode
from sim.isa.precision import kind_for, parse_precision
from sim.isa.program import (
    Alloc,
    Barrier,
    Const,
    Function,
    GmPtr,
    Instr,
    MakeTensorView,
    PartitionView,
    PartView,
    Program,
    Reshape,
    Section,
    SetFlag,
    SetValidShape,
    TensorView,
    WaitFlag,
)
from sim.isa.tile import Loc, Tile, TileType
from sim.kernel.chip import ChipKernel
from sim.kernel.comm import CommKernel
from sim.kernel.operands import FLOATS, SCALARS, float_bits
from sim.kernel.tokens import _POOL, _IdPool, _Intervals, _PipeClocks  # noqa: F401 (tests)
from sim.kernel.values import Event, GlobalTensor, Index, View, _caller, _pipe_name, ir_name

__all__ = ["Kernel"]

_bisect_right = bisect.bisect_right
_new_event = object.__new__  # a token made in _instr without a call to Event.__init__

_N_OUT: dict[str, int] = {}  # opcode -> destination operands the builder takes


class Kernel(ChipKernel, CommKernel):
    """A kernel under construction; ``program()`` returns its IR.

    ``block_dim`` physical cores run it (SPMD); see ``sim.kernel.chip`` for block ids,
    cube / vector sections and FIFOs, ``sim.kernel.comm`` for ranks and communication.
    """

    def __init__(self, name: str = "kernel", block_dim: int = 1):
        self.name = ir_name(name, "Kernel name")
        self._chip_init(block_dim)
        self._stmts: list = []  # statements and section markers, in order
        self._after: dict = {}  # statement index -> the set_flag inserted after it
        # the further set_flags after one statement, in order: (index, flag) in two flat
        # lists (a list per statement would be a container per token the garbage
        # collector traverses on every full collection: ~6 % of a 10^6-instruction build)
        self._more_at: list = []
        self._more_flags: list = []
        self._program: tuple[tuple, Program] | None = None  # (what it was built from, it)
        self._args: list = []
        self.inputs: dict[str, np.ndarray] = {}
        self._names: set[str] = set()
        self._counter = itertools.count()
        self._views: dict[tuple, PartView] = {}
        self._tv: dict[str, TensorView] = {}
        self._pools: dict[tuple, _IdPool] = {}  # (src, dst) -> its event ids' state
        self._pairs: dict[tuple, tuple] = {}  # (section, src, dst) -> _pair()
        self._clocks = _PipeClocks()
        # (src, dst, id) -> what its set knows
        self._manual_known: dict[tuple, tuple[dict, tuple | None]] = {}
        self._interned: dict = {}
        self._built: dict = {}  # what built a statement (class or opcode, operands, loc) -> it
        self._tile_ids: set = set()  # id() of the live tiles declared or popped here
        self._freed: dict = {}  # id() of a popped tile -> where tfree gave it back
        self._issued: dict = {}  # an instr() call as written (opcode, section, line,
        #                                 operands) -> (its statement, its pipe)
        self._placing: dict = {}  # id -> each distinct statement placing a tile by hand

    # --- declarations --------------------------------------------------------------------

    def _fresh(self, base: str) -> str:
        name = base = ir_name(base)
        while name in self._names:
            name = f"{base}{next(self._counter)}"
        self._names.add(name)
        return name

    def tile(
        self,
        loc: str | Loc = "vec",
        dtype: str | DType = "f32",
        rows: int | None = None,
        cols: int | None = None,
        *,
        valid: tuple[int | None, int | None] | None = None,
        name: str | None = None,
        addr: int | None = None,
        type: TileType | None = None,
        **layout: Any,
    ) -> Tile:
        """Declare a tile; ``valid=(r, c)`` with ``None`` entries makes it dynamic.

        ``addr`` places it by hand (manual mode); otherwise the simulator places it.
        """
        if type is None:
            if rows is None or cols is None:
                raise UserError("tile(): rows and cols are required unless type= is given")
            vr, vc = valid if valid is not None else (rows, cols)
            type = TileType(loc, dtype, rows, cols, vr, vc, **layout)
        t = Tile(self._fresh(name or "t"), type)
        self._tile_ids.add(id(t))
        st = Alloc(t, None if addr is None else Const(int(addr), "i64"), loc=_caller())
        if addr is not None:
            self._placing[id(st)] = st
        self._emit(st)
        return t

    def reshape(self, tile: Tile, rows: int, cols: int, *, name: str | None = None) -> Tile:
        """``pto.treshape``: a ``rows x cols`` tile (all valid) aliasing ``tile``'s bytes
        (the same total size), e.g. per-row columns held 32-byte-wide seen as one flat tile."""
        if type(tile) is not Tile or id(tile) not in self._tile_ids:
            self._not_mine(tile, "reshape")
        t = tile.type
        new = TileType(t.loc.value, t.dtype.name, int(rows), int(cols))
        if new.nbytes != t.nbytes:
            raise UserError(
                f"reshape(%{tile.name}): {rows}x{cols} {t.dtype.name} is {new.nbytes} "
                f"bytes, the tile {t.nbytes}: expected the same size"
            )
        r = Tile(self._fresh(name or f"{tile.name}_flat"), new)
        self._emit(Reshape(r, tile, loc=_caller()))
        self._tile_ids.add(id(r))
        return r

    def gm(
        self, name: str, dtype: str | DType, shape: Sequence[int], data: np.ndarray | None = None
    ) -> GlobalTensor:
        """Declare a GM array argument (2-D, row-major); ``data`` is its initial content."""
        dt = _dtype(dtype)
        shape = tuple(int(s) for s in shape)
        if len(shape) == 1:
            shape = (1, shape[0])
        if len(shape) != 2 or min(shape) <= 0:
            raise UserError(
                f"gm {name}: shape must be (rows, cols) with positive sizes, found {shape}"
            )
        if name in self._names:  # renaming it would leave the user's name pointing elsewhere
            what = "GM argument" if name in self._tv else "tile or value"
            raise UserError(
                f"{_caller()}: gm {name}: a {what} named {name!r} is already "
                f"declared in kernel {self.name}; give each a distinct name"
            )
        name = self._fresh(name)
        ptr = GmPtr(name, dt)
        self._args.append(ptr)
        if data is not None:
            arr = np.asarray(data)
            if arr.size != shape[0] * shape[1]:
                raise UserError(
                    f"gm {name}: data has {arr.size} elements, shape {shape} needs "
                    f"{shape[0] * shape[1]}"
                )
            self.inputs[name] = arr.astype(dt.np_type).reshape(-1)
        tv = TensorView(f"{name}_tv", dt, shape)
        self._tv[name] = tv
        self._emit(
            MakeTensorView(
                tv,
                ptr,
                (Const(shape[0]), Const(shape[1])),
                (Const(shape[1]), Const(1)),
                "nd",
                loc=_caller(),
            )
        )
        return GlobalTensor(self, name, dt, shape, data)

    # --- synchronisation -----------------------------------------------------------------

    def set_flag(self, src: str, dst: str, event_id: int) -> None:
        src, dst = _pipe_name(src), _pipe_name(dst)
        eid = int(event_id)
        here = len(self._stmts)
        self._pool(src, dst).open[eid] = here
        self._manual_known[(src, dst, eid)] = (self._clocks.passed(self._section, src), (src, here))
        self._emit(self._intern(SetFlag(src, dst, eid, loc=_caller())))

    def wait_flag(self, src: str, dst: str, event_id: int) -> None:
        src, dst = _pipe_name(src), _pipe_name(dst)
        eid = int(event_id)
        pool = self._pool(src, dst)
        start = pool.open.pop(eid, None)
        here = self._emit(self._intern(WaitFlag(src, dst, eid, loc=_caller())))
        known, own = self._manual_known.pop((src, dst, eid), ({}, None))
        self._clocks.join(self._section, dst, known, own)
        pool.waited(eid, here, start)

    def pipe_barrier(self, pipe: str) -> None:
        pipe = _pipe_name(pipe)
        self._emit(self._intern(Barrier(pipe, loc=_caller())))
        if pipe == "PIPE_ALL":
            self._clocks.drain(self._section, len(self._stmts) - 1)

    def TSYNC(self, *events_or_pipes: Event | str, on: str | None = None) -> None:
        """C++ ``TSYNC``: a pipe name drains that pipe (``TSYNC<Op>()`` = pipe_barrier);
        RecordEvent tokens are waited on by pipe ``on`` before its next instruction."""
        loc = _caller()
        for x in events_or_pipes:
            if isinstance(x, Event):
                if on is None:
                    raise UserError(f"{loc}: TSYNC(event) needs on=PIPE to name the waiting pipe")
                self._wait(x, _pipe_name(on), loc)
            else:
                self._emit(self._intern(Barrier(_pipe_name(x), loc=loc)))

    def set_valid(self, tile: Tile, rows: int, cols: int) -> Event:
        """Set a dynamic tile's valid region (``pto.set_validshape``)."""
        self._emit(SetValidShape(tile, Const(int(rows)), Const(int(cols)), loc=_caller()))
        return Event(self, len(self._stmts) - 1, "PIPE_S")

    # --- instructions --------------------------------------------------------------------

    def _intern(self, stmt):
        """Statements are immutable: one issued from the same line with the same operands
        (a Python loop) shares its object, which lets the engine cache its work per object."""
        return self._interned.setdefault((stmt, stmt.loc), stmt)

    def _flag(self, cls, src, dst, eid, loc):
        """The interned ``cls(src, dst, eid)`` issued from ``loc``, built only the first time
        (a loop issues the same few flags from one line over and over)."""
        key = (cls, src, dst, eid, loc)
        stmt = self._built.get(key)
        if stmt is None:
            stmt = self._built[key] = self._intern(cls(src, dst, eid, loc=loc))
        return stmt

    def _emit(self, stmt) -> int:
        stmts = self._stmts
        stmts.append(stmt)
        return len(stmts) - 1

    def _operand(self, value, dt):
        if isinstance(value, Tile):
            return value
        if isinstance(value, GlobalTensor):
            value = value.view()
        if isinstance(value, View):
            return self._part_view(value)
        if isinstance(value, (bool, np.bool_)):
            return Const(bool(value), "i1")
        if isinstance(value, (int, np.integer)):
            return Const(int(value), dt.name if dt is not None else "index")
        if isinstance(value, (float, np.floating)):
            return Const(float(value), dt.name if dt is not None and dt.is_float else "f32")
        raise UserError(f"unsupported operand {value!r} ({type(value).__name__})")

    def _part_view(self, v: View) -> PartView:
        row, col = (x.scalar if isinstance(x, Index) else Const(x) for x in (v.row, v.col))
        # a view is defined where it is first used: per section, since units run only theirs
        key = (v.tensor.name, row, col, v.rows, v.cols, self._section)
        pv = self._views.get(key)
        if pv is None:
            pv = PartView(self._fresh(f"{v.tensor.name}_v"), v.tensor.dtype, (v.rows, v.cols))
            self._views[key] = pv
            self._emit(
                PartitionView(
                    pv,
                    self._tv[v.tensor.name],
                    (row, col),
                    (Const(v.rows), Const(v.cols)),
                    loc=_caller(),
                )
            )
        return pv

    def instr(self, name: str, *operands: Any, **attrs: Any) -> Event:
        """Issue opcode ``name``: outs first, then ins, then RecordEvent tokens to wait on."""
        return self._instr(name, operands, attrs)

    def _instr(self, name: str, operands: tuple, attrs: dict) -> Event:
        # called from instr() or an opcode method: the user's frame is one further out
        loc = _caller(3)
        section = self._section
        # A loop issues the same call from one line over and over: what the call as written
        # (its operands, GM windows by tensor and offsets, scalars by type and value) made
        # before, statement and pipe, is looked up first, before any IR is built. The line
        # and the tiles go in by identity (their value hashes are Python calls): the
        # statement the key maps to holds both, so no other object takes their ids while
        # the entry lives, and an equal object under another id only misses this cache
        # (``_build_instr`` then finds the statement by value).
        key: list | None = [name, section, id(loc)]
        events = None
        tile_ids = self._tile_ids
        for o in operands:
            t = type(o)
            if t is Event:
                if events is None:
                    events = [o]
                else:
                    events.append(o)
            elif t is Tile:
                i = id(o)
                if i not in tile_ids:  # on every call: tfree may
                    self._not_mine(o, _opcode(name).name)  # have given it back since
                if key is not None:
                    key.append(i)
            elif key is None:
                continue
            elif t is View:
                row, col = o.row, o.col
                key.append(
                    (
                        o.tensor,
                        row.scalar if type(row) is Index else row,
                        col.scalar if type(col) is Index else col,
                        o.rows,
                        o.cols,
                    )
                )
            elif t in FLOATS:
                # by bit pattern: -0.0 == 0.0 and NaN payloads would share a statement
                key.append((t, float_bits(o)))
            elif t in SCALARS or t is GlobalTensor:
                key.append((t, o))
            else:
                key = None
        if attrs:
            if "wait" in attrs:
                events = (events or []) + list(attrs.pop("wait") or ())
            if key is not None and attrs:
                key.append(tuple(sorted(attrs.items())))
        found: tuple | None
        if key is not None:
            found = tuple(key)
            hit = self._issued.get(found)
        else:
            found = hit = None
        if hit is None:
            hit = self._build_instr(name, operands, attrs, loc)
            if found is not None:
                self._issued[found] = hit
        stmt, pipe = hit
        if events is not None:
            for ev in events:
                self._wait(ev, pipe, loc)
        stmts = self._stmts
        stmts.append(stmt)
        # Event(self, index, pipe), without the call: one token per instruction
        ev = _new_event(Event)
        ev.kernel, ev.index, ev.pipe = self, len(stmts) - 1, pipe
        ev.section, ev.waited = section, ()
        clocks = self._clocks
        ev.known = clocks.snaps.get((section, pipe)) or clocks.passed(section, pipe)
        return ev

    def _build_instr(self, name: str, operands: tuple, attrs: dict, loc) -> tuple:
        """The statement and pipe of an instruction not issued this way before: operands
        turned into IR (a GM window's view is defined here on its first use)."""
        spec = _opcode(name)
        ops = [o for o in operands if type(o) is not Event]
        if isinstance(attrs.get("precisionType"), str):
            # precisionType="high_precision": the op's precision mode (sim.isa.precision)
            kind = kind_for(spec.name) or "precision_mode"
            try:
                attrs["precisionType"] = parse_precision(f"#pto<{kind} {attrs['precisionType']}>")
            except ValueError as e:
                raise UserError(f"{spec.name}: precisionType: {e}") from None
        n_out = _N_OUT.get(spec.name)
        if n_out is None:  # optional outs (T?) are IR only
            n_out = _N_OUT[spec.name] = sum(not t.endswith("?") for t in spec.outs.split())
        if len(ops) < n_out:
            raise UserError(f"{spec.name}: expected {n_out} destination operand(s) first")
        outs, ins = ops[:n_out], ops[n_out:]
        for o in ops:
            if type(o) is Tile and id(o) not in self._tile_ids:
                self._not_mine(o, spec.name)
        dt = None
        if spec.name != "TEXTRACT":
            for o in ops:
                if type(o) is Tile:
                    dt = o.dtype
                    break
        outs_ir = tuple(o if type(o) is Tile else self._operand(o, dt) for o in outs)
        ins_ir = tuple(o if type(o) is Tile else self._operand(o, dt) for o in ins)
        out_locs = [o.loc if type(o) is Tile else None for o in outs_ir]
        in_locs = [o.loc if type(o) is Tile else None for o in ins_ir]
        pipe = spec.pipe(out_locs, in_locs)
        key = (spec.name, outs_ir, ins_ir, tuple(sorted(attrs.items())) if attrs else (), loc)
        stmt = self._built.get(key)  # the statement this line issued before, if any
        if stmt is None:
            stmt = self._built[key] = self._intern(
                Instr(spec.name, outs_ir, ins_ir, attrs, loc=loc)
            )
        if spec.name == "TASSIGN":  # once per distinct statement: the static check's
            self._placing[id(stmt)] = stmt  # question, answered without a walk
        return stmt, pipe

    def _not_mine(self, tile: Tile, what: str) -> None:
        """A tile operand this kernel does not hold: freed by ``tfree``, or another's."""
        freed = self._freed.get(id(tile))
        if freed is not None:
            raise UserError(
                f"{_caller()}: {what}: tile %{tile.name} was given back to its "
                f"FIFO by tfree at {freed}; its slot may already hold the next "
                f"tile: tpop again"
            )
        raise UserError(
            f"{_caller()}: {what}: tile %{tile.name} was not declared in kernel "
            f"{self.name} (a tile of another kernel?); declare it with this "
            f"kernel's tile()"
        )

    def _wait(self, ev: Event, pipe: str, loc) -> None:
        if type(ev) is not Event or ev.kernel is not self:
            if not isinstance(ev, Event) or ev.kernel is not self:
                raise UserError(f"{loc}: {ev!r} is not an event of kernel {self.name}")
        there, section = ev.section, self._section
        if there is not None and section is not None and there != section:
            raise UserError(
                f"{loc}: {ev!r} was issued in section.{there}; a token cannot be "
                f"waited on in section.{section} (another unit): use a FIFO"
            )
        waited = ev.waited
        if pipe in waited:
            return
        ev.waited = waited + (pipe,)
        src = ev.pipe
        if src == pipe:
            self._emit(self._intern(Barrier(pipe, loc=loc)))
            return
        stmts = self._stmts
        here = len(stmts)
        known = ev.known
        passed = known.get(pipe, -1)
        if known["*"] > passed:
            passed = known["*"]
        pair = self._pairs.get((section, src, pipe))
        if pair is None:
            pair = self._pair(section, src, pipe)
        pool, mine, key = pair
        index = ev.index
        eid = self._free_id(pool, src, pipe, index, here, loc, passed)
        flags = pool.flags.get((eid, id(loc)))  # by identity: the flags hold the line
        if flags is None:
            flags = pool.flags[(eid, id(loc))] = (
                self._flag(SetFlag, src, pipe, eid, loc),
                self._flag(WaitFlag, src, pipe, eid, loc),
            )
        after_of = self._after
        if index in after_of:
            self._more_at.append(index)
            self._more_flags.append(flags[0])
        else:
            after_of[index] = flags[0]
        stmts.append(flags[1])
        # self._clocks.join(section, pipe, known, (src, index)), inline: one per token
        clocks = self._clocks
        learnt = False
        joined = clocks.joined
        if joined.get(key) is not known:  # a snapshot never changes: joined once is enough
            joined[key] = known
            get = mine.get
            for p, i in known.items():
                if get(p, -1) < i:
                    mine[p] = i
                    learnt = True
        if mine.get(src, -1) < index:
            mine[src] = index
            learnt = True
        if learnt:  # else the pipe's snapshot still holds
            clocks.snaps.pop(key, None)
        pool.last[eid] = here

    def _pair(self, section, src: str, dst: str) -> tuple:
        """What a wait of ``dst`` on a token of ``src`` in ``section`` updates: the pair's
        id pool, ``dst``'s clock (``_PipeClocks.known``, one dict for good) and its key."""
        key = (section, dst)
        mine = self._clocks.known.get(key)
        if mine is None:
            mine = self._clocks.known[key] = {}
        pair = self._pairs[(section, src, dst)] = (self._pool(src, dst), mine, key)
        return pair

    def _pool(self, src: str, dst: str) -> _IdPool:
        pool = self._pools.get((src, dst))
        if pool is None:
            pool = self._pools[(src, dst)] = _IdPool()
        return pool

    def _free_id(self, pool, src, dst, start, end, loc, dst_passed) -> int:
        """Lowest event id of (src, dst) not pending anywhere in [start, end] whose last
        wait has surely happened when the new set fires: the producer's pipe ``src`` has
        waited, directly or through other pipes, for ``dst`` to pass statement
        ``dst_passed`` or later. Program order alone is not enough: ``src`` runs ahead of
        ``dst``, so an id whose wait is earlier in the program may still be pending when
        the next set of the same id fires (a set while pending, which a one-bit flag
        loses). When no id is sure (``src`` never waits for ``dst``), the free id waited
        longest ago: round robin, as the C++ library's ids go; ``check --races`` reports
        a set that still finds it pending."""
        fallback = None
        opened, busy_of, last_of = pool.open, pool.busy, pool.last
        for eid in range(_POOL):
            if opened:
                open_at = opened.get(eid)
                if open_at is not None and open_at <= end:
                    continue
            busy = busy_of[eid]
            starts = busy.starts
            if starts:  # busy.free(start, end), inline: most tokens try a few ids
                i = _bisect_right(starts, end)
                if i and busy.reach[i - 1] >= start:
                    continue
            last = last_of[eid]
            if last is None or last <= start and last <= dst_passed:
                if starts and starts[-1] > start:
                    busy.add(start, end)
                else:  # busy.add(start, end) in program order, inline
                    reach = busy.reach
                    starts.append(start)
                    reach.append(end if not reach or end > reach[-1] else reach[-1])
                return eid
            if fallback is None or last < fallback[0]:
                fallback = (last, eid)
        if fallback is not None:
            busy_of[fallback[1]].add(start, end)
            return fallback[1]
        raise UserError(
            f"{loc}: event pool exhausted: all 8 event ids of {src} -> {dst} are "
            f"pending between statement {start} and {end}; wait on some events "
            f"earlier or use fewer outstanding tokens"
        )

    # --- output --------------------------------------------------------------------------

    def program(self) -> Program:
        """The kernel as a ``Program``: the same object until something is added to the
        kernel, so what a run keeps with its program (auto mode's prepared copy, layout,
        plans) serves the next ``simulate(kernel)`` too. Statements, arguments and unit ids
        are only ever appended (a token's set_flag goes in with the wait that needs it), so
        their counts tell whether the program is still the one built."""
        state = (self.name, len(self._args), len(self._ids), len(self._stmts))
        if self._program is not None and self._program[0] == state:
            return self._program[1]
        program = self._build_program()
        note(program, HAND_PLACEMENTS, tuple(self._placing.values()))
        self._program = (state, program)
        return program

    def _build_program(self) -> Program:
        body = self._prologue()
        outer: list | None = None
        after_of = self._after
        more: dict = {}
        for i, flag in zip(self._more_at, self._more_flags, strict=True):
            more.setdefault(i, []).append(flag)
        for i, stmt in enumerate(self._stmts):
            if type(stmt) is tuple:  # a section marker
                if stmt[0] == "section":
                    outer, body = body, []
                else:
                    assert outer is not None  # a section's end comes after its start
                    outer.append(Section(stmt[1], tuple(body)))
                    body = outer
                continue
            body.append(stmt)
            after = after_of.get(i)
            if after is not None:
                body.append(after)
                if i in more:
                    body.extend(more[i])
        return Program((Function(self.name, tuple(self._args), tuple(body)),), self.name)


def _method(name: str) -> Callable[..., Event]:
    def method(self: Kernel, *operands: Any, **attrs: Any) -> Event:
        return self._instr(name, operands, attrs)

    method.__name__ = name
    method.__qualname__ = f"Kernel.{name}"
    spec = OPCODES[name]
    method.__doc__ = (
        f"Issue {name} ({spec.ir_name}): outs [{spec.outs}] then ins "
        f"[{' | '.join(spec.ins)}], then RecordEvent tokens to wait on."
    )
    return method


for _name in OPCODES:
    setattr(Kernel, _name, _method(_name))
