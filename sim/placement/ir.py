"""IR facts the placement passes share: which pipe an instruction runs on and which bytes
it reads and writes, statically (no simulation).

Tile accesses cover the tile's whole capacity ``[addr, addr + nbytes)`` (a conservative
may-alias: the valid region is a run-time fact). A subview touches its source tile's
bytes. A GM view touches the hull of its window when the offsets, sizes, shape and
strides are constants, else the whole tensor. Distinct GM arguments are assumed not to
alias (as the engine assumes).
"""

from __future__ import annotations

import attrs

from sim.errors import UserError
from sim.isa.opcodes import opcode as _opcode
from sim.isa.program import (Alloc, Arith, Const, Instr, MakeTensorView, PartitionView, PartView,
                             Reshape, Subview, walk)
from sim.isa.tile import Tile

__all__ = ["Access", "pipe_of", "tile_roles", "Views", "Aliases",
           "check_supported", "constant_addresses", "ALL"]

ALL = 1 << 62          # "to the end of the space" for unknown GM windows


@attrs.frozen
class Access:
    """Bytes ``[lo, hi)`` of ``space`` (a buffer name or ``GM:<arg>``), read or written."""

    space: str
    lo: int
    hi: int
    write: bool
    name: str = ""

    def conflicts(self, other: "Access") -> bool:
        return (self.space == other.space and (self.write or other.write)
                and self.lo < other.hi and other.lo < self.hi)


def pipe_of(instr: Instr) -> str:
    spec = _opcode(instr.opcode)
    return spec.pipe([o.loc if isinstance(o, Tile) else None for o in instr.outs],
                     [o.loc if isinstance(o, Tile) else None for o in instr.ins])


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
        self.tensors: dict[str, tuple] = {}      # view name -> (ptr, itemsize, shape, strides)
        self.parts: dict[str, tuple] = {}        # part view name -> (space, lo, hi)
        for st in walk(fn.body):
            if isinstance(st, MakeTensorView):
                self.tensors[st.result.name] = (
                    st.ptr.name, st.ptr.dtype.size_bytes,
                    tuple(_const(x) for x in st.shape), tuple(_const(x) for x in st.strides))
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
        base = sum(o * s for o, s in zip(offs, strides))
        last = base + sum((n - 1) * s for n, s in zip(sizes, strides))
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


def constant_addresses(fn) -> dict:
    """Tile -> address of every ``alloc_tile`` of ``fn`` whose address is a compile-time
    constant: a literal, or an SSA value of an ``arith.constant`` (as real kernels and
    PTOAS output spell it)."""
    consts = {st.result: int(st.operands[0].value) for st in walk(fn.body)
              if isinstance(st, Arith) and st.op == "arith.constant"
              and st.operands and isinstance(st.operands[0], Const)
              and isinstance(st.operands[0].value, int)}
    out = {}
    for st in walk(fn.body):
        if isinstance(st, Alloc) and st.addr is not None:
            addr = int(st.addr.value) if isinstance(st.addr, Const) else consts.get(st.addr)
            if addr is not None:
                out[st.tile] = addr
    return out


def check_supported(fn, where: str) -> None:
    from sim.isa.program import Call, PipeOp
    for st in walk(fn.body):
        if isinstance(st, Call):
            raise UserError(f"{where}: func.call{f' ({st.loc})' if st.loc else ''} is not "
                            f"supported in auto mode yet; inline the callee")
        if isinstance(st, PipeOp):
            raise UserError(f"{where}: {st.op}{f' ({st.loc})' if st.loc else ''}: cube<->vector "
                            f"pipe ops are not supported in auto mode")
