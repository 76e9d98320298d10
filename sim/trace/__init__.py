"""Traces: schema, files, analyses and plots. Everything here reads only the trace.

A trace is a pandas DataFrame with the columns of ``sim.trace.schema`` (one row per
instruction or sync statement, times in cycles). The public functions::

    read_trace, write_trace        .json (Chrome / Perfetto; reads Perf-Sim too), .csv, .parquet
    pipe_table, op_summary         per-pipe and per-opcode summaries (DataFrames)
    stall_breakdown, utilization   busy / event wait / barrier wait / idle; busy over time
    critical_path, flag_edges      the chain that sets the total; set -> wait pairs
    gantt, utilization_plot, stall_plot, compare_runs, compare_table    (Figures / tables)
    ranks_timeline                 every rank's timeline of a run with ranks (a Figure)

The plotting functions import matplotlib on first use, so ``import sim`` stays light.
"""

from __future__ import annotations

import importlib

__all__ = [
    "read_trace",
    "write_trace",
    "pipe_table",
    "op_summary",
    "stall_breakdown",
    "utilization",
    "critical_path",
    "flag_edges",
    "gantt",
    "utilization_plot",
    "stall_plot",
    "compare_runs",
    "compare_table",
    "ranks_timeline",
]

_HOME = {
    "read_trace": "export",
    "write_trace": "export",
    "pipe_table": "report",
    "op_summary": "report",
    "stall_breakdown": "stalls",
    "utilization": "stalls",
    "critical_path": "critical",
    "flag_edges": "flags",
    "gantt": "plot",
    "utilization_plot": "plot_stalls",
    "stall_plot": "plot_stalls",
    "compare_runs": "compare",
    "compare_table": "compare",
    "ranks_timeline": "plot_ranks",
}


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'sim.trace' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"sim.trace.{home}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
