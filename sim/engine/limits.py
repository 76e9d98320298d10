"""Bounded, watched runs: ``--max-cycles``, ``--max-instructions`` and a progress hook.

A kernel with a loop bound of 10⁹ (a typo, an ``--arg`` in bytes instead of tiles) runs
for hours; nothing in the program says it is wrong. ``Limits`` bounds a run by simulated
cycles and by items the interpreter issues (instructions and synchronisation
statements; loop iterations that issue neither, scalar code only, count too: see
``Limits.idle``), and gives a progress callback a look at the run now and then.

The checks cost one counter increment per issued item and per SimPy event; the clock
and the callback are consulted only every ``every`` of them. Two hooks carry them, so any
engine layout can keep them:

* ``Limits.stream(items)`` wraps the interpreter's issue stream (counts items);
* ``Limits.environment()`` is a ``simpy.Environment`` whose ``step`` counts events and
  checks the simulated time — pass it as the ``env`` of the machine(s) of the run.

Either hook raises ``RunStopped`` (a ``SimulationError``: the CLI prints one line, exit
2) naming the cycle and item count reached; ``sim.simulate`` attaches the trace recorded
so far as ``RunStopped.trace``, as it does for a deadlock.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import simpy

from sim.base.errors import SimulationError

__all__ = ["Limits", "RunStopped", "RunInterrupted"]


class RunStopped(SimulationError):
    """A run passed ``--max-cycles`` or ``--max-instructions``."""

    def __init__(self, message: str, cycle: int = 0, items: int = 0):
        # every argument in ``args``: SimPy re-raises a process's exception as
        # ``type(e)(*e.args)``
        super().__init__(message, cycle, items)
        self.cycle = cycle
        self.items = items
        self.trace = None

    def __str__(self) -> str:
        return self.args[0]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: ``cycle`` the last cycle reached, ``trace`` the rows recorded
    so far, built when first read (a chip's partial trace takes seconds to build, which
    stopping must not wait for when nobody reads it)."""

    def __init__(self, recording):
        super().__init__()
        self.cycle = int(recording.end)
        self._recording = recording
        self._trace: list = []

    @property
    def trace(self):
        if not self._trace:
            self._trace.append(self._recording.frame())
        return self._trace[0]


def _positive_or_none(inst, attribute, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise SimulationError(f"{attribute.name}: expected a positive integer, found {value!r}")


@attrs.define
class Limits:
    """Bounds and progress of one run. ``progress(items, cycle)`` is called every
    ``every`` items or events with the items issued and the simulated cycle so far."""

    max_cycles: int | None = attrs.field(default=None, validator=_positive_or_none)
    max_instructions: int | None = attrs.field(default=None, validator=_positive_or_none)
    progress: Callable[[int, int], object] | None = None
    every: int = attrs.field(default=4096, validator=_positive_or_none)
    items: int = attrs.field(default=0, init=False)
    idle_items: int = attrs.field(default=0, init=False)  # loop iterations that issued nothing
    env: simpy.Environment | None = attrs.field(default=None, init=False)
    clock: Callable[[], int | float] | None = attrs.field(default=None, init=False)

    @property
    def active(self) -> bool:
        return (
            self.max_cycles is not None
            or self.max_instructions is not None
            or self.progress is not None
        )

    @property
    def cycle(self) -> int:
        if self.clock is not None:
            return int(self.clock())
        return int(self.env.now) if self.env is not None else 0

    def environment(self, clock=None) -> simpy.Environment:
        """The SimPy environment of the run, checking simulated time as it steps;
        ``clock()`` is the run's cycle when pipes may run ahead of the environment's."""
        self.env = _WatchedEnvironment(self)
        self.clock = clock
        return self.env

    def stream(self, items):
        """``items``, counted; stops after ``max_instructions``."""
        stop = self.max_instructions
        n = self.items
        check = self._next(n)
        for item in items:
            n += 1
            if n >= check:
                self.items = n
                if stop is not None and n > stop:
                    self._stop(
                        f"--max-instructions {stop}: the kernel issued more than {stop} "
                        f"instructions and sync statements"
                    )
                self.check()
                check = self._next(n)
            yield item
        self.items = n

    def idle(self, n: int) -> None:
        """``n`` more loop iterations that issued no item (scalar code only): they count
        towards ``max_instructions`` and the progress line like issued items, or a scalar
        loop of 10^9 iterations would run unbounded and unseen."""
        self.idle_items += n
        stop = self.max_instructions
        if stop is not None and self.items + self.idle_items > stop:
            self._stop(
                f"--max-instructions {stop}: the kernel issued more than {stop} "
                f"instructions, sync statements and loop iterations that issue "
                f"neither (scalar code)"
            )
        self.check()

    def again(self) -> None:
        """Count from zero for a second run of the same kernel (a race check that runs
        again with the detector: ``sim.engine.run``)."""
        self.items = self.idle_items = 0

    def _next(self, n: int) -> int:
        """The item count of the next check: ``every`` on, and the one past the limit."""
        stop = self.max_instructions
        return n + self.every if stop is None or n > stop else min(n + self.every, stop + 1)

    def check(self) -> None:
        """Compare the clock with ``max_cycles`` and report progress."""
        if self.max_cycles is not None and self.cycle > self.max_cycles:
            self._stop(f"--max-cycles {self.max_cycles}: the run passed cycle {self.max_cycles}")
        if self.progress is not None:
            self.progress(self.items + self.idle_items, self.cycle)

    def _stop(self, why: str):
        idle = f" and {self.idle_items} scalar loop iterations" if self.idle_items else ""
        raise RunStopped(
            f"{why}; stopped at cycle {self.cycle} after {self.items} items{idle} "
            f"(raise the limit to run further)",
            self.cycle,
            self.items,
        )


class _WatchedEnvironment(simpy.Environment):
    """A SimPy environment that calls ``Limits.check`` every ``every`` events."""

    def __init__(self, limits: Limits):
        super().__init__()
        self._limits = limits
        self._countdown = limits.every

    def step(self) -> None:
        super().step()
        self._countdown -= 1
        if self._countdown <= 0:
            self._countdown = self._limits.every
            self._limits.check()
