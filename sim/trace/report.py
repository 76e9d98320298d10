"""Text, dictionary and table summaries of a trace (reads only the trace schema)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from sim.trace.frame import busy_rows, lanes
from sim.trace.frame import total_cycles as _total
from sim.trace.text import PIPE_RANK, format_report, opcode_share, units_from_totals

__all__ = [
    "pipe_summary",
    "pipe_table",
    "op_summary",
    "unit_summary",
    "opcode_share",
    "units_from_totals",
    "text_report",
]


def _pipes_in(trace) -> list[str]:
    present = [p for p in trace["pipe"].unique() if p != "PIPE_ALL"]
    return sorted(present, key=PIPE_RANK)


def pipe_summary(trace: pd.DataFrame, total_cycles: int) -> dict:
    """Pipe -> busy cycles (instructions only), utilisation and instruction count.

    Summed over every unit that has the pipe; utilisation is busy / (total x number of
    such units), the mean over them.
    """
    ops = busy_rows(trace)
    units = (
        trace.loc[trace["pipe"] != "PIPE_ALL"]
        .groupby("pipe", observed=True)[["core", "unit"]]
        .apply(lambda d: len(d.drop_duplicates()))
    )
    out = {}
    # pipes with work or scalar rows: a pipe seen only in sync rows (a FIFO wait on PIPE_S)
    # is listed by no trace mode, so "ops" and "none" runs report the same pipes
    for pipe in _pipes_in(trace[~trace["kind"].isin(("set_flag", "wait_flag", "barrier"))]):
        rows = ops[ops["pipe"] == pipe]
        busy = int(rows["duration_cycles"].sum())
        span = total_cycles * int(units.get(pipe, 1))
        out[pipe] = {
            "busy_cycles": busy,
            "utilization": round(busy / span, 4) if span else 0.0,
            "instructions": int(len(rows)),
        }
    return out


def unit_summary(trace: pd.DataFrame, total_cycles: int) -> list[dict]:
    """Per (core, unit): busy cycles, utilisation and instructions of each pipe, and each
    opcode's busy cycles and share of the total time (``ratio`` = busy / total)."""
    busy = busy_rows(trace)
    per_pipe = busy.groupby(["core", "unit", "pipe"], observed=True)["duration_cycles"].agg(
        ["sum", "count"]
    )
    per_op = (
        busy[busy["kind"] == "op"]
        .groupby(["core", "unit", "opcode"], observed=True)["duration_cycles"]
        .sum()
    )
    totals: dict[tuple[int, str], tuple[dict, dict]] = {
        (int(c), str(u)): ({}, {}) for c, u, _ in lanes(trace)
    }
    key: Any  # a group's (core, unit, pipe or opcode)
    for key, (b, n) in per_pipe.iterrows():
        c, u, p = key
        totals[(int(c), str(u))][0][str(p)] = (b, n)
    for key, b in per_op.items():
        c, u, o = key
        totals[(int(c), str(u))][1][str(o)] = b
    return units_from_totals([(c, u, p, o) for (c, u), (p, o) in totals.items()], total_cycles)


def pipe_table(trace: pd.DataFrame, total_cycles: int | None = None) -> pd.DataFrame:
    """Per lane (core, unit, pipe): busy cycles, utilisation and instruction count.

    Busy cycles are the durations of the instructions (kind op or scalar); utilisation
    is busy / ``total_cycles`` (default: the trace's largest end cycle).
    """
    total = _total(trace) if total_cycles is None else total_cycles
    busy = busy_rows(trace)
    out = []
    for core, unit, pipe in lanes(trace):
        rows = busy[(busy["core"] == core) & (busy["unit"] == unit) & (busy["pipe"] == pipe)]
        b = int(rows["duration_cycles"].sum())
        out.append(
            {
                "core": core,
                "unit": unit,
                "pipe": pipe,
                "busy_cycles": b,
                "utilization": b / total if total else 0.0,
                "instructions": len(rows),
            }
        )
    return pd.DataFrame(
        out, columns=["core", "unit", "pipe", "busy_cycles", "utilization", "instructions"]
    )


def op_summary(trace: pd.DataFrame) -> pd.DataFrame:
    """Per opcode: count, total and mean cycles, pipe."""
    ops = trace[trace["kind"] == "op"]
    g = ops.groupby(["opcode", "pipe"], sort=False)["duration_cycles"]
    df = g.agg(count="count", total_cycles="sum", mean_cycles="mean").reset_index()
    return df.sort_values("total_cycles", ascending=False, kind="stable").reset_index(drop=True)


def text_report(
    trace: pd.DataFrame,
    *,
    kernel: str,
    target: str,
    clock_hz: float,
    max_rows: int = 40,
    total: int | None = None,
    pipes: dict | None = None,
) -> str:
    """The cycle report of a trace; ``total`` / ``pipes`` stand in for a trace recorded
    without rows. (A run's ``Result.report`` makes the same text from its recording's
    arrays, ``sim.engine.summary``, without building this frame.)"""
    if total is None:
        total = int(trace["end_cycle"].max()) if len(trace) else 0
    ops = op_summary(trace)
    insts = trace[trace["kind"] == "op"].sort_values("id", kind="stable")
    rows = [{c: getattr(r, c) for c in _ROW} for r in insts.head(max_rows).itertuples()]
    return format_report(
        kernel=kernel,
        target=target,
        clock_hz=clock_hz,
        total=total,
        pipes=pipe_summary(trace, total) if pipes is None else pipes,
        units=unit_summary(trace, total),
        max_rows=max_rows,
        rows=rows,
        instructions=len(insts),
        ops=[(r.opcode, r.pipe, r.count, r.total_cycles, r.mean_cycles) for r in ops.itertuples()],
    )


_ROW = (
    "core",
    "unit",
    "id",
    "opcode",
    "pipe",
    "start_cycle",
    "end_cycle",
    "duration_cycles",
    "operands",
)
