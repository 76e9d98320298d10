"""Analyses of a trace: flag pairs, critical path, stall breakdown, utilisation, summaries.

Expected values are worked out by hand from the kernels of ``trace_kernels`` (their
docstring gives the timelines): with L1, L2 the two load durations, A the add and S the
store of ``add2``, the add waits for both loads and the store for the add, so the total
is L1 + L2 + A + S and the critical path is load, load, add, store.
"""

from __future__ import annotations

import pandas as pd
import pytest
from trace_kernels import PERFSIM_TRACE, add2, barriers, op_rows, scalar_wait

import sim
from sim.trace import critical_path, flag_edges, pipe_table, stall_breakdown, utilization
from sim.trace.frame import covered, normalize


@pytest.fixture(scope="module")
def add_run():
    return sim.simulate(add2(), "a2a3")


@pytest.fixture(scope="module")
def durations(add_run):
    ops = op_rows(add_run.trace)
    assert ops["opcode"].tolist() == ["TLOAD", "TLOAD", "TADD", "TSTORE"]
    return ops["duration_cycles"].tolist()


# --- flags ---------------------------------------------------------------------------------


def test_flag_edges_pair_each_set_with_its_wait(add_run):
    e = flag_edges(add_run.trace)
    got = sorted(zip(e["flag"], e["producer_id"], e["consumer_id"], strict=True))
    assert got == [
        ("PIPE_MTE2->PIPE_V#0", 0, 6),
        ("PIPE_MTE2->PIPE_V#1", 2, 6),
        ("PIPE_V->PIPE_MTE3#0", 6, 9),
    ]
    t = add_run.trace
    for r in e.itertuples():  # row labels point at the instructions
        assert t.loc[r.producer_row, "id"] == r.producer_id
        assert t.loc[r.consumer_row, "id"] == r.consumer_id
        assert r.ready_cycle == t.loc[r.producer_row, "end_cycle"] <= r.consumer_start


def test_kth_set_pairs_with_kth_wait_of_the_same_flag():
    # one flag id reused by two load -> add hand-overs: the 2nd set releases the 2nd wait
    k = sim.Kernel("reuse")
    x = k.gm("x", "f32", (32, 64))
    a, c = k.tile("vec", "f32", 32, 64), k.tile("vec", "f32", 32, 64)
    for _ in range(2):
        k.TLOAD(a, x)
        k.set_flag("PIPE_MTE2", "PIPE_V", 3)
        k.wait_flag("PIPE_MTE2", "PIPE_V", 3)
        k.TADDS(c, a, 1.0)
        k.set_flag("PIPE_V", "PIPE_MTE2", 3)
        k.wait_flag("PIPE_V", "PIPE_MTE2", 3)
    e = flag_edges(sim.simulate(k).trace)
    got = sorted(zip(e["flag"], e["producer_id"], e["consumer_id"], strict=True))
    assert got == [
        ("PIPE_MTE2->PIPE_V#3", 0, 3),
        ("PIPE_MTE2->PIPE_V#3", 6, 9),
        ("PIPE_V->PIPE_MTE2#3", 3, 6),
    ]  # the last wait releases no instruction


# --- critical path -------------------------------------------------------------------------


def test_critical_path_of_two_loads_add_store(add_run, durations):
    path = critical_path(add_run.trace)
    assert path["opcode"].tolist() == ["TLOAD", "TLOAD", "TADD", "TSTORE"]
    assert path["id"].tolist() == [0, 2, 6, 9]
    assert path["via"].tolist() == ["start", "pipe", "flag", "flag"]
    assert path["flag"].tolist() == ["", "", "PIPE_MTE2->PIPE_V#1", "PIPE_V->PIPE_MTE3#0"]
    assert add_run.total_cycles == sum(durations)
    assert (path["duration_cycles"].sum() + path["gap_cycles"].sum()) == add_run.total_cycles
    assert path["end_cycle"].iloc[-1] == add_run.total_cycles
    t = add_run.trace
    assert (t.loc[path["row"], "id"].tolist()) == path["id"].tolist()


