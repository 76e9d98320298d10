"""The values the builder hands out and takes back: RecordEvent tokens, GM tensors and their
windows, run-time indices, and where in the user's code a statement came from.

``Kernel`` (``sim.kernel.builder``) and its chip half (``sim.kernel.chip``) both make and
read these; they live here so that the builder extends the chip builder in one direction.
"""

from __future__ import annotations

import operator
import re
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from sim.base.errors import UserError
from sim.isa.opcodes import PIPES
from sim.isa.program import Arith, Const, Scalar, SourceLoc

if TYPE_CHECKING:
    from sim.isa.dtypes import DType

__all__ = ["Event", "GlobalTensor", "View", "Index"]

_PIPE_ALIASES = {p.removeprefix("PIPE_"): p for p in PIPES} | {"ALL": "PIPE_ALL"}


def _pipe_name(p: str) -> str:
    name = str(p).upper()
    name = _PIPE_ALIASES.get(name, name)
    if name not in PIPES and name != "PIPE_ALL":
        raise UserError(f"unknown pipe {p!r}; expected one of {', '.join(PIPES)}, PIPE_ALL")
    return name


_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)  # the sim package
_BUILDER = __name__.rpartition(".")[0] + "."  # sim.kernel.: the builder's modules


_FRAMES: dict = {}  # id(code object) -> (it, 0: the builder's own frame (skipped), 1: sim's,
#                         2: user code)
_SITES: dict = {}  # (id(code object), f_lasti) -> (it, its SourceLoc): one per call site
_LOCS: dict = {}  # (file, line) -> its SourceLoc: one object per line of user code
_CACHE_LIMIT = 1 << 16  # entries each cache keeps before it starts again (a long sweep loads
#                         many kernels, each new code objects)


def _frame_kind(f) -> int:
    name = f.f_globals.get("__name__", "")
    if name.startswith(_BUILDER):
        return 0
    if f.f_code.co_filename.startswith(("<frozen", _PACKAGE_DIR)) or name.startswith("sim."):
        return 1
    return 2


def _caller(depth: int = 2) -> SourceLoc | None:
    """file:line of the user code that called into the builder (frames of sim itself,
    such as ``ptosim op``'s generated kernels, carry no user location). ``depth``: the
    first frame that may be the user's (2: the caller of the builder method calling this;
    a method reached only through another builder method passes one more).

    Called for every statement, so what a frame is (the builder's, sim's, the user's) is
    worked out once per code object and the location once per call site (code object and
    instruction offset: ``f_lineno`` is computed from the line table on every read), one
    object per source line. The caches key code objects by identity — a code object's
    hash is computed from its contents on every lookup — and keep the object itself to
    tell a new one that took a freed one's id."""
    f = sys._getframe(depth)
    code = f.f_code
    got = _SITES.get((id(code), f.f_lasti))  # a user call site seen before: done
    if got is not None and got[0] is code:
        return got[1]
    kind = 0
    g: FrameType | None = f
    while g is not None:
        code = g.f_code
        got = _FRAMES.get(id(code))
        if got is None or got[0] is not code:
            if len(_FRAMES) > _CACHE_LIMIT:
                _FRAMES.clear()
            got = _FRAMES[id(code)] = (code, _frame_kind(g))
        kind = got[1]
        if kind:
            f = g
            break
        g = g.f_back
    if kind != 2:
        return None
    site = (id(code), f.f_lasti)
    got = _SITES.get(site)
    if got is not None and got[0] is code:
        return got[1]
    key = (code.co_filename, f.f_lineno)
    loc = _LOCS.get(key)
    if loc is None:
        if len(_LOCS) > _CACHE_LIMIT:
            _LOCS.clear()
        loc = _LOCS[key] = SourceLoc(*key)
    if len(_SITES) > _CACHE_LIMIT:
        _SITES.clear()
    _SITES[site] = (code, loc)
    return loc


