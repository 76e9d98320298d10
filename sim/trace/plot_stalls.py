"""Plots of how busy the pipes are: utilisation over time and the stall breakdown.

Both read only the trace schema and return a ``matplotlib.figure.Figure``:

* ``utilization_plot``: one small panel per lane, the fraction of each time bin the lane
  spent executing instructions;
* ``stall_plot``: one horizontal bar per lane, split into busy, waiting on an event,
  waiting on a barrier and idle cycles (``sim.trace.stalls.stall_breakdown``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matplotlib.figure import Figure

from sim.trace.frame import lane_label, lanes, total_cycles
from sim.trace.plot import new_axes
from sim.trace.stalls import stall_breakdown, utilization

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes


__all__ = ["utilization_plot", "stall_plot", "STALL_COLOURS"]

STALL_COLOURS = {
    "busy_cycles": ("#4C72B0", "busy"),
    "event_wait_cycles": ("#DD8452", "waiting on an event"),
    "barrier_wait_cycles": ("#8172B3", "waiting on a barrier"),
    "idle_cycles": ("#DDDDDD", "idle"),
}


def utilization_plot(trace: pd.DataFrame, *, bins: int = 50, title: str = "") -> Figure:
    """Busy fraction of every lane over time, one panel per lane; returns the Figure."""
    util = utilization(trace, bins=bins)
    all_lanes = lanes(trace)
    n = max(len(all_lanes), 1)
    fig = Figure(figsize=(11, 0.9 * n + 1.2))
    axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
    total = total_cycles(trace)
    width = total / bins if bins else 0
    # a trace without lanes still draws its one (empty) panel
    for ax, lane, column in zip(axes, all_lanes, util.columns, strict=False):
        ax.fill_between(
            util.index + width / 2,
            util[column].to_numpy(),
            step="mid",
            color="#4C72B0",
            alpha=0.7,
            gid=f"util|{column}",
        )
        ax.set_ylim(0, 1.05)
        ax.set_yticks([0, 1])
        ax.set_ylabel(lane_label(lane, all_lanes), rotation=0, ha="right", va="center", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    axes[-1].set_xlim(0, max(total, 1))
    axes[-1].set_xlabel("cycle")
    axes[0].set_title(title or f"pipe utilisation over time — {total} cycles, {bins} bins")
    fig.tight_layout()
    return fig


def stall_plot(trace: pd.DataFrame, *, title: str = "", ax: Axes | None = None) -> Figure:
    """Stacked bar per lane: busy / event wait / barrier wait / idle; returns the Figure."""
    stalls = stall_breakdown(trace)
    all_lanes = lanes(trace)
    fig, ax = new_axes(ax, 9, 0.5 * len(all_lanes) + 1.8)
    labels = [lane_label(lane, all_lanes) for lane in all_lanes]
    left = [0] * len(stalls)
    for column, (colour, name) in STALL_COLOURS.items():
        values = stalls[column].tolist()
        bars = ax.barh(labels, values, left=left, color=colour, label=name, height=0.6)
        for bar in bars:
            bar.set_gid(column)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("cycles")
    ax.set_title(title or f"where the cycles go — {total_cycles(trace)} cycles per pipe")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=4, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
