"""Pipeline-occupancy Gantt (matplotlib; returns the Figure, which Jupyter shows inline).

Reads only the trace schema. There is one lane per pipe of each unit of each core.
Instructions are solid bars coloured by class (load, store, vector, composite, cube,
scalar, move); time a pipe spends blocked in ``wait_flag`` is a hatched bar; time the
scalar unit holds dispatch in a ``pipe_barrier(PIPE_ALL)`` is shaded grey behind the
unit's lanes. Optionally, arrows join each flag's producer to the instruction it
released, and the critical path is outlined in red. The title carries the total.

Figures are ``matplotlib.figure.Figure`` objects not registered with pyplot, so loops
that draw many of them do not accumulate open figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.transforms import offset_copy

from sim.trace.critical import critical_path as find_critical_path
from sim.trace.flags import edge_positions
from sim.trace.frame import BUSY_KINDS, lane_label, lanes, total_cycles

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes


__all__ = ["gantt", "instruction_class", "CLASS_COLOURS"]

CLASS_COLOURS = {
    "load": "#4C72B0",
    "store": "#55A868",
    "vector": "#DD8452",
    "composite": "#C44E52",
    "cube": "#8172B3",
    "scalar": "#937860",
    "move": "#64B5CD",
}
_COMPOSITE = {
    "TREM",
    "TFMOD",
    "TREMS",
    "TFMODS",
    "TDIVS",
    "TRECIP",
    "TROWSUM",
    "TROWMAX",
    "TROWMIN",
    "TCOLSUM",
    "TCOLMAX",
    "TCOLMIN",
    "TSEL",
    "TXOR",
    "TPRELU",
}
_PATH_COLOUR = "#D62728"


def instruction_class(opcode: str, pipe: str) -> str:
    """Colour class of an instruction: load, store, cube, scalar, move, composite, vector."""
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


def new_axes(ax, width: float, height: float):
    """(figure, axes): ``ax``'s own, or a fresh figure of the given size."""
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=(width, height))
    return fig, fig.add_subplot(1, 1, 1)


def _bars(ax, rows, y, gid, **style):
    if len(rows):
        c = ax.broken_barh(
            list(zip(rows["start_cycle"], rows["duration_cycles"].clip(lower=1), strict=True)),
            (y - 0.35, 0.7),
            **style,
        )
        c.set_gid(gid)


def _draw_lane(ax, trace, lane, y, label, show_waits):
    core, unit, pipe = lane
    rows = trace[(trace["core"] == core) & (trace["unit"] == unit) & (trace["pipe"] == pipe)]
    ops = rows[rows["kind"].isin(BUSY_KINDS)]
    classes = [instruction_class(o, pipe) for o in ops["opcode"]]
    for cls, colour in CLASS_COLOURS.items():
        _bars(
            ax,
            ops[[c == cls for c in classes]],
            y,
            f"{label}|{cls}",
            facecolors=colour,
            edgecolor="white",
            linewidth=0.3,
        )
    if show_waits:
        waits = rows[(rows["kind"] == "wait_flag") & (rows["duration_cycles"] > 0)]
        if len(waits):
            c = ax.broken_barh(
                list(zip(waits["start_cycle"], waits["duration_cycles"], strict=True)),
                (y - 0.2, 0.4),
                facecolors="none",
                edgecolor="#999999",
                hatch="///",
                linewidth=0.5,
            )
            c.set_gid(f"{label}|wait_flag")
    return set(classes)


def _draw_barriers(ax, trace, all_lanes, ys):
    held = trace[
        (trace["pipe"] == "PIPE_ALL")
        & (trace["kind"] == "barrier")
        & (trace["duration_cycles"] > 0)
    ]
    for (core, unit), spans in held.groupby(["core", "unit"]):
        unit_ys = [ys[lane] for lane in all_lanes if lane[:2] == (core, unit)]
        c = ax.broken_barh(
            list(zip(spans["start_cycle"], spans["duration_cycles"], strict=True)),
            (min(unit_ys) - 0.5, max(unit_ys) - min(unit_ys) + 1),
            facecolors="#DDDDDD",
            edgecolor="none",
            zorder=0,
        )
        c.set_gid(f"core {core} {unit}|barrier")
    return len(held) > 0


