"""The SimPy pipe model of one AI-core unit.

Each hardware pipe works through its own in-order queue, one item at a time (intra-pipe
overlap is already folded into the instruction costs). The scalar unit is the dispatcher:
it walks the program, runs scalar-pipe items itself and hands every other item to its
pipe's queue; it stops issuing while it waits on a flag whose destination is PIPE_S or on
a ``pipe_barrier(PIPE_ALL)``.

Flags are counters keyed by ``(src pipe, dst pipe, event id)``: a set increments when
all earlier work on its source pipe has finished, a wait blocks its destination pipe
until the counter is positive and then decrements it. When the event queue runs dry
with items still waiting, the run is deadlocked and ``DeadlockError`` names the stuck
pipes, the flags they wait for and the instructions behind them.

The cost of a run grows with the number of items and sync points, not with cycles. SimPy
stays the model of record for pipes and flags, but most of a schedule is static: an item a
pipe takes when it is idle starts at max(pipe free, dispatch, the cycle its flag was set),
so on the *timed path* the dispatcher hands such an item to its idle pipe, which runs it by
arithmetic at once — the pipe's own cycle may run ahead of the event loop's. Unit-local
flags keep the cycles their pending sets fired at (``sim.engine.flags.TimedFlags``), so a
wait whose set already happened needs no event either. A pipe has no SimPy process on this
path: when the item at its head needs more, the pipe parks, and what it waits for runs
its queue on (``_pump``): a wait whose set has not happened yet parks on the flag and the
set resumes it at once (no event). A cube<->vector FIFO's flags are kept the same way for
the whole chip (``sim.engine.flags.TimedFifoFlags``: one setting pipe and one waiter each),
so a push, pop or free takes no event unless its wait's set is still to come; a
cross-core flag first catches the event loop up to the pipe's own cycle; on a chip, a GM
transfer asks for its cost at the cycle it starts and goes on when the shared GM model
costs every unit's transfers of that cycle in a fixed order (``sim.engine.gmorder``) —
GM and cross-core flags are where units meet in event time. The dispatcher still lives in event time
(scalar costs, waits on PIPE_S, ``pipe_barrier(PIPE_ALL)``, which catches up with the
pipes). With race checks every item goes through the event loop at its own cycle, the
*event path*: each pipe is a SimPy process (``batch=False`` forces it; tests compare the
two on random kernels and on chip kernels).

A chip runs one ``Machine`` per unit (AIC, AIV0, AIV1 of every physical core) in one
shared SimPy environment: each is built with ``env=`` and ``start``-ed, the chip runs the
environment, then asks each unit what is ``stuck``. ``gm=`` is the chip's shared
global-memory model: when set, a GM transfer's cost is what the model grants it (the
path's own bandwidth, slowed down by the other units' traffic). ``shared=`` holds the
chip's cross-unit flags (cube<->vector FIFO slots, cross-core flags, all-core barriers):
a set or wait item whose key is not a plain ``(src, dst, id)`` tuple goes to it, through
the same ``set`` / ``wait_event`` / ``take`` calls the local counters answer.

Two idealisations bound what a kernel could gain (``sim.whatif`` uses them):
``ideal_sync`` satisfies every ``wait_flag`` at once and makes barriers free (they
neither hold dispatch nor restart the vector stream), so only the pipes' own queues
remain — and a cube<->vector FIFO's slots, whose waits order data (a pop needs its
push); ``infinite_bandwidth`` costs the bytes of an instruction's DMA items (TLOAD,
TSTORE, TMOV paths) 0 cycles; their start-up latency stays. The trace keeps every sync
row, with zero duration.
"""

from __future__ import annotations

from functools import partial

import simpy

from sim.base.errors import DeadlockError
from sim.engine.deadlock import describe_stuck, stuck_entries
from sim.engine.eventpath import EventPath
from sim.engine.flags import FlagCounters, TimedFlags
from sim.engine.items import BARRIER, OP, SET, WAIT
from sim.engine.pipe import Pipe as _Pipe
from sim.engine.record import STREAM, Recorder
from sim.timing.plan import COLD, RESTART, WARM, timeline

__all__ = ["Machine", "describe_stuck"]


