"""Text, dictionary and table summaries of a trace (reads only the trace schema)."""

from __future__ import annotations

import pandas as pd

from sim.trace.frame import busy_rows, lanes
from sim.trace.frame import total_cycles as _total

__all__ = ["pipe_summary", "pipe_table", "op_summary", "unit_summary", "opcode_share",
           "text_report"]

_PIPE_ORDER = ["PIPE_S", "PIPE_MTE2", "PIPE_MTE1", "PIPE_V", "PIPE_M", "PIPE_FIX", "PIPE_MTE3"]


def _pipes_in(trace) -> list[str]:
    present = [p for p in trace["pipe"].unique() if p != "PIPE_ALL"]
    return sorted(present, key=lambda p: (_PIPE_ORDER.index(p) if p in _PIPE_ORDER else 99, p))


def pipe_summary(trace: pd.DataFrame, total_cycles: int) -> dict:
    """Pipe -> busy cycles (instructions only), utilisation and instruction count.

    Summed over every unit that has the pipe; utilisation is busy / (total x number of
    such units), the mean over them.
    """
    ops = busy_rows(trace)
    units = trace.loc[trace["pipe"] != "PIPE_ALL"].groupby("pipe", observed=True)[["core", "unit"]] \
        .apply(lambda d: len(d.drop_duplicates()))
    out = {}
    for pipe in _pipes_in(trace):
        rows = ops[ops["pipe"] == pipe]
        busy = int(rows["duration_cycles"].sum())
        span = total_cycles * int(units.get(pipe, 1))
        out[pipe] = {"busy_cycles": busy,
                     "utilization": round(busy / span, 4) if span else 0.0,
                     "instructions": int(len(rows))}
    return out


def unit_summary(trace: pd.DataFrame, total_cycles: int) -> list[dict]:
    """Per (core, unit): busy cycles, utilisation and instructions of each pipe, and each
    opcode's busy cycles and share of the total time (``ratio`` = busy / total)."""
    busy = busy_rows(trace)
    per_pipe = busy.groupby(["core", "unit", "pipe"], sort=False, observed=True)["duration_cycles"] \
        .agg(["sum", "count"])
    per_op = busy[busy["kind"] == "op"].groupby(["core", "unit", "opcode"], observed=True)[
        "duration_cycles"].sum()
    out = []
    for core, unit in sorted({(int(c), str(u)) for c, u, _ in lanes(trace)}):
        pipes = {}
        for pipe in _pipes_in(trace):
            if (core, unit, pipe) in per_pipe.index:
                b, n = per_pipe.loc[(core, unit, pipe)]
                pipes[pipe] = {"busy_cycles": int(b), "instructions": int(n),
                               "utilization": round(b / total_cycles, 4) if total_cycles else 0.0}
        ops = {}
        if (core, unit) in per_op.index.droplevel(2):
            for op, b in per_op.loc[(core, unit)].sort_values(ascending=False,
                                                             kind="stable").items():
                ops[str(op)] = {"busy_cycles": int(b),
                                "ratio": round(b / total_cycles, 4) if total_cycles else 0.0}
        out.append({"core": core, "unit": unit, "pipes": pipes, "opcodes": ops})
    return out


def opcode_share(trace: pd.DataFrame, total_cycles: int) -> dict:
    """Opcode -> its busy cycles over all units, and ``ratio``: the mean over the units
    that run it of busy / total (the per-engine busy ratio, e.g. TMATMUL on the cubes)."""
    ops = trace[trace["kind"] == "op"]
    g = ops.groupby("opcode", sort=False, observed=True)
    busy = g["duration_cycles"].sum()
    n_units = g[["core", "unit"]].apply(lambda d: len(d.drop_duplicates()))
    out = {}
    for op in busy.sort_values(ascending=False, kind="stable").index:
        span = total_cycles * int(n_units[op])
        out[str(op)] = {"busy_cycles": int(busy[op]), "units": int(n_units[op]),
                        "ratio": round(busy[op] / span, 4) if span else 0.0}
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
    units = unit_summary(trace, total)
    if len(units) > 1:
        lines += ["", "per core and unit: pipe utilisation | opcode share of the total time"]
        for u in units:
            pipes = "  ".join(f"{p.removeprefix('PIPE_')} {v['utilization']:.1%}"
                              for p, v in u["pipes"].items())
            ops_ = "  ".join(f"{o} {v['ratio']:.1%}" for o, v in list(u["opcodes"].items())[:4])
            lines.append(f"core {u['core']:<3} {u['unit']:<5} {pipes}" + (f" | {ops_}" if ops_ else ""))
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
