"""What-if re-runs: ideal synchronisation and infinite bandwidth, through the engine.

Hand-derived bounds on the kernels of ``trace_kernels``:

* ideal sync: waits never block and barriers are free, so every pipe runs its own queue
  back to back from cycle 0 and the total is the longest single pipe's busy sum (for
  ``add2``: the two loads, L1 + L2);
* infinite bandwidth: TLOAD and TSTORE stream their bytes in 0 cycles but keep their
  start-up latency (``startup_cycles`` in machine.toml, read by tests/dma_formula.py: at
  this writing GM->UB and UB->GM 213.6, so 214 once the op's cost is rounded); the flags
  still order the add after the loads, so the total is 2 * LOAD_START + A + STORE_START,
  the add started cold as in the as-is run;
* both: the longest pipe, MTE2's two start-ups, 2 * LOAD_START (A = 88 and STORE_START
  are less).
"""

from __future__ import annotations

import pytest
from dma_formula import dma_cycles, path_figures
from trace_kernels import add2, barriers, op_rows

import sim
from sim.base.errors import DeadlockError
from sim.engine.launch import MECHANISMS

# start-up latencies of a TLOAD / TSTORE, rounded as an op's cost is
LOAD_START, STORE_START = round(path_figures("GM_UB")[0]), round(path_figures("UB_GM")[0])


@pytest.fixture(scope="module")
def as_is():
    return sim.simulate(add2(), "a2a3")


@pytest.fixture(scope="module")
def durations(as_is):
    return op_rows(as_is.trace)["duration_cycles"].tolist()  # L1, L2, A, S


def test_whatif_table(as_is, durations):
    l1, l2, a, s = durations
    df = sim.whatif(add2(), "a2a3", shared=False)
    assert df.index.tolist() == ["as-is", "ideal sync", "infinite bandwidth", "both"]
    assert df.columns.tolist() == [
        "total_cycles",
        "with_launch_cycles",
        "speedup",
        "speedup_with_launch",
    ]
    inf_bw = 2 * LOAD_START + a + STORE_START
    assert df["total_cycles"].tolist() == [l1 + l2 + a + s, l1 + l2, inf_bw, 2 * LOAD_START]
    launch = as_is.launch_cycles
    assert launch > 0
    assert (df["with_launch_cycles"] - df["total_cycles"] == launch).all()
    assert (l1, l2, s) == (dma_cycles("GM_UB", 8192),) * 2 + (dma_cycles("UB_GM", 8192),)
    assert 2 * LOAD_START > max(a, STORE_START)
    assert df.loc["as-is", "total_cycles"] == as_is.total_cycles
    assert df["speedup"].tolist() == pytest.approx(
        [
            1.0,
            as_is.total_cycles / (l1 + l2),
            as_is.total_cycles / inf_bw,
            as_is.total_cycles / (2 * LOAD_START),
        ]
    )
    assert df["speedup_with_launch"].tolist() == pytest.approx(
        [(l1 + l2 + a + s + launch) / (t + launch) for t in df["total_cycles"]]
    )


def test_whatif_frees_each_shared_mechanism_of_a_lone_unit(as_is):
    """One vector unit alone: its transfers never meet another's on the shared channels and
    its one store finds the write path idle, so freeing either costs nothing; freeing the
    launch leaves the device time and takes the overhead out of the with-launch time."""
    df = sim.whatif(add2(), "a2a3")
    shared = [f"free {m}" for m in MECHANISMS] + ["free all shared"]
    assert df.index.tolist()[4:] == shared
    assert (df.loc[shared, "total_cycles"] == as_is.total_cycles).all()
    assert df.loc["free launch", "with_launch_cycles"] == as_is.total_cycles
    assert df.loc["free gm_write_queue", "with_launch_cycles"] == as_is.with_launch_cycles


