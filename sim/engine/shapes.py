"""What an instruction's cost is computed from: its ``Shape``.

The interpreter's mixin that turns an instruction, in the current tile states and GM
views, into the ``sim.timing.Shape`` the latency tables are read with: the tile whose
geometry sets the iteration domain, the data path of a transfer and its GM layout, the
variant (in place, scalar first, precision) and the hints a vector op's cost needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from sim.base.errors import SimulationError
from sim.isa.precision import effective as effective_precision
from sim.isa.program import Const, PartView, Scalar
from sim.isa.tile import BLayout, Loc, Tile
from sim.timing import Shape
from sim.timing.banks import HINT as BANK_HINT
from sim.timing.banks import same_bank
from sim.timing.dma_geometry import Geometry
from sim.timing.hints import shape_hints

if TYPE_CHECKING:
    from sim.engine.tilestate import TileState
    from sim.isa.program import Function
    from sim.target.model import Target

__all__ = ["InstrShapes", "TAKES_VALID"]

_LOAD_PATH = {Loc.VEC: "GM_UB", Loc.MAT: "GM_L1"}
_STORE_PATH = {Loc.VEC: "UB_GM", Loc.MAT: "L1_GM", Loc.ACC: "L0C_GM"}
_MOVE_PATH = {
    (Loc.VEC, Loc.VEC): "UB_UB",
    (Loc.MAT, Loc.LEFT): "L1_L0A",
    (Loc.MAT, Loc.RIGHT): "L1_L0B",
    (Loc.MAT, Loc.BIAS): "L1_BT",
    (Loc.MAT, Loc.SCALING): "L1_FB",
    (Loc.ACC, Loc.MAT): "L0C_L1",
    (Loc.ACC, Loc.VEC): "L0C_UB",
}


# element-wise families whose destination has its first source's shape (_take_valid)
TAKES_VALID = frozenset(
    ("binary", "binary3", "unary", "scalar", "remainder", "convert")
    + ("rowexpand_binary", "colexpand_binary")
)


class InstrShapes:
    """Shape of an instruction in the interpreter's current state (a mixin of it)."""

    # What the interpreter provides (class-level declarations only, for the type checker).
    target: Target
    views: dict[str, tuple]
    tiles: dict[Tile, TileState]
    _placed: dict
    _calls: tuple  # the functions being called, outermost first
    fn: Function  # the function the unit starts in
    _view_layouts: dict[str, str]
    valid_of: Callable[[Tile], tuple[int | None, int | None]]
    _state: Callable[[Tile, str], TileState]

    def _placed_addr(self, tile: Tile) -> int | None:
        """Where placement put ``tile`` (None: the kernel places it), in the function
        running now: a tile that functions of the program allocate under one name and type
        is placed apart in each but the first, under (that function, the tile)
        (``sim.engine.placement``)."""
        addr = self._placed.get(tile)
        return self._placed.get((self._calls[-1] if self._calls else self.fn.name, tile), addr)

    def _nd_view(self, instr, spec) -> bool:
        """Whether a transfer's GM view has dims outside its 2-D window: its plan then
        depends on the view's outer extent (``_geometry``), not on its tiles alone."""
        fam = spec.family
        if fam in ("load", "mgather"):
            view = instr.ins[0]
        elif fam == "store":
            view = instr.outs[0]
        else:
            return False
        return len(self.views.get(view.name, (None, 0, ()))[2]) > 2

    def _plan_facts(self, instr, spec, srcs):
        """What ``_shape`` reads beyond the instruction's ``_form``, the target and its
        tiles' states: the geometry of a transfer's GM window, where placement put a binary
        op's sources (the bank conflict hint). Reading more there means adding it here
        (tests/test_plan_memo.py changes each part)."""
        fam = spec.family
        if fam in ("load", "mgather"):
            return self._geometry(instr.ins[0], instr.outs[0])
        if fam == "store":
            return self._geometry(instr.outs[0], srcs[0])
        if fam == "binary":
            return tuple(map(self._placed_addr, srcs))
        return None

    def _domain(self, instr, spec, srcs, where):
        """(tile whose geometry sets the path, iteration rows, cols)."""
        if spec.domain == "src" and srcs:
            t = srcs[0]
        elif isinstance(instr.outs[0], Tile):
            t = instr.outs[0]
        else:
            t = srcs[0]
        st = self._state(t, where)
        if st.rows is None or st.cols is None:
            raise SimulationError(
                f"{where}: tile %{t.name} has a dynamic valid region that was "
                f"never set (use set_validshape / valid_row=, valid_col=)"
            )
        return t, st.rows, st.cols

    def _shape(self, instr, spec, srcs, where) -> Shape:
        t, R, C = self._domain(instr, spec, srcs, where)
        dst = instr.outs[0]
        dt = t.dtype.name
        src_dt = srcs[0].dtype.name if srcs else ""
        path, variant = "", ""
        extra: tuple | Geometry = ()
        fam = spec.family
        if fam in ("load", "mgather"):
            # ASSUMPTION: MGATHER moves dst's bytes at the GM read rate of a TLOAD (the
            # reference gives no gather cost for the MTEs)
            path = _LOAD_PATH.get(dst.loc, "GM_UB")
            extra = self._geometry(instr.ins[0], dst)
        elif fam == "store":
            path = _STORE_PATH.get(srcs[0].loc, "UB_GM")
            extra = self._geometry(dst, srcs[0])
        elif fam == "move":
            path = _MOVE_PATH.get((srcs[0].loc, dst.loc), "UB_UB")
            extra = Geometry(dst.type.layout, "", dst.dtype.size_bytes)
        elif fam == "matmul":
            a, b = (srcs[-2], srcs[-1])
            ra, ca = self.valid_of(a)
            rb, cb = self.valid_of(b)
            # TGEMV: one row of A, k = B's valid rows (instructions.md §3.7)
            extra = (
                (1, rb, cb, a.dtype.name) if spec.name == "TGEMV" else (ra, ca, cb, a.dtype.name)
            )
        if isinstance(instr.ins[0], (Const, Scalar)) and fam == "scalar":
            variant = "scalar_tile"
        elif (
            srcs
            and isinstance(dst, Tile)
            and srcs[0].loc is dst.loc
            and self.tiles[srcs[0]].addr == self.tiles[dst].addr
        ):
            variant = "inplace"
        if not path and fam != "matmul":  # vector op: facts beyond the geometry
            hv, extra = shape_hints(
                instr.opcode,
                fam,
                instr.attrs,
                dst_col_major=isinstance(dst, Tile) and dst.type.blayout is BLayout.COL_MAJOR,
                has_tmp=sum(isinstance(o, Tile) for o in instr.ins) > len(srcs),
                precision=effective_precision(self.target, instr.opcode, instr.attrs, dt),
            )
            variant = hv or variant
            if instr.opcode == "TMRGSORT" and len(srcs) > 1:
                variant = "multi"  # merges its source lists (sim.timing.vsort)
        if fam == "binary" and len(srcs) >= 2 and srcs[0].loc is Loc.VEC and srcs[1].loc is Loc.VEC:
            # UB bank conflict between the two sources (ASSUMPTION, sim.timing.banks): only
            # for placement decisions, not for addresses the engine picked itself
            a, b = self.tiles[srcs[0]].addr, self.tiles[srcs[1]].addr
            if (
                self._placed_addr(srcs[0]) != a
                and self._placed_addr(srcs[1]) != b
                and same_bank(self.target, a, b)
            ):
                assert isinstance(extra, tuple)  # a vector op's hints, not a Geometry
                extra = (*extra, (BANK_HINT, True))
        if (
            fam in ("fillpad", "scatter")
            and isinstance(extra, tuple)
            and (dst.type.rows, dst.type.cols) != (t.type.rows, t.type.cols)
        ):  # the expand form fills the larger destination (sim.timing.vgather)
            extra = (*extra, ("dst_capacity", (dst.type.rows, dst.type.cols)))
        return Shape(
            instr.opcode,
            dt,
            t.type.rows,
            t.type.cols,
            t.type.valid_cols,
            R,
            C,
            src_dt,
            variant,
            path,
            extra,
        )

    def _geometry(self, view: PartView, tile: Tile) -> Geometry:
        """Layout facts a transfer's cost depends on (``sim.timing.dma_geometry``)."""
        gm_layout = self._view_layouts.get(view.name, "nd")
        ptr, _, sizes, _ = self.views.get(view.name, (None, 0, (), ()))
        outer = int(np.prod(sizes[:-2])) if gm_layout != "nz" and len(sizes) > 2 else 1
        size = (ptr.dtype if ptr is not None else tile.dtype).size_bytes
        return Geometry(tile.type.layout, gm_layout, size, max(1, outer))

    # what _take_valid uses of the interpreter (declarations for the type checker)
    warnings: dict[str, None]
    epoch: int
    mutations: int
    _where: Callable[..., str]

    def _take_valid(self, instr, src, seq) -> None:
        """An element-wise op into a tile whose dynamic valid region was never set: the
        destination takes its first source's (real compilers emit this, e.g. TMULS or
        TROWEXPANDMUL into a fresh ``v_row=?, v_col=?`` tile; the reference is silent, so
        this is an ASSUMPTION and each such instruction is reported once)."""
        dst = instr.outs[0]
        st = self.tiles.get(dst) if isinstance(dst, Tile) else None
        if st is None or (st.rows is not None and st.cols is not None):
            return
        s = self.tiles.get(src)
        if s is None or s.rows is None or s.cols is None:
            return
        if st.rows is None:
            st.rows = min(s.rows, dst.type.rows)
        if st.cols is None:
            st.cols = min(s.cols, dst.type.cols)
        self.epoch += 1
        self.mutations += 1
        self.warnings.setdefault(
            f"{self._where(seq, instr)}: warning: %{dst.name}'s dynamic valid region was never "
            f"set: it takes %{src.name}'s, {st.rows}x{st.cols} (ASSUMPTION: the reference is "
            f"silent; set_validshape or alloc_tile valid_row=/valid_col= states it)",
            None,
        )
