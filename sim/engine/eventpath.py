"""The event path of a unit's pipes: every item in event time.

With race checks (or ``batch=False``) each pipe of a ``sim.engine.machine.Machine`` is a
SimPy process that takes its items at their own cycle, so the race detector and a shared
GM model observe each one when it happens. This mixin holds that process and its waits
and sets; the timed path, which runs idle pipes by arithmetic, stays in the machine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sim.engine.items import BARRIER, OP, SET
from sim.engine.pipe import Pipe as _Pipe

if TYPE_CHECKING:
    import simpy

    from sim.engine.flags import FlagCounters
    from sim.engine.gmorder import TransferOrder
    from sim.engine.races import RaceDetector
    from sim.engine.record import Recorder

__all__ = ["EventPath"]

_NO_CLOCK: dict = {}  # the dispatcher's clock before it learns anything (never changed)


class EventPath:
    """The event-path process of each pipe (a mixin of ``Machine``)."""

    # What the machine provides (class-level declarations only, for the type checker).
    env: simpy.Environment
    flags: FlagCounters
    recorder: Recorder
    races: RaceDetector | None
    gm: TransferOrder | None
    ideal_sync: bool
    dispatch_done: bool
    dispatch_blocked: tuple | None
    _sync_row: Callable[..., Any]
    _set: Callable[[Any], Any]
    _take: Callable[[Any], None]
    _wait_event: Callable[[Any], Any]
    _run_op: Callable[..., int]
    _gm_op: Callable[..., Any]
    _barrier: Callable[..., None]

    def _run_pipe(self, p: _Pipe):
        """The pipe's process on the event path: every item in event time (race checks and
        a shared GM model observe each at its own cycle)."""
        env = self.env
        queue = p.queue
        counts = self.flags.counts
        plain = not self.ideal_sync
        races = self.races
        gm = self.gm
        while True:
            if not queue:
                p.busy = False
                if p.drained is not None:
                    ev, p.drained = p.drained, None
                    ev.succeed()
                if self.dispatch_done:
                    return
                p.wake = env.event()
                yield p.wake
                continue
            p.busy = True
            item = queue.popleft()  # _Pipe.head and drop_head, inline: hot
            seq = p.head_seq = p.head_seq + queue.popleft()
            dispatched = queue.popleft()
            dclock = p.clocks.popleft() if p.clocks else None
            kind = item.kind
            if kind is OP:
                # recorded as it starts (nothing else runs on its pipe until it ends),
                # checked for races as it ends
                start = env.now
                if gm is not None and gm.transfer(item.plan):
                    end = yield from self._gm_op(p, item, seq, dispatched, start)
                else:
                    end = self._run_op(p, item, seq, dispatched, start)
                if end > start:
                    yield env.timeout(end - start)
                if races is not None:
                    races.op(p.name, item, seq, item.accesses or (), dclock or _NO_CLOCK)
            elif kind is BARRIER:
                self._barrier(p, item, seq, dispatched, env.now)
            elif kind is SET:
                self._event_set(p, item, seq, dispatched, dclock)
            else:
                key = item.flag
                f = counts.get(key) if plain else None
                if f is not None and f[0] > 0 and type(key) is tuple:
                    # a unit-local flag already set: taken at once (no generator)
                    self.flags.take(key)
                    if races is not None:
                        races.wait_flag(p.name, key, dclock or _NO_CLOCK)
                    now = env.now
                    self._sync_row(item, seq, dispatched, now, now)
                    p.pending_waits.append(item.text)
                    continue
                yield from self._event_wait_flag(p, item, seq, dispatched, dclock)

    def _event_wait(self, p, item, seq):
        """Wait in event time until ``item``'s flag is set and take it; ``p`` is the
        waiting pipe, None for the dispatcher (both say what they wait for meanwhile)."""
        ev = self._wait_event(item.flag)
        if ev is not None:
            if p is None:
                self.dispatch_blocked = (item, seq)
            else:
                p.blocked = (item, seq)
            yield ev
            if p is None:
                self.dispatch_blocked = None
            else:
                p.blocked = None
        self._take(item.flag)

    def _event_wait_flag(self, p: _Pipe, item, seq, dispatched, dclock):
        """A wait on ``p`` from the current cycle, through the flag counters (``dclock``:
        the dispatcher's vector clock at issue, with race checks)."""
        start = self.env.now
        yield from self._event_wait(p, item, seq)
        if self.races is not None:
            self.races.wait_flag(p.name, item.flag, dclock or _NO_CLOCK)
        self._sync_row(item, seq, dispatched, start, self.env.now)
        p.pending_waits.append(item.text)

    def _event_set(self, p: _Pipe, item, seq, dispatched, dclock) -> None:
        """A set on ``p`` at the current cycle, through the flag counters."""
        now = self.env.now
        self._set(item.flag)
        if self.races is not None:
            self.races.set_flag(p.name, item.flag, item, seq, dclock or _NO_CLOCK)
        self._sync_row(item, seq, dispatched, now, now)
        self.recorder.add_record(p.last_op_row, item.text)