def test_critical_path_through_barriers_goes_drain_then_dispatch():
    r = sim.simulate(barriers(), "a2a3")
    path = critical_path(r.trace)
    assert path["opcode"].tolist() == ["TLOAD", "pipe_barrier", "TADDS", "pipe_barrier", "TSTORE"]
    assert path["via"].tolist() == ["start", "drain", "dispatch", "drain", "dispatch"]
    ops = path[path["kind"] == "op"]
    assert ops["duration_cycles"].sum() + path["gap_cycles"].sum() == r.total_cycles


def test_critical_path_through_a_scalar_unit_wait():
    r = sim.simulate(scalar_wait(), "a2a3")
    path = critical_path(r.trace)
    assert path["opcode"].tolist() == ["TLOAD", "wait_flag", "TADDS", "TMULS"]
    assert path["via"].tolist() == ["start", "flag", "dispatch", "pipe"]
    assert path["flag"].iloc[1] == "PIPE_MTE2->PIPE_S#0"
    assert path["end_cycle"].iloc[-1] == r.total_cycles


def test_critical_path_of_the_perfsim_gemm():
    t = sim.trace.read_trace(PERFSIM_TRACE)
    path = critical_path(t)
    # 9 TASSIGNs on the scalar queue; the first TLOAD waits on the last one's event 8,
    # the second follows it on MTE2; TEXTRACT 22 waits for TLOAD 16 (event 10), the
    # matmul for TEXTRACT 22 (event 12, later than event 11), the FIXP store for the matmul
    assert path["id"].tolist() == list(range(9)) + [14, 16, 22, 26, 30]
    assert path["via"].tolist() == ["start"] + ["pipe"] * 8 + [
        "flag",
        "pipe",
        "flag",
        "flag",
        "flag",
    ]
    assert path["flag"].tolist()[9:] == ["E8", "", "E10", "E12", "E13"]
    assert path["duration_cycles"].sum() == 3024


def test_critical_path_of_an_empty_trace_is_empty(add_run):
    assert len(critical_path(add_run.trace.iloc[0:0])) == 0


# --- stalls --------------------------------------------------------------------------------


def _by_pipe(df):
    return df.set_index("pipe")


def test_stall_breakdown_of_two_loads_add_store(add_run, durations):
    l1, l2, a, s = durations
    total = add_run.total_cycles
    b = _by_pipe(stall_breakdown(add_run.trace))
    assert b.index.tolist() == ["PIPE_MTE2", "PIPE_V", "PIPE_MTE3"]
    assert b.loc["PIPE_MTE2"][
        ["busy_cycles", "event_wait_cycles", "barrier_wait_cycles", "idle_cycles"]
    ].tolist() == [l1 + l2, 0, 0, a + s]
    # V waits for load 1 then load 2; MTE3 waits from 0 until the add is done
    assert b.loc["PIPE_V"][["busy_cycles", "event_wait_cycles", "idle_cycles"]].tolist() == [
        a,
        l1 + l2,
        s,
    ]
    assert b.loc["PIPE_MTE3"][["busy_cycles", "event_wait_cycles", "idle_cycles"]].tolist() == [
        s,
        l1 + l2 + a,
        0,
    ]
    parts = b[["busy_cycles", "event_wait_cycles", "barrier_wait_cycles", "idle_cycles"]].sum(
        axis=1
    )
    assert (parts == total).all() and (b["total_cycles"] == total).all()


def test_barrier_waits_are_the_drained_time_inside_pipe_all_barriers():
    r = sim.simulate(barriers(), "a2a3")
    load, adds, store = op_rows(r.trace)["duration_cycles"].tolist()
    b = _by_pipe(stall_breakdown(r.trace))
    # barrier 1 spans the load, barrier 2 the add; each pipe drained is "waiting on a barrier"
    assert b["barrier_wait_cycles"].to_dict() == {
        "PIPE_MTE2": adds,
        "PIPE_V": load,
        "PIPE_MTE3": load + adds,
    }
    assert b["event_wait_cycles"].sum() == 0
    assert b["idle_cycles"].to_dict() == {"PIPE_MTE2": store, "PIPE_V": store, "PIPE_MTE3": 0}


