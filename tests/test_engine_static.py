"""The engine's timed path (items run by arithmetic as an idle pipe takes them, waits whose
set already happened included; the event loop only for sets not yet known) gives exactly
the timeline of taking every item through the event loop.

Random kernels — cross-pipe tokens, hand-written flags, barriers on one pipe and on all,
dynamic valid regions, several op families — run both ways with every trace detail; the
traces (every row, every column) and the deadlock reports must be identical.
"""

from __future__ import annotations

import functools

import pandas as pd
import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_fuzz import _build, step
from test_trace_rows import ARGS, EXAMPLES

import sim
import sim.engine.chip as chip_module
from sim.base.errors import DeadlockError, UserError
from sim.engine.execute import Interpreter
from sim.engine.machine import Machine
from sim.target import load_target

TARGET = load_target("a2a3")


def _run(kernel, batch: bool, **kw):
    machine = Machine(TARGET, batch=batch, **kw)
    try:
        rec = machine.run(
            Interpreter(kernel.program(), TARGET, inputs=kernel.inputs, functional=False).issue()
        )
    except DeadlockError as e:
        return ("deadlock", str(e), machine.recorder.frame())
    return ("ok", rec.end, rec.frame())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(step, min_size=1, max_size=24),
    shape=st.sampled_from([(16, 64), (1, 64), (8, 128)]),
    detail=st.booleans(),
    ideal_sync=st.booleans(),
)
def test_static_runs_equal_the_event_loop(steps, shape, detail, ideal_sync):
    try:
        k = _build(steps, "f32", *shape)
        kw = dict(detail=detail, ideal_sync=ideal_sync)
        fast, slow = _run(k, True, **kw), _run(k, False, **kw)
    except UserError:
        return  # rejected by the verifier: nothing to compare
    assert fast[:2] == slow[:2]
    pd.testing.assert_frame_equal(fast[2], slow[2])


class _CountingEnv(simpy.Environment):
    def __init__(self):
        super().__init__()
        self.scheduled = 0

    def schedule(self, event, priority=1, delay=0):
        self.scheduled += 1
        super().schedule(event, priority, delay)


def test_a_run_of_instructions_costs_one_event():
    k = sim.Kernel("run")
    a, b = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    for _ in range(50):
        k.TADD(b, a, a)
    counts = {}
    for batch in (True, False):
        env = _CountingEnv()
        Machine(TARGET, env=env, batch=batch).run(
            Interpreter(k.program(), TARGET, functional=False).issue()
        )
        counts[batch] = env.scheduled
    assert counts[False] >= 50 and counts[True] <= 5


_PTO = sorted(p for p in EXAMPLES if p.suffix == ".pto")


@pytest.mark.parametrize("path", _PTO, ids=[p.stem for p in _PTO])
def test_examples_run_the_same_on_both_paths(path, monkeypatch):
    """End to end through ``simulate`` (single units on the timed path, chips, auto and
    manual sync): forcing the event path changes no cycle and no trace row."""
    program = sim.parse_file(path)
    args = ARGS.get(path.name, {})
    fast = sim.simulate(program, inputs=args, functional=False)
    monkeypatch.setattr(chip_module, "Machine", functools.partial(Machine, batch=False))
    slow = sim.simulate(program, inputs=args, functional=False)
    assert fast.total_cycles == slow.total_cycles
    pd.testing.assert_frame_equal(fast.trace, slow.trace)


# --- the chip: units meet in GM, FIFOs and cross-core flags ------------------------------


