"""A unit's communication instructions (communication.md §5): ``CommOp`` statements run.

The data moves when the instruction issues, between the ranks' GM arrays (``sim.engine.links``
reaches the peer's); the items it hands to the pipes carry the time:

* ``TPUT`` / ``TGET`` (UB-staged, §5.1): per chunk of the staging tile's valid region
  (``sim.isa.comm.chunks``), a load on PIPE_MTE2, an MTE2 -> MTE3 hand-off, a store on
  PIPE_MTE3 and an MTE3 -> MTE2 hand-off before the staging tile is loaded again; with a
  second (pong) tile, chunk k uses tile k mod 2, so one chunk's store overlaps the next one's
  load (§5.1 step 4). The side in the peer's window costs the link's
  (``Links.remote_cycles``), the local side its ``[dma.paths]`` cost (GM_UB / UB_GM). The
  hand-offs use the op's own flags, not the kernel's event ids (the library's are internal to
  the op: §6 rule 1). With one staging tile whose full capacity is every chunk, and 8..16
  chunks (TPUT; 8 or more for TGET), each chunk moves as its two half-height halves through
  the tile's halves, as with a pong tile (the automatic split of §5.1 step 3,
  ``sim.isa.comm.half_split``).
* ``TNOTIFY`` (§5.2): a scalar op of ``notify_cycles`` on PIPE_S; the word lands later
  (``Links.notify``).
* ``TWAIT`` (§5.3): a wait of the scalar unit — every later issue of the unit waits — on a
  ``SignalWait`` key, which the chip's cross-unit flags route to the links.
* ``TTEST``: one poll pass on PIPE_S; its ``i1`` is the signal's state when it issues.
* the collectives (§5.4): ``sim.engine.collectives``; the async forms (§5.5):
  ``sim.engine.sdma``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.base.errors import UserError
from sim.engine.collectives import Collectives, check_stages
from sim.engine.items import OP, SCALAR, SET, WAIT, Issued
from sim.engine.links import SIGNAL_TAG, SignalWait
from sim.engine.memorder import MemOrder
from sim.engine.remote import FarItem, RemoteMoves, chunk_window, sdma_traffic
from sim.engine.sdma import Sdma, Session
from sim.isa.comm import COLLECTIVES, WINDOW_BYTES, CommOp, check_attrs, chunks, half_split
from sim.isa.program import GmPtr, Instr, MakeTensorView, PartView, ScalarOp
from sim.isa.tile import Tile
from sim.timing.dma import transfer_cycles
from sim.timing.plan import Item, Plan

if TYPE_CHECKING:
    from sim.engine.units import UnitSpec
    from sim.target.model import Target

__all__ = ["CommUnit"]

_LOAD, _STORE = "PIPE_MTE2", "PIPE_MTE3"


_ASYNC = (
    "build_async_session",
    "tput_async",
    "tget_async",
    "wait_async_event",
    "test_async_event",
)


def _flat(view: tuple) -> bool:
    """Whether a view's elements are one contiguous run (dense row-major)."""
    _, _, sizes, strides = view
    step = 1
    for n, st in zip(reversed(sizes), reversed(strides), strict=True):
        if n > 1 and st != step:
            return False
        step *= n
    return True


def _words(rank: int, view: tuple) -> list:
    """The (rank, GM argument, element) of every element of a signal view."""
    ptr, base, sizes, strides = view
    out = [base]
    for n, s in zip(sizes, strides, strict=True):
        out = [b + i * s for b in out for i in range(n)]
    return [(rank, ptr.name, e) for e in out]


@functools.lru_cache(maxsize=4096)
def _plan(cycles: int, path: str, nbytes: int) -> Plan:
    """The plan of a staged move of ``nbytes`` over GM path ``path`` (GM_UB: a read of
    the GM side, UB_GM: a write) costing ``cycles`` alone: one DMA item of those bytes, which
    the GM models count (its own cycles 0: the plan's are the move's, link or path)."""
    item = Item("dma", path, bytes=nbytes)
    return Plan((item,), cycles, cycles, False, 0, nbytes, restart_cycles=cycles)


