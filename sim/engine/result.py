"""The result of a run: cycle totals, the trace, and the final global memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np

from sim.base.errors import UserError
from sim.engine.summary import Summary
from sim.engine.waves import blocks_json, blocks_text
from sim.trace.text import format_report, opcode_share, units_from_totals

if TYPE_CHECKING:
    import pandas as pd

    from sim.engine.chip import ChipRecording
    from sim.engine.record import Recorder
    from sim.target.model import Target

__all__ = ["Result", "MODE_TEXT", "UnknownOutput"]


class UnknownOutput(UserError, KeyError):
    """``Result.output`` of a name the run has no GM argument for."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


MODE_TEXT = {
    "auto": "no explicit sync in the kernel: flags and barriers inserted and "
    "unaddressed tiles placed by the simulator, as the toolchain's auto mode does",
    "manual": "run as written, with the kernel's own flags and barriers",
    "ideal": "every wait satisfied at once, barriers free: a lower bound",
}


@attrs.frozen
class Result:
    """``trace`` is built from the run's columnar recording the first time it is read."""

    kernel: str
    target: Target = attrs.field(repr=False)
    # a unit's Recorder, or a ChipRecording of several (sim.engine.chip)
    recording: Recorder | ChipRecording = attrs.field(repr=False)
    gm: dict = attrs.field(repr=False, factory=dict)
    warnings: tuple = ()  # verifier warnings (legal but suspicious use, e.g. aliasing)
    races: tuple = ()  # race-check findings (simulate(..., races=True))
    mode: str = "manual"  # synchronisation mode that ran: auto | manual | ideal
    # what the mode meant for this kernel when MODE_TEXT's words do not hold (auto asked
    # for on a hand-synchronised kernel: its own sync removed; sim.engine.mode)
    mode_note: str = ""
    block_dim: int = 1  # blocks of the launch (get_block_num)
    memory: dict = attrs.field(repr=False, factory=dict)  # GM channels: bytes, utilisation, L2 hits
    races_checked: bool = False  # whether the run checked races (``races`` is then complete)
    # how: "proof" (shown race-free from the order its synchronisation imposes, without the
    # detector: sim.engine.racefree) or "detector" (every access followed in event time)
    races_by: str = ""
    # which block ran on which core and when: (block, core, start, end cycle) by block
    # (sim.engine.waves); ``cores`` the physical cores the launch used
    blocks: tuple = attrs.field(repr=False, factory=tuple)
    cores: int = 1
    dispatch_cycles: int = 0  # [chip] block_dispatch_cycles (the report says it)
    functional: bool = True  # whether the functional units ran (False: no data computed)
    # the fixed launch overhead of a call ([chip.launch], sim.engine.launch): beside the
    # device time (total_cycles), never in it
    launch_cycles: int = 0
    # a launch of which only the first waves ran (simulate(..., sample_waves=k)): the
    # estimate of sim.engine.waves (estimated_cycles, blocks_simulated, waves_simulated,
    # waves_estimated, block_cycles, simulated_cycles); empty when every block ran
    sample: dict = attrs.field(factory=dict)
    _trace: list = attrs.field(init=False, factory=list, repr=False, eq=False)
    _summary: list = attrs.field(init=False, factory=list, repr=False, eq=False)

    @property
    def trace(self) -> pd.DataFrame:
        """The trace DataFrame (``sim.trace.schema``); empty when run with ``trace="none"``.
        Built on first read: the report and the summaries below do without it."""
        if not self._trace:
            self._trace.append(self.recording.frame())
        return self._trace[0]

    def _sums(self) -> Summary:
        """The recording's totals for the report (``sim.engine.summary``), made once."""
        if not self._summary:
            self._summary.append(Summary(getattr(self.recording, "recorders", (self.recording,))))
        return self._summary[0]

    @property
    def total_cycles(self) -> int:
        """Device time in cycles: the end of the last block (estimated when only the first
        waves of the launch ran: ``sample``)."""
        if self.sample:
            return int(self.sample["estimated_cycles"])
        return int(self.recording.end)

    @property
    def _span(self) -> int:
        """The cycles the recorded blocks ran: what pipe and unit utilisation divide by
        (``total_cycles`` unless the launch was sampled)."""
        return int(self.recording.end)

    @property
    def device_cycles(self) -> int:
        """Device time: from the first block's start to the last block's end (as
        ``total_cycles``)."""
        return self.total_cycles

    @property
    def with_launch_cycles(self) -> int:
        """Device time plus the fixed launch overhead: what a host timer around one call
        measures (the "with launch" of public figures)."""
        return self.total_cycles + self.launch_cycles

    @property
    def pipes(self) -> dict:
        """Pipe -> {busy_cycles, utilization, instructions} (of the blocks that ran)."""
        total = self._span
        if self.recording.mode != "none":
            return self._sums().pipes(total)
        # utilisation is the mean over the units that have the pipe, as pipe_summary's
        units: dict = {}
        for r in getattr(self.recording, "recorders", (self.recording,)):
            for pipe in r.pipe_totals():
                units[pipe] = units.get(pipe, 0) + 1
        return {
            pipe: {
                "busy_cycles": busy,
                "utilization": round(busy / (total * units.get(pipe, 1)), 4) if total else 0.0,
                "instructions": n,
            }
            for pipe, (busy, n) in self.recording.pipe_totals().items()
        }

    @property
    def instructions(self) -> int:
        """PTO instructions executed (trace rows of kind ``op``)."""
        if self.recording.mode == "none":
            return self.recording.ops
        return self._sums().instructions

    @property
    def units(self) -> list:
        """Per core and unit: per-pipe busy cycles and utilisation, per-opcode busy cycles
        and share of the total time."""
        rec = self.recording
        if rec.mode != "none":
            return self._sums().units(self._span)
        return units_from_totals(_core_unit_totals(_recorders(rec)), self._span)

    @property
    def opcodes(self) -> dict:
        """Opcode -> busy cycles and mean busy ratio over the units that run it."""
        return opcode_share(self.units, self._span)

    def output(self, name: str) -> np.ndarray:
        """Final contents of GM argument ``name`` (flat). An unknown name is a
        ``UnknownOutput`` (a ``UserError`` and a ``KeyError``) naming the arguments the
        run has. A timing-only run (``functional=False``) computed no data: asking it for
        an output is a ``UserError``, not an array of whatever the memory held."""
        if not self.functional:
            raise UserError(
                f"output {name!r}: the run was timing-only (functional=False) and computed "
                f"no data; simulate with functional=True to read outputs"
            )
        try:
            return self.gm[name]
        except KeyError:
            known = ", ".join(sorted(self.gm)) or "none"
            raise UnknownOutput(
                f"output {name!r}: the run has no GM argument {name!r} (GM arguments: {known})"
            ) from None

    def to_json(self) -> dict:
        return {
            "kernel": self.kernel,
            "target": self.target.name,
            "mode": self.mode,
            "total_cycles": self.total_cycles,
            "total_us": round(self.total_cycles / self.target.clock_hz * 1e6, 6),
            "device_cycles": self.device_cycles,
            "launch_cycles": self.launch_cycles,
            "with_launch_cycles": self.with_launch_cycles,
            "with_launch_us": round(self.with_launch_cycles / self.target.clock_hz * 1e6, 6),
            "block_dim": self.block_dim,
            "pipes": self.pipes,
            "opcodes": self.opcodes,
            "units": self.units,
            "memory": self.memory,
            "cores": self.cores,
            "blocks": blocks_json(self.blocks),
            **({"sample": dict(self.sample)} if self.sample else {}),
            "instructions": self.instructions,
            "races": {"checked": self.races_checked, "found": len(self.races), "by": self.races_by},
            "warnings": list(self.warnings),
        }

    def report(self, max_rows: int = 40) -> str:
        # a run that kept no rows (trace="none") has the pipe totals only
        sums, span = self._sums(), self._span
        text = format_report(
            kernel=self.kernel,
            target=self.target.name,
            clock_hz=self.target.clock_hz,
            max_rows=max_rows,
            total=self.total_cycles,
            pipes=self.pipes,
            units=sums.units(span),
            ops=sums.ops(),
            rows=sums.rows(max_rows),
            instructions=sums.instructions,
        )
        head, _, rest = text.partition("\n")
        text = (
            f"{head}\nsync mode: {self.mode} ({self.mode_note or MODE_TEXT[self.mode]})\n"
            f"races: {self._races_text()}\n{self._launch_text()}{self._sample_text()}{rest}"
        )
        if self.block_dim > self.cores:  # blocks in waves: which ran where and when
            text += "\n\n" + blocks_text(
                self.blocks, self.block_dim, self.cores, self.dispatch_cycles
            )
        if self.warnings:
            text += "\n\n" + "\n".join(self.warnings)
        return text

    def _launch_text(self) -> str:
        """The device / launch line of the report (none when the target has no launch
        overhead)."""
        if not self.launch_cycles:
            return ""
        us = 1e6 / self.target.clock_hz
        return (
            f"device time: {self.total_cycles} cycles ({self.total_cycles * us:.2f} us); "
            f"launch overhead: {self.launch_cycles} cycles ({self.launch_cycles * us:.2f} us); "
            f"with launch: {self.with_launch_cycles * us:.2f} us\n"
        )

    def _sample_text(self) -> str:
        """The report's line for a sampled launch (none when every block ran)."""
        s = self.sample
        if not s:
            return ""
        last = s["blocks_simulated"] - s["waves_simulated"] * self.cores
        return (
            f"sampled: {s['blocks_simulated']} of {self.block_dim} blocks simulated (the first "
            f"{s['waves_simulated']} waves and the last {last} blocks, to cycle "
            f"{s['simulated_cycles']}); device time estimated {s['estimated_cycles']} cycles, "
            f"{s['waves_estimated']} waves at the steady block time {s['block_cycles']}; the "
            f"figures below are of the simulated blocks\n"
        )

    def _races_text(self) -> str:
        if not self.races_checked:
            return "not checked"
        n = len(self.races)
        how = {
            "proof": " (shown from the synchronisation order)",
            "detector": " (race detector)",
        }.get(self.races_by, "")
        return (f"checked, {n} found" if n else "checked, none found") + how

    def __str__(self) -> str:
        return self.report()


def _core_unit_totals(recorders) -> list[tuple]:
    """``(core, unit, {pipe: (busy, instructions)}, {opcode: busy})`` per core and unit of a
    run recorded without rows: a core that ran several blocks in waves sums their units,
    as the summaries of a recorded run do (``Summary.units``). Units that ran nothing (the
    vector units of a cube-only kernel) have no totals and no entry."""
    merged: dict = {}
    for r in recorders:
        totals = r.pipe_totals()
        if not totals:
            continue
        pipes, ops = merged.setdefault((r.core, r.unit), ({}, {}))
        for pipe, (busy, n) in totals.items():
            b0, n0 = pipes.get(pipe, (0, 0))
            pipes[pipe] = (b0 + busy, n0 + n)
        for opcode, busy in r.op_busy.items():
            ops[opcode] = ops.get(opcode, 0) + busy
    return [(c, u, pipes, ops) for (c, u), (pipes, ops) in merged.items()]


def _recorders(recording) -> tuple[Recorder, ...]:
    """The unit recordings of a run (a ``ChipRecording`` holds several)."""
    return getattr(recording, "recorders", (recording,))
