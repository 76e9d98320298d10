"""The communication part of the Python builder: ranks, TPUT / TGET, signals.

::

    k = sim.Kernel("allgather")
    me, n = k.rank_idx, k.rank_num          # Index values: this rank, the rank count
    src = k.gm("src", "f32", (16, 64))
    out = k.gm("out", "f32", (16 * 8, 64))  # rank r's block at rows [16 r, 16 r + 16)
    sig = k.gm("sig", "i32", (1, 8), data=np.zeros(8, np.int32))
    stage = k.tile("vec", "f32", 16, 64)
    for p in range(8):                       # push my block to every rank (mine too)
        k.TPUT(out[me * 16 : me * 16 + 16, :], src, stage, peer=p)
    k.pipe_barrier("PIPE_ALL")               # the release pattern (communication.md §6)
    for p in range(8):
        k.TNOTIFY(sig[0:1, me : me + 1], 1, op="atomic_add", peer=p)
    k.TWAIT(sig, 1, cmp="ge")                # every rank's block has landed here
    print(sim.simulate(k, ranks=8).total_cycles)

A remote operand is the same GM argument and window on rank ``peer`` (symmetric windows,
communication.md §3): ``TPUT``'s ``dst``, ``TGET``'s ``src``, ``TNOTIFY``'s signal.
``rank_idx`` / ``rank_num`` are read with ``pto.get_rank_idx`` / ``pto.get_rank_num``, the
simulator's spelling (real kernels read them from HCCL's communication context).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.base.errors import UserError
from sim.isa.comm import ATOMIC_TYPES, COMM_OPS, NOTIFY_OPS, REDUCE_OPS, WAIT_CMPS, CommOp
from sim.isa.memorder import DSB_KINDS, CacheInvalid, Dsb
from sim.isa.program import Const, Scalar
from sim.isa.tile import Tile
from sim.kernel.values import Event, GlobalTensor, Index, View, _caller

__all__ = ["AsyncValue", "CommKernel"]


class CommKernel:
    """Mixin of ``Kernel``: rank ids and the communication instructions."""

    # What the kernel provides (class-level declarations only, for the type checker).
    _fresh: Callable[[str], str]
    _emit: Callable[[Any], int]
    _wait: Callable[[Event, str, Any], None]
    _part_view: Callable[[View], Any]
    _id: Callable[[str], Index]
    _stmts: list

    @property
    def rank_idx(self) -> Index:
        """This rank's id, 0 .. rank_num - 1 (``simulate(..., ranks=N)``)."""
        return self._id("rank_idx")

    @property
    def rank_num(self) -> Index:
        """The run's rank count."""
        return self._id("rank_num")

    def _view(self, v, role: str, what: str):
        if isinstance(v, GlobalTensor):
            v = v.view()
        if not isinstance(v, View):
            raise UserError(f"{_caller(3)}: {what}: {role} must be a GM window, found {v!r}")
        return self._part_view(v)

    def _comm(self, op: str, operands: tuple, events, attrs: dict, peer, results=()) -> Event:
        loc = _caller(3)
        first, last = COMM_OPS[op]
        for ev in events:
            self._wait(ev, first, loc)
        if isinstance(peer, Index):
            peer = peer.scalar
        elif isinstance(peer, int) and not isinstance(peer, bool):
            peer = Const(int(peer))
        elif peer is not None:
            raise UserError(
                f"{loc}: {op}: peer: expected a rank (an int or an Index), found {peer!r}"
            )
        self._emit(CommOp(results, op, operands, attrs, peer, loc=loc))
        return Event(self, len(self._stmts) - 1, last)

    def _staged(self, op, dst, src, rest, peer, attrs) -> Event:
        what = op.removeprefix("pto.comm.").upper()
        stages = [x for x in rest if isinstance(x, Tile)]
        events = [x for x in rest if isinstance(x, Event)]
        other = [x for x in rest if not isinstance(x, (Tile, Event))]
        if other or not 1 <= len(stages) <= 2:
            raise UserError(
                f"{_caller(3)}: {what}: expected dst, src, one or two staging tiles "
                f"(ping[, pong]), then tokens to wait on"
            )
        ops = (self._view(dst, "dst", what), self._view(src, "src", what), *stages)
        return self._comm(op, ops, events, attrs, peer)

    def TPUT(
        self,
        dst: View | GlobalTensor,
        src: View | GlobalTensor,
        *stages_and_events: Tile | Event,
        peer: int | Index | None = None,
        atomic: str = "atomic_none",
    ) -> Event:
        """``pto.comm.tput``: local ``src`` -> ``dst`` on rank ``peer`` (this rank when None)
        through the staging tile(s), ``atomic="atomic_add"`` accumulating (§5.1)."""
        if atomic not in ATOMIC_TYPES:
            raise UserError(
                f"{_caller()}: TPUT: atomic: expected one of {', '.join(ATOMIC_TYPES)}, "
                f"found {atomic!r}"
            )
        attrs = {"atomicType": atomic} if atomic != "atomic_none" else {}
        return self._staged("pto.comm.tput", dst, src, stages_and_events, peer, attrs)

    def TGET(
        self,
        dst: View | GlobalTensor,
        src: View | GlobalTensor,
        *stages_and_events: Tile | Event,
        peer: int | Index | None = None,
    ) -> Event:
        """``pto.comm.tget``: ``src`` on rank ``peer`` -> local ``dst`` (§5.1)."""
        return self._staged("pto.comm.tget", dst, src, stages_and_events, peer, {})

    def TNOTIFY(
        self,
        signal: View | GlobalTensor,
        value: int | Index,
        *events: Event,
        op: str = "atomic_add",
        peer: int | Index | None = None,
    ) -> Event:
        """``pto.comm.tnotify``: ``signal`` (one int32) on rank ``peer`` becomes ``value``
        (``op="set"``) or grows by it (``"atomic_add"``) (§5.2); ``value`` may be a run-time
        ``Index`` (a rank id, a ``TTEST`` answer)."""
        if op not in NOTIFY_OPS:
            raise UserError(
                f"{_caller()}: TNOTIFY: op: expected one of {', '.join(NOTIFY_OPS)}, found {op!r}"
            )
        sig = self._view(signal, "signal", "TNOTIFY")
        v = value.scalar if isinstance(value, Index) else Const(int(value), "i32")
        return self._comm("pto.comm.tnotify", (sig, v), events, {"notifyOp": op}, peer)

    def _cmp(self, what: str, cmp: str) -> None:
        if cmp not in WAIT_CMPS:
            raise UserError(
                f"{_caller(3)}: {what}: cmp: expected one of {', '.join(WAIT_CMPS)}, found {cmp!r}"
            )

    def TWAIT(
        self, signal: View | GlobalTensor, value: int, *events: Event, cmp: str = "ge"
    ) -> Event:
        """``pto.comm.twait``: hold this unit until every element of the local ``signal``
        satisfies ``signal cmp value`` (§5.3)."""
        self._cmp("TWAIT", cmp)
        sig = self._view(signal, "signal", "TWAIT")
        return self._comm(
            "pto.comm.twait", (sig, Const(int(value), "i32")), events, {"cmp": cmp}, None
        )

    def TTEST(
        self, signal: View | GlobalTensor, value: int, *events: Event, cmp: str = "ge"
    ) -> Index:
        """``pto.comm.ttest``: one poll; an ``i1`` Index, true iff every element of the local
        ``signal`` satisfies ``signal cmp value`` (§5.3)."""
        self._cmp("TTEST", cmp)
        sig = self._view(signal, "signal", "TTEST")
        res = Scalar(self._fresh("ok"), "i1")
        self._comm(
            "pto.comm.ttest", (sig, Const(int(value), "i32")), events, {"cmp": cmp}, None, (res,)
        )
        return Index(self, res)

    # --- GM visibility: the scalar data cache and the data barrier (communication.md §6) -----

    def cache_invalidate(self, view: View | GlobalTensor | None = None) -> None:
        """``pto.cmo.cacheinvalid`` (C++ ``dcci``): clean + invalidate the scalar data
        cache's line of ``view``, or the whole cache when ``view`` is None, so that earlier
        scalar stores reach GM and later scalar loads see other ranks' writes (§6 rules
        2-4). Costs ``[sync] dcci_line_cycles`` / ``dcci_all_cycles`` on the scalar unit."""
        loc = _caller()
        target = None if view is None else self._view(view, "view", "cache_invalidate")
        self._emit(CacheInvalid(target, loc=loc))

    def dsb(self, kind: str = "DDR") -> None:
        """``pto.dsb "DDR"`` (C++ ``dsb(DSB_DDR)``; ``"UB"``, ``"ALL"``, ``"SEQ"``): a data
        barrier of the scalar unit, ``[sync] dsb_cycles``. The release pattern of §6 is
        ``pipe_barrier("PIPE_ALL")``, ``dsb()``, then ``TNOTIFY``."""
        if kind not in DSB_KINDS:
            raise UserError(
                f"{_caller()}: dsb: expected one of {', '.join(DSB_KINDS)}, found {kind!r}"
            )
        self._emit(Dsb(kind, loc=_caller()))

    # --- the collectives (AIV engine, communication.md §5.4) -----------------------------------

    def _collective(self, op: str, main, group, rest, root) -> Event:
        what = op.removeprefix("pto.comm.").upper()
        stages = [x for x in rest if isinstance(x, Tile)]
        events = [x for x in rest if isinstance(x, Event)]
        if len(stages) + len(events) != len(rest) or not 1 <= len(stages) <= 2:
            raise UserError(
                f"{_caller(3)}: {what}: expected dst, src, one or two staging tiles "
                f"(ping[, pong]), then tokens to wait on"
            )
        if isinstance(root, bool) or not isinstance(root, (int, Index)):
            raise UserError(f"{_caller(3)}: {what}: root: expected a rank, found {root!r}")
        ops = (self._view(main, "main", what), *stages, self._view(group, "group", what))
        r = root.scalar if isinstance(root, Index) else int(root)
        attrs = {"root": r, "stages": len(stages), "symmetric": True}
        return self._comm(op, ops, events, attrs, None)

    def TBROADCAST(
        self,
        dst: View | GlobalTensor,
        src: View | GlobalTensor,
        *stages_and_events: Tile | Event,
        root: int | Index = 0,
    ) -> Event:
        """``pto.comm.tbroadcast``: the root's ``src`` into ``dst`` on every rank (the root
        included); only the root runs it (§5.4)."""
        return self._collective("pto.comm.tbroadcast", src, dst, stages_and_events, root)

    def comm_scatter(
        self,
        dst: View | GlobalTensor,
        src: View | GlobalTensor,
        *stages_and_events: Tile | Event,
        root: int | Index = 0,
    ) -> Event:
        """``pto.comm.tscatter`` (C++ ``pto::comm::TSCATTER``; ``k.TSCATTER`` is the tile
        ISA's index scatter): rank r's ``dst`` (H rows) gets rows [r H, (r + 1) H) of the
        root's ``src`` (§5.4)."""
        return self._collective("pto.comm.tscatter", src, dst, stages_and_events, root)

    def comm_gather(
        self,
        dst: View | GlobalTensor,
        src: View | GlobalTensor,
        *stages_and_events: Tile | Event,
        root: int | Index = 0,
    ) -> Event:
        """``pto.comm.tgather`` (C++ ``pto::comm::TGATHER``; ``k.TGATHER`` is the tile ISA's
        gather): rows [r H, (r + 1) H) of the root's ``dst`` get rank r's ``src`` (H rows);
        rows past N H are untouched (§5.4)."""
        return self._collective("pto.comm.tgather", dst, src, stages_and_events, root)

    def TREDUCE(
        self,
        dst: View | GlobalTensor,
        src: View | GlobalTensor,
        acc: Tile,
        *recv_and_events: Tile | Event,
        op: str = "sum",
        root: int | Index = 0,
    ) -> Event:
        """``pto.comm.treduce``: the root's ``dst`` = ``src`` of every rank reduced by
        ``op`` (sum, max, min), through the ``acc`` tile and one or two ``recv`` tiles (§5.4)."""
        if op not in REDUCE_OPS:
            raise UserError(
                f"{_caller()}: TREDUCE: op: expected one of {', '.join(REDUCE_OPS)}, found {op!r}"
            )
        if not isinstance(acc, Tile):
            raise UserError(f"{_caller()}: TREDUCE: acc must be a tile, found {acc!r}")
        recvs = [x for x in recv_and_events if isinstance(x, Tile)]
        events = [x for x in recv_and_events if isinstance(x, Event)]
        if len(recvs) + len(events) != len(recv_and_events) or not 1 <= len(recvs) <= 2:
            raise UserError(
                f"{_caller()}: TREDUCE: expected dst, src, acc, one or two recv tiles, then "
                f"tokens to wait on"
            )
        r = root.scalar if isinstance(root, Index) else int(root)
        ops = (
            self._view(dst, "dst", "TREDUCE"),
            acc,
            *recvs,
            self._view(src, "src", "TREDUCE"),
        )
        attrs = {"root": r, "stages": len(recvs), "symmetric": True, "reduceOp": op}
        return self._comm("pto.comm.treduce", ops, events, attrs, None)

    # --- the async forms (SDMA, communication.md §5.5) ---------------------------------------

    def async_session(
        self,
        scratch: Tile,
        *events: Event,
        queues: int | None = None,
        block_bytes: int | None = None,
        channel_group: int | Index | None = None,
    ) -> AsyncValue:
        """``pto.comm.build_async_session``: an SDMA session with ``queues`` queues of
        channel group ``channel_group`` (default: this block's index), descriptors of
        ``block_bytes`` ([comm.sdma] defaults); ``scratch`` is the Vec tile of its control
        words."""
        if not isinstance(scratch, Tile):
            raise UserError(
                f"{_caller()}: async_session: scratch must be a tile, found {scratch!r}"
            )
        attrs: dict = {}
        if queues is not None:
            attrs["queue_num"] = int(queues)
        if block_bytes is not None:
            attrs["block_bytes"] = int(block_bytes)
        if channel_group is not None:
            attrs["channel_group_idx"] = (
                channel_group.scalar if isinstance(channel_group, Index) else int(channel_group)
            )
        res = Scalar(self._fresh("session"), "!pto.async_session")
        self._comm("pto.comm.build_async_session", (scratch,), events, attrs, None, (res,))
        return AsyncValue(res)

    def _post(self, op, dst, src, session, events, peer) -> AsyncValue:
        what = op.removeprefix("pto.comm.").upper()
        if not isinstance(session, AsyncValue) or session.scalar.type != "!pto.async_session":
            raise UserError(f"{_caller(3)}: {what}: expected a session (async_session())")
        ops = (self._view(dst, "dst", what), self._view(src, "src", what), session.scalar)
        res = Scalar(self._fresh("event"), "!pto.async_event")
        self._comm(op, ops, events, {}, peer, (res,))
        return AsyncValue(res)

    def TPUT_ASYNC(
        self,
        dst: View | GlobalTensor,
        src: View | GlobalTensor,
        session: AsyncValue,
        *events: Event,
        peer: int | Index | None = None,
    ) -> AsyncValue:
        """``pto.comm.tput_async``: post an SDMA copy of local ``src`` to ``dst`` on rank
        ``peer``; returns its event (the data is valid after ``wait_async``)."""
        return self._post("pto.comm.tput_async", dst, src, session, events, peer)

    def TGET_ASYNC(
        self,
        dst: View | GlobalTensor,
        src: View | GlobalTensor,
        session: AsyncValue,
        *events: Event,
        peer: int | Index | None = None,
    ) -> AsyncValue:
        """``pto.comm.tget_async``: post an SDMA copy of ``src`` on rank ``peer`` to local
        ``dst``; returns its event."""
        return self._post("pto.comm.tget_async", dst, src, session, events, peer)

    def _event_op(self, op: str, event, session) -> Index:
        if not isinstance(event, AsyncValue) or event.scalar.type != "!pto.async_event":
            raise UserError(f"{_caller(3)}: {op}: expected an event of TPUT_ASYNC / TGET_ASYNC")
        res = Scalar(self._fresh("ok"), "i1")
        self._comm(op, (event.scalar, session.scalar), (), {}, None, (res,))
        return Index(self, res)

    def wait_async(self, event: AsyncValue, session: AsyncValue) -> Index:
        """``pto.comm.wait_async_event``: hold this unit until the post (and, quiet
        semantics, every earlier post of the session) completed."""
        return self._event_op("pto.comm.wait_async_event", event, session)

    def test_async(self, event: AsyncValue, session: AsyncValue) -> Index:
        """``pto.comm.test_async_event``: one poll; true iff the post completed."""
        return self._event_op("pto.comm.test_async_event", event, session)


class AsyncValue:
    """A session or an event of the async forms (an IR value the kernel passes on)."""

    __slots__ = ("scalar",)

    def __init__(self, scalar: Scalar):
        self.scalar = scalar

    def __repr__(self) -> str:
        return f"AsyncValue(%{self.scalar.name} : {self.scalar.type})"
