"""Timelines of the SimPy pipe model: RecordEvent tokens, flags, barriers, the vector stream.

Every expected cycle below is derived by hand from the reference formulas
(/work/shared/reference/timing-model.md) and the a2a3 machine description, never by
asking the simulator for the cost of the same instruction:

* DMA: ``startup_cycles + floor(bytes / bytes_per_cycle)`` of the path, the sum rounded
  to the nearest cycle, the figures read from models/a2a3/machine.toml
  (tests/dma_formula.py; the evidence for each path is stated there):
    - GM->UB 247.16 GiB/s -> 143.45 B/cycle, start-up 213.6;
        16x64 f32 = 4096 B -> 213.6 + floor(28.55) = 241.6 -> 242
         8x32 f32 = 1024 B -> 213.6 + floor(7.14) = 220.6 -> 221
    - UB->GM 188.46 GiB/s -> 109.38 B/cycle, start-up 213.6;
                    4096 B -> 213.6 + floor(37.45) = 250.6 -> 251
* Vector, Variant S (§2.2-§2.4, §4): TADD f32 16x64 = one ``vadd`` of 16 repeats (flat
  path, no tail) -> cold = head+tail + slope*rep = 24 + 2*16 = 56; warm (in stream) = 2*16
  = 32.
* Kernel-level sync costs 0 cycles (machine.toml [sync] kernel_sync_cycles = 0).
* Stream modelling choices stated in machine.toml: a kernel-level PIPE_V/PIPE_ALL barrier
  and an idle vector pipe both break the stream (§2.3 "modelling choice"/"suggestion").
  An idle pipe starts the next op cold. A barrier between back-to-back ops (the pipe busy
  up to it) puts the next op in the "restart" state, which costs the plan's
  restart_cycles: under a2a3's ``barrier_restart = "tail"`` the first vector instruction
  pays slope*rep + max(tail, floor) -> TADD 16x64 = tail 14 + 2*16 = 46 (full mask, no
  floor); under ``"latency"`` it pays head+tail again = 56 (§4's arithmetic).
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from dma_formula import dma_cycles

import sim
from sim.base.errors import UserError
from sim.target import load_target

LOAD_16x64 = dma_cycles("GM_UB", 16 * 64 * 4)
STORE_16x64 = dma_cycles("UB_GM", 16 * 64 * 4)
LOAD_8x32 = dma_cycles("GM_UB", 8 * 32 * 4)
TADD_COLD = 24 + 2 * 16  # vadd lat 24, slope 2, 16 repeats
TADD_WARM = 2 * 16
TADD_RESTART = 14 + 2 * 16  # vadd tail 14, slope 2 ("tail" rule)

# sanity of the hand derivation itself (not of the simulator)
assert (TADD_COLD, TADD_WARM, TADD_RESTART) == (56, 32, 46)


def vec(k, rows=16, cols=64, dt="f32", **kw):
    return k.tile("vec", dt, rows, cols, **kw)


def ops(r):
    """The op rows of a result's trace in program order."""
    t = r.trace
    return t[t["kind"] == "op"].sort_values("id").reset_index(drop=True)


def only(df, **eq):
    sel = df
    for col, val in eq.items():
        sel = sel[sel[col] == val]
    assert len(sel) == 1, f"expected exactly one row with {eq}, found {len(sel)}:\n{sel}"
    return sel.iloc[0]


# --- TLOAD -> TADD -> TSTORE with tokens ----------------------------------------------------


def chain_kernel():
    k = sim.Kernel("chain")
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    a, c = vec(k), vec(k)
    e = k.TLOAD(a, x)
    e = k.TADD(c, a, a, e)
    k.TSTORE(y, c, e)
    return k


