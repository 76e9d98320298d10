"""IR facts the placement passes share: which pipe an instruction runs on and which bytes
it reads and writes, statically (no simulation).

Tile accesses cover the tile's whole capacity ``[addr, addr + nbytes)`` (a conservative
may-alias: the valid region is a run-time fact). A subview touches its source tile's
bytes. A GM view touches the hull of its window when the offsets, sizes, shape and
strides are constants, else the whole tensor. Distinct GM arguments are assumed not to
alias (as the engine assumes).
"""

from __future__ import annotations

import re

import attrs

from sim.base.errors import UserError
from sim.isa.opcodes import opcode as _opcode
from sim.isa.program import (
    Alloc,
    Arith,
    Const,
    Instr,
    MakeTensorView,
    PartitionView,
    PartView,
    PipeOp,
    Reshape,
    Subview,
    walk,
)
from sim.isa.tile import Loc, Tile

__all__ = [
    "Access",
    "pipe_of",
    "tile_roles",
    "Views",
    "Aliases",
    "Fifos",
    "AutoUnsupported",
    "check_supported",
    "constant_addresses",
    "fifo_reserves",
    "reserve_of",
    "ALL",
]

ALL = 1 << 62  # "to the end of the space" for unknown GM windows


@attrs.frozen
class Access:
    """Bytes ``[lo, hi)`` of ``space`` (a buffer name or ``GM:<arg>``), read or written."""

    space: str
    lo: int
    hi: int
    write: bool
    name: str = ""

    def conflicts(self, other: Access) -> bool:
        return (
            self.space == other.space
            and (self.write or other.write)
            and self.lo < other.hi
            and other.lo < self.hi
        )


def pipe_of(instr: Instr) -> str:
    spec = _opcode(instr.opcode)
    return spec.pipe(
        [o.loc if isinstance(o, Tile) else None for o in instr.outs],
        [o.loc if isinstance(o, Tile) else None for o in instr.ins],
    )


def tile_roles(instr: Instr) -> list[tuple[Tile, bool, bool]]:
    """``(tile, reads, writes)`` for every tile operand (the engine's srcs / tmp split:
    a trailing tile beyond the signature's sources is a scratch tile, read and written)."""
    spec = _opcode(instr.opcode)
    out = [(o, False, True) for o in instr.outs if isinstance(o, Tile)]
    tiles_in = [o for o in instr.ins if isinstance(o, Tile)]
    n_req = max(sig.split().count("T") for sig in spec.ins)
    for i, t in enumerate(tiles_in):
        out.append((t, True, i >= n_req))
    return out


def _const(x):
    return int(x.value) if isinstance(x, Const) else None


class Views:
    """GM windows of the tensor / partition views of a program (static hulls)."""

    def __init__(self, fn):
        self.tensors: dict[str, tuple] = {}  # view name -> (ptr, itemsize, shape, strides)
        self.parts: dict[str, tuple] = {}  # part view name -> (space, lo, hi)
        for st in walk(fn.body):
            if isinstance(st, MakeTensorView):
                self.tensors[st.result.name] = (
                    st.ptr.name,
                    st.ptr.dtype.size_bytes,
                    tuple(_const(x) for x in st.shape),
                    tuple(_const(x) for x in st.strides),
                )
            elif isinstance(st, PartitionView):
                self.parts[st.result.name] = self._window(st)

    def _window(self, st: PartitionView) -> tuple:
        src = self.tensors.get(st.source.name)
        if src is None:
            return (f"GM:?{st.source.name}", 0, ALL)
        ptr, isz, shape, strides = src
        space = f"GM:{ptr}"
        offs = [_const(x) for x in st.offsets]
        sizes = [_const(x) for x in st.sizes]
        if None in offs or None in sizes or None in strides:
            return (space, 0, ALL)
        base = sum(o * s for o, s in zip(offs, strides, strict=True))
        last = base + sum((n - 1) * s for n, s in zip(sizes, strides, strict=True))
        return (space, base * isz, (last + 1) * isz)

    def access(self, view: PartView, write: bool) -> Access:
        space, lo, hi = self.parts.get(view.name, (f"GM:?{view.name}", 0, ALL))
        return Access(space, lo, hi, write, f"%{view.name}")


class Aliases:
    """Subview / treshape results -> the tile whose bytes they alias (transitively)."""

    def __init__(self, fn):
        self.root: dict[Tile, Tile] = {}
        for st in walk(fn.body):
            if isinstance(st, (Subview, Reshape)):
                self.root[st.result] = self.root.get(st.source, st.source)

    def __call__(self, tile: Tile) -> Tile:
        return self.root.get(tile, tile)


