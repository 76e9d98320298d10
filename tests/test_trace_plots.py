"""Plots return matplotlib Figures with the right lanes and bars, and save as PNG.

Bars are found by the ``gid`` each plotting function gives its artists
(``"<lane>|<class>"`` for Gantt bars, the stall column for stall bars ...).
"""

from __future__ import annotations

import pandas as pd
import pytest
from matplotlib.figure import Figure
from trace_kernels import PERFSIM_TRACE, add2, barriers, op_rows

import sim
from sim.trace import compare_runs, gantt, stall_breakdown, stall_plot, utilization_plot
from sim.trace.frame import normalize

LANES = ["PIPE_MTE2", "PIPE_V", "PIPE_MTE3"]


@pytest.fixture(scope="module")
def add_run():
    return sim.simulate(add2(), "a2a3")


def _labels(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


def _bars(ax, gid):
    """(start, width) of every bar of the collections with this gid."""
    out = []
    for c in ax.collections:
        if c.get_gid() == gid:
            for path in c.get_paths():
                xs = path.vertices[:, 0]
                out.append((round(xs.min()), round(xs.max() - xs.min())))
    return sorted(out)


def test_gantt_has_a_lane_per_pipe_and_a_bar_per_instruction(add_run):
    fig = gantt(add_run.trace)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert _labels(ax) == LANES
    ops = op_rows(add_run.trace)
    spans = {
        o: [(r.start_cycle, r.duration_cycles) for r in ops[ops["opcode"] == o].itertuples()]
        for o in ("TLOAD", "TADD", "TSTORE")
    }
    assert _bars(ax, "PIPE_MTE2|load") == spans["TLOAD"]
    assert _bars(ax, "PIPE_V|vector") == spans["TADD"]
    assert _bars(ax, "PIPE_MTE3|store") == spans["TSTORE"]
    assert len(_bars(ax, "PIPE_V|wait_flag")) == 2 and len(_bars(ax, "PIPE_MTE3|wait_flag")) == 1
    assert str(add_run.total_cycles) in ax.get_title()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["load", "store", "vector", "wait_flag"]


def test_gantt_arrows_and_critical_path_overlay(add_run):
    ax = gantt(add_run.trace, arrows=True, critical_path=True).axes[0]
    arrows = [a for a in ax.texts if a.get_gid() == "flag_arrow"]
    assert len(arrows) == 3
    ops = op_rows(add_run.trace)  # TLOAD, TLOAD, TADD, TSTORE: all outlined
    assert _bars(ax, "critical_path") == sorted(
        zip(ops["start_cycle"], ops["duration_cycles"], strict=True)
    )
    steps = [c for c in ax.collections if c.get_gid() == "critical_path_step"]
    assert len(steps) == 1 and len(steps[0].get_segments()) == 2  # MTE2 -> V, V -> MTE3
    assert "critical path" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_gantt_accepts_a_precomputed_path(add_run):
    path = sim.trace.critical_path(add_run.trace).iloc[-1:]
    ax = gantt(add_run.trace, critical_path=path).axes[0]
    assert len(_bars(ax, "critical_path")) == 1


def test_gantt_shades_dispatch_held_by_pipe_all_barriers():
    r = sim.simulate(barriers(), "a2a3")
    ax = gantt(r.trace).axes[0]
    held = r.trace[(r.trace["pipe"] == "PIPE_ALL") & (r.trace["duration_cycles"] > 0)]
    assert _bars(ax, "core 0 AIV0|barrier") == [
        (s, d) for s, d in zip(held["start_cycle"], held["duration_cycles"], strict=True)
    ]
    assert _labels(ax) == LANES  # PIPE_ALL is not a lane


def test_gantt_labels_units_and_cores_when_there_are_several():
    rows = [
        dict(id=0, core=c, unit=u, pipe=p, kind="op", opcode="TLOAD", start_cycle=0, end_cycle=5)
        for c in (0, 1)
        for u, p in (("AIC", "PIPE_MTE2"), ("AIV0", "PIPE_V"))
    ]
    ax = gantt(normalize(pd.DataFrame(rows))).axes[0]
    assert _labels(ax) == [
        "core 0 AIC PIPE_MTE2",
        "core 0 AIV0 PIPE_V",
        "core 1 AIC PIPE_MTE2",
        "core 1 AIV0 PIPE_V",
    ]


def test_perfsim_gantt_colours_cube_side_classes():
    t = sim.trace.read_trace(PERFSIM_TRACE)
    ax = gantt(t).axes[0]
    assert _labels(ax) == ["PIPE_S", "PIPE_MTE2", "PIPE_MTE1", "PIPE_M", "PIPE_FIX"]
    assert len(_bars(ax, "PIPE_S|scalar")) == 9
    assert _bars(ax, "PIPE_M|cube") == [(892, 518)]
    assert _bars(ax, "PIPE_FIX|store") == [(1410, 1614)]


def test_utilization_plot_has_a_panel_per_lane(add_run):
    fig = utilization_plot(add_run.trace, bins=20)
    assert isinstance(fig, Figure)
    assert [ax.get_ylabel() for ax in fig.axes] == LANES
    assert all(
        any(c.get_gid() == f"util|AIV0 {p}" for c in ax.collections)
        for ax, p in zip(fig.axes, LANES, strict=True)
    )


def test_stall_plot_bars_are_the_breakdown(add_run):
    fig = stall_plot(add_run.trace)
    ax = fig.axes[0]
    assert _labels(ax) == LANES
    stalls = stall_breakdown(add_run.trace)
    for column in ("busy_cycles", "event_wait_cycles", "barrier_wait_cycles", "idle_cycles"):
        widths = [p.get_width() for p in ax.patches if p.get_gid() == column]
        assert widths == stalls[column].tolist(), column


def test_compare_runs_draws_both_gantts_and_busy_bars(add_run):
    ideal = sim.simulate(add2(), "a2a3", ideal_sync=True)
    fig = compare_runs(add_run.trace, ideal.trace, ("as-is", "ideal"))
    gantt_a, gantt_b, bars = fig.axes
    assert _labels(gantt_a) == _labels(gantt_b) == LANES
    assert str(add_run.total_cycles) in gantt_a.get_title()
    assert str(ideal.total_cycles) in gantt_b.get_title()
    assert [t.get_text() for t in bars.get_xticklabels()] == LANES
    heights = [p.get_height() for p in bars.patches if p.get_gid() == "busy|as-is"]
    assert heights == [add_run.pipes[p]["busy_cycles"] for p in LANES]


def test_figures_save_as_png_and_stay_out_of_pyplot(add_run, tmp_path):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    for name, fig in (
        ("gantt", gantt(add_run.trace, arrows=True, critical_path=True)),
        ("util", utilization_plot(add_run.trace)),
        ("stalls", stall_plot(add_run.trace)),
        ("compare", compare_runs(add_run.trace, add_run.trace)),
    ):
        path = tmp_path / f"{name}.png"
        fig.savefig(path, dpi=60)
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000, name
    assert plt.get_fignums() == before
