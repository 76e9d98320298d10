"""The whole-chip part of the Python builder: blocks, sections, cube<->vector FIFOs.

::

    k = sim.Kernel("gemm", block_dim=24)
    row = k.block_idx * 256                    # an Index: scalar code the units run
    with k.cube():                             # pto.section.cube: the AIC of every core
        ...  k.TLOAD(a_l1, A[row:row + 256, 0:64]) ...
        k.tpush(c2v, acc)                      # to both AIVs of the core (split per fifo)
    with k.vector():                           # pto.section.vector: AIV0 and AIV1
        t = k.tpop(c2v)                        # a UB tile in the FIFO's slot
        k.TEXP(t, t)
        k.tfree(c2v)

``block_idx`` / ``block_num`` / ``subblock_idx`` / ``subblock_num`` are ``Index`` values:
integers known when the kernel runs (``pto.get_block_idx`` ...). Arithmetic with Python
ints emits ``arith`` statements; views take them as offsets (``A[row:row + 256, :]``, the
size being the static difference). A token (RecordEvent) cannot cross sections: units
synchronise through FIFOs, cross-core flags and the all-core barrier::

    with k.cube():
        e = k.TSTORE(work[row:row + 16, :], acc)   # PIPE_FIX
        k.sync_set("FIX", 3, e)                    # pto.sync.set: fires when FIX is done
    with k.vector():
        k.sync_wait("MTE2", 3)                     # pto.sync.wait: holds PIPE_MTE2
        k.TLOAD(t, work[row:row + 16, :])
    k.syncall(mode="hard", core_type="mix")        # every unit of every core meets here

(``mode=`` of ``sync_set`` / ``sync_wait`` is the ``ffts_mode``: 0 all cores of one type,
1 the vector units of a core, 2 — the default when none is given — cube <-> vector of a
core; ``sim.engine.ffts`` says what each does.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sim.base.errors import UserError
from sim.isa.dtypes import DType
from sim.isa.dtypes import dtype as _dtype
from sim.isa.program import (
    FFTS_MODES,
    SYNCALL_CORE_TYPES,
    SYNCALL_MODES,
    Const,
    GmPtr,
    PipeOp,
    RawAttr,
    Scalar,
    ScalarOp,
    SetFfts,
    SyncAll,
    SyncSet,
    SyncWait,
)
from sim.isa.tile import Tile, TileType
from sim.kernel.values import Event, GlobalTensor, Index, _caller, _pipe_name

if TYPE_CHECKING:
    from sim.kernel.tokens import _PipeClocks

__all__ = ["Fifo", "ChipKernel"]

# the ids a unit reads first; rank ids: sim.kernel.comm
_IDS = ("block_idx", "block_num", "subblock_idx", "subblock_num", "rank_idx", "rank_num")


class Fifo:
    """A cube<->vector FIFO declared with ``Kernel.fifo``."""

    __slots__ = ("id", "direction", "type", "split", "buffer")

    def __init__(self, id, direction, type, split, buffer):
        self.id, self.direction, self.type, self.split, self.buffer = (
            id,
            direction,
            type,
            split,
            buffer,
        )

    def __repr__(self) -> str:
        return f"Fifo({self.id}, {self.direction}, {self.type})"


class ChipKernel:
    """Mixin of ``Kernel``: block ids, sections, FIFOs."""

    # What the kernel provides (class-level declarations only, for the type checker).
    name: str
    _clocks: _PipeClocks
    _tile_ids: set
    _freed: dict
    _fresh: Callable[[str], str]
    _intern: Callable[[Any], Any]
    _emit: Callable[[Any], int]
    _not_mine: Callable[[Tile, str], None]
    _wait: Callable[[Event, str, Any], None]

    def _chip_init(self, block_dim: int) -> None:
        if isinstance(block_dim, bool) or not isinstance(block_dim, int) or block_dim < 1:
            raise UserError(f"Kernel: block_dim: expected a positive integer, found {block_dim!r}")
        self.block_dim = block_dim
        self._popped: dict = {}  # (fifo id, section) -> tiles popped and not yet freed
        self._ids: dict[str, Index] = {}
        self._section: str | None = None  # "cube" / "vector" while inside a section
        self._fifos: list[Fifo] = []

    # --- ids -------------------------------------------------------------------------------

    def _id(self, name: str) -> Index:
        ix = self._ids.get(name)
        if ix is None:
            ix = self._ids[name] = Index(self, Scalar(self._fresh(name), "index"))
        return ix

    @property
    def block_idx(self) -> Index:
        """This block's index, 0 .. block_dim - 1 (``pto.get_block_idx``)."""
        return self._id("block_idx")

    @property
    def block_num(self) -> Index:
        return self._id("block_num")

    @property
    def subblock_idx(self) -> Index:
        """0 / 1 on the two vector units of a core, 0 on the cube (``get_subblock_idx``)."""
        return self._id("subblock_idx")

    @property
    def subblock_num(self) -> Index:
        return self._id("subblock_num")

    def _prologue(self) -> list:
        """The id reads every unit runs first."""
        return [ScalarOp((self._ids[n].scalar,), f"pto.get_{n}") for n in _IDS if n in self._ids]

    # --- sections --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _in_section(self, kind: str):
        if self._section is not None:
            raise UserError(
                f"section.{kind}: sections do not nest (already in section.{self._section})"
            )
        self._section = kind
        self._emit(("section", kind))
        try:
            yield
        finally:
            self._emit(("end", kind))
            self._section = None

    def cube(self) -> contextlib.AbstractContextManager[None]:
        """``with k.cube():`` — code for the cube unit (``pto.section.cube``)."""
        return self._in_section("cube")

    def vector(self) -> contextlib.AbstractContextManager[None]:
        """``with k.vector():`` — code for both vector units (``pto.section.vector``)."""
        return self._in_section("vector")

    # --- FIFOs -----------------------------------------------------------------------------

    def fifo(
        self,
        direction: str,
        dtype: str | DType,
        rows: int,
        cols: int,
        *,
        slots: int = 2,
        split: int = 0,
    ) -> Fifo:
        """Declare a FIFO: ``"c2v"`` (cube -> both vector units) or ``"v2c"``.

        ``(rows, cols)`` of ``dtype`` is the consumer's tile: for c2v what each vector
        unit pops (half the pushed tile with ``split=1`` rows / ``2`` columns), for v2c
        what the cube pops. The consumer buffer (UB / L1) of ``slots`` such tiles is placed
        by the simulator (``reserve_buffer {auto = true}``).
        """
        if self._section is not None:
            raise UserError("fifo(): declare FIFOs outside sections (every unit sets them up)")
        if direction not in ("c2v", "v2c"):
            raise UserError(f"fifo(): direction: expected 'c2v' or 'v2c', found {direction!r}")
        if split not in (0, 1, 2):
            raise UserError(
                f"fifo(): split: expected 0 (none), 1 (rows) or 2 (columns), found {split!r}"
            )
        fid = len(self._fifos)
        loc = "vec" if direction == "c2v" else "mat"
        ttype = TileType(loc, _dtype(dtype), int(rows), int(cols))
        slot = ttype.nbytes
        buf = Scalar(self._fresh(f"fifo{fid}_buf"), "i32")
        self._emit(
            PipeOp(
                (buf,),
                "pto.reserve_buffer",
                (),
                {
                    "name": f"fifo{fid}",
                    "size": slot * int(slots),
                    "location": RawAttr(f"#pto.address_space<{loc}>"),
                    "auto": True,
                },
            )
        )
        attrs = {"id": fid, "dir_mask": 1 if direction == "c2v" else 2, "slot_size": slot}
        operand = (("c2v_consumer_buf" if direction == "c2v" else "v2c_consumer_buf"), buf)
        self._emit(PipeOp((), "pto.aic_initialize_pipe", (operand,), attrs))
        self._emit(PipeOp((), "pto.aiv_initialize_pipe", (operand,), attrs))
        f = Fifo(fid, direction, ttype, split, buf)
        self._fifos.append(f)
        return f

    def _need(self, kind: str, what: str) -> None:
        if self._section != kind:
            raise UserError(
                f"{what}: expected inside `with k.{kind}():`, found "
                f"{'no section' if self._section is None else 'section.' + self._section}"
            )

    def tpush(self, fifo: Fifo, tile: Tile, *events: Event) -> Event:
        """Push ``tile`` into ``fifo`` (``tpush_to_aiv`` on the cube, ``tpush_to_aic`` on
        the vector units) after ``events``; returns a token on the pipe that moves it."""
        to_aiv = fifo.direction == "c2v"
        self._need("cube" if to_aiv else "vector", f"tpush on {fifo!r}")
        self._own_fifo(fifo, "tpush")
        if type(tile) is Tile and id(tile) not in self._tile_ids:
            self._not_mine(tile, f"tpush on {fifo!r}")
        pipe = "PIPE_FIX" if tile.loc.value == "acc" else "PIPE_MTE3"
        loc = _caller()
        for ev in events:
            self._wait(ev, pipe, loc)
        op = "pto.tpush_to_aiv" if to_aiv else "pto.tpush_to_aic"
        idx = self._emit(PipeOp((), op, (tile,), {"id": fifo.id, "split": fifo.split}, loc=loc))
        return Event(self, idx, pipe)

    def tpop(self, fifo: Fifo) -> Tile:
        """Pop the next tile of ``fifo`` (on the consumer side); it lives in the FIFO's slot
        until ``tfree``."""
        to_aiv = fifo.direction == "c2v"
        self._need("vector" if to_aiv else "cube", f"tpop on {fifo!r}")
        self._own_fifo(fifo, "tpop")
        tile = Tile(self._fresh(f"pop{fifo.id}_"), fifo.type)
        self._tile_ids.add(id(tile))
        self._popped.setdefault((fifo.id, self._section), []).append(tile)
        op = "pto.tpop_from_aic" if to_aiv else "pto.tpop_from_aiv"
        self._emit(PipeOp((tile,), op, (), {"id": fifo.id, "split": fifo.split}, loc=_caller()))
        return tile

    def tfree(self, fifo: Fifo) -> None:
        """Give the slot of the oldest popped tile back to the producer."""
        to_aiv = fifo.direction == "c2v"
        self._need("vector" if to_aiv else "cube", f"tfree on {fifo!r}")
        self._own_fifo(fifo, "tfree")
        popped = self._popped.get((fifo.id, self._section))
        loc = _caller()
        if not popped:
            raise UserError(
                f"{loc}: tfree on {fifo!r}: no popped tile to give back (every "
                f"tpop is already freed: tfree twice?); expected one tfree per tpop"
            )
        tile = popped.pop(0)
        self._tile_ids.discard(id(tile))
        self._freed[id(tile)] = loc
        op = "pto.tfree_from_aic" if to_aiv else "pto.tfree_from_aiv"
        self._emit(PipeOp((), op, (), {"id": fifo.id, "split": fifo.split}, loc=loc))

    def _own_fifo(self, fifo, what: str) -> None:
        if not any(f is fifo for f in self._fifos):
            raise UserError(
                f"{_caller()}: {what} on {fifo!r}: the FIFO was not declared in "
                f"kernel {self.name}; declare it with this kernel's fifo()"
            )

    # --- cross-core flags and the all-core barrier -----------------------------------------

    def _ffts(self, cls, what, pipe, flag, mode, events, loc, intra=False):
        pipe = _pipe_name(pipe)
        if pipe == "PIPE_ALL":
            raise UserError(f"{what}: expected the pipe of one unit, found PIPE_ALL")
        if mode is not None and mode not in FFTS_MODES:
            raise UserError(f"{what}: mode: expected 0, 1 or 2 (ffts_mode), found {mode!r}")
        top = 32 if intra else 16
        if isinstance(flag, Index):
            flag = flag.scalar
        elif isinstance(flag, bool) or not isinstance(flag, int) or not 0 <= flag < top:
            raise UserError(
                f"{what}: flag: expected an int 0..{top - 1} or an Index, found {flag!r}"
            )
        for ev in events:
            if (
                getattr(ev, "pipe", None) != pipe
            ):  # a set fires after its own pipe's earlier work anyway
                self._wait(ev, pipe, loc)
        self._emit(self._intern(cls(pipe, flag, mode, intra, loc=loc)))

    def sync_set(
        self, pipe: str, flag: int | Index, *events: Event, mode: int | None = None
    ) -> None:
        """``pto.sync.set``: cross-core flag ``flag`` (0..15, or an Index), set when the
        earlier work of ``pipe`` (and ``events``) is done; ``mode`` is the ffts_mode (None:
        not written, the default 2 applies)."""
        self._ffts(SyncSet, "sync_set", pipe, flag, mode, events, _caller())

    def sync_wait(self, pipe: str, flag: int | Index, *, mode: int | None = None) -> None:
        """``pto.sync.wait``: ``pipe`` waits until cross-core flag ``flag`` is set."""
        self._ffts(SyncWait, "sync_wait", pipe, flag, mode, (), _caller())

    def set_intra_block(self, pipe: str, flag: int | Index, *events: Event) -> None:
        """A5 ``pto.set_intra_block``: on the cube ``flag`` 0..15 signals AIV0, 16..31
        AIV1; on a vector unit 0..15 signal the cube (``sim.engine.ffts``)."""
        self._ffts(SyncSet, "set_intra_block", pipe, flag, None, events, _caller(), True)

    def wait_intra_block(self, pipe: str, flag: int | Index) -> None:
        """A5 ``pto.wait_intra_block``: wait until ``flag`` is set (ids as for the set)."""
        self._ffts(SyncWait, "wait_intra_block", pipe, flag, None, (), _caller(), True)

    def syncall(
        self, *operands: GlobalTensor | Index | int, mode: str = "hard", core_type: str = "mix"
    ) -> None:
        """``pto.syncall``: every unit of ``core_type`` (``aiv_only``, ``aic_only``,
        ``mix``) of every core waits until all of them got here; ``mode`` ``hard`` (FFTS)
        or ``soft`` (through GM). ``operands`` (GM tensors, Index or int values, at most 3)
        are the soft barrier's workspaces, kept in the IR."""
        if mode not in SYNCALL_MODES:
            raise UserError(f"syncall: mode: expected 'soft' or 'hard', found {mode!r}")
        if core_type not in SYNCALL_CORE_TYPES:
            raise UserError(
                f"syncall: core_type: expected one of "
                f"{', '.join(SYNCALL_CORE_TYPES)}, found {core_type!r}"
            )
        if len(operands) > 3:
            raise UserError(f"syncall: expected at most 3 operands, found {len(operands)}")
        ops: list[GmPtr | Scalar | Const] = []
        for o in operands:
            if isinstance(o, GlobalTensor):
                ops.append(GmPtr(o.name, o.dtype))
            elif isinstance(o, Index):
                ops.append(o.scalar)
            elif isinstance(o, int) and not isinstance(o, bool):
                ops.append(Const(o, "i32"))
            else:
                raise UserError(f"syncall: operand {o!r}: expected a GM tensor, an Index or an int")
        self._emit(self._intern(SyncAll(mode, core_type, tuple(ops), loc=_caller())))

    def set_ffts(self, addr: int | Index) -> None:
        """``pto.set_ffts``: set the FFTS base address (recorded, costs nothing)."""
        value = addr.scalar if isinstance(addr, Index) else Const(int(addr), "i64")
        self._emit(SetFfts(value, loc=_caller()))