def test_chain_exact_timeline():
    r = sim.simulate(chain_kernel(), "a2a3")
    t = r.trace
    load = only(t, kind="op", opcode="TLOAD")
    add = only(t, kind="op", opcode="TADD")
    store = only(t, kind="op", opcode="TSTORE")

    assert (load["pipe"], load["start_cycle"], load["end_cycle"]) == ("PIPE_MTE2", 0, LOAD_16x64)
    # the consumer starts exactly when the producer ends (zero-latency flag)
    assert add["start_cycle"] == load["end_cycle"]
    assert (add["pipe"], add["end_cycle"]) == ("PIPE_V", LOAD_16x64 + TADD_COLD)
    assert add["duration_cycles"] == TADD_COLD and add["stream"] == "cold"
    assert store["start_cycle"] == add["end_cycle"]
    assert (store["pipe"], store["end_cycle"]) == (
        "PIPE_MTE3",
        LOAD_16x64 + TADD_COLD + STORE_16x64,
    )
    assert load["bytes"] == store["bytes"] == 4096
    assert r.total_cycles == LOAD_16x64 + TADD_COLD + STORE_16x64

    # waits / records name the flag
    assert load["records"] == "PIPE_MTE2->PIPE_V#0"
    assert add["waits"] == "PIPE_MTE2->PIPE_V#0"
    assert add["records"] == "PIPE_V->PIPE_MTE3#0"
    assert store["waits"] == "PIPE_V->PIPE_MTE3#0"
    assert store["records"] == "" and load["waits"] == ""

    # the sync rows themselves: set on the source pipe when the producer ends, wait on the
    # destination pipe from the moment it reached the queue head (0) to the flag's arrival
    s1 = only(t, kind="set_flag", operands="PIPE_MTE2->PIPE_V#0")
    w1 = only(t, kind="wait_flag", operands="PIPE_MTE2->PIPE_V#0")
    assert (s1["pipe"], s1["start_cycle"], s1["end_cycle"]) == ("PIPE_MTE2", LOAD_16x64, LOAD_16x64)
    assert (w1["pipe"], w1["start_cycle"], w1["end_cycle"]) == ("PIPE_V", 0, LOAD_16x64)
    w2 = only(t, kind="wait_flag", operands="PIPE_V->PIPE_MTE3#0")
    assert (w2["pipe"], w2["start_cycle"], w2["end_cycle"]) == (
        "PIPE_MTE3",
        0,
        LOAD_16x64 + TADD_COLD,
    )
    # program order of the ids: producer, its set_flag, wait, consumer
    assert load["id"] < s1["id"] < w1["id"] < add["id"]

    pipes = r.pipes
    assert pipes["PIPE_MTE2"]["busy_cycles"] == LOAD_16x64
    assert pipes["PIPE_V"]["busy_cycles"] == 56
    assert pipes["PIPE_MTE3"]["busy_cycles"] == STORE_16x64
    assert pipes["PIPE_V"]["utilization"] == pytest.approx(
        56 / (LOAD_16x64 + TADD_COLD + STORE_16x64), abs=1e-4
    )


def test_two_loads_on_mte2_run_back_to_back():
    k = sim.Kernel("loads")
    x1, x2 = k.gm("x1", "f32", (16, 64)), k.gm("x2", "f32", (16, 64))
    k.TLOAD(vec(k), x1)
    k.TLOAD(vec(k), x2)
    o = ops(sim.simulate(k))
    assert list(o["pipe"]) == ["PIPE_MTE2", "PIPE_MTE2"]
    assert list(o["dispatch_cycle"]) == [0, 0]  # both queued at once
    assert list(o["start_cycle"]) == [0, LOAD_16x64]
    assert list(o["end_cycle"]) == [LOAD_16x64, 2 * LOAD_16x64]


def test_op_without_token_overlaps_its_producer():
    """No token, no ordering: the hardware has no interlock on buffer addresses between
    pipes (programming-model.md §7.4), so the TADD starts at cycle 0 on PIPE_V while the
    TLOAD that fills its source is still running on PIPE_MTE2. (The functional model still
    applies effects in program order; the timeline shows the race.)"""
    k = sim.Kernel("race")
    x = k.gm("x", "f32", (16, 64), np.arange(1024, dtype=np.float32))
    y = k.gm("y", "f32", (16, 64))
    a, c = vec(k), vec(k)
    k.TLOAD(a, x)
    k.TADD(c, a, a)  # no token
    k.TSTORE(y, c)  # no token either
    r = sim.simulate(k, sync="manual")
    t = r.trace
    assert not (t["kind"].isin(["set_flag", "wait_flag", "barrier"])).any()
    load, add, store = (only(t, kind="op", opcode=o) for o in ("TLOAD", "TADD", "TSTORE"))
    assert add["start_cycle"] == 0 and store["start_cycle"] == 0
    assert add["start_cycle"] < load["end_cycle"]  # overlap
    assert r.total_cycles == max(LOAD_16x64, TADD_COLD, STORE_16x64)
    np.testing.assert_array_equal(r.output("y"), 2 * np.arange(1024, dtype=np.float32))


