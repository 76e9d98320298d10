"""Traffic between ranks as the memories see it: the GM side of a transfer on a peer.

A run with ranks (docs/concepts/ranks.md) moves bytes between the ranks' GM through the
links. Every such transfer is a GM transfer of the chip that issues it, costed at the cycle
it really starts, in the one order all the run's chips share (``sim.engine.gmorder.Lane``):

* its **local side** (the GM -> UB load of a ``TPUT`` chunk, the UB -> GM store of a
  ``TGET`` chunk, the root's own member of a collective) crosses the issuing rank's GM model
  (``sim.engine.gm``: HBM and L2 channels, write queue) as a ``TLOAD`` / ``TSTORE`` does, at
  its ``[dma.paths]`` cost: a rank's compute and communication streams share its HBM;
* its **remote side** (``FarItem``: a chunk's side in a peer's window, a plain ``TLOAD`` /
  ``TSTORE`` of a view moved whole windows away) is costed by ``Links.cost``: it waits for
  the directed links of its path (``[comm.links] shared``), streams its bytes at the link
  bandwidth, and crosses the GM model of the rank whose memory it reads or writes; it ends
  when the slower of the two has moved the bytes, one link latency per hop later.

``RemoteMoves`` (a mixin of the interpreter's communication unit) sends a plain ``TLOAD`` /
``TSTORE`` whose GM view lies on another rank (a pointer moved by ``windowsIn[peer] -
windowsIn[rankId]``, communication.md §3) through the links: its data is the peer's (numpy)
and its item a ``FarItem``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from sim.engine.gmorder import Lane
from sim.engine.items import OP, Issued
from sim.engine.operands import store_atomic
from sim.isa.comm import WINDOW_BYTES
from sim.isa.program import GmPtr, Instr, PartView
from sim.timing.plan import Item, Plan

__all__ = ["FarItem", "RemoteMoves", "chunk_window", "lane", "sdma_traffic"]


class FarItem(Issued):
    """A transfer whose GM side is on another rank: ``far`` = (rank the bytes leave, rank
    they reach, rank whose GM is touched, bytes). Its ``plan`` names the GM path (GM_UB:
    a read of that rank's GM, UB_GM: a write) and ``gm`` its L2 window there."""

    __slots__ = ("far",)

    def __init__(self, far: tuple, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.far = far


def lane(order, prefix: tuple, gm, links) -> Lane:
    """Chip ``prefix`` = (rank, launch)'s way into the run's transfer order: a ``FarItem``
    is costed by the links, any other GM transfer by the rank's GM model ``gm`` (a
    ``GlobalMemory``; its own cost when the target has no GM table)."""
    active = gm.active
    local = gm.cost if active else _own
    remote = links.cost

    def cost(cycle: int, item, own: int, core: int = 0) -> int:
        if type(item) is FarItem:
            return remote(cycle, item, own)
        return local(cycle, item, own, core)

    def transfer(plan) -> bool:
        return plan is not None and plan.bytes > 0 and (not active or gm._gm_bytes(plan)[0] > 0)

    return Lane(order, prefix, cost, transfer)


def _own(cycle: int, item, own: int, core: int = 0) -> int:
    return own


def chunk_window(view: tuple, r0: int, nr: int, c0: int, nc: int) -> tuple | None:
    """The L2 window (GM array, base, rows, cols, row stride, col stride, itemsize) of
    rows [r0, r0 + nr) x cols [c0, c0 + nc) of ``view`` = (ptr, base, sizes, strides), its
    rows the product of all dims but the last (communication.md §5.1); None when those
    dims do not merge into one row stride (the GM model then counts every byte a miss)."""
    ptr, base, sizes, strides = view
    cs = strides[-1]
    if len(sizes) == 1:
        rs = 0
    else:
        rs = strides[-2]
        for d in range(len(sizes) - 2):
            if sizes[d] > 1 and strides[d] != strides[d + 1] * sizes[d + 1]:
                return None
    return (ptr.name, base + r0 * rs + c0 * cs, nr, nc, rs, cs, ptr.dtype.size_bytes)


_SLICE_BYTES = 65536  # an SDMA descriptor's bytes reach the GM models in slices this large


def sdma_traffic(links, src: int, dst: int, descriptors: list, bytes_per_cycle: float) -> None:
    """An SDMA copy's bytes in the GM models of rank ``src`` (read) and rank ``dst``
    (written): each descriptor's ``(start cycle, bytes)`` streams at ``bytes_per_cycle``
    (``sim.engine.sdma`` times the copy itself), a slice of ``_SLICE_BYTES`` reserving both
    models at the cycle it moves, so a large copy loads them over its time, not at once."""
    env = links.env
    sides = ((src, "GM_UB"), (dst, "UB_GM"))
    for begin, n in descriptors:
        for off in range(0, n, _SLICE_BYTES):
            at = begin + off / bytes_per_cycle
            size = min(_SLICE_BYTES, n - off)
            env.timeout(max(0, math.ceil(at - env.now))).callbacks.append(
                lambda _, size=size: _sdma_bytes(links, sides, size)
            )


def _sdma_bytes(links, sides, nbytes: int) -> None:
    for rank, path in sides:
        mem = links.models[rank]
        if mem is not None:
            item = Issued(OP, "SDMA", "SDMA", plan=_bytes_plan(path, nbytes))
            mem.cost(links.env.now, item, 0)


@functools.lru_cache(maxsize=1024)
def _bytes_plan(path: str, nbytes: int) -> Plan:
    """A plan of ``nbytes`` over GM path ``path`` (GM_UB: a read, UB_GM: a write)."""
    return Plan((Item("dma", path, bytes=nbytes),), 0, 0, False, 0, nbytes)


class RemoteMoves:
    """Mixin of ``CommUnit``: plain ``TLOAD`` / ``TSTORE`` on a peer's window."""

    # What the unit provides (class-level declarations only, for the type checker).
    chip: Any
    seq: int
    views: dict[str, tuple]
    gm: dict[str, np.ndarray]
    _far: Callable[..., tuple]
    _race: Callable[..., None]
    _rank_window: Callable[..., np.ndarray]
    _gm_array: Callable[[GmPtr, int], np.ndarray]
    _local_gm_window: Callable[[PartView, str], np.ndarray]

    def _remote(self, view: PartView) -> bool:
        """Whether a GM view operand lies whole windows away (on another rank)."""
        found = self.views.get(view.name)
        if found is None:
            return False
        return not 0 <= found[1] < WINDOW_BYTES // found[0].dtype.size_bytes

    def _ranks_gm_window(self, view: PartView, where: str) -> np.ndarray:
        """``_gm_window`` in a run with ranks: a view on another rank is that rank's
        numpy window (what a TLOAD reads, a TSTORE writes: the peer's data)."""
        if not self._remote(view):
            return self._local_gm_window(view, where)
        links = self.chip.links
        at, far = self._far(view, self.chip.rank, None, links, where)
        ptr = far[0]
        # the local array exists (a transfer site compares its window with it), sized by
        # the kernel's own views, not by the moved offset
        self._gm_array(ptr, 1)
        return self._rank_window(links, at, far)

    def _ranks_instr(self, plain: Callable[[Instr], Issued], instr: Instr) -> Issued:
        """``_instr`` (``plain``) in a run with ranks: a TLOAD / TSTORE of a view on another
        rank goes through the links (a ``FarItem``); with the race check across ranks, every
        TLOAD / TSTORE window is an access."""
        item = plain(instr)
        op = instr.opcode
        if op != "TLOAD" and op != "TSTORE":
            return item
        v = instr.ins[0] if op == "TLOAD" else instr.outs[0]
        if not isinstance(v, PartView) or v.name not in self.views:
            return item
        links = self.chip.links
        rank = self.chip.rank
        where = str(instr.loc or op)
        at, view = self._far(v, rank, None, links, where)
        if links.races is not None:
            atomic = op == "TSTORE" and store_atomic(instr, where)
            self._race(links, at, view, op == "TSTORE", f"{op} ({instr.loc})", atomic)
        if at == rank:
            return item
        plan = item.plan
        gm_bytes = sum(it.bytes for it in plan.items if it.kind == "dma")
        a, b = (at, rank) if op == "TLOAD" else (rank, at)
        c = links.remote_cycles(a, b, gm_bytes)
        sizes = view[2]
        rows = math.prod(sizes[:-1])
        far = FarItem(
            (a, b, at, gm_bytes),
            OP,
            item.pipe,
            item.opcode,
            c,
            c,
            plan.breaks_stream,
            None,
            plan,
            f"{item.text} rank {at}".strip(),
            item.source,
        )
        far.gm = chunk_window(view, 0, rows, 0, sizes[-1])
        return far