class Machine(EventPath):
    """Runs a stream of ``Issued`` items on the pipes of one unit; records the trace.

    Items are numbered in stream order (the trace's ``id``); the interpreter may hand the
    same item object over again for every dynamic instance of a statement.
    """

    # The timed path's flag state: None on the event path, which never reads it.
    timed: TimedFlags
    _set_cycles: dict
    _sleepers: dict

    def __init__(
        self,
        target,
        *,
        env=None,
        core=0,
        unit="AIV0",
        detail=False,
        races=None,
        ideal_sync=False,
        infinite_bandwidth=False,
        gm=None,
        shared=None,
        trace="full",
        batch=True,
        statics=None,
        log=None,
    ):
        self.env = env if env is not None else simpy.Environment()
        self.target = target
        self.core, self.unit = core, unit
        vec = target.vector
        self.break_on_barrier = bool(vec.get("stream_break_on_kernel_barrier", True))
        self.break_on_idle = bool(vec.get("stream_break_on_idle", True))
        self.restart_rule = vec.get("barrier_restart", "latency")
        self.floor_cycles = vec.get("count_mode_floor_cycles", 0)
        self.dispatch_cycles = int(target.scalar.get("dispatch_cycles", 0))
        self.pipes: dict[str, _Pipe] = {}
        self.flags = FlagCounters(self.env)  # this unit's own flags (tuple keys)
        self.recorder = Recorder(core, unit, trace, statics)
        if log is not None:  # when each set fired and each wait was taken, too
            self.recorder.keep_sync_ends()
        self._row = self.recorder.row
        self._sync_row = self.recorder.sync_row
        self.dispatch_done = False
        self.dispatch_blocked: tuple | None = None
        self.detail = detail  # add one "cce" row per lowered CCE item under each op
        self.ideal_sync = ideal_sync  # waits never block, barriers are free
        self.infinite_bandwidth = infinite_bandwidth  # DMA items cost 0 cycles
        self.races = races  # a RaceDetector fed as items run, or None
        # every item dispatched, in order, for a proof of race freedom after the run
        # (sim.engine.racefree, with the recorder's sync_ends), or None
        self.log = log
        # the chip's GM transfers in order (sim.engine.gmorder), or None: path bandwidth
        # only (an unbounded bandwidth has no GM model either)
        self.gm = gm if not infinite_bandwidth else None
        self.shared = shared  # the chip's cross-unit flags (sim.engine.chip), or None
        self.dispatcher = None
        # the timed path (see the module doc): unit-local flags remember when each set fired
        # Race checks see accesses in the order they happen in time (which access of a pipe
        # is the latest when another pipe's comes decides which pair a race is reported
        # as): they keep the event path, as a shared GM model does.
        timed = batch and races is None
        if timed:
            self.timed = TimedFlags(self.env)
            self._set_cycles, self._sleepers = self.timed.sets, self.timed.sleepers
        else:  # typed for the timed path, which alone reads them
            self.timed = self._set_cycles = self._sleepers = None  # type: ignore[assignment]
        # the chip's FIFO flags on the timed path (sim.engine.flags.TimedFifoFlags), their
        # key class and set latency: a push, pop or free then takes no event
        self._xtimed: TimedFlags | None = None
        self._xkey: type | None = None
        self._xlatency = 0
        if timed and hasattr(shared, "timed_path"):
            self._xtimed, self._xkey, self._xlatency = shared.timed_path()

    # --- public --------------------------------------------------------------------------

    def start(self, stream):
        """Start dispatching ``stream`` in ``env``; returns the dispatcher process."""
        self.dispatcher = self.env.process(self._dispatch(stream))
        return self.dispatcher

    def finished(self) -> bool:
        """True when the whole stream was dispatched and every pipe ran dry."""
        return (
            self.dispatcher is not None
            and self.dispatcher.triggered
            and not any(p.queue or p.blocked for p in self.pipes.values())
        )

    def now(self) -> int | float:
        """The latest cycle this unit has reached (its pipes may run ahead of the event
        loop on the timed path)."""
        return max([self.env.now, *(p.t for p in self.pipes.values())])

    def run(self, stream) -> Recorder:
        """Run ``stream`` alone in this machine's environment; its trace recording."""
        self.start(stream)
        self.env.run()
        if not self.finished():
            self._deadlock()
        return self.recorder

    # --- rows ----------------------------------------------------------------------------

    def _cce_rows(self, item, seq, pipe, dispatch, start, end, state):
        """One row per CCE item, laid end to end inside the op's interval."""
        steps, _ = timeline(
            item.plan.items, self.target.cce, self.floor_cycles, state, self.restart_rule
        )
        self.recorder.cce_rows(steps, item, seq, pipe, dispatch, start, end)

    # --- flags ---------------------------------------------------------------------------

    def _set(self, key):
        if type(key) is not tuple:
            return self.shared.set(key)
        self.flags.fire(key)

    def _wait_event(self, key):
        if self.ideal_sync and not _fifo(key):
            return None
        if type(key) is not tuple:
            return self.shared.wait_event(key)
        return self.flags.wait_event(key)

    def _take(self, key):
        if self.ideal_sync and not _fifo(key):
            return
        if type(key) is not tuple:
            self.shared.take(key)
        else:
            self.flags.take(key)

    # --- processes -----------------------------------------------------------------------

    def _pipe(self, name) -> _Pipe:
        p = self.pipes.get(name)
        if p is None:
            p = self.pipes[name] = _Pipe(name)
            if self.timed is None:
                self.env.process(self._run_pipe(p))
            else:
                p.resume = partial(self._pump, p)
        return p

    def _dispatch(self, stream):
        env = self.env
        pipes = self.pipes
        step = self._step if self.timed is not None else None
        run_op = self._run_op
        races = self.races
        moves = self.gm.transfer if self.gm is not None else None
        cycles = self.dispatch_cycles
        log = self.log.append if self.log is not None else None
        fifo, xkey = self._xtimed, self._xkey  # xkey None: no FIFO flags on this path
        now = env.now  # changes only while the dispatcher yields
        for seq, item in enumerate(stream):
            if log is not None:
                log(item)
            if cycles:
                yield env.timeout(cycles)
                now = env.now
            p = pipes.get(item.pipe)
            if p is None:  # the scalar unit, PIPE_ALL, or a pipe's first item
                pipe = item.pipe
                if pipe == "PIPE_S":
                    q = fifo.sets.get(item.flag) if fifo and type(item.flag) is xkey else None
                    if q and item.kind is WAIT and fifo:  # a FIFO slot's, set known: inline
                        ts = q[0]
                        fifo.take(item.flag)
                        if ts > now:
                            yield env.timeout(ts - now)
                        self._sync_row(item, seq, now, now, env.now)
                        now = env.now
                        continue
                    yield from self._scalar(item, seq)
                    now = env.now
                    continue
                if pipe == "PIPE_ALL" and item.kind == BARRIER:
                    yield from self._barrier_all(item, seq)
                    now = env.now
                    continue
                p = self._pipe(pipe)
            # an idle pipe takes the item at once, by arithmetic (see the module doc); an
            # instruction always can (``_step``'s first case, without its call: hot)
            if step is not None and not p.queue:
                if item.kind is OP:
                    # a GM transfer waits for its cycle's turn (sim.engine.gmorder): queued
                    x = item.xfer
                    if x is None:
                        x = item.xfer = moves is not None and moves(item.plan)
                    if not x:
                        t = p.t
                        p.t = run_op(p, item, seq, now, t if t > now else now)
                        continue
                elif step(p, item, seq, now):
                    continue
            queue = p.queue
            queue.append(item)
            queue.append(seq - p.tail_seq)
            queue.append(now)
            p.tail_seq = seq
            if races is not None:  # the dispatcher's clock at issue (never changed)
                p.clocks.append(races.dispatch)
            if step is not None:
                if len(queue) == 3:  # it was idle: it needs the event loop for this item
                    self._pump(p)
            elif p.wake is not None:
                ev, p.wake = p.wake, None
                ev.succeed()
        self.dispatch_done = True
        for p in self.pipes.values():
            if p.wake is not None:
                ev, p.wake = p.wake, None
                ev.succeed()
            elif step is not None and not p.queue:
                self._pipe_end(p)

    def _scalar(self, item, seq):
        env = self.env
        now = env.now
        timed = self.timed is not None and type(item.flag) is tuple
        fifo = self._xtimed is not None and type(item.flag) is self._xkey
        if item.kind == WAIT:
            if timed:
                yield from self._scalar_wait(item, seq)
            elif fifo:
                yield from self._scalar_wait(item, seq, self._xtimed)
            else:
                yield from self._event_wait(None, item, seq)
            if self.races is not None:
                self.races.wait_flag("PIPE_S", item.flag, {}, on_dispatcher=True)
            self._sync_row(item, seq, now, now, env.now)
        elif item.kind == SET:
            if timed:
                self._fire(item.flag, now)
            elif fifo:
                assert self._xtimed is not None
                self._xtimed.fire(item.flag, now + self._xlatency)
            else:
                self._set(item.flag)
            if self.races is not None:
                self.races.set_flag("PIPE_S", item.flag, item, seq, self.races.dispatch)
            self._sync_row(item, seq, now, now, now)
        elif item.kind == BARRIER:
            self._sync_row(item, seq, now, now, now)
        else:
            if item.cold:
                yield env.timeout(item.cold)
            if self.races is not None and item.accesses:
                # the scalar unit is the dispatcher: what it does orders everything after it
                self.races.op("PIPE_S", item, seq, item.accesses, self.races.dispatch)
                self.races.dispatch = dict(self.races.clocks["PIPE_S"])
            self._row(item, seq, now, now, env.now)

    def _scalar_wait(self, item, seq, fifo: TimedFlags | None = None):
        """A wait that holds the dispatcher, on a unit-local flag or (``fifo``: the chip's
        FIFO flags) a FIFO slot, whose wait orders data and so blocks under ideal sync
        too (timed path)."""
        flags = self.timed if fifo is None else fifo
        if self.ideal_sync and fifo is None:
            return
        env = self.env
        t = flags.take(item.flag)
        if t is None:
            self.dispatch_blocked = (item, seq)
            yield flags.sleep(item.flag)
            self.dispatch_blocked = None
            t = flags.take(item.flag)
            assert t is not None  # the set that woke it
        if t > env.now:
            yield env.timeout(t - env.now)

    def _barrier_all(self, item, seq):
        env = self.env
        now = env.now
        if self.ideal_sync:
            self._sync_row(item, seq, now, now, now)
            return
        self.dispatch_blocked = (item, seq)
        waits = []
        for p in self.pipes.values():
            if p.busy or p.queue:
                p.drained = p.drained or env.event()
                waits.append(p.drained)
        if waits:
            yield env.all_of(waits)
        if self.timed is not None:  # the pipes ran ahead of the event loop: catch up
            end = max(p.t for p in self.pipes.values()) if self.pipes else 0
            if end > env.now:
                yield env.timeout(end - env.now)
        self.dispatch_blocked = None
        if self.races is not None:
            self.races.barrier_all()
        if self.break_on_barrier:
            for p in self.pipes.values():
                if p.stream is WARM:
                    p.stream = RESTART
        self._sync_row(item, seq, now, now, env.now)

    # --- the timed path --------------------------------------------------------------------

    def _fire(self, key, t) -> None:
        """A unit-local set at cycle ``t`` (timed path)."""
        if not self.ideal_sync:
            self.timed.fire(key, t)

    def _step(self, p: _Pipe, item, seq, dispatched) -> bool:
        """Run ``item`` on ``p`` by arithmetic: start = max(pipe free, dispatch, flag set).
        False when it needs the event loop: a wait whose set has not happened yet, a
        chip-level flag (those happen in event time) or a GM transfer on a chip."""
        t = p.t if p.t > dispatched else dispatched
        kind = item.kind
        if kind is OP:
            if self.gm is not None and self.gm.transfer(item.plan):
                return False
            p.t = self._run_op(p, item, seq, dispatched, t)
            return True
        if kind is BARRIER:  # _barrier, inline
            if self.break_on_barrier and p.stream is WARM and not self.ideal_sync:
                p.stream = RESTART
            self._sync_row(item, seq, dispatched, t, t)
            p.t = t
            return True
        key = item.flag
        if type(key) is not tuple:
            if self._xtimed is not None and type(key) is self._xkey:
                return self._fifo_step(p, item, seq, dispatched, t)
            return False
        if kind is WAIT:
            end = t
            if not self.ideal_sync:
                q = self._set_cycles.get(key)  # TimedFlags.take, inline: hot
                if not q:
                    return False
                s = q.popleft()
                if s > t:
                    end = s
            self._sync_row(item, seq, dispatched, t, end)
            p.pending_waits.append(item.text)
            p.t = end
        else:  # SET (recorded first: the waiter it wakes may run at once)
            self._sync_row(item, seq, dispatched, t, t)
            self.recorder.add_record(p.last_op_row, item.text)
            p.t = t
            if not self.ideal_sync:
                q = self._set_cycles.get(key)  # TimedFlags.fire, inline: hot
                if q is None:
                    self.timed.fire(key, t)
                else:
                    q.append(t)
                    if self._sleepers:
                        waiter = self._sleepers.pop(key, None)  # TimedFlags.wake, inline
                        if waiter is not None:
                            waiter()
        return True

    def _fifo_step(self, p: _Pipe, item, seq, dispatched, t) -> bool:
        """A FIFO slot's set or wait on ``p`` at cycle ``t`` (``_step`` for the chip's
        timed FIFO flags): False when the wait's set has not happened yet."""
        flags = self._xtimed
        assert flags is not None
        if item.kind is WAIT:
            s = flags.take(item.flag)
            if s is None:
                return False
            end = s if s > t else t
            self._sync_row(item, seq, dispatched, t, end)
            p.pending_waits.append(item.text)
            p.t = end
        else:  # SET (recorded first: the waiter it wakes may run at once)
            self._sync_row(item, seq, dispatched, t, t)
            self.recorder.add_record(p.last_op_row, item.text)
            p.t = t
            flags.fire(item.flag, t + self._xlatency)
        return True

    def _pump(self, p: _Pipe) -> None:
        """Run ``p``'s queue by arithmetic until it runs dry or its head needs the event
        loop; then arrange to be called again: a wait whose set has not happened yet parks
        the pipe on its flag (the set calls ``p.resume``), a GM transfer asks for its cost
        (the answer calls back), a chip-level flag catches the event loop up first. Called
        by the dispatcher for an idle pipe and by whatever the pipe waited for."""
        queue = p.queue
        run_op = self._run_op
        moves = self.gm.transfer if self.gm is not None else None
        p.blocked = None
        while queue:
            # taken off the head (head and drop_head, inline: on a chip most items wait
            # here behind a GM transfer), put back when it needs the event loop
            item = queue.popleft()
            step = queue.popleft()
            dispatched = queue.popleft()
            seq = p.head_seq + step
            x = item.xfer if item.kind is OP else True
            if x is None:
                x = item.xfer = moves is not None and moves(item.plan)
            if not x:
                p.head_seq = seq  # an instruction: _step's first case, inline
                t = p.t
                p.t = run_op(p, item, seq, dispatched, t if t > dispatched else dispatched)
                continue
            if self._step(p, item, seq, dispatched):
                p.head_seq = seq
                continue
            queue.appendleft(dispatched)
            queue.appendleft(step)
            queue.appendleft(item)
            p.busy = True
            if item.kind is OP:
                self._timed_gm_op(p, item, seq, dispatched)
            elif type(item.flag) is tuple:  # its set has not happened yet
                p.blocked = (item, seq)
                self.timed.park(item.flag, p.resume)
            elif self._xtimed is not None and type(item.flag) is self._xkey:
                p.blocked = (item, seq)  # a FIFO slot's set still to come
                self._xtimed.park(item.flag, p.resume)
            else:
                self._chip_flag(p)
            return
        p.busy = False
        if p.drained is not None:
            ev, p.drained = p.drained, None
            ev.succeed()
        if self.dispatch_done:
            self._pipe_end(p)

    def _pipe_end(self, p: _Pipe) -> None:
        """The run ends when its last item does (the pipe may be ahead of the event loop)."""
        if p.t > self.env.now:
            self.env.timeout(p.t - self.env.now)

    def _timed_gm_op(self, p: _Pipe, item, seq, dispatched) -> None:
        """A GM transfer on the timed path: it starts when the pipe is free (its cycle may
        be ahead of the event loop's) and asks for its cost there with every unit's
        transfers of that cycle; the pipe goes on when the cost is known."""
        t = max(p.t, dispatched, self.env.now)
        own = self._own_cost(p, item, t)
        assert self.gm is not None  # a GM transfer's item comes with a GM model

        def granted(cost):
            p.drop_head()
            p.t = self._run_op(p, item, seq, dispatched, t, cost)
            self._pump(p)

        self.gm.request(t, (self.core, self.unit, p.name), item, own, granted)

    def _chip_flag(self, p: _Pipe, _=None) -> None:
        """A chip-level set or wait at the head of ``p``, in event time: first the event
        loop catches up with the pipe's own cycle."""
        env = self.env
        item, seq, dispatched = p.head()
        t = max(p.t, dispatched)
        if t > env.now:
            env.timeout(t - env.now).callbacks.append(partial(self._chip_flag, p))
            return
        start = env.now  # the pipe's cycle now: the event loop's
        if item.kind is SET:
            p.drop_head()
            self._event_set(p, item, seq, dispatched, None)
            p.t = start
            self._pump(p)
            return

        def taken(_=None):
            # the wait stays at the head until it is taken: the dispatcher hands a pipe
            # with a queue nothing (it is not idle)
            p.drop_head()
            p.blocked = None
            self._take(item.flag)
            self._sync_row(item, seq, dispatched, start, env.now)
            p.pending_waits.append(item.text)
            p.t = env.now
            self._pump(p)

        ev = self._wait_event(item.flag)
        if ev is None:
            taken()
        else:
            p.blocked = (item, seq)
            ev.callbacks.append(taken)

    def _run_op(self, p: _Pipe, item, seq, dispatched, start, granted=None) -> int:
        """Cost an instruction starting at ``start`` in the pipe's stream state (or take
        the cycles the shared GM model ``granted`` it), record it; returns its end."""
        state = p.stream
        if self.break_on_idle and start != p.last_end:
            state = COLD
        if granted is not None:
            cost = granted
        else:
            cost = (
                item.warm
                if state is WARM
                else (item.cold if state is COLD else item.plan.restart_cycles)
            )
            if self.infinite_bandwidth and cost:
                cost = max(0, cost - _dma_cycles(item.plan))
        end = start + cost
        p.last_end = end
        p.stream = RESTART if item.breaks else WARM
        waits = 0
        if p.pending_waits:
            waits = self.recorder.text_id(";".join(p.pending_waits))
            p.pending_waits = []
        p.last_op_row = self._row(
            item, seq, dispatched, start, end, STREAM[state] if p.name == "PIPE_V" else 0, waits
        )
        if self.detail and item.plan is not None:
            self._cce_rows(item, seq, p.name, dispatched, start, end, state)
        return end

    def _gm_op(self, p: _Pipe, item, seq, dispatched, start):
        """A GM transfer starting at ``start``: its cost on its own path, then what the
        chip's GM model grants it once every unit's transfers of that cycle are known
        (``sim.engine.gmorder``); records it, returns its end."""
        own = self._own_cost(p, item, start)
        assert self.gm is not None  # a GM transfer's item comes with a GM model
        granted = yield self.gm.request(start, (self.core, self.unit, p.name), item, own)
        return self._run_op(p, item, seq, dispatched, start, granted)

    def _own_cost(self, p: _Pipe, item, start) -> int:
        """An instruction's cost on its own, starting at ``start`` in the pipe's stream
        state (as ``_run_op`` costs it)."""
        state = p.stream
        if self.break_on_idle and start != p.last_end:
            state = COLD
        return (
            item.warm
            if state is WARM
            else (item.cold if state is COLD else item.plan.restart_cycles)
        )

    def _barrier(self, p: _Pipe, item, seq, dispatched, t) -> None:
        """A barrier on this pipe: everything before it has finished already."""
        if self.break_on_barrier and p.stream is WARM and not self.ideal_sync:
            p.stream = RESTART
        self._sync_row(item, seq, dispatched, t, t)

    # --- deadlock ------------------------------------------------------------------------

    def _deadlock(self):
        stuck = self.stuck()
        raise DeadlockError(f"deadlock at cycle {self.now()}: " + describe_stuck(stuck), stuck)

    def stuck(self) -> list[dict]:
        """What keeps this unit from finishing (``sim.engine.deadlock.stuck_entries``)."""
        return stuck_entries(self)


def _fifo(key) -> bool:
    """A cube<->vector FIFO's slot counter (``sim.engine.xunit``): under ideal sync its
    waits still block — a pop needs its push's data, a push a free slot — since they order
    data, not just pipes."""
    return type(key) is not tuple and key[0] == "fifo"


def _dma_cycles(plan) -> int:
    """Cycles of a plan's DMA items (rounded as the plan's totals are)."""
    if plan is None:
        return 0
    return int(sum(it.cycles for it in plan.items if it.kind == "dma") + 0.5)