def test_ideal_sync_runs_every_pipe_back_to_back_from_zero():
    r = sim.simulate(add2(), "a2a3", ideal_sync=True)
    ops = r.trace[r.trace["kind"] == "op"].sort_values("id")
    for _, pipe_ops in ops.groupby("pipe"):
        starts, ends = pipe_ops["start_cycle"].tolist(), pipe_ops["end_cycle"].tolist()
        assert starts == [0] + ends[:-1]
    busy = {p: s["busy_cycles"] for p, s in r.pipes.items()}
    assert r.total_cycles == max(busy.values())
    sync = r.trace[r.trace["kind"].isin(["wait_flag", "set_flag", "barrier"])]
    assert len(sync) == 6 and (sync["duration_cycles"] == 0).all()  # rows kept, zero cost
    assert r.trace["waits"].str.len().sum() > 0  # still named on the ops


def test_ideal_sync_makes_pipe_all_barriers_free():
    as_is = sim.simulate(barriers(), "a2a3")
    load, adds, store = op_rows(as_is.trace)["duration_cycles"].tolist()
    r = sim.simulate(barriers(), "a2a3", ideal_sync=True)
    assert as_is.total_cycles == load + adds + store
    assert r.total_cycles == max(load, adds, store)
    held = r.trace[r.trace["pipe"] == "PIPE_ALL"]
    assert len(held) == 2 and (held["duration_cycles"] == 0).all()
    assert (held["dispatch_cycle"] == 0).all()


def test_ideal_sync_keeps_the_vector_stream_open_across_barriers():
    k = sim.Kernel("stream")
    a = k.tile("vec", "f32", 32, 64)
    k.TADDS(a, a, 1.0)
    k.pipe_barrier("PIPE_V")
    k.TADDS(a, a, 1.0)
    as_is = op_rows(sim.simulate(k, "a2a3").trace)
    ideal = op_rows(sim.simulate(k, "a2a3", ideal_sync=True).trace)
    assert as_is["stream"].tolist() == ["cold", "restart"]
    assert ideal["stream"].tolist() == ["cold", "warm"]
    assert ideal["duration_cycles"].iloc[1] <= as_is["duration_cycles"].iloc[1]


def test_ideal_sync_satisfies_a_wait_that_would_deadlock():
    k = sim.Kernel("stuck")
    a = k.tile("vec", "f32", 32, 64)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 0)  # no set_flag ever
    k.TADDS(a, a, 1.0)
    with pytest.raises(DeadlockError):
        sim.simulate(k, "a2a3")
    r = sim.simulate(k, "a2a3", ideal_sync=True)
    assert op_rows(r.trace)["start_cycle"].tolist() == [0]


def test_infinite_bandwidth_zeroes_dma_bytes_and_nothing_else(as_is, durations):
    r = sim.simulate(add2(), "a2a3", infinite_bandwidth=True)
    ops = op_rows(r.trace)
    assert ops.set_index("opcode")["duration_cycles"].to_dict() == {
        "TLOAD": LOAD_START,
        "TADD": durations[2],
        "TSTORE": STORE_START,
    }
    assert ops["bytes"].tolist() == op_rows(as_is.trace)["bytes"].tolist()  # still reported
    assert r.total_cycles == 2 * LOAD_START + durations[2] + STORE_START


def test_infinite_bandwidth_with_barriers_leaves_the_vector_work_and_start_ups():
    as_is = sim.simulate(barriers(), "a2a3")
    adds = op_rows(as_is.trace)["duration_cycles"].iloc[1]
    assert (
        sim.simulate(barriers(), "a2a3", infinite_bandwidth=True).total_cycles
        == LOAD_START + adds + STORE_START
    )


def test_whatif_passes_simulate_options_and_keeps_results_identical():
    k = add2()
    timing_only = sim.whatif(k, "a2a3", functional=False)
    assert timing_only.equals(sim.whatif(k, "a2a3"))
    assert timing_only.index.name == "scenario"