def _fa_py(**kw):
    import importlib.util

    from test_trace_rows import ROOT

    spec = importlib.util.spec_from_file_location(
        "fa_example", ROOT / "examples" / "flash_attention.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build(**kw)


def _gemm_pto():
    from test_trace_rows import ROOT

    return sim.parse_file(ROOT / "examples" / "gemm.pto")


def _fa_pto():
    from test_trace_rows import ROOT

    return sim.parse_file(ROOT / "examples" / "flash_attention.pto")


def _streams(block_dim, n=6, rows=32, cols=256):
    """Every block loads, scales and stores n tiles through two UB buffers (GM-bound)."""
    k = sim.Kernel("streams", block_dim=block_dim)
    x = k.gm("x", "f32", (rows * n * block_dim, cols))
    y = k.gm("y", "f32", (rows * n * block_dim, cols))
    ts = [k.tile("vec", "f32", rows, cols) for _ in range(2)]
    base = k.block_idx * (rows * n)
    for i in range(n):
        t, r0 = ts[i % 2], base + i * rows
        e = k.TLOAD(t, x[r0 : r0 + rows, :])
        e = k.TMULS(t, t, 2.0, e)
        k.TSTORE(y[r0 : r0 + rows, :], t, e)
    return k


GEMM = {"m": 256, "k": 512, "n": 512, "singleCoreM": 128, "singleCoreN": 256}
CHIPS = {
    "gemm.pto x4": (_gemm_pto, GEMM, 4, "a2a3", None),
    "gemm.pto x3 l2 off": (_gemm_pto, {**GEMM, "m": 384, "k": 1024}, 3, "a2a3", False),
    "gemm.pto x2": (_gemm_pto, {**GEMM, "m": 128, "n": 1024}, 2, "a2a3", None),
    "fa.pto S1=512 t128 x2": (_fa_pto, {"S1": 512, "S1_TILE": 128}, 2, "a2a3", None),
    "fa.pto S1=512 t256 x3": (_fa_pto, {"S1": 512, "S1_TILE": 256}, 3, "a2a3", None),
    "fa.pto S1=1024 t512 x2": (_fa_pto, {"S1": 1024, "S1_TILE": 512}, 2, "a2a3", None),
    "fa.py S1=512 x3": (lambda: _fa_py(s1=512, cores=3), None, None, "a2a3", None),
    "fa.py S1=512 x2 a5": (lambda: _fa_py(s1=512, cores=2, arch="a5"), None, None, "a5", None),
    "streams x24": (lambda: _streams(24), None, None, "a2a3", None),
    "streams x7 l2 off": (lambda: _streams(7, n=3, rows=16), None, None, "a2a3", False),
}


# ideal_sync: the kernels without FIFOs (a FIFO's pop needs its push to have happened)
CHIP_RUNS = [(name, False) for name in CHIPS] + [
    (name, True) for name in CHIPS if name.startswith(("gemm", "streams"))
]


@pytest.mark.parametrize("name,ideal_sync", CHIP_RUNS, ids=[n + " ideal" * i for n, i in CHIP_RUNS])
def test_chips_run_the_same_on_both_paths(name, ideal_sync, monkeypatch):
    """On the chip the timed path runs every item that touches neither GM nor a cross-core
    flag by arithmetic (a FIFO's flags keep the cycles of their sets); GM transfers and
    cross-core flags go through the event loop. Forced through the event loop item by item,
    every cycle, trace row and GM figure is the same (cube<->vector FIFOs through GM on
    A2/A3 and FIXPIPE on A5, L2 on and off)."""
    make, args, cores, target, l2 = CHIPS[name]
    program = make()
    kw = dict(inputs=args, functional=False, block_dim=cores, l2=l2, ideal_sync=ideal_sync)
    fast = sim.simulate(program, target, **kw)
    monkeypatch.setattr(chip_module, "Machine", functools.partial(Machine, batch=False))
    slow = sim.simulate(program, target, **kw)
    assert fast.total_cycles == slow.total_cycles
    assert fast.memory == slow.memory
    pd.testing.assert_frame_equal(fast.trace, slow.trace)


def test_a_chip_deadlock_reads_the_same_on_both_paths(monkeypatch):
    k = sim.Kernel("nopush", block_dim=2)
    f = k.fifo("c2v", "f32", 16, 64)
    x = k.gm("x", "f32", (16, 64))
    with k.vector():
        t = k.tile("vec", "f32", 16, 64)
        k.TLOAD(t, x)
        k.tpop(f)
    msgs = []
    for batch in (True, False):
        monkeypatch.setattr(chip_module, "Machine", functools.partial(Machine, batch=batch))
        with pytest.raises(DeadlockError) as info:
            sim.simulate(k, functional=False)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and "full slot" in msgs[0]


def _busy_streams(block_dim, work, n=4, rows=16, cols=128):
    """Every block loads n tiles and runs ``work`` vector instructions on each between
    hand-written flags, then stores it."""
    k = sim.Kernel("busy", block_dim=block_dim)
    x = k.gm("x", "f32", (rows * n * block_dim, cols))
    y = k.gm("y", "f32", (rows * n * block_dim, cols))
    t = k.tile("vec", "f32", rows, cols)
    base = k.block_idx * (rows * n)
    for i in range(n):
        r0 = base + i * rows
        e = k.TLOAD(t, x[r0 : r0 + rows, :])
        for _ in range(work):
            e = k.TMULS(t, t, 1.5, e)
        k.TSTORE(y[r0 : r0 + rows, :], t, e)
    return k


@pytest.mark.parametrize("block_dim", [2, 5, 24])
def test_on_a_chip_only_gm_transfers_cost_events(block_dim, monkeypatch):
    """The instructions between two GM transfers run by arithmetic: 16 times the vector
    work costs no more SimPy events (one per cycle with transfers to cost: fewer where more
    work spreads the transfers of the units out), while forced through the event loop
    every item does."""
    counts = {}
    for batch in (True, False):
        for work in (1, 16):
            env = _CountingEnv()
            monkeypatch.setattr(chip_module.simpy, "Environment", lambda env=env: env)
            monkeypatch.setattr(chip_module, "Machine", functools.partial(Machine, batch=batch))
            # the page walks free: the relation is about the engine's events, and the
            # walks' waits change how the units' transfers fall on cycles
            sim.simulate(_busy_streams(block_dim, work), functional=False, free="gm_first_touch")
            counts[batch, work] = env.scheduled
    assert counts[True, 16] <= counts[True, 1]
    assert counts[False, 16] - counts[False, 1] >= 15 * 4 * block_dim


@pytest.mark.parametrize("work", [1, 3, 8])
def test_a_pipe_waiting_on_a_chip_level_flag_takes_nothing_else_meanwhile(work):
    """No frontend issues a chip-level wait on a pipe today (FIFO and cross-core waits hold
    the dispatcher), but a Machine takes one: while it waits, the instructions the
    dispatcher queues behind it wait too — on both paths."""
    from sim.engine.items import OP, SET, WAIT, Issued
    from sim.engine.xunit import CrossFlags, XKey

    key = XKey(("x", 0))

    def op(cost):
        return Issued(OP, "PIPE_V", "TADD", cold=cost, warm=cost, text="TADD", source="t")

    ends = {}
    for batch in (True, False):
        env = simpy.Environment()
        shared = CrossFlags(env)
        setter = Machine(TARGET, env=env, core=0, unit="AIV0", shared=shared, batch=batch)
        waiter = Machine(TARGET, env=env, core=1, unit="AIV0", shared=shared, batch=batch)
        setter.start(iter([op(100 * work), Issued(SET, "PIPE_V", flag=key, text="x")]))
        waiter.start(
            iter([Issued(WAIT, "PIPE_V", flag=key, text="x"), *[op(7) for _ in range(work)]])
        )
        env.run()
        assert setter.finished() and waiter.finished()
        rows = waiter.recorder.frame()
        ops = rows[rows["opcode"] == "TADD"]
        ends[batch] = (rows["start_cycle"].tolist(), rows["end_cycle"].tolist())
        assert ops["start_cycle"].min() >= 100 * work
    assert ends[True] == ends[False]
