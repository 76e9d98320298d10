"""The interpreter: runs a program in program order and issues its items to the pipes.

It owns the architectural state — global-memory arrays, the bytes of every on-chip
buffer, each tile's address and valid region, scalar SSA values — and for every
statement it (1) resolves operands, (2) checks the instruction against the target
profile, (3) executes the functional unit on the real bytes when functional simulation is
on, and (4) yields an ``Issued`` item carrying the instruction's timing plan. The SimPy
engine consumes the items lazily, so memory stays flat however long the kernel runs.

Functional effects happen in program order, which is the order the synchronised program
guarantees; a program with a missing flag still computes the ordered result here while
its timeline shows the overlap.
"""

from __future__ import annotations

from operator import is_

import numpy as np

from sim.base.errors import SimulationError, UserError
from sim.engine.access import instr_accesses
from sim.engine.comm import CommUnit
from sim.engine.control import ControlFlow
from sim.engine.ffts import CrossCore
from sim.engine.gmviews import GlobalViews
from sim.engine.items import BARRIER, OP, SCALAR, SET, WAIT, Issued
from sim.engine.operands import OperandSites, instr_where
from sim.engine.placement import place_tiles
from sim.engine.scan import kept
from sim.engine.shapes import TAKES_VALID, InstrShapes
from sim.engine.tilestate import TileState
from sim.engine.units import BOTH, UnitSpec
from sim.engine.xunit import CrossUnit
from sim.isa.opcodes import OPCODES, PIPES
from sim.isa.program import (
    Alloc,
    Barrier,
    Const,
    Instr,
    MakeTensorView,
    PartitionView,
    PartView,
    Scalar,
    SetFlag,
    SetValidShape,
    WaitFlag,
)
from sim.isa.tile import Tile
from sim.isa.verify import verify_instr
from sim.placement.bounds import address_problems
from sim.timing import lower

__all__ = ["Interpreter"]

_SYNC_PIPES = set(PIPES) | {"PIPE_ALL"}


_MAX_KEPT = 1 << 16  # entries each cache below holds before it starts again
_ROLES: dict = {}  # (instruction, its constants' text) -> _operand_roles
_FORMS: dict = {}  # instruction -> _form
_PLANS: dict = {}  # (shape, plan) of a verified instruction's form in a state: _plan


def _operand_roles(instr: Instr) -> tuple:
    """(spec, pipe, source tiles, tmp tile, operand text, tiles) of an instruction: what
    depends on it alone, worked out once per process (runs of a sweep, units of a chip).
    Equal constants may print differently (1 and 1.0 of type f32: ``Const``), so their
    text is part of the key: the operand text is the instruction's own."""
    key = (instr, *[repr(o.value) for o in (*instr.outs, *instr.ins) if type(o) is Const])
    roles = _ROLES.get(key)
    if roles is None:
        spec = OPCODES.get(instr.opcode)
        if spec is None:
            raise UserError(f"{instr.loc or 'instruction'}: unknown opcode {instr.opcode!r}")
        out_locs = [o.loc if isinstance(o, Tile) else None for o in instr.outs]
        in_locs = [o.loc if isinstance(o, Tile) else None for o in instr.ins]
        tiles_in = [o for o in instr.ins if isinstance(o, Tile)]
        n_req = max(sig.split().count("T") for sig in spec.ins)
        srcs, tmp = tiles_in[:n_req], (tiles_in[n_req] if len(tiles_in) > n_req else None)
        tiles = tuple(o for o in instr.outs + instr.ins if isinstance(o, Tile))
        if len(_ROLES) >= _MAX_KEPT:
            _ROLES.clear()
        roles = _ROLES[key] = (
            spec,
            spec.pipe(out_locs, in_locs),
            srcs,
            tmp,
            instr.operand_text,
            tiles,
        )
    return roles


def _form(instr: Instr) -> tuple:
    """An instruction without its operands' names: opcode, attributes, number of outputs,
    each operand's tile type or kind. With its tiles' states, the target and
    ``Interpreter._plan_facts`` it is what the shape reads, so the other buffer of a
    double-buffered loop or a load from another GM window shares its plan."""
    form = _FORMS.get(instr)
    if form is None:
        if len(_FORMS) >= _MAX_KEPT:
            _FORMS.clear()
        form = _FORMS[instr] = (
            instr.opcode,
            instr.attrs,
            len(instr.outs),
            *[o.type if isinstance(o, Tile) else type(o) for o in (*instr.outs, *instr.ins)],
        )
    return form


