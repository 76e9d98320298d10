"""The result of a run: cycle totals, the trace, and the final global memory."""

from __future__ import annotations

import attrs
import numpy as np
import pandas as pd

from sim.trace.report import pipe_summary, text_report

__all__ = ["Result", "MODE_TEXT"]

MODE_TEXT = {"auto": "no explicit sync in the kernel: flags and barriers inserted and "
                     "unaddressed tiles placed by the simulator, as the toolchain's auto mode does",
             "manual": "run as written, with the kernel's own flags and barriers",
             "ideal": "every wait satisfied at once, barriers free: a lower bound"}


@attrs.frozen
class Result:
    kernel: str
    target: object = attrs.field(repr=False)
    trace: pd.DataFrame = attrs.field(repr=False)
    gm: dict = attrs.field(repr=False, factory=dict)
    warnings: tuple = ()       # verifier warnings (legal but suspicious use, e.g. aliasing)
    races: tuple = ()          # race-check findings (simulate(..., races=True))
    mode: str = "manual"       # synchronisation mode that ran: auto | manual | ideal

    @property
    def total_cycles(self) -> int:
        return int(self.trace["end_cycle"].max()) if len(self.trace) else 0

    @property
    def pipes(self) -> dict:
        """Pipe -> {busy_cycles, utilization, instructions}."""
        return pipe_summary(self.trace, self.total_cycles)

    def output(self, name: str) -> np.ndarray:
        """Final contents of GM argument ``name`` (flat)."""
        return self.gm[name]

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "target": self.target.name, "mode": self.mode,
                "total_cycles": self.total_cycles,
                "total_us": round(self.total_cycles / self.target.clock_hz * 1e6, 6),
                "pipes": self.pipes,
                "instructions": int((self.trace["kind"] == "op").sum()),
                "warnings": list(self.warnings)}

    def report(self, max_rows: int = 40) -> str:
        text = text_report(self.trace, kernel=self.kernel, target=self.target.name,
                           clock_hz=self.target.clock_hz, max_rows=max_rows)
        head, _, rest = text.partition("\n")
        text = f"{head}\nsync mode: {self.mode} ({MODE_TEXT[self.mode]})\n{rest}"
        if self.warnings:
            text += "\n\n" + "\n".join(self.warnings)
        return text

    def __str__(self) -> str:
        return self.report()
