"""Tiles: 2-D operands that live in an on-chip buffer.

A tile type fixes everything the C++ ``Tile<Loc, T, Rows, Cols, BLayout, RowValid,
ColValid, SLayout, SFractalSize, PadValue>`` template fixes: the buffer it lives in
(``loc``: vec = UB, mat = L1, left = L0A, right = L0B, acc = L0C, bias = BT,
scaling = FB), the element type, the capacity ``rows x cols``, the outer and inner
(fractal "box") layout, and the valid region — the leading ``valid_rows x valid_cols``
rectangle that instructions iterate over. A valid extent of ``None`` is dynamic
(``DYNAMIC`` / ``?``): the program sets it at run time.

The compile-time legality rules of the C++ ``static_assert``s are checked when a type is
built, so an illegal tile type cannot exist. Target-specific rules (which op accepts
which type on which target) live in the verifier.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

from sim.base.errors import UserError
from sim.isa.dtypes import DType
from sim.isa.dtypes import dtype as _dtype

__all__ = ["Loc", "BLayout", "SLayout", "Pad", "TileType", "Tile", "DYNAMIC"]

DYNAMIC = None


class Loc(enum.Enum):
    """Location class of a tile, i.e. the on-chip buffer that holds it."""

    VEC = "vec"
    MAT = "mat"
    LEFT = "left"
    RIGHT = "right"
    ACC = "acc"
    BIAS = "bias"
    SCALING = "scaling"

    @property
    def buffer(self) -> str:
        """Name of the buffer (as in the machine description) this location maps to."""
        return _BUFFER_OF[self]


_BUFFER_OF = {
    Loc.VEC: "UB",
    Loc.MAT: "L1",
    Loc.LEFT: "L0A",
    Loc.RIGHT: "L0B",
    Loc.ACC: "L0C",
    Loc.BIAS: "BT",
    Loc.SCALING: "FB",
}


class BLayout(enum.Enum):
    ROW_MAJOR = "row_major"
    COL_MAJOR = "col_major"


class SLayout(enum.Enum):
    NONE_BOX = "none_box"
    ROW_MAJOR = "row_major"
    COL_MAJOR = "col_major"


class Pad(enum.IntEnum):
    NULL = 0
    ZERO = 1
    MAX = 2
    MIN = 3


def _enum(cls):
    def convert(value):
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            pass
        if isinstance(value, str):
            key = value.strip().upper().replace("-", "_")
            key = {"ROWMAJOR": "ROW_MAJOR", "COLMAJOR": "COL_MAJOR", "NONEBOX": "NONE_BOX"}.get(
                key, key
            )
            if key in cls.__members__:
                return cls.__members__[key]
        choices = ", ".join(str(m.value) for m in cls)
        raise UserError(f"invalid {cls.__name__} {value!r}; expected one of: {choices}")

    return convert


if TYPE_CHECKING:  # named for mypy's attrs plugin, which cannot type a converter made by a call

    def _to_loc(value: Any, /) -> Loc: ...
    def _to_blayout(value: Any, /) -> BLayout: ...
    def _to_slayout(value: Any, /) -> SLayout: ...
    def _to_pad(value: Any, /) -> Pad: ...

else:
    _to_loc, _to_blayout = _enum(Loc), _enum(BLayout)
    _to_slayout, _to_pad = _enum(SLayout), _enum(Pad)


def _valid(value):
    if value is None or value == "?" or value == -1:
        return None
    return int(value)


_LAYOUT_NAMES = {
    (BLayout.ROW_MAJOR, SLayout.NONE_BOX): "nd",
    (BLayout.COL_MAJOR, SLayout.NONE_BOX): "dn",
    (BLayout.COL_MAJOR, SLayout.ROW_MAJOR): "nz",
    (BLayout.ROW_MAJOR, SLayout.COL_MAJOR): "zn",
    (BLayout.ROW_MAJOR, SLayout.ROW_MAJOR): "zz",
    (BLayout.COL_MAJOR, SLayout.COL_MAJOR): "nn",
}


@attrs.frozen(cache_hash=True)
class TileType:
    """The static type of a tile (C++ ``Tile<...>`` / PTO IR ``!pto.tile_buf<...>``)."""

    loc: Loc = attrs.field(converter=_to_loc)
    dtype: DType = attrs.field(converter=_dtype)
    rows: int = attrs.field(converter=int)
    cols: int = attrs.field(converter=int)
    valid_rows: int | None = attrs.field(
        default=attrs.Factory(lambda self: self.rows, takes_self=True), converter=_valid
    )
    valid_cols: int | None = attrs.field(
        default=attrs.Factory(lambda self: self.cols, takes_self=True), converter=_valid
    )
    blayout: BLayout = attrs.field(default=BLayout.ROW_MAJOR, converter=_to_blayout)
    slayout: SLayout = attrs.field(default=SLayout.NONE_BOX, converter=_to_slayout)
    fractal: int = attrs.field(default=512, converter=int)
    pad: Pad = attrs.field(default=Pad.NULL, converter=_to_pad)
    compact: int = attrs.field(default=0, converter=int)

    def __attrs_post_init__(self):
        self._check()

    def _check(self) -> None:
        where = f"tile type {self.short()}"
        if self.rows <= 0 or self.cols <= 0:
            raise UserError(f"{where}: capacity must be positive, found {self.rows}x{self.cols}")
        # 0 is legal in the IR (an empty region, set later at run time) though the C++
        # template asserts 0 < valid: PTO IR files in the wild declare v_row=0
        for name, v, cap in (
            ("valid rows", self.valid_rows, self.rows),
            ("valid cols", self.valid_cols, self.cols),
        ):
            if v is not None and not 0 <= v <= cap:
                raise UserError(f"{where}: {name} must be in 0..{cap}, found {v}")
        if self.fractal not in (32, 512, 1024):
            raise UserError(f"{where}: fractal size must be 32, 512 or 1024, found {self.fractal}")
        if self.compact not in (0, 1, 2):
            raise UserError(f"{where}: compact must be 0, 1 or 2, found {self.compact}")
        size = self.dtype.size_bytes
        if self.slayout is SLayout.NONE_BOX:
            if self.blayout is BLayout.ROW_MAJOR and (self.cols * size) % 32:
                raise UserError(
                    f"{where}: a row-major tile needs cols*sizeof({self.dtype}) "
                    f"to be a multiple of 32 bytes, found {self.cols * size}"
                )
            if self.blayout is BLayout.COL_MAJOR and (self.rows * size) % 32:
                raise UserError(
                    f"{where}: a col-major tile needs rows*sizeof({self.dtype}) "
                    f"to be a multiple of 32 bytes, found {self.rows * size}"
                )
        else:
            box_r, box_c = self.box_shape
            if self.cols % box_c:
                raise UserError(
                    f"{where}: cols must be a multiple of the inner box width "
                    f"{box_c}, found {self.cols}"
                )
            if self.rows % box_r and not (
                self.loc is Loc.VEC or self.rows == 1 or self.fractal == 32
            ):
                raise UserError(
                    f"{where}: rows must be a multiple of the inner box height "
                    f"{box_r}, found {self.rows}"
                )

    @property
    def box_shape(self) -> tuple[int, int]:
        """Rows x cols of one inner fractal box (NZ/ZN layouts)."""
        if self.fractal == 1024:
            return 16, 16
        if self.fractal == 32:
            return 1, 32 // self.dtype.size_bytes
        per_block = 32 // self.dtype.size_bytes
        if self.slayout is SLayout.COL_MAJOR:
            return per_block, 16
        return 16, per_block

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.dtype.size_bytes

    @property
    def is_row_major(self) -> bool:
        return self.blayout is BLayout.ROW_MAJOR and self.slayout is SLayout.NONE_BOX

    @property
    def layout(self) -> str:
        """The layout's common name (programming-model.md §3.3): nd, dn, nz, zn, zz, nn."""
        return _LAYOUT_NAMES[self.blayout, self.slayout]

    @property
    def is_dynamic(self) -> bool:
        return self.valid_rows is None or self.valid_cols is None

    @property
    def row_stride(self) -> int:
        """Elements between row i and row i+1 (the capacity width for row-major)."""
        return self.cols if self.blayout is BLayout.ROW_MAJOR else 1

    def short(self) -> str:
        vr = "?" if self.valid_rows is None else self.valid_rows
        vc = "?" if self.valid_cols is None else self.valid_cols
        s = f"{self.loc.value} {self.rows}x{self.cols}x{self.dtype}"
        if (vr, vc) != (self.rows, self.cols):
            s += f" valid={vr}x{vc}"
        return s

    def with_valid(self, rows: int | None, cols: int | None) -> TileType:
        return attrs.evolve(self, valid_rows=rows, valid_cols=cols)


@attrs.frozen(cache_hash=True)
class Tile:
    """A named tile buffer of a program (C++ tile object / PTO IR ``alloc_tile`` result).

    ``addr`` is the byte offset inside its buffer when the tile was placed by hand at
    declaration (``TASSIGN`` / ``alloc_tile addr=``), or ``None`` when the simulator
    places it (auto mode). A program may also re-bind it later with ``TASSIGN``.
    """

    name: str
    type: TileType

    @property
    def loc(self) -> Loc:
        return self.type.loc

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    def __str__(self) -> str:
        return f"%{self.name}"
