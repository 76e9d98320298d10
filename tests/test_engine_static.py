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

import sim
import sim.engine.chip as chip_module
from sim.engine.execute import Interpreter
from sim.engine.machine import Machine
from sim.base.errors import DeadlockError, UserError
from sim.target import load_target
from test_engine_fuzz import _build, step
from test_trace_rows import ARGS, EXAMPLES

TARGET = load_target("a2a3")


def _run(kernel, batch: bool, **kw):
    machine = Machine(TARGET, batch=batch, **kw)
    try:
        rec = machine.run(Interpreter(kernel.program(), TARGET, inputs=kernel.inputs,
                                      functional=False).issue())
    except DeadlockError as e:
        return ("deadlock", str(e), machine.recorder.frame())
    return ("ok", rec.end, rec.frame())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=24),
       shape=st.sampled_from([(16, 64), (1, 64), (8, 128)]),
       detail=st.booleans(), ideal_sync=st.booleans())
def test_static_runs_equal_the_event_loop(steps, shape, detail, ideal_sync):
    try:
        k = _build(steps, "f32", *shape)
        kw = dict(detail=detail, ideal_sync=ideal_sync)
        fast, slow = _run(k, True, **kw), _run(k, False, **kw)
    except UserError:
        return                          # rejected by the verifier: nothing to compare
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
            Interpreter(k.program(), TARGET, functional=False).issue())
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
