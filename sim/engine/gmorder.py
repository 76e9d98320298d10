"""The order in which the chip's GM transfers are costed.

The shared GM model (``sim.engine.gm``) is order-dependent: its channels serve transfers
in the order they are costed, and its L2 keeps lines in the order they were used. Costed
in cycle order, two transfers starting at the same cycle would otherwise be served in
whatever order the event loop happened to resume their pipes — an order that depends on
how many SimPy events each unit's schedule took, not on the hardware. ``TransferOrder``
makes it explicit: a transfer starting at cycle ``t`` is requested (from any earlier or
the same cycle), and once every unit has had its turn at ``t`` (an event at ``t`` with a
priority after every ordinary event of that cycle) the requests of ``t`` are costed in
``(core, unit, pipe)`` order. ASSUMPTION: the hardware's arbitration among requests of one
cycle is not modelled; a fixed order by position on the chip is our choice — it makes a
unit's cycles independent of the engine's event schedule (the timed and the event path
cost the same transfers in the same order).

A transfer always ends after the cycle it starts (it has a start-up latency and bytes to
move), so nothing it causes can request another transfer at the same cycle: one costing
per cycle sees every request of that cycle.

A run with ranks (``sim.engine.ranks``) has one order for every chip of every rank: each
chip requests through a ``Lane`` that puts (rank, launch) before its keys and costs with
its own function (its rank's GM model, or the links for a transfer whose GM side is another
rank's: ``sim.engine.remote``), so the transfers of one cycle are costed in (rank, launch,
core, unit, pipe) order whatever rank they come from, and a shared link or a rank's HBM
serves them in the order they really start.
"""

from __future__ import annotations

from simpy.events import Event

__all__ = ["Lane", "TransferOrder"]

_AFTER_ALL = 2  # SimPy priority: after URGENT (0) and NORMAL (1) events of a cycle


class TransferOrder:
    """Hands GM transfers to ``gm`` (a ``GlobalMemory``) in (cycle, core, unit, pipe)
    order; ``request`` returns the event that gives the transfer its cost in cycles."""

    __slots__ = ("env", "gm", "pending")

    def __init__(self, env, gm):
        self.env = env
        self.gm = gm
        self.pending: dict = {}  # cycle -> [(order key, item, own cost, event)]

    def transfer(self, plan) -> bool:
        """True when ``plan`` (an op's, or None) moves bytes over a GM path: the model
        costs it. Asked for every op of the chip: a plan that moves no bytes answers at
        once, one that does from the model's own per-plan cache (``_gm_bytes``)."""
        return plan is not None and plan.bytes > 0 and self.gm._gm_bytes(plan)[0] > 0

    def request(self, cycle: int, key: tuple, item, own: int, call=None) -> Event | None:
        """The event whose value is the cost of ``item`` starting at ``cycle`` (not before
        now) from ``key`` = (core, unit, pipe); ``own`` is its cost on its path alone.
        With ``call``, no event: ``call(cost)`` runs when the cycle's transfers are costed,
        where the event's callbacks would have run (the timed path's pipes go on there)."""
        return self._request(cycle, key, item, own, call, self.gm.cost, key[0])

    def _request(
        self, cycle: int, key: tuple, item, own: int, call, cost, core: int
    ) -> Event | None:
        """``request`` with the function that costs the transfer, told the requesting
        core (the GM model's write port: ``sim.engine.gm``)."""
        ev = Event(self.env) if call is None else None
        batch = self.pending.get(cycle)
        if batch is None:
            # the cycle's first request: one event costs the cycle's transfers (its own
            # event, if it has one), triggered as a Timeout is; the first requester goes
            # on right after it
            flush = ev if ev is not None else Event(self.env)
            flush._ok, flush._value = True, None
            flush.callbacks.append(self._flush)
            self.env.schedule(flush, _AFTER_ALL, cycle - self.env.now)
            self.pending[cycle] = [(key, item, own, ev, call, cost, core)]
        else:
            batch.append((key, item, own, ev, call, cost, core))
        return ev

    def _flush(self, flush) -> None:
        """Cost the cycle's transfers in (core, unit, pipe) order; then hand each its cost:
        the first requester first, at once (as the callback after this one on the
        cycle's own event would), then the others in that order — a callback at once,
        an event as a step of this cycle right after (none can request a transfer of this
        cycle: each ends after it starts)."""
        cycle = self.env.now
        batch = self.pending.pop(cycle)
        first = batch[0]
        if len(batch) > 1:
            batch.sort(key=_order)  # stable: one pipe's requests keep their order
        costs = [cost(cycle, item, own, core) for _, item, own, _, _, cost, core in batch]
        if first[4] is not None:
            first[4](costs[batch.index(first)])
        for request, c in zip(batch, costs, strict=True):
            if request is first:
                if request[3] is flush:  # it resumes after this callback, with its cost
                    flush._value = c
            elif request[4] is not None:
                request[4](c)
            else:
                request[3].succeed(c)


class Lane:
    """One chip's way into a ``TransferOrder`` shared by several chips (a run with ranks):
    its keys follow ``prefix``, its transfers are costed by ``cost(cycle, item, own, core)`` and
    ``transfer(plan)`` tells which plans are transfers (the machines ask ``transfer`` and
    ``request`` as of a ``TransferOrder``)."""

    __slots__ = ("order", "prefix", "cost", "transfer")

    def __init__(self, order: TransferOrder, prefix: tuple, cost, transfer):
        self.order, self.prefix, self.cost, self.transfer = order, prefix, cost, transfer

    def request(self, cycle: int, key: tuple, item, own: int, call=None) -> Event | None:
        return self.order._request(cycle, (self.prefix, key), item, own, call, self.cost, key[0])


def _order(request) -> tuple:
    return request[0]
