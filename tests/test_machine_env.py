"""Machines share one SimPy environment: the API the chip layer builds on.

A chip runs one ``Machine`` per unit in a single environment (programming-model.md §2.1);
units that do not interact must each see exactly the timeline they have alone.
"""

from __future__ import annotations

import simpy

import sim
from sim.engine.execute import Interpreter
from sim.engine.machine import Machine
from sim.target import load_target


def _kernel(n):
    k = sim.Kernel(f"k{n}")
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    t = k.tile("vec", "f32", 16, 64)
    u = k.tile("vec", "f32", 16, 64)
    e = k.TLOAD(t, x)
    for _ in range(n):
        e = k.TMULS(u, t, 2.0, e)
    k.TSTORE(y, u, e)
    return k


def _stream(k, tgt):
    return Interpreter(k.program(), tgt, inputs=k.inputs).issue()


def _cycles(recording):
    t = recording.frame()
    return list(zip(t["id"], t["pipe"].astype(str), t["start_cycle"], t["end_cycle"], strict=True))


def test_two_machines_in_one_env_each_see_their_own_timeline():
    tgt = load_target("a2a3")
    alone = [Machine(tgt).run(_stream(_kernel(n), tgt)) for n in (1, 5)]
    env = simpy.Environment()
    ms = [Machine(tgt, env=env, core=i) for i in range(2)]
    for m, n in zip(ms, (1, 5), strict=True):
        m.start(_stream(_kernel(n), tgt))
    env.run()
    assert all(m.finished() for m in ms)
    for m, rec in zip(ms, alone, strict=True):
        assert _cycles(m.recorder) == _cycles(rec)
        assert set(m.recorder.frame()["core"]) == {m.core}
    assert env.now == alone[1].end
    assert _cycles(alone[0]) != _cycles(alone[1])  # the kernels differ: the check above can fail


def test_machine_with_env_is_not_finished_before_it_runs():
    tgt = load_target("a2a3")
    m = Machine(tgt, env=simpy.Environment())
    assert not m.finished()
    m.start(_stream(_kernel(1), tgt))
    assert not m.finished()
    m.env.run()
    assert m.finished()
