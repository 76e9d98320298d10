"""The program IR shared by every front end.

A program is a module of functions; a function has arguments (GM pointers and scalars)
and a body: an ordered tuple of statements. Statements mirror PTO IR level 3, so the
Python builder and the ``.pto`` parser produce the same objects and a printer can write
any program back as text:

* ``Alloc``            a tile buffer comes into existence (``pto.alloc_tile``), optionally
                       at a fixed address (manual placement) and with run-time valid extents;
* ``MakeTensorView``   a GM pointer seen as a strided N-D tensor;
* ``PartitionView``    a window of a tensor view (what TLOAD / TSTORE move);
* ``Instr``            one PTO tile instruction in destination-passing form;
* ``SetValidShape``    change a dynamic tile's valid region;
* ``Subview`` / ``Reshape``   a tile aliasing (a window of) another tile's bytes;
* ``SetFlag`` / ``WaitFlag`` / ``Barrier``   level-3 synchronisation;
* ``SyncSet`` / ``SyncWait`` / ``SyncAll`` / ``SetFfts``   cross-core (FFTS) flags and the
  all-core barrier between the units and cores of a chip;
* ``Arith``, ``ScalarOp``, ``For``, ``If``, ``Call``, ``Section`` ...  scalar code and control
  flow, which the engine runs with concrete values.

Every value is an immutable object compared by value, so two programs built the same way
are equal. Source locations ride along for diagnostics but never take part in equality.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from sim.isa.dtypes import DType
from sim.isa.dtypes import dtype as _dtype
from sim.isa.tile import Tile

if TYPE_CHECKING:
    # ``tuple`` as a converter, named for mypy's attrs plugin (which cannot type the
    # generic builtin there); at run time the builtin itself, no extra call

    def _tuple(items: Iterable[Any], /) -> tuple: ...

else:
    _tuple = tuple

__all__ = [
    "SourceLoc",
    "Const",
    "Scalar",
    "GmPtr",
    "TensorView",
    "PartView",
    "Operand",
    "RawAttr",
    "Alloc",
    "MakeTensorView",
    "PartitionView",
    "Instr",
    "SetValidShape",
    "SetFlag",
    "WaitFlag",
    "Barrier",
    "SyncSet",
    "SyncWait",
    "SyncAll",
    "SetFfts",
    "FFTS_MODES",
    "SYNCALL_MODES",
    "SYNCALL_CORE_TYPES",
    "Arith",
    "ScalarOp",
    "Subview",
    "Reshape",
    "Yield",
    "For",
    "If",
    "Call",
    "Return",
    "Section",
    "PipeOp",
    "walk",
    "Function",
    "Program",
    "KernelLike",
    "Stmt",
]


@attrs.frozen(cache_hash=True)
class SourceLoc:
    """Where a statement came from: ``file:line:col`` (col 0 when unknown)."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}" if self.col else f"{self.file}:{self.line}"


def _attr_items(items) -> tuple:
    """An attribute dictionary as sorted (key, value) pairs (hashable, order-free)."""
    if not items:  # the usual case, and statements the passes make in bulk (flags)
        return ()
    return tuple(sorted(dict(items).items()))


def _loc_field():
    return attrs.field(default=None, eq=False, repr=False, kw_only=True)


# --- values ------------------------------------------------------------------------------


def scalar_key(value, type_name: str = "") -> tuple:
    """What tells two literal scalars of one IR type apart: for a float (a float value, or
    any value of a float type) its binary64 bit pattern, else the integer. ``0.0 == -0.0``
    and ``nan != nan`` in Python, but ``x / -0.0`` is ``-inf`` and a NaN's payload is
    data: a table keyed by the value itself would run one constant in place of another."""
    if isinstance(value, float) or (
        type_name.startswith(("f", "bf")) and isinstance(value, int) and abs(value) < 2**1000
    ):
        return (float, struct.pack("<d", float(value)))
    return (int, value)


@attrs.frozen(eq=False)
class Const:
    """A literal scalar with its IR type (``index``, ``i32``, ``f32``, ``i1`` ...). Two
    constants are equal when their types and bit patterns are (``scalar_key``): ``-0.0``
    is not ``0.0``, a NaN equals the NaN of the same payload, ``-2`` of type ``f32`` is
    ``-2.0``."""

    value: int | float | bool
    type: str = "index"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Const:
            return NotImplemented
        return self.type == other.type and scalar_key(self.value, self.type) == scalar_key(
            other.value, other.type
        )

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((Const, self.type, scalar_key(self.value, self.type)))

    def __str__(self) -> str:
        return repr(self.value)


@attrs.frozen(cache_hash=True)
class Scalar:
    """A named scalar SSA value: a kernel argument or the result of scalar code."""

    name: str
    type: str = "index"

    def __str__(self) -> str:
        return f"%{self.name}"


