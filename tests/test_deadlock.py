"""A wait that can never be satisfied ends the run with a DeadlockError, never a hang.

programming-model.md §7.1: waiting on a flag that is never set hangs the pipe on hardware
(an illegal program); the simulator must detect it and name the stuck pipe, the flag
(SRC->DST#id) and the instruction behind the wait.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from dma_formula import dma_cycles
from hang_guard import hang_guard

import sim
from sim.base.errors import DeadlockError, SimulationError, UserError

THIS_FILE = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def no_hang():
    """Fail (instead of hanging the suite) if a simulation does not return in 10 s."""
    with hang_guard(10):
        yield


def missing_set_kernel():
    k = sim.Kernel("missing")
    x = k.gm("x", "f32", (16, 64))
    a, c = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 2)  # no set_flag(MTE2, V, 2) anywhere
    k.TADD(c, a, a)
    return k


def test_wait_without_set_raises_deadlock_naming_pipe_flag_and_instruction():
    with pytest.raises(DeadlockError) as info:
        sim.simulate(missing_set_kernel())
    e = info.value
    msg = str(e)
    assert isinstance(e, SimulationError) and isinstance(e, UserError)
    assert "\n" not in msg
    assert "PIPE_V" in msg
    assert "PIPE_MTE2->PIPE_V#2" in msg
    assert "TADD" in msg  # the instruction stuck behind the wait
    assert THIS_FILE in msg  # ... with its source location
    # The TLOAD (a 4096-byte GM->UB transfer, machine.toml's figures) completed before the
    # engine ran dry.
    assert f"cycle {dma_cycles('GM_UB', 4096)}" in msg

    assert len(e.stuck) == 1
    s = e.stuck[0]
    assert s["pipe"] == "PIPE_V"
    assert s["waits_for"] == "PIPE_MTE2->PIPE_V#2"
    assert "wait_flag" in s["wait"]
    assert "TADD" in s["next"]

    # the partial trace is attached: the TLOAD ran, the TADD never did
    t = e.trace
    assert list(t.loc[t["kind"] == "op", "opcode"]) == ["TLOAD"]


def test_circular_wait_between_two_pipes():
    """MTE2 waits for V before its TLOAD and would then signal V; V waits for MTE2 before
    its TADD and would then signal MTE2. Both sets exist in the program, but each sits
    behind the other pipe's wait."""
    k = sim.Kernel("circular")
    x = k.gm("x", "f32", (16, 64))
    a, c = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    k.wait_flag("PIPE_V", "PIPE_MTE2", 0)
    k.TLOAD(a, x)
    k.set_flag("PIPE_MTE2", "PIPE_V", 0)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 0)
    k.TADD(c, a, a)
    k.set_flag("PIPE_V", "PIPE_MTE2", 0)
    with pytest.raises(DeadlockError) as info:
        sim.simulate(k)
    e = info.value
    by_pipe = {s["pipe"]: s for s in e.stuck}
    assert set(by_pipe) == {"PIPE_MTE2", "PIPE_V"}
    assert by_pipe["PIPE_MTE2"]["waits_for"] == "PIPE_V->PIPE_MTE2#0"
    assert by_pipe["PIPE_MTE2"]["next"].startswith("#1 TLOAD")
    assert by_pipe["PIPE_V"]["waits_for"] == "PIPE_MTE2->PIPE_V#0"
    assert by_pipe["PIPE_V"]["next"].startswith("#4 TADD")  # queued behind its wait
    msg = str(e)
    for needle in ("PIPE_V->PIPE_MTE2#0", "PIPE_MTE2->PIPE_V#0", "TLOAD", "TADD", "cycle 0"):
        assert needle in msg
    assert len(e.trace[e.trace["kind"] == "op"]) == 0  # nothing could run


def test_scalar_dispatch_stuck_on_a_wait():
    k = sim.Kernel("scalar")
    a = k.tile("vec", "f32", 16, 64)
    k.wait_flag("PIPE_V", "PIPE_S", 3)
    k.TADD(a, a, a)
    with pytest.raises(DeadlockError) as info:
        sim.simulate(k)
    (s,) = info.value.stuck
    assert s["pipe"].startswith("PIPE_S")
    assert s["waits_for"] == "PIPE_V->PIPE_S#3"
    assert "PIPE_V->PIPE_S#3" in str(info.value)