class Event:
    """A RecordEvent token: marks one issued instruction that later ones may wait on."""

    __slots__ = ("kernel", "index", "pipe", "section", "waited", "known")

    def __init__(self, kernel: Any, index: int, pipe: str) -> None:  # kernel: a sim.Kernel
        self.kernel, self.index, self.pipe = kernel, index, pipe
        self.section = section = kernel._section  # where it was issued
        self.waited: tuple[str, ...] = ()  # the pipes that have waited on it (few: a tuple)
        clocks = kernel._clocks
        self.known = clocks.snaps.get((section, pipe)) or clocks.passed(section, pipe)

    def __repr__(self) -> str:
        return f"Event(#{self.index} on {self.pipe})"


class View:
    """A 2-D window of a global tensor (what TLOAD reads and TSTORE writes)."""

    __slots__ = ("tensor", "row", "col", "rows", "cols")

    def __init__(self, tensor, row, col, rows, cols):
        self.tensor, self.row, self.col, self.rows, self.cols = tensor, row, col, rows, cols


_STATIC = frozenset((int, type(None)))  # slice bounds known when the kernel is built


def _text(k: slice) -> str:
    """A slice as the kernel wrote it (``0:32``, ``:8``, ``-4:``)."""
    return f"{'' if k.start is None else k.start}:{'' if k.stop is None else k.stop}"


class GlobalTensor:
    """A GM array argument of the kernel, seen as a row-major 2-D tensor."""

    def __init__(
        self, kernel: Any, name: str, dt: DType, shape: tuple[int, int], data: Any
    ) -> None:  # kernel: the sim.Kernel that declared it
        self.kernel, self.name, self.dtype, self.shape = kernel, name, dt, shape
        self.data = data

    def view(
        self,
        rows: int | None = None,
        cols: int | None = None,
        row: int | Index = 0,
        col: int | Index = 0,
    ) -> View:
        """A window; ``row`` / ``col`` may be run-time ``Index`` values (then ``rows`` /
        ``cols`` are required and the bounds are checked when the kernel runs)."""
        R, C = self.shape
        dynamic = isinstance(row, Index) or isinstance(col, Index)
        if dynamic and (rows is None or cols is None):
            raise UserError(f"view of {self.name}: a run-time offset needs explicit rows and cols")
        rows = R - row if rows is None else rows
        cols = C - col if cols is None else cols
        if (
            rows <= 0
            or cols <= 0
            or rows > R
            or cols > C
            or not isinstance(row, Index)  # not dynamic
            and not isinstance(col, Index)
            and (row < 0 or col < 0 or row + rows > R or col + cols > C)
        ):
            raise UserError(
                f"view of {self.name}: window rows [{row}, {row} + {rows}) x cols "
                f"[{col}, {col} + {cols}) is outside the {R}x{C} tensor"
            )
        return View(self, row, col, rows, cols)

    def __getitem__(self, key) -> View:
        if type(key) is tuple and len(key) == 2:
            r, c = key  # a[r0:r1, c0:c1] of literal bounds, as a loop slices: no Index
            if (
                type(r) is slice
                and type(c) is slice
                and type(r.start) in _STATIC
                and type(r.stop) in _STATIC
                and type(c.start) in _STATIC
                and type(c.stop) in _STATIC
                and r.step is None
                and c.step is None
            ):
                r0, r1 = self._span(r, 0)
                c0, c1 = self._span(c, 1)
                if r1 > r0 and c1 > c0:  # inside the tensor (_span): view()'s checks hold
                    return View(self, r0, c0, r1 - r0, c1 - c0)
        if not isinstance(key, tuple):
            key = (key, slice(None))
        if len(key) != 2:
            raise UserError(
                f"view of {self.name}: expected a[rows, cols] (two slices), found "
                f"{len(key)} subscripts"
            )
        spans: list[tuple[Any, Any]] = []
        for axis, k in enumerate(key):  # two: checked above
            # a window is contiguous rows and columns: an integer or a stepped slice is
            # something else, refused rather than read as a window it is not
            if not isinstance(k, slice):
                raise UserError(
                    f"view of {self.name}: expected a slice such as a[r0:r1, c0:c1], found {k!r}"
                )
            if k.step not in (None, 1):
                raise UserError(
                    f"view of {self.name}: a window takes every row and column "
                    f"of its span; a step is not supported, found {k!r}"
                )
            if isinstance(k.start, Index) or isinstance(k.stop, Index):
                if not isinstance(k.start, Index) or not isinstance(k.stop, Index):
                    raise UserError(
                        f"view of {self.name}: a run-time slice needs start and "
                        f"stop of one Index (e.g. a[r:r + 128]), found {k!r}"
                    )
                spans.append((k.start, k.stop - k.start))
            else:
                a, b = self._span(k, axis)
                spans.append((a, b - a))
        (r0, nr), (c0, nc) = spans
        return self.view(nr, nc, r0, c0)

    def _span(self, k: slice, axis: int) -> tuple[int, int]:
        """[start, stop) of a literal slice of dim ``axis``, negative bounds counted from
        the end as Python does; a bound past the tensor is refused, not clamped (``x[0:32]``
        of 16 rows would otherwise be a 16-row window the kernel did not ask for)."""
        n = self.shape[axis]
        bounds = []
        for b, default in ((k.start, 0), (k.stop, n)):
            try:
                b = default if b is None else operator.index(b)  # numpy integers too
            except TypeError:
                raise UserError(
                    f"view of {self.name}: a slice bound is an int or an Index, found {b!r}"
                ) from None
            if not -n <= b <= n:
                what = ("rows", "cols")[axis]
                raise UserError(
                    f"view of {self.name}: {what} {_text(k)} reach past the tensor's {n} "
                    f"{what} (shape {self.shape[0]}x{self.shape[1]})"
                )
            bounds.append(b + n if b < 0 else b)
        return bounds[0], bounds[1]


