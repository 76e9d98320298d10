"""The functional units' call site: an instruction's operands bound once, reused while valid.

A functional unit computes on numpy views of the bytes its tiles occupy in their on-chip
buffer (``sim.functional``); a TLOAD or TSTORE copies between such a view and a strided
view of a GM array. Which bytes a tile view covers depends only on the tile's buffer,
element type, shape and layout (its static type), its address and the region it is cut
to (its valid region, or the instruction's iteration domain); which GM elements a
transfer moves depends on its partition view's pointer, start, sizes and strides. None
of these change from one execution of an instruction to the next unless a statement
changes them, so the interpreter does the operand work once and keeps it:

* **tile views**, per tile, address and cut (``tile_view``): a view is built once and
  handed out again while the tile stays where it is;
* **sites**, per distinct instruction (equal instructions share one): the unit, its
  ``FnContext`` with every view in it, or a transfer's source and destination views.
  A site records the interpreter's ``epoch``, which moves whenever any tile's address
  or valid region changes (alloc, TASSIGN, set_validshape, subview, reshape, a call or
  loop binding a tile, a FIFO pop); in a newer epoch the site compares the address and
  valid region of its own tiles with the ones it was bound on and is rebound only when
  one differs. A transfer's site also keeps the partition view's value and the GM
  array it was bound on: a re-executed partition_view with other offsets, or an array
  grown for a larger view, rebinds it.

Only real views are kept: a window numpy can only express as a copy (an NZ window, a
reshape of a cut tile) is built again on every execution, as the data it copies may
have changed. Per execution a unit's site sets the instruction's name for messages and
its run-time scalar operands, then calls the unit. The numpy error state (floating-point
overflow and invalid results are data, not errors) is set once for the whole run by
``sim.engine.run``, not per instruction.

Both caches are bounded (``_MAX_ENTRIES``): a kernel with more distinct instructions or
tile placements than that starts them over, paying the binding again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.base.errors import SimulationError, UserError
from sim.functional.context import ValueOutOfRange
from sim.isa.program import Const, RawAttr, Scalar
from sim.isa.tile import BLayout, Tile

if TYPE_CHECKING:
    from sim.engine.tilestate import TileState
    from sim.functional.context import FnContext
    from sim.isa.program import Instr, PartView
    from sim.target.model import Target

__all__ = ["OperandSites", "instr_where", "store_atomic"]


def store_atomic(instr: Instr, where: str) -> bool:
    """Whether a TSTORE accumulates into GM: its ``atomicType`` (``#pto<atomic_type
    atomic_add>``; instructions.md: TSTORE's ``AtomicAdd`` option) is ``atomic_add``;
    ``atomic_none`` or none is a plain store. ASSUMPTION (the reference gives no cost): it
    costs what the plain store costs."""
    v = dict(instr.attrs).get("atomicType")
    if v is None:
        return False
    text = v.text if isinstance(v, RawAttr) else str(v)
    kind = text.removeprefix("#pto<atomic_type").removesuffix(">").strip()
    if kind not in ("atomic_none", "atomic_add"):
        raise UserError(f"{where}: atomicType: expected atomic_none or atomic_add, found {text}")
    return kind == "atomic_add"


_MAX_ENTRIES = 1 << 14  # tile views and sites kept per interpreter (memory bound)

# IR attribute names -> the keys the functional units read
_ATTR = {"rmode": "round", "cmpMode": "cmp", "sat": "sat"}

_LENIENT = ("gather", "mgather")  # families whose unit errors may come from random GM data


def instr_where(seq: int, op: str, source: str) -> str:
    """How messages name an executed instruction: ``instruction #12 TADD (k.pto:7:5)``."""
    return f"instruction #{seq} {op}" + (f" ({source})" if source else "")


class _Where:
    """``instr_where``'s text for a unit's messages, formatted only when one is written
    (a unit reads ``ctx.where`` in f-strings alone): a site moves ``seq`` and ``source``
    on every execution, which costs less than the text."""

    __slots__ = ("seq", "op", "source")

    def __init__(self, seq: int, op: str, source: str):
        self.seq, self.op, self.source = seq, op, source

    def __str__(self) -> str:
        return instr_where(self.seq, self.op, self.source)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class _Site:
    """One instruction's bound operands and the tile state they were bound on."""

    __slots__ = ("epoch", "sig")

    epoch: int  # the interpreter's epoch the operands were bound in
    sig: tuple  # (address, rows, cols) of each tile operand then

    def run(self, interp: Any, seq: int, source: str) -> None:
        raise NotImplementedError


class _UnitSite(_Site):
    """A tile operation: its unit and ``FnContext``; scalars and a GM table per run."""

    __slots__ = ("unit", "ctx", "op", "scalar_ops", "table", "lenient", "where")

    unit: Callable[[FnContext], Any]
    ctx: FnContext
    op: str
    scalar_ops: tuple
    table: Any  # MGATHER's GM table operand, or None
    lenient: bool
    where: _Where

    def run(self, interp, seq: int, source: str) -> None:
        ctx = self.ctx
        where = self.where
        where.seq, where.source = seq, source
        if self.scalar_ops:
            ctx.scalars = tuple(map(interp.scalar, self.scalar_ops))
        if self.table is not None:  # MGATHER reads GM through its view
            ctx.extra = {"table": interp._gm_table(self.table, str(where))}
        try:
            self.unit(ctx)
        except ValueOutOfRange as e:
            interp.data_error(str(e), values=True)
        except SimulationError as e:
            if not self.lenient:
                raise
            interp.data_error(str(e))


class _MoveSite(_Site):
    """A TLOAD (GM window -> tile) or TSTORE (tile -> GM window).

    ``to`` and ``frm`` are the views the copy goes between while the partition view
    still has ``value`` and its GM array is still ``arr``; None when one of them is
    a copy, so the transfer is resolved on every execution."""

    __slots__ = ("instr", "load", "op", "view", "value", "arr", "to", "frm", "atomic")

    instr: Instr
    load: bool
    atomic: bool  # a TSTORE with atomicType = atomic_add: GM += the tile
    op: str
    view: str
    value: Any  # the partition view's value (a tuple) the views were resolved on, or None
    arr: np.ndarray | None
    to: np.ndarray | None
    frm: np.ndarray | None

    def run(self, interp, seq: int, source: str) -> None:
        value = interp.views.get(self.view)
        if (
            value is not self.value
            or self.to is None
            or interp.gm.get(interp.values.get(value[0].name, value[0].name)) is not self.arr
        ):
            interp._bind_move(self, instr_where(seq, self.op, source))
            return  # the bind made this execution's move (once: an atomic one adds)
        frm = self.frm
        assert frm is not None  # bound with ``to``
        if self.atomic:
            self.to += frm.astype(self.to.dtype)
        else:
            self.to[...] = frm


class OperandSites:
    """Mixin of ``Interpreter``: tile views and the functional call site (see module doc)."""

    # What the interpreter provides (class-level declarations only, for the type checker).
    target: Target
    strict: bool
    epoch: int
    gm: dict[str, np.ndarray]
    values: dict[str, Any]
    views: dict[str, tuple]
    tiles: dict[Tile, TileState]
    _view_layouts: dict[str, str]
    scalar: Callable[[Any], Any]
    data_error: Callable[..., None]
    _buffer: Callable[[str], np.ndarray]
    _state: Callable[[Tile, str], TileState]
    _gm_window: Callable[[PartView, str], np.ndarray]

    def _init_operands(self) -> None:
        self._tile_views: dict[tuple, np.ndarray] = {}  # (tile, addr, rows, cols) -> view
        self._sites: dict[int, _Site] = {}  # instruction key -> site

    # --- tile views ----------------------------------------------------------------------

    def tile_view(
        self, tile: Tile, st: TileState, rows: int | None, cols: int | None
    ) -> np.ndarray:
        """The 2-D view of ``tile``'s first ``rows`` x ``cols`` elements at its address."""
        key = (tile, st.addr, rows, cols)
        view = self._tile_views.get(key)
        if view is None:
            if len(self._tile_views) >= _MAX_ENTRIES:
                self._tile_views.clear()
            view = self._tile_views[key] = self._new_tile_view(tile, st.addr, rows, cols)
        return view

    def _new_tile_view(
        self, tile: Tile, addr: int, rows: int | None, cols: int | None
    ) -> np.ndarray:
        t = tile.type
        buf = self._buffer(tile.loc.buffer)
        end = addr + t.nbytes
        if end > buf.size:
            raise SimulationError(
                f"tile %{tile.name} at byte {addr} ends at {end}, past the "
                f"{buf.size}-byte {tile.loc.buffer}"
            )
        flat = buf[addr:end].view(t.dtype.np_type)
        if t.blayout is BLayout.ROW_MAJOR:
            full = flat.reshape(t.rows, t.cols)
        else:
            full = flat.reshape(t.cols, t.rows).T
        return full[:rows, :cols]

    def _valid_view(self, tile):
        st = self.tiles[tile]
        return self.tile_view(tile, st, st.rows, st.cols)

    def _src_view(self, tile, R, C):
        st = self.tiles[tile]
        t = tile.type
        # Reading past a source's own valid region returns whatever the buffer holds
        # (programming-model.md §3.5), so the view is cut from the capacity.
        return self.tile_view(tile, st, min(R, t.rows), min(C, t.cols))

    # --- the call site -------------------------------------------------------------------

    def _execute(self, instr, spec, srcs, tmp, tiles, key, shape, seq, source) -> None:
        """Execute ``instr``'s functional unit (or transfer) on the current state.

        ``key`` identifies the instruction by value, ``tiles`` are its tile operands."""
        site = self._sites.get(key)
        if site is None or site.epoch != self.epoch:
            sig = tuple([(s.addr, s.rows, s.cols) for s in map(self.tiles.__getitem__, tiles)])
            if site is None or site.sig != sig:
                if len(self._sites) >= _MAX_ENTRIES:
                    self._sites.clear()
                site = self._sites[key] = self._bind_site(
                    instr, spec, srcs, tmp, shape, instr_where(seq, instr.opcode, source)
                )
                site.sig = sig
            site.epoch = self.epoch
        site.run(self, seq, source)

    def _bind_site(self, instr, spec, srcs, tmp, shape, where) -> _Site:
        fam = spec.family
        if fam in ("load", "store"):
            move = _MoveSite()
            move.instr, move.load, move.op = instr, fam == "load", instr.opcode
            move.view = (instr.ins[0] if fam == "load" else instr.outs[0]).name
            move.value = move.arr = move.to = move.frm = None
            move.atomic = fam == "store" and store_atomic(instr, where)
            return move
        from sim.functional import unit_for
        from sim.functional.context import FnContext

        dst = instr.outs[0]
        R, C = shape.valid_rows, shape.valid_cols
        dst_st = self._state(dst, where)
        if spec.domain == "src":
            dview = self.tile_view(dst, dst_st, dst_st.rows, dst_st.cols)
            sviews = tuple(self._valid_view(s) for s in srcs)
        else:
            dview = self.tile_view(dst, dst_st, R, C)
            sviews = tuple(
                self._valid_view(s) if _WHOLE_SOURCE(fam, i) else self._src_view(s, R, C)
                for i, s in enumerate(srcs)
            )
        tview = None
        if tmp is not None:
            ts = self.tiles[tmp]
            tview = self.tile_view(tmp, ts, ts.rows, ts.cols)
        scalar_ops = tuple(o for o in instr.ins if isinstance(o, (Const, Scalar)))
        extra = {}
        if fam == "fillpad":  # TFILLPAD writes dst's whole capacity with its PadValue
            extra = {
                "pad": dst.type.pad,
                "dst_capacity": self.tile_view(dst, dst_st, dst.type.rows, dst.type.cols),
            }
        elif spec.name in ("TEXTRACT", "TQUANT"):  # reads past / rewrites the source's bytes
            s0 = srcs[0]
            extra = {"src_capacity": self.tile_view(s0, self.tiles[s0], s0.type.rows, s0.type.cols)}
        elif instr.opcode in ("TINSERT", "TSCATTER"):  # write into dst's capacity
            extra = {"dst_capacity": self.tile_view(dst, dst_st, dst.type.rows, dst.type.cols)}
        site = _UnitSite()
        site.op, site.lenient = instr.opcode, fam in _LENIENT
        site.table = instr.ins[0] if fam == "mgather" else None
        # scalars are read on every execution unless every one is a constant
        site.scalar_ops = scalar_ops if any(type(o) is Scalar for o in scalar_ops) else ()
        site.ctx = FnContext(
            op=instr.opcode,
            where=where,
            dtype=dst.dtype,
            dst=dview,
            srcs=sviews,
            scalars=tuple(map(self.scalar, scalar_ops)),
            scalar_first=isinstance(instr.ins[0], (Const, Scalar)),
            tmp=tview,
            attrs={_ATTR.get(k, k): v for k, v in dict(instr.attrs).items()},
            src_dtypes=tuple(s.dtype for s in srcs),
            inplace=shape.variant == "inplace",
            dst_apart=dview.flags.c_contiguous
            and not any(np.may_share_memory(dview, v) for v in (*sviews, tview) if v is not None),
            strict=self.strict,
            quirks=self.target.quirks,
            extra=extra,
        )
        site.where = _Where(0, instr.opcode, "")
        try:
            site.unit = unit_for(site.ctx)
            site.ctx.where = site.where  # from here on set per execution (_UnitSite.run)
        except ValueOutOfRange as e:
            self.data_error(str(e), values=True)
        except SimulationError as e:
            if not site.lenient:
                raise
            self.data_error(str(e))
        return site

    def _bind_move(self, site: _MoveSite, where: str) -> None:
        """Resolve a transfer's views on the current state and copy once; keep the views
        when both are real views (of the GM array and of the tile's buffer)."""
        instr = site.instr
        tile = instr.outs[0] if site.load else instr.ins[0]
        view = instr.ins[0] if site.load else instr.outs[0]
        st = self._state(tile, where)
        window = self._gm_tile(view, where)
        rows, cols = st.rows, st.cols
        self._check_window(window, rows, cols, where)
        assert rows is not None and cols is not None  # _check_window matched the window's
        tview = self.tile_view(tile, st, rows, cols)
        to: np.ndarray
        frm: np.ndarray
        if site.load:
            to, frm = tview, window.reshape(rows, cols)
        else:
            # an Acc source is converted to the GM element type on the way out (FIXPIPE)
            to, frm = window, tview.reshape(window.shape)
        if site.atomic:  # the store's atomic mode adds to GM (after the FIXPIPE conversion)
            to += frm.astype(to.dtype)
        else:
            to[...] = frm
        value = self.views[view.name]
        arr = self.gm[self.values.get(value[0].name, value[0].name)]
        buf = self._buffer(tile.loc.buffer)
        gm_side, tile_side = (frm, to) if site.load else (to, frm)
        if np.may_share_memory(gm_side, arr) and np.may_share_memory(tile_side, buf):
            site.value, site.arr, site.to, site.frm = value, arr, to, frm
        else:
            site.value = site.arr = site.to = site.frm = None

    def _gm_tile(self, view, where: str) -> np.ndarray:
        """A GM window as the 2-D matrix a tile holds. An NZ view is 4-D or 5-D (..., column
        fractals, row fractals, 16, C0) (programming-model.md §3.3-4): element (r, c) of the
        matrix is [c // C0, r // 16, r % 16, c % C0]; other layouts' strides already say
        where element (r, c) lives."""
        window = self._gm_window(view, where)
        if self._view_layouts.get(view.name) == "nz" and window.ndim >= 4:
            n1, n2, r0, c0 = window.shape[-4:]
            lead = window.reshape(-1, n1, n2, r0, c0)
            if lead.shape[0] != 1:
                raise SimulationError(
                    f"{where}: an NZ window's leading dims must be 1, found {list(window.shape)}"
                )
            return lead[0].transpose(1, 2, 0, 3).reshape(n2 * r0, n1 * c0)
        return window

    @staticmethod
    def _check_window(window, rows, cols, where):
        # An N-D window moves as (product of the outer dims) x (last dim): the outer GM dims
        # iterate one copy each over consecutive tile rows (timing-model.md §5.2).
        shape = window.shape or (1,)
        outer = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        if (outer, shape[-1]) != (rows, cols):
            dims = "x".join(map(str, shape))
            raise SimulationError(
                f"{where}: GM window is {dims} ({outer}x{shape[-1]} as rows x "
                f"cols), the tile's valid region is {rows}x{cols}; they must "
                f"match"
            )


def _WHOLE_SOURCE(family: str, index: int) -> bool:
    """Sources read whole (their own valid region) rather than cut to the iteration domain:
    broadcast sources, matmul operands, move/extract sources, TSEL's packed mask,
    TGATHER's table, TCONCATIDX's sources and counts and TQUANT's per-row parameters."""
    return (
        family in ("rowexpand", "colexpand", "matmul", "move", "concat", "part", "sort")
        or family == "concatidx"
        or (family == "quant" and index >= 1)
        or (family in ("rowexpand_binary", "colexpand_binary") and index == 1)
        or (family in ("select", "gather") and index == 0)
    )
