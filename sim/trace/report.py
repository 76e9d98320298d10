"""Text, dictionary and table summaries of a trace (reads only the trace schema)."""

from __future__ import annotations

import pandas as pd

from sim.trace.frame import busy_rows, lanes
from sim.trace.frame import total_cycles as _total

__all__ = ["pipe_summary", "pipe_table", "op_summary", "unit_summary", "opcode_share",
           "units_from_totals", "text_report"]

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
    # pipes with work or scalar rows: a pipe seen only in sync rows (a FIFO wait on PIPE_S)
    # is listed by no trace mode, so "ops" and "none" runs report the same pipes
    for pipe in _pipes_in(trace[~trace["kind"].isin(("set_flag", "wait_flag", "barrier"))]):
        rows = ops[ops["pipe"] == pipe]
        busy = int(rows["duration_cycles"].sum())
        span = total_cycles * int(units.get(pipe, 1))
        out[pipe] = {"busy_cycles": busy,
                     "utilization": round(busy / span, 4) if span else 0.0,
                     "instructions": int(len(rows))}
    return out


def units_from_totals(totals, total_cycles: int) -> list[dict]:
    """``unit_summary`` from per-unit totals ``[(core, unit, {pipe: (busy, instructions)},
    {opcode: busy})]`` (a run that kept no trace rows)."""
    out = []
    for core, unit, pipes, ops in sorted(totals, key=lambda t: (t[0], t[1])):
        out.append({"core": int(core), "unit": str(unit),
                    "pipes": {p: {"busy_cycles": int(b), "instructions": int(n),
                                  "utilization": _ratio(b, total_cycles)}
                              for p, (b, n) in sorted(pipes.items(),
                                                      key=lambda kv: _pipe_rank(kv[0]))},
                    "opcodes": {o: {"busy_cycles": int(b), "ratio": _ratio(b, total_cycles)}
                                for o, b in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))}})
    return out


def unit_summary(trace: pd.DataFrame, total_cycles: int) -> list[dict]:
    """Per (core, unit): busy cycles, utilisation and instructions of each pipe, and each
    opcode's busy cycles and share of the total time (``ratio`` = busy / total)."""
    busy = busy_rows(trace)
    per_pipe = busy.groupby(["core", "unit", "pipe"], observed=True)["duration_cycles"] \
        .agg(["sum", "count"])
    per_op = busy[busy["kind"] == "op"].groupby(["core", "unit", "opcode"], observed=True)[
        "duration_cycles"].sum()
    totals = {(int(c), str(u)): ({}, {}) for c, u, _ in lanes(trace)}
    for (c, u, p), (b, n) in per_pipe.iterrows():
        totals[(int(c), str(u))][0][str(p)] = (b, n)
    for (c, u, o), b in per_op.items():
        totals[(int(c), str(u))][1][str(o)] = b
    return units_from_totals([(c, u, p, o) for (c, u), (p, o) in totals.items()], total_cycles)


def opcode_share(units: list[dict], total_cycles: int) -> dict:
    """Opcode -> its busy cycles over all units, and ``ratio``: the mean over the units
    that run it of busy / total (the per-engine busy ratio, e.g. TMATMUL on the cubes);
    from ``unit_summary``."""
    busy: dict[str, list[int]] = {}
    for u in units:
        for op, v in u["opcodes"].items():
            b = busy.setdefault(op, [0, 0])
            b[0] += v["busy_cycles"]
            b[1] += 1
    return {op: {"busy_cycles": b, "units": n, "ratio": _ratio(b, total_cycles * n)}
            for op, (b, n) in sorted(busy.items(), key=lambda kv: (-kv[1][0], kv[0]))}


def _ratio(part, whole) -> float:
    return round(float(part) / whole, 4) if whole else 0.0


def _pipe_rank(pipe: str):
    return (_PIPE_ORDER.index(pipe) if pipe in _PIPE_ORDER else 99, pipe)


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
        lines.append(f"(busy and instrs summed over the {len(units)} units; util is their mean)")
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
        # on a chip every unit runs the same statements: say which unit a row is from
        where = len(units) > 1
        head = f"{'unit':<9} " if where else ""
        lines += ["", head + f"{'id':>5} {'opcode':<12} {'pipe':<10} {'start':>8} {'end':>8} {'cycles':>7}  operands"]
        for r in insts.head(max_rows).itertuples():
            unit = f"{f'c{r.core}.{r.unit}':<9} " if where else ""
            lines.append(f"{unit}{r.id:>5} {r.opcode:<12} {r.pipe:<10} {r.start_cycle:>8} {r.end_cycle:>8} "
                         f"{r.duration_cycles:>7}  {r.operands}")
        if len(insts) > max_rows:
            lines.append(f"  ... {len(insts) - max_rows} more instructions (write the full trace with --trace)")
    return "\n".join(lines)