def test_same_pipe_token_becomes_pipe_barrier():
    k = sim.Kernel("samepipe")
    a, b, c = vec(k), vec(k), vec(k)
    e = k.TADD(c, a, b)
    k.TADD(a, c, b, e)  # token from PIPE_V waited on PIPE_V
    r = sim.simulate(k)
    t = r.trace.sort_values("id").reset_index(drop=True)
    assert list(t["kind"]) == ["op", "barrier", "op"]
    bar = t.iloc[1]
    assert (bar["pipe"], bar["opcode"], bar["operands"]) == ("PIPE_V", "pipe_barrier", "PIPE_V")
    assert bar["start_cycle"] == bar["end_cycle"] == TADD_COLD  # costs 0, after the drain
    assert not t["kind"].isin(["set_flag", "wait_flag"]).any()
    # kernel-level barrier breaks the stream (machine.toml modelling choice); the pipe was
    # busy up to it, so the second TADD restarts: tail + slope*rep = 46, not cold 56
    assert list(t["stream"]) == ["cold", "", "restart"]
    assert r.total_cycles == TADD_COLD + TADD_RESTART == 102


def test_explicit_set_wait_flag_with_ids():
    k = sim.Kernel("explicit")
    x = k.gm("x", "f32", (16, 64))
    a, c = vec(k), vec(k)
    k.TLOAD(a, x)
    k.set_flag("PIPE_MTE2", "PIPE_V", 5)
    k.wait_flag("MTE2", "V", 5)  # short pipe names are accepted
    k.TADD(c, a, a)
    r = sim.simulate(k)
    t = r.trace
    add = only(t, kind="op", opcode="TADD")
    assert add["start_cycle"] == LOAD_16x64
    assert add["waits"] == "PIPE_MTE2->PIPE_V#5"
    assert only(t, kind="op", opcode="TLOAD")["records"] == "PIPE_MTE2->PIPE_V#5"
    assert only(t, kind="set_flag")["pipe"] == "PIPE_MTE2"
    assert only(t, kind="wait_flag")["pipe"] == "PIPE_V"


def test_flags_are_counters_preset_idiom():
    """Pre-set a reverse flag before the 'loop' so the first wait succeeds (§7.1 idiom);
    the wait then consumes it, so the TLOAD is not delayed."""
    k = sim.Kernel("preset")
    x = k.gm("x", "f32", (16, 64))
    a = vec(k)
    k.set_flag("PIPE_V", "PIPE_MTE2", 0)  # nothing ran on V: fires at 0
    k.set_flag("PIPE_V", "PIPE_MTE2", 0)  # counted twice
    k.wait_flag("PIPE_V", "PIPE_MTE2", 0)
    k.TLOAD(a, x)
    k.wait_flag("PIPE_V", "PIPE_MTE2", 0)
    k.TLOAD(a, x)
    o = ops(sim.simulate(k))
    assert list(o["start_cycle"]) == [0, LOAD_16x64]


def test_flag_key_includes_the_source_pipe():
    """(MTE2->V, 0) and (MTE3->V, 0) are different flags (§10.3 advice): a set of one does
    not satisfy a wait on the other."""
    k = sim.Kernel("keyed")
    x = k.gm("x", "f32", (16, 64))
    a, c = vec(k), vec(k)
    k.TLOAD(a, x)
    k.set_flag("PIPE_MTE2", "PIPE_V", 0)
    k.wait_flag("PIPE_MTE3", "PIPE_V", 0)
    k.TADD(c, a, a)
    with pytest.raises(sim.DeadlockError):
        sim.simulate(k)


def test_wait_flag_on_scalar_pipe_blocks_dispatch():
    """A wait whose destination is PIPE_S stops the scalar unit: nothing after it is
    dispatched until the vector pipe has set the flag."""
    k = sim.Kernel("vtos")
    x = k.gm("x", "f32", (16, 64))
    a, b, c = vec(k), vec(k), vec(k)
    k.TADD(c, a, b)
    k.set_flag("PIPE_V", "PIPE_S", 1)
    k.wait_flag("PIPE_V", "PIPE_S", 1)
    k.TLOAD(a, x)
    load = only(ops(sim.simulate(k)), opcode="TLOAD")
    assert load["dispatch_cycle"] == TADD_COLD
    assert load["start_cycle"] == TADD_COLD
    assert load["end_cycle"] == TADD_COLD + LOAD_16x64