def test_wait_consumes_the_flag_so_a_second_wait_deadlocks():
    """Flags are counters (§10.4): one set satisfies exactly one wait."""
    k = sim.Kernel("twice")
    x = k.gm("x", "f32", (16, 64))
    a, c = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.set_flag("PIPE_MTE2", "PIPE_V", 1)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 1)
    k.TADD(c, a, a)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 1)
    k.TADD(a, c, c)
    with pytest.raises(DeadlockError) as info:
        sim.simulate(k)
    (s,) = info.value.stuck
    assert s["pipe"] == "PIPE_V" and s["waits_for"] == "PIPE_MTE2->PIPE_V#1"
    # the first TADD ran (the 4096-byte TLOAD + TADD cold 56), the second is the one behind
    # the stuck wait
    assert f"cycle {dma_cycles('GM_UB', 4096) + 56}" in str(info.value)
    assert list(info.value.trace.loc[info.value.trace["kind"] == "op", "opcode"]) == [
        "TLOAD",
        "TADD",
    ]


def test_cli_reports_deadlock_in_one_line_exit_2(tmp_path):
    kfile = tmp_path / "stuck.py"
    kfile.write_text(
        textwrap.dedent("""\
        import sim

        def build():
            k = sim.Kernel("stuck")
            x = k.gm("x", "f32", (16, 64))
            a, c = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
            k.TLOAD(a, x)
            k.wait_flag("PIPE_MTE2", "PIPE_V", 2)
            k.TADD(c, a, a)
            return k
        """)
    )
    p = subprocess.run(
        [sys.executable, "-m", "sim", "run", str(kfile)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("ptosim: error: deadlock")
    assert "PIPE_MTE2->PIPE_V#2" in lines[0] and "TADD" in lines[0]
    assert "stuck.py:9" in lines[0]  # the TADD's source line
    assert "Traceback" not in p.stderr


def test_full_barrier_behind_a_stuck_wait():
    """The set that would release MTE2 sits behind a pipe_barrier(PIPE_ALL) that waits for
    MTE2 to drain. The error names MTE2's flag and the TLOAD behind it."""
    k = sim.Kernel("barrier_stuck")
    x = k.gm("x", "f32", (16, 64))
    a, c = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    k.wait_flag("PIPE_V", "PIPE_MTE2", 0)
    k.TLOAD(a, x)
    k.pipe_barrier("PIPE_ALL")
    k.TADD(c, a, a)
    k.set_flag("PIPE_V", "PIPE_MTE2", 0)
    with pytest.raises(DeadlockError) as info:
        sim.simulate(k)
    e = info.value
    by_pipe = {s["pipe"]: s for s in e.stuck}
    assert by_pipe["PIPE_MTE2"]["waits_for"] == "PIPE_V->PIPE_MTE2#0"
    assert "TLOAD" in by_pipe["PIPE_MTE2"]["next"]
    assert "PIPE_V->PIPE_MTE2#0" in str(e) and "pipe_barrier" in str(e)


def test_full_barrier_is_not_reported_as_a_flag():
    k = sim.Kernel("barrier_wording")
    x = k.gm("x", "f32", (16, 64))
    a = k.tile("vec", "f32", 16, 64)
    k.wait_flag("PIPE_V", "PIPE_MTE2", 0)
    k.TLOAD(a, x)
    k.pipe_barrier("PIPE_ALL")
    k.set_flag("PIPE_V", "PIPE_MTE2", 0)
    with pytest.raises(DeadlockError) as info:
        sim.simulate(k)
    msg = str(info.value)
    assert "flag PIPE_ALL" not in msg
    assert "PIPE_ALL can still happen" not in msg
    assert "pipe_barrier(PIPE_ALL)" in msg and "PIPE_MTE2 to drain" in msg