class Index:
    """A run-time ``index`` value: ``base + offset`` where ``base`` names a scalar."""

    __slots__ = ("kernel", "scalar", "base", "offset")

    def __init__(self, kernel, scalar: Scalar, base: Scalar | None = None, offset: int = 0):
        self.kernel, self.scalar = kernel, scalar
        self.base, self.offset = (scalar, 0) if base is None else (base, offset)

    def _op(self, op: str, other, swap=False) -> Index:
        k = self.kernel
        rhs: Scalar | Const
        if isinstance(other, Index):
            rhs = other.scalar
        elif isinstance(other, int):
            rhs = Const(int(other))
        else:
            return NotImplemented
        res = Scalar(k._fresh("i"), "index")
        operands = (rhs, self.scalar) if swap else (self.scalar, rhs)
        k._emit(Arith(res, f"arith.{op}", operands))
        if op == "addi" and isinstance(other, int):
            return Index(k, res, self.base, self.offset + other)
        if op == "subi" and isinstance(other, int) and not swap:
            return Index(k, res, self.base, self.offset - other)
        return Index(k, res)

    def __add__(self, other):
        return self._op("addi", other)

    __radd__ = __add__

    def __mul__(self, other):
        return self._op("muli", other)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return self._op("floordivsi", other)

    def __mod__(self, other):
        return self._op("remsi", other)

    def __sub__(self, other):
        if isinstance(other, Index) and other.base == self.base:
            return self.offset - other.offset  # a static size
        return self._op("subi", other)

    def __rsub__(self, other):
        return self._op("subi", other, swap=True)

    def __repr__(self) -> str:
        return f"Index(%{self.scalar.name})"


_IR_NAME = re.compile(r"[A-Za-z0-9_$.\-]+")


def ir_name(name, what: str = "name") -> str:
    """``name`` when PTO IR can spell it (``%name``, ``@name``: letters, digits and
    ``_ $ . -``); anything else (a space, a newline, a quote) would print as IR that does
    not parse back, so it is refused here, where the kernel names it."""
    if not isinstance(name, str) or not _IR_NAME.fullmatch(name):
        raise UserError(
            f"{_caller()}: {what} {name!r}: PTO IR names are letters, digits and _ $ . - "
            f"(no spaces, newlines or other characters)"
        )
    return name