# --- event pool -------------------------------------------------------------------------------


def _loads_then_add(n_tokens: int):
    k = sim.Kernel(f"pool{n_tokens}")
    x = k.gm("x", "f32", (16, 64))
    tiles = [vec(k) for _ in range(n_tokens + 1)]
    events = [k.TLOAD(t, x) for t in tiles[:n_tokens]]
    k.TADD(tiles[-1], tiles[0], tiles[1], *events)
    return k


def test_eight_outstanding_tokens_use_ids_0_to_7():
    r = sim.simulate(_loads_then_add(8))
    add = only(r.trace, kind="op", opcode="TADD")
    assert add["waits"].split(";") == [f"PIPE_MTE2->PIPE_V#{i}" for i in range(8)]
    assert add["start_cycle"] == 8 * LOAD_16x64


def test_event_pool_exhaustion_raises_user_error():
    with pytest.raises(UserError, match=r"event pool exhausted.*PIPE_MTE2 -> PIPE_V"):
        _loads_then_add(9)


def test_event_ids_are_reused_once_waited():
    k = sim.Kernel("reuse")
    x = k.gm("x", "f32", (16, 64))
    a, c = vec(k), vec(k)
    for _ in range(12):  # 12 > 8 tokens, one waited at a time
        e = k.TLOAD(a, x)
        e = k.TADD(c, a, a, e)
        k.TSTORE(x, c, e)
    r = sim.simulate(k)
    adds = ops(r)[lambda d: d["opcode"] == "TADD"]
    # MTE2 never waits for PIPE_V, so no id is surely waited when the next load sets one:
    # round robin over the pool (the C++ library's order), no pool exhaustion
    assert list(adds["waits"]) == [f"PIPE_MTE2->PIPE_V#{i % 8}" for i in range(12)]


# --- PIPE_ALL barrier -------------------------------------------------------------------------


def test_pipe_barrier_all_holds_dispatch_until_every_pipe_drains():
    k = sim.Kernel("all")
    x = k.gm("x", "f32", (16, 64))
    a, b, c = vec(k), vec(k), vec(k)
    k.TLOAD(a, x)
    k.pipe_barrier("PIPE_ALL")
    k.TADD(c, b, b)  # no token: only the barrier orders it
    r = sim.simulate(k)
    t = r.trace
    bar = only(t, kind="barrier")
    assert (bar["pipe"], bar["start_cycle"], bar["end_cycle"]) == ("PIPE_ALL", 0, LOAD_16x64)
    add = only(t, kind="op", opcode="TADD")
    assert add["dispatch_cycle"] == LOAD_16x64 and add["start_cycle"] == LOAD_16x64
    assert add["stream"] == "cold"
    assert r.total_cycles == LOAD_16x64 + TADD_COLD


# --- the vector stream rule -------------------------------------------------------------------


def _two_tadds(barrier: bool):
    k = sim.Kernel("stream")
    a, b, c = vec(k), vec(k), vec(k)
    k.TADD(c, a, b)
    if barrier:
        k.pipe_barrier("PIPE_V")
    k.TADD(a, c, b)
    # as written: without the barrier, auto mode would insert one for the RAW on c
    return ops(sim.simulate(k, sync="manual"))


def test_back_to_back_vector_ops_stream():
    o = _two_tadds(barrier=False)
    assert list(o["stream"]) == ["cold", "warm"]
    assert list(o["duration_cycles"]) == [TADD_COLD, TADD_WARM]
    assert o["end_cycle"].max() == (24 + 2 * 16) + (2 * 16) == 88


def test_kernel_level_barrier_restarts_the_stream():
    # the second TADD starts at 56, right when the first ends: "restart", 14 + 32 = 46
    o = _two_tadds(barrier=True)
    assert list(o["stream"]) == ["cold", "restart"]
    assert list(o["duration_cycles"]) == [TADD_COLD, TADD_RESTART]
    assert o["end_cycle"].max() == TADD_COLD + TADD_RESTART == 102


