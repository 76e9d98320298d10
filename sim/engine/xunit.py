"""Cross-unit synchronisation and data: cube<->vector FIFOs and their flags.

**Flags between units.** Units signal each other through counters that live on the chip
(``CrossFlags``), keyed by ``XKey`` tuples that name both ends; a ``Machine`` hands every
set / wait item with such a key to them. A set increments, a wait blocks its pipe until
the counter is positive and takes one. ``[sync] cross_core_flag_cycles`` delays a set's
effect (timing-model.md §7: FFTS latency 0 in Perf-Sim, [silent] on hardware).

**FIFOs** (``pto.aic_initialize_pipe`` / ``aiv_initialize_pipe``, ``tpush_*``,
``tpop_*``, ``tfree_*`` as PTOAS emits them). A FIFO ``id`` of a core has a direction
(``dir_mask`` bit 0: cube -> vector, bit 1: vector -> cube) and, per vector unit, one
channel of ``slots`` slots: the consumer's reserved buffer size / ``slot_size``
(``reserve_buffer`` / ``import_reserved_buffer`` give its address and size), or ``[chip]
fifo_slots`` when no size is known. Each channel counts free slots (the producer waits on
it, the consumer's ``tfree`` returns one) and full slots (the consumer waits on it, the
producer's push adds one). Waits are on the scalar unit (ASSUMPTION: the flags are FFTS
cross-core flags whose wait, ``wait_flag_dev``, stalls instruction issue); a push's
"full" signal is set on the pipe that moved the data, when the move is done; a ``tfree``
is set on the pipe that reads a popped tile (PIPE_V on a vector unit, PIPE_MTE1 on the
cube — ASSUMPTION: the consumer's compute / TEXTRACT).

* cube -> vector (``tpush_to_aiv`` on the AIC, ``tpop_from_aic`` / ``tfree_from_aic``
  on each AIV): ``split = 1`` gives AIV s rows [s·M/2, (s+1)·M/2) of the pushed tile,
  ``split = 2`` columns, ``split = 0`` the whole tile to each (ASSUMPTION: both AIVs
  consume it; a push waits for a free slot in both channels).
* vector -> cube (``tpush_to_aic`` on each AIV, ``tpop_from_aiv`` / ``tfree_from_aiv``
  on the AIC): each AIV pushes its part; the cube's pop waits for both and stacks the
  parts (rows for split 1, columns for split 2; split 0: AIV0's tile).

Data paths (``[chip] fifo_data_path``, programming-model.md §2.1): ``"gm"`` (A2/A3, no
direct path) — the push writes the slot to GM (an Acc tile on PIPE_FIX over L0C->GM, a
vector tile on PIPE_MTE3 over UB->GM) and the pop reads it into the consumer's slot
(PIPE_MTE2, GM->UB or GM->L1, then a hand-off flag to the pipe that reads it); ``"local"``
(A5) — the push writes the consumer's buffer (FIXPIPE L0C->UB, UB->L1) and the pop only
waits. The popped tile lives in the consumer's reserved buffer, slot after slot. Through
GM, a slot is a window of the core's FIFO workspace (slot ``k`` of a FIFO and direction
at element ``k`` x the whole tile's valid elements; each AIV's part where ``split`` puts
it), so the L2 sees a pop read the lines its push wrote and a slot rewritten every block
(``sim.engine.gm``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from sim.base.errors import SimulationError, UserError
from sim.engine.flags import FlagCounters, TimedFifoFlags
from sim.engine.gmslots import push_view, talloc_view
from sim.engine.items import OP, SET, WAIT, Issued
from sim.engine.tilestate import TileState
from sim.isa.program import PartView, PipeOp, Scalar
from sim.isa.tile import Loc, Tile
from sim.timing import Shape, lower

if TYPE_CHECKING:
    from sim.engine.units import UnitSpec
    from sim.isa.program import Program
    from sim.target.model import Target

__all__ = ["XKey", "CrossFlags", "CrossUnit"]


class XKey(tuple):
    """Key of a chip-level flag (a plain tuple key is a unit's own flag)."""

    __slots__ = ()


class CrossFlags(FlagCounters):
    """Counters shared by the units of a chip (the ``shared=`` of every ``Machine``);
    a set takes effect ``latency_cycles`` after it is issued. ``routes`` maps a key class
    to the counters that answer for it (``sim.engine.ffts``: cross-core flags whose wait
    needs sets from several units); other keys are plain counters. On the timed path
    (``timed_path``) the FIFO flags (``XKey``) are kept as set cycles instead."""

    def __init__(self, env, latency_cycles: int = 0):
        super().__init__(env)
        self.latency = int(latency_cycles)
        self.routes: dict = {}
        # told of counters started without a set (race checks)
        self.on_add: Callable[[Any, int], None] | None = None
        self.timed: TimedFifoFlags | None = None

    def timed_path(self) -> tuple:
        """(the FIFO flags as set cycles, their key class, the set latency) for a
        ``Machine`` on the timed path; every unit of the chip then takes its FIFO flags
        from there (the event path's counters no longer see them)."""
        if self.timed is None:
            self.timed = TimedFifoFlags(self.env)
        return self.timed, XKey, self.latency

    def add(self, key, n: int):
        if self.timed is not None and type(key) is XKey:
            self.timed.add(key, n)
            return
        super().add(key, n)
        if self.on_add is not None:
            self.on_add(key, n)

    def set(self, key):
        if self.timed is not None and type(key) is XKey:
            raise SimulationError(f"flag {key!r}: set on the event path of a timed chip")
        if self.latency:
            self.env.process(self._later(key))
        else:
            self.fire(key)

    def _later(self, key):
        yield self.env.timeout(self.latency)
        self.fire(key)

    def fire(self, key):
        route = self.routes.get(type(key)) if self.routes else None
        if route is None:
            return super().fire(key)
        route.fire(key)

    def wait_event(self, key):
        if self.timed is not None and type(key) is XKey:
            raise SimulationError(f"flag {key!r}: waited for on the event path of a timed chip")
        route = self.routes.get(type(key)) if self.routes else None
        if route is None:
            return super().wait_event(key)
        return route.wait_event(key)

    def take(self, key):
        route = self.routes.get(type(key)) if self.routes else None
        if route is None:
            return super().take(key)
        route.take(key)


@attrs.frozen
class _Fifo:
    id: int
    dirs: int  # bit 0: cube -> vector, bit 1: vector -> cube
    slot_bytes: int
    slots: int
    c2v_base: int  # consumer buffer addresses (UB of the AIVs / L1 of the AIC)
    v2c_base: int


_TO_AIV, _TO_AIC = 1, 2


class CrossUnit:
    """Mixin of ``Interpreter``: the cube<->vector pipe ops of one unit's stream.

    Needs ``self.spec`` (the ``UnitSpec``), ``self.chip`` (``CrossFlags`` and the FIFO
    data, shared by the units) and the interpreter's tile state.
    """

    # What the interpreter provides (class-level declarations only, for the type checker).
    # ``chip`` is None on a unit run alone, which never reaches a cube<->vector op.
    spec: UnitSpec
    chip: Any  # sim.engine.chipstate.ChipState (which imports this module)
    program: Program
    target: Target
    functional: bool
    values: dict[str, Any]
    tiles: dict[Tile, TileState]
    epoch: int
    mutations: int
    _placed: dict
    _gm_windows: bool
    _reserved: dict
    _fifos: dict
    _pops: dict
    _pop_states: dict
    _tallocs: dict
    _fifo_moves: dict
    _x_items: dict
    scalar: Callable[[Any], Any]
    valid_of: Callable[[Tile], tuple[int | None, int | None]]
    tile_view: Callable[[Tile, TileState, int | None, int | None], np.ndarray]
    _state: Callable[[Tile, str], TileState]

    def _pipe_op(self, st: PipeOp):
        # the handler and attributes of a statement, found once (it runs every iteration)
        known = self._x_items.get(id(st))
        if known is None:
            name = st.op.removeprefix("pto.")
            handler = getattr(self, "_x_" + name, None)
            if handler is None:
                raise UserError(
                    f"{st.op} ({st.loc}): not a cube<->vector pipe op the simulator knows"
                )
            known = self._x_items[id(st)] = (handler, dict(st.attrs))
        return known[0](st, known[1])

    # --- buffers and set-up ----------------------------------------------------------------

    def _x_reserve_buffer(self, st, a):
        base = (
            self._placed[("reserve", a.get("name"))]
            if a.get("auto") is True
            else int(a.get("base", 0) or 0)
        )
        self._reserved[st.results[0].name] = (base, int(a.get("size", 0) or 0))
        self.values[st.results[0].name] = base

    def _x_import_reserved_buffer(self, st, a):
        name = a.get("name")
        peer = str(a.get("peer_func", "")).lstrip("@")
        found = self.chip.reserved(self.program, peer, name)
        if found is None:
            raise UserError(f"{st.op} ({st.loc}): no reserve_buffer {{name = {name!r}}} in @{peer}")
        self._reserved[st.results[0].name] = found
        self.values[st.results[0].name] = found[0]

    def _init_pipe(self, st, a):
        ops = {k: v for k, v in (o for o in st.operands if isinstance(o, tuple))}
        slot = int(a.get("slot_size", 0) or 0)
        dirs = int(a.get("dir_mask", 1) or 1)

        def buf(key):
            v = ops.get(key)
            if v is None:
                return 0, 0
            if isinstance(v, Scalar) and v.name in self._reserved:
                return self._reserved[v.name]
            return int(self.scalar(v)), 0

        (c2v, c2v_size), (v2c, v2c_size) = buf("c2v_consumer_buf"), buf("v2c_consumer_buf")
        size = c2v_size if dirs & _TO_AIV else v2c_size
        slots = size // slot if size and slot else int(self.target.chip.get("fifo_slots", 2))
        fifo = _Fifo(int(a.get("id", 0) or 0), dirs, slot, max(1, slots), c2v, v2c)
        self._fifos[fifo.id] = fifo
        return fifo

    def _x_aic_initialize_pipe(self, st, a):
        fifo = self._init_pipe(st, a)
        if fifo.dirs & _TO_AIV:  # the cube produces: every vector channel starts empty
            for s in range(self.chip.vector_units):
                self.chip.flags.add(self._key(fifo, _TO_AIV, s, "free"), fifo.slots)

    def _x_aiv_initialize_pipe(self, st, a):
        fifo = self._init_pipe(st, a)
        if fifo.dirs & _TO_AIC:
            self.chip.flags.add(
                self._key(fifo, _TO_AIC, self.spec.subblock_idx, "free"), fifo.slots
            )

    # --- push / pop / free -----------------------------------------------------------------

    def _key(self, fifo, direction, sub, what):
        return XKey(("fifo", self.spec.core, fifo.id, direction, sub, what))

    def _key_text(self, fifo, direction, sub, what):
        arrow = "AIC->AIV" if direction == _TO_AIV else "AIV->AIC"
        return f"fifo {fifo.id} {arrow}{sub} {what} slot"

    def _fifo(self, st, direction):
        """The FIFO an op uses: its ``id`` attribute, else the first one initialised for
        its direction."""
        known = self._x_items.get(id(st))
        fid = (known[1] if known is not None else dict(st.attrs)).get("id")
        if fid is not None and fid in self._fifos:
            return self._fifos[fid]  # keyed by id: the one the walk below would find
        for fifo in self._fifos.values():
            if (fifo.id == fid) if fid is not None else bool(fifo.dirs & direction):
                return fifo
        arrow = "cube -> vector" if direction == _TO_AIV else "vector -> cube"
        raise SimulationError(
            f"{st.op} ({st.loc}): expected an initialize_pipe for a "
            f"{arrow} FIFO{'' if fid is None else f' with id {fid}'} before "
            f"it on core {self.spec.core} {self.spec.unit}, found none"
        )

    def _fifo_sync(self, kind, pipe, fifo, direction, sub, what, st):
        """The set / wait item of a FIFO channel's ``what`` ("free" / "full") flag, made
        once per statement and channel: a push or pop is issued every iteration, and its
        key and text are the same each time."""
        k = (kind, pipe, fifo.id, direction, sub, what, id(st))
        item = self._x_items.get(k)
        if item is None:
            item = self._x_items[k] = self._sync_item(
                kind,
                pipe,
                self._key(fifo, direction, sub, what),
                self._key_text(fifo, direction, sub, what),
                st,
            )
        return item

    def _sync_item(self, kind, pipe, key, text, st):
        # one item per statement and flag (a FIFO's keys repeat per slot): a long run hands
        # the same few objects over, as for the program's own sync statements
        k = (kind, pipe, key, text, id(st))
        item = self._x_items.get(k)
        if item is None:
            item = self._x_items[k] = Issued(
                kind, pipe, kind, flag=key, text=text, source=str(st.loc or "")
            )
        return item

    def _move_item(self, opcode, pipe, path, tile, rows, st, window=None):
        """The data move of a push / pop: ``rows`` x valid cols of ``tile`` over ``path``;
        ``window``: its GM workspace window (``_slot_window``) on the GM data path."""
        cols = self._fifo_valid(tile)[1]
        # one item per statement, move and window (the slots rotate through a few): each
        # iteration's push or pop hands the same object over, as an instruction does
        k = ("move", opcode, pipe, path, tile, rows, cols, window, id(st))
        item = self._x_items.get(k)
        if item is not None:
            return item
        t = tile.type
        shape = Shape(opcode, t.dtype.name, t.rows, t.cols, t.valid_cols, rows, cols, path=path)
        plan = lower(shape, pipe, self.target)
        item = self._x_items[k] = Issued(
            OP,
            pipe,
            opcode,
            plan.cold_cycles,
            plan.warm_cycles,
            plan.breaks_stream,
            None,
            plan,
            f"%{tile.name} ({path})",
            str(st.loc or ""),
        )
        if window is not None:
            item.gm = window
        return item

    def _fifo_valid(self, tile: Tile) -> tuple[int, int]:
        """``tile``'s valid rows and columns: a FIFO moves a region known when it runs."""
        r, c = self.valid_of(tile)
        if r is None or c is None:
            raise SimulationError(
                f"tile %{tile.name} moves through a cube<->vector FIFO with a dynamic valid "
                f"region that was never set (use set_validshape / valid_row=, valid_col=)"
            )
        return r, c

    def _slot_window(self, fifo, direction, end, tile, split, sub) -> tuple | None:
        """The GM window (``sim.engine.gm`` form) one end of a FIFO moves: the producer's
        push (``end`` "push"; ``sub`` = the pushing AIV for vector -> cube) or a
        consumer's pop (``end`` "pop"). The whole tile of a slot is R x C valid elements;
        with ``split`` each AIV's part is R/2 rows (1) or C/2 columns (2) of it. The slot
        index counts this unit's pushes or pops of the FIFO, as the slots rotate. None
        when the run's GM model tracks no windows (no L2)."""
        if not self._gm_windows:
            return None
        key = (fifo.id, direction, end)
        k = self._fifo_moves.get(key, 0)
        self._fifo_moves[key] = k + 1
        k %= fifo.slots
        r, c = self._fifo_valid(tile)
        part = sub is not None and split in (1, 2)
        R, C = (2 * r, c) if part and split == 1 else (r, 2 * c) if part else (r, c)
        base = k * R * C
        if part:
            base += sub * r * c if split == 1 else sub * c
        return (
            ("fifo", self.spec.core, fifo.id, direction),
            base,
            r,
            c,
            C,
            1,
            tile.type.dtype.size_bytes,
        )

    def _x_tpush_to_aiv(self, st, a):
        fifo = self._fifo(st, _TO_AIV)
        tile = st.operands[0]
        split = int(a.get("split", 0) or 0)
        if not self._taken_slot(fifo, _TO_AIV):
            yield from self._wait_free(fifo, _TO_AIV, range(self.chip.vector_units), st)
        if isinstance(tile, PartView):  # the slot talloc bound in GM, written already

            def full(s):
                k = (fifo, _TO_AIV, s, "full")
                return self._key(*k), self._key_text(*k)

            yield from push_view(self, st, fifo, _TO_AIV, tile, split, _part, full, self._sync_item)
            return
        rows = self._fifo_valid(tile)[0]
        local = self.chip.data_path == "local"
        src = tile.loc
        pipe, path = (
            ("PIPE_FIX", "L0C_UB" if local else "L0C_GM")
            if src is Loc.ACC
            else ("PIPE_MTE3", "L1_GM")
            if src is Loc.MAT
            else ("PIPE_MTE3", "UB_GM")
        )
        if local and src is not Loc.ACC:
            raise UserError(
                f"{st.op} ({st.loc}): on {self.target.name} the cube pushes an acc "
                f"tile (FIXPIPE L0C->UB), found a {src.value} tile"
            )
        # the data, or in a timing-only run its shape: a popped tile of dynamic valid
        # region takes it
        data = self._read_tile(tile) if self.functional else self._valid_shape(tile)
        for s in range(self.chip.vector_units):
            self.chip.queue(self.spec.core, fifo.id, _TO_AIV, s).append(_part(data, split, s))
        n = self.chip.vector_units
        moved = rows * (n if local and split == 0 else 1)
        window = None if local else self._slot_window(fifo, _TO_AIV, "push", tile, split, None)
        yield self._move_item("TPUSH", pipe, path, tile, moved, st, window)
        for s in range(self.chip.vector_units):
            yield self._fifo_sync(SET, pipe, fifo, _TO_AIV, s, "full", st)

    def _x_tpush_to_aic(self, st, a):
        fifo = self._fifo(st, _TO_AIC)
        tile = st.operands[0]
        sub = self.spec.subblock_idx
        if not self._taken_slot(fifo, _TO_AIC):
            yield from self._wait_free(fifo, _TO_AIC, (sub,), st)
        self.chip.queue(self.spec.core, fifo.id, _TO_AIC, sub).append(
            self._read_tile(tile) if self.functional else self._valid_shape(tile)
        )
        local = self.chip.data_path == "local"
        window = (
            None
            if local
            else self._slot_window(fifo, _TO_AIC, "push", tile, int(a.get("split", 0) or 0), sub)
        )
        yield self._move_item(
            "TPUSH",
            "PIPE_MTE3",
            "UB_L1" if local else "UB_GM",
            tile,
            self._fifo_valid(tile)[0],
            st,
            window,
        )
        yield self._fifo_sync(SET, "PIPE_MTE3", fifo, _TO_AIC, sub, "full", st)

    def _wait_free(self, fifo, direction, subs, st):
        """The producer's wait for a free slot in each consumer channel ``subs``."""
        for sub in subs:
            yield self._fifo_sync(WAIT, "PIPE_S", fifo, direction, sub, "free", st)

    def _taken_slot(self, fifo, direction) -> bool:
        """Consume a slot a talloc already waited for (the push then does not wait again)."""
        n = self._tallocs.get((fifo.id, direction), 0)
        if n:
            self._tallocs[(fifo.id, direction)] = n - 1
        return bool(n)

    def _talloc(self, st, direction, subs):
        """``talloc_to_aiv`` / ``talloc_to_aic``: take a free slot of the FIFO before the
        producer computes into it; the tile it gives lives in the producer's own buffer.
        ASSUMPTION (the reference has no semantics for it): the slot is taken exactly as a
        push takes it (a wait for a free slot in every consumer channel the push fills),
        the next push of that FIFO uses the slot instead of waiting again, and the tile is
        placed like an ``alloc_tile`` without an address."""
        fifo = self._fifo(st, direction)
        yield from self._wait_free(fifo, direction, subs, st)
        key = (fifo.id, direction)
        self._tallocs[key] = self._tallocs.get(key, 0) + 1
        tile = st.results[0] if st.results else None
        if isinstance(tile, PartView):  # a slot of the GM workspace (sim.engine.gmslots)
            talloc_view(self, st, fifo, direction, tile)
            return
        if not isinstance(tile, Tile):
            raise UserError(f"{st.op} ({st.loc}): the result must be a tile")
        t = tile.type
        self.tiles[tile] = TileState(self._placed[tile], t.valid_rows, t.valid_cols)
        self.epoch += 1

    def _x_talloc_to_aiv(self, st, a):
        return self._talloc(st, _TO_AIV, range(self.chip.vector_units))

    def _x_talloc_to_aic(self, st, a):
        return self._talloc(st, _TO_AIC, (self.spec.subblock_idx,))

    def _pop_tile(self, st, fifo, base):
        """Place the popped tile in its slot of the consumer's reserved buffer."""
        tile = st.results[0]
        if not isinstance(tile, Tile):
            raise UserError(f"{st.op} ({st.loc}): the result must be a tile")
        n = self._pops.get(fifo.id, 0)
        self._pops[fifo.id] = n + 1
        addr = base + (n % fifo.slots) * (fifo.slot_bytes or tile.type.nbytes)
        rows, cols = tile.type.valid_rows, tile.type.valid_cols
        # one state per slot, while nothing changes it in place: the instructions on the
        # popped tile find the plans and accesses they had on that slot before
        known = self._pop_states.get((tile, addr))
        if known is None or (known.addr, known.rows, known.cols) != (addr, rows, cols):
            known = self._pop_states[(tile, addr)] = TileState(addr, rows, cols)
        self.tiles[tile] = known
        self.epoch += 1
        return tile

    def _popped(self, st, fifo, direction, sub):
        """The data (or, timing only, the shape) of the oldest pushed slot. The pop's wait
        makes sure there is one (ideal sync keeps FIFO waits, ``machine._fifo``): an empty
        queue here is the engine's fault, said in one line rather than an IndexError."""
        queue = self.chip.queue(self.spec.core, fifo.id, direction, sub)
        if not queue:
            raise SimulationError(
                f"{st.op} ({st.loc}): FIFO {fifo.id} has no pushed slot yet although its wait "
                f"was satisfied (an engine fault: please report it with this kernel)"
            )
        return queue.popleft()

    def _x_tpop_from_aic(self, st, a):
        fifo = self._fifo(st, _TO_AIV)
        sub = self.spec.subblock_idx
        yield self._fifo_sync(WAIT, "PIPE_S", fifo, _TO_AIV, sub, "full", st)
        tile = self._pop_tile(st, fifo, fifo.c2v_base)
        got = self._popped(st, fifo, _TO_AIV, sub)
        self._take_shape(tile, got)
        if self.functional:
            self._write_tile(tile, got, st)
        if self.chip.data_path == "gm":
            window = self._slot_window(fifo, _TO_AIV, "pop", tile, int(a.get("split", 0) or 0), sub)
            yield from self._pop_load(st, tile, "GM_UB", "PIPE_V", window)

    def _x_tpop_from_aiv(self, st, a):
        fifo = self._fifo(st, _TO_AIC)
        split = int(a.get("split", 0) or 0)
        for s in range(self.chip.vector_units):
            yield self._fifo_sync(WAIT, "PIPE_S", fifo, _TO_AIC, s, "full", st)
        tile = self._pop_tile(st, fifo, fifo.v2c_base)
        parts = [self._popped(st, fifo, _TO_AIC, s) for s in range(self.chip.vector_units)]
        if self.functional:
            data = parts[0] if split == 0 else np.concatenate(parts, axis=0 if split == 1 else 1)
            self._take_shape(tile, data)
            self._write_tile(tile, data, st)
        else:
            rows, cols = parts[0]
            if split:
                n = len(parts)
                rows, cols = (rows * n, cols) if split == 1 else (rows, cols * n)
            self._take_shape(tile, (rows, cols))
        if self.chip.data_path == "gm":
            window = self._slot_window(fifo, _TO_AIC, "pop", tile, split, None)
            yield from self._pop_load(st, tile, "GM_L1", "PIPE_MTE1", window)

    def _pop_load(self, st, tile, path, reader, window):
        """A2/A3: the pop reads the GM slot into the consumer's slot, then hands it to the
        pipe that reads it (a unit-local flag that user event ids cannot collide with)."""
        yield self._move_item(
            "TPOP", "PIPE_MTE2", path, tile, self._fifo_valid(tile)[0], st, window
        )
        items = self._x_items.get(("tpop", reader, id(st)))
        if items is None:
            key = ("PIPE_MTE2", reader, "tpop")
            text = f"PIPE_MTE2->{reader}#tpop"
            items = self._x_items[("tpop", reader, id(st))] = (
                self._sync_item(SET, "PIPE_MTE2", key, text, st),
                self._sync_item(WAIT, reader, key, text, st),
            )
        yield from items

    def _x_tfree_from_aic(self, st, a):
        fifo = self._fifo(st, _TO_AIV)
        sub = self.spec.subblock_idx
        yield self._fifo_sync(SET, "PIPE_V", fifo, _TO_AIV, sub, "free", st)

    def _x_tfree_from_aiv(self, st, a):
        fifo = self._fifo(st, _TO_AIC)
        for s in range(self.chip.vector_units):
            yield self._fifo_sync(SET, "PIPE_MTE1", fifo, _TO_AIC, s, "free", st)

    # --- data ------------------------------------------------------------------------------

    def _read_tile(self, tile) -> np.ndarray:
        st = self._state(tile, f"%{tile.name}")
        return self.tile_view(tile, st, st.rows, st.cols).copy()

    def _valid_shape(self, tile) -> tuple:
        st = self._state(tile, f"%{tile.name}")
        return (st.rows, st.cols)

    def _take_shape(self, tile, got) -> None:
        """A popped tile whose type leaves its valid rows / cols dynamic (``v_row=?``)
        takes them from what was pushed (the data, or its shape in a timing-only run)."""
        st = self.tiles[tile]
        rows, cols = got.shape if isinstance(got, np.ndarray) else got
        if st.rows is None or st.cols is None:
            self.mutations += 1
        if st.rows is None:
            st.rows = rows
        if st.cols is None:
            st.cols = cols

    def _write_tile(self, tile, data, st_):
        st = self.tiles[tile]
        if data.shape != (st.rows, st.cols):
            raise SimulationError(
                f"{st_.op} ({st_.loc}): popped {data.shape[0]}x{data.shape[1]} "
                f"elements into %{tile.name} whose valid region is "
                f"{st.rows}x{st.cols}"
            )
        self.tile_view(tile, st, st.rows, st.cols)[...] = data.astype(tile.dtype.np_type)


def _part(data, split: int, sub: int):
    """Sub-block ``sub``'s part of pushed data (an array, or a (rows, cols) shape)."""
    if split == 0:
        return data
    if isinstance(data, tuple):
        rows, cols = data
        return (rows // 2, cols) if split == 1 else (rows, cols // 2)
    axis = 0 if split == 1 else 1
    n = data.shape[axis] // 2
    return data[sub * n : (sub + 1) * n] if axis == 0 else data[:, sub * n : (sub + 1) * n]
