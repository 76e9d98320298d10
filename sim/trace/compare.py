"""Comparing two runs: a table of per-pipe busy cycles and totals, and a figure.

The runs may come from different kernels, targets or simulators (e.g. a pto-sim trace
and an imported Perf-Sim trace), so pipes are matched by name, summed over cores and
units.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from sim.trace.frame import PIPE_ORDER, busy_rows, lanes, total_cycles
from sim.trace.plot import gantt

__all__ = ["compare_table", "compare_runs"]


def _busy_by_pipe(trace) -> pd.Series:
    return busy_rows(trace).groupby("pipe")["duration_cycles"].sum()


def compare_table(
    a: pd.DataFrame, b: pd.DataFrame, labels: tuple[str, str] = ("a", "b")
) -> pd.DataFrame:
    """Busy cycles per pipe and the total of two traces, with b - a and b / a.

    Index: the pipes of either trace, then ``total``. Columns: the two labels,
    ``delta`` (b - a) and ``ratio`` (b / a; NaN where a is 0).
    """
    la, lb = labels
    busy = pd.DataFrame({la: _busy_by_pipe(a), lb: _busy_by_pipe(b)}).fillna(0).astype("int64")
    order = sorted(busy.index, key=lambda p: (PIPE_ORDER.index(p) if p in PIPE_ORDER else 99, p))
    busy = busy.loc[order]
    busy.loc["total"] = [total_cycles(a), total_cycles(b)]
    busy["delta"] = busy[lb] - busy[la]
    busy["ratio"] = busy[lb] / busy[la].where(busy[la] != 0)
    busy.index.name = "pipe"
    return busy


def _merge_legends(ax_a, ax_b):
    """One legend under the second Gantt with the classes of both."""
    handles: dict = {}
    for ax in (ax_a, ax_b):
        legend = ax.get_legend()
        if legend is not None:
            for h, t in zip(legend.legend_handles, legend.get_texts(), strict=True):
                handles.setdefault(t.get_text(), h)
            legend.remove()
    if handles:
        ax_b.legend(
            handles=list(handles.values()),
            labels=list(handles),
            loc="upper center",
            bbox_to_anchor=(0.5, -0.22),
            ncol=min(len(handles), 6),
            fontsize=8,
            frameon=False,
        )


def compare_runs(
    a: pd.DataFrame, b: pd.DataFrame, labels: tuple[str, str] = ("a", "b"), *, title: str = ""
) -> Figure:
    """Two Gantts on a shared time axis and their per-pipe busy cycles; returns the Figure."""
    table = compare_table(a, b, labels)
    lanes_a, lanes_b = len(lanes(a)), len(lanes(b))
    fig = Figure(figsize=(11, 0.45 * (lanes_a + lanes_b) + 4.5))
    grid = fig.add_gridspec(3, 1, height_ratios=[lanes_a + 1, lanes_b + 1, 4])
    ax_a = fig.add_subplot(grid[0])
    ax_b = fig.add_subplot(grid[1], sharex=ax_a)
    gantt(a, ax=ax_a, title=f"{labels[0]} — {total_cycles(a)} cycles")
    gantt(b, ax=ax_b, title=f"{labels[1]} — {total_cycles(b)} cycles")
    ax_a.set_xlim(0, max(total_cycles(a), total_cycles(b), 1) * 1.01)
    _merge_legends(ax_a, ax_b)
    ax_c = fig.add_subplot(grid[2])
    pipes = table.drop(index="total")
    x = range(len(pipes))
    for off, label, colour in ((-0.2, labels[0], "#4C72B0"), (0.2, labels[1], "#DD8452")):
        bars = ax_c.bar([i + off for i in x], pipes[label], width=0.4, label=label, color=colour)
        for bar in bars:
            bar.set_gid(f"busy|{label}")
    ax_c.set_xticks(list(x))
    ax_c.set_xticklabels(pipes.index)
    ax_c.set_ylabel("busy cycles")
    ax_c.legend(fontsize=8)
    ax_c.grid(axis="y", alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
