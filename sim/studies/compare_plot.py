"""Figures of a manual-vs-auto comparison: buffer occupancy maps and pipeline Gantts.

The occupancy map has time (cycles) on x and the byte address in the buffer on y; every
(tile, address) live interval of ``sim.placement.metrics.occupancy`` is a rectangle
labelled with the tile name; the target's reserved ranges are shaded grey and the FIFO
buffers of cube<->vector pipes (``reserve_buffer``, held for the whole kernel) blue. Below the maps,
each run's pipeline Gantt (``sim.trace.plot.gantt``). Both columns share the x scale so
the longer run shows as longer.
"""

from __future__ import annotations

__all__ = ["occupancy_map", "comparison_figure"]

_COLOURS = [
    "#4C72B0",
    "#DD8452",
    "#55A868",
    "#C44E52",
    "#8172B3",
    "#937860",
    "#DA8BC3",
    "#8C8C8C",
    "#CCB974",
    "#64B5CD",
]


def occupancy_map(occ, *, ax, buffer: str = "UB", target=None, title: str = "", xmax=None, held=()):
    """Draw the ``buffer`` rows of occupancy table ``occ`` on ``ax``; ``held``: (name,
    start, end) byte ranges held for the whole run (FIFO buffers)."""
    from matplotlib.patches import Rectangle

    rows = occ[occ["buffer"] == buffer]
    names = list(dict.fromkeys(rows["tile"]))
    colour = {n: _COLOURS[i % len(_COLOURS)] for i, n in enumerate(names)}
    top = 0
    for t, s, e, a, b in zip(
        rows["tile"],
        rows["start_cycle"],
        rows["end_cycle"],
        rows["start_byte"],
        rows["end_byte"],
        strict=True,
    ):
        w = max(int(e) - int(s), 1)
        ax.add_patch(
            Rectangle(
                (int(s), int(a) / 1024),
                w,
                (int(b) - int(a)) / 1024,
                facecolor=colour[t],
                edgecolor="black",
                linewidth=0.5,
                alpha=0.75,
            )
        )
        ax.text(
            int(s) + w / 2,
            (int(a) + int(b)) / 2048,
            f"%{t}",
            ha="center",
            va="center",
            fontsize=7,
            clip_on=True,
        )
        top = max(top, int(b))
    if target is not None and buffer in target.buffers:
        buf = target.buffers[buffer]
        for name, s, e in buf.reserved:
            if s < max(top, 1) * 1.5:
                ax.axhspan(s / 1024, e / 1024, color="#999999", alpha=0.25, lw=0)
                ax.text(0, s / 1024, f" {name}", fontsize=6, va="bottom", color="#555555")
                top = max(top, e)
    for name, s, e in held:
        ax.axhspan(s / 1024, e / 1024, color="#64B5CD", alpha=0.25, lw=0)
        ax.text(0, s / 1024, f" {name}", fontsize=6, va="bottom", color="#2A6F8A")
        top = max(top, e)
    xmax = xmax or (int(rows["end_cycle"].max()) if len(rows) else 1)
    ax.set_xlim(0, max(xmax, 1))
    ax.set_ylim(0, max(top, 1024) / 1024 * 1.05)
    ax.set_xlabel("cycle")
    ax.set_ylabel(f"{buffer} address (KiB)")
    ax.set_title(title or f"{buffer} occupancy", fontsize=9)
    return ax


def comparison_figure(c, *, title: str = ""):
    """A figure of ``Comparison`` ``c``: one occupancy row per buffer used, then Gantts."""
    import matplotlib.pyplot as plt

    from sim.trace.plot import gantt

    runs = (c.manual, c.auto)
    buffers = sorted(set(c.manual.occupancy["buffer"]) | set(c.auto.occupancy["buffer"])) or ["UB"]
    n = len(buffers) + 1
    fig, axes = plt.subplots(n, 2, figsize=(13, 3.2 * n), squeeze=False)
    xmax = max([r.total_cycles or 0 for r in runs] + [1])
    for col, run in enumerate(runs):
        label = (
            f"{run.mode}: {run.total_cycles:,} cycles"
            if run.total_cycles is not None
            else f"{run.mode}: deadlock"
        )
        for row, buf in enumerate(buffers):
            occupancy_map(
                run.occupancy,
                ax=axes[row][col],
                buffer=buf,
                target=c.target,
                title=f"{label} — {buf} occupancy",
                xmax=xmax,
                held=run.fifo.get(buf, ()),
            )
        ax = axes[n - 1][col]
        if run.result is not None:
            gantt(run.result.trace, ax=ax, title=f"{label} — pipelines")
            ax.set_xlim(0, xmax)
        else:
            ax.text(
                0.5,
                0.5,
                run.deadlock or "deadlock",
                ha="center",
                va="center",
                wrap=True,
                fontsize=7,
                transform=ax.transAxes,
            )
            ax.set_axis_off()
    fig.suptitle(title or f"{c.kernel} on {c.target.name}: manual vs auto placement and sync")
    fig.tight_layout()
    return fig
