"""The result of a run: cycle totals, the trace, and the final global memory."""

from __future__ import annotations

import attrs
import numpy as np
import pandas as pd

from sim.trace.report import opcode_share, pipe_summary, text_report, unit_summary

__all__ = ["Result"]


@attrs.frozen
class Result:
    kernel: str
    target: object = attrs.field(repr=False)
    trace: pd.DataFrame = attrs.field(repr=False)
    gm: dict = attrs.field(repr=False, factory=dict)
    warnings: tuple = ()       # verifier warnings (legal but suspicious use, e.g. aliasing)
    races: tuple = ()          # race-check findings (simulate(..., races=True))
    block_dim: int = 1         # physical cores the kernel ran on
    memory: dict = attrs.field(repr=False, factory=dict)   # GM channels: bytes, utilisation, L2 hits

    @property
    def total_cycles(self) -> int:
        return int(self.trace["end_cycle"].max()) if len(self.trace) else 0

    @property
    def pipes(self) -> dict:
        """Pipe -> {busy_cycles, utilization, instructions}."""
        return pipe_summary(self.trace, self.total_cycles)

    @property
    def units(self) -> list:
        """Per core and unit: per-pipe busy cycles and utilisation, per-opcode busy cycles
        and share of the total time."""
        return unit_summary(self.trace, self.total_cycles)

    @property
    def opcodes(self) -> dict:
        """Opcode -> busy cycles and mean busy ratio over the units that run it."""
        return opcode_share(self.trace, self.total_cycles)

    def output(self, name: str) -> np.ndarray:
        """Final contents of GM argument ``name`` (flat)."""
        return self.gm[name]

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "target": self.target.name,
                "total_cycles": self.total_cycles,
                "total_us": round(self.total_cycles / self.target.clock_hz * 1e6, 6),
                "block_dim": self.block_dim,
                "pipes": self.pipes,
                "opcodes": self.opcodes,
                "units": self.units,
                "memory": self.memory,
                "instructions": int((self.trace["kind"] == "op").sum()),
                "warnings": list(self.warnings)}

    def report(self, max_rows: int = 40) -> str:
        text = text_report(self.trace, kernel=self.kernel, target=self.target.name,
                           clock_hz=self.target.clock_hz, max_rows=max_rows)
        if self.warnings:
            text += "\n\n" + "\n".join(self.warnings)
        return text

    def __str__(self) -> str:
        return self.report()