@attrs.frozen(cache_hash=True)
class GmPtr:
    """A global-memory pointer argument (``!pto.ptr<T>``)."""

    name: str
    dtype: DType = attrs.field(converter=_dtype)

    def __str__(self) -> str:
        return f"%{self.name}"


@attrs.frozen(cache_hash=True)
class TensorView:
    """A GM tensor view value (``!pto.tensor_view<d0 x d1 x T>``); ``None`` dims are ``?``."""

    name: str
    dtype: DType = attrs.field(converter=_dtype)
    shape: tuple = attrs.field(converter=_tuple)

    def __str__(self) -> str:
        return f"%{self.name}"


@attrs.frozen(cache_hash=True)
class PartView:
    """A window of a tensor view (``!pto.partition_tensor_view<r x c x T>``)."""

    name: str
    dtype: DType = attrs.field(converter=_dtype)
    shape: tuple = attrs.field(converter=_tuple)

    def __str__(self) -> str:
        return f"%{self.name}"


Operand = Tile | Const | Scalar | GmPtr | TensorView | PartView


@attrs.frozen(cache_hash=True)
class RawAttr:
    """An attribute value kept as its source text (``#pto.kernel_kind<vector>``,
    ``[1, 2]``, ``1 : i32``, ``unit`` for a key written without a value ...): printed back
    verbatim. Attributes the engine reads are normalised instead (``rmode`` -> ``"RINT"``,
    ``cmpMode`` -> ``"lt"``, plain numbers, booleans and strings -> Python values)."""

    text: str

    def __str__(self) -> str:
        return self.text


# --- statements ----------------------------------------------------------------------------


@attrs.frozen
class Alloc:
    tile: Tile
    addr: Const | Scalar | None = None
    valid_row: Const | Scalar | None = None
    valid_col: Const | Scalar | None = None
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class MakeTensorView:
    result: TensorView
    ptr: GmPtr
    shape: tuple = attrs.field(converter=_tuple)
    strides: tuple = attrs.field(converter=_tuple)
    layout: str = "nd"
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class PartitionView:
    result: PartView
    source: TensorView
    offsets: tuple = attrs.field(converter=_tuple)
    sizes: tuple = attrs.field(converter=_tuple)
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen(cache_hash=True)
class Instr:
    """One PTO tile instruction: ``pto.<op> ins(...) outs(...) {attrs}``."""

    opcode: str
    outs: tuple = attrs.field(converter=_tuple)
    ins: tuple = attrs.field(converter=_tuple)
    attrs: tuple = attrs.field(default=(), converter=lambda a: tuple(sorted(dict(a).items())))
    loc: SourceLoc | None = _loc_field()

    def attr(self, key, default=None):
        return dict(self.attrs).get(key, default)

    @property
    def operand_text(self) -> str:
        """``outs <- ins`` as %names and literals (the trace's ``operands`` column)."""
        return ", ".join(str(o) for o in self.outs) + " <- " + ", ".join(str(o) for o in self.ins)

    @property
    def tiles_in(self) -> tuple:
        return tuple(o for o in self.ins if isinstance(o, Tile))

    @property
    def scalars_in(self) -> tuple:
        return tuple(o for o in self.ins if isinstance(o, (Const, Scalar)))


@attrs.frozen
class SetValidShape:
    tile: Tile
    rows: Const | Scalar
    cols: Const | Scalar
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class SetFlag:
    """``set_flag(src, dst, id)``: issued on ``src``; fires when earlier ``src`` work is done."""

    src: str
    dst: str
    event: int | Scalar  # an event id, or a scalar holding one (auto mode's parity)
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class WaitFlag:
    """``wait_flag(src, dst, id)``: issued on ``dst``; blocks it until the flag is set."""

    src: str
    dst: str
    event: int | Scalar  # an event id, or a scalar holding one (auto mode's parity)
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class Barrier:
    """``pipe_barrier(pipe)``: later work on ``pipe`` (every pipe for PIPE_ALL) waits.
    ``fence`` names the scope of the ``pto.fence.barrier_all`` it comes from ("" for a
    plain barrier): a fence orders GM for other cores and is no sign of hand-written sync."""

    pipe: str
    fence: str = ""
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


# --- cross-core synchronisation (FFTS) -------------------------------------------------------

FFTS_MODES = (0, 1, 2)  # all cores of one type / the AIVs of a core / AIC <-> AIV
SYNCALL_MODES = ("soft", "hard")
SYNCALL_CORE_TYPES = ("aiv_only", "aic_only", "mix")


