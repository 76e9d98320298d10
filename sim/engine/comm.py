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
  the op: §6 rule 1). The automatic half-chunk split of §5.1 step 3 is not modelled.
* ``TNOTIFY`` (§5.2): a scalar op of ``notify_cycles`` on PIPE_S; the word lands later
  (``Links.notify``).
* ``TWAIT`` (§5.3): a wait of the scalar unit — every later issue of the unit waits — on a
  ``SignalWait`` key, which the chip's cross-unit flags route to the links.
* ``TTEST``: one poll pass on PIPE_S; its ``i1`` is the signal's state when it issues.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.base.errors import UserError
from sim.engine.items import OP, SCALAR, SET, WAIT, Issued
from sim.engine.links import SignalWait
from sim.isa.comm import CommOp, check_attrs, chunks
from sim.isa.program import PartView
from sim.isa.tile import Tile
from sim.timing.dma import transfer_cycles
from sim.timing.plan import Plan

if TYPE_CHECKING:
    from sim.engine.units import UnitSpec
    from sim.target.model import Target

__all__ = ["CommUnit"]

_LOAD, _STORE = "PIPE_MTE2", "PIPE_MTE3"


def _plan(cycles: int) -> Plan:
    """A plan of ``cycles`` that moves no bytes through the chip's GM model."""
    return Plan((), cycles, cycles, False, 0, 0, restart_cycles=cycles)


