"""Where each pipe's time goes: busy, waiting on an event, waiting on a barrier, idle.

For every lane (core, unit, pipe) the run's total cycles split into four parts, all
read from the trace:

* busy: the durations of its instructions (rows of kind op or scalar);
* event wait: the durations of its ``wait_flag`` rows (the pipe was blocked at the head
  of its queue until the flag arrived);
* barrier wait: time inside a ``pipe_barrier(PIPE_ALL)`` row of its unit (dispatch held
  until every pipe drained) during which the pipe was neither busy nor in a wait — it
  had drained and could get no new work;
* idle: the rest.

A second view splits the same time into bins to show utilisation over time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from sim.trace.frame import BUSY_KINDS, covered, lanes, total_cycles

__all__ = ["stall_breakdown", "utilization"]


def _intervals(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    rows = rows[rows["duration_cycles"] > 0].sort_values("start_cycle", kind="stable")
    return rows["start_cycle"].to_numpy(), rows["end_cycle"].to_numpy()


def _lane_rows(trace, core, unit, pipe):
    return trace[(trace["core"] == core) & (trace["unit"] == unit) & (trace["pipe"] == pipe)]


def stall_breakdown(trace: pd.DataFrame) -> pd.DataFrame:
    """Per lane: ``busy_cycles, event_wait_cycles, barrier_wait_cycles, idle_cycles``.

    Columns ``core, unit, pipe`` name the lane; ``total_cycles`` is the run's length, the
    sum of the four parts.
    """
    total = total_cycles(trace)
    out = []
    for core, unit, pipe in lanes(trace):
        rows = _lane_rows(trace, core, unit, pipe)
        busy = rows[rows["kind"].isin(BUSY_KINDS)]
        waits = rows[rows["kind"] == "wait_flag"]
        occupied = _intervals(pd.concat([busy, waits]))
        barriers = _lane_rows(trace, core, unit, "PIPE_ALL")
        b_start, b_end = _intervals(barriers[barriers["kind"] == "barrier"])
        inside = covered(*occupied, b_end) - covered(*occupied, b_start)
        row: dict[str, Any] = {
            "core": core,
            "unit": unit,
            "pipe": pipe,
            "busy_cycles": int(busy["duration_cycles"].sum()),
            "event_wait_cycles": int(waits["duration_cycles"].sum()),
            "barrier_wait_cycles": int((b_end - b_start - inside).sum()),
        }
        row["idle_cycles"] = (
            total - row["busy_cycles"] - row["event_wait_cycles"] - row["barrier_wait_cycles"]
        )
        row["total_cycles"] = total
        out.append(row)
    return pd.DataFrame(
        out,
        columns=[
            "core",
            "unit",
            "pipe",
            "busy_cycles",
            "event_wait_cycles",
            "barrier_wait_cycles",
            "idle_cycles",
            "total_cycles",
        ],
    )


def utilization(trace: pd.DataFrame, bins: int = 50) -> pd.DataFrame:
    """Busy fraction of each lane in ``bins`` equal time bins.

    Index: ``bin_start`` cycle; one column per lane, named ``"<unit> <pipe>"`` (with
    ``"core <n> "`` in front when the trace has several cores); values in [0, 1].
    """
    total = max(total_cycles(trace), 1)
    edges = np.linspace(0, total, bins + 1).round().astype(np.int64)
    width = np.maximum(np.diff(edges), 1)
    all_lanes = lanes(trace)
    several = len({c for c, _, _ in all_lanes}) > 1
    data = {}
    for core, unit, pipe in all_lanes:
        rows = _lane_rows(trace, core, unit, pipe)
        spans = _intervals(rows[rows["kind"].isin(BUSY_KINDS)])
        c = covered(*spans, edges)
        name = (f"core {core} " if several else "") + f"{unit} {pipe}"
        data[name] = np.diff(c) / width
    return pd.DataFrame(data, index=pd.Index(edges[:-1], name="bin_start"))