@attrs.frozen
class SyncSet:
    """``pto.sync.set #pto.pipe<P>, flag {ffts_mode = m}``: a cross-core flag (FFTS,
    ``ffts_cross_core_sync``) set when earlier work on ``pipe`` is done. ``flag`` is an
    ``int`` or a run-time ``Scalar``; ``mode`` is None when the text gives no
    ``ffts_mode`` (the engine's default applies). ``intra``: A5's ``pto.set_intra_block``
    (no mode; the id addresses a vector sub-block)."""

    pipe: str
    flag: int | Scalar
    mode: int | None = None
    intra: bool = False
    loc: SourceLoc | None = _loc_field()


@attrs.frozen
class SyncWait:
    """``pto.sync.wait #pto.pipe<P>, flag {ffts_mode = m}``: blocks ``pipe`` until the
    cross-core flag is set (``wait_flag_dev``); ``intra``: ``pto.wait_intra_block``."""

    pipe: str
    flag: int | Scalar
    mode: int | None = None
    intra: bool = False
    loc: SourceLoc | None = _loc_field()


@attrs.frozen
class SyncAll:
    """``pto.syncall(operands) mode = #pto.sync_all_mode<soft|hard>, core_type =
    #pto.sync_core_type<aiv_only|aic_only|mix>``: every participating unit of every
    launched core waits here until all of them arrived. ``operands`` (0-3: the soft
    barrier's GM / UB workspaces and core count) are kept as written."""

    mode: str
    core_type: str
    operands: tuple = attrs.field(default=(), converter=_tuple)
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class SetFfts:
    """``pto.set_ffts %addr : T``: sets the FFTS base address (``set_ffts_base_addr``)."""

    value: object
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


# --- scalar code and control flow (MLIR arith / scf / func, and PTO scalar ops) ----------


@attrs.frozen
class Arith:
    """A scalar op: ``%r = arith.addi %a, %b : index``, ``arith.constant``, ``arith.cmpi slt``...

    ``op`` is the full MLIR name; ``attrs`` holds e.g. the cmpi/cmpf predicate; ``type`` is
    the result type.
    """

    result: Scalar
    op: str
    operands: tuple = attrs.field(converter=_tuple)
    attrs: tuple = attrs.field(default=(), converter=lambda a: tuple(sorted(dict(a).items())))
    loc: SourceLoc | None = _loc_field()


@attrs.frozen
class ScalarOp:
    """A PTO scalar-side op with scalar results: ``pto.get_block_idx``, ``pto.load_scalar``,
    ``pto.store_scalar`` (no result), ``pto.get_subblock_idx`` ..."""

    results: tuple = attrs.field(converter=_tuple)
    op: str = ""
    operands: tuple = attrs.field(default=(), converter=_tuple)
    attrs: tuple = attrs.field(default=(), converter=lambda a: tuple(sorted(dict(a).items())))
    loc: SourceLoc | None = _loc_field()


@attrs.frozen
class Subview:
    """``%s = pto.subview %t[offsets] sizes [..] [valid [..]]`` / ``pto.subset``: a tile
    aliasing a window of another tile's bytes."""

    result: Tile
    source: Tile
    offsets: tuple = attrs.field(converter=_tuple)
    sizes: tuple = attrs.field(converter=_tuple)
    valid: tuple = attrs.field(default=(), converter=_tuple)
    op: str = "pto.subview"
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class Reshape:
    """``%r = pto.treshape %t : !pto.tile_buf<A> -> !pto.tile_buf<B>``: a tile of type B
    aliasing all of ``source``'s bytes (same buffer, same total bytes); its valid region
    is the one B declares."""

    result: Tile
    source: Tile
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class Yield:
    values: tuple = attrs.field(default=(), converter=_tuple)
    loc: SourceLoc | None = _loc_field()


@attrs.frozen
class For:
    """``scf.for %iv = %lb to %ub step %s iter_args(%x = %init) -> (T)``; the body ends with
    a ``Yield`` of the next iter values when there are any."""

    iv: Scalar
    lower: Const | Scalar
    upper: Const | Scalar
    step: Const | Scalar
    body: tuple = attrs.field(converter=_tuple)
    iter_args: tuple = attrs.field(default=(), converter=_tuple)  # Scalars bound in the body
    inits: tuple = attrs.field(default=(), converter=_tuple)  # their initial operands
    results: tuple = attrs.field(default=(), converter=_tuple)  # Scalars after the loop
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class If:
    cond: Const | Scalar
    then_body: tuple = attrs.field(converter=_tuple)
    else_body: tuple = attrs.field(default=(), converter=_tuple)
    results: tuple = attrs.field(default=(), converter=_tuple)
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class Call:
    callee: str
    args: tuple = attrs.field(default=(), converter=_tuple)
    results: tuple = attrs.field(default=(), converter=_tuple)
    loc: SourceLoc | None = _loc_field()


