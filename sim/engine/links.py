"""Where ranks meet: the link model, the ranks' windows and the signals.

A run with ranks (docs/concepts/ranks.md) has one ``Chip`` per rank and one ``Links``; a
rank's state never refers to another rank's objects, only to the links, so ranks could run
in separate processes with the links as the message layer. ``[comm]`` of the target's
machine.toml holds the figures:

* **Topology** (``topology``): ``full_mesh`` (a link per ordered pair of ranks: a remote access
  crosses one) or ``ring`` (ranks ``d`` apart cross ``min(d, N - d)`` links). At most
  ``max_ranks`` ranks.
* **A remote access** of ``n`` bytes costs ``hops * latency_cycles + n / link bandwidth``
  (``[comm.links]``) when nothing else is in its way. It is a GM transfer of the issuing
  chip, costed at the cycle it really starts (its pipe free, its flags set) in the order
  every chip of the run shares (``sim.engine.gmorder``, ``sim.engine.remote``): ``cost``.
  With ``shared = true`` every directed link carries one transfer's bytes at a time: a
  transfer first waits for the links of its path to be free. Its bytes also cross the GM
  model of the rank whose memory it reads or writes (HBM and L2 channels, write queue): it
  takes the slower of link and memory. ASSUMPTION (communication.md §9: "a link resource
  per ordered pair of ranks, not the local GM bandwidth", and "HBM contention between a
  comm kernel and a compute kernel on the same NPU is real"; §10.3, §11: the figures are
  [silent]): with the shipped figures the link (30 GB/s) bounds a lone transfer and a
  rank's HBM (1490 GiB/s) only when other traffic has taken it.
* **Windows.** Each rank's GM arrays are its own (``RankMemory``); a remote operand names the
  same GM argument and element offset on the peer (symmetric windows, communication.md §3).
* **Signals.** A ``TNOTIFY`` lands on its rank's int32 word ``notify_cycles`` after it
  issues, plus the link latency per hop when the word is remote; a ``TWAIT`` sleeps on the
  words it reads (``SignalWait``, a key the chip's cross-unit flags route here) and wakes
  ``poll_cycles_per_element`` x its elements after the write that satisfies it (one pass of
  the poll loop, communication.md §5.3).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim.base.errors import UserError
from sim.engine.gmorder import TransferOrder
from sim.engine.gmviews import GlobalViews
from sim.engine.rankraces import RankRaces
from sim.isa.comm import cmp_text, notify, satisfied

__all__ = ["Links", "RankMemory", "SIGNAL_TAG", "SignalWait", "TOPOLOGIES"]

TOPOLOGIES = ("full_mesh", "ring")


class RankMemory(GlobalViews):
    """One rank's GM arrays as a peer reaches them: the arrays, filled pages and dtypes the
    rank's units share (``Chip.gm_state``), its inputs and seed (a page nobody wrote is filled
    as the rank's own units would fill it)."""

    def __init__(self, gm_state: tuple, inputs: dict | None, seed: int):
        self.gm, self._filled, self._gm_dtypes = gm_state
        self.inputs = dict(inputs or {})
        self.seed = seed
        self.values: dict[str, Any] = {}
        self.functional = True

    def window(self, ptr, base: int, sizes: tuple, strides: tuple, at_least: int = 0) -> np.ndarray:
        """The strided numpy view of elements ``base`` + sum(i * stride) of the GM argument
        of ``ptr`` (a ``GmPtr``; its pages filled). ``at_least``: the elements the array
        has on the rank that asks (windows are symmetric): a peer may touch an array before
        its owner's views size it, and an array made smaller would later grow with a page
        marked filled that only part of was."""
        last = base + sum((n - 1) * s for n, s in zip(sizes, strides, strict=True))
        arr = self._gm_array(ptr, max(last + 1, at_least))
        self._touch(ptr.name, arr, base, last + 1)
        isz = arr.itemsize
        return np.lib.stride_tricks.as_strided(arr[base:], sizes, [s * isz for s in strides])


# A TWAIT orders data as a cube<->vector FIFO slot does, so ideal sync (every flag wait
# satisfied at once) keeps it: machines tell such keys by this first element
# (``sim.engine.machine._fifo``).
SIGNAL_TAG = "fifo"