_COPIES = 8  # copies of an item kept per statement (by accesses and GM window)


class Interpreter(
    GlobalViews, CrossUnit, CrossCore, CommUnit, ControlFlow, OperandSites, InstrShapes
):
    """Executes ``program`` on ``target``; iterate ``issue()`` to get the pipe items.

    On a chip, each unit has its own interpreter: ``spec`` says which unit it is (its
    ids and start function), ``chip`` is the state the units share (cross-unit flags,
    FIFO data), ``gm`` the GM state every unit reads and writes (arrays, filled pages,
    dtypes: three dicts); ``gm_windows`` attaches
    each TLOAD / TSTORE's GM window to its item (for an L2 model); ``sync_items`` is a
    dict of set / wait flag and barrier items shared with the other units of its kind (their
    static trace rows then in one table, ``sim.engine.record.Recorder``).
    """

    def __init__(
        self,
        program,
        target,
        *,
        inputs=None,
        functional=True,
        strict=True,
        seed=0,
        track_accesses=False,
        verify=True,
        spec=None,
        chip=None,
        gm=None,
        gm_windows=False,
        placed=None,
        sync_items=None,
        access_caches=None,
        gm_pipes=None,
    ):
        self.program = program
        self.spec = spec or UnitSpec(0, "AIV0", BOTH, program.main.name, 0, 1, 0, 1)
        self.fn = program.function(self.spec.function)
        self.target = target
        self.functional = functional
        self.track_accesses = track_accesses  # attach byte ranges to items (race checks)
        # what sim.engine.access works out, shared by the units of a chip
        # (``access_caches=``): (tile, state, write) -> its Access; a GM view's window
        # shape -> (that shape, its Access by start); id(instr) -> the operands it touches
        self.tile_accesses, self.gm_accesses, self.access_operands = (
            access_caches if access_caches is not None else ({}, {}, {})
        )
        # GM array -> [the pipes that touch it, whether one writes], instead of each GM
        # access: a unit alone whose race check is a proof (sim.engine.access.GmShared)
        self.gm_pipes = gm_pipes
        self._x_items: dict = {}  # the cube<->vector FIFOs' sync items (sim.engine.xunit)
        self.strict = strict
        self.seed = seed
        self.inputs = dict(inputs or {})
        # GM arrays, their filled pages and dtypes: shared by the units of a chip
        self.gm, self._filled, self._gm_dtypes = ({}, {}, {}) if gm is None else gm
        self.chip = chip
        self._gm_windows = gm_windows
        # nothing is done per execution of an instruction beyond handing its item over
        self._static_items = not (track_accesses or gm_windows)
        self._reserved: dict = {}  # reserve_buffer results: name -> (base, size)
        self._fifos: dict = {}  # initialised cube<->vector FIFOs by id
        self._pops: dict = {}  # tiles popped so far per FIFO (slot rotation)
        self._pop_states: dict = {}  # (tile, slot address) -> its state when popped there
        self._tallocs: dict = {}  # slots taken by talloc_* and not pushed yet
        self._fifo_moves: dict = {}  # GM-path pushes / pops so far per FIFO end (slot rotation)
        self._scalar_reads: set[str] = set()  # random-filled GM arrays load_scalar read
        self.values: dict[str, object] = {}
        self.views: dict[str, tuple] = {}
        self._ptr_offsets: dict[str, int] = {}
        self._view_layouts: dict[str, str] = {}  # view name -> GM layout (nd, dn, nz)
        self.tiles: dict[Tile, TileState] = {}
        self.buffers: dict[str, np.ndarray] = {}
        self.seq = 0
        self._static: dict = {}
        self._by_value: dict = {}
        self._plans: dict = {}
        # kept with the program, for all its units and runs: one number per distinct
        # instruction, and the plans of the instructions verified clean in a tile state
        # (a plan depends on the instruction, its tiles' states, the target and the
        # placement, itself a function of the program and target)
        self._keys: dict = kept(program, ("keys",), dict)
        self._clean_plans: dict = kept(program, ("plans", target), dict)
        self._nd_transfers: set = set()  # statement keys of transfers of N-D GM views
        # id(statement) -> its Issued item (checked once); (id, event id) when the event
        # id is a run-time value
        self._sync_items: dict = {}
        # (kind, pipes, event id, loc) -> the item of equal set / wait flags and barriers;
        # a chip shares it between the units of a kind and the runs of a program
        self._sync_alike: dict = {} if sync_items is None else sync_items
        # id(arith statement) -> its compiled function: kept with the program, for every
        # unit and run of it (an unrolled kernel runs each statement once per unit)
        self._arith_fns: dict = kept(program, ("arith",), dict)
        # id(arith statement) -> what its operands read (kept with the program too)
        self._arith_reads: dict = kept(program, ("arith reads",), dict)
        self.warnings: dict[str, None] = {}  # verifier warnings, in first-seen order
        self.epoch = 0  # bumped whenever a tile's address or valid region changes
        self.mutations = 0  # ... of those, the changes made to a tile state in place
        self._event_ids = int(target.sync.get("event_ids_per_pipe_pair", 8))
        self._placed = place_tiles(program, target) if placed is None else placed
        sp = self.spec
        self.ids = {
            "get_block_idx": sp.block_idx,
            "get_block_num": sp.block_num,
            "get_subblock_idx": sp.subblock_idx,
            "get_subblock_num": sp.subblock_num,
            **self._rank_ids(),
        }
        self._instr_type = Instr
        self._handlers = {
            Alloc: self._alloc,
            SetValidShape: self._set_valid,
            MakeTensorView: self._make_view,
            PartitionView: self._partition,
            SetFlag: self._flag,
            WaitFlag: self._flag,
            Barrier: self._barrier,
            **self._cross_core_handlers(),
            **self._control_handlers(),
            # last: in a run with ranks it wraps some of the above (sim.engine.comm)
            **self._comm_handlers(),
        }
        self._bind_args()
        self._verify = verify_instr if verify else None
        self._init_operands()

    # --- buffers and scalars ---------------------------------------------------------------

    def _buffer(self, name: str) -> np.ndarray:
        buf = self.buffers.get(name)
        if buf is None:
            buf = self.buffers[name] = np.zeros(self.target.buffer(name).capacity_bytes, np.uint8)
        return buf

    def scalar(self, op):
        if isinstance(op, Const):
            return op.value
        if isinstance(op, Scalar):
            try:
                return self.values[op.name]
            except KeyError:
                raise UserError(f"scalar %{op.name} is used before it has a value") from None
        return op

    # --- tiles ---------------------------------------------------------------------------

    def _state(self, tile: Tile, where: str) -> TileState:
        try:
            return self.tiles[tile]
        except KeyError:
            raise UserError(f"{where}: tile %{tile.name} is used before it is allocated") from None

    def valid_of(self, tile):
        st = self.tiles.get(tile)
        if st is None:
            return tile.type.valid_rows, tile.type.valid_cols
        return st.rows, st.cols

    # --- the walk ------------------------------------------------------------------------

    def issue(self):
        """Generator of ``Issued`` items, in program order (the walk of the function's
        body itself: one generator less for every item to pass through)."""
        return self._block(self.fn.body)

    def _next(self) -> int:
        self.seq += 1
        return self.seq - 1

    def _check_address(self, tile: Tile, addr: int, where: str) -> None:
        """A hand-placed address against the buffer map: capacity, alignment, reserved
        (the rule of ``ptosim check``, ``sim.placement.bounds``, for addresses known only
        at run time)."""
        found = address_problems(tile, addr, self.target)
        if found:
            raise SimulationError(f"{where}: places {found[0][1]}")

    def _alloc(self, st: Alloc) -> None:
        t = st.tile.type
        addr = self._placed_addr(st.tile)
        if addr is None:
            addr = int(self.scalar(st.addr))
            self._check_address(
                st.tile, addr, f"alloc_tile %{st.tile.name}" + (f" ({st.loc})" if st.loc else "")
            )
        rows = t.valid_rows if st.valid_row is None else int(self.scalar(st.valid_row))
        cols = t.valid_cols if st.valid_col is None else int(self.scalar(st.valid_col))
        self.tiles[st.tile] = TileState(addr, rows, cols)
        self.epoch += 1

    def _set_valid(self, st: SetValidShape) -> Issued:
        where = f"set_validshape %{st.tile.name}" + (f" ({st.loc})" if st.loc else "")
        s = self._state(st.tile, where)
        rows, cols = int(self.scalar(st.rows)), int(self.scalar(st.cols))
        t = st.tile.type
        if not (0 <= rows <= t.rows and 0 <= cols <= t.cols):
            self.data_error(
                f"{where}: valid region must lie within the {t.rows}x{t.cols} "
                f"capacity, found {rows}x{cols}"
            )
            rows, cols = min(max(rows, 0), t.rows), min(max(cols, 0), t.cols)
        s.rows, s.cols = rows, cols
        self.epoch += 1
        self.mutations += 1
        c = int(self.target.scalar.get("set_valid_shape_cycles", 1))
        self._next()
        return Issued(
            SCALAR,
            "PIPE_S",
            "set_validshape",
            c,
            c,
            text=f"%{st.tile.name} <- {rows}x{cols}",
            source=str(st.loc or ""),
        )

    def _flag(self, st) -> Issued:
        # checked once per statement (and event id, when that is a run-time value), and
        # equal statements issue one item: auto mode inserts a statement per point
        ev = st.event
        key: int | tuple
        if type(ev) is not Scalar:
            key = id(st)
        else:
            ev = self.scalar(ev)
            key = (id(st), ev)
        item = self._sync_items.get(key)
        if item is None:
            same = (type(st), st.src, st.dst, ev, st.loc)
            item = self._sync_alike.get(same)
            if item is None:
                item = self._sync_alike[same] = self._flag_item(st)
            self._sync_items[key] = item
        self.seq += 1
        return item

    def _flag_item(self, st) -> Issued:
        where = f"{'set_flag' if type(st) is SetFlag else 'wait_flag'}" + (
            f" ({st.loc})" if st.loc else ""
        )
        for role, p in (("source pipe", st.src), ("destination pipe", st.dst)):
            if p not in PIPES:
                raise UserError(f"{where}: {role}: expected one of {', '.join(PIPES)}, found {p!r}")
        ev = int(self.scalar(st.event))
        if not 0 <= ev < self._event_ids:
            raise UserError(f"{where}: event id: expected 0..{self._event_ids - 1}, found {ev}")
        kind, pipe = (SET, st.src) if type(st) is SetFlag else (WAIT, st.dst)
        return Issued(
            kind,
            pipe,
            kind,
            flag=(st.src, st.dst, ev),
            text=f"{st.src}->{st.dst}#{ev}",
            source=str(st.loc or ""),
        )

    def _barrier(self, st: Barrier) -> Issued:
        item = self._sync_items.get(id(st))
        if item is None:
            same = (Barrier, st.pipe, st.loc)
            item = self._sync_alike.get(same)
            if item is None:
                if st.pipe not in _SYNC_PIPES:
                    raise UserError(
                        f"pipe_barrier ({st.loc}): pipe: expected one of "
                        f"{', '.join(sorted(_SYNC_PIPES))}, found {st.pipe!r}"
                    )
                item = self._sync_alike[same] = Issued(
                    BARRIER, st.pipe, "pipe_barrier", text=st.pipe, source=str(st.loc or "")
                )
            self._sync_items[id(st)] = item
        self.seq += 1
        return item

    # --- instructions --------------------------------------------------------------------

    def _static_info(self, instr: Instr):
        """What never changes about an instruction, plus its source text (per object)."""
        hit = self._static.get(id(instr))  # statements live as long as the program
        if hit is not None:
            return hit
        info = self._by_value.get(instr)  # an equal instruction issued elsewhere
        if info is None:
            # the cell caches (state epoch, (shape, plan)) for every equal instruction
            key = self._keys.get(instr)
            if key is None:
                key = self._keys[instr] = len(self._keys)
            info = self._by_value[instr] = (*_operand_roles(instr), key, [-1, None, None, None])
        # per object: its source text and [its Issued item for the current plan, in
        # race-checked runs and under an L2: (that item, its copies by accesses and GM
        # window), (epoch, the bindings of its GM views, the copy handed over last),
        # (its GM view names, and for one on tiles only its copies by tile states)]
        # (Interpreter._copy)
        hit = self._static[id(instr)] = (*info, str(instr.loc or ""), [None, None, None, None])
        return hit

    def _where(self, seq, instr) -> str:
        return instr_where(seq, instr.opcode, str(instr.loc or ""))

    def _instr(self, instr: Instr) -> Issued:
        info = self._static.get(id(instr)) or self._static_info(instr)
        seq = self.seq
        self.seq = seq + 1
        cell, mine = info[7], info[9]
        if cell[0] != self.epoch and cell[2] is not None:
            self._still(cell, mine, info[5])
        if cell[0] == self.epoch:
            if self._static_items:  # same tile state: same item
                item = mine[0]
                if item is not None and item.plan is cell[1][1]:
                    if self.functional:
                        self._execute(
                            instr,
                            info[0],
                            info[2],
                            info[3],
                            info[5],
                            info[6],
                            cell[1][0],
                            seq,
                            info[8],
                        )
                    return item
            else:  # race checks, L2 windows: the copy handed over last holds while
                # the tile states and the GM views it was made under do
                last = mine[2]
                if (
                    last is not None
                    and last[0] == self.epoch
                    and last[2].plan is cell[1][1]
                    and (not last[1] or all(map(is_, map(self.views.get, mine[3][0]), last[1])))
                ):
                    if self.functional:
                        self._execute(
                            instr,
                            info[0],
                            info[2],
                            info[3],
                            info[5],
                            info[6],
                            cell[1][0],
                            seq,
                            info[8],
                        )
                    return last[2]
        spec, pipe, srcs, tmp, text, tiles, key, cell, source, mine = info
        if spec.name == "TASSIGN":
            return self._tassign(instr, seq, self._where(seq, instr), text)
        if cell[0] != self.epoch:
            if spec.family in TAKES_VALID and srcs:
                self._take_valid(instr, srcs[0], seq)
            cell[1] = self._plan(instr, spec, pipe, srcs, tiles, key, seq)
            # a transfer of an N-D view is planned at every execution: its outer extent,
            # which sets its copies, may change while its tiles do not
            nd = key in self._nd_transfers
            cell[0] = -1 if nd else self.epoch
            if nd:
                cell[2] = None
            else:
                states = tuple(map(self.tiles.__getitem__, tiles))
                cell[2] = (self.mutations, states)
                # the plans by tile states (the same objects: a FIFO's consumer holds one
                # state per slot), while no state changes in place
                memo = cell[3]
                if memo is None or memo[0] != self.mutations or len(memo[1]) >= _COPIES:
                    memo = cell[3] = (self.mutations, {})
                memo[1][states] = cell[1]
        shape, plan = cell[1]
        if self.functional:
            self._execute(instr, spec, srcs, tmp, tiles, key, shape, seq, source)
        item = mine[0]  # one item per statement and plan
        if item is None or item.plan is not plan:
            item = mine[0] = Issued(
                OP,
                pipe,
                instr.opcode,
                plan.cold_cycles,
                plan.warm_cycles,
                plan.breaks_stream,
                None,
                plan,
                text,
                source,
            )
        gm_window = self._gm_windows and spec.family in _GM_FAMILIES
        if self.track_accesses or gm_window:
            item = self._copy(instr, spec, srcs, tmp, item, cell, mine, gm_window)
        return item

    def _copy(self, instr, spec, srcs, tmp, item, cell, mine, gm_window) -> Issued:
        """The copy of ``item`` carrying this execution's accesses and GM window (race
        checks, an L2). One copy per statement, plan, accesses and window: most
        executions touch the bytes and window the previous one did, and a chip's
        dispatcher queues its whole stream ahead of the pipes (an item per execution
        would be kept per queued instruction)."""
        # what a copy depends on besides its plan: the states of its tiles (the same
        # objects, none changed in place) and the GM views it touches (their names, and
        # for an instruction on tiles only, its copies by tile states: a FIFO slot's)
        static = mine[3]
        if static is None:
            names = tuple(o.name for o in (*instr.outs, *instr.ins) if isinstance(o, PartView))
            static = mine[3] = (names, None if names else {})
        names, by_states = static
        views = tuple(map(self.views.get, names)) if names else ()
        key = (
            (self.mutations, cell[2][1]) if by_states is not None and cell[2] is not None else None
        )
        copy = by_states.get(key) if key is not None else None
        if copy is None or copy.plan is not item.plan:
            accesses = (
                instr_accesses(self, instr, srcs, tmp, item.pipe) if self.track_accesses else None
            )
            window = (
                self._window(instr.ins[0] if spec.family == "load" else instr.outs[0])
                if gm_window
                else None
            )
            # [the item, its copies by accesses (identities: a copy holds its accesses,
            # so they stay theirs) and window]: equal accesses share a copy although
            # their tile states are new objects
            kept = mine[1]
            if kept is None or kept[0] is not item:
                kept = mine[1] = [item, {}]
            k = (tuple(map(id, accesses)) if accesses else (), window)
            copy = kept[1].get(k)
            if copy is None:
                if len(kept[1]) >= _COPIES:
                    kept[1].clear()
                copy = kept[1][k] = item.copy()
                copy.accesses, copy.gm = accesses, window
            if key is not None:
                if len(by_states) >= _COPIES:
                    by_states.clear()
                by_states[key] = copy
        mine[2] = (self.epoch, views, copy)
        return copy

    def _still(self, cell, mine, tiles) -> None:
        """The epoch moved on since ``cell`` was planned (another tile changed: a FIFO pop,
        a subview). If this instruction's tiles hold the same states, none changed in
        place, its plan and the copy ``mine`` handed over last hold now too; if they hold
        states it was planned in before, that plan does."""
        mutations, states = cell[2]
        now = tuple(map(self.tiles.__getitem__, tiles))
        if mutations == self.mutations and all(map(is_, now, states)):
            last = mine[2]
            if last is not None and last[0] == cell[0]:
                mine[2] = (self.epoch, *last[1:])
            cell[0] = self.epoch
            return
        memo = cell[3]
        if memo is not None and memo[0] == self.mutations:
            planned = memo[1].get(now)
            if planned is not None:
                cell[0], cell[1], cell[2] = self.epoch, planned, (self.mutations, now)

    def _window(self, view: PartView) -> tuple:
        """(GM array, base, rows, cols, row stride, col stride, itemsize) of a view."""
        ptr, base, sizes, strides = self.views[view.name]
        rows, cols = (sizes[-2], sizes[-1]) if len(sizes) >= 2 else (1, sizes[-1])
        srow, scol = (strides[-2], strides[-1]) if len(strides) >= 2 else (0, strides[-1])
        return (ptr.name, base, rows, cols, srow, scol, ptr.dtype.size_bytes)

    def _plan(self, instr, spec, pipe, srcs, tiles, key, seq):
        """(shape, plan) of an instruction in the current tile state; verified once."""
        # Cost and legality depend only on the instruction and its tiles' addresses and
        # valid regions, so they are computed once per distinct state.
        try:
            sig = (key, *[(s.addr, s.rows, s.cols) for s in map(self.tiles.__getitem__, tiles)])
        except KeyError:
            missing = next(t for t in tiles if t not in self.tiles)
            raise UserError(
                f"{self._where(seq, instr)}: tile %{missing.name} is used before it is allocated"
            ) from None
        if self._nd_view(instr, spec):
            self._nd_transfers.add(key)
            sig += (self._plan_facts(instr, spec, srcs),)
        cached = self._plans.get(sig)
        if cached is None:
            cached = self._clean_plans.get(sig)  # another unit's or run's, verified clean
            if cached is None:
                cached = self._new_plan(instr, spec, pipe, srcs, sig, seq)
            self._plans[sig] = cached
        return cached

    def _new_plan(self, instr, spec, pipe, srcs, sig, seq):
        """Verify an instruction in a tile state and work out its (shape, plan)."""
        where = self._where(seq, instr)
        if self._verify is None:
            shape = self._shape(instr, spec, srcs, where)
            return shape, lower(shape, pipe, self.target)
        warned = False
        for w in self._verify(instr, self.target, self.valid_of, where) or ():
            self.warnings.setdefault(w, None)
            warned = True
        # kept for every run of the process: a verified instruction has the operand kinds
        # _plan_facts reads
        known = (_form(instr), self.target, sig[1:], self._plan_facts(instr, spec, srcs))
        cached = _PLANS.get(known)
        if cached is None:
            shape = self._shape(instr, spec, srcs, where)
            cached = (shape, lower(shape, pipe, self.target))
            if len(_PLANS) >= _MAX_KEPT:
                _PLANS.clear()
            _PLANS[known] = cached
        if not warned:  # a warning is each unit's (and run's) to give
            if len(self._clean_plans) >= _MAX_KEPT:
                self._clean_plans.clear()
            self._clean_plans[sig] = cached
        return cached

    def _tassign(self, instr, seq, where, text) -> Issued:
        tile = instr.outs[0]
        addr = int(self.scalar(instr.ins[0]))
        self._check_address(tile, addr, where)
        self._state(tile, where).addr = addr
        self.epoch += 1
        self.mutations += 1
        c = int(self.target.scalar.get("tassign_cycles", 1))
        return Issued(SCALAR, "PIPE_S", "TASSIGN", c, c, text=text, source=str(instr.loc or ""))


_GM_FAMILIES = ("load", "store")
