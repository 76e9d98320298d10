"""The chip: every unit of every launched core in one SimPy environment.

``block_dim`` blocks run the kernel SPMD (programming-model.md §2.1), one block per
physical core at a time; more blocks than cores run in waves (``sim.engine.waves``: a
block waits for the first free core). Each unit of a block — AIC, AIV0, AIV1 of its core,
as ``sim.engine.units.layout`` decides from the kernel — gets its own interpreter (its own
buffers, tiles and scalar values; ``get_block_idx`` and ``get_subblock_idx`` answer with
its ids) and its own ``Machine`` (its own pipes), made when the block starts; what does
not depend on the block — each kind of unit's split and placed program, its checked sync
items, the static trace rows — is made once and shared. What the units share:

* one ``simpy.Environment``, so all timelines advance together;
* the GM arrays (functional data) and the GM model (``sim.engine.gm``): every GM
  transfer of every unit competes for the chip's bandwidth;
* the cross-unit flags and FIFO data of ``sim.engine.xunit``, the cross-core flags of
  ``sim.engine.ffts``;
* with race checks, the GM shadow and chip-level flag clocks of ``sim.engine.xraces``
  (races across units).

Each interpreter issues lazily as its dispatcher pulls, so the cost per simulated
instruction does not grow with the number of units. When the environment runs dry with a
unit unfinished, the run is deadlocked: ``DeadlockError`` names, for every stuck unit,
its core, unit, pipe and the flag it waits for.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from typing import TYPE_CHECKING

import simpy

from sim.base.errors import DeadlockError
from sim.engine.chipstate import ChipState
from sim.engine.deadlock import describe_stuck
from sim.engine.execute import Interpreter
from sim.engine.ffts import FftsWait
from sim.engine.gm import GlobalMemory
from sim.engine.gmorder import Lane, TransferOrder
from sim.engine.links import SignalWait
from sim.engine.machine import Machine
from sim.engine.placement import place_tiles
from sim.engine.racefree import race_free
from sim.engine.races import RaceDetector
from sim.engine.record import frame
from sim.engine.remote import lane
from sim.engine.scan import kept
from sim.engine.units import layout, unit_program
from sim.engine.waves import Waves
from sim.engine.xraces import ChipRaces, UnitRaces

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Chip", "ChipRecording"]


class Chip:
    """One run of ``program`` on ``block_dim`` cores of ``target``."""

    def __init__(
        self,
        program,
        target,
        *,
        block_dim=1,
        inputs=None,
        functional=True,
        strict=True,
        seed=0,
        detail=False,
        races=False,
        ideal_sync=False,
        infinite_bandwidth=False,
        l2=None,
        free=frozenset(),
        trace="full",
        limits=None,
        race_logs=False,
        gm_summary=False,
        env=None,
        rank=0,
        links=None,
        shared=None,
        first_core=0,
        sample_waves=None,
    ):
        """``races``: run the race detector (the event path); ``race_logs``: keep every
        unit's dispatched items instead, for ``race_free`` (``sim.engine.racefree``);
        ``gm_summary``: with ``race_logs`` and one unit, keep only which of its pipes
        touch each GM array (``sim.engine.access.GmShared`` ends the run when two touch
        one and one writes). A run with ranks (``sim.engine.ranks``) gives every rank's
        chip the one ``env``, its ``rank`` and the run's ``links`` (``sim.engine.links``);
        the kernels launched together on one rank (streams) share that rank's GM: ``shared``
        is (GM state, GM model) of the rank's first chip, and ``first_core`` the first of the
        cores its blocks run on (``sim.engine.streams``). ``sample_waves=k`` simulates the
        launch's first k waves only and estimates its device time from them
        (``sim.engine.waves``: ``self.waves.estimate()``)."""
        self.target = target
        self.layout = kept(
            program, ("layout", target, block_dim), lambda: layout(program, target, block_dim)
        )
        self.limits = limits  # sim.engine.limits.Limits watching the run, or None
        if env is not None:
            self.env = env
        else:
            self.env = limits.environment(self.now) if limits is not None else simpy.Environment()
        self.gm = (  # free: sim.engine.launch
            shared[1] if shared is not None else GlobalMemory(target, l2=l2, free=free)
        )
        self.state = ChipState(
            self.env, target, [(u.core, u.unit) for u in self.layout.units], ideal_sync=ideal_sync
        )
        # GM arrays, filled pages, dtypes
        self.gm_state: tuple[dict, dict, dict] = shared[0] if shared is not None else ({}, {}, {})
        if links is not None:  # TWAIT's keys go to the links (sim.engine.links)
            self.state.rank, self.state.links = rank, links
            self.state.flags.routes[SignalWait] = links
        # one unit alone never fills the GM channel (each path is slower than it), so it
        # keeps the Machine's batched fast path unless the L2 changes transfer latencies
        alone = len(self.layout.units) == 1 and not self.gm.apply_latency
        gm_model = self.gm if self.gm.active and not alone else None
        # same-cycle transfers in (core, unit, pipe) order: sim.engine.gmorder
        order: TransferOrder | Lane | None = (
            TransferOrder(self.env, gm_model) if gm_model is not None else None
        )
        if links is not None:
            # a run with ranks: a transfer may cross the links and a peer's GM model, so
            # every one is costed when it starts, in the run's one order (sim.engine.remote)
            gm_model = self.gm if self.gm.active else None
            links.models[rank] = gm_model
            order = lane(links.order, links.lane_key(rank), self.gm, links)
        self.gm_used = gm_model is not None
        # races across units (GM bytes, chip-level flags): sim.engine.xraces
        self.xraces = ChipRaces() if races and len(self.layout.units) > 1 else None
        if self.xraces is not None:
            self.state.flags.on_add = self.xraces.added
        self._programs: dict = {}
        self._placed: dict = {}
        # kept with the program for every run of it: one table of static trace rows for
        # all units, and per kind of unit the checked items of its sync statements (an item
        # carries its row's id from one unit and run to the next)
        self._statics = kept(program, ("static rows",), lambda: ([], {}))
        self.units: list = []
        # per unit (as ``units``): the GM summary its interpreter keeps instead of its GM
        # accesses (``gm_summary``), or None; kept past the unit's end, for ``race_free``
        self._gm_summaries: list = []
        # what the units work out about accesses (race checks): the same for every unit
        self._access_caches: tuple = ({}, {}, {})
        # a unit alone, its race check a proof: its GM accesses only summarised, as no
        # other unit can meet them
        summary = gm_summary and race_logs and not races and len(self.layout.units) == 1
        self._program, self._order, self._gm_model = program, order, gm_model
        self._opts = dict(
            inputs=inputs,
            functional=functional,
            strict=strict,
            seed=seed,
            detail=detail,
            races=races,
            race_logs=race_logs,
            summary=summary,
            ideal_sync=ideal_sync,
            infinite_bandwidth=infinite_bandwidth,
            trace=trace,
        )
        # the blocks' units, block by block in the layout; a block starts on a core when
        # the waves hand it one (sim.engine.waves)
        self._per_block = len(self.layout.units) // block_dim
        self.waves = Waves(
            self.env,
            target,
            block_dim,
            self._start_block,
            self._end_block,
            first_core,
            sample=sample_waves,
        )
        self._where: dict[int, int] = {}  # block -> index of its first unit in self.units
        # the first wave's units now (a run that stops before it starts still has them)
        self._first = [self._block_units(b, b + first_core) for b in range(self.waves.cores)]

    def _block_units(self, block: int, core: int) -> list:
        """Make the units of ``block`` on physical core ``core``: (spec, interpreter,
        machine) each; the programs, placements and sync items are made once per kind."""
        program, target, o = self._program, self.target, self._opts
        k = self._per_block
        made = []
        for spec in self.layout.units[block * k : (block + 1) * k]:
            if spec.kind not in self._programs:
                self._programs[spec.kind], self._placed[spec.kind] = kept(
                    program,
                    ("unit", spec.kind, target),
                    functools.partial(_placed_unit, program, spec.kind, target),
                )
            interp = Interpreter(
                self._programs[spec.kind],
                target,
                inputs=o["inputs"],
                functional=o["functional"],
                strict=o["strict"],
                seed=o["seed"],
                track_accesses=o["races"] or o["race_logs"],
                spec=spec,
                chip=self.state,
                gm=self.gm_state,
                placed=self._placed[spec.kind],
                gm_windows=self._gm_model is not None and self._gm_model.needs_window(),
                sync_items=kept(program, ("sync items", spec.kind, target), dict),
                access_caches=self._access_caches,
                gm_pipes={} if o["summary"] else None,
            )
            self._gm_summaries.append(interp.gm_pipes)
            machine = Machine(
                target,
                env=self.env,
                core=core,
                unit=spec.unit,
                detail=o["detail"],
                races=self._race_detector(spec, o["races"]),
                ideal_sync=o["ideal_sync"],
                infinite_bandwidth=o["infinite_bandwidth"],
                gm=self._order,
                shared=self.state.flags,
                trace=o["trace"],
                statics=self._statics,
                log=[] if o["race_logs"] else None,
            )
            machine.recorder.block = spec.block_idx
            interp.limits = self.limits  # a scalar-only loop issues nothing to count
            made.append((spec, interp, machine))
        self._where[block] = len(self.units)
        self.units += made
        return made

    def _end_block(self, block: int) -> None:
        """A block is done (``Waves``): its interpreters go, their warnings stay."""
        at = self._where.pop(block)
        for i in range(at, at + self._per_block):
            spec, interp, machine = self.units[i]
            self.units[i] = (spec, _Ended(interp.warnings), machine)

    def _start_block(self, block: int, core: int) -> list:
        """Start ``block``'s units on ``core`` (``Waves``); their machines."""
        units = self._first[block] if block < len(self._first) else self._block_units(block, core)
        for _, interp, machine in units:
            stream = interp.issue()
            machine.start(self.limits.stream(stream) if self.limits is not None else stream)
        return [m for _, _, m in units]

    def run(self):
        """Run every block to the end; the trace recording of all their units."""
        self.waves.launch()
        with _rare_full_collections():
            self.env.run()
        self.check()
        return self.recording()

    def stuck(self) -> list:
        """(spec, machine) of every unit left unfinished."""
        return [(spec, m) for spec, _, m in self.units if not m.finished()]

    def check(self) -> None:
        """After the environment ran dry: a unit unfinished or a block never started is a
        deadlock (``DeadlockError``)."""
        stuck = self.stuck()
        if stuck or self.waves.unstarted():
            self._deadlock(stuck)

    def now(self) -> int:
        """The latest cycle any unit has reached (pipes may run ahead of the event loop)."""
        return max(m.now() for _, _, m in self.units)

    def recording(self):
        """One unit's ``Recorder``, or all of them as a ``ChipRecording``."""
        if len(self.units) == 1:
            return self.units[0][2].recorder
        return ChipRecording(tuple(m.recorder for _, _, m in self.units))

    @property
    def warnings(self) -> tuple:
        seen = {}
        for _, interp, _ in self.units:
            seen.update(interp.warnings)
        return tuple(seen)

    def _race_detector(self, spec, races):
        if not races:
            return None
        if self.xraces is None:
            return RaceDetector()
        return UnitRaces(self.xraces, spec.core, spec.unit)

    def race_free(self) -> bool:
        """Whether the run's dispatch logs show the race detector would report nothing
        (``sim.engine.racefree``; False also when that cannot be shown)."""
        return race_free(
            [m.log for _, _, m in self.units],
            [m.recorder.sync_ends() for _, _, m in self.units],
            self._gm_summaries,
        )

    def races(self) -> tuple:
        own = tuple(r for _, _, m in self.units if m.races is not None for r in m.races.finish())
        return own + (tuple(self.xraces.findings) if self.xraces is not None else ())

    def _deadlock(self, stuck):
        multi = len(self.units) > 1
        waves = self.waves.waves
        parts, entries = [], []
        for spec, m in stuck:
            items = m.stuck()
            for s in items:
                s["core"], s["unit"] = m.core, spec.unit
                if waves:
                    s["block"] = spec.block_idx
                self._missing_sets(m, s)
            entries += items
            where = (
                f"block {spec.block_idx} on core {m.core} {spec.unit} "
                if waves
                else f"core {m.core} {spec.unit} "
                if multi
                else ""
            )
            parts.append(describe_stuck(items, where))
        left = self.waves.unstarted()
        if left:
            parts.append(
                f"{left} of the {self.waves.block_dim} blocks never started (they wait for a "
                f"core the stuck blocks hold)"
            )
        raise DeadlockError(f"deadlock at cycle {self.now()}: " + "; ".join(parts), entries)

    def _missing_sets(self, machine, entry) -> None:
        """Name, in a stuck entry waiting on a cross-core flag or a syncall, the units whose
        set it still needs (``sim.engine.ffts``)."""
        blocked = [p.blocked for p in machine.pipes.values() if p.blocked is not None]
        if machine.dispatch_blocked is not None:
            blocked.append(machine.dispatch_blocked)
        for item, seq in blocked:
            if item.label(seq) == entry["wait"] and type(item.flag) is FftsWait:
                missing = ", ".join(self.state.ffts.missing(item.flag))
                before = f" before {entry['next']}" if entry.get("next") else ""
                entry["text"] = (
                    f"{entry['pipe']} waits for flag {entry['waits_for']} "
                    f"({entry['wait']}){before}: no set yet from {missing}"
                )


