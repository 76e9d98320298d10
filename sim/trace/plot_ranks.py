"""Every rank's timeline, communication against compute (matplotlib; returns the Figure).

Reads the trace of a run with ranks (``RanksResult.trace``: the trace schema with ``rank``
and ``launch`` columns first). One lane per rank and launched kernel; an instruction is a bar
coloured by what it does: **communication** (the ``pto.comm`` instructions: UB-staged copies,
signals, collectives, SDMA posts and waits) or **compute** (every other instruction).
A ``TWAIT`` is hatched: the time the unit sat waiting on a signal. Where a compute bar and a
communication bar of one rank overlap in time, the communication is hidden behind compute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure
from matplotlib.patches import Patch

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = ["ranks_timeline", "COMM_OPCODES"]

# the opcodes the trace gives communication instructions (sim.engine.comm)
COMM_OPCODES = frozenset(
    {
        "TPUT",
        "TGET",
        "TNOTIFY",
        "TWAIT",
        "TTEST",
        "TBROADCAST",
        "TSCATTER",
        "TGATHER",
        "TREDUCE",
        "TPUT_ASYNC",
        "TGET_ASYNC",
        "WAIT_ASYNC",
        "TEST_ASYNC",
    }
)
_COLOURS = {"communication": "#C44E52", "compute": "#4C72B0"}


def ranks_timeline(trace: pd.DataFrame, *, title: str = "", ax: Axes | None = None) -> Figure:
    """The timeline of every rank and launched kernel of ``trace`` (``RanksResult.trace``)."""
    if "rank" not in trace.columns:
        from sim.base.errors import UserError

        raise UserError(
            "ranks_timeline: expected the trace of a run with ranks (RanksResult.trace, "
            "with a rank column); sim.trace.gantt draws one chip's"
        )
    launch = trace["launch"] if "launch" in trace.columns else 0
    rows = trace[trace["kind"].astype(str).isin(("op", "scalar", "wait_flag"))].assign(
        launch=launch
    )
    ops = rows[(rows["kind"].astype(str) != "wait_flag") | (rows["opcode"].astype(str) == "TWAIT")]
    lanes = sorted({(int(r), int(s)) for r, s in zip(ops["rank"], ops["launch"], strict=True)})
    where = {lane: i for i, lane in enumerate(lanes)}
    if ax is None:
        fig = Figure(figsize=(10, 0.5 + 0.45 * max(1, len(lanes))))
        ax = fig.add_subplot()
    else:
        fig = ax.figure  # type: ignore[assignment]
    # one call per lane and kind of bar (a run with ranks has 10^5 rows and more: a call
    # per bar would take minutes)
    opcode = ops["opcode"].astype(str)
    spans = ops.assign(
        what=["communication" if op in COMM_OPCODES else "compute" for op in opcode],
        waiting=(opcode == "TWAIT").to_numpy(),
    )
    spans = spans[spans["end_cycle"] > spans["start_cycle"]]
    keys = ["rank", "launch", "what", "waiting"]
    key: Any  # (rank, launch, what, waiting) of the group
    for key, group in spans.groupby(keys, sort=True):
        r, s, what, waiting = key
        start = group["start_cycle"].to_numpy()
        width = group["end_cycle"].to_numpy() - start
        ax.broken_barh(
            list(zip(start.tolist(), width.tolist(), strict=True)),
            (where[(int(r), int(s))] - 0.4, 0.8),
            facecolors=_COLOURS[what],
            hatch="//" if waiting else None,
            alpha=0.5 if waiting else 0.9,
            linewidth=0,
        )
    ax.set_yticks(range(len(lanes)))
    several = any(s for _, s in lanes)
    ax.set_yticklabels([f"rank {r}" + (f" / kernel {s}" if several else "") for r, s in lanes])
    ax.invert_yaxis()
    ax.set_xlabel("cycle")
    total = int(trace["end_cycle"].max()) if len(trace) else 0
    ax.set_title(title or f"{len(set(r for r, _ in lanes))} ranks, {total} cycles")
    ax.legend(
        handles=[Patch(color=c, label=k) for k, c in _COLOURS.items()]
        + [Patch(facecolor="white", hatch="//", edgecolor="grey", label="TWAIT")],
        loc="upper right",
        fontsize="small",
    )
    if ax.figure is fig and len(fig.axes) == 1:
        fig.subplots_adjust(left=0.14)
    return fig
