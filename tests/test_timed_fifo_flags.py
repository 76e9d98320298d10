"""The chip's cube<->vector FIFO flags on the timed path (``sim.engine.flags.TimedFifoFlags``).

Each FIFO channel's flag has one setting pipe and one waiter, so the engine keeps it as the
cycles its sets take effect at: the k-th wait ends at max(its start, the k-th set's cycle)
without a unit catching the event loop up at every push, pop and free. The event path
(counters in event time) is the reference: both give the same cycles and rows, also when a
set takes effect later than it is issued (``[sync] cross_core_flag_cycles``).
"""

from __future__ import annotations

import functools
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import simpy

import sim
from sim.base.errors import SimulationError
from sim.engine import chip as chip_module
from sim.engine.flags import TimedFifoFlags
from sim.engine.machine import Machine
from sim.engine.xunit import XKey

ROOT = Path(__file__).resolve().parent.parent
KEY = XKey(("fifo", 0, 0, 1, 0, "full"))


def _flags() -> TimedFifoFlags:
    return TimedFifoFlags(simpy.Environment())


def test_each_wait_takes_the_oldest_set_and_free_slots_come_first():
    f = _flags()
    f.fire(KEY, 30)
    f.add(KEY, 2)  # slots free from the start: before any set
    f.fire(KEY, 45)
    assert [f.take(KEY) for _ in range(5)] == [0, 0, 30, 45, None]


def test_a_parked_waiter_goes_on_at_the_set():
    f = _flags()
    woke = []
    f.park(KEY, lambda: woke.append(f.take(KEY)))
    assert woke == []
    f.fire(KEY, 7)
    assert woke == [7]


def test_a_set_earlier_than_pending_ones_goes_before_them():
    """Sets of two pipes may be handed over out of cycle order: each wait still takes the
    oldest (a counter does not care in which order its sets were told)."""
    f = _flags()
    for cycle in (100, 120, 99, 110):
        f.fire(KEY, cycle)
    assert [f.take(KEY) for _ in range(5)] == [99, 100, 110, 120, None]


def test_a_set_older_than_one_a_wait_took_stops_the_run():
    f = _flags()
    f.fire(KEY, 100)
    assert f.take(KEY) == 100
    f.fire(KEY, 100)  # the same cycle pairs the same either way
    with pytest.raises(SimulationError, match="engine fault"):
        f.fire(KEY, 60)


def _target(tmp_path, latency: int) -> Path:
    """The a2a3 model with FIFO / cross-core sets taking ``latency`` cycles to land."""
    out = tmp_path / f"a2a3_latency_{latency}"
    shutil.copytree(ROOT / "models" / "a2a3", out)
    toml = out / "machine.toml"
    text, n = re.subn(
        r"^cross_core_flag_cycles = \d+",
        f"cross_core_flag_cycles = {latency}",
        toml.read_text(),
        flags=re.M,
    )
    assert n == 1
    toml.write_text(text)
    return out


@pytest.mark.parametrize("latency", [0, 37])
def test_fifo_kernels_give_the_event_paths_cycles(tmp_path, monkeypatch, latency):
    """Flash attention (cube -> vector and back through GM FIFOs) on 3 cores: the timed
    FIFO flags and the event path's counters give the same cycles and rows."""
    program = sim.parse_file(ROOT / "examples" / "flash_attention.pto")
    kw = dict(inputs={"S1": 512, "S1_TILE": 128}, functional=False, block_dim=3)
    target = _target(tmp_path, latency)
    fast = sim.simulate(program, target, **kw)
    monkeypatch.setattr(chip_module, "Machine", functools.partial(Machine, batch=False))
    slow = sim.simulate(program, target, **kw)
    assert fast.total_cycles == slow.total_cycles
    pd.testing.assert_frame_equal(fast.trace, slow.trace)


def test_a_later_set_never_makes_a_fifo_kernel_faster(tmp_path):
    """Every pop waits for its push's set and every push for a free slot: sets landing
    later slow the kernel down, more latency slows it more."""
    program = sim.parse_file(ROOT / "examples" / "flash_attention.pto")
    kw = dict(inputs={"S1": 512, "S1_TILE": 128}, functional=False, block_dim=2)
    cycles = [
        sim.simulate(program, _target(tmp_path, lat), **kw).total_cycles for lat in (0, 50, 400)
    ]
    assert cycles[0] < cycles[1] < cycles[2]