def _draw_arrows(ax, trace, ys, max_arrows):
    t = trace.reset_index(drop=True)
    key = list(zip(t["core"], t["unit"], t["pipe"], strict=True))
    for _flag, prod, cons, _ready in edge_positions(t)[:max_arrows]:
        if key[prod] not in ys or key[cons] not in ys:
            continue
        ax.annotate(
            "",
            xy=(t.at[cons, "start_cycle"], ys[key[cons]]),
            xytext=(t.at[prod, "end_cycle"], ys[key[prod]]),
            arrowprops={"arrowstyle": "->", "color": "#333333", "alpha": 0.6, "linewidth": 0.6},
            gid="flag_arrow",
        )


def _draw_path(ax, path, ys):
    steps = path[path["kind"].isin(BUSY_KINDS)]
    keys = list(zip(steps["core"], steps["unit"], steps["pipe"], strict=True))
    starts, ends = steps["start_cycle"].tolist(), steps["end_cycle"].tolist()
    by_lane: dict = {}
    for k, s, e in zip(keys, starts, ends, strict=True):
        by_lane.setdefault(k, []).append((s, max(e - s, 1)))
    for k, spans in by_lane.items():
        c = ax.broken_barh(
            spans,
            (ys[k] - 0.42, 0.84),
            facecolors="none",
            edgecolor=_PATH_COLOUR,
            linewidth=1.6,
            zorder=3,
        )
        c.set_gid("critical_path")
    # hand-overs between lanes: from the end of one step to the start of the next
    hops = [
        [(ends[i - 1], ys[keys[i - 1]]), (starts[i], ys[keys[i]])]
        for i in range(1, len(keys))
        if keys[i] != keys[i - 1]
    ]
    if hops:
        ax.add_collection(
            LineCollection(
                hops, colors=_PATH_COLOUR, linewidths=1.2, zorder=3, gid="critical_path_step"
            ),
            autolim=False,
        )


def gantt(
    trace: pd.DataFrame,
    *,
    title: str = "",
    ax: Axes | None = None,
    show_waits: bool = True,
    arrows: bool = False,
    critical_path: bool | pd.DataFrame = False,
    max_arrows: int = 400,
) -> Figure:
    """Pipeline Gantt of a trace; returns the matplotlib Figure.

    ``arrows=True`` draws one arrow per matched set -> wait pair (at most
    ``max_arrows``). ``critical_path=True`` outlines the critical path (or pass the
    DataFrame ``sim.trace.critical_path`` returned).
    """
    all_lanes = lanes(trace)
    fig, ax = new_axes(ax, 11, 0.55 * len(all_lanes) + 1.8)
    ys = {lane: y for y, lane in enumerate(all_lanes)}
    labels = [lane_label(lane, all_lanes) for lane in all_lanes]
    total = total_cycles(trace)
    barriers = _draw_barriers(ax, trace, all_lanes, ys)
    classes = set()
    for lane, label in zip(all_lanes, labels, strict=True):
        classes |= _draw_lane(ax, trace, lane, ys[lane], label, show_waits)
    if arrows:
        _draw_arrows(ax, trace, ys, max_arrows)
    if critical_path is not False and critical_path is not None:
        if critical_path is True:
            critical_path = find_critical_path(trace)
        _draw_path(ax, critical_path, ys)
    ax.set_yticks(range(len(all_lanes)))
    ax.set_yticklabels(labels)
    ax.set_ylim(len(all_lanes) - 0.5, -0.5)
    ax.set_xlim(0, max(total, 1) * 1.01)
    ax.set_xlabel("cycle")
    ax.set_title(title or f"pipeline occupancy — {total} cycles")
    handles = [Patch(color=c, label=k) for k, c in CLASS_COLOURS.items() if k in classes]
    if show_waits and (trace["kind"] == "wait_flag").any():
        handles.append(Patch(facecolor="none", edgecolor="#999999", hatch="///", label="wait_flag"))
    if barriers:
        handles.append(Patch(color="#DDDDDD", label="barrier (dispatch held)"))
    if critical_path is not False and critical_path is not None:
        handles.append(Patch(facecolor="none", edgecolor=_PATH_COLOUR, label="critical path"))
    if handles:
        # a fixed distance below the axis label, whatever the number of lanes (a fraction of
        # the axes' height left a wide gap under tall chip Gantts)
        below = offset_copy(ax.transAxes, fig=fig, y=-34, units="points")
        ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, 0),
            bbox_transform=below,
            ncol=min(len(handles), 5),
            fontsize=8,
            frameon=False,
        )
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
