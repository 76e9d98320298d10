"""Pipeline-occupancy plots (matplotlib; functions return the Figure for Jupyter).

Reads only the trace schema. The Gantt has one lane per (unit, pipe); instructions are
solid bars coloured by class, time a pipe spends blocked in ``wait_flag`` is a hatched
bar, and the title carries the total cycle count.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from sim.trace.report import _pipes_in

__all__ = ["gantt"]

_CLASS_COLOURS = {
    "load": "#4C72B0", "store": "#55A868", "vector": "#DD8452", "composite": "#C44E52",
    "cube": "#8172B3", "scalar": "#937860", "move": "#64B5CD",
}
_COMPOSITE = {"TREM", "TFMOD", "TREMS", "TFMODS", "TDIVS", "TRECIP", "TROWSUM", "TROWMAX",
              "TROWMIN", "TCOLSUM", "TCOLMAX", "TCOLMIN", "TSEL", "TXOR", "TPRELU"}


def _class(opcode: str, pipe: str) -> str:
    if opcode == "TLOAD":
        return "load"
    if opcode == "TSTORE":
        return "store"
    if pipe == "PIPE_M":
        return "cube"
    if pipe == "PIPE_S":
        return "scalar"
    if opcode in ("TMOV", "TEXTRACT"):
        return "move"
    return "composite" if opcode in _COMPOSITE else "vector"


def gantt(trace, *, title: str = "", ax=None, show_waits: bool = True):
    """Pipeline Gantt of a trace; returns the matplotlib Figure."""
    lanes = [(u, p) for u in sorted(trace["unit"].unique()) for p in _pipes_in(trace[trace["unit"] == u])]
    fig = ax.figure if ax is not None else plt.figure(figsize=(11, 0.55 * len(lanes) + 1.6))
    ax = ax or fig.add_subplot(1, 1, 1)
    total = int(trace["end_cycle"].max()) if len(trace) else 0
    for y, (unit, pipe) in enumerate(lanes):
        rows = trace[(trace["unit"] == unit) & (trace["pipe"] == pipe)]
        ops = rows[rows["kind"].isin(["op", "scalar"])]
        for cls in _CLASS_COLOURS:
            sel = ops[[_class(o, pipe) == cls for o in ops["opcode"]]]
            if len(sel):
                ax.broken_barh(list(zip(sel["start_cycle"], sel["duration_cycles"].clip(lower=1))),
                               (y - 0.35, 0.7), facecolors=_CLASS_COLOURS[cls], edgecolor="white",
                               linewidth=0.3)
        if show_waits:
            waits = rows[(rows["kind"] == "wait_flag") & (rows["duration_cycles"] > 0)]
            if len(waits):
                ax.broken_barh(list(zip(waits["start_cycle"], waits["duration_cycles"])),
                               (y - 0.2, 0.4), facecolors="none", edgecolor="#999999",
                               hatch="///", linewidth=0.5)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([f"{u} {p}" if len({u for u, _ in lanes}) > 1 else p for u, p in lanes])
    ax.invert_yaxis()
    ax.set_xlim(0, max(total, 1) * 1.01)
    ax.set_xlabel("cycle")
    ax.set_title(title or f"pipeline occupancy — {total} cycles")
    handles = [Patch(color=c, label=k) for k, c in _CLASS_COLOURS.items()
               if any(_class(o, p) == k for o, p in zip(trace["opcode"], trace["pipe"]))]
    if show_waits:
        handles.append(Patch(facecolor="none", edgecolor="#999999", hatch="///", label="wait_flag"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=len(handles),
              fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
