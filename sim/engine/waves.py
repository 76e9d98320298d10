"""Blocks in waves: a launch of more blocks than the chip has cores.

The Ascend runtime takes any ``block_dim`` from 1 to its limit (``[chip] max_block_dim``)
whatever the core count: a block is a unit of work, a core runs one block at a time, and
the blocks past the first ``cores`` wait until a core is free — the launch runs in
waves. Production kernels launch this way (flash attention over 8192 query rows is 64
blocks of 128 rows on 24 cores).

Policy (``[chip] block_dispatch = "first_free_core"``; ASSUMPTION, the reference is
[silent], ``machine.toml`` says so): block ``b < cores`` starts on core ``b`` at cycle 0;
each later block, in index order, goes to the first core that finishes its block, ``[chip]
block_dispatch_cycles`` after that block's end (0: no dispatch cost is modelled yet).
Cores freed at the same cycle take the waiting blocks in core order (the hand-over of a
cycle runs after every other event of that cycle, as ``sim.engine.gmorder`` costs GM
transfers, so the order does not depend on the engine's event schedule).

A block's end is the end of the last item of its units (its AIC and AIVs are one group:
the core is free when all of them are done). A block on a core starts afresh: its own
units, scalar values, tiles and FIFOs (``Chip`` builds them when the block starts), only
the GM arrays and the GM model carry over. ``Waves`` knows nothing of what a block runs:
``start(block, core)`` returns the machines it started (``sim.engine.machine``), whose
pipes and dispatchers tell when they are done; ``end(block)`` is told when a block is done,
so that what only the block needed (its interpreters) can go: a long launch would otherwise
keep every finished block's objects, and each full collection of the garbage collector
would scan them all. A model of launch and dispatch costs plugs in here (the latency
before a block starts on a freed core).

**Sampled waves** (``sample=k``): a long launch of alike blocks repeats one wave's
work many times over, so a run may simulate its first ``k`` waves and its last, partly
filled one, and estimate the full waves between them (``estimate``). The blocks simulated
are ``0 .. k * cores - 1`` and the last ``block_dim % cores`` (with their own block
indices: the data they touch is theirs), which take the cores freed by wave ``k`` as the
runtime would hand them out after the waves left out. Every core then runs the waves left
out, ``m = (blocks left out) / cores`` of them, one after another, each a steady block
time ``d`` (the mean duration of wave ``k``'s blocks, which ran with every core busy) plus
the dispatch latency; the estimated device time is the simulated end plus ``m`` such
waves. The first wave pays what only a launch's start pays (first touches of GM pages,
lines not yet in the L2): with ``k = 1`` the steady block time holds those costs and each
wave left out pays them again; from ``k = 2`` on it is taken past them. The estimate's
error against the exact run is measured by the tests and ``bench/bench_chip_cli.py``; only
the device time is estimated, every other figure of the run is of the blocks that ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.base.errors import UserError

__all__ = ["Waves", "block_limit", "blocks_text", "blocks_json"]

_AFTER_ALL = 2  # SimPy priority: after every ordinary event of a cycle (as gmorder)


def block_limit(target) -> int:
    """The largest ``block_dim`` the runtime takes (``[chip] max_block_dim``)."""
    return int(target.chip.get("max_block_dim", 65535))


def check_block_dim(block_dim: int, target) -> None:
    """One clear error for a ``block_dim`` outside 1 .. ``max_block_dim``."""
    top = block_limit(target)
    if not 1 <= block_dim <= top:
        raise UserError(
            f"block_dim: expected 1..{top} (the runtime's limit, [chip] max_block_dim of "
            f"target {target.name}; blocks past the {cores(target)} cores run in waves), "
            f"found {block_dim}"
        )


def cores(target) -> int:
    """The chip's cores (``[chip] cores``)."""
    return int(target.chip.get("cores", 1) or 1)