class CommUnit:
    """Mixin of ``Interpreter``: the communication instructions of one unit's stream."""

    # What the interpreter provides (class-level declarations only, for the type checker).
    chip: Any  # sim.engine.chipstate.ChipState: ``rank`` and ``links``
    spec: UnitSpec
    target: Target
    functional: bool
    seq: int
    values: dict[str, Any]
    views: dict[str, tuple]
    scalar: Callable[[Any], Any]
    valid_of: Callable[[Tile], tuple]
    _gm_window: Callable[[PartView, str], np.ndarray]

    def _comm_handlers(self) -> dict:
        return {CommOp: self._comm_op}

    def _rank_ids(self) -> dict:
        """What ``pto.get_rank_idx`` / ``pto.get_rank_num`` answer (the builder's
        ``rank_idx`` / ``rank_num``): 0 and 1 on a run without ranks."""
        links = getattr(self.chip, "links", None)
        return {
            "get_rank_idx": getattr(self.chip, "rank", 0),
            "get_rank_num": links.n if links is not None else 1,
        }

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
        peer = rank if st.peer is None else links.peer(rank, int(self.scalar(st.peer)), where)
        name = st.op.removeprefix("pto.comm.")
        if name in ("tput", "tget"):
            return self._staged(st, name, rank, peer, links, where)
        sig = st.operands[0]
        if not isinstance(sig, PartView):
            raise UserError(f"{where}: the signal must be a GM view, found {sig!r}")
        view = self.views.get(sig.name)
        if view is None:
            raise UserError(f"{where}: view %{sig.name} is used before it is defined")
        if view[0].dtype.name != "i32":
            raise UserError(
                f"{where}: a signal is int32 (communication.md §2), found {view[0].dtype}"
            )
        value = int(self.scalar(st.operands[1]))
        source = str(st.loc or "")
        self.seq += 1
        if name == "tnotify":
            if math.prod(view[2]) != 1:
                raise UserError(
                    f"{where}: TNOTIFY writes one int32; the view has {view[2]} elements"
                )
            self._gm_window(sig, where)  # the local view's pages (and bounds) as a read would
            op = st.attr("notifyOp", "atomic_add")
            links.notify(rank, peer, view, op, value)
            c = links.notify_cycles
            text = f"{op} {value} -> rank {peer} %{sig.name}"
            return Issued(SCALAR, "PIPE_S", "TNOTIFY", c, c, text=text, source=source)
        if peer != rank:
            raise UserError(
                f"{where}: the signal must be in the calling rank's own GM (communication.md "
                f"§5.3), found peer {peer} on rank {rank}"
            )
        self._gm_window(sig, where)
        cmp = st.attr("cmp", "ge")
        key = SignalWait(("signal", rank, view[0], view[1], view[2], view[3], cmp, value))
        if name == "twait":
            return Issued(WAIT, "PIPE_S", "TWAIT", flag=key, text=key.text(), source=source)
        self.values[st.results[0].name] = links.holds(key)  # TTEST
        c = links.poll_cycles * math.prod(view[2])
        return Issued(SCALAR, "PIPE_S", "TTEST", c, c, text=key.text(), source=source)

    def _staged(self, st: CommOp, name: str, rank: int, peer: int, links, where: str):
        """TPUT / TGET: the data moves now; the items per chunk (module docstring)."""
        dst, src, *stages = st.operands
        for v, role in ((dst, "dst"), (src, "src")):
            if not isinstance(v, PartView):
                raise UserError(f"{where}: {role} must be a GM view, found {v!r}")
        if not stages or len(stages) > 2 or not all(isinstance(t, Tile) for t in stages):
            raise UserError(f"{where}: expected one or two staging tiles (ping[, pong])")
        dview, sview = self.views.get(dst.name), self.views.get(src.name)
        if dview is None or sview is None:
            missing = dst.name if dview is None else src.name
            raise UserError(f"{where}: view %{missing} is used before it is defined")
        dt = sview[0].dtype
        for t in stages:
            if t.loc.value != "vec" or t.dtype != dt:
                raise UserError(
                    f"{where}: staging tile %{t.name} must be a Vec tile of the data's "
                    f"element type {dt} (communication.md §5.1), found {t.loc.value} {t.dtype}"
                )
        if dview[0].dtype != dt or math.prod(dview[2]) != math.prod(sview[2]):
            raise UserError(
                f"{where}: dst and src must have the same element type and shape, found "
                f"{dview[0].dtype} {list(dview[2])} and {dt} {list(sview[2])}"
            )
        remote_dst = name == "tput"
        atomic = st.attr("atomicType", "atomic_none") == "atomic_add"
        if atomic and not remote_dst:
            raise UserError(f"{where}: only TPUT has an atomic form (communication.md §5.1)")
        if self.functional:
            local = self._gm_window(src if remote_dst else dst, where)
            far_view = dview if remote_dst else sview
            far = links.memory(peer).window(*far_view)
            if remote_dst:
                a, b = far, local
            else:
                a, b = local, far
            data = b.reshape(a.shape)
            if atomic:
                a[...] = (a + data).astype(a.dtype)
            else:
                a[...] = data
        sizes = sview[2]
        rows, cols = math.prod(sizes[:-1]), sizes[-1]
        vr, vc = self.valid_of(stages[0])
        parts = chunks(rows, cols, int(vr), int(vc), where)
        return self._staged_items(name, rank, peer, links, parts, dt.size_bytes, len(stages), st)

    def _staged_items(self, name, rank, peer, links, parts, itemsize, nbuf, st: CommOp):
        source = str(st.loc or "")
        model = self.target.dma_model
        remote_load = name == "tget"
        opcode = name.upper()
        n = len(parts)
        for k, (_, nr, _, nc) in enumerate(parts):
            nbytes = nr * nc * itemsize
            b = k % nbuf
            to_store = (_LOAD, _STORE, ("comm", b))
            to_load = (_STORE, _LOAD, ("comm", b))
            if k >= nbuf:  # the staging tile's previous store has left it
                yield self._flag_issue(WAIT, _LOAD, to_load, source)
            for pipe, path, far in (
                (_LOAD, "GM_UB", remote_load),
                (_STORE, "UB_GM", not remote_load),
            ):
                if far and peer != rank:
                    c = links.remote_cycles(rank, peer, nbytes)
                    side = f"rank {peer}"
                else:
                    c = int(transfer_cycles(self.target.dma(path), model, nbytes) + 0.5)
                    side = "local"
                self.seq += 1
                text = f"chunk {k + 1}/{n} {'load' if pipe == _LOAD else 'store'} {nbytes} B {side}"
                yield Issued(OP, pipe, opcode, c, c, False, None, _plan(c), text, source)
                if pipe == _LOAD:
                    yield self._flag_issue(SET, _LOAD, to_store, source)
                    yield self._flag_issue(WAIT, _STORE, to_store, source)
            yield self._flag_issue(SET, _STORE, to_load, source)
        for k in range(max(0, n - nbuf), n):  # balance the last hand-offs
            yield self._flag_issue(WAIT, _LOAD, (_STORE, _LOAD, ("comm", k % nbuf)), source)

    def _flag_issue(self, kind, pipe, key, source) -> Issued:
        self.seq += 1
        word = "set_flag" if kind == SET else "wait_flag"
        return Issued(
            kind, pipe, word, flag=key, text=f"{key[0]}->{key[1]}#comm{key[2][1]}", source=source
        )