@contextlib.contextmanager
def _rare_full_collections():
    """The collector's thresholds for a run: what a run keeps (queued items, dispatch
    logs, the units of every block so far) grows with it, and each full collection
    rescans all of it (about a tenth of a flash attention of 2x10^5 instructions in 64
    blocks, measured: 1.2 s of full collections in 8.7 s). The young generations keep
    their thresholds (larger ones slowed a GEMM of 4x10^5 instructions down by 8 %) and
    still reclaim the short-lived cycles (events, generators); a cycle that outlives them
    waits for the end of the run (a few MB per 10^5 instructions)."""
    old = gc.get_threshold()
    gc.set_threshold(old[0], old[1], max(old[2], 1_000))
    try:
        yield
    finally:
        gc.set_threshold(*old)


class _Ended:
    """What a finished block's interpreter leaves behind: its warnings."""

    __slots__ = ("warnings",)

    def __init__(self, warnings: dict):
        self.warnings = warnings


def _placed_unit(program, kind, target) -> tuple:
    """The program the units of ``kind`` run, and its tiles' addresses."""
    unit = unit_program(program, kind, target)
    return unit, place_tiles(unit, target)


class ChipRecording:
    """The recordings of every unit, read as one (the reading side of ``Recorder``)."""

    def __init__(self, recorders):
        self.recorders = recorders
        self.mode = recorders[0].mode
        self.end = max(r.end for r in recorders)
        self.ops = sum(r.ops for r in recorders)

    def pipe_totals(self) -> dict:
        out: dict = {}
        for r in self.recorders:
            for pipe, (busy, n) in r.pipe_totals().items():
                b, m = out.get(pipe, (0, 0))
                out[pipe] = (b + busy, m + n)
        return out

    def frame(self) -> pd.DataFrame:
        """Every unit's rows, by start cycle, then core, unit and id."""
        return frame(self.recorders)