class Waves:
    """Hands the blocks of a launch to the cores (see the module doc) in ``env``.

    ``start(block, core)`` starts the block's units on the core and returns their
    machines. ``launch()`` starts the first wave at once (block ``b`` on core ``b``, in
    order); the later blocks start as cores free up, while the environment runs.
    ``table()`` is the placement: (block, core, start cycle, end cycle) by block."""

    def __init__(
        self,
        env,
        target,
        block_dim: int,
        start: Callable[[int, int], list],
        end: Callable[[int], None] | None = None,
        first_core: int = 0,
        sample: int | None = None,
    ):
        if target.chip.get("block_dispatch", "first_free_core") != "first_free_core":
            raise UserError(
                f"[chip] block_dispatch of target {target.name}: expected "
                f"'first_free_core', found {target.chip.get('block_dispatch')!r}"
            )
        self.env = env
        self.block_dim = block_dim
        self.cores = min(block_dim, cores(target))
        # the launch's cores are first_core .. first_core + cores - 1: a second stream's
        # launch beside another on the same units (sim.engine.streams)
        self.first_core = first_core
        self.latency = int(target.chip.get("block_dispatch_cycles", 0))
        self._start = start
        self._end = end  # told of each block that ended (with waves): its state can go
        self.next = 0  # the next block to start
        # the blocks simulated (the module doc's sampled waves): the first ``head`` and,
        # after ``skipped`` left out, the rest; all of them when not sampled
        self.head, self.skipped = block_dim, 0
        if sample is not None and block_dim > sample * self.cores:
            self.head = sample * self.cores
            self.skipped = (block_dim - self.head) // self.cores * self.cores
        self.limit = block_dim - self.skipped  # blocks to simulate
        # per started block: [block, core, start, end or None, its machines]
        self.placed: list[list[Any]] = []
        self._pending: dict[int, list[int]] = {}  # hand-over cycle -> cores freed for it

    @property
    def waves(self) -> bool:
        """Whether some blocks wait for a core (more blocks than cores)."""
        return self.block_dim > self.cores

    def launch(self) -> None:
        """Start the first wave: block ``b`` on core ``first_core + b`` at the current
        cycle."""
        for core in range(self.first_core, self.first_core + self.cores):
            self._begin(core)

    def _begin(self, core: int) -> None:
        b = self.next if self.next < self.head else self.next + self.skipped
        self.next += 1
        machines = self._start(b, core)
        entry = [b, core, self.env.now, None, machines]
        self.placed.append(entry)
        if self.waves:  # its end frees the core for a block still waiting
            self.env.process(self._watch(entry))

    def _watch(self, entry):
        """Wait until every unit of the block is done (dispatched everything, every pipe
        drained, the event loop caught up with the pipes that ran ahead), then free its
        core."""
        env = self.env
        machines = entry[4]
        dispatchers = [m.dispatcher for m in machines if m.dispatcher is not None]
        if dispatchers:
            yield env.all_of(dispatchers)
        while True:
            waits = []
            for m in machines:
                for p in m.pipes.values():
                    if p.busy or p.queue:
                        p.drained = p.drained or env.event()
                        waits.append(p.drained)
            if not waits:
                break
            yield env.all_of(waits)
        end = max([env.now, *(m.now() for m in machines)])
        if end > env.now:
            yield env.timeout(end - env.now)
        entry[3] = end
        if self._end is not None:
            self._end(entry[0])
        if self.next < self.limit:
            self._free(entry[1])

    def _free(self, core: int) -> None:
        at = self.env.now + self.latency
        batch = self._pending.get(at)
        if batch is None:
            batch = self._pending[at] = []
            ev = self.env.event()
            ev._ok, ev._value = True, None
            ev.callbacks.append(self._hand_over)
            self.env.schedule(ev, _AFTER_ALL, self.latency)
        batch.append(core)

    def _hand_over(self, _ev) -> None:
        """The cores freed for this cycle take the waiting blocks, in core order."""
        for core in sorted(self._pending.pop(self.env.now)):
            if self.next < self.limit:
                self._begin(core)

    def unstarted(self) -> int:
        """Blocks to simulate that never got a core (a run that deadlocked before they
        could)."""
        return self.limit - self.next

    def estimate(self) -> dict:
        """The launch's device time when waves were left out (the module doc's sampled
        waves): ``estimated_cycles``, with ``blocks_simulated``, ``waves_simulated`` (the
        full waves at the start), ``waves_estimated``, ``block_cycles`` (the steady block
        time) and ``simulated_cycles`` (the end of the simulated blocks); empty when every
        block ran."""
        if not self.skipped:
            return {}
        c, k = self.cores, self.head // self.cores
        table = self.table()
        steady = [e - s for b, _, s, e in table if (k - 1) * c <= b < k * c]
        d = sum(steady) / len(steady)
        m = self.skipped // c
        simulated = max(e for *_, e in table)
        return {
            "blocks_simulated": self.limit,
            "waves_simulated": k,
            "waves_estimated": m,
            "block_cycles": int(round(d)),
            "simulated_cycles": simulated,
            "estimated_cycles": int(round(simulated + m * (d + self.latency))),
        }

    def table(self) -> list[tuple[int, int, int, int]]:
        """(block, core, start cycle, end cycle) of every started block, by block; a block
        not watched (no waves) ends with the last item of its units."""
        out = []
        for b, core, start, end, machines in self.placed:
            if end is None:
                end = max([start, *(m.now() for m in machines)])
            out.append((b, core, int(start), int(end)))
        return out


def blocks_json(table) -> list[dict]:
    """The placement as JSON records."""
    return [{"block": b, "core": c, "start_cycle": s, "end_cycle": e} for b, c, s, e in table]


def blocks_text(table, block_dim: int, ncores: int, latency: int = 0, show: int = 6) -> str:
    """The report's placement section: one line per core with its blocks and their start /
    end cycles; a core with more than ``show`` blocks lists its first and last few."""
    waves = -(-block_dim // ncores)
    lines = [
        f"blocks: {block_dim} on {ncores} cores, {waves} waves (a block waits for the first "
        f"free core; dispatch {latency} cycles)"
    ]
    per_core: dict[int, list] = {}
    for b, c, s, e in table:
        per_core.setdefault(c, []).append((b, s, e))
    for c in sorted(per_core):
        runs = per_core[c]
        text = [f"b{b} {s}-{e}" for b, s, e in runs]
        if len(text) > show:
            keep = show // 2
            text = (
                text[:keep] + [f"... {len(text) - show + 1} more ..."] + text[-(show - keep - 1) :]
            )
        lines.append(f"core {c:<3} {len(runs):>4} blocks: " + "  ".join(text))
    return "\n".join(lines)
