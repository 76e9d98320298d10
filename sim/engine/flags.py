"""Hardware flags as counters (programming-model.md §7.1, timing-model.md §10.4).

A ``set_flag`` increments its counter; a ``wait_flag`` blocks until the counter is
positive and then takes one, so repeated set/wait pairs on one id across loop iterations
balance. One waiter at a time per key: a flag's destination is one in-order pipe queue.
A unit's own flags (``Machine.flags``) and the chip's cross-unit flags
(``sim.engine.xunit.CrossFlags``) are the same counters.

Because the k-th wait of a key can only go on after the k-th set (the counter must have
been positive k times), a unit-local flag can also be kept as the cycles its pending sets
fired at (``TimedFlags``): the k-th wait ends at max(its own start, the k-th set's cycle).
The engine's timed path uses that to run waits whose set is already known without the
event loop. So does a chip's cube<->vector FIFO flags (``TimedFifoFlags``): each has one
setting pipe, whose sets come in cycle order, and one waiter.
"""

from __future__ import annotations

from collections import deque

from sim.base.errors import SimulationError

__all__ = ["FlagCounters", "TimedFlags", "TimedFifoFlags"]


class FlagCounters:
    """Flag counters keyed by any hashable key, with the SimPy event a waiter sleeps on."""

    def __init__(self, env):
        self.env = env
        self.counts: dict = {}  # key -> [count, waiting event or None]

    def _flag(self, key):
        f = self.counts.get(key)
        if f is None:
            f = self.counts[key] = [0, None]
        return f

    def fire(self, key):
        """The set's effect: count one and wake the waiter, if any."""
        f = self._flag(key)
        f[0] += 1
        if f[1] is not None:
            ev, f[1] = f[1], None
            ev.succeed()

    def add(self, key, n: int):
        """Start a counter at ``n`` (a FIFO's free slots) without a set."""
        self._flag(key)[0] += n

    def wait_event(self, key):
        """None when the flag is already set, else the event its waiter sleeps on."""
        f = self._flag(key)
        if f[0] > 0:
            return None
        f[1] = self.env.event()
        return f[1]

    def take(self, key):
        self.counts[key][0] -= 1


class TimedFlags:
    """Unit-local flags as the cycles of their pending sets (see the module doc), with the
    SimPy event a waiter whose set has not happened yet sleeps on."""

    def __init__(self, env):
        self.env = env
        self.sets: dict = {}  # key -> cycles of the sets not waited for yet (FIFO)
        self.sleepers: dict = {}  # key -> what wakes the waiter without a set

    def fire(self, key, cycle: int | float) -> None:
        q = self.sets.get(key)
        if q is None:
            q = self.sets[key] = deque()
        q.append(cycle)
        self.wake(key)

    def wake(self, key) -> None:
        """Wake the waiter sleeping on ``key``, if any (its set has just fired)."""
        waiter = self.sleepers.pop(key, None)
        if waiter is not None:
            waiter()

    def take(self, key) -> int | None:
        """The cycle of the oldest pending set of ``key`` (consumed), or None."""
        q = self.sets.get(key)
        return q.popleft() if q else None

    def sleep(self, key):
        """The event a waiter sleeps on until ``key`` is set."""
        ev = self.env.event()
        self.sleepers[key] = ev.succeed
        return ev

    def park(self, key, resume) -> None:
        """Call ``resume()`` when ``key`` is set: a pipe parked on its wait goes on at
        once, in the same event-loop step as the set (no event)."""
        self.sleepers[key] = resume


class TimedFifoFlags(TimedFlags):
    """A chip's FIFO slot flags on the timed path: the cycles their pending sets take
    effect at, as a unit's own flags keep them (``sim.engine.flags.TimedFlags``).

    Each FIFO channel's flag has one setting pipe (the producer's move for "full", the
    consumer's reader for "free") and one waiter (the other side's scalar unit), so its
    sets come in cycle order and the k-th wait ends at max(its start, the k-th set's
    cycle) — what the event loop gives, without a unit catching the loop up to its own
    cycle at every push, pop and free. A set of an earlier cycle than one still pending
    (a channel whose pushes move on two pipes) goes before it; one that comes after a wait
    already took a set of a later cycle would break the pairing: it stops the run as an
    engine fault rather than giving wrong cycles."""

    def __init__(self, env):
        super().__init__(env)
        self.taken: dict = {}  # key -> cycle of the set its last wait took

    def add(self, key, n: int) -> None:
        """``n`` free slots from the start: sets that happened before any cycle."""
        q = self.sets.get(key)
        if q is None:
            q = self.sets[key] = deque()
        q.extendleft([0] * n)
        if n:
            self.wake(key)

    def fire(self, key, cycle: int | float) -> None:
        if cycle < self.taken.get(key, cycle):
            raise SimulationError(
                f"flag {key!r}: a set at cycle {cycle} came after a wait took a set of a "
                f"later cycle (an engine fault: please report it with this kernel)"
            )
        q = self.sets.get(key)
        if q and q[-1] > cycle:  # pending sets (so no sleeper): kept in cycle order
            at = len(q)
            while at and q[at - 1] > cycle:
                at -= 1
            q.insert(at, cycle)
            return
        super().fire(key, cycle)

    def take(self, key) -> int | None:
        t = super().take(key)
        if t is not None:
            self.taken[key] = t
        return t
