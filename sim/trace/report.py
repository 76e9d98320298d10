"""Text, dictionary and table summaries of a trace (reads only the trace schema)."""

from __future__ import annotations

import pandas as pd

from sim.trace.frame import busy_rows, lanes
from sim.trace.frame import total_cycles as _total

__all__ = ["pipe_summary", "pipe_table", "op_summary", "text_report"]

_PIPE_ORDER = ["PIPE_S", "PIPE_MTE2", "PIPE_MTE1", "PIPE_V", "PIPE_M", "PIPE_FIX", "PIPE_MTE3"]


def _pipes_in(trace) -> list[str]:
    present = [p for p in trace["pipe"].unique() if p != "PIPE_ALL"]
    return sorted(present, key=lambda p: (_PIPE_ORDER.index(p) if p in _PIPE_ORDER else 99, p))


def pipe_summary(trace: pd.DataFrame, total_cycles: int) -> dict:
    """Pipe -> busy cycles (instructions only), utilisation and instruction count."""
    ops = trace[trace["kind"].isin(["op", "scalar"])]
    out = {}
    for pipe in _pipes_in(trace):
        rows = ops[ops["pipe"] == pipe]
        busy = int(rows["duration_cycles"].sum())
        out[pipe] = {"busy_cycles": busy,
                     "utilization": round(busy / total_cycles, 4) if total_cycles else 0.0,
                     "instructions": int(len(rows))}
    return out


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
        out.append({"core": core, "unit": unit, "pipe": pipe, "busy_cycles": b,
                    "utilization": b / total if total else 0.0, "instructions": len(rows)})
    return pd.DataFrame(out, columns=["core", "unit", "pipe", "busy_cycles", "utilization",
                                      "instructions"])


def op_summary(trace: pd.DataFrame) -> pd.DataFrame:
    """Per opcode: count, total and mean cycles, pipe."""
    ops = trace[trace["kind"] == "op"]
    g = ops.groupby(["opcode", "pipe"], sort=False)["duration_cycles"]
    df = g.agg(count="count", total_cycles="sum", mean_cycles="mean").reset_index()
    return df.sort_values("total_cycles", ascending=False, kind="stable").reset_index(drop=True)


def text_report(trace: pd.DataFrame, *, kernel: str, target: str, clock_hz: float,
                max_rows: int = 40, total: int | None = None, pipes: dict | None = None) -> str:
    """The cycle report; ``total`` / ``pipes`` stand in for a trace recorded without rows."""
    if total is None:
        total = int(trace["end_cycle"].max()) if len(trace) else 0
    lines = [f"pto-sim: kernel {kernel} on {target}",
             f"total cycles: {total}  ({total / clock_hz * 1e6:.3f} us at {clock_hz / 1e9:g} GHz)",
             "", f"{'pipe':<10} {'busy':>9} {'util':>7} {'instrs':>7}"]
    for pipe, s in (pipe_summary(trace, total) if pipes is None else pipes).items():
        lines.append(f"{pipe:<10} {s['busy_cycles']:>9} {s['utilization']:>7.1%} {s['instructions']:>7}")
    ops = op_summary(trace)
    if len(ops):
        lines += ["", f"{'opcode':<14} {'pipe':<10} {'count':>6} {'cycles':>9} {'mean':>8}"]
        for r in ops.itertuples():
            lines.append(f"{r.opcode:<14} {r.pipe:<10} {r.count:>6} {r.total_cycles:>9} {r.mean_cycles:>8.1f}")
    insts = trace[trace["kind"] == "op"].sort_values("id", kind="stable")
    if len(insts):
        lines += ["", f"{'id':>5} {'opcode':<12} {'pipe':<10} {'start':>8} {'end':>8} {'cycles':>7}  operands"]
        for r in insts.head(max_rows).itertuples():
            lines.append(f"{r.id:>5} {r.opcode:<12} {r.pipe:<10} {r.start_cycle:>8} {r.end_cycle:>8} "
                         f"{r.duration_cycles:>7}  {r.operands}")
        if len(insts) > max_rows:
            lines.append(f"  ... {len(insts) - max_rows} more instructions (write the full trace with --trace)")
    return "\n".join(lines)