def test_restart_cce_rows_sum_to_the_restart_cost():
    """--detail cce: the restarted TADD's one vadd row spans its 46 cycles."""
    k = sim.Kernel("stream_cce")
    a, b, c = vec(k), vec(k), vec(k)
    k.TADD(c, a, b)
    k.pipe_barrier("PIPE_V")
    k.TADD(a, c, b)
    t = sim.simulate(k, detail="cce").trace
    add2 = ops(sim.simulate(k))[lambda d: d["opcode"] == "TADD"].iloc[1]
    cce = t[
        (t["kind"] != "op")
        & (t["pipe"] == "PIPE_V")
        & (t["start_cycle"] >= TADD_COLD)
        & (t["kind"] != "barrier")
    ]
    assert len(cce) == 1
    assert (cce.iloc[0]["start_cycle"], cce.iloc[0]["end_cycle"]) == (
        TADD_COLD,
        TADD_COLD + TADD_RESTART,
    )
    assert add2["end_cycle"] == TADD_COLD + TADD_RESTART


def test_pipe_all_barrier_between_busy_vector_ops_restarts():
    """PIPE_ALL waits for every pipe; only V is busy, so the next TADD is dispatched at 56,
    when V ends: no idle gap -> restart, 56 + 46 = 102."""
    k = sim.Kernel("all_busy")
    a, b, c = vec(k), vec(k), vec(k)
    k.TADD(c, a, b)
    k.pipe_barrier("PIPE_ALL")
    k.TADD(a, c, b)
    o = ops(sim.simulate(k))
    assert list(o["stream"]) == ["cold", "restart"]
    assert list(o["start_cycle"]) == [0, TADD_COLD]
    assert o["end_cycle"].max() == TADD_COLD + TADD_RESTART


def test_barrier_then_idle_gap_is_cold():
    """TADD [0, 56), pipe_barrier(PIPE_V), then a TADD waiting for a 16x64 TLOAD that ends
    at 69: the vector pipe idled from 56 to 69, so the second TADD is cold (56), not a
    restart: ends at 69 + 56 = 125."""
    k = sim.Kernel("bar_idle")
    x = k.gm("x", "f32", (16, 64))
    a, b, c = vec(k), vec(k), vec(k)
    k.TADD(c, b, b)
    e = k.TLOAD(a, x)
    k.pipe_barrier("PIPE_V")
    k.TADD(c, a, b, e)
    adds = ops(sim.simulate(k))[lambda d: d["opcode"] == "TADD"]
    assert list(adds["stream"]) == ["cold", "cold"]
    assert list(adds["start_cycle"]) == [0, LOAD_16x64]
    assert list(adds["end_cycle"]) == [TADD_COLD, LOAD_16x64 + TADD_COLD]


def test_barrier_before_any_vector_op_leaves_the_pipe_cold():
    """A barrier on a pipe that has run nothing does not make the first op a restart."""
    k = sim.Kernel("bar_first")
    a, b, c = vec(k), vec(k), vec(k)
    k.pipe_barrier("PIPE_V")
    k.TADD(c, a, b)
    o = ops(sim.simulate(k))
    assert list(o["stream"]) == ["cold"]
    assert o["end_cycle"].max() == TADD_COLD


def test_restart_under_the_latency_rule(tmp_path):
    """The same kernel on a copy of a2a3 with barrier_restart = "latency": the restarted
    TADD pays head + tail again (§4's arithmetic): 56 + 56 = 112, still marked restart."""
    copy = tmp_path / "a2a3"
    shutil.copytree(load_target("a2a3").path, copy)
    machine = copy / "machine.toml"
    text, n = re.subn(
        r'(?m)^barrier_restart\s*=\s*"[a-z]+"', 'barrier_restart = "latency"', machine.read_text()
    )
    assert n == 1
    machine.write_text(text)
    k = sim.Kernel("stream_latency")
    a, b, c = vec(k), vec(k), vec(k)
    k.TADD(c, a, b)
    k.pipe_barrier("PIPE_V")
    k.TADD(a, c, b)
    o = ops(sim.simulate(k, load_target(copy)))
    assert list(o["stream"]) == ["cold", "restart"]
    assert list(o["duration_cycles"]) == [TADD_COLD, TADD_COLD]
    assert o["end_cycle"].max() == 2 * TADD_COLD == 112