class Fifos:
    """The cube <-> vector FIFO ops of a body as the hazard passes see them (the engine's
    model, ``sim.engine.xunit``). A FIFO's slots are bytes of the consumer's reserved
    buffer that the FIFO protocol hands over (a push waits for a free slot, a pop for a
    full one), so they are a space of their own, ``FIFO:<direction>:<id>``:

    * ``tpush_to_aiv / aic`` reads its tile on the pipe that moves it out (PIPE_FIX for an
      accumulator, else PIPE_MTE3);
    * ``tpop_from_aic / aiv`` touches nothing the passes order: its data reaches the pipe
      that reads it through its own hand-off; the popped tile lives in the FIFO space;
    * ``tfree_from_aic / aiv`` releases the slot on the pipe that reads popped tiles
      (PIPE_V on a vector unit, PIPE_MTE1 on the cube): a write of the FIFO space that only
      accesses on *other* pipes must precede (its own pipe's earlier reads are done when it
      fires, as a set_flag's are).
    """

    _TO_AIV = ("pto.tpush_to_aiv", "pto.tpop_from_aic", "pto.tfree_from_aic", "pto.talloc_to_aiv")
    _FREE = {"pto.tfree_from_aic": "PIPE_V", "pto.tfree_from_aiv": "PIPE_MTE1"}

    def __init__(self, fn):
        self.popped: dict[Tile, str] = {}
        for st in walk(fn.body):
            if isinstance(st, PipeOp) and st.op in ("pto.tpop_from_aic", "pto.tpop_from_aiv"):
                for r in st.results:
                    if isinstance(r, Tile):
                        self.popped[r] = self.space(st)

    def space(self, st: PipeOp) -> str:
        fid = dict(st.attrs).get("id")
        return f"FIFO:{'c2v' if st.op in self._TO_AIV else 'v2c'}:{'?' if fid is None else fid}"

    def step(self, st: PipeOp):
        """``(pipe, accesses, same_pipe)`` of a push or free — accesses as ``symbolic``
        gives them, ``same_pipe`` False when hazards on its own pipe need no order — or
        None for the ops the passes do not order."""
        if st.op in ("pto.tpush_to_aiv", "pto.tpush_to_aic"):
            t = st.operands[0] if st.operands else None
            if not isinstance(t, Tile):
                return None
            pipe = "PIPE_FIX" if t.loc is Loc.ACC else "PIPE_MTE3"
            return pipe, [("tile", t, False)], True
        free = self._FREE.get(st.op)
        if free is None:
            return None
        return free, [("gm", Access(self.space(st), 0, 1, True, st.op))], False


def reserve_of(st) -> tuple:
    """``(buffer name, size, base or None)`` of a ``reserve_buffer`` statement (base None:
    ``auto = true``, placed by the toolchain)."""
    a = dict(st.attrs)
    m = re.search(r"<(\w+)>", str(a.get("location", "")))
    try:
        buf = Loc(m.group(1)).buffer if m else "UB"
    except ValueError:
        raise UserError(
            f"pto.reserve_buffer ({st.loc}): location: expected "
            f"#pto.address_space<vec|mat|...>, found {a.get('location')}"
        ) from None
    base = None if a.get("auto") is True else int(a.get("base", 0) or 0)
    return buf, int(a.get("size", 0) or 0), base


def fifo_reserves(body) -> list:
    """``(statement, buffer name, size, base or None)`` of every ``reserve_buffer`` in
    ``body``."""
    return [
        (st, *reserve_of(st))
        for st in walk(body)
        if isinstance(st, PipeOp) and st.op == "pto.reserve_buffer"
    ]


def constant_addresses(fn) -> dict:
    """Tile -> address of every ``alloc_tile`` of ``fn`` whose address is a compile-time
    constant: a literal, or an SSA value of an ``arith.constant`` (as real kernels and
    PTOAS output spell it)."""
    consts = {
        st.result: int(st.operands[0].value)
        for st in walk(fn.body)
        if isinstance(st, Arith)
        and st.op == "arith.constant"
        and st.operands
        and isinstance(st.operands[0], Const)
        and isinstance(st.operands[0].value, int)
    }
    out = {}
    for st in walk(fn.body):
        if isinstance(st, Alloc) and st.addr is not None:
            addr = int(st.addr.value) if isinstance(st.addr, Const) else consts.get(st.addr)
            if addr is not None:
                out[st.tile] = addr
    return out


class AutoUnsupported(UserError):
    """A construct auto mode cannot place or synchronise yet (a default run of a kernel
    without sync then runs it as written, with a warning)."""


def check_supported(fn, where: str) -> None:
    from sim.isa.program import Call

    for st in walk(fn.body):
        if isinstance(st, Call):
            raise AutoUnsupported(
                f"{where}: func.call{f' ({st.loc})' if st.loc else ''} is not "
                f"supported in auto mode yet; inline the callee"
            )
        if isinstance(st, PipeOp) and st.op in ("pto.talloc_to_aiv", "pto.talloc_to_aic"):
            raise AutoUnsupported(
                f"{where}: {st.op}{f' ({st.loc})' if st.loc else ''}: a FIFO slot "
                f"taken before the producer computes into it is not supported in "
                f"auto mode yet"
            )
