"""The cycle report as text, from summaries already made (no DataFrame, no pandas).

``sim.trace.report`` summarises a trace DataFrame; a run's result summarises its
recording's arrays instead (``sim.engine.summary``), so a ``ptosim run`` that writes no
trace file never builds the frame. Both hand the same summaries, in the field names of
``sim.trace.schema``, to ``format_report``:

* ``pipes``: pipe -> busy cycles, utilisation, instructions (``pipe_summary``);
* ``units``: per (core, unit) pipes and opcodes (``units_from_totals``);
* ``ops``: per (opcode, pipe) instruction rows ``(opcode, pipe, count, total cycles,
  mean cycles)``, by total cycles (descending), ties in the order the opcodes first
  appear in the trace;
* ``rows``: the first instruction rows by id (ties in trace order), as mappings of the
  schema's columns, and ``instructions``, how many there are in all.
"""

from __future__ import annotations

__all__ = ["format_report", "units_from_totals", "opcode_share", "PIPE_RANK"]

_PIPE_ORDER = ["PIPE_S", "PIPE_MTE2", "PIPE_MTE1", "PIPE_V", "PIPE_M", "PIPE_FIX", "PIPE_MTE3"]


def PIPE_RANK(pipe: str):
    """Sort key of a pipe: the order data flows through a core, unknown pipes last."""
    return (_PIPE_ORDER.index(pipe) if pipe in _PIPE_ORDER else 99, pipe)


def _ratio(part, whole) -> float:
    return round(float(part) / whole, 4) if whole else 0.0


def units_from_totals(totals, total_cycles: int) -> list[dict]:
    """``unit_summary`` from per-unit totals ``[(core, unit, {pipe: (busy, instructions)},
    {opcode: busy})]``."""
    out = []
    for core, unit, pipes, ops in sorted(totals, key=lambda t: (t[0], t[1])):
        out.append(
            {
                "core": int(core),
                "unit": str(unit),
                "pipes": {
                    p: {
                        "busy_cycles": int(b),
                        "instructions": int(n),
                        "utilization": _ratio(b, total_cycles),
                    }
                    for p, (b, n) in sorted(pipes.items(), key=lambda kv: PIPE_RANK(kv[0]))
                },
                "opcodes": {
                    o: {"busy_cycles": int(b), "ratio": _ratio(b, total_cycles)}
                    for o, b in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))
                },
            }
        )
    return out


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
    return {
        op: {"busy_cycles": b, "units": n, "ratio": _ratio(b, total_cycles * n)}
        for op, (b, n) in sorted(busy.items(), key=lambda kv: (-kv[1][0], kv[0]))
    }


def format_report(
    *,
    kernel: str,
    target: str,
    clock_hz: float,
    total: int,
    pipes: dict,
    units: list,
    ops: list,
    rows: list,
    instructions: int,
    max_rows: int = 40,
) -> str:
    """The cycle report from the summaries of the module doc."""
    lines = [
        f"pto-sim: kernel {kernel} on {target}",
        f"total cycles: {total}  ({total / clock_hz * 1e6:.3f} us at {clock_hz / 1e9:g} GHz)",
        "",
        f"{'pipe':<10} {'busy':>9} {'util':>7} {'instrs':>7}",
    ]
    for pipe, s in pipes.items():
        lines.append(
            f"{pipe:<10} {s['busy_cycles']:>9} {s['utilization']:>7.1%} {s['instructions']:>7}"
        )
    if len(units) > 1:
        lines.append(f"(busy and instrs summed over the {len(units)} units; util is their mean)")
        lines += ["", "per core and unit: pipe utilisation | opcode share of the total time"]
        for u in units:
            pipe_text = "  ".join(
                f"{p.removeprefix('PIPE_')} {v['utilization']:.1%}" for p, v in u["pipes"].items()
            )
            ops_ = "  ".join(f"{o} {v['ratio']:.1%}" for o, v in list(u["opcodes"].items())[:4])
            lines.append(
                f"core {u['core']:<3} {u['unit']:<5} {pipe_text}" + (f" | {ops_}" if ops_ else "")
            )
    if ops:
        lines += ["", f"{'opcode':<14} {'pipe':<10} {'count':>6} {'cycles':>9} {'mean':>8}"]
        for opcode, pipe, count, cycles, mean in ops:
            lines.append(f"{opcode:<14} {pipe:<10} {count:>6} {cycles:>9} {mean:>8.1f}")
    if instructions:
        # on a chip every unit runs the same statements: say which unit a row is from
        where = len(units) > 1
        head = f"{'unit':<9} " if where else ""
        lines += [
            "",
            head
            + (
                f"{'id':>5} {'opcode':<12} {'pipe':<10} {'start':>8} {'end':>8} "
                f"{'cycles':>7}  operands"
            ),
        ]
        for r in rows[:max_rows]:
            cell = f"c{r['core']}.{r['unit']}"
            unit = f"{cell:<9} " if where else ""
            lines.append(
                f"{unit}{r['id']:>5} {r['opcode']:<12} {r['pipe']:<10} {r['start_cycle']:>8} "
                f"{r['end_cycle']:>8} {r['duration_cycles']:>7}  {r['operands']}"
            )
        if instructions > max_rows:
            lines.append(
                f"  ... {instructions - max_rows} more instructions "
                "(write the full trace with --trace)"
            )
    return "\n".join(lines)