class CommUnit(Collectives, RemoteMoves, MemOrder):
    """Mixin of ``Interpreter``: the communication instructions of one unit's stream."""

    # What the interpreter provides (class-level declarations only, for the type checker).
    chip: Any  # sim.engine.chipstate.ChipState: ``rank`` and ``links``
    spec: UnitSpec
    target: Target
    functional: bool
    seq: int
    values: dict[str, Any]
    views: dict[str, tuple]
    gm: dict[str, np.ndarray]
    scalar: Callable[[Any], Any]
    valid_of: Callable[[Tile], tuple]
    _gm_window: Callable[[PartView, str], np.ndarray]
    _make_view: Callable[[MakeTensorView], None]
    _scalar_op: Callable[[ScalarOp], Any]
    _instr: Callable[[Instr], Issued]
    _ptr_offsets: dict[str, int]
    _gm_dtypes: dict
    _view_layouts: dict[str, str]

    def _comm_handlers(self) -> dict:
        handlers: dict = {CommOp: self._comm_op, **self._memorder_handlers()}
        if getattr(self.chip, "links", None) is not None:
            handlers[MakeTensorView] = self._window_view
            handlers[ScalarOp] = self._scalar_op_ranks
            # a TLOAD / TSTORE may reach another rank (sim.engine.remote): the walk and the
            # transfer sites call these attributes, so the instance's own come first
            plain = self._instr
            self.__dict__["_instr"] = functools.partial(self._ranks_instr, plain)
            self.__dict__["_local_gm_window"] = self._gm_window
            self.__dict__["_gm_window"] = self._ranks_gm_window
        return handlers

    def _scalar_op_ranks(self, st: ScalarOp):
        """A scalar op in a run with ranks: a ``store_scalar`` to GM may be a signal a
        ``TWAIT`` waits on (a ready-queue counter): the links re-check its waiters."""
        out = self._scalar_op(st)
        if st.op == "pto.store_scalar" and isinstance(st.operands[1], GmPtr):
            ptr = st.operands[1]
            self.chip.links.written(self.chip.rank, self.values.get(ptr.name, ptr.name))
        return out

    def _window_view(self, st: MakeTensorView) -> None:
        """``make_tensor_view`` in a run with ranks: on a pointer moved whole windows away
        (a peer's copy of a buffer, ``sim.isa.comm``) the view keeps the moved offset, which
        the communication ops resolve to the peer, without sizing the local array by it;
        any other view as on one chip."""
        start = self._ptr_offsets.get(st.ptr.name, 0)
        if 0 <= start < WINDOW_BYTES // st.ptr.dtype.size_bytes:
            return self._make_view(st)
        key = self.values.get(st.ptr.name, st.ptr.name)
        self._gm_dtypes.setdefault(key, st.ptr.dtype)
        self.views[st.result.name] = (
            GmPtr(key, st.ptr.dtype),
            start,
            tuple(int(self.scalar(x)) for x in st.shape),
            tuple(int(self.scalar(x)) for x in st.strides),
        )
        self._view_layouts[st.result.name] = st.layout
        return None

    def _rank_ids(self) -> dict:
        """What ``pto.get_rank_idx`` / ``pto.get_rank_num`` answer (the builder's
        ``rank_idx`` / ``rank_num``): 0 and 1 on a run without ranks."""
        links = getattr(self.chip, "links", None)
        return {
            "get_rank_idx": getattr(self.chip, "rank", 0),
            "get_rank_num": links.n if links is not None else 1,
        }

    def _far(self, view: PartView, rank: int, peer: int | None, links, where: str) -> tuple:
        """(rank, (ptr, base, sizes, strides)) of a GM operand: a base that lies whole windows
        away (a pointer moved by windowsIn[peer] - windowsIn[rankId], ``sim.isa.comm``) is
        the same offset on that rank; ``peer`` (the builder's ``peer=``) moves it further."""
        if not isinstance(view, PartView):
            raise UserError(f"{where}: expected a GM view operand, found {view!r}")
        found = self.views.get(view.name)
        if found is None:
            raise UserError(f"{where}: view %{view.name} is used before it is defined")
        ptr, base, sizes, strides = found
        q, base = divmod(base, WINDOW_BYTES // ptr.dtype.size_bytes)
        at = rank + q if peer is None else peer + q
        return links.peer(rank, at, where), (ptr, base, tuple(sizes), tuple(strides))

    def _race_unit(self) -> tuple:
        """This unit, for the race check across ranks: (rank, chip, block, unit)."""
        return (self.chip.rank, id(self.chip), self.spec.block_idx, self.spec.unit)

    def _race(
        self, links, rank: int, view: tuple, write: bool, what: str, atomic: bool = False
    ) -> None:
        """An access of ``view`` on ``rank`` for the race check across ranks (if on)."""
        if links.races is None:
            return
        ptr, base, sizes, strides = view
        if len(sizes) == 2 and strides[1] == 1:  # rows of one stride: compared row by row
            window = (base, sizes[0], sizes[1], strides[0] if sizes[0] > 1 else sizes[1])
        else:
            last = base + sum((n - 1) * s for n, s in zip(sizes, strides, strict=True))
            window = (base, 1, last + 1 - base, last + 1 - base)
        links.races.access(self._race_unit(), rank, ptr.name, window, write, what, atomic)

    def _acquiring(self, item: Issued, links, rank: int, view: tuple):
        """A TWAIT's item; once it has passed (the unit issues on), its acquire."""
        yield item
        links.races.acquire(self._race_unit(), _words(rank, view))

    def _rank_window(self, links, rank: int, view: tuple) -> np.ndarray:
        """Rank ``rank``'s numpy window of ``view``, its array at least as large as this
        rank's (``RankMemory.window``)."""
        mine = self.gm.get(view[0].name)
        return links.memory(rank).window(*view, at_least=0 if mine is None else mine.size)

    def _comm_op(self, st: CommOp):
        where = f"{st.op}" + (f" ({st.loc})" if st.loc else "")
        links = getattr(self.chip, "links", None)
        if links is None:
            raise UserError(
                f"{where}: a communication instruction needs ranks: run with "
                f"simulate(..., ranks=N) or ptosim run --ranks N"
            )
        check_attrs(st.op, dict(st.attrs), where)
        rank = self.chip.rank
        peer = None if st.peer is None else int(self.scalar(st.peer))
        name = st.op.removeprefix("pto.comm.")
        if name in ("tput", "tget"):
            return self._staged(st, name, rank, peer, links, where)
        if name in _ASYNC:
            return self._async(st, name, rank, peer, links, where)
        if st.op in COLLECTIVES:
            if name == "treduce":
                return self._reduce(st, rank, links, where)
            return self._collective(st, name, rank, links, where)
        sig = st.operands[0]
        at, view = self._far(sig, rank, peer, links, where)
        if view[0].dtype.name != "i32":
            raise UserError(
                f"{where}: a signal is int32 (communication.md §2), found {view[0].dtype}"
            )
        value = int(self.scalar(st.operands[1]))
        source = str(st.loc or "")
        self.seq += 1
        n = math.prod(view[2])
        if name == "tnotify":
            if n != 1:
                raise UserError(f"{where}: TNOTIFY writes one int32; the view has {n} elements")
            self._rank_window(links, at, view)  # its pages, as a write would touch them
            op = st.attr("notifyOp", "atomic_add")
            if links.races is not None:
                links.races.release(self._race_unit(), [(at, view[0].name, view[1])])
            links.notify(rank, at, view, op, value)
            c = links.notify_cycles
            text = f"{op} {value} -> rank {at} %{sig.name}"
            return Issued(SCALAR, "PIPE_S", "TNOTIFY", c, c, text=text, source=source)
        if at != rank:
            raise UserError(
                f"{where}: the signal must be in the calling rank's own GM (communication.md "
                f"§5.3), found it on rank {at} from rank {rank}"
            )
        self._rank_window(links, at, view)
        cmp = st.attr("cmp", "ge")
        key = SignalWait((SIGNAL_TAG, rank, *view, cmp, value))
        if name == "twait":
            item = Issued(WAIT, "PIPE_S", "TWAIT", flag=key, text=key.text(), source=source)
            if links.races is None:
                return item
            return self._acquiring(item, links, rank, view)
        self.values[st.results[0].name] = ok = links.holds(key)  # TTEST
        if ok and links.races is not None:
            links.races.acquire(self._race_unit(), _words(rank, view))
        c = links.poll_cycles * n
        return Issued(SCALAR, "PIPE_S", "TTEST", c, c, text=key.text(), source=source)

    def _staged(self, st: CommOp, name: str, rank: int, peer, links, where: str):
        """TPUT / TGET: the data moves now; the items per chunk (module docstring)."""
        dst, src, *stages = st.operands
        if not stages or len(stages) > 2 or not all(isinstance(t, Tile) for t in stages):
            raise UserError(f"{where}: expected one or two staging tiles (ping[, pong])")
        put = name == "tput"
        d_rank, dview = self._far(dst, rank, peer if put else None, links, where)
        s_rank, sview = self._far(src, rank, None if put else peer, links, where)
        dt = sview[0].dtype
        check_stages(stages, dt, where, "§5.1")
        if dview[0].dtype != dt or math.prod(dview[2]) != math.prod(sview[2]):
            raise UserError(
                f"{where}: dst and src must have the same element type and shape, found "
                f"{dview[0].dtype} {list(dview[2])} and {dt} {list(sview[2])}"
            )
        atomic = st.attr("atomicType", "atomic_none") == "atomic_add"
        self._race(links, s_rank, sview, False, where)
        self._race(links, d_rank, dview, True, where, atomic)
        if self.functional:
            a = self._rank_window(links, d_rank, dview)
            data = self._rank_window(links, s_rank, sview).reshape(a.shape)
            if atomic:
                a[...] = (a + data).astype(a.dtype)
            else:
                a[...] = data.copy()  # the two windows may overlap (one array, one rank)
        sizes = sview[2]
        rows, cols = math.prod(sizes[:-1]), sizes[-1]
        vr, vc = self.valid_of(stages[0])
        parts = chunks(rows, cols, int(vr), int(vc), where)
        nbuf = len(stages)
        halves = half_split(name, stages[0].type, nbuf, parts)
        if halves is not None:  # the tile's two halves are ping and pong (§5.1 step 3)
            parts, nbuf = halves, 2
        isz = dt.size_bytes
        moves = [
            (
                s_rank,
                (d_rank,),
                nr * nc * isz,
                (chunk_window(sview, r, nr, c, nc), (chunk_window(dview, r, nr, c, nc),)),
            )
            for r, nr, c, nc in parts
        ]
        return self._staged_items(name.upper(), rank, moves, links, nbuf, st)

    def _async(self, st: CommOp, name: str, rank: int, peer, links, where: str):
        """The SDMA forms (``sim.engine.sdma``): a session, a post, a wait or a test."""
        if self.chip.sdma is None:
            self.chip.sdma = Sdma(self.target)
        sdma = self.chip.sdma
        source = str(st.loc or "")
        now = links.env.now  # the dispatcher's cycle: it pulls a scalar item to run it
        if name == "build_async_session":
            scratch = st.operands[0] if st.operands else None
            if not isinstance(scratch, Tile) or scratch.loc.value != "vec":
                raise UserError(f"{where}: expected a Vec scratch tile (communication.md §5.5)")
            group = st.attr("channel_group_idx")
            self.values[st.results[0].name] = sdma.session(
                self.spec.block_idx if group is None else int(self.scalar(group)),
                st.attr("queue_num"),
                st.attr("block_bytes"),
                where,
            )
            return None
        if name in ("wait_async_event", "test_async_event"):
            ev, _ = st.operands
            posted = self.values.get(ev.name)
            if not isinstance(posted, tuple):
                raise UserError(f"{where}: %{ev.name} is no event of a TPUT_ASYNC / TGET_ASYNC")
            done = posted[1]
            if name == "wait_async_event":
                c = max(0, math.ceil(done - now)) + sdma.poll_cycles
            else:
                c = sdma.poll_cycles
            self.values[st.results[0].name] = name == "wait_async_event" or done <= now
            self.seq += 1
            opcode = "WAIT_ASYNC" if name == "wait_async_event" else "TEST_ASYNC"
            text = f"post complete at cycle {int(done)}"
            return Issued(SCALAR, "PIPE_S", opcode, c, c, text=text, source=source)
        dst, src, sess = st.operands
        session = self.values.get(sess.name)
        if not isinstance(session, Session):
            raise UserError(f"{where}: %{sess.name} is no session (build_async_session)")
        put = name == "tput_async"
        d_rank, dview = self._far(dst, rank, peer if put else None, links, where)
        s_rank, sview = self._far(src, rank, None if put else peer, links, where)
        n = math.prod(sview[2])
        for v in (dview, sview):
            if not _flat(v):
                raise UserError(
                    f"{where}: SDMA copies flat contiguous tensors only (communication.md §4, "
                    f"§5.5), found sizes {list(v[2])} with strides {list(v[3])}"
                )
        if dview[0].dtype != sview[0].dtype or math.prod(dview[2]) < n:
            raise UserError(
                f"{where}: dst must have src's element type and at least its {n} elements, "
                f"found {dview[0].dtype} x {math.prod(dview[2])}"
            )
        self._race(links, s_rank, sview, False, where)
        self._race(links, d_rank, dview, True, where)
        if self.functional:
            a = self._rank_window(links, d_rank, dview).reshape(-1)
            a[:n] = self._rank_window(links, s_rank, sview).reshape(-1).copy()
        nbytes = n * sview[0].dtype.size_bytes
        wait = sdma.slot_wait(session, now)
        c = math.ceil(wait) + sdma.post_cycles
        self.values[st.results[0].name] = (session, sdma.post(session, now + c, nbytes))
        sdma_traffic(links, s_rank, d_rank, sdma.descriptors, sdma.bytes_per_cycle)
        self.seq += 1
        far = d_rank if put else s_rank
        text = f"{nbytes} B {'to' if put else 'from'} rank {far} (queue group {session.group})"
        return Issued(SCALAR, "PIPE_S", name.upper(), c, c, text=text, source=source)

    def _staged_items(self, opcode, rank, moves, links, nbuf, st: CommOp):
        """The pipe items of UB-staged moves: each ``(load rank, store ranks, bytes[,
        (load window, store windows)])`` one load on MTE2 into staging tile ``k mod nbuf``,
        the MTE2 -> MTE3 hand-off, a store on MTE3 per store rank, the MTE3 -> MTE2 hand-off
        (communication.md §5.1, §5.4); the windows are the GM sides' (``chunk_window``)."""
        source = str(st.loc or "")
        n = len(moves)
        for k, (src, dsts, nbytes, *win) in enumerate(moves):
            b = k % nbuf
            to_store = (_LOAD, _STORE, ("comm", b))
            to_load = (_STORE, _LOAD, ("comm", b))
            if k >= nbuf:  # the staging tile's previous store has left it
                yield self._flag_issue(WAIT, _LOAD, to_load, source)
            wins = (win[0][0], *win[0][1]) if win else (None,) * (1 + len(dsts))
            steps = [(_LOAD, src)] + [(_STORE, d) for d in dsts]
            for (pipe, at), w in zip(steps, wins, strict=True):
                yield self._staged_move(opcode, pipe, at, rank, nbytes, links, source, (k, n), w)
                if pipe == _LOAD:
                    yield self._flag_issue(SET, _LOAD, to_store, source)
                    yield self._flag_issue(WAIT, _STORE, to_store, source)
            yield self._flag_issue(SET, _STORE, to_load, source)
        for k in range(max(0, n - nbuf), n):  # balance the last hand-offs
            yield self._flag_issue(WAIT, _LOAD, (_STORE, _LOAD, ("comm", k % nbuf)), source)

    def _staged_move(
        self, opcode, pipe, at, rank, nbytes, links, source, chunk, window=None
    ) -> Issued:
        """The item of one staged load (``pipe`` MTE2: GM -> UB) or store (MTE3: UB -> GM)
        of ``nbytes`` whose GM side is on rank ``at`` (``window`` there, for an L2): a GM
        transfer of this chip, costed when it really starts (``sim.engine.remote``): over
        the link and through rank ``at``'s GM model when that is another rank (a
        ``FarItem``), else through this rank's GM model at its ``[dma.paths]`` cost."""
        path = "GM_UB" if pipe == _LOAD else "UB_GM"
        if at != rank:
            a, b = (at, rank) if pipe == _LOAD else (rank, at)
            c = links.remote_cycles(a, b, nbytes)
            side = f"rank {at}"
        else:
            cost = transfer_cycles(self.target.dma(path), self.target.dma_model, nbytes)
            c = int(cost + 0.5)
            side = "local"
        self.seq += 1
        what = "load" if pipe == _LOAD else "store"
        text = f"chunk {chunk[0] + 1}/{chunk[1]} {what} {nbytes} B {side}"
        plan = _plan(c, path, nbytes)
        if at == rank:
            item = Issued(OP, pipe, opcode, c, c, False, None, plan, text, source)
        else:
            far = (a, b, at, nbytes)
            item = FarItem(far, OP, pipe, opcode, c, c, False, None, plan, text, source)
        item.gm = window
        return item

    def _flag_issue(self, kind, pipe, key, source) -> Issued:
        self.seq += 1
        word = "set_flag" if kind == SET else "wait_flag"
        return Issued(
            kind, pipe, word, flag=key, text=f"{key[0]}->{key[1]}#comm{key[2][1]}", source=source
        )
