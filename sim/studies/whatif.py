"""What-if re-runs: how much faster could this kernel get, and what stands in the way?

The kernel is simulated as it is; with ideal synchronisation (every ``wait_flag`` is
satisfied at once and barriers are free, so each pipe only waits for its own queue — a
cube<->vector FIFO's slots still order its pops behind their pushes, since they carry data);
with infinite bandwidth (DMA transfers — TLOAD, TSTORE, TMOV paths — move their bytes in 0
cycles; their fixed start-up latency stays); and with both. The speedups over the as-is run
bound what better overlap or faster data movement could gain: if ideal sync barely helps, the
kernel is bound by its busiest pipe; if infinite bandwidth helps most, it is bound by data
movement.

Then once with each **shared mechanism** of the chip made free (``sim.engine.launch.MECHANISMS``:
the shared HBM / L2 channels, the GM write ports, the page walks of first touches, the
launch overhead), and with all of them free: what each costs this kernel. The cores of a
chip share these; a kernel that slows down as cores are added loses its time there, and the
row of the mechanism says how much. The launch overhead is outside the device time: freeing
it changes only the with-launch column (the as-is run gives that row, the device time being
the same).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from sim.base.errors import UserError
from sim.engine.launch import MECHANISMS, free_set
from sim.engine.result import Result
from sim.engine.run import simulate

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from sim.isa.program import Program
    from sim.kernel.builder import Kernel
    from sim.target.model import Target


__all__ = ["whatif", "SCENARIOS", "SHARED"]

SCENARIOS = {
    "as-is": {},
    "ideal sync": {"ideal_sync": True},
    "infinite bandwidth": {"infinite_bandwidth": True},
    "both": {"ideal_sync": True, "infinite_bandwidth": True},
}
# one row per shared mechanism made free, then all of them
SHARED = {
    **{f"free {name}": (name,) for name in MECHANISMS},
    "free all shared": tuple(MECHANISMS),
}


def whatif(
    program_or_kernel: Program | Kernel,
    target: str | Path | Target = "a2a3",
    *,
    shared: bool = True,
    **simulate_kwargs: Any,
) -> pd.DataFrame:
    """Device and with-launch cycles and speedups over the as-is run for each scenario.

    Index: ``as-is``, ``ideal sync``, ``infinite bandwidth``, ``both``, then (``shared``) one
    ``free <mechanism>`` row per shared mechanism and ``free all shared``. Columns:
    ``total_cycles`` (device time), ``with_launch_cycles`` (device time plus the launch
    overhead), ``speedup`` (as-is device time / this one; inf when this one is 0) and
    ``speedup_with_launch`` (the same on with-launch time). ``simulate_kwargs`` go to
    ``sim.simulate`` (``inputs``, ``functional``, ``block_dim`` ...); a ``free`` among them
    holds in every scenario.
    """
    base_free = free_set(simulate_kwargs.pop("free", None))
    scenarios: dict[str, dict] = dict(SCENARIOS)
    if shared:
        scenarios |= {name: {"free": names} for name, names in SHARED.items()}
    device: dict[str, int] = {}
    with_launch: dict[str, int] = {}
    as_is = None
    for name, options in scenarios.items():
        freed = base_free | frozenset(options.get("free", ()))
        if name == "free launch" and as_is is not None:
            # launch is outside device time: the as-is run without it
            device[name], with_launch[name] = as_is.total_cycles, as_is.total_cycles
            continue
        r = simulate(program_or_kernel, target, **{**simulate_kwargs, **options, "free": freed})
        if not isinstance(r, Result):
            raise UserError("whatif: one chip at a time (a run of several ranks is not compared)")
        if name == "as-is":
            as_is = r
        device[name], with_launch[name] = r.total_cycles, r.with_launch_cycles
    df = pd.DataFrame(
        {
            "total_cycles": pd.Series(device, dtype="int64"),
            "with_launch_cycles": pd.Series(with_launch, dtype="int64"),
        }
    )
    for col, speed in (("total_cycles", "speedup"), ("with_launch_cycles", "speedup_with_launch")):
        base = df.loc["as-is", col]
        df[speed] = [base / t if t else float("inf") for t in df[col]]
    df.index.name = "scenario"
    return df