def test_vector_op_after_idle_wait_is_cold():
    """V runs a TADD [0, 56); a 16x64 TLOAD ends at LOAD_16x64 (242); the dependent TADD starts
    then, after the vector pipe went idle at 56 -> cold: 242 + 56 = 298."""
    k = sim.Kernel("idle")
    x = k.gm("x", "f32", (16, 64))
    a, b, c = vec(k), vec(k), vec(k)
    k.TADD(c, b, b)
    e = k.TLOAD(a, x)
    k.TADD(c, a, b, e)
    adds = ops(sim.simulate(k))[lambda d: d["opcode"] == "TADD"]
    assert list(adds["stream"]) == ["cold", "cold"]
    assert list(adds["start_cycle"]) == [0, LOAD_16x64]
    assert list(adds["end_cycle"]) == [TADD_COLD, LOAD_16x64 + TADD_COLD]


def test_vector_op_whose_flag_arrived_before_idle_stays_warm():
    """Control for the test above: an 8x32 TLOAD ends at LOAD_8x32 (221), before seven back-to-back
    TADDs end (56 + 6 * 32 = 248), so the dependent TADD follows without a gap and
    streams: 248 + 32 = 280."""
    k = sim.Kernel("busy")
    x = k.gm("x", "f32", (8, 32))
    small = vec(k, 8, 32)
    a, b, c = vec(k), vec(k), vec(k)
    for _ in range(7):
        k.TADD(c, b, b)
    e = k.TLOAD(small, x)
    k.TADD(c, a, b, e)
    o = ops(sim.simulate(k))
    assert only(o, opcode="TLOAD")["end_cycle"] == LOAD_8x32 < TADD_COLD + 6 * TADD_WARM
    adds = o[o["opcode"] == "TADD"]
    assert list(adds["stream"]) == ["cold"] + ["warm"] * 7
    assert list(adds["end_cycle"]) == [TADD_COLD + i * TADD_WARM for i in range(8)]
    assert adds["end_cycle"].iloc[-1] == 280


def test_automatic_ids_avoid_an_open_explicit_flag():
    """An explicit set_flag(MTE2, V, 0) still pending (its wait comes later) takes id 0 out
    of the pool: the token waited on meanwhile gets id 1."""
    k = sim.Kernel("mixed_ids")
    x = k.gm("x", "f32", (16, 64))
    a, b, c = vec(k), vec(k), vec(k)
    k.TLOAD(a, x)
    k.set_flag("PIPE_MTE2", "PIPE_V", 0)
    e = k.TLOAD(b, x)
    k.TADD(c, b, b, e)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 0)
    k.TADD(c, a, a)
    o = ops(sim.simulate(k))
    adds = o[o["opcode"] == "TADD"]
    assert list(adds["waits"]) == ["PIPE_MTE2->PIPE_V#1", "PIPE_MTE2->PIPE_V#0"]
    # the first TADD waits for the second load: 2 * 69, then 56; the second streams (32)
    assert list(adds["start_cycle"]) == [2 * LOAD_16x64, 2 * LOAD_16x64 + TADD_COLD]
    assert list(adds["stream"]) == ["cold", "warm"]


def test_tsync_event_and_pipe_forms():
    """C++ TSYNC(events...) waits on tokens; TSYNC<Op>() is pipe_barrier(pipe(Op))."""
    k = sim.Kernel("tsync")
    x = k.gm("x", "f32", (16, 64))
    a, c = vec(k), vec(k)
    e = k.TLOAD(a, x)
    k.TSYNC(e, on="PIPE_V")
    k.TADD(c, a, a)
    k.TSYNC("PIPE_V")
    k.TADD(a, c, c)
    r = sim.simulate(k)
    o = ops(r)
    assert list(o["start_cycle"]) == [0, LOAD_16x64, LOAD_16x64 + TADD_COLD]
    assert o.iloc[1]["waits"] == "PIPE_MTE2->PIPE_V#0"
    # TSYNC("PIPE_V") is a kernel-level barrier between back-to-back TADDs: restart
    assert list(o["stream"]) == ["", "cold", "restart"]
    assert o["end_cycle"].max() == LOAD_16x64 + TADD_COLD + TADD_RESTART
    assert only(r.trace, kind="barrier")["pipe"] == "PIPE_V"
    with pytest.raises(UserError, match="on=PIPE"):
        k.TSYNC(e)