def test_scalar_unit_waits_count_as_event_waits():
    r = sim.simulate(scalar_wait(), "a2a3")
    load = op_rows(r.trace)["duration_cycles"].iloc[0]
    b = _by_pipe(stall_breakdown(r.trace))
    assert b.loc["PIPE_S", "event_wait_cycles"] == load
    assert b.loc["PIPE_S", "busy_cycles"] == 0


# --- utilisation and summaries -------------------------------------------------------------


def test_utilization_with_one_cycle_bins_is_the_busy_indicator(add_run, durations):
    l1, l2, a, s = durations
    total = add_run.total_cycles
    u = utilization(add_run.trace, bins=total)
    assert u.columns.tolist() == ["AIV0 PIPE_MTE2", "AIV0 PIPE_V", "AIV0 PIPE_MTE3"]
    assert u.index.tolist() == list(range(total))
    assert u["AIV0 PIPE_MTE2"].tolist() == [1.0] * (l1 + l2) + [0.0] * (a + s)
    assert u["AIV0 PIPE_V"].tolist() == [0.0] * (l1 + l2) + [1.0] * a + [0.0] * s
    assert u["AIV0 PIPE_MTE3"].tolist() == [0.0] * (l1 + l2 + a) + [1.0] * s


def test_utilization_bins_average_the_busy_time(add_run):
    u = utilization(add_run.trace, bins=4)
    width = add_run.total_cycles / 4
    busy = pipe_table(add_run.trace).set_index("pipe")["busy_cycles"]
    assert u["AIV0 PIPE_MTE2"].sum() * width == pytest.approx(busy["PIPE_MTE2"], abs=2)
    assert ((u >= 0) & (u <= 1)).all().all()


def test_pipe_table_agrees_with_the_result_summary(add_run):
    table = pipe_table(add_run.trace).set_index("pipe")
    for pipe, s in add_run.pipes.items():
        assert table.loc[pipe, "busy_cycles"] == s["busy_cycles"]
        assert table.loc[pipe, "instructions"] == s["instructions"]
        assert table.loc[pipe, "utilization"] == pytest.approx(s["utilization"], abs=1e-4)


def test_op_summary_is_per_opcode(add_run, durations):
    ops = sim.trace.op_summary(add_run.trace).set_index("opcode")
    assert ops.loc["TLOAD", "count"] == 2
    assert ops.loc["TLOAD", "total_cycles"] == durations[0] + durations[1]


def test_lanes_and_flags_are_per_core_and_unit():
    # a hand-made two-unit trace: AIC's MTE2 feeds AIV0's V through flag X on each core
    rows = []
    for core in (0, 1):
        rows += [
            dict(
                id=0,
                core=core,
                unit="AIC",
                pipe="PIPE_MTE2",
                kind="op",
                opcode="TLOAD",
                start_cycle=0,
                end_cycle=10 + core,
                records="X",
            ),
            dict(
                id=1,
                core=core,
                unit="AIV0",
                pipe="PIPE_V",
                kind="op",
                opcode="TADD",
                start_cycle=10 + core,
                end_cycle=30,
                waits="X",
            ),
        ]
    t = normalize(pd.DataFrame(rows))
    stalls = stall_breakdown(t)
    assert list(zip(stalls["core"], stalls["unit"], stalls["pipe"], strict=True)) == [
        (0, "AIC", "PIPE_MTE2"),
        (0, "AIV0", "PIPE_V"),
        (1, "AIC", "PIPE_MTE2"),
        (1, "AIV0", "PIPE_V"),
    ]
    e = flag_edges(t)
    assert sorted(zip(e["core"], e["ready_cycle"], strict=True)) == [(0, 10), (1, 11)]
    assert utilization(t, bins=3).columns.tolist() == [
        "core 0 AIC PIPE_MTE2",
        "core 0 AIV0 PIPE_V",
        "core 1 AIC PIPE_MTE2",
        "core 1 AIV0 PIPE_V",
    ]


def test_covered_counts_time_inside_disjoint_intervals():
    starts, ends = [2, 10], [5, 12]
    assert covered(starts, ends, [0, 2, 3, 5, 9, 11, 20]).tolist() == [0, 0, 1, 3, 3, 4, 5]
    assert covered([], [], [7]).tolist() == [0]