class SignalWait(tuple):
    """The key of a ``TWAIT``: (SIGNAL_TAG, rank, GM pointer, base, sizes, strides, cmp,
    value). A tuple subclass, so a chip's cross-unit flags route it to ``Links``."""

    __slots__ = ()

    @property
    def rank(self) -> int:
        return self[1]

    def text(self) -> str:
        _, rank, ptr, base, sizes, _, cmp, value = self
        name, n = ptr.name, math.prod(sizes)
        where = f"%{name}[{base}]" if n == 1 else f"%{name}[{base}..] ({n} elements)"
        return f"signal {where} {cmp_text(cmp)} {value}"


class Links:
    """The link model and the signals of a run with ``ranks`` ranks of ``target``."""

    def __init__(self, env, target, ranks: int, races: bool = False):
        cfg = target.comm
        if not cfg:
            raise UserError(
                f"ranks: target {target.name} has no [comm] link model in its machine.toml "
                f"(communication.md §10.3: its link figures are [silent]); runs with more "
                f"than one rank need one"
            )
        topology = cfg.get("topology", "full_mesh")
        if topology not in TOPOLOGIES:
            raise UserError(
                f"{target.path / 'machine.toml'}: [comm] topology: expected one of "
                f"{', '.join(TOPOLOGIES)}, found {topology!r}"
            )
        most = int(cfg.get("max_ranks", ranks))
        if ranks > most:
            raise UserError(
                f"ranks: expected 1 .. {most} on target {target.name} ([comm] max_ranks of "
                f"its {topology} topology), found {ranks}"
            )
        self.env = env
        self.n = ranks
        self.topology = topology
        links = cfg.get("links", {})
        self.bytes_per_cycle = float(links["bandwidth_gb_per_s"]) * 1e9 / target.clock_hz
        self.latency = float(links["latency_cycles"])
        self.shared = bool(links.get("shared", False))
        self._free: dict[tuple[int, int], float] = {}  # directed link -> free from cycle
        # each rank's GM model (sim.engine.gm.GlobalMemory; None without a [gm] table) and
        # the one order in which every chip's GM transfers are costed (sim.engine.gmorder)
        self.models: list = [None] * ranks
        self.order = TransferOrder(env, None)
        self._lanes: dict[int, int] = {}  # rank -> chips (launches) that have a lane
        sig = cfg.get("signals", {})
        self.notify_cycles = int(sig.get("notify_cycles", 0))
        self.poll_cycles = int(sig.get("poll_cycles_per_element", 0))
        self.memories: list[RankMemory | None] = [None] * ranks
        # (rank, GM argument) -> [(key, event)] of the TWAITs sleeping on its words
        self._waiters: dict[tuple, list] = {}
        self.notifies = 0  # signal writes landed (for tests and summaries)
        # the race check across ranks (sim.engine.rankraces), or None
        self.races = RankRaces() if races else None

    # --- the link model --------------------------------------------------------------------

    def hops(self, a: int, b: int) -> int:
        """Links a transfer between ranks ``a`` and ``b`` crosses (0 on one rank)."""
        if a == b:
            return 0
        if self.topology == "full_mesh":
            return 1
        d = abs(a - b)
        return min(d, self.n - d)

    def path(self, a: int, b: int) -> list[tuple[int, int]]:
        """The directed links bytes from rank ``a`` to rank ``b`` cross."""
        if a == b:
            return []
        if self.topology == "full_mesh":
            return [(a, b)]
        step = 1 if (b - a) % self.n <= (a - b) % self.n else -1
        out, x = [], a
        while x != b:
            y = (x + step) % self.n
            out.append((x, y))
            x = y
        return out

    def remote_cycles(self, a: int, b: int, nbytes: int) -> int:
        """Cycles of one remote access moving ``nbytes`` from rank ``a`` to rank ``b`` with
        nothing in its way: the latency of every hop and the bytes at the link bandwidth."""
        return int(self.hops(a, b) * self.latency + nbytes / self.bytes_per_cycle + 0.5)

    def cost(self, t: int, item, own: int) -> int:
        """Cycles of the remote transfer ``item`` (a ``sim.engine.remote.FarItem``) that
        starts at cycle ``t`` (now: the run's transfer order costs it then). Its bytes wait
        for the directed links of its path (``shared``), stream at the link bandwidth and
        cross the GM model of the rank whose memory they read or write, whichever is slower
        (that rank's HBM is taken by other traffic); the links stay busy until then."""
        a, b, peer, nbytes = item.far
        h = self.hops(a, b)
        stream = nbytes / self.bytes_per_cycle
        links = self.path(a, b) if self.shared else []
        begin = max([t] + [self._free.get(x, 0.0) for x in links])
        end = begin + stream
        mem = self.models[peer]
        if mem is not None:
            alone = int(stream + 0.5)
            # the memory's own time for these bytes beyond the link's (its channels and
            # write queue, reserved from now, as the chip's own transfers are)
            end = max(end, t + stream + mem.cost(t, item, alone) - alone)
        for x in links:
            self._free[x] = end
        return int(end - t + h * self.latency + 0.5)

    def lane_key(self, rank: int) -> tuple[int, int]:
        """(rank, launch) of the next chip of ``rank`` to join the transfer order: the
        first of a cycle's transfers by rank, then by launch (stream)."""
        n = self._lanes.get(rank, 0)
        self._lanes[rank] = n + 1
        return (rank, n)

    def peer(self, rank: int, peer: int, where: str) -> int:
        """``peer`` checked against the run's ranks."""
        if not 0 <= peer < self.n:
            raise UserError(
                f"{where}: peer rank {peer} is outside the run's ranks 0 .. {self.n - 1}"
            )
        return peer

    def memory(self, rank: int) -> RankMemory:
        mem = self.memories[rank]
        assert mem is not None  # every rank's chip registers before the run starts
        return mem

    # --- signals ---------------------------------------------------------------------------

    def notify(self, src: int, dst: int, view: tuple, op: str, value: int) -> None:
        """Rank ``src``'s ``TNOTIFY`` of the one int32 word ``view`` ((ptr, base, sizes,
        strides)) on rank ``dst``: it lands ``notify_cycles`` + the link latency later."""
        delay = self.notify_cycles + int(self.hops(src, dst) * self.latency + 0.5)
        self.env.timeout(delay).callbacks.append(lambda _: self._land(dst, view, op, value))

    def _land(self, rank: int, view: tuple, op: str, value: int) -> None:
        ptr, base, sizes, strides = view
        word = self.memory(rank).window(ptr, base, sizes, strides).reshape(-1)
        word[0] = notify(int(word[0]), op, value)
        self.notifies += 1
        self.written(rank, ptr.name)

    def written(self, rank: int, name: str) -> bool:
        """GM argument ``name`` of rank ``rank`` was written (a TNOTIFY landed, a unit's
        scalar store): every TWAIT on it whose signal now holds wakes one poll pass later.
        Whether any woke."""
        waiting = self._waiters.get((rank, name))
        if not waiting:
            return False
        still = []
        for key, ev in waiting:
            if self.holds(key):
                self.env.timeout(self._poll(key)).callbacks.append(lambda _, ev=ev: ev.succeed())
            else:
                still.append((key, ev))
        self._waiters[(rank, name)] = still
        return len(still) < len(waiting)

    def recheck(self) -> bool:
        """When the run has gone dry: wake the TWAITs whose signal holds although no TNOTIFY
        or scalar store announced the write (a TSTORE wrote the word). ASSUMPTION: such a
        wake is late (the end of the activity that wrote it), never missed. Whether any
        woke (the run then goes on)."""
        woke = False
        for rank, name in list(self._waiters):
            woke = self.written(rank, name) or woke
        return woke

    def values(self, key: SignalWait) -> np.ndarray:
        _, rank, ptr, base, sizes, strides, _, _ = key
        return self.memory(rank).window(ptr, base, sizes, strides)

    def holds(self, key: SignalWait) -> bool:
        return satisfied(self.values(key), key[6], key[7])

    def _poll(self, key: SignalWait) -> int:
        return self.poll_cycles * math.prod(key[4])

    # the cross-unit flag protocol (sim.engine.xunit.CrossFlags routes SignalWait here)

    def wait_event(self, key: SignalWait):
        """The event a TWAIT sleeps on: one poll pass when its signal already holds, else
        until a write satisfies it (then one pass)."""
        if self.holds(key):
            return self.env.timeout(self._poll(key))
        ev = self.env.event()
        self._waiters.setdefault((key[1], key[2].name), []).append((key, ev))
        return ev

    def take(self, key: SignalWait) -> None:
        """A TWAIT consumes nothing: the signal keeps its value."""

    def fire(self, key) -> None:  # pragma: no cover - signals are written by notify()
        raise AssertionError("a signal is written by TNOTIFY, not set as a flag")