@attrs.frozen
class Return:
    values: tuple = attrs.field(default=(), converter=_tuple)
    loc: SourceLoc | None = _loc_field()


@attrs.frozen
class Section:
    """``pto.section.cube { ... }`` / ``pto.section.vector { ... }``: code for one core kind."""

    kind: str  # "cube" | "vector"
    body: tuple = attrs.field(converter=_tuple)
    loc: SourceLoc | None = _loc_field()
    # attributes the simulator does not read (kept so the printed program carries them)
    attrs: tuple = attrs.field(default=(), converter=_attr_items, kw_only=True)


@attrs.frozen
class PipeOp:
    """Cube<->vector pipe ops (``reserve_buffer``, ``import_reserved_buffer``,
    ``aic_initialize_pipe``, ``talloc_*``, ``tpush_*``, ``tpop_*``, ``tfree_*``) kept
    verbatim: parsed, checked and printed here; ``sim.engine.xunit`` runs them."""

    results: tuple = attrs.field(converter=_tuple)
    op: str = ""
    operands: tuple = attrs.field(default=(), converter=_tuple)
    attrs: tuple = attrs.field(default=(), converter=lambda a: tuple(sorted(dict(a).items())))
    loc: SourceLoc | None = _loc_field()


Stmt = (
    Alloc
    | MakeTensorView
    | PartitionView
    | Instr
    | SetValidShape
    | SetFlag
    | WaitFlag
    | Barrier
    | SyncSet
    | SyncWait
    | SyncAll
    | SetFfts
    | Arith
    | ScalarOp
    | Subview
    | Reshape
    | Yield
    | For
    | If
    | Call
    | Return
    | Section
    | PipeOp
)


def walk(body):
    """Every statement of ``body`` and of the regions nested in it (loops, branches,
    sections), in program text order."""
    for st in body:
        yield st
        if isinstance(st, (For, Section)):
            yield from walk(st.body)
        elif isinstance(st, If):
            yield from walk(st.then_body)
            yield from walk(st.else_body)


@attrs.frozen
class Function:
    """``func.func [private] @name(args) [-> results] [attributes {...}] { body }``."""

    name: str
    args: tuple = attrs.field(converter=_tuple)
    body: tuple = attrs.field(converter=_tuple)
    private: bool = attrs.field(default=False, kw_only=True)
    result_types: tuple = attrs.field(default=(), converter=_tuple, kw_only=True)
    attrs: tuple = attrs.field(default=(), converter=lambda a: tuple(sorted(dict(a).items())))


@runtime_checkable
class KernelLike(Protocol):
    """What the layers below the kernel builder read of a builder ``sim.Kernel``, where
    users may hand one instead of a ``Program``: the program it builds, its GM arrays'
    initial data and its launch size."""

    inputs: dict[str, Any]
    block_dim: int

    def program(self) -> Program: ...


@attrs.frozen
class Program:
    """A module: its functions, the entry function's name and module attributes.

    ``warnings``: what the front end found legal but not modelled (an attribute key the
    simulator does not read), one located line each; they take no part in equality."""

    functions: tuple = attrs.field(converter=_tuple)
    entry: str = ""
    # (before ``attrs``, which shadows the module in the class body)
    warnings: tuple = attrs.field(default=(), converter=_tuple, eq=False, repr=False, kw_only=True)
    attrs: tuple = attrs.field(default=(), converter=lambda a: tuple(sorted(dict(a).items())))

    def function(self, name: str | None = None) -> Function:
        name = name or self.entry or self.functions[0].name
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def main(self) -> Function:
        return self.function()

    def callee(self, call: Call) -> Function:
        """The function a ``func.call`` reaches, checked: it exists and takes as many
        arguments as the call passes (``UserError`` naming the call otherwise)."""
        from sim.base.errors import UserError

        where = f" ({call.loc})" if call.loc else ""
        try:
            fn = self.function(call.callee)
        except KeyError:
            raise UserError(f"func.call{where}: no function @{call.callee}") from None
        if len(fn.args) != len(call.args):
            raise UserError(
                f"func.call @{call.callee}{where}: expected {len(fn.args)} "
                f"arguments, found {len(call.args)}"
            )
        return fn

    def kernels(self) -> tuple:
        """Names of the functions a run could start at: those marked ``pto.entry``, else the
        public functions with a body that no function calls."""
        marked = tuple(f.name for f in self.functions if "pto.entry" in dict(f.attrs))
        if marked:
            return marked
        called = {st.callee for f in self.functions for st in walk(f.body) if isinstance(st, Call)}
        return tuple(
            f.name for f in self.functions if f.body and not f.private and f.name not in called
        )
