"""What-if re-runs: how much faster could this kernel get, and what stands in the way?

The kernel is simulated four times: as it is; with ideal synchronisation (every
``wait_flag`` is satisfied at once and barriers are free, so each pipe only waits for its
own queue — a cube<->vector FIFO's slots still order its pops behind their pushes, since
they carry data); with infinite bandwidth (DMA transfers — TLOAD, TSTORE, TMOV paths — move their
bytes in 0 cycles; their fixed start-up latency stays); and with both. The speedups over the as-is
run bound what better overlap or faster data movement could gain: if ideal sync barely helps, the
kernel is bound by its busiest pipe; if infinite bandwidth helps most, it is bound by data movement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from sim.engine.run import simulate

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from sim.isa.program import Program
    from sim.kernel.builder import Kernel
    from sim.target.model import Target


__all__ = ["whatif", "SCENARIOS"]

SCENARIOS = {
    "as-is": {},
    "ideal sync": {"ideal_sync": True},
    "infinite bandwidth": {"infinite_bandwidth": True},
    "both": {"ideal_sync": True, "infinite_bandwidth": True},
}


def whatif(
    program_or_kernel: Program | Kernel,
    target: str | Path | Target = "a2a3",
    **simulate_kwargs: Any,
) -> pd.DataFrame:
    """Total cycles and speedup over the as-is run for each scenario.

    Index: ``as-is``, ``ideal sync``, ``infinite bandwidth``, ``both``. Columns:
    ``total_cycles``, ``speedup`` (as-is total / this total; inf when this total is 0).
    ``simulate_kwargs`` go to ``sim.simulate`` (``inputs``, ``functional`` ...).
    """
    totals = {}
    for name, options in SCENARIOS.items():
        r = simulate(program_or_kernel, target, **{**simulate_kwargs, **options})
        totals[name] = r.total_cycles
    base = totals["as-is"]
    df = pd.DataFrame({"total_cycles": pd.Series(totals, dtype="int64")})
    df["speedup"] = [base / t if t else float("inf") for t in df["total_cycles"]]
    df.index.name = "scenario"
    return df
